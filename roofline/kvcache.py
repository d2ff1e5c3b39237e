"""What each user's cached context costs, and what each way of shrinking it buys.

The KV-cache chapter's questions, each answered from the specs by one
function: cache size by attention type, users that fit, the context where the
cache read overtakes the weights read, the throughput asymptote, the work a
cache saves, paging, prefix sharing, and swapping against recomputing.

Symbols, the site's notation (docs/notation.toml): L layers, H query heads, H_kv key-value
heads, d_head head width, b_kv effective bytes per cached value (scales included), c context,
B batch, P_shared shared prefix, w sliding window, B_mem memory bandwidth, N_active active
parameters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Literal

from . import architecture as arch
from .errors import SpecError
from .kvformats import kv_bytes_per_value
from .performance import Hardware, Workload, crossover_batch, memory_use, prefill_pass
from .specs import ModelSpec

AttentionKind = Literal["MHA", "GQA", "MQA", "MLA"]

#: vLLM's block size, the default the paper and the engine use (tokens per block).
PAGED_BLOCK_TOKENS = 16


# -- How big it is ---------------------------------------------------------------


def attention_kind(model: ModelSpec) -> AttentionKind:
    """Which attention the model caches for: MLA (a latent), MHA (H_kv = H), MQA (H_kv = 1) or GQA."""
    if model.mla is not None:
        return "MLA"
    if model.kv_heads == model.attention_heads:
        return "MHA"
    if model.kv_heads == 1:
        return "MQA"
    return "GQA"


def full_mha_kv_bytes_per_token(model: ModelSpec, precision: str = "bf16") -> float:
    """What the cache would be if every query head had its own key and value: ``2 * L * H * h * b``.

    For a latent-attention model, h is the per-head dimension d_h (the value
    head dim, 128 in DeepSeek-V3), as in Table 1 of the DeepSeek-V2 paper
    (arXiv 2405.04434), which sets MHA's ``2 * n_h * d_h * l`` against MLA's
    ``(d_c + d_h^R) * l``.
    """
    head_dim = model.mla.v_head_dim if model.mla is not None else model.head_dim
    return 2 * model.layers * model.attention_heads * head_dim * kv_bytes_per_value(precision)


@dataclass(frozen=True)
class AttentionCache:
    """One model's cache per token, beside what full multi-head attention would cache."""

    model: ModelSpec
    kind: AttentionKind
    bytes_per_token: float
    full_mha_bytes_per_token: float

    @property
    def shrink_factor(self) -> float:
        """How many times smaller than full MHA: ``full MHA bytes / bytes`` (1 for MHA itself)."""
        return self.full_mha_bytes_per_token / self.bytes_per_token


def with_kv_heads(model: ModelSpec, kv_heads: int) -> ModelSpec:
    """``model`` with ``kv_heads`` KV heads: full MHA (one per query head), MQA (1) or another grouping.

    Not only the cache changes: each layer's key and value projections are
    ``d x (H_kv * d_head)`` each, so the weights change by ``2 * L * d * (H_kv' - H_kv) * d_head``
    parameters too (compare ``architecture.weight_bytes`` of the two).
    """
    if model.mla is not None:
        raise SpecError(f"{model.name} caches a latent (MLA), not KV heads", field="kv_heads")
    _whole("kv_heads", kv_heads, 1)
    if model.attention_heads % kv_heads:
        raise SpecError(
            f"must divide the {model.attention_heads} query heads, got {kv_heads}",
            field="kv_heads",
            hint="each KV head serves a whole group of query heads",
        )
    return replace(model, kv_heads=kv_heads)


def attention_cache(model: ModelSpec, precision: str = "bf16") -> AttentionCache:
    """KV bytes per token by attention type: MHA/GQA/MQA ``2 * L * H_kv * d_head * b_kv``, MLA
    ``L * (r_latent + d_rope) * b_kv``, each beside full MHA's ``2 * L * H * d_head * b_kv``."""
    return AttentionCache(
        model=model,
        kind=attention_kind(model),
        bytes_per_token=arch.kv_cache_bytes_per_token(model, precision),
        full_mha_bytes_per_token=full_mha_kv_bytes_per_token(model, precision),
    )


# -- Capacity and the read cost ----------------------------------------------------


def users_that_fit(hardware: Hardware, workload: Workload) -> int | None:
    """``floor((usable memory - weights - shared prefix) / private KV per user)`` at the
    workload's context, ignoring its batch; 0 when the weights alone do not fit,
    None when no user holds anything of their own (see ``performance.memory_use``)."""
    return memory_use(hardware, workload).max_batch


def weights_read_bytes(workload: Workload, batch: float | None = None) -> float:
    """Weight bytes one decode step reads for ``batch`` users (default: the workload's):
    every weight of a dense model; for a mixture of experts, the experts the batch touches."""
    users = workload.batch if batch is None else batch
    return arch.weights_read_bytes(workload.model, users, workload.weight_precision)


def kv_equals_weights_context(workload: Workload) -> float | None:
    """The context at which one decode step reads as many KV bytes as weight bytes.

    Solves ``B * KV bytes per user(c) = weight bytes read``: without windows
    ``c = weight bytes / (B * KV bytes per token)``, scaling-book's ratio of
    parameter bytes to cache bytes. A local layer stops growing at its window,
    so past it only the global layers count. None when the cache can never
    grow that large (every layer local). The workload's context is ignored.
    """
    return arch.context_for_cache_bytes(
        workload.model, weights_read_bytes(workload) / workload.batch, workload.kv_precision
    )


def kv_read_asymptote(hardware: Hardware, workload: Workload) -> float | None:
    """Total decode tokens/s as the batch grows without bound: ``B_mem / private KV bytes per user``.

    Step time is ``(weights + shared + B * private) / B_mem`` while memory-bound,
    so ``B / step`` rises towards ``B_mem / private`` (``B_mem / (c * KV bytes per
    token)`` without windows or sharing) and never reaches it: the weights
    read is spread ever thinner, the cache read is not. Compute can cap the
    rate lower, at ``peak / FLOPs per token``. None when users hold nothing of
    their own.
    """
    private = workload.kv_bytes_private
    if private <= 0:
        return None
    return hardware.bandwidth_bytes_per_s / private


@dataclass(frozen=True)
class StepSplit:
    """What one memory-bound decode step reads: the weights and the cache, in bytes and seconds."""

    weights_bytes: float
    kv_bytes: float
    bandwidth_bytes_per_s: float

    @property
    def weights_s(self) -> float:
        """Time to read the weights: ``weight bytes / B_mem``."""
        return self.weights_bytes / self.bandwidth_bytes_per_s

    @property
    def kv_s(self) -> float:
        """Time to read the cache: ``KV bytes / B_mem``."""
        return self.kv_bytes / self.bandwidth_bytes_per_s

    @property
    def kv_share(self) -> float:
        """The cache's share of the step's reads: ``KV / (weights + KV)``."""
        return self.kv_bytes / (self.weights_bytes + self.kv_bytes)


def step_split(hardware: Hardware, workload: Workload) -> StepSplit:
    """The decode step's reads, weights against cache: weights read + ``shared + B * private``."""
    return StepSplit(
        weights_bytes=weights_read_bytes(workload),
        kv_bytes=workload.kv_bytes_for(workload.batch),
        bandwidth_bytes_per_s=hardware.bandwidth_bytes_per_s,
    )


# -- What is cached, and why: the work a cache saves ----------------------------------


def _sum_effective_context(model: ModelSpec, first: int, last: int) -> float:
    """``sum(effective_context(c) for c in first..last)``, in closed form."""
    if last < first:
        return 0.0
    local = arch.local_layers(model)
    window = model.sliding_window

    def plain(lo: int, hi: int) -> float:  # sum of c over lo..hi
        return (lo + hi) * (hi - lo + 1) / 2

    if not local or last <= window:
        return plain(first, last)
    below = plain(first, min(last, window)) if first <= window else 0.0
    start = max(first, window + 1)
    count = last - start + 1
    beyond = ((model.layers - local) * plain(start, last) + local * window * count) / model.layers
    return below + beyond


def _sum_causal_pairs(model: ModelSpec, first: int, last: int) -> float:
    """``sum(causal_pairs(n) for n in first..last)``, in closed form.

    Global layers: ``sum n(n+1)/2`` = tetrahedral numbers ``n(n+1)(n+2)/6``.
    Local layers past the window: ``w(w+1)/2 + (n - w) * w`` each.
    """
    if last < first:
        return 0.0

    def tetrahedral(n: int) -> float:
        return n * (n + 1) * (n + 2) / 6 if n > 0 else 0.0

    full = tetrahedral(last) - tetrahedral(first - 1)
    local = arch.local_layers(model)
    window = model.sliding_window
    if not local or last <= window:
        return full
    below = tetrahedral(min(last, window)) - tetrahedral(first - 1) if first <= window else 0.0
    start = max(first, window + 1)
    count = last - start + 1
    beyond = count * window * (window + 1) / 2 + window * ((start + last) * count / 2 - window * count)
    return ((model.layers - local) * full + local * (below + beyond)) / model.layers


@dataclass(frozen=True)
class GenerationWork:
    """FLOPs to generate ``output`` tokens after a ``prompt``, with the cache and without it."""

    prompt: int
    output: int
    cached_flops: float
    uncached_flops: float

    @property
    def ratio(self) -> float:
        """How many times more work recomputing takes: ``uncached / cached``."""
        return self.uncached_flops / self.cached_flops


def generation_work(model: ModelSpec, prompt: int, output: int) -> GenerationWork:
    """Total FLOPs for ``output`` new tokens after ``prompt``, cached against recomputed.

    A forward pass over n tokens that predicts one next token costs, as
    ``architecture.prefill_flops`` counts it, ``F(n) = 2 * body * n + 2 * head
    + pairs(n) * a``: every token through the layers, the output head for the
    last one only (``head = V * d``, ``body = multiplied parameters - head``),
    a = attention FLOPs per query-key pair. The first new token comes from the
    prompt's pass either way.

    - With the cache, token t (1..n-1) is one decode step that attends to the
      ``P + t`` tokens cached: ``F(P) + sum(2 * multiplied + a * (P + t))`` --
      linear in n.
    - Without it, token t reruns the whole sequence so far:
      ``sum(F(P + t) for t in 0..n-1)`` -- the ``2 * body * n^2 / 2`` term makes
      it quadratic in n (cubic in the attention term).
    """
    for name, value in (("prompt", prompt), ("output", output)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SpecError(f"must be a whole number of at least 1, got {value!r}", field=name)
    head = 2.0 * arch.output_head_parameters(model)
    per_token = 2.0 * arch.multiplied_parameters(model)
    body = per_token - head
    prefill_pair = arch.attention_flops_per_cached_token(model, latent=False)
    decode_pair = arch.attention_flops_per_cached_token(model, latent=True)
    first_pass = arch.prefill_flops(model, prompt)
    steps = output - 1
    cached = first_pass + per_token * steps + decode_pair * _sum_effective_context(model, prompt + 1, prompt + steps)
    last = prompt + output - 1
    uncached = (
        body * (prompt + last) * output / 2 + head * output + prefill_pair * _sum_causal_pairs(model, prompt, last)
    )
    return GenerationWork(prompt, output, cached, uncached)


# -- Paging ----------------------------------------------------------------------------


@dataclass(frozen=True)
class PagingUse:
    """Cache slots reserved for a set of requests, contiguous against paged, and how many hold tokens."""

    tokens: int
    contiguous_reserved: int
    paged_reserved: int
    block_tokens: int = PAGED_BLOCK_TOKENS

    @property
    def blocks(self) -> int:
        """Blocks handed out, which is the block-table entries the requests hold in all."""
        return self.paged_reserved // self.block_tokens

    @property
    def contiguous_utilization(self) -> float:
        """Share of a contiguous reservation that holds tokens: ``sum(l) / (n * max context)``."""
        return self.tokens / self.contiguous_reserved

    @property
    def paged_utilization(self) -> float:
        """Share of paged blocks that hold tokens: ``sum(l) / sum(ceil(l / block) * block)``."""
        return self.tokens / self.paged_reserved


def paging_use(lengths: Iterable[int], max_context: int, block_tokens: int = PAGED_BLOCK_TOKENS) -> PagingUse:
    """Reserved against used cache slots for requests of the given ``lengths`` (tokens).

    A contiguous allocator must reserve each request's maximum possible length
    up front, ``max_context``, and wastes ``max context - l``. A paged one
    hands out ``block_tokens`` at a time and wastes less than one block per
    request, ``ceil(l / block) * block - l``. When ``max_context`` is a whole
    number of blocks, as real ones are (2,048 = 128 blocks of 16), paging
    therefore never uses a smaller share of what it reserves.
    """
    for name, value in (("max_context", max_context), ("block_tokens", block_tokens)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SpecError(f"must be a whole number of at least 1, got {value!r}", field=name)
    tokens = count = paged = 0
    for length in lengths:
        if isinstance(length, bool) or not isinstance(length, int) or not 1 <= length <= max_context:
            raise SpecError(f"each must be a whole number from 1 to {max_context:,}, got {length!r}", field="lengths")
        tokens += length
        count += 1
        paged += -(-length // block_tokens) * block_tokens
    if count == 0:
        raise SpecError("needs at least one request", field="lengths")
    return PagingUse(tokens, count * max_context, paged, block_tokens)


def lognormal_lengths(count: int, median: float, spread: float, max_context: int) -> tuple[int, ...]:
    """``count`` request lengths spread like a log-normal distribution, the same on every run.

    Length i is the ``(i + 0.5) / count`` quantile, ``median * exp(spread * z)``
    with z the standard normal quantile, rounded and clipped to 1..max_context.
    Real request lengths are skewed like this: many short, a few long.
    """
    for name, whole in (("count", count), ("max_context", max_context)):
        if isinstance(whole, bool) or not isinstance(whole, int) or whole < 1:
            raise SpecError(f"must be a whole number of at least 1, got {whole!r}", field=name)
    for name, value in (("median", median), ("spread", spread)):
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise SpecError(f"must be a positive number, got {value!r}", field=name)
    normal = NormalDist()
    quantiles = (normal.inv_cdf((i + 0.5) / count) for i in range(count))
    return tuple(min(max_context, max(1, round(median * math.exp(spread * z)))) for z in quantiles)


@dataclass(frozen=True)
class PublishedMeasurement:
    """A figure measured and printed by others, with where it was printed."""

    low: float
    high: float
    what: str
    source: str


#: The vLLM paper's profile of earlier systems (its Figure 2): only this share of
#: their KV-cache memory held actual token states.
VLLM_PAPER_PRIOR_SYSTEMS_USED = PublishedMeasurement(
    0.204,
    0.382,
    "share of KV-cache memory holding token states in earlier serving systems",
    "Kwon et al., Efficient Memory Management for Large Language Model Serving with PagedAttention"
    " (SOSP 2023), Section 1 and Figure 2: https://arxiv.org/abs/2309.06180",
)


# -- Prefix sharing -------------------------------------------------------------------


def prefix_sharing_savings(workload: Workload) -> float:
    """Bytes saved by storing the shared prefix once instead of per user: ``(B - 1) * P_shared * KV bytes per token``.

    With windows, only the part of the prefix still inside each layer's window
    counts (see ``architecture.shared_prefix_cache_bytes``).
    """
    return (workload.batch - 1) * workload.kv_bytes_shared


# -- When memory runs out: swap or recompute ----------------------------------------------

#: What issuing one host-device copy costs the CPU (one ``cudaMemcpyAsync`` call), measured.
#: Engines move a swapped cache block by block, so a swap pays this once per copy.
CUDA_COPY_ISSUE = PublishedMeasurement(
    5e-6,
    7e-6,
    "seconds to submit one cudaMemcpyAsync copy, whatever its size",
    "Wu et al., DualPath: Breaking the Storage Bandwidth Bottleneck in Agentic LLM Inference"
    " (arXiv 2602.21548), Section 5.2: https://arxiv.org/abs/2602.21548",
)
#: How vLLM swaps: one copy per block, per layer, per cache tensor (keys, values).
ENGINE_SWAP_COPIES_SOURCE = (
    "vLLM's swap_blocks issues one cudaMemcpyAsync per block"
    " (https://github.com/vllm-project/vllm/blob/v0.6.0/csrc/cache_kernels.cu), called per layer for"
    " the key and the value cache (vllm/worker/cache_engine.py, attention backends' swap_blocks)"
)
#: vLLM made recompute its default because of those copies; V1 recomputes only.
ENGINE_PRACTICE_SOURCES = (
    "vLLM pull request 12, 'Implement preemption via recomputation': recomputation is the default because"
    " swapping incurs significant overheads due to numerous small data transfers between CPU and GPU:"
    " https://github.com/vllm-project/vllm/pull/12",
    "Kwon et al., PagedAttention (SOSP 2023), Section 7.3: swapping incurs excessive overhead with small"
    " blocks; for blocks of 16 to 64 tokens the two perform comparably: https://arxiv.org/abs/2309.06180",
    "vLLM V1, Optimization and Tuning: preempted requests are recomputed when cache space frees up:"
    " https://docs.vllm.ai/en/latest/configuration/optimization.html",
)


def cache_tensors_per_layer(model: ModelSpec) -> int:
    """Cache tensors each layer keeps, each copied on its own: a latent (MLA) 1, keys and values 2."""
    return 1 if model.mla is not None else 2


def swap_copies(model: ModelSpec, context: int, block_tokens: int = PAGED_BLOCK_TOKENS) -> int:
    """Copies one GPU issues to move a user's cache of ``context`` tokens block by block:
    ``tensors per layer * sum over layers of ceil(tokens the layer holds / block)``.

    Every GPU of a tensor-parallel group holds a slice of every layer, so each
    issues this many copies (of smaller blocks), in parallel with the others.
    """
    _whole("context", context, 0)
    _whole("block_tokens", block_tokens, 1)
    local = arch.local_layers(model)
    window = model.sliding_window
    blocks = (model.layers - local) * -(-context // block_tokens)
    if local:
        blocks += local * -(-min(context, window) // block_tokens)
    return cache_tensors_per_layer(model) * blocks


def _whole(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SpecError(f"must be a whole number of at least {minimum}, got {value!r}", field=name)


@dataclass(frozen=True)
class SwapCost:
    """Moving one user's cache over the host link, one way: the bytes, and the copies that carry them."""

    context: int
    cache_bytes: float
    #: Copies each GPU issues (``swap_copies``), and what issuing one costs, seconds.
    copies: int
    copy_overhead_s: float
    #: Time to move the bytes alone: ``KV bytes / (GPUs * host link)``.
    link_s: float

    @property
    def issue_s(self) -> float:
        """Time to issue the copies: ``copies * copy overhead``."""
        return self.copies * self.copy_overhead_s

    @property
    def seconds(self) -> float:
        """Copies are issued while earlier ones move, so the swap takes the longer of the two:
        ``max(link time, issue time)``."""
        return max(self.link_s, self.issue_s)

    @property
    def bound(self) -> Literal["link", "copies"]:
        """What sets the time: the link's bandwidth, or issuing many small copies."""
        return "link" if self.link_s >= self.issue_s else "copies"


def swap_cost(
    hardware: Hardware,
    model: ModelSpec,
    context: int,
    kv_precision: str = "bf16",
    block_tokens: int = PAGED_BLOCK_TOKENS,
    copy_overhead_s: float = CUDA_COPY_ISSUE.low,
) -> SwapCost:
    """One user's cache of ``context`` tokens moved over the host link, block by block.

    ``link = KV bytes(c) / (GPUs * host link)``: each GPU moves its own shard over
    its own link. ``issue = copies * copy overhead``, the copies of ``swap_copies``
    at the measured cost of issuing one (``CUDA_COPY_ISSUE``, its low end by
    default); a copy of every block at once (one batched call, or a gather
    kernel) is ``copy_overhead_s=0``. Time = ``max(link, issue)``.
    """
    if not (isinstance(copy_overhead_s, (int, float)) and math.isfinite(copy_overhead_s) and copy_overhead_s >= 0):
        raise SpecError(f"must be a number of seconds, 0 or more, got {copy_overhead_s!r}", field="copy_overhead_s")
    copies = swap_copies(model, context, block_tokens)
    cache = arch.kv_cache_bytes(model, context, kv_precision)
    link = cache / (hardware.count * hardware.gpu.host_link())
    return SwapCost(context, cache, copies, float(copy_overhead_s), link)


def swap_seconds(
    hardware: Hardware,
    model: ModelSpec,
    context: int,
    kv_precision: str = "bf16",
    block_tokens: int = PAGED_BLOCK_TOKENS,
    copy_overhead_s: float = CUDA_COPY_ISSUE.low,
) -> float:
    """Time to move one user's cache one way: ``swap_cost(...).seconds``."""
    return swap_cost(hardware, model, context, kv_precision, block_tokens, copy_overhead_s).seconds


def recompute_seconds(
    hardware: Hardware, model: ModelSpec, context: int, weight_precision: str = "bf16", kv_precision: str = "bf16"
) -> float:
    """Time to rebuild one user's cache: a prefill of the ``context`` tokens, the same
    ``performance.prefill_pass`` that ``estimate`` reports."""
    workload = Workload(model, weight_precision, kv_precision, prompt=context)
    return prefill_pass(hardware, workload).seconds


@dataclass(frozen=True)
class SwapOrRecompute:
    """Two ways to bring back ``context`` tokens of evicted cache: copy them back, or prefill them again."""

    swap: SwapCost
    recompute_s: float

    @property
    def context(self) -> int:
        """Tokens of cache brought back."""
        return self.swap.context

    @property
    def swap_s(self) -> float:
        """Time to copy them back: ``swap.seconds``."""
        return self.swap.seconds

    @property
    def cheaper(self) -> Literal["swap", "recompute"]:
        """The faster way; a tie goes to swapping, which needs no compute."""
        return "swap" if self.swap_s <= self.recompute_s else "recompute"

    @property
    def break_even_copy_overhead_s(self) -> float:
        """The cost of issuing one copy above which recomputing wins: ``recompute / copies``,
        or 0 when moving the bytes alone already takes longer than the prefill."""
        if self.swap.link_s >= self.recompute_s or self.swap.copies == 0:
            return 0.0
        return self.recompute_s / self.swap.copies


def swap_or_recompute(
    hardware: Hardware,
    model: ModelSpec,
    context: int,
    weight_precision: str = "bf16",
    kv_precision: str = "bf16",
    block_tokens: int = PAGED_BLOCK_TOKENS,
    copy_overhead_s: float = CUDA_COPY_ISSUE.low,
) -> SwapOrRecompute:
    """Both ways for one user's ``context`` tokens: ``max(KV(c) / link, copies * overhead)``
    against a prefill of c tokens. Only the way back is compared; swapping also paid
    the same copies on the way out."""
    return SwapOrRecompute(
        swap_cost(hardware, model, context, kv_precision, block_tokens, copy_overhead_s),
        recompute_seconds(hardware, model, context, weight_precision, kv_precision),
    )


def break_even_host_link(
    hardware: Hardware, model: ModelSpec, context: int, weight_precision: str = "bf16", kv_precision: str = "bf16"
) -> float:
    """The host link (per GPU, bytes/s) at which moving ``context`` tokens of cache in one
    piece takes as long as recomputing them: ``KV bytes(c) / (GPUs * prefill time(c))``,
    the prefill being ``performance.prefill_pass``. Over a slower link recomputing wins
    even against a copy with no per-block cost."""
    _whole("context", context, 1)
    prefill = recompute_seconds(hardware, model, context, weight_precision, kv_precision)
    return arch.kv_cache_bytes(model, context, kv_precision) / (hardware.count * prefill)


def _first_context(holds: Callable[[int], bool], limit: int) -> int | None:
    """Smallest whole context in 1..limit where ``holds`` is true, given that it stays true after."""
    if not holds(limit):
        return None
    low, high = 0, limit
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if holds(middle) else (middle, high)
    return high


def no_crossover_from(hardware: Hardware, workload: Workload, limit: int = 1 << 20) -> int | None:
    """The shortest context (tokens) at which decode never turns compute-bound, or None up to ``limit``.

    ``performance.crossover_batch`` is None exactly when each user's cache read
    costs at least as much time as its math, a condition that only grows more
    true as the context grows, so a bisection over whole contexts finds it.
    """

    def removed(context: int) -> bool:
        probe = Workload(workload.model, workload.weight_precision, workload.kv_precision, context=context)
        return crossover_batch(hardware, probe) is None

    return _first_context(removed, limit)


def recompute_wins_between(
    hardware: Hardware,
    model: ModelSpec,
    weight_precision: str = "bf16",
    kv_precision: str = "bf16",
    block_tokens: int = PAGED_BLOCK_TOKENS,
    copy_overhead_s: float = CUDA_COPY_ISSUE.low,
    limit: int | None = None,
) -> tuple[int, int] | None:
    """The contexts ``[start, end)`` at which recomputing beats swapping, or None if it never does.

    Searched at whole blocks (contexts ``n * block``) up to ``limit`` tokens, the
    model's ``max_context`` by default (2**24 without one). At whole blocks the swap,
    ``max(link, issue)``, grows linearly with n (more slowly past a sliding window),
    and the prefill, ``max(memory, compute)``, is a weights read at first, then
    compute growing faster than linearly (attention is quadratic). So swap minus
    prefill rises, peaks and falls, positive on one run of blocks at most; the
    search finds the peak (ternary search) and bisects each side of it.
    """
    _whole("block_tokens", block_tokens, 1)
    if limit is None:
        limit = model.max_context or 1 << 24
    _whole("limit", limit, 1)
    most = limit // block_tokens
    if most < 1:
        return None

    def gap(blocks: int) -> float:  # swap time minus recompute time, at a whole number of blocks
        context = blocks * block_tokens
        return swap_seconds(hardware, model, context, kv_precision, block_tokens, copy_overhead_s) - (
            recompute_seconds(hardware, model, context, weight_precision, kv_precision)
        )

    low, high = 1, most  # the gap is concave: find its largest value on [1, most] by ternary search
    while high - low > 2:
        left, right = low + (high - low) // 3, high - (high - low) // 3
        low, high = (low, right) if gap(left) >= gap(right) else (left, high)
    peak = max(range(low, high + 1), key=gap)
    if gap(peak) <= 0:
        return None
    first = _first_context(lambda blocks: gap(blocks) > 0, peak)  # rising side: last non-positive before
    after = _first_context(lambda blocks: gap(peak + blocks - 1) <= 0, most - peak + 1)
    last = most if after is None else peak + after - 2
    return (first * block_tokens, last * block_tokens + 1)
