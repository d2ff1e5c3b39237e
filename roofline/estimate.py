"""One call that answers everything about a deployment: the CLI, the site and the calculator use it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from . import architecture as arch
from . import formatting as fmt
from .calibration import BAND_METRICS, Calibration, cost_model, expected_costs, load_calibration
from .explain import explain_decode, explain_prefill, math_choice
from .harness import check_engine, check_harness
from .loader import SpecSet, load_specs
from .performance import (
    DEFAULT_USABLE_FRACTION,
    DEFAULT_WORKSPACE_BYTES,
    TWO_LEVEL,
    Hardware,
    MemoryUse,
    Pass,
    Workload,
    allreduce_bytes,
    allreduces_per_pass,
    crossover_batch,
    decode_step,
    dequantizes,
    kv_copies,
    memory_use,
    prefill_pass,
    require_links,
    resolved,
)
from .precisions import DEFAULT_COMPUTE_PRECISION, number_format
from .quantization import critical_batch_for, kv_slope_s_per_token
from .rule import RuleOfThumb, rule_crossover_batch, rule_of_thumb


@dataclass(frozen=True)
class Expected:
    """The calibrated prediction for the same deployment (``--costs expected``): decode and
    prefill at the fitted costs, and the band the fit's residuals put around each figure, held
    within the ceiling's own decode and prefill (``ceiling_decode``, ``ceiling_prefill``)."""

    decode: Pass
    prefill: Pass
    batch: int
    calibration: Calibration
    #: The same deployment's ceiling passes, which no band may pass (``calibration.within_ceiling``).
    ceiling_decode: Pass
    ceiling_prefill: Pass

    @property
    def throughput_tokens_per_s(self) -> float:
        """All users' decode tokens/s: ``batch / expected step``."""
        return self.batch / self.decode.seconds

    def figures(self) -> dict[str, float | None]:
        """Each banded figure, by its JSON name: decode tokens/s of all users, the prefill as
        the time to the first token, the decode step as the gap between tokens."""
        return _figures(self.decode, self.prefill, self.batch)

    def ceilings(self) -> dict[str, float | None]:
        """The ceiling's figures by the same names."""
        return _figures(self.ceiling_decode, self.ceiling_prefill, self.batch)

    def band(self) -> dict[str, list[float] | None]:
        """``[low, high]`` for each figure: the figure times the ends of the fit's 80% band of
        measured ÷ expected, no better than the ceiling's figure."""
        return self.calibration.bands(self.figures(), self.ceilings())

    def per_user_band(self) -> tuple[float, float, float]:
        """One user's expected decode tokens/s and its band, ``(rate, low, high)``: ``1 / step``,
        and the time between tokens' band inverted (a step in ``[low t, high t]`` is a rate in
        ``[r / high, r / low]``), no faster than the ceiling's ``1 / step``."""
        rate = 1.0 / self.decode.seconds
        return (rate, *self.calibration.decode_rate_band(rate, 1.0 / self.ceiling_decode.seconds))


def _figures(decode: Pass, prefill: Pass, batch: int) -> dict[str, float | None]:
    """Decode tokens/s of all users, the prefill as the time to the first token, the decode step as
    the gap between tokens, by their JSON names (``calibration.BAND_METRICS``)."""
    return {
        "throughput_tokens_per_s": batch / decode.seconds,
        "ttft_mean_s": prefill.seconds if prefill.seconds else None,
        "itl_mean_s": decode.seconds,
        "tpot_mean_s": decode.seconds,
    }


@dataclass(frozen=True)
class Estimate:
    """Decode, prefill, memory and crossover for one hardware and workload, the rule of
    thumb's figures beside them, and why the two differ.

    ``hardware.compute_precision`` is the math the ceilings used ("auto" resolved);
    ``math`` says how it was chosen.
    """

    hardware: Hardware
    workload: Workload
    decode: Pass
    prefill: Pass
    memory: MemoryUse
    crossover_batch: float | None
    #: The math precision the caller asked for: ``"auto"`` or a precision.
    requested_compute_precision: str = DEFAULT_COMPUTE_PRECISION
    #: The calibrated prediction beside the ceiling, when ``costs="expected"`` was asked for.
    expected: Expected | None = None

    # The rule and the sentences are computed when asked for: a sweep of thousands of
    # estimates needs neither.

    @property
    def _requested_hardware(self) -> Hardware:
        return replace(self.hardware, compute_precision=self.requested_compute_precision)

    @property
    def rule(self) -> RuleOfThumb:
        """The seed's rule of thumb for the same inputs (see ``rule``)."""
        return rule_of_thumb(self.hardware, self.workload)

    @property
    def math(self) -> str:
        """Which math the ceilings used and how it was chosen, in words."""
        return math_choice(self._requested_hardware, self.workload)

    @property
    def decode_vs_rule(self) -> str:
        """Why the decode ceiling differs from the rule, one cause at a time."""
        return explain_decode(self._requested_hardware, self.workload)

    @property
    def prefill_vs_rule(self) -> str:
        """Why the prefill ceiling differs from the rule ("" for an empty prompt)."""
        return explain_prefill(self._requested_hardware, self.workload)

    @property
    def simple_crossover_batch(self) -> float:
        """The rule of thumb's crossover, ``16-bit peak / bandwidth * value bytes / 2``."""
        return rule_crossover_batch(self.hardware, self.workload.weight_precision)

    @property
    def decode_tokens_per_s_per_user(self) -> float:
        """Each user gets one token per step: ``1 / step time``."""
        return 1.0 / self.decode.seconds

    @property
    def decode_tokens_per_s_total(self) -> float:
        """All users together: ``batch / step time``."""
        return self.workload.batch / self.decode.seconds

    @property
    def kv_copies(self) -> float:
        """How many times the GPUs hold each cached token (see ``performance.kv_copies``)."""
        return kv_copies(self.hardware, self.workload.model)

    @property
    def allreduces_per_step(self) -> int:
        """All-reduces charged to one decode step: ``2 * layers`` on several GPUs, else 0."""
        if self.hardware.link_bytes_per_s is None:
            return 0
        return allreduces_per_pass(self.hardware, self.workload.model)

    @property
    def allreduce_bytes(self) -> float:
        """One decode step's all-reduce message: ``batch * hidden size * 2`` bytes."""
        return allreduce_bytes(self.workload.model, self.workload.batch) if self.hardware.count > 1 else 0.0

    @property
    def accounting(self) -> dict[str, str]:
        """How the ceiling was computed, one sentence per part: memory, the KV copies, the
        all-reduces and the costs (every ceiling names the accounting it uses)."""
        return ceiling_accounting(self.hardware, self.workload)

    def to_dict(self) -> dict[str, Any]:
        """The estimate as plain JSON values, in SI units (bytes, seconds, tokens/s)."""
        model, hardware, workload = self.workload.model, self.hardware, self.workload
        expected: dict[str, Any] = {}
        if self.expected is not None:
            figures = self.expected.figures()
            expected = {
                "expected": {
                    "decode_step_s": self.expected.decode.seconds,
                    "decode_tokens_per_s_per_user": 1.0 / self.expected.decode.seconds,
                    "decode_tokens_per_s_total": self.expected.throughput_tokens_per_s,
                    "prefill_s": self.expected.prefill.seconds,
                    "communication_s": self.expected.decode.communication_s,
                    "overhead_s": self.expected.decode.overhead_s,
                    **{metric: figures[metric] for metric in BAND_METRICS},
                },
                "band": self.expected.band(),
                "fit": self.expected.calibration.ground_dict(),
            }
        return {
            "costs": "ceiling" if self.expected is None else "expected",
            "gpu": hardware.gpu.id,
            "model": model.id,
            "gpus": hardware.count,
            "weight_precision": workload.weight_precision,
            "kv_precision": workload.kv_precision,
            "compute_precision": hardware.compute_precision,
            "math": self.math,
            "weight_bits_per_weight": number_format(workload.weight_precision).bits_per_weight,
            "batch": workload.batch,
            "context": workload.context,
            "prompt": workload.prompt,
            "shared_prefix": workload.shared_prefix,
            "total_parameters": arch.total_parameters(model),
            "active_parameters": arch.active_parameters(model),
            "weights_bytes": self.memory.weights_bytes,
            "kv_bytes_per_token": workload.kv_bytes_per_token,
            "kv_bytes_per_user": workload.kv_bytes_per_user,
            "kv_bytes_shared": workload.kv_bytes_shared,
            "kv_bytes": self.memory.kv_bytes,
            "memory_used_bytes": self.memory.used_bytes,
            "memory_usable_bytes": self.memory.usable_bytes,
            "memory_addressable_bytes": hardware.addressable_memory_bytes,
            "workspace_bytes": hardware.count * hardware.workspace_bytes,
            "kv_pool_bytes": self.memory.pool_bytes,
            "usable_fraction": hardware.usable_fraction,
            "attention_dp": hardware.attention_dp,
            "kv_copies": self.kv_copies,
            "fits": self.memory.fits,
            "max_batch_that_fits": self.memory.max_batch,
            "decode_step_s": self.decode.seconds,
            "decode_memory_s": self.decode.memory_s,
            "decode_compute_s": self.decode.compute_s,
            "decode_tokens_per_s_per_user": self.decode_tokens_per_s_per_user,
            "decode_tokens_per_s_total": self.decode_tokens_per_s_total,
            "decode_bound": self.decode.bound,
            "allreduce_bytes": self.allreduce_bytes,
            "allreduces_per_step": self.allreduces_per_step,
            "allreduce_latency_s": hardware.allreduce_latency if self.allreduces_per_step else 0.0,
            "allreduce_accounting": hardware.allreduce_wire[1] if self.allreduces_per_step else None,
            "communication_s": self.decode.communication_s,
            "prefill_s": self.prefill.seconds,
            "prefill_bound": self.prefill.bound if workload.prompt else None,
            "crossover_batch": self.crossover_batch,
            "simple_crossover_batch": self.simple_crossover_batch,
            # The weights-only matmul's turn, F * b_w / (2W), at the math this run's format gets
            # (quantization.critical_batch): the batch a quantized format keeps or moves.
            "critical_batch": critical_batch_for(hardware, workload.weight_precision),
            # Decode-step seconds one more cached token of one user adds: ITL = a + s * context.
            "kv_slope_s_per_token": kv_slope_s_per_token(hardware, workload),
            "rule_of_thumb": self.rule.to_dict(),
            "decode_vs_rule": self.decode_vs_rule,
            "prefill_vs_rule": self.prefill_vs_rule or None,
            "accounting": self.accounting,
            **expected,
        }


def evaluate(hardware: Hardware, workload: Workload, calibration: Calibration | None = None) -> Estimate:
    """Every estimate for ``workload`` on ``hardware`` (see ``performance`` for the formulas,
    ``rule`` for the rule of thumb, ``explain`` for the sentences). ``hardware.costs`` should
    be the ceiling; with a ``calibration`` the expected figures are added beside it."""
    engine = resolved(hardware, workload)  # resolve "auto" once, not in every pass
    decode, prefill = decode_step(engine, workload), prefill_pass(engine, workload)
    expected = None
    if calibration is not None:
        # The band and host costs for this GPU and math, harness and engine: widened, and said so,
        # where the fit has no rows for them (Calibration.for_ground).
        ground = expected_costs(engine, workload, calibration)
        calibration = ground.calibration
        fitted = replace(engine, costs=ground.costs)
        expected = Expected(
            decode_step(fitted, workload), prefill_pass(fitted, workload), workload.batch, calibration, decode, prefill
        )
    return Estimate(
        hardware=engine,
        workload=workload,
        decode=decode,
        prefill=prefill,
        memory=memory_use(engine, workload),
        crossover_batch=crossover_batch(engine, workload),
        requested_compute_precision=hardware.compute_precision,
        expected=expected,
    )


def ceiling_accounting(hardware: Hardware, workload: Workload) -> dict[str, str]:
    """The ceiling's accounting in words: memory, KV copies, all-reduces, costs."""
    gpu, model, count = hardware.gpu, workload.model, hardware.count
    if gpu.addressable_memory_bytes is None:
        memory = f"{fmt.gigabytes(gpu.memory_bytes)} a GPU, the nameplate (no driver figure cited)"
    else:
        memory = f"{fmt.gigabytes(gpu.addressable_memory_bytes)} a GPU, as the driver reports it"
    memory += (
        f", less {fmt.gigabytes(hardware.workspace_bytes)} of workspace;"
        f" the KV cache gets {hardware.usable_fraction:.0%} of what the weights leave"
    )
    copies = kv_copies(hardware, model)
    if model.mla is not None and count > 1:
        kv = (
            "each GPU holds its own users' latent cache (data-parallel attention)"
            if hardware.attention_dp
            else f"each of the {count:,} GPUs holds the whole latent cache (--attention-dp splits it by users)"
        )
    elif copies != 1:
        kv = f"each KV head is held on {copies:g} GPUs ({count:,} GPUs, {model.kv_heads:,} KV heads)"
    else:
        kv = "one copy of each cached token"
    link = gpu.interconnect  # none only on one GPU: Hardware refuses more without links
    if count == 1:
        communication = "one GPU: no all-reduces" + (
            "; no interconnect in its spec, so one GPU only"
            if link is None
            else f"; its links: {link.scale_up}, {fmt.gigabytes(link.link_bytes_per_s, 0)}/s each way,"
            f" {link.domain_gpus:,} GPUs a domain"
        )
    elif hardware.attention_dp:
        communication = "data-parallel attention: no all-reduce; the experts' all-to-all overlaps the math"
    else:
        per_byte, accounting = hardware.allreduce_wire
        if count <= link.domain_gpus:
            wire = f"2(G-1)/G x message / {fmt.gigabytes(link.link_bytes_per_s, 0)}/s over {link.scale_up}"
        else:
            other = "a flat ring over the scale-out network" if accounting == TWO_LEVEL else "a two-level all-reduce"
            wire = (
                f"message / {fmt.gigabytes(1 / per_byte, 0)}/s past one domain of {link.domain_gpus:,} GPUs:"
                f" {accounting}, cheaper than {other}"
            )
        communication = (
            f"{allreduces_per_pass(hardware, model):,} all-reduces a pass, each"
            f" {fmt.microseconds(hardware.allreduce_latency)} + {wire};"
            f" latency at {count:,} GPUs: {hardware.allreduce_latency_basis}"
        )
    costs = hardware.costs
    if costs.is_ceiling:
        basis = "the datasheet's bandwidth and dense peak, reached in full, nothing added"
        if dequantizes(resolved(hardware, workload), workload.weight_precision):
            basis += f" (no cost for widening {workload.weight_precision} in the kernel: the best kernels hide it)"
    else:
        basis = f"{costs.name}: fitted shares of bandwidth and peak, plus fitted overheads"
    return {"memory": memory, "kv_cache": kv, "communication": communication, "costs": basis}


def estimate(
    gpu: str,
    model: str,
    *,
    precision: str = "bf16",
    kv_precision: str = "bf16",
    compute_precision: str = DEFAULT_COMPUTE_PRECISION,
    gpus: int = 1,
    batch: int = 1,
    context: int = 0,
    prompt: int = 0,
    shared_prefix: int = 0,
    usable_fraction: float = DEFAULT_USABLE_FRACTION,
    attention_dp: bool = False,
    allreduce_latency_s: float | None = None,
    allreduce_preset: str | None = None,
    costs: str = "ceiling",
    specs: SpecSet | None = None,
    calibration: Calibration | None = None,
    harness: str | None = None,
    engine: str | None = None,
) -> Estimate:
    """Estimate by ids, as the CLI and the calculator ask: ``estimate("h100-sxm", "llama-3.1-8b")``.

    ``compute_precision="auto"`` (the default) lets the weights pick the math: fp8 runs
    W8A8 on a GPU with fp8 math, nvfp4 runs fp4 math where the GPU has it, every other
    format (mxfp4 included: its served checkpoints keep bf16 activations) multiplies at 16 bits.

    ``costs="expected"`` adds the calibrated prediction and its band beside the ceiling
    (``calibration`` defaults to the built-in file). ``specs`` defaults to the built-in
    spec files. ``harness`` and ``engine`` (``roofline.harness``) say what the expected figures are
    for: the harness's host costs, and the band widened where the fit has no rows for them
    (``Calibration.for_ground``); None keeps the calibration's. Bad ids or values raise SpecError.
    """
    specs = specs or load_specs()
    if costs != "ceiling":
        cost_model(costs, gpu, calibration)  # an unknown name or a bad file fails here, in one line
        calibration = calibration or load_calibration()
        if harness is not None or engine is not None:
            # Checked here; evaluate grounds the calibration once the math is known.
            calibration = replace(
                calibration,
                harness=check_harness(harness or calibration.harness),
                engine=check_engine(engine or calibration.engine),
            )
    else:
        calibration = None
    hardware = Hardware(
        specs.gpu(gpu),
        gpus,
        compute_precision,
        usable_fraction,
        DEFAULT_WORKSPACE_BYTES,
        attention_dp,
        allreduce_latency_s,
        allreduce_preset=allreduce_preset,
    )
    require_links(hardware.gpu, gpus)  # refused before anything is worked out, whatever the layout
    workload = Workload(specs.model(model), precision, kv_precision, batch, context, prompt, shared_prefix)
    return evaluate(hardware, workload, calibration)
