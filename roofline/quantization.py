"""Quantization: which part of a step gets faster when the bits drop, up to what batch, and what
dequantizing costs.

A format can shrink three things, and ``precisions.NumberFormat`` says which:
the weight bytes (every format under 16 bits), the math precision (W8A8 and
W4A4 formats, on a GPU that has that math) and, chosen apart from the weights,
the KV-cache bytes (``kvformats``). Each answer below is one formula over the
package's specs; the symbols are the course's (``docs/notation.toml``, one meaning site-wide):

    N     weights a step reads (every weight of a dense model but the embedding table)
    q     value bits; q_eff bits a weight with scales and zero points; b = q_eff / 8 bytes
    q_s, q_z  bits of one scale and one zero point; g weights per group
    B_mem memory bandwidth (bytes/s); F_math dense peak FLOP/s at the math precision
    B     batch (users decoding together); n_tok tokens in one pass; c context tokens
    k     KV-cache bytes per cached token; δ dequantization overhead of a weight-only GEMM

and the formulas, each a function here:

    effective bits          q_eff = q + (q_s + q_z) / g              (``effective_bits``)
    blocks' speedup ceiling S_1 = 16 / q_eff                         (``weight_only_speedup_ceiling``)
    batch-1 step ceiling    16-bit bytes / ((N - H) b + 2 H), H = head + embedding rows kept at
                            16 bits by every quantizer here (``decode_speedup_ceiling``;
                            ``architecture.weights_read_bytes`` holds the rule)
    fixed cost per step     measured = t0 + ceiling / η, least squares (``fixed_cost_fit``)
    critical batch          B* = F_math * b / (2 B_mem)              (``critical_batch``)
    KV slope                s = k / B_mem, so ITL = a + s * c        (``kv_slope_s_per_token``)
    fp8-KV break-even       c_even = (a_q - a) / (s - s_q)           (``kv_break_even_context``)
    users that fit          floor((u M - N b) / (c k))               (``users_by_format``)
    dequantizing GEMM       max(N b / B_mem, (2 N n_tok + δ 2 N_q 16 ceil(n_tok / 16)) / F_math)
                            below T_switch tokens (each quantized weight widened once per 16-token
                            tile); N (b + 2) / B_mem + max(2 N / B_mem, 2 N n_tok / F_math) from
                            T_switch on
                                                                     (``dequantized_pass``)

The ceilings take δ = 0 and no switch: the best published kernels (Marlin)
reach the weight-read ceiling, so nothing faster than it can be ruled out. The
dequantization terms are for an *expected* figure: ``--costs expected`` carries
δ fitted on vLLM PR #2566 (Mistral 7B AWQ on an A100, its legacy fused ``awq_gemm``
against widening to fp16; ``scripts/fit_expected.py``) and vLLM's switch at 256 tokens
(``performance.CostModel``), and charges them on the A100 only
(``calibration.DEQUANT_MEASURED_ON``): vLLM has run AWQ checkpoints through
``awq_marlin`` since 0.5 and GPTQ W4A16 on Hopper through Machete, and no measurement of
those kernels' cost is in the package.

Where W4A16 prefill stops being faster than 16-bit (``weight_only_prefill_slower_from``):
on the ceiling from the prompt at which the 16-bit pass turns compute-bound, about
``F / W`` tokens (the bf16 critical batch, 295 on an H100); at the expected costs
from about ``F_e / ((1 + δ) W_e)``, sooner, and from the switch on in any case.
A shorter prompt is read-bound and int4 reads fewer bytes: there it is faster.

Which math a format runs is declared in ``precisions`` and decided here
(``math_for``): a W8A8 or W4A4 format multiplies at its own peak on a GPU that
lists that peak, and anywhere else runs weight-only at 16 bits, as vLLM runs fp8
checkpoints on an A100. That is a stated fallback, never an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Literal

from . import architecture as arch
from .errors import SpecError
from .performance import (
    Hardware,
    Pass,
    Workload,
    decode_pass,
    math_precision,
    memory_use,
    prefill_pass,
    sixteen_bit_math,
)
from .precisions import AUTO, ScaleLayout, bytes_per_value, effective_bits, number_format
from .specs import GpuSpec

__all__ = [
    "DequantizedPass",
    "FormatAnswer",
    "MathChoice",
    "ScaleLayout",
    "compare_formats",
    "critical_batch",
    "critical_batch_for",
    "decode_speedup_ceiling",
    "dequantized_pass",
    "effective_bits",
    "fixed_cost_fit",
    "kv_break_even_context",
    "kv_slope_s_per_token",
    "math_for",
    "quantized_hardware",
    "stops_helping_batch",
    "users_by_format",
    "weight_only_prefill_slower_from",
    "weight_only_speedup_ceiling",
]

#: Bits of the unquantized baseline every speedup here is measured against.
BASELINE_BITS = 16.0


# -- Which math a format runs ----------------------------------------------------------


@dataclass(frozen=True)
class MathChoice:
    """The math a weight format's matrix multiplies run at on one GPU, and why, in words."""

    weight_precision: str
    #: The math precision the GEMMs run at ("fp8", "fp4", "bf16", ...).
    precision: str
    #: True when the format runs its own W8A8 / W4A4 math; False when it is weight-only here.
    native: bool
    #: One sentence: what runs, and for a fallback, why ("NVIDIA H100 SXM has no fp4 math").
    line: str


def math_for(gpu: GpuSpec, weight_precision: str) -> MathChoice:
    """The math ``weight_precision`` runs at on ``gpu``, from the format's declaration.

    A format that declares a native math (fp8 -> fp8, nvfp4 -> fp4, int8-sq -> int8)
    gets it on a GPU whose spec lists that peak. On any other GPU it runs weight-only:
    the kernel widens the weights to 16 bits and multiplies at the 16-bit peak, which is
    what engines do (vLLM serves fp8 checkpoints on Ampere with FP8 Marlin, W8A16). The
    ``line`` says so; nothing is refused.
    """
    fmt = number_format(weight_precision)
    sixteen = sixteen_bit_math(gpu)
    native = fmt.native_math
    if native is not None and math_precision(gpu, weight_precision) == native:  # one rule: performance's
        if fmt.math == "unquantized":
            line = f"{native}: the weights' own {native} math"
        else:
            line = f"{native}: {fmt.math}, weights and activations multiplied at the {native} peak"
        return MathChoice(weight_precision, native, True, line)
    if native is not None:
        line = (
            f"{sixteen}: {gpu.name} has no {native} math, so {weight_precision} runs weight-only,"
            f" widened to {sixteen} in the kernel ({native} math: {fmt.native_on})"
        )
    elif fmt.math == "unquantized":
        line = f"{sixteen}: the weights' own 16-bit math"
    else:
        line = f"{sixteen}: weight-only {weight_precision} (W{fmt.value_bits:g}A16), widened to {sixteen} in the kernel"
    return MathChoice(weight_precision, sixteen, False, line)


def quantized_hardware(hardware: Hardware, weight_precision: str) -> Hardware:
    """``hardware`` with ``"auto"`` math replaced by ``math_for``'s choice for ``weight_precision``;
    a math the caller fixed is kept."""
    if hardware.compute_precision != AUTO:
        return hardware
    return replace(hardware, compute_precision=math_precision(hardware.gpu, weight_precision))


def _quantized(hardware: Hardware, workload: Workload) -> Hardware:
    return quantized_hardware(hardware, workload.weight_precision)


# -- Decode at batch 1: the 16 / q_eff ceiling ----------------------------------------------


def weight_only_speedup_ceiling(weight_precision: str, baseline_bits: float = BASELINE_BITS) -> float:
    """``S_1 = 16 / b_eff``: how much faster a batch-1 decode step gets if only the weight read counted.

    int4 g128: 16 / 4.125 = 3.879 (Marlin's "optimal 3.87x"); int4-awq 16 / 4.15625 = 3.850;
    fp8 2.0. It is the decoder blocks' ratio, and leaves out what does not shrink: the KV cache,
    the output head and embedding every quantized checkpoint keeps at 16 bits (counted by
    ``decode_speedup_ceiling``), and every fixed cost of a step.
    """
    return baseline_bits / number_format(weight_precision).bits_per_weight


def decode_speedup_ceiling(hardware: Hardware, workload: Workload, baseline: str = "bf16") -> float:
    """How many times faster the decode-step ceiling is at the workload's weight format than at
    ``baseline``, everything else (batch, context, KV precision) equal.

    ``t(baseline) / t(format)``, each ``max(bytes / W, FLOPs / F)`` at its own math. At batch 1
    and an empty context every byte read is a weight, but the output head and the embedding row
    stay at 16 bits (``architecture.weights_read_bytes``): Llama 3.1 8B gets 3.23x at int4 and
    1.87x at fp8, not 16 / b_eff = 3.88x and 2x. The cache read, which the weight format does not
    shrink, pulls it further towards 1 as the context grows.
    """
    quantized = decode_pass(_quantized(hardware, workload), workload, workload.batch)
    base_workload = replace(workload, weight_precision=baseline)
    base = decode_pass(quantized_hardware(hardware, baseline), base_workload, workload.batch)
    return base.seconds / quantized.seconds


def fixed_cost_fit(steps: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """``(t0, η)`` for ``measured = t0 + ceiling / η``, fitted by least squares to
    ``(ceiling seconds, measured seconds)`` pairs of one engine at several weight widths.

    ``t0`` is a time every step pays whatever its width (kernel launches, norms, sampling,
    a dequantizing kernel's own work) and ``η`` the share of the bandwidth the byte-bound
    part reaches. With ``x`` the ceilings and ``y`` the measured times,
    ``1/η = cov(x, y) / var(x)`` and ``t0 = mean(y) - mean(x)/η``; two points fit exactly.
    gpt-fast's Llama-2-7B on an A100 (bf16 9.53 ms, int8 6.43 ms, int4 g32 5.08 ms against
    ceilings of 6.48, 3.24 and 2.03 ms) gives t0 = 3.1 ms and η = 1.0, each step within 1.3%.
    """
    pairs = [(float(ceiling), float(measured)) for ceiling, measured in steps]
    if len(pairs) < 2:
        raise SpecError(f"needs at least 2 steps of different widths, got {len(pairs)}", field="steps")
    count = len(pairs)
    mean_x = sum(x for x, _ in pairs) / count
    mean_y = sum(y for _, y in pairs) / count
    var_x = sum((x - mean_x) ** 2 for x, _ in pairs)
    cov = sum((x - mean_x) * (y - mean_y) for x, y in pairs)
    if not var_x > 0 or not cov > 0:
        raise SpecError("the steps must differ in width, and the wider ones must take longer", field="steps")
    inverse_efficiency = cov / var_x
    return mean_y - mean_x * inverse_efficiency, 1.0 / inverse_efficiency


# -- The critical batch ----------------------------------------------------------------------


def critical_batch(peak_flops_per_s: float, bytes_per_weight: float, bandwidth_bytes_per_s: float) -> float:
    """``B* = F * b_w / (2 W)``: the batch at which a matmul that reads each weight once turns
    compute-bound.

    B tokens multiply every weight once: ``2 B`` FLOPs per ``b_w`` bytes read. Reading takes
    ``b_w / W`` and multiplying ``2 B / F``; they are equal at ``B*``. H100, bf16: 989.4e12 * 2 /
    (2 * 3.35e12) = 295; int4 weights still multiplied at bf16 (W4A16): b_w = 0.515625, so 76; fp8
    W8A8 halves both bytes and time per FLOP, so 295 again. The KV cache, which each user reads
    alone, is left out: ``performance.crossover_batch`` counts it.
    """
    for name, value in (("peak_flops_per_s", peak_flops_per_s), ("bandwidth_bytes_per_s", bandwidth_bytes_per_s)):
        if not value > 0:
            raise SpecError(f"must be positive, got {value!r}", field=name)
    if not bytes_per_weight > 0:
        raise SpecError(f"must be positive, got {bytes_per_weight!r}", field="bytes_per_weight")
    return peak_flops_per_s * bytes_per_weight / (2.0 * bandwidth_bytes_per_s)


def critical_batch_for(hardware: Hardware, weight_precision: str) -> float:
    """``critical_batch`` for ``weight_precision`` on ``hardware``, at the math it runs there
    (``math_for`` under ``"auto"``); the GPU count cancels out."""
    resolved = quantized_hardware(hardware, weight_precision)
    return critical_batch(resolved.peak_flops_per_s, bytes_per_value(weight_precision), resolved.bandwidth_bytes_per_s)


# -- The KV cache: a slope, not an intercept -------------------------------------------------


def kv_slope_s_per_token(hardware: Hardware, workload: Workload) -> float:
    """Decode-step seconds one more cached token of one user adds: the slope ``s`` of
    ``ITL = a + s * c``.

    In a memory-bound step ``s = KV bytes per token / W`` (Llama 3.1 8B, bf16 KV, H100: 131,072 /
    3.35e12 = 39.1 ns); fp8 KV halves it. A local (sliding-window) layer past its window adds no
    bytes, so only the layers still growing at this context count. In a compute-bound step the
    slope is the attention FLOPs of one more cached token over the peak instead.
    """
    model, context = workload.model, workload.context
    resolved = _quantized(hardware, workload)
    step = decode_pass(resolved, workload, workload.batch)
    if step.bound == "memory":
        added = arch.kv_cache_bytes(model, context + 1, workload.kv_precision) - arch.kv_cache_bytes(
            model, context, workload.kv_precision
        )
        return added / resolved.bandwidth_bytes_per_s
    added_flops = arch.decode_flops_per_token(model, context + 1) - arch.decode_flops_per_token(model, context)
    return added_flops / resolved.peak_flops_per_s


def kv_break_even_context(
    intercept_s: float,
    slope_s_per_token: float,
    quantized_intercept_s: float,
    quantized_slope_s_per_token: float,
) -> float | None:
    """``c* = (a_q - a) / (s - s_q)``: the context beyond which a quantized cache's inter-token
    latency ``a_q + s_q * c`` drops below the 16-bit cache's ``a + s * c``.

    A quantized cache reads fewer bytes per token (a smaller slope) but may cost a fixed
    dequantization time per step (a larger intercept). 0 when its line is never above the
    16-bit one; None when it never gets below (its slope is no smaller and its intercept larger).
    vLLM's fits for Llama 3.1 8B on an H100 (6.44 ms + 4.37e-5 ms per token against 6.58 ms +
    2.37e-5) give (6.58 - 6.44) / (4.37e-5 - 2.37e-5) = 7,000 tokens; its blog prints 7,010 from
    unrounded fits.
    """
    extra = quantized_intercept_s - intercept_s
    saved = slope_s_per_token - quantized_slope_s_per_token
    if extra <= 0 and saved >= 0:
        return 0.0
    if saved <= 0:
        return None
    return extra / saved


# -- Capacity --------------------------------------------------------------------------------


def users_by_format(hardware: Hardware, workload: Workload, precisions: Iterable[str]) -> dict[str, int | None]:
    """Users that fit at the workload's context for each weight format, KV precision unchanged:
    ``floor((u M - N b_w - shared) / (c KV))`` (``performance.memory_use``). Smaller weights
    leave more memory for everyone's cache; 0 when the weights alone do not fit."""
    return {
        precision: memory_use(hardware, replace(workload, weight_precision=precision)).max_batch
        for precision in precisions
    }


# -- Dequantization --------------------------------------------------------------------------

KernelPath = Literal["fused", "dequantize-then-gemm"]


@dataclass(frozen=True)
class DequantizedPass:
    """A pass through a weight-only model as an engine runs it: either one fused kernel that
    dequantizes inside the GEMM, or (from ``switch_tokens`` on) a kernel that widens every weight
    to 16 bits first and then a plain 16-bit pass."""

    path: KernelPath
    #: The widening kernel's time (0 on the fused path): read b_w, write 2 bytes per weight.
    dequantize_s: float
    #: The matmul pass itself: quantized weights with ``(1 + δ)`` math on the fused path,
    #: 16-bit weights at the 16-bit peak after widening.
    gemm: Pass

    @property
    def seconds(self) -> float:
        """``dequantize_s + gemm.seconds``: the two kernels run one after the other."""
        return self.dequantize_s + self.gemm.seconds


def dequantized_pass(
    hardware: Hardware,
    workload: Workload,
    *,
    prefill: bool,
    overhead: float,
    switch_tokens: int | None = None,
) -> DequantizedPass:
    """One decode step (``prefill=False``) or the prefill of the workload's prompt, for a
    weight-only format, at ``hardware``'s costs with the dequantization cost ``overhead`` (δ) and
    ``switch_tokens`` (``performance.CostModel``, which the expected costs carry fitted).

    Fused path (fewer than ``switch_tokens`` tokens in the pass, or no switch): the bytes of
    ``decode_pass`` / ``prefill_pass`` at the quantized width, and the math time grown by
    widening each quantized weight once per 16-token tile on the CUDA cores
    (``performance.tiled_dequant_flops``): ``max(bytes / W, (FLOPs + δ 2 N_q 16 ceil(T/16)) / F)``.

    Dequantize-then-GEMM (from ``switch_tokens`` tokens on, as AutoAWQ does from 1,024 and
    vLLM's AWQ kernel from 256): widening reads every multiplied weight at ``b_w`` and writes
    it at 2 bytes, ``N (b_w + 2) / W``; then the pass runs as a 16-bit pass. That path is never
    faster than the 16-bit pass, and neither is the fused one once the 16-bit pass is
    compute-bound.

    Formats that run their own math (W8A8, W4A4) scale on the tensor cores and take no δ.
    The ceiling is ``overhead=0`` with no switch.
    """
    costs = replace(hardware.costs, dequant_overhead=overhead, dequant_switch_tokens=switch_tokens)
    engine = replace(_quantized(hardware, workload), costs=costs)
    step = prefill_pass(engine, workload) if prefill else decode_pass(engine, workload, workload.batch)
    path: KernelPath = "dequantize-then-gemm" if step.dequantize_s else "fused"
    return DequantizedPass(path, step.dequantize_s, replace(step, dequantize_s=0.0))


def _first_not(holds: Callable[[int], bool], limit: int) -> int | None:
    """The smallest whole number from which ``holds`` is false, for a ``holds`` that stays false
    once it turns: by doubling from 1, then bisecting; None if it still holds at ``limit``."""
    if not holds(1):
        return 1
    low, high = 1, 2
    while holds(high):
        if high >= limit:
            return None
        low, high = high, min(high * 2, limit)
    while high - low > 1:
        middle = (low + high) // 2
        if holds(middle):
            low = middle
        else:
            high = middle
    return high


def weight_only_prefill_slower_from(
    hardware: Hardware, workload: Workload, baseline: str = "bf16", limit: int = 1 << 22
) -> int | None:
    """The shortest prompt from which the workload's weight format prefills no faster than
    ``baseline`` at ``hardware``'s costs, and stays so for every longer prompt; None if it is
    still faster at ``limit`` tokens.

    A prefill of ``T`` tokens takes ``max(bytes / W, FLOPs / F)``. Weight-only formats read
    fewer bytes but multiply at the same peak, so they are faster only while the 16-bit pass is
    read-bound: on the ceiling up to about ``T = F / W`` (the bf16 critical batch; 295 tokens for
    Llama 3.1 8B on an H100, where a 16-token prompt is 3.8x faster at int4). With the expected
    costs the fused kernel's math takes ``(1 + δ)`` times as long, so it falls behind from about
    ``F_e / ((1 + δ) W_e)``, and a pass past the switch adds the widening to a 16-bit pass.
    For a dense model the gap only grows with ``T`` once it turns (both times grow as
    ``2 N T / F`` plus the same attention), so the answer is found by doubling, then bisecting.
    """
    if not 1 <= limit:
        raise SpecError(f"must be at least 1, got {limit!r}", field="limit")
    base_workload = replace(workload, weight_precision=baseline)
    base_hardware = quantized_hardware(hardware, baseline)
    engine = _quantized(hardware, workload)

    def faster(prompt: int) -> bool:
        mine = prefill_pass(engine, replace(workload, prompt=prompt)).seconds
        theirs = prefill_pass(base_hardware, replace(base_workload, prompt=prompt)).seconds
        return mine < theirs * (1 - 1e-12)

    return _first_not(faster, limit)


# -- Where a format stops helping ------------------------------------------------------------


def _step_seconds(hardware: Hardware, workload: Workload, batch: float) -> float:
    return decode_pass(_quantized(hardware, workload), workload, batch).seconds


def stops_helping_batch(
    hardware: Hardware,
    workload: Workload,
    baseline: tuple[str, str] = ("bf16", "bf16"),
    limit: int = 1 << 20,
) -> int | None:
    """The smallest batch at which the workload's formats (weights, KV) decode no faster than
    ``baseline`` (weights, KV) at the same context, on the ceilings; None if they stay faster
    up to ``limit`` users.

    Weight-only int4 on an H100 with an empty context: its step reads 3.9x fewer bytes until
    its own critical batch (76), then its bf16 math catches up with the bf16 model's reads, and
    from about 295 both are compute-bound at the same peak: it stops helping there. W8A8 fp8
    halves bytes and math time alike and never stops. For a dense model the gap between the two
    steps, each ``max(fixed bytes + B * bytes per user, B * FLOPs per user)`` over W and F, never
    grows again once it starts to shrink, so the answer is found by doubling, then bisecting
    (a mixture of experts is searched the same way).
    """
    weights, kv = baseline
    base = replace(workload, weight_precision=weights, kv_precision=kv)

    def helps(batch: int) -> bool:
        return _step_seconds(hardware, workload, batch) < _step_seconds(hardware, base, batch) * (1 - 1e-12)

    return _first_not(helps, limit)


# -- One answer per format, for the calculator and the chapter ----------------------------------


@dataclass(frozen=True)
class FormatAnswer:
    """One weight format's ceilings for a workload: decode, prefill, users that fit, critical batch."""

    weight_precision: str
    math: MathChoice
    bits_per_weight: float
    decode_step_s: float
    decode_tokens_per_s_per_user: float
    prefill_s: float
    users_that_fit: int | None
    critical_batch: float
    fits: bool


def compare_formats(hardware: Hardware, workload: Workload, precisions: Iterable[str]) -> tuple[FormatAnswer, ...]:
    """The workload at each weight format in ``precisions`` (KV precision, batch, context and
    prompt unchanged), each at the math ``math_for`` picks on this GPU."""
    answers = []
    for precision in precisions:
        trial = replace(workload, weight_precision=precision)
        resolved = quantized_hardware(hardware, precision)
        step = decode_pass(resolved, trial, trial.batch)
        memory = memory_use(resolved, trial)
        answers.append(
            FormatAnswer(
                weight_precision=precision,
                math=math_for(hardware.gpu, precision),
                bits_per_weight=number_format(precision).bits_per_weight,
                decode_step_s=step.seconds,
                decode_tokens_per_s_per_user=1.0 / step.seconds,
                prefill_s=prefill_pass(resolved, trial).seconds,
                users_that_fit=memory.max_batch,
                critical_batch=critical_batch_for(hardware, precision),
                fits=memory.fits,
            )
        )
    return tuple(answers)
