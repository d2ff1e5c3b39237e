"""What a prefix-cache hit saves, what the cache costs in memory, and how often it hits.

A prefix cache (vLLM's automatic prefix caching, SGLang's RadixAttention) keeps the KV cache of
prompt prefixes it has already computed; a request whose prompt starts with a cached prefix skips
prefilling those tokens and starts from the cached KV. Chapter 8's closed forms, on the accounting
the serving simulator times every iteration with (``performance.IterationCosts``):

Public API
    ``hit_saving(hardware, workload, prompt, cached)`` -> ``HitSaving``
        Prefill of a ``prompt``-token prompt whose first ``cached`` tokens are found in the cache,
        beside the whole prompt prefilled from nothing. FLOPs and seconds of each
        (``IterationCosts.prefill``): new tokens ``n = prompt - cached``;
        FLOPs = ``2 (N_mult - head) n + 2 head + a (n cached + n (n + 1) / 2)``, ``a`` the attention
        FLOPs of one token pair; bytes = weights read for ``n`` tokens + KV bytes per token *
        ``prompt`` (the cached part read, the new part written); seconds = ``max(bytes / bandwidth,
        FLOPs / peak)`` + all-reduces + the cost model's overheads. ``saved_s`` = full - after hit,
        the TTFT a hit takes off when the request does not wait in a queue. The saving is below the
        hit's token share ``cached / prompt``: the new tokens still attend over the cached ones,
        and a short remainder cannot go faster than one read of the weights.
    ``ttft_after_hit_s(hardware, workload, prompt, cached)``
        The prefill seconds left after a hit (``HitSaving.after_s``).
    ``cached_tokens(prompt, prefix_share)``
        Tokens of a prompt covered by a shared prefix that is ``prefix_share`` of it:
        ``floor(prefix_share * prompt)``.
    ``cache_memory(hardware, workload, prefix_tokens, groups)`` -> ``CacheMemory``
        Bytes that ``groups`` distinct prefixes of ``prefix_tokens`` tokens take in 16-token blocks,
        ``groups * ceil(prefix_tokens / 16) * 16 * KV bytes per token`` (KV copies included, as
        ``performance.memory_use`` counts them), against the KV pool, and what that leaves the
        running batch: ``pool - prefix bytes``, and the users of ``workload.context`` tokens
        that still fit, ``floor(left / (copies * KV bytes per user))``.
    ``prefixes_that_fit(hardware, workload, prefix_tokens, cache_share)``
        How many whole prefixes a cache of ``cache_share`` of the KV pool holds:
        ``floor(cache_share * pool blocks / ceil(prefix_tokens / 16))``.
    ``lru_hit_rate(groups, cached_prefixes)``
        Steady-state hit rate of an LRU cache holding ``C`` prefixes when each request names one of
        ``G`` prefix groups uniformly and independently: ``min(C, G) / G``. Exact: an LRU cache
        that has filled always holds ``min(C, G)`` distinct groups, and the next request names any
        one group with probability ``1 / G`` whatever came before.
    ``lru_hit_rate_over_run(groups, cached_prefixes, requests)``
        The same counted over a run of ``n`` requests that starts with an empty cache, when the
        cache holds every group (``C >= G``): the misses are the first request of each group seen,
        expected ``G (1 - (1 - 1/G)^n)``, so the hit rate is ``1 - G (1 - (1 - 1/G)^n) / n``.
        For ``C < G`` it returns the steady-state rate (the cold start then costs at most
        ``C`` extra misses, which the function does not count).

Every figure here is a ceiling's when ``hardware`` carries the ceiling's costs (the default), and
the calibrated expectation when it carries ``--costs expected``'s fitted cost model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .errors import SpecError
from .performance import Hardware, Workload, iteration_costs, memory_use

#: Tokens per KV block, vLLM's default (the serving simulator's ``BLOCK_TOKENS``).
BLOCK_TOKENS = 16


def _whole(name: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SpecError(f"must be a whole number of at least {minimum}, got {value!r}", field=name)
    return value


def check_prefix(prefix_tokens: int, prompt_tokens: int, prompt: str = "the prompt") -> None:
    """SpecError, in one line, when a shared prefix is longer than the prompt it starts (``prompt``
    says which prompt, in words)."""
    _whole("prefix_tokens", prefix_tokens, 0)
    if prefix_tokens > prompt_tokens:
        raise SpecError(
            f"a shared prefix of {prefix_tokens:,} tokens is longer than {prompt} ({prompt_tokens:,} tokens)",
            field="prefix_tokens",
            hint="give a prefix of at most the shortest prompt, or lengthen the prompt",
        )


def check_share(prefix_share: float) -> float:
    """SpecError, in one line, unless ``prefix_share`` is a number from 0 to 1."""
    if isinstance(prefix_share, bool) or not isinstance(prefix_share, (int, float)) or not 0 <= prefix_share <= 1:
        raise SpecError(
            f"must be between 0 and 1, got {prefix_share!r}",
            field="prefix_share",
            hint="give the shared share of each prompt as a fraction, e.g. 0.9 for 90 %",
        )
    return float(prefix_share)


def cached_tokens(prompt: int, prefix_share: float) -> int:
    """Tokens of a ``prompt``-token prompt that a shared prefix of ``prefix_share`` covers:
    ``floor(prefix_share * prompt)``."""
    _whole("prompt", prompt, 1)
    return math.floor(check_share(prefix_share) * prompt)


@dataclass(frozen=True)
class HitSaving:
    """One prompt's prefill with and without ``cached`` tokens found in the prefix cache."""

    prompt: int
    cached: int
    full_s: float
    after_s: float
    full_flops: float
    after_flops: float

    @property
    def saved_s(self) -> float:
        """Prefill seconds a hit takes off: ``full_s - after_s``."""
        return self.full_s - self.after_s

    @property
    def saved_fraction(self) -> float:
        """Share of the prefill time saved: ``saved_s / full_s``."""
        return self.saved_s / self.full_s

    @property
    def saved_flops(self) -> float:
        """FLOPs a hit takes off: ``full_flops - after_flops``."""
        return self.full_flops - self.after_flops

    @property
    def hit_share(self) -> float:
        """The hit's share of the prompt's tokens, ``cached / prompt``."""
        return self.cached / self.prompt


def hit_saving(hardware: Hardware, workload: Workload, prompt: int, cached: int) -> HitSaving:
    """The prefill of ``prompt`` tokens with and without its first ``cached`` found in the cache
    (module docstring). ``cached == prompt`` is refused: an engine always recomputes at least the
    last prompt token, whose output gives the first generated token (vLLM caps a hit there)."""
    _whole("prompt", prompt, 1)
    check_prefix(cached, prompt)
    if cached == prompt:
        raise SpecError(
            f"a hit of the whole prompt ({prompt:,} tokens) leaves no token to compute the first output from",
            field="prefix_tokens",
            hint="give a prefix at least one token shorter than the prompt",
        )
    costs = iteration_costs(hardware, workload)
    full = costs.prefill(prompt, 0)
    after = costs.prefill(prompt - cached, cached)
    return HitSaving(prompt, cached, full.seconds, after.seconds, full.flops, after.flops)


def ttft_after_hit_s(hardware: Hardware, workload: Workload, prompt: int, cached: int) -> float:
    """Prefill seconds left after a hit of ``cached`` tokens (``hit_saving(...).after_s``)."""
    return hit_saving(hardware, workload, prompt, cached).after_s


@dataclass(frozen=True)
class CacheMemory:
    """What ``groups`` cached prefixes take from the KV pool, and what they leave the running batch."""

    prefix_tokens: int
    groups: int
    prefix_bytes: float
    pool_bytes: float
    users_without_cache: int | None
    users_with_cache: int | None

    @property
    def left_bytes(self) -> float:
        """The pool the running batch keeps: ``pool - prefix bytes`` (0 when the prefixes overflow it)."""
        return max(0.0, self.pool_bytes - self.prefix_bytes)

    @property
    def pool_share(self) -> float:
        """The prefixes' share of the pool: ``prefix bytes / pool``."""
        return self.prefix_bytes / self.pool_bytes


def cache_memory(hardware: Hardware, workload: Workload, prefix_tokens: int, groups: int) -> CacheMemory:
    """Memory of ``groups`` cached prefixes of ``prefix_tokens`` tokens, and the users of
    ``workload.context`` tokens that fit without them and beside them (module docstring)."""
    _whole("prefix_tokens", prefix_tokens, 1)
    _whole("groups", groups, 1)
    base = memory_use(hardware, replace(workload, batch=1, shared_prefix=0))
    per_token = iteration_costs(hardware, workload).kv_bytes_per_token  # copies included
    blocks = -(-prefix_tokens // BLOCK_TOKENS)
    prefix_bytes = groups * blocks * BLOCK_TOKENS * per_token
    per_user = per_token * workload.context
    if per_user <= 0:
        without = with_cache = None
    else:
        without = math.floor(base.pool_bytes / per_user)
        with_cache = math.floor(max(0.0, base.pool_bytes - prefix_bytes) / per_user)
    return CacheMemory(prefix_tokens, groups, prefix_bytes, base.pool_bytes, without, with_cache)


def prefixes_that_fit(hardware: Hardware, workload: Workload, prefix_tokens: int, cache_share: float) -> int:
    """Whole prefixes of ``prefix_tokens`` tokens a cache given ``cache_share`` of the KV pool's
    16-token blocks holds: ``floor(floor(cache_share * pool blocks) / ceil(prefix_tokens / 16))``."""
    _whole("prefix_tokens", prefix_tokens, 1)
    check_share(cache_share)
    pool = memory_use(hardware, replace(workload, batch=1, shared_prefix=0)).pool_bytes
    per_block = BLOCK_TOKENS * iteration_costs(hardware, workload).kv_bytes_per_token
    cache_blocks = math.floor(cache_share * math.floor(pool / per_block))
    return cache_blocks // -(-prefix_tokens // BLOCK_TOKENS)


def lru_hit_rate(groups: int, cached_prefixes: int) -> float:
    """Steady-state LRU hit rate for ``groups`` equally likely prefix groups and room for
    ``cached_prefixes`` of them: ``min(C, G) / G`` (module docstring)."""
    _whole("groups", groups, 1)
    _whole("cached_prefixes", cached_prefixes, 0)
    return min(cached_prefixes, groups) / groups


def lru_hit_rate_over_run(groups: int, cached_prefixes: int, requests: int) -> float:
    """Hit rate over ``requests`` requests from an empty cache: ``1 - G (1 - (1 - 1/G)^n) / n`` when
    the cache holds every group, else the steady-state ``min(C, G) / G`` (module docstring)."""
    _whole("requests", requests, 1)
    if cached_prefixes < groups:
        return lru_hit_rate(groups, cached_prefixes)
    _whole("groups", groups, 1)
    first_seen = groups * (1.0 - (1.0 - 1.0 / groups) ** requests)
    return 1.0 - first_seen / requests


class LruPrefixCache:
    """The serving simulator's prefix cache: room for ``slots`` prefixes, one per prefix group,
    evicted least recently used first, never while a running request uses it (its reference count
    is above 0). As in vLLM's free queue, an entry joins the eviction order when its last user lets
    go of it, so "least recently used" is "released longest ago".

    ``lookup(group)``: whether the group's prefix is cached. ``acquire(group)``: a request starts
    using it (a hit). ``insert(group)``: a request that missed has computed the prefix; it is cached
    if a slot is free or an unused entry can be evicted (the one released longest ago), and then the
    request holds it (True); else False and the request keeps its own copy. ``release(group)``: a
    request that held it has finished or been preempted.
    """

    def __init__(self, slots: int) -> None:
        self.slots = _whole("prefix_slots", slots, 1)
        self._users: dict[int, int] = {}  # cached group -> running requests using it
        self._idle: dict[int, None] = {}  # cached groups nobody uses, released longest ago first
        self.evictions = 0

    def lookup(self, group: int) -> bool:
        """Whether ``group``'s prefix is in the cache."""
        return group in self._users

    def acquire(self, group: int) -> None:
        """A request starts using the cached prefix of ``group`` (it must be cached)."""
        count = self._users[group]
        if count == 0:
            del self._idle[group]
        self._users[group] = count + 1

    def insert(self, group: int) -> bool:
        """Cache ``group``'s prefix, held by the request that computed it; False if no room."""
        users = self._users
        if len(users) >= self.slots:
            if not self._idle:
                return False
            victim = next(iter(self._idle))
            del self._idle[victim], users[victim]
            self.evictions += 1
        users[group] = 1
        return True

    def release(self, group: int) -> None:
        """A request that held ``group``'s prefix no longer does."""
        count = self._users[group] - 1
        self._users[group] = count
        if count == 0:
            self._idle[group] = None
