"""Splitting a model over several GPUs: which splits are possible, and what a pipeline costs.

Two ways to split a model that does not fit, or is too slow, on one GPU:

- **Tensor parallelism (TP)** cuts every layer into G slices, one per GPU: each GPU
  holds ``1/G`` of every weight matrix and whole attention heads, and the GPUs add up
  their partial results with two all-reduces per layer (the cost of those lives in
  ``performance``, with the links that carry them). A degree is usable only if every
  GPU gets whole heads (``usable_tp_degrees``).
- **Pipeline parallelism (PP)** cuts the stack of layers into p stages, one after the
  other (``stage_layers``). A token passes through every stage in turn, so one user's
  token is no faster than on one GPU, plus a hop between stages
  (``pipeline_latency_s``). Throughput comes from keeping several micro-batches in
  flight (``pipeline_interval_s``); a batch that passes once and drains leaves the
  share ``(p - 1) / (m + p - 1)`` of the stages idle (``pipeline_bubble_fraction``).

The functions here take plain numbers (seconds per stage, bytes, degrees) or a
caller's function for "how long" and "does it fit", so they know nothing of GPUs or
cost models. ``best_degree`` picks the fastest of a set of degrees that fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

from .errors import SpecError
from .specs import ModelSpec

#: Largest degree a search considers: a split of a model over more GPUs than this is
#: beyond any single deployment the specs describe.
DEGREE_LIMIT = 100_000


def _whole(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError(f"must be a whole number, got {value!r}", field=name)
    if value < minimum:
        raise SpecError(f"must be at least {minimum}, got {value}", field=name)
    return value


def _seconds(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise SpecError(f"must be a finite number of seconds, 0 or more, got {value!r}", field=name)
    return float(value)


def splits_heads(model: ModelSpec, degree: int) -> bool:
    """Whether ``degree`` GPUs can each hold whole attention heads of ``model``.

    The degree must divide the attention heads. With grouped-query attention it must
    also divide the H_kv key-value heads, or be a multiple of H_kv: then each KV head is copied to
    ``degree / H_kv`` GPUs, as vLLM and TensorRT-LLM do. Latent attention (MLA) keeps one
    latent per token that every head reads, so only the attention heads constrain it.
    """
    _whole("degree", degree, 1)
    if model.attention_heads % degree:
        return False
    if model.mla is not None:
        return True
    return model.kv_heads % degree == 0 or degree % model.kv_heads == 0


def usable_tp_degrees(model: ModelSpec, limit: int = DEGREE_LIMIT) -> tuple[int, ...]:
    """Every tensor-parallel degree up to ``limit`` that gives each GPU whole heads
    (``splits_heads``), smallest first. Not only powers of two: 48 heads split 6 ways."""
    _whole("limit", limit, 1)
    heads = model.attention_heads
    return tuple(degree for degree in range(1, min(heads, limit) + 1) if splits_heads(model, degree))


def nearest_usable_tp_degrees(model: ModelSpec, degree: int) -> tuple[int, ...]:
    """The usable degrees closest to ``degree``: the largest below it and the smallest
    above it (one of them when ``degree`` is past either end), or ``(degree,)`` when it
    is usable itself."""
    _whole("degree", degree, 1)
    if degree <= model.attention_heads and splits_heads(model, degree):
        return (degree,)
    usable = usable_tp_degrees(model)
    below = [d for d in usable if d < degree]
    above = [d for d in usable if d > degree]
    return tuple(([below[-1]] if below else []) + ([above[0]] if above else []))


def check_tp_degree(model: ModelSpec, degree: int, *, field: str = "gpus") -> int:
    """``degree`` if it splits ``model``'s heads evenly, else a SpecError that names the
    nearest usable degrees (``nearest_usable_tp_degrees``)."""
    _whole(field, degree, 1)
    if degree <= model.attention_heads and splits_heads(model, degree):
        return degree
    nearest = nearest_usable_tp_degrees(model, degree)
    if model.mla is not None or model.kv_heads == model.attention_heads:
        why = f"{model.attention_heads} attention heads"
    else:
        why = f"{model.attention_heads} attention heads and {model.kv_heads} KV heads"
    hint = "the nearest usable tensor-parallel degrees are " + " and ".join(str(d) for d in nearest)
    if len(nearest) == 1:
        hint = f"the nearest usable tensor-parallel degree is {nearest[0]}"
    raise SpecError(
        f"a tensor-parallel degree of {degree} cannot give each GPU whole heads of {model.name} ({why})",
        field=field,
        hint=hint,
    )


def stage_layers(layers: int, stages: int) -> tuple[int, ...]:
    """How many layers each of ``stages`` pipeline stages holds: as even as whole layers
    allow, the first ``layers mod stages`` stages one more. SpecError when there are
    more stages than layers (a stage with no layer does nothing but add a hop)."""
    _whole("layers", layers, 1)
    _whole("pp_stages", stages, 1)
    if stages > layers:
        raise SpecError(
            f"must not exceed the model's {layers} layers, got {stages}",
            field="pp_stages",
            hint="each pipeline stage holds at least one whole layer",
        )
    share, extra = divmod(layers, stages)
    return tuple(share + 1 if stage < extra else share for stage in range(stages))


def pipeline_bubble_fraction(stages: int, microbatches: int) -> float:
    """Share of the stages' time left idle when ``microbatches`` equal micro-batches pass
    once through ``stages`` equal stages and the pipeline drains (GPipe):
    ``(p - 1) / (m + p - 1)``. The pass takes ``m + p - 1`` stage-times, of which each
    stage works ``m``. 0 for one stage; it shrinks towards 0 as micro-batches grow.

    A prefill split into m chunks pays this. A decode loop that keeps at least p
    micro-batches circulating does not drain between tokens (``pipeline_interval_s``).
    """
    _whole("pp_stages", stages, 1)
    _whole("microbatches", microbatches, 1)
    return (stages - 1) / (microbatches + stages - 1)


def pipeline_latency_s(stage_s: Sequence[float], hop_s: float) -> float:
    """One micro-batch through every stage: ``sum of the stage times + (p - 1) hops``.

    This is a batch-1 token's time on a pipeline: the stages run one after the other,
    so p stages holding ``1/p`` of the layers each take as long as one GPU holding all
    of them, and the hops between them come on top. Pipelining never makes one user
    faster."""
    times = [_seconds("stage_s", t) for t in stage_s]
    if not times:
        raise SpecError("needs at least one stage", field="stage_s")
    return sum(times) + (len(times) - 1) * _seconds("hop_s", hop_s)


def pipeline_pass_s(stage_s: Sequence[float], hop_s: float, microbatches: int) -> float:
    """``microbatches`` micro-batches through the stages once, then drained (a prefill
    in chunks): the first comes out after ``pipeline_latency_s``, each next one after the
    slowest stage, ``(m - 1) * max(stage) + sum(stage) + (p - 1) * hop``. With p equal
    stages of t seconds and no hop, ``(m + p - 1) * t``: the bubble's formula."""
    _whole("microbatches", microbatches, 1)
    latency = pipeline_latency_s(stage_s, hop_s)
    return (microbatches - 1) * max(stage_s) + latency


def pipeline_interval_s(stage_s: Sequence[float], hop_s: float, microbatches: int) -> float:
    """Seconds between a user's tokens when ``microbatches`` micro-batches circulate
    through the stages without draining (a serving engine's decode loop): the longer of
    one lap (``pipeline_latency_s``) and the slowest stage serving every micro-batch in
    turn (``m * max(stage)``).

    With fewer micro-batches than stages, stages wait for the lap (idle share about
    ``(p - m) / p``); from ``m = p`` on every stage is busy and each added micro-batch
    lengthens every user's interval instead. Total tokens per second is ``batch /
    interval`` either way.
    """
    _whole("microbatches", microbatches, 1)
    latency = pipeline_latency_s(stage_s, hop_s)
    return max(latency, microbatches * max(stage_s))


def point_to_point_s(message_bytes: float, link_bytes_per_s: float, latency_s: float) -> float:
    """One hop between pipeline stages: ``latency + bytes / link``. The message is the
    activations of the tokens in flight, ``tokens * hidden * 2`` bytes for 16-bit
    activations: 16 kB per token for an 8,192-wide model, against gigabytes of weights."""
    if isinstance(message_bytes, bool) or not isinstance(message_bytes, (int, float)) or message_bytes < 0:
        raise SpecError(f"must be 0 or more bytes, got {message_bytes!r}", field="message_bytes")
    if isinstance(link_bytes_per_s, bool) or not isinstance(link_bytes_per_s, (int, float)) or link_bytes_per_s <= 0:
        raise SpecError(f"must be a positive number of bytes per second, got {link_bytes_per_s!r}", field="link")
    return _seconds("latency_s", latency_s) + message_bytes / link_bytes_per_s


def fitting_degrees(degrees: Iterable[int], fits: Callable[[int], bool]) -> tuple[int, ...]:
    """The degrees, in the order given, at which ``fits(degree)`` holds (the weights and
    the users' caches fit in that many GPUs' memory)."""
    return tuple(degree for degree in degrees if fits(degree))


def best_degree(degrees: Iterable[int], step_s: Callable[[int], float]) -> int | None:
    """The degree with the shortest ``step_s(degree)`` (seconds per decode step), the
    smaller degree on a tie (fewer GPUs for the same speed); None for no degrees.

    More GPUs shorten the weights' share of a step as ``1/G`` but add all-reduces whose
    latency does not shrink, so the fastest degree is often not the largest.
    """
    best: tuple[float, int] | None = None
    for degree in degrees:
        seconds = step_s(degree)
        if best is None or seconds < best[0]:
            best = (seconds, degree)
    return None if best is None else best[1]


def latency_optimal_degree(weights_s: float, layers: int, hop_latency_s: float) -> float:
    """Where ``T(G) = weights_s / G + 2 * layers * 2 (G - 1) * hop_latency_s`` is least:
    ``G* = sqrt(weights_s / (4 * layers * hop_latency_s))``, infinite when hops are free.

    The model behind it: a batch-1 decode step reads ``1/G`` of the weights on each GPU
    and pays two all-reduces per layer, each a ring of ``2 (G - 1)`` hops of fixed
    latency (NCCL's own latency model counts ``2 (nRanks - 1)`` steps for a ring
    all-reduce). The bytes sent are tiny at batch 1 and left out. A continuous answer:
    the usable degrees on either side of it are the candidates.
    """
    _whole("layers", layers, 1)
    weights_s = _seconds("weights_s", weights_s)
    hop = _seconds("hop_latency_s", hop_latency_s)
    if hop == 0:
        return math.inf
    return math.sqrt(weights_s / (4 * layers * hop))


def kv_room_ratio(degree: int, usable_bytes_per_gpu: float, weight_bytes: float) -> float:
    """How many times more KV cache ``degree`` GPUs hold than one:
    ``(G * U - W) / (U - W)`` for usable memory U per GPU and weights W.

    More than G whenever the weights take part of one GPU: the weights are stored once
    however many GPUs share them, so every GPU added brings its whole U for the cache.
    Weights filling 92% of one GPU give ``(2 - 0.92) / (1 - 0.92) = 13.5`` times the room
    on two. ``inf`` when the weights leave no room on one GPU.
    """
    _whole("degree", degree, 1)
    for name, value in (("usable_bytes_per_gpu", usable_bytes_per_gpu), ("weight_bytes", weight_bytes)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise SpecError(f"must be a finite number of bytes, 0 or more, got {value!r}", field=name)
    if usable_bytes_per_gpu <= weight_bytes:
        return math.inf
    return (degree * usable_bytes_per_gpu - weight_bytes) / (usable_bytes_per_gpu - weight_bytes)


def tp_pp_splits(gpus: int, model: ModelSpec) -> tuple[tuple[int, int], ...]:
    """Every way to arrange ``gpus`` GPUs as a tensor-parallel degree times pipeline
    stages, ``(tp, pp)`` with ``tp * pp = gpus``, the TP degree usable
    (``splits_heads``) and no more stages than layers; the widest TP first."""
    _whole("gpus", gpus, 1)
    splits = []
    for tp in range(min(gpus, model.attention_heads), 0, -1):
        if gpus % tp == 0 and splits_heads(model, tp) and gpus // tp <= model.layers:
            splits.append((tp, gpus // tp))
    return tuple(splits)


def ring_allreduce_latency_s(base_s: float, step_s: float, gpus: int) -> float:
    """One small ring all-reduce over ``gpus`` GPUs as NCCL's cost model prices it:
    ``base + step * 2 (G - 1)`` (``baseLat + nsteps * hwLat`` with ``nsteps = 2 (nRanks - 1)``,
    src/graph/tuning.cc). The base is paid once whatever G; only the steps grow."""
    _whole("gpus", gpus, 1)
    if gpus == 1:
        return 0.0
    return _seconds("base_s", base_s) + _seconds("step_s", step_s) * 2 * (gpus - 1)


def ring_step_for_base_s(measured_s: float, measured_gpus: int, base_s: float) -> float:
    """The per-step latency a ring must have for ``base + step * 2 (G_m - 1)`` to equal the
    ``measured_s`` seconds measured on ``measured_gpus`` GPUs: ``(measured - base) / (2 (G_m -
    1))``. One measurement fixes the sum, not the split: every base from 0 to the measurement
    fits it, which is what a sensitivity over the base explores. SpecError when the base
    exceeds the measurement."""
    _whole("measured_gpus", measured_gpus, 2)
    measured, base = _seconds("measured_s", measured_s), _seconds("base_s", base_s)
    if base > measured:
        raise SpecError(f"must not exceed the measured {measured!r} s, got {base!r}", field="base_s")
    return (measured - base) / (2 * (measured_gpus - 1))


def crossover(gap: Callable[[float], float], low: float, high: float, *, tolerance: float = 1e-12) -> float | None:
    """Where ``gap(x)`` changes sign between ``low`` and ``high`` (bisection to ``tolerance``),
    None when it has the same sign at both ends. A sensitivity's break-even: with ``gap(base) =
    step(TP4) - step(TP8)``, the base latency above which eight GPUs give the faster token."""
    low, high = float(low), float(high)
    at_low, at_high = gap(low), gap(high)
    if at_low == 0:
        return low
    if (at_low < 0) == (at_high < 0):
        return None
    while high - low > tolerance:
        middle = (low + high) / 2
        if (gap(middle) < 0) == (at_low < 0):
            low = middle
        else:
            high = middle
    return (low + high) / 2
