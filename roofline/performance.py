"""Roofline estimates: decode speed, prefill time, memory use and the batching crossover.

Every estimate is a ceiling. A pass over the model takes the longer of two
times: the bytes it moves divided by memory bandwidth, and the FLOPs it does
divided by peak math rate. Several GPUs are taken as ideal tensor
parallelism: bandwidth, peak and memory add up and the interconnect is free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from . import architecture as arch
from .errors import SpecError
from .precisions import DEFAULT_COMPUTE_PRECISION, bytes_per_value, check_precision
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
    the CUDA context and fragmentation)."""

    gpu: GpuSpec
    count: int = 1
    compute_precision: str = DEFAULT_COMPUTE_PRECISION
    usable_fraction: float = DEFAULT_USABLE_FRACTION

    def __post_init__(self) -> None:
        _at_least("gpus", self.count, 1)
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
        """Aggregate dense peak at the compute precision: ``GPUs * peak per GPU``."""
        return self.count * self.gpu.peak_flops_per_s(self.compute_precision)

    @property
    def memory_bytes(self) -> float:
        """Aggregate memory: ``GPUs * memory per GPU``."""
        return self.count * self.gpu.memory_bytes

    @property
    def usable_memory_bytes(self) -> float:
        """Memory for weights and cache: ``usable fraction * GPUs * memory per GPU``."""
        return self.usable_fraction * self.memory_bytes


@dataclass(frozen=True)
class Workload:
    """A model served at given precisions to ``batch`` users, each with ``context``
    tokens already cached, plus one prompt of ``prompt`` tokens to prefill."""

    model: ModelSpec
    weight_precision: str = "bf16"
    kv_precision: str = "bf16"
    batch: int = 1
    context: int = 0
    prompt: int = 0

    def __post_init__(self) -> None:
        check_precision(self.weight_precision)
        check_precision(self.kv_precision)
        _at_least("batch", self.batch, 1)
        _at_least("context", self.context, 0)
        _at_least("prompt", self.prompt, 0)

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes per cached token at the KV precision (see architecture)."""
        return arch.kv_cache_bytes_per_token(self.model, self.kv_precision)


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


def _timed(hardware: Hardware, bytes_moved: float, flops: float) -> Pass:
    return Pass(
        bytes_moved=bytes_moved,
        flops=flops,
        memory_s=bytes_moved / hardware.bandwidth_bytes_per_s,
        compute_s=flops / hardware.peak_flops_per_s,
    )


def decode_pass(hardware: Hardware, workload: Workload, batch: float) -> Pass:
    """``decode_step`` at a real-valued ``batch`` (ignoring ``workload.batch``), so the
    crossover can be solved, and checked, on a continuous batch axis."""
    weights = arch.parameters_read(workload.model, batch) * bytes_per_value(workload.weight_precision)
    cache = batch * workload.context * workload.kv_bytes_per_token
    flops = batch * arch.decode_flops_per_token(workload.model, workload.context)
    return _timed(hardware, weights + cache, flops)


def decode_step(hardware: Hardware, workload: Workload) -> Pass:
    """One decode step for the whole batch, which yields one token per user.

    bytes = weights read (all of a dense model; for a mixture of experts, the
    experts the batch touches) + ``batch * context * KV bytes per token``;
    FLOPs = ``batch * (2 * active parameters + attention over the context)``;
    time = ``max(bytes / (GPUs * bandwidth), FLOPs / (GPUs * peak))``.
    Tokens/s per user = ``1 / time``; for all users, ``batch / time``.
    """
    return decode_pass(hardware, workload, workload.batch)


def prefill_pass(hardware: Hardware, workload: Workload) -> Pass:
    """Prefill of one prompt of P tokens, which yields the first token.

    FLOPs = ``2 * active parameters * P`` + causal attention, ``P(P+1)/2`` token
    pairs; bytes = the weights those P tokens touch + the ``P`` tokens of KV
    cache written. time = ``max(FLOPs / peak, bytes / bandwidth)``, so a prefill
    is never faster than one read of the weights. A prompt of 0 takes 0 s.
    """
    prompt = workload.prompt
    if prompt == 0:
        return _timed(hardware, 0.0, 0.0)
    model = workload.model
    weights = arch.parameters_read(model, prompt) * bytes_per_value(workload.weight_precision)
    cache = prompt * workload.kv_bytes_per_token
    flops = 2.0 * arch.active_parameters(model) * prompt + arch.prefill_attention_flops(model, prompt)
    return _timed(hardware, weights + cache, flops)


def simple_prefill_seconds(hardware: Hardware, workload: Workload) -> float:
    """The rule of thumb for prefill: ``2 * active parameters * P / peak``, with no
    attention and no memory term (``prefill_pass`` adds both)."""
    return 2.0 * arch.active_parameters(workload.model) * workload.prompt / hardware.peak_flops_per_s


def simple_crossover_batch(hardware: Hardware, weight_precision: str) -> float:
    """The rule of thumb for a dense model with no KV cache.

    Reading W weights of b bytes takes ``W*b / bandwidth``; the math for B users
    takes ``2*W*B / peak``. They are equal at ``B = peak / bandwidth * b / 2``,
    about 295 for 16-bit weights on an H100.
    """
    return hardware.peak_flops_per_s / hardware.bandwidth_bytes_per_s * bytes_per_value(weight_precision) / 2


def crossover_batch(hardware: Hardware, workload: Workload) -> float | None:
    """The batch at which a decode step's compute time reaches its memory time, or None.

    Solves ``compute_s(B) = memory_s(B)`` for real B using ``decode_step``'s
    model. Compute grows as ``c*B``; memory grows as weights touched (concave in
    B) plus ``B * context * KV bytes``, so the gap is convex and crosses zero at
    most once. When each extra user adds at least as much memory time as compute
    time, ``context * KV bytes / bandwidth >= c``, decode never turns
    compute-bound and the answer is None. For a dense model with no cache it
    equals ``simple_crossover_batch``.
    """
    per_user_compute = arch.decode_flops_per_token(workload.model, workload.context) / hardware.peak_flops_per_s
    per_user_cache = workload.context * workload.kv_bytes_per_token / hardware.bandwidth_bytes_per_s
    if per_user_cache >= per_user_compute:
        return None
    if workload.model.moe is None:
        # Weights read are the same at every batch, so the equation is linear:
        # W/BW + B*cache = B*compute.
        weights_s = arch.weight_bytes(workload.model, workload.weight_precision) / hardware.bandwidth_bytes_per_s
        return weights_s / (per_user_compute - per_user_cache)
    return _solve_crossover(hardware, workload)


def _solve_crossover(hardware: Hardware, workload: Workload) -> float:
    """Root of the convex gap ``compute_s - memory_s``: bracketed by doubling the batch, then
    narrowed by false position with the Illinois fix (a few steps instead of bisection's forty)."""

    def gap(batch: float) -> tuple[float, float]:
        step = decode_pass(hardware, workload, batch)
        return step.compute_s - step.memory_s, step.memory_s

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
        """``weights + batch * context * KV bytes per token``."""
        return self.weights_bytes + self.kv_bytes

    @property
    def fits(self) -> bool:
        """Whether the used bytes are within the usable memory."""
        return self.used_bytes <= self.usable_bytes


def memory_use(hardware: Hardware, workload: Workload) -> MemoryUse:
    """Memory in use and the largest batch that fits.

    used = ``weights + batch * context * KV bytes per token``;
    usable = ``usable fraction * GPUs * memory per GPU``;
    largest batch = ``floor((usable - weights) / (context * KV bytes per token))``,
    0 when the weights alone do not fit, None when the context is empty.
    """
    weights = arch.weight_bytes(workload.model, workload.weight_precision)
    per_user = workload.context * workload.kv_bytes_per_token
    usable = hardware.usable_memory_bytes
    if weights > usable:
        max_batch: int | None = 0
    elif per_user == 0:
        max_batch = None
    else:
        max_batch = math.floor((usable - weights) / per_user)
    return MemoryUse(weights, workload.batch * per_user, usable, max_batch)


def gpus_to_fit(hardware: Hardware, workload: Workload) -> int:
    """Fewest GPUs of this kind whose usable memory holds the weights and every user's cache:
    ``ceil((weights + batch * context * KV bytes) / (usable fraction * memory per GPU))``, at least 1.
    ``hardware.count`` is ignored."""
    needed = memory_use(hardware, workload).used_bytes / (hardware.usable_fraction * hardware.gpu.memory_bytes)
    return max(1, math.ceil(needed))


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
    FLOPs = ``2 * active parameters * n`` + decode attention FLOPs per cached token
    * ``decode_context`` + prefill attention FLOPs per token pair * ``prefill_pairs``.
    A chunk of ``c`` new tokens after ``o`` cached ones has ``c*o + c*(c+1)/2`` pairs.
    """

    model: ModelSpec
    weight_bytes_per_value: float
    kv_bytes_per_token: float
    matmul_flops_per_token: float
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
    ) -> Pass:
        """The iteration's ``Pass``; its time is ``max(bytes / bandwidth, FLOPs / peak)``."""
        tokens = decodes + prefill_tokens
        if tokens == 0:
            return Pass(0.0, 0.0, 0.0, 0.0)
        bytes_moved = self.weights_bytes(tokens) + self.kv_bytes_per_token * (
            decode_context + prefill_cached + prefill_tokens
        )
        flops = (
            self.matmul_flops_per_token * tokens
            + self.decode_attention_flops_per_cached_token * decode_context
            + self.prefill_attention_flops_per_pair * prefill_pairs
        )
        return Pass(bytes_moved, flops, bytes_moved / self.bandwidth_bytes_per_s, flops / self.peak_flops_per_s)


def iteration_costs(hardware: Hardware, workload: Workload) -> IterationCosts:
    """The per-unit costs of serving ``workload.model`` at its precisions on ``hardware``
    (``workload``'s batch, context and prompt are not used)."""
    model = workload.model
    return IterationCosts(
        model=model,
        weight_bytes_per_value=bytes_per_value(workload.weight_precision),
        kv_bytes_per_token=workload.kv_bytes_per_token,
        matmul_flops_per_token=2.0 * arch.active_parameters(model),
        decode_attention_flops_per_cached_token=arch.attention_flops_per_cached_token(model, latent=True),
        prefill_attention_flops_per_pair=arch.attention_flops_per_cached_token(model, latent=False),
        bandwidth_bytes_per_s=hardware.bandwidth_bytes_per_s,
        peak_flops_per_s=hardware.peak_flops_per_s,
    )
