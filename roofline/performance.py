"""Roofline estimates: decode speed, prefill time, memory use and the batching crossover.

Every estimate is a ceiling. A pass over the model takes the longer of two
times: the bytes it moves divided by memory bandwidth, and the FLOPs it does
divided by peak math rate. Several GPUs are taken as ideal tensor
parallelism: bandwidth, peak and memory add up and the interconnect is free.

The math precision follows the weights unless the caller fixes it
(``math_precision``): fp8 weights on a GPU with fp8 math run W8A8 at the fp8
peak, as TensorRT-LLM and vLLM serve fp8 on Hopper; every other format,
int8 and 4-bit included, is weight-only and multiplies at 16 bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Literal

from . import architecture as arch
from .errors import SpecError
from .kvformats import kv_format
from .precisions import AUTO, DEFAULT_COMPUTE_PRECISION, SIXTEEN_BIT, bytes_per_value, check_precision
from .specs import GpuSpec, ModelSpec

Bound = Literal["memory", "compute"]

DEFAULT_USABLE_FRACTION = 0.9


def _at_least(name: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"must be a whole number, got {value!r}", field=name)
    if value < minimum:
        raise SpecError(f"must be at least {minimum}, got {value}", field=name)


@dataclass(frozen=True)
class Hardware:
    """``count`` identical GPUs computing at ``compute_precision``, with ``usable_fraction``
    of their memory available to weights and KV cache (the rest goes to activations,
    the CUDA context and fragmentation).

    ``compute_precision`` may be ``"auto"``: every pass then picks its math from the
    workload's weights (``math_precision``)."""

    gpu: GpuSpec
    count: int = 1
    compute_precision: str = DEFAULT_COMPUTE_PRECISION
    usable_fraction: float = DEFAULT_USABLE_FRACTION

    def __post_init__(self) -> None:
        _at_least("gpus", self.count, 1)
        if self.compute_precision == AUTO:
            sixteen_bit_math(self.gpu)
        else:
            check_precision(self.compute_precision)
            self.gpu.peak_flops_per_s(self.compute_precision)
        fraction = self.usable_fraction
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
            raise SpecError(f"must be above 0 and at most 1, got {fraction!r}", field="usable_fraction")

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Aggregate bandwidth: ``GPUs * bandwidth per GPU``."""
        return self.count * self.gpu.bandwidth_bytes_per_s

    @property
    def peak_flops_per_s(self) -> float:
        """Aggregate dense peak at the compute precision: ``GPUs * peak per GPU``.

        For ``"auto"`` this is the 16-bit peak, the math of every format but fp8;
        the passes below resolve ``"auto"`` against the weights first.
        """
        precision = self.compute_precision
        if precision == AUTO:
            precision = sixteen_bit_math(self.gpu)
        return self.count * self.gpu.peak_flops_per_s(precision)

    @property
    def sixteen_bit_peak_flops_per_s(self) -> float:
        """Aggregate dense 16-bit peak, whatever the compute precision: the rule of thumb's peak."""
        return self.count * self.gpu.peak_flops_per_s(sixteen_bit_math(self.gpu))

    @property
    def memory_bytes(self) -> float:
        """Aggregate memory: ``GPUs * memory per GPU``."""
        return self.count * self.gpu.memory_bytes

    @property
    def usable_memory_bytes(self) -> float:
        """Memory for weights and cache: ``usable fraction * GPUs * memory per GPU``."""
        return self.usable_fraction * self.memory_bytes


def sixteen_bit_math(gpu: GpuSpec) -> str:
    """The GPU's 16-bit math precision: bf16, else fp16; SpecError when it has neither."""
    for precision in SIXTEEN_BIT:
        if precision in gpu.dense_flops_per_s:
            return precision
    raise SpecError(
        f"{gpu.id} has no 16-bit math",
        field="dense_flops_per_s",
        hint="add its bf16 or fp16 peak; weight-only formats multiply at 16 bits",
    )


def math_precision(gpu: GpuSpec, weight_precision: str) -> str:
    """The math an engine uses for ``weight_precision`` on ``gpu`` (what ``"auto"`` picks).

    fp8 weights on a GPU with fp8 math -> ``"fp8"`` (W8A8: activations are cast
    to fp8 too). Everything else -> the 16-bit math: int8 and 4-bit formats are
    weight-only, dequantized to 16 bits in the kernel, and fp32 or 16-bit
    weights run at 16 bits (fp32 when that is the format and the GPU lists it).
    """
    check_precision(weight_precision)
    if weight_precision in ("fp8", "fp32") and weight_precision in gpu.dense_flops_per_s:
        return weight_precision
    return sixteen_bit_math(gpu)


def resolved(hardware: Hardware, workload: Workload) -> Hardware:
    """``hardware`` with ``"auto"`` math replaced by the precision the workload's weights call for."""
    if hardware.compute_precision != AUTO:
        return hardware
    return replace(hardware, compute_precision=math_precision(hardware.gpu, workload.weight_precision))


@dataclass(frozen=True)
class Workload:
    """A model served at given precisions to ``batch`` users, each with ``context``
    tokens already cached, plus one prompt of ``prompt`` tokens to prefill.

    The first ``shared_prefix`` tokens of every user's context are the same (a
    system prompt) and are stored once for the whole batch. They are also read
    once per step: a prefix-aware attention kernel (FlashInfer's cascade
    attention, Hydragen) loads the shared blocks once and applies them to every
    query, so memory and read stay one number. A kernel without it re-reads the
    prefix for each user; this ceiling does not model that.
    """

    model: ModelSpec
    weight_precision: str = "bf16"
    kv_precision: str = "bf16"
    batch: int = 1
    context: int = 0
    prompt: int = 0
    shared_prefix: int = 0

    def __post_init__(self) -> None:
        check_precision(self.weight_precision)
        kv_format(self.kv_precision)
        _at_least("batch", self.batch, 1)
        _at_least("context", self.context, 0)
        _at_least("prompt", self.prompt, 0)
        _at_least("shared_prefix", self.shared_prefix, 0)
        if self.shared_prefix > self.context:
            raise SpecError(
                f"must not exceed the context ({self.context:,} tokens), got {self.shared_prefix:,}",
                field="shared_prefix",
                hint="the shared prefix is the first tokens of each user's context",
            )

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per cached token at the KV precision (see architecture)."""
        return arch.kv_cache_bytes_per_token(self.model, self.kv_precision)

    @cached_property  # these three are asked for several times per estimate; the record is frozen
    def kv_bytes_per_user(self) -> float:
        """Cache one user attends to: ``KV bytes per token * effective context`` (windows capped)."""
        return arch.kv_cache_bytes(self.model, self.context, self.kv_precision)

    @cached_property
    def kv_bytes_shared(self) -> float:
        """The shared prefix's bytes, held once for the batch (0 without a shared prefix)."""
        if not self.shared_prefix:
            return 0.0
        return arch.shared_prefix_cache_bytes(self.model, self.context, self.shared_prefix, self.kv_precision)

    @cached_property
    def kv_bytes_private(self) -> float:
        """What each user holds alone: ``KV bytes per user - shared prefix bytes``."""
        return self.kv_bytes_per_user - self.kv_bytes_shared

    def kv_bytes_for(self, batch: float) -> float:
        """Cache of ``batch`` users, in memory and read each step: ``shared + batch * private``."""
        return self.kv_bytes_shared + batch * self.kv_bytes_private


@dataclass(frozen=True)
class Pass:
    """One forward pass: what it moves and computes, and how long each takes."""

    bytes_moved: float
    flops: float
    memory_s: float
    compute_s: float

    @property
    def seconds(self) -> float:
        """The pass takes the longer of its two times: ``max(memory_s, compute_s)``."""
        return max(self.memory_s, self.compute_s)

    @property
    def bound(self) -> Bound:
        """``"memory"`` when moving bytes takes at least as long as the math, else ``"compute"``."""
        return "memory" if self.memory_s >= self.compute_s else "compute"


def timed(hardware: Hardware, bytes_moved: float, flops: float) -> Pass:
    """One pass that moves ``bytes_moved`` and does ``flops``, timed by the roofline rule:
    ``max(bytes_moved / bandwidth, flops / peak)`` on ``hardware`` (``Pass.seconds``, ``Pass.bound``).

    A new kind of pass (a draft model's step, a verification, a shard's share) builds its bytes
    and FLOPs from ``architecture`` and times them here, rather than writing the rule again.
    """
    return Pass(
        bytes_moved=bytes_moved,
        flops=flops,
        memory_s=bytes_moved / hardware.bandwidth_bytes_per_s,
        compute_s=flops / hardware.peak_flops_per_s,
    )


def decode_pass(hardware: Hardware, workload: Workload, batch: float) -> Pass:
    """``decode_step`` at a real-valued ``batch`` (ignoring ``workload.batch``), so the
    crossover can be solved, and checked, on a continuous batch axis."""
    hardware = resolved(hardware, workload)
    weights = arch.parameters_read(workload.model, batch) * bytes_per_value(workload.weight_precision)
    cache = workload.kv_bytes_for(batch)
    flops = batch * arch.decode_flops_per_token(workload.model, workload.context)
    return timed(hardware, weights + cache, flops)


def decode_step(hardware: Hardware, workload: Workload) -> Pass:
    """One decode step for the whole batch, which yields one token per user.

    bytes = weights read (all of a dense model but an untied input embedding,
    of which each user's token reads one row; for a mixture of experts, only the
    experts the batch touches), block scales included, + the cache, ``shared
    prefix + batch * private`` (``batch * context * KV bytes per token`` without
    windows or a shared prefix);
    FLOPs = ``batch * (2 * multiplied parameters + attention over the context)``;
    time = ``max(bytes / (GPUs * bandwidth), FLOPs / (GPUs * peak))``.
    Tokens/s per user = ``1 / time``; for all users, ``batch / time``.
    """
    return decode_pass(hardware, workload, workload.batch)


def prefill_pass(hardware: Hardware, workload: Workload) -> Pass:
    """Prefill of one prompt of P tokens, which yields the first token.

    FLOPs = ``architecture.prefill_flops``: the layers for all P tokens, the
    output head for the last one only, causal attention over ``P(P+1)/2`` token
    pairs; bytes = the weights those P tokens touch + the ``P`` tokens of KV
    cache written. time = ``max(FLOPs / peak, bytes / bandwidth)``, so a prefill
    is never faster than one read of the weights. A prompt of 0 takes 0 s.
    """
    prompt = workload.prompt
    if prompt == 0:
        return timed(hardware, 0.0, 0.0)
    hardware = resolved(hardware, workload)
    model = workload.model
    weights = arch.parameters_read(model, prompt) * bytes_per_value(workload.weight_precision)
    cache = arch.kv_cache_bytes(model, prompt, workload.kv_precision)
    return timed(hardware, weights + cache, arch.prefill_flops(model, prompt))


def crossover_batch(hardware: Hardware, workload: Workload) -> float | None:
    """The batch at which a decode step's compute time reaches its memory time, or None.

    Solves ``compute_s(B) = memory_s(B)`` for real B using ``decode_step``'s
    model. Compute grows as ``c*B``; memory grows as weights touched (concave in
    B: embedding rows and experts) plus ``B * context * KV bytes``, so the gap
    is convex and crosses zero at most once. Once every embedding row and expert
    is read, each extra user adds only its cache read, so when that costs at
    least as much time as its math, decode never turns compute-bound and the
    answer is None.
    """
    hardware = resolved(hardware, workload)
    model = workload.model
    weight_size = bytes_per_value(workload.weight_precision)
    bandwidth = hardware.bandwidth_bytes_per_s
    per_user_compute = arch.decode_flops_per_token(model, workload.context) / hardware.peak_flops_per_s
    per_user_cache = workload.kv_bytes_private / bandwidth
    # Past the crossover the gap grows at (compute - cache) per user once the weights read
    # stops growing (every embedding row and expert read), so it exists exactly when that is positive.
    if per_user_cache >= per_user_compute:
        return None
    if model.moe is None:
        # Weights read (and a shared prefix) are the same at every batch but for the untied
        # embedding's rows, one per user up to V: (W0 + shared)/BW + B*(row + cache) = B*compute.
        fixed_s = (arch.parameters_read(model, 0) * weight_size + workload.kv_bytes_shared) / bandwidth
        row_s = 0.0 if model.tied_embeddings else model.hidden_size * weight_size / bandwidth
        if per_user_cache + row_s < per_user_compute:
            batch = fixed_s / (per_user_compute - per_user_cache - row_s)
            if batch <= model.vocab_size:
                return batch
        # Beyond V users every row is read: (W0 + V*row + shared)/BW + B*cache = B*compute.
        return (fixed_s + model.vocab_size * row_s) / (per_user_compute - per_user_cache)
    return _solve_crossover(hardware, workload)


def _solve_crossover(hardware: Hardware, workload: Workload) -> float:
    """Root of the convex gap ``compute_s - memory_s``: bracketed by doubling the batch, then
    narrowed by false position with the Illinois fix (a few steps instead of bisection's forty)."""

    # decode_pass's times with its per-user terms worked out once: the solver calls this
    # a dozen times or more, and a sweep calls the solver thousands of times.
    model = workload.model
    weight_size_s = bytes_per_value(workload.weight_precision) / hardware.bandwidth_bytes_per_s
    shared_s = workload.kv_bytes_shared / hardware.bandwidth_bytes_per_s
    cache_s = workload.kv_bytes_private / hardware.bandwidth_bytes_per_s
    compute_s = arch.decode_flops_per_token(model, workload.context) / hardware.peak_flops_per_s

    def gap(batch: float) -> tuple[float, float]:
        memory_s = arch.parameters_read(model, batch) * weight_size_s + shared_s + batch * cache_s
        return batch * compute_s - memory_s, memory_s

    low, high = 0.0, 1.0
    gap_low, _ = gap(low)
    gap_high, _ = gap(high)
    while gap_high < 0:
        low, gap_low = high, gap_high
        high *= 2
        gap_high, _ = gap(high)
    kept = 0  # which end stayed put last time: -1 low, +1 high
    for _ in range(200):
        middle = (low * gap_high - high * gap_low) / (gap_high - gap_low)
        gap_middle, memory_s = gap(middle)
        if abs(gap_middle) <= 1e-13 * memory_s or high - low <= 1e-12 * high:
            return middle
        if gap_middle < 0:
            low, gap_low = middle, gap_middle
            if kept == 1:
                gap_high /= 2  # Illinois: halve the stale end so it cannot stall convergence
            kept = 1
        else:
            high, gap_high = middle, gap_middle
            if kept == -1:
                gap_low /= 2
            kept = -1
    return middle


@dataclass(frozen=True)
class MemoryUse:
    """Weights plus every user's KV cache against the usable memory."""

    weights_bytes: float
    kv_bytes: float
    usable_bytes: float
    #: Most users that fit at this context; None when the cache is empty (no limit).
    max_batch: int | None

    @property
    def used_bytes(self) -> float:
        """``weights + KV bytes`` (``KV = shared prefix + batch * private``)."""
        return self.weights_bytes + self.kv_bytes

    @property
    def fits(self) -> bool:
        """Whether the used bytes are within the usable memory."""
        return self.used_bytes <= self.usable_bytes


def memory_use(hardware: Hardware, workload: Workload) -> MemoryUse:
    """Memory in use and the largest batch that fits.

    used = ``weights + shared prefix + batch * private KV``, where private =
    ``KV bytes per user - shared prefix`` (without a shared prefix, ``batch *
    context * KV bytes per token``, local layers capped at their window);
    usable = ``usable fraction * GPUs * memory per GPU``;
    largest batch = ``floor((usable - weights - shared) / private)``,
    0 when not even one user fits (``fit.memory_shortfall`` says whether the weights,
    the shared prefix or the cache is to blame), None when no user holds anything of
    their own (an empty context, or one that is all shared prefix).
    """
    weights = arch.weight_bytes(workload.model, workload.weight_precision)
    shared, private = workload.kv_bytes_shared, workload.kv_bytes_private
    usable = hardware.usable_memory_bytes
    if weights + shared > usable:
        max_batch: int | None = 0
    elif private <= 0:
        max_batch = None
    else:
        max_batch = math.floor((usable - weights - shared) / private)
    return MemoryUse(weights, workload.kv_bytes_for(workload.batch), usable, max_batch)


def tensor_parallel_degrees(model: ModelSpec, limit: int = 1024) -> tuple[int, ...]:
    """GPU counts a model can be split over by tensor parallelism, up to ``limit``.

    Powers of two (1, 2, 4, 8 ...) that divide the attention heads, so each GPU
    holds whole heads. With grouped-query attention the degree must also divide
    the KV heads, or be a multiple of them: then each KV head is copied to
    ``degree / K`` GPUs, as vLLM and TensorRT-LLM do (the copies' cache is not
    counted here). Latent attention (MLA) has no KV heads to split.
    """
    degrees = []
    degree = 1
    while degree <= limit and model.attention_heads % degree == 0:
        if model.mla is not None or model.kv_heads % degree == 0 or degree % model.kv_heads == 0:
            degrees.append(degree)
        degree *= 2
    return tuple(degrees)


def gpu_count_problem(model: ModelSpec, count: int) -> str | None:
    """Why ``count`` GPUs are not a layout these ceilings describe for ``model``, or None when they are:
    a degree of ``tensor_parallel_degrees``, or whole groups of the largest one (as ``gpus_to_fit``
    counts them). 3 GPUs cannot split 64 heads evenly, so no engine runs a 70B model that way."""
    degrees = tensor_parallel_degrees(model)
    if count in degrees or count % degrees[-1] == 0:
        return None
    listed = ", ".join(f"{degree:,}" for degree in degrees[:-1]) + f" or {degrees[-1]:,}"
    return (
        f"{model.name} splits by tensor parallelism over {listed} GPUs (powers of two that divide its"
        f" {model.attention_heads:,} attention heads"
        + ("" if model.mla is not None else f" and fit its {model.kv_heads:,} KV heads")
        + f"), or whole groups of {degrees[-1]:,}: {count:,} is not one of them"
    )


def gpus_to_fit(hardware: Hardware, workload: Workload) -> int:
    """Fewest GPUs of this kind, in a usable tensor-parallel layout, whose usable memory holds
    the weights and every user's cache: the smallest degree g of ``tensor_parallel_degrees``
    with ``weights + batch * context * KV bytes <= g * usable fraction * memory per GPU``.

    Past the largest degree the heads allow, G, GPUs come in whole groups of G
    (pipeline stages of one tensor-parallel group): ``ceil(needed / (G * per GPU)) * G``.
    ``hardware.count`` is ignored.
    """
    needed = memory_use(hardware, workload).used_bytes
    per_gpu = hardware.usable_fraction * hardware.gpu.memory_bytes
    degrees = tensor_parallel_degrees(workload.model)
    for degree in degrees:
        if needed <= degree * per_gpu:
            return degree
    largest = degrees[-1]
    return math.ceil(needed / (largest * per_gpu)) * largest


@dataclass(frozen=True)
class IterationCosts:
    """What one iteration of a serving engine moves and computes, per unit of work.

    An iteration runs ``n`` tokens through the model at once: ``decodes`` users each
    generating one token, plus chunks of prompt tokens being prefilled. It is one pass,
    on the same accounting as ``decode_step`` and ``prefill_pass`` (a batch of decodes
    alone, or one whole prompt alone, gives exactly their ``Pass``):

    bytes = weights read for ``n`` tokens + KV bytes per token * (``decode_context``
    + ``prefill_cached`` + ``prefill_tokens``), where ``decode_context`` sums the
    decoding users' current lengths, ``prefill_cached`` the prompt tokens already
    cached for the prefilling ones, and ``prefill_tokens`` the new ones written;
    FLOPs = ``2 * (multiplied parameters - head) * n`` for the layers, + ``2 * head``
    for each token whose next token is predicted (every decode, and the last token of
    each prompt that finishes in this iteration: ``heads``), + decode attention FLOPs
    per cached token * ``decode_context`` + prefill attention FLOPs per token pair *
    ``prefill_pairs``. A chunk of ``c`` new tokens after ``o`` cached ones has
    ``c*o + c*(c+1)/2`` pairs. Every layer is counted as global: a sliding window's
    cap is not applied per request here (exact for models without windows).
    """

    model: ModelSpec
    weight_bytes_per_value: float
    kv_bytes_per_token: float
    layer_flops_per_token: float
    head_flops_per_token: float
    decode_attention_flops_per_cached_token: float
    prefill_attention_flops_per_pair: float
    bandwidth_bytes_per_s: float
    peak_flops_per_s: float

    def weights_bytes(self, tokens: float) -> float:
        """Weight bytes a pass over ``tokens`` tokens reads (every weight if dense)."""
        return arch.parameters_read(self.model, tokens) * self.weight_bytes_per_value

    def iteration(
        self,
        decodes: int,
        decode_context: float,
        prefill_tokens: int = 0,
        prefill_cached: float = 0,
        prefill_pairs: float = 0,
        prompts_finished: int = 0,
    ) -> Pass:
        """The iteration's ``Pass``; its time is ``max(bytes / bandwidth, FLOPs / peak)``."""
        tokens = decodes + prefill_tokens
        if tokens == 0:
            return Pass(0.0, 0.0, 0.0, 0.0)
        bytes_moved = self.weights_bytes(tokens) + self.kv_bytes_per_token * (
            decode_context + prefill_cached + prefill_tokens
        )
        flops = (
            self.layer_flops_per_token * tokens
            + self.head_flops_per_token * (decodes + prompts_finished)
            + self.decode_attention_flops_per_cached_token * decode_context
            + self.prefill_attention_flops_per_pair * prefill_pairs
        )
        return Pass(bytes_moved, flops, bytes_moved / self.bandwidth_bytes_per_s, flops / self.peak_flops_per_s)


def iteration_costs(hardware: Hardware, workload: Workload) -> IterationCosts:
    """The per-unit costs of serving ``workload.model`` at its precisions on ``hardware``
    (``workload``'s batch, context and prompt are not used)."""
    model = workload.model
    hardware = resolved(hardware, workload)
    head = 2.0 * arch.output_head_parameters(model)
    return IterationCosts(
        model=model,
        weight_bytes_per_value=bytes_per_value(workload.weight_precision),
        kv_bytes_per_token=workload.kv_bytes_per_token,
        layer_flops_per_token=2.0 * arch.multiplied_parameters(model) - head,
        head_flops_per_token=head,
        decode_attention_flops_per_cached_token=arch.attention_flops_per_cached_token(model, latent=True),
        prefill_attention_flops_per_pair=arch.attention_flops_per_cached_token(model, latent=False),
        bandwidth_bytes_per_s=hardware.bandwidth_bytes_per_s,
        peak_flops_per_s=hardware.peak_flops_per_s,
    )
