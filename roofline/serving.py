"""A deterministic discrete-event simulator of one model replica serving a stream of requests.

Traffic
    Open loop (``rate``): requests arrive as a Poisson process at ``rate`` per second,
    with exponential gaps ``-ln(1 - u) / rate`` and ``u`` from ``random.Random(seed)``
    (never the global generator). ``rate = inf`` puts every request at time 0, as a
    benchmark's "request rate inf" does. Closed loop (``concurrency = N``): N clients
    each send their next request the moment their last one finishes or is turned away,
    so N requests are always in the system; ``rate`` is then unused. Each request has a
    prompt and an output length, fixed or uniform on LO:HI. The draws come in one fixed
    order (gap, prompt, output per request), so a seed gives the same lengths under
    every traffic shape, scheduler and admission rule.

Iterations
    The GPU runs iterations back to back. Each takes the roofline time of what it holds,
    ``performance.IterationCosts.iteration(...).seconds``: the weights read for its
    tokens, plus the KV cache of every live request at its current length, against the
    FLOPs of every token, plus the all-reduces of its tokens on several GPUs. The costs
    are ``hardware.costs``: the ceiling by default; ``simulate_expected`` runs the same
    requests at the fitted expected costs (shares of bandwidth and peak, overheads per
    layer and per sampled token). What one iteration holds is the policy:

    - ``static``: a batch of up to ``max_batch`` starts when the GPU is free and the
      queue holds ``max_batch`` requests, or its oldest has waited ``batch_wait_s``
      (0: start at once). Prompts are padded to the longest: one prefill of
      ``batch * longest prompt`` tokens. Then every slot decodes until the longest
      output ends; a slot whose request has finished computes padding. No one joins.
    - ``continuous``: iteration-level scheduling, as Orca and vLLM do. Between
      iterations finished requests leave and queued ones join, and an iteration holds
      one decode token of every running request plus the newcomers' whole prompts.
    - ``chunked``: chunked prefill (Sarathi-Serve; vLLM's chunked prefill). An iteration
      holds at most ``token_budget`` tokens: each decoding request adds its one token
      first, and what is left goes to prefill chunks, oldest request first.

    The knobs have the engines' names: ``max_batch`` is vLLM's ``max_num_seqs`` (most
    requests running at once), ``token_budget`` its ``max_num_batched_tokens``.

KV memory
    The cache is ``floor(KV pool / (16 * KV bytes per token))`` blocks of 16 tokens
    (``kv_blocks_available``; the pool is ``performance.memory_use``'s, KV copies included).
    A request holding ``t`` tokens of cache uses ``ceil(t / 16)`` blocks. After its prefill
    a request holds its P prompt tokens; decode step j writes one more, so it holds ``P + j``
    during step j and ``P + O - 1`` at the end (the last token is returned, never cached).
    ``admission`` says how blocks are given out:

    - ``paged`` (default; vLLM): blocks are allocated as tokens are written, and the
      scheduler does not know output lengths. A queued request starts when the blocks of
      its whole prompt are free (under ``chunked`` too, as vLLM's V0 scheduler allocated
      them). Before each iteration, every decoding request whose next token starts a new
      block gets one; when too few are free, the newest running request (the last
      admitted) is preempted, and the next newest, until the rest fit, and no one is
      admitted in that iteration. A preempted request goes back to the front of the
      queue. Under ``preemption = "recompute"`` (vLLM's default) its blocks are freed, and
      when it resumes its prompt plus the tokens it had generated are prefilled again as
      one prompt, which yields its next token. Under ``"swap"`` its blocks are copied to
      host memory and back over the GPU's host link, ``16 * blocks * KV bytes per token /
      (GPUs * host link)`` each way, and that time is added to the iteration in which the
      copy happens.
    - ``reserve`` (the vLLM paper's "Orca (Oracle)" baseline): a request starts only when
      ``ceil((P + O) / 16)`` blocks are free, its whole prompt plus its true output
      length, reserved up front and freed when it ends. No one is ever preempted.
    - ``static`` batches always reserve, for the padded size.

    A request that could never fit, even alone on an empty GPU, is counted as rejected
    when it arrives, never dropped and never left waiting: ``ceil((P + O - 1) / 16)``
    blocks (paged) or ``ceil((P + O) / 16)`` (reserve, static) above the whole cache.
    This is the one use the paged scheduler makes of the output length, as an engine
    refuses a prompt whose ``max_tokens`` exceed the context it can hold. Every other
    request completes: the oldest running one is never preempted, so it always ends.

Prefix cache (``prefix_tokens`` or ``prefix_share``; off by default)
    Every prompt starts with one of ``prefix_groups`` shared prefixes of N tokens (``prefix_tokens``,
    or ``floor(prefix_share * shortest prompt)``), each request's group drawn uniformly from a
    generator of its own (``prefix_groups_drawn``), so the arrivals and lengths are those of the same
    run without a cache. The cache keeps ``floor(prefix_cache_share * blocks)`` of the KV blocks; the
    running batch gets the rest. It holds whole prefixes of ``floor(N / 16)`` blocks (only whole
    blocks are cached, as in vLLM), as many as fit, with LRU eviction (``prefixcache.LruPrefixCache``:
    an entry in use by a running request is never evicted). A request whose prefill starts from its
    first token (a new request, or a recompute after a preemption) looks its group up:

    - a hit skips the prefix's ``16 * floor(N / 16)`` tokens (one block fewer when the prefix is the
      whole prompt: the last prompt token is always computed), which the prefill then reads as cached
      context (``IterationCosts.prefill(tokens, cached)``: the new tokens attend over them), and it
      needs blocks for the rest of its tokens only;
    - a miss prefills its whole prompt; when the prefill ends, its prefix's blocks pass to the cache
      if a slot is free or an unused entry can be evicted, else the request keeps them.

    Swapping and reserving are not combined with it (refused). JSON: ``prefix_lookups``,
    ``prefix_hits``, ``prefix_hit_rate`` (hits / lookups: a share of prefills), ``prefill_tokens_saved``
    (prompt tokens the hits skipped, recomputes included), ``prefix_tokens_queried`` and
    ``prefix_tokens_hit`` (each request's own lookup: its prompt tokens and those cached; a recompute
    after a preemption is left out), ``prefix_token_hit_rate`` (hit / queried: a share of prompt
    tokens, what vLLM logs as its "Prefix cache hit rate", ``CachingMetrics.hit_rate`` over
    ``PrefixCacheStats``' token counts, a preempted request's kept apart; over the whole run, where
    vLLM's log covers its last 1,000 requests),
    ``prefix_cache_blocks``, ``prefix_evictions``; with ``--warmup``, over the whole run.
    With G equally likely groups and room for C prefixes the hit rate tends to ``min(C, G) / G``
    (``prefixcache.lru_hit_rate``).

Metrics, over the requests that complete, times from each request's arrival
    TTFT = first token - arrival. ITL (inter-token latency) is every gap between two
    consecutive tokens of a request, over every request: one iteration for a request that
    was decoding, longer across a preemption. TPOT = (finish - first token) / (output - 1),
    a request's mean gap (none for one-token outputs). Latency = finish - arrival = TTFT +
    (output - 1) * TPOT; normalized latency = latency / output tokens (the vLLM paper's
    per-token latency, queueing included). Means are plain means. Percentiles use the
    nearest rank: the p-th of n sorted values is the ``ceil(p/100 * n)``-th, an actual
    sample, no interpolation; ``itl_p99_s`` ranks every gap, ``tpot_p99_s`` every request.

    The run lasts from time 0 to the last finish, ``duration``. Throughput = output tokens
    (or requests) / duration. Goodput, as DistServe defines it, = the completed requests
    that met both the TTFT and the TPOT target / duration; SLO attainment = their share of
    those completed. Mean in flight = sum of latencies / duration, the time-weighted mean
    count of requests arrived and not finished (Little's law: rate * mean latency). Mean
    batch = the time-weighted mean count of requests running: admitted, and neither
    finished nor preempted. Busy fraction = time in iterations, swap copies included /
    duration. ``preemptions`` counts preemptions, ``recomputed_tokens`` the tokens
    prefilled again on resuming, ``swapped_bytes`` the bytes copied over the host link,
    both ways.

Not modelled
    Prefix caching unless asked for, and then only whole shared prefixes (no partial matches, no
    blocks shared between requests of one group but through the cache);
    speculative decoding; a cap on host swap space, and copies overlapping compute; a
    watermark of blocks kept free (vLLM V0's); allocation per chunk (vLLM V1's); the CPU's
    scheduling time between iterations; tokenizer, network and sampling time (but for the
    expected costs' fitted overheads per sampled token and per request: a request reaches
    the scheduler ``request_overhead_s`` after it is sent, and its times count from the send);
    sliding-window layers (refused); a token budget for ``continuous``; requests that stop
    early (each runs to its drawn length).

Runs of iterations that differ only in their context (decode steps; prefill chunks of
one long prompt) have memory and compute times linear in the step number, so their
times are summed in closed form (an arithmetic series on each side of the roofline, split
where the two cross), and the run ends at the next event: a request finishing, one that
could join, a prompt completing, a block that is not free. The work is therefore a few
scheduling steps per request and per preemption, whatever the lengths and the budget.
Preemptions stay few per request, because the oldest running request is never preempted
and a preempted one resumes only when its blocks are free; yet a cache that holds only one
or two requests at their full length, with short prompts, can preempt some 50 times a
request (a random search's worst), and take 70 scheduling steps a request instead of the
usual 2 to 5. A run is therefore bounded at ``MAX_STEPS_PER_REQUEST`` steps a request (or the
config's ``max_steps_per_request``, which a caller that must answer fast sets lower) and,
past that, refused in one line (``SpecError``, field ``admission``) naming the thrashing.

The same inputs and seed give the same floats in the same order, so
``json.dumps(result.to_dict())`` is byte-identical from run to run.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
import operator
import random
from array import array
from collections import deque
from collections.abc import Iterable, Iterator, MutableSequence, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from .calibration import Calibration, expected_costs
from .deployment import PipelineCosts, Split, check_split, memory_per_gpu, pipeline_costs
from .errors import SpecError, shown, unknown_name
from .parsing import parse_whole
from .performance import Hardware, IterationCosts, Pass, Workload, iteration_costs, memory_use
from .prefixcache import LruPrefixCache, check_prefix, check_share
from .traces import LengthTrace

Policy = Literal["static", "continuous", "chunked"]
POLICIES: tuple[Policy, ...] = ("static", "continuous", "chunked")
Admission = Literal["paged", "reserve"]
ADMISSIONS: tuple[Admission, ...] = ("paged", "reserve")
Preemption = Literal["recompute", "swap"]
PREEMPTIONS: tuple[Preemption, ...] = ("recompute", "swap")
#: The kinds of span a request's trace holds, with their names, in the one order every picture of a trace
#: colours them (chapter 3's figure and its simulator's timeline take the n-th colour for the n-th kind),
#: so a colour means one kind on every page: red is padding, never a preemption.
SPAN_LEGEND: tuple[tuple[str, str], ...] = (
    ("wait", "Queued"),
    ("prefill", "Prefill"),
    ("decode", "Decode"),
    ("padding", "Padding (static)"),
    ("recompute", "Prefill again (preempted)"),
)

#: KV-cache page size in tokens (vLLM's default block size).
BLOCK_TOKENS = 16
#: Most requests one run may simulate (about a second per 10,000 in CPython).
MAX_REQUESTS = 1_000_000
#: Longest prompt or output accepted, in tokens (beyond any real context window).
MAX_LENGTH_TOKENS = 10_000_000
#: Most scheduling steps (passes of the simulator's loop) a run may take per request, plus a
#: few for short runs: a run takes 2 to 5 (measured), so the cost stays about a second per
#: 10,000 requests. Only a cache that thrashes, preempting many times a request, goes past it.
MAX_STEPS_PER_REQUEST = 12
SPARE_STEPS = 1000
#: Percentiles reported for TTFT, TPOT, ITL and latency.
PERCENTILES = (50, 90, 99)

#: The share of the KV blocks a prefix cache keeps when none is given (the rest hold the running batch).
DEFAULT_PREFIX_CACHE_SHARE = 0.1

#: Illustrative latency targets for goodput: a first token within a second, then at
#: least 20 tokens/s, faster than people read.
DEFAULT_TTFT_SLO_S = 1.0
DEFAULT_TPOT_SLO_S = 0.05


@dataclass(frozen=True)
class Lengths:
    """Token counts drawn uniformly from ``low`` to ``high`` inclusive (fixed when equal)."""

    low: int
    high: int

    def __post_init__(self) -> None:
        for value in (self.low, self.high):
            if isinstance(value, bool) or not isinstance(value, int):
                raise SpecError(f"must be whole numbers, got {shown(value)}")
        if not 1 <= self.low <= self.high <= MAX_LENGTH_TOKENS:
            raise SpecError(
                f"must satisfy 1 <= LO <= HI <= {MAX_LENGTH_TOKENS:,}, got {shown(self.low)}:{shown(self.high)}",
                hint="write N or LO:HI, e.g. 128:2048",
            )

    @property
    def mean(self) -> float:
        """The mean draw, ``(low + high) / 2``."""
        return (self.low + self.high) / 2

    def draw(self, rng: random.Random) -> int:
        """One length: ``low + floor(u * (high - low + 1))`` for ``u`` uniform on [0, 1)."""
        return self.low + int(rng.random() * (self.high - self.low + 1))

    def __str__(self) -> str:
        return str(self.low) if self.low == self.high else f"{self.low}:{self.high}"


def parse_lengths(text: str, field: str) -> Lengths:
    """``"N"`` (fixed) or ``"LO:HI"`` (uniform) as Lengths, each number as ``parsing.parse_whole``
    reads it (ASCII digits); a bad value raises SpecError naming ``field``, echoing it cut short."""
    parts = str(text).split(":")
    if len(parts) > 2:
        raise SpecError(f"must be N or LO:HI in tokens, got {shown(text)}", field=field, hint="e.g. 512 or 128:2048")
    try:
        # Range checked by Lengths, which names LO and HI; the digits' own limit keeps int() cheap.
        values = [parse_whole(part, (-MAX_LENGTH_TOKENS, MAX_LENGTH_TOKENS)) for part in parts]
        return Lengths(values[0], values[-1])
    except SpecError as error:
        raise SpecError(error.message, field=field, hint=error.hint or "write N or LO:HI, e.g. 128:2048") from None


#: Documented ranges, inclusive, that keep every time the simulator computes a finite float.
#: Arrivals per second: one a week to a billion a second; ``inf`` (every request at time 0) too.
RATE_RANGE = (1e-6, 1e9)
#: Latency targets, seconds: a microsecond to about eleven days.
SLO_RANGE_S = (1e-6, 1e6)
#: Requests in flight at once, and tokens in one chunked iteration.
MAX_BATCH_RANGE = (1, 1_000_000)
TOKEN_BUDGET_RANGE = (1, 100_000_000)
#: Clients of a closed loop.
CONCURRENCY_RANGE = (1, 1_000_000)
#: Seeds of random.Random: any 64-bit value.
SEED_RANGE = (0, 2**64 - 1)


def _check_number(
    field: str, value: object, *, minimum: float, whole: bool, inclusive: bool = True, maximum: float | None = None
) -> None:
    kind = int if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kind) or (not whole and not math.isfinite(value)):
        raise SpecError(f"must be a {'whole ' if whole else ''}number, got {shown(value)}", field=field)
    if value < minimum or (not inclusive and value == minimum):
        raise SpecError(f"must be {'at least' if inclusive else 'above'} {minimum:g}, got {shown(value)}", field=field)
    if maximum is not None and value > maximum:
        raise SpecError(f"must be at most {maximum:g}, got {shown(value)}", field=field)


def _check_choice(field: str, kind: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise unknown_name(kind, str(value), choices).located(field=field)


@dataclass(frozen=True)
class ServingConfig:
    """The traffic and the scheduler: everything but the hardware and the model.

    ``concurrency`` (a closed loop of that many clients) replaces ``rate``, which is
    then unused. ``record_blocks`` keeps the KV blocks in use, and the tokens cached in
    them, at every scheduling decision, for a chart (``SimulationResult.blocks_in_use``
    and ``cached_tokens``).
    """

    policy: Policy = "continuous"
    rate: float = 10.0
    requests: int = 1000
    prompt: Lengths = Lengths(512, 512)
    output: Lengths = Lengths(256, 256)
    max_batch: int = 64
    token_budget: int = 512
    ttft_slo_s: float = DEFAULT_TTFT_SLO_S
    tpot_slo_s: float = DEFAULT_TPOT_SLO_S
    seed: int = 0
    batch_wait_s: float = 0.0
    trace_requests: int = 20
    admission: Admission = "paged"
    preemption: Preemption = "recompute"
    concurrency: int | None = None
    record_blocks: bool = False
    #: Scheduling steps a run may take per request before it is refused as thrashing; None:
    #: ``MAX_STEPS_PER_REQUEST``. A caller that must answer fast (the page's calculator) sets less.
    max_steps_per_request: int | None = None
    #: Prefix caching (see "Prefix cache" in the module docstring): every prompt starts with one of
    #: ``prefix_groups`` shared prefixes of ``prefix_tokens`` tokens, or of ``prefix_share`` of the
    #: shortest prompt (not both); the cache holds ``prefix_cache_share`` of the KV blocks. 0: off.
    prefix_tokens: int = 0
    prefix_share: float | None = None
    prefix_groups: int = 1
    prefix_cache_share: float = DEFAULT_PREFIX_CACHE_SHARE
    #: Request lengths from a trace (``traces.LengthTrace``), drawn as pairs instead of ``prompt``
    #: and ``output``, which then give the trace's ranges (for the bounds and the reports).
    trace: LengthTrace | None = None

    def __post_init__(self) -> None:
        _check_choice("policy", "policy", self.policy, POLICIES)
        _check_choice("admission", "admission", self.admission, ADMISSIONS)
        _check_choice("preemption", "preemption", self.preemption, PREEMPTIONS)
        if not (isinstance(self.rate, float) and self.rate == math.inf):
            _check_number("rate", self.rate, minimum=RATE_RANGE[0], maximum=RATE_RANGE[1], whole=False)
        _check_number("requests", self.requests, minimum=1, whole=True)
        if self.requests > MAX_REQUESTS:
            raise SpecError(f"must be at most {MAX_REQUESTS:,}, got {self.requests:,}", field="requests")
        for name in ("prompt", "output"):
            if not isinstance(getattr(self, name), Lengths):
                raise SpecError("must be Lengths (see parse_lengths)", field=name)
        _check_number("max_batch", self.max_batch, minimum=1, maximum=MAX_BATCH_RANGE[1], whole=True)
        _check_number("token_budget", self.token_budget, minimum=1, maximum=TOKEN_BUDGET_RANGE[1], whole=True)
        if self.policy == "chunked" and self.token_budget <= self.max_batch:
            raise SpecError(
                f"must exceed the max batch ({self.max_batch}) so a prefill chunk always fits, got {self.token_budget}",
                field="token_budget",
            )
        for name in ("ttft_slo_s", "tpot_slo_s"):
            _check_number(name, getattr(self, name), minimum=SLO_RANGE_S[0], maximum=SLO_RANGE_S[1], whole=False)
        _check_number("seed", self.seed, minimum=0, maximum=SEED_RANGE[1], whole=True)
        _check_number("batch_wait_s", self.batch_wait_s, minimum=0, whole=False)
        _check_number("trace_requests", self.trace_requests, minimum=0, whole=True)
        if self.concurrency is not None:
            _check_number("concurrency", self.concurrency, minimum=1, maximum=CONCURRENCY_RANGE[1], whole=True)
        if not isinstance(self.record_blocks, bool):
            raise SpecError(f"must be true or false, got {shown(self.record_blocks)}", field="record_blocks")
        if self.max_steps_per_request is not None:
            _check_number("max_steps_per_request", self.max_steps_per_request, minimum=1, whole=True)
        self._check_prefix()
        if self.trace is not None and not isinstance(self.trace, LengthTrace):
            raise SpecError("must be a traces.LengthTrace (see traces.load_trace)", field="trace")

    def draw_lengths(self, rng: random.Random) -> tuple[int, int]:
        """One request's prompt and output: a trace's pair (one draw), else each range's (two)."""
        if self.trace is not None:
            return self.trace.draw(rng)
        return self.prompt.draw(rng), self.output.draw(rng)

    @property
    def shared_prefix_tokens(self) -> int:
        """The shared prefix's length: ``prefix_tokens``, or ``floor(prefix_share * shortest prompt)``."""
        if self.prefix_share is not None:
            return math.floor(self.prefix_share * self.prompt.low)
        return self.prefix_tokens

    @property
    def prefix_caching(self) -> bool:
        """Whether the run has a prefix cache: a shared prefix of one 16-token block or more."""
        return self.shared_prefix_tokens > 0

    def _check_prefix(self) -> None:
        """The prefix options, each refused in one line naming the fix."""
        _check_number("prefix_tokens", self.prefix_tokens, minimum=0, whole=True)
        _check_number("prefix_groups", self.prefix_groups, minimum=1, maximum=MAX_REQUESTS, whole=True)
        if self.prefix_share is not None:
            check_share(self.prefix_share)
            if self.prefix_tokens:
                raise SpecError(
                    "give the shared prefix as --prefix-tokens or as --prefix-share, not both",
                    field="prefix_share",
                    hint="leave out one of the two",
                )
        share = self.prefix_cache_share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share < 1:
            raise SpecError(
                f"must be above 0 and below 1, got {shown(share)}",
                field="prefix_cache_share",
                hint="give the share of the KV blocks the prefix cache keeps, e.g. 0.1",
            )
        prefix = self.shared_prefix_tokens
        asked = prefix > 0 or (self.prefix_share or 0) > 0  # a share of 0 is no prefix; a small one is refused
        if not asked:
            return
        check_prefix(prefix, self.prompt.low, "the shortest prompt")
        if prefix < BLOCK_TOKENS:
            raise SpecError(
                f"a shared prefix of {prefix} tokens fills no whole {BLOCK_TOKENS}-token block, and only whole"
                " blocks are cached",
                field="prefix_tokens" if self.prefix_share is None else "prefix_share",
                hint=f"give a prefix of at least {BLOCK_TOKENS} tokens",
            )
        if self.policy == "static" or self.admission != "paged" or self.preemption != "recompute":
            raise SpecError(
                "prefix caching is simulated with paged admission and recompute preemption under"
                f" continuous or chunked batching, got --policy {self.policy}, --admission {self.admission},"
                f" --preemption {self.preemption}",
                field="prefix_tokens" if self.prefix_share is None else "prefix_share",
                hint="use --policy continuous or chunked with the default admission and preemption",
            )


@dataclass(frozen=True)
class RequestTrace:
    """One request's life, for a timeline: when it arrived, was first admitted, got its
    first token and finished (None if rejected), how often it was preempted, and the spans
    of iterations it took part in.

    Each span is ``(kind, start_s, end_s, iterations)`` with kind ``prefill``, ``decode``,
    ``recompute`` (its prompt and generated tokens prefilled again after a preemption) or
    ``padding`` (a static slot computing after its request ended); back-to-back iterations
    of one kind merge into one span, so a gap is a stall.
    """

    id: int
    prompt: int
    output: int
    arrival_s: float
    admitted_s: float | None
    first_token_s: float | None
    finish_s: float | None
    spans: tuple[tuple[str, float, float, int], ...]
    preemptions: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The trace as plain JSON values."""
        return {
            "id": self.id,
            "prompt": self.prompt,
            "output": self.output,
            "arrival_s": self.arrival_s,
            "admitted_s": self.admitted_s,
            "first_token_s": self.first_token_s,
            "finish_s": self.finish_s,
            "preemptions": self.preemptions,
            "spans": [list(span) for span in self.spans],
        }


@dataclass(frozen=True)
class SimulationResult:
    """The metrics of one run (see the module docstring for each definition) and the
    traces of its first ``config.trace_requests`` requests."""

    config: ServingConfig
    requests: int
    completed: int
    rejected: int
    duration_s: float
    busy_s: float
    iterations: int
    output_tokens: int
    ttft_s: dict[int, float | None]
    tpot_s: dict[int, float | None]
    latency_s: dict[int, float | None]
    latency_mean_s: float | None
    queue_wait_mean_s: float | None
    good: int
    latency_sum_s: float
    kv_blocks: int
    trace: tuple[RequestTrace, ...]
    ttft_mean_s: float | None = None
    tpot_mean_s: float | None = None
    itl_s: dict[int, float | None] | None = None
    itl_mean_s: float | None = None
    preemptions: int = 0
    recomputed_tokens: int = 0
    swapped_bytes: float = 0.0
    #: ``(time_s, blocks)`` at every scheduling decision, when ``config.record_blocks``: blocks
    #: allocated (paged) or reserved (reserve), iterative policies only.
    blocks_in_use: tuple[tuple[float, int], ...] = ()
    #: ``(time_s, tokens)`` at the same moments: tokens actually cached in those blocks (every
    #: running request's prompt so far and generated tokens). Under ``reserve`` the gap between
    #: ``16 * blocks`` and this is the reservation not yet written.
    cached_tokens: tuple[tuple[float, int], ...] = ()
    batch_seconds: float = 0.0
    normalized_latency_mean_s: float | None = None
    #: How many inter-token gaps the ITL figures rank: ``sum(output - 1)`` over completed requests.
    itl_count: int = 0
    #: Prefix caching (None without it): prefills started from a prompt's first token (new requests
    #: and recomputes), those whose prefix the cache held, the prompt tokens those hits skipped, the
    #: cache's blocks and the prefixes it evicted.
    prefix_lookups: int | None = None
    prefix_hits: int | None = None
    prefill_tokens_saved: int | None = None
    prefix_tokens_queried: int | None = None
    prefix_tokens_hit: int | None = None
    prefix_cache_blocks: int | None = None
    prefix_evictions: int | None = None

    @property
    def prefix_hit_rate(self) -> float | None:
        """Prefix hits / lookups (None without a prefix cache, or before any lookup)."""
        if not self.prefix_lookups:
            return None
        return self.prefix_hits / self.prefix_lookups

    @property
    def prefix_token_hit_rate(self) -> float | None:
        """Cached prompt tokens / prompt tokens, over each request's own lookup (recomputes after a
        preemption left out; None without a prefix cache, or before any lookup): the share vLLM logs,
        where ``prefix_hit_rate`` counts prefills."""
        if not self.prefix_tokens_queried:
            return None
        return self.prefix_tokens_hit / self.prefix_tokens_queried

    def _per_second(self, count: float) -> float:
        return count / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def throughput_tokens_per_s(self) -> float:
        """Output tokens of completed requests / duration."""
        return self._per_second(self.output_tokens)

    @property
    def throughput_requests_per_s(self) -> float:
        """Completed requests / duration."""
        return self._per_second(self.completed)

    @property
    def goodput_requests_per_s(self) -> float:
        """DistServe's goodput: completed requests within both the TTFT and the TPOT target / duration."""
        return self._per_second(self.good)

    @property
    def slo_attainment(self) -> float | None:
        """Share of the completed requests within both targets (None when none completed)."""
        return self.good / self.completed if self.completed else None

    @property
    def mean_in_flight(self) -> float:
        """Time-weighted mean of requests arrived and not finished: sum of latencies / duration."""
        return self._per_second(self.latency_sum_s)

    @property
    def mean_batch(self) -> float:
        """Time-weighted mean of requests running (admitted, in the batch), over the whole run."""
        return self._per_second(self.batch_seconds)

    @property
    def busy_fraction(self) -> float:
        """Share of the run the GPU spends in iterations: busy time / duration."""
        return self.busy_s / self.duration_s if self.duration_s > 0 else 0.0

    def to_dict(self, *, trace: bool = False) -> dict[str, Any]:
        """Plain JSON values: the CLI's ``--json`` keys, then run facts; traces if asked."""
        config = self.config
        result: dict[str, Any] = {
            "completed": self.completed,
            "throughput_tokens_per_s": self.throughput_tokens_per_s,
            "throughput_requests_per_s": self.throughput_requests_per_s,
        }
        for name, values in (("ttft", self.ttft_s), ("tpot", self.tpot_s)):
            for percentile in PERCENTILES:
                result[f"{name}_p{percentile}_s"] = values[percentile]
        result["ttft_mean_s"] = self.ttft_mean_s
        result["tpot_mean_s"] = self.tpot_mean_s
        result["itl_mean_s"] = self.itl_mean_s
        for percentile in PERCENTILES:
            result[f"itl_p{percentile}_s"] = (self.itl_s or {}).get(percentile)
        result.update(
            {
                "latency_mean_s": self.latency_mean_s,
                "normalized_latency_mean_s": self.normalized_latency_mean_s,
                "mean_in_flight": self.mean_in_flight,
                "mean_batch": self.mean_batch,
                "goodput_requests_per_s": self.goodput_requests_per_s,
                "slo_attainment": self.slo_attainment,
                "busy_fraction": self.busy_fraction,
                "policy": config.policy,
                "admission": "reserve" if config.policy == "static" else config.admission,
                "preemption": config.preemption,
                "rate": None if config.concurrency is not None or config.rate == math.inf else float(config.rate),
                "concurrency": config.concurrency,
                "requests": self.requests,
                "rejected": self.rejected,
                "preemptions": self.preemptions,
                "recomputed_tokens": self.recomputed_tokens,
                "swapped_bytes": self.swapped_bytes,
                "duration_s": self.duration_s,
                "iterations": self.iterations,
                "queue_wait_mean_s": self.queue_wait_mean_s,
                "kv_blocks": self.kv_blocks,
            }
        )
        for percentile in PERCENTILES:
            result[f"latency_p{percentile}_s"] = self.latency_s[percentile]
        if self.prefix_lookups is not None:
            result.update(
                prefix_tokens=config.shared_prefix_tokens,
                prefix_groups=config.prefix_groups,
                prefix_cache_share=config.prefix_cache_share,
                prefix_cache_blocks=self.prefix_cache_blocks,
                prefix_lookups=self.prefix_lookups,
                prefix_hits=self.prefix_hits,
                prefix_hit_rate=self.prefix_hit_rate,
                prefill_tokens_saved=self.prefill_tokens_saved,
                prefix_tokens_queried=self.prefix_tokens_queried,
                prefix_tokens_hit=self.prefix_tokens_hit,
                prefix_token_hit_rate=self.prefix_token_hit_rate,
                prefix_evictions=self.prefix_evictions,
            )
        if trace:
            result["trace"] = [request.to_dict() for request in self.trace]
        return result


def percentile(sorted_values: list[float], p: float) -> float | None:
    """Nearest rank: the ``ceil(p/100 * n)``-th smallest of n values (None when empty)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def kv_blocks_available(hardware: Hardware, workload: Workload, split: Split | None = None) -> int:
    """KV blocks that fit beside the weights: ``chapter 2's largest batch at a 16-token context``,
    i.e. ``floor(KV pool / (16 * KV bytes per token))``, the pool being ``usable fraction *
    (memory - workspace - weights)`` (``performance.memory_use``); on a ``split`` with pipeline
    stages, the pool of the stage that binds first (``deployment.memory_per_gpu``), since every
    stage holds its layers' share of every block. Raises SpecError when the weights alone do not fit."""
    one_block = Workload(workload.model, workload.weight_precision, workload.kv_precision, context=BLOCK_TOKENS)
    if split is not None and split.pp > 1:
        use = memory_per_gpu(hardware, one_block, split)
    else:
        use = memory_use(hardware, one_block)
    if not use.max_batch:
        raise SpecError(
            f"the weights ({use.weights_bytes / 1e9:,.1f} GB) leave no room for a KV cache"
            f" in {use.usable_bytes / 1e9:,.1f} GB usable",
            field="gpus",
            hint="add GPUs or use a smaller weight precision",
        )
    return use.max_batch


def draw_traffic(config: ServingConfig, count: int) -> tuple[array, list[int], list[int]]:
    """The first ``count`` requests of ``config``'s seeded stream: when each is sent (0 for every
    one in a closed loop or at rate inf), its prompt and its output, drawn in a fixed order (gap,
    prompt, output per request), so every simulator and every replica split sees the same traffic.
    A send is the running sum of exponential gaps, ``-log(1 - u) / rate``."""
    rng = random.Random(config.seed)
    sends, prompts, outputs = array("d", bytes(8 * count)), [0] * count, [0] * count
    clock, rate, draw = 0.0, config.rate, rng.random
    timed = config.concurrency is None and rate != math.inf
    # Lengths.draw written out for the ranges (a million requests draw two million lengths):
    # low + floor(u * (high - low + 1)), the same draws in the same order.
    ranges = config.trace is None
    prompt_low, prompt_span = config.prompt.low, config.prompt.high - config.prompt.low + 1
    output_low, output_span = config.output.low, config.output.high - config.output.low + 1
    for index in range(count):
        gap = -math.log(1.0 - draw())
        if timed:
            clock += gap / rate
            sends[index] = clock
        if ranges:
            prompts[index] = prompt_low + int(draw() * prompt_span)
            outputs[index] = output_low + int(draw() * output_span)
        else:
            prompts[index], outputs[index] = config.draw_lengths(rng)
    return sends, prompts, outputs


def prefix_groups_drawn(config: ServingConfig, count: int) -> list[int]:
    """Each request's prefix group, uniform on ``0 .. prefix_groups - 1``, from a generator of its
    own (``random.Random("prefix-groups/<seed>")``), so the arrivals and lengths stay the draws of a
    run without a prefix cache."""
    rng = random.Random(f"prefix-groups/{config.seed}")
    groups = config.prefix_groups
    return [rng.randrange(groups) for _ in range(count)]


def blocks_for(tokens: int) -> int:
    """16-token blocks holding ``tokens`` tokens: ``ceil(tokens / 16)``."""
    return -(-tokens // BLOCK_TOKENS)


# -- runs of like iterations, summed in closed form ---------------------------------------------

#: A run of steps: step i, for i in [start, stop), takes ``first + slope * i`` seconds.
Piece = tuple[float, float, int, int]


def _pieces(
    memory0: float, memory_slope: float, compute0: float, compute_slope: float, steps: int, floor: float = 0.0
) -> list[Piece]:
    """``steps`` steps whose memory and compute times grow linearly, ``memory0 + memory_slope * i``
    and the like, each taking the larger: one piece when one side leads throughout, else two,
    split at the step where the lead changes (the difference is linear, so it changes once).
    A ``floor`` (an overlapped all-to-all, ``iteration_floor``) holds the first steps up to it."""
    pieces = _two_lines(memory0, memory_slope, compute0, compute_slope, steps)
    return _floored(pieces, floor) if floor > pieces[0][0] else pieces


def _floored(pieces: list[Piece], floor: float) -> list[Piece]:
    """``pieces`` (times that never fall) with each step taking at least ``floor``: the steps
    below it, a prefix, become one flat piece at ``floor``."""
    out: list[Piece] = []
    for first, slope, start, stop in pieces:
        if first + slope * (stop - 1) <= floor:
            out.append((floor, 0.0, start, stop))
            continue
        cut = start
        if first + slope * start < floor:  # the first step at or above the floor, by bisection
            low, high = start, stop - 1
            while high - low > 1:
                middle = (low + high) // 2
                low, high = (middle, high) if first + slope * middle < floor else (low, middle)
            cut = high
            out.append((floor, 0.0, start, cut))
        out.append((first, slope, cut, stop))
    return out


def _two_lines(memory0: float, memory_slope: float, compute0: float, compute_slope: float, steps: int) -> list[Piece]:
    """``_pieces`` without a floor."""
    last = steps - 1
    leads_first = memory0 >= compute0
    if leads_first == (memory0 + memory_slope * last >= compute0 + compute_slope * last):
        return [(memory0, memory_slope, 0, steps) if leads_first else (compute0, compute_slope, 0, steps)]
    memory = (memory0, memory_slope)
    compute = (compute0, compute_slope)
    low, high = 0, last  # the lead is as at step 0 at low, changed at high
    while high - low > 1:
        middle = (low + high) // 2
        if (memory0 + memory_slope * middle >= compute0 + compute_slope * middle) == leads_first:
            low = middle
        else:
            high = middle
    before, after = (memory, compute) if leads_first else (compute, memory)
    return [(*before, 0, high), (*after, high, steps)]


def _piece_seconds(first: float, slope: float, start: int, stop: int) -> float:
    """Total time of steps start..stop-1 taking ``first + slope * i``: ``n*first + slope*(start+stop-1)*n/2``."""
    count = stop - start
    return count * first + slope * ((start + stop - 1) * count / 2)


def _pieces_seconds(pieces: list[Piece]) -> float:
    """Total time of a run's pieces, added in order. (Not ``sum()``: from Python 3.12 it
    compensates rounding, and the browser's 3.14 would then differ from CPython 3.11 in the
    last digit, where every figure must be byte-identical.)"""
    total = 0.0
    for piece in pieces:
        total += _piece_seconds(*piece)
    return total


def _run_seconds(first: float, slope: float, steps: int) -> float:
    """Total time of ``steps`` steps taking ``first + slope * i``: ``k*first + slope*k*(k-1)/2``."""
    return _piece_seconds(first, slope, 0, steps)


def _steps_to_reach(first: float, slope: float, gap: float, most: int) -> int:
    """Fewest steps, from 1 to ``most``, whose total time reaches ``gap`` (``most`` if none does):
    the positive root of ``slope/2 k^2 + (first - slope/2) k = gap``, then nudged to the exact
    integer against ``_run_seconds`` itself, so rounding in the root cannot shift it."""
    # _run_seconds(first, slope, k) is written out below, k * first + slope * ((k - 1) * k / 2),
    # the same operations in the same order (this runs once a decode run an arrival cuts short).
    if gap <= first:
        return 1
    if most * first + slope * ((most - 1) * most / 2) < gap:
        return most
    if slope > 0:
        linear = first - slope / 2
        steps = math.ceil((math.sqrt(linear * linear + 2 * slope * gap) - linear) / slope)
    else:
        steps = math.ceil(gap / first)
    steps = min(max(steps, 1), most)
    while steps > 1 and (steps - 1) * first + slope * ((steps - 2) * (steps - 1) / 2) >= gap:
        steps -= 1
    while steps * first + slope * ((steps - 1) * steps / 2) < gap:
        steps += 1
    return steps


def _pieces_to_reach(pieces: list[Piece], gap: float) -> int:
    """Fewest steps of the run whose total time reaches ``gap`` (all of them if none do)."""
    spent = 0.0
    for first, slope, start, stop in pieces:
        seconds = _piece_seconds(first, slope, start, stop)
        if spent + seconds >= gap:
            return start + _steps_to_reach(first + slope * start, slope, gap - spent, stop - start)
        spent += seconds
    return pieces[-1][3]


def _clipped(pieces: list[Piece], start: int, stop: int) -> list[Piece]:
    """The parts of ``pieces`` with step numbers in [start, stop)."""
    kept = []
    for first, slope, low, high in pieces:
        low, high = max(low, start), min(high, stop)
        if low < high:
            kept.append((first, slope, low, high))
    return kept


#: How far out a run's second time is taken: 2**20 steps, so the slope is exact to the float.
LINE_PROBE = _PROBE = 2**20


def _beyond_roofline(timed: Pass) -> float:
    """What an iteration's time adds to its roofline ``max(memory, compute, overlapped)``
    (all-reduces, overheads); taken as the same for every iteration of a run."""
    return timed.seconds - max(timed.memory_s, timed.compute_s, timed.overlapped_s)


def iteration_floor(at0: Pass) -> float:
    """The least time an iteration along a line takes, whatever its context: its overlapped
    communication (an expert-parallel all-to-all, constant along the line, since the tokens are)
    plus what the time adds beyond the roofline; 0 when nothing runs beside the math."""
    return at0.overlapped_s + _beyond_roofline(at0) if at0.overlapped_s else 0.0


def iteration_line(at0: Pass, far: Pass) -> tuple[float, float, float, float]:
    """One kind of iteration along a line (a growing context, a run's steps), from its pass at 0
    (``at0``) and at ``LINE_PROBE`` (``far``): ``(memory_at, memory_per, compute_at, compute_per)``,
    so that at x it takes ``max(memory_at + memory_per * x, compute_at + compute_per * x)``. What
    the time adds beyond the roofline (all-reduces, overheads) is in both, the same along the line."""
    extra = _beyond_roofline(at0)
    return (
        at0.memory_s + extra,
        max(far.memory_s - at0.memory_s, 0.0) / _PROBE,
        at0.compute_s + extra,
        max(far.compute_s - at0.compute_s, 0.0) / _PROBE,
    )


def _run_cap(steps: int) -> int:
    """The longest run summed in closed form: all of it. (A test caps it at 1, to check the
    sums against stepping one iteration at a time.)"""
    return steps


# -- inter-token gaps ----------------------------------------------------------------------------


def _count_at_most(first: float, slope: float, start: int, stop: int, value: float, strict: bool) -> int:
    """How many steps i in [start, stop) take ``first + slope * i`` at most ``value`` (below, if
    ``strict``). Those steps are a prefix, as the times never fall (``slope >= 0``)."""

    def inside(step: int) -> bool:
        seconds = first + slope * step
        return seconds < value if strict else seconds <= value

    if slope <= 0:
        return stop - start if inside(start) else 0
    guess = (value - first) / slope
    last = stop - 1 if guess >= stop else start - 1 if guess < start else math.floor(guess)
    while last >= start and not inside(last):
        last -= 1
    while last + 1 < stop and inside(last + 1):
        last += 1
    return last - start + 1


#: The typecode of an unsigned 4-byte integer (``I`` on every platform Python and Pyodide run on).
_COUNT_CODE = next(code for code in "IL" if array(code).itemsize == 4)


class _Gaps:
    """Every gap between consecutive tokens of every request, held as runs: ``mult`` requests
    each waited ``first + slope * i`` for every i in [start, stop). Every decoding request takes
    part in every iteration, so one run of iterations is one such run of gaps; a run of
    10,000 steps for 64 requests costs one entry, not 640,000.

    The runs live in typed arrays and every statistic reads them as a stream: none is turned
    into a list of tuples (at 4 runs a request, a million requests would hold 4 million tuples,
    about 1 GB). A run of one gap (one iteration's: most runs, and every run of the speculative
    simulator) is kept as its value and count, 12 bytes; a longer run takes 40."""

    def __init__(self) -> None:
        self.first = array("d")
        self.slope = array("d")
        self.start = array("q")
        self.stop = array("q")
        self.mult = array("q")
        #: Runs of one gap: ``mult`` requests each waited ``value`` once. A count is at most a batch
        #: (``MAX_BATCH_RANGE``) or a speculative run's zero gaps (under its 300 million tokens), so 4
        #: bytes hold it: a drawn speculative run keeps one such run an iteration, millions of them.
        self.value = array("d")
        self.times = array(_COUNT_CODE)
        #: Stretches of those, ``[start, stop)`` of ``value`` and ``times``, whose values are sorted and
        #: whose counts are all ``mult`` (``sort_last``): a percentile's bracket finds its part of one
        #: by bisection instead of reading every entry. The order of the runs is free (the mean is an
        #: exact sum, a percentile a rank), so a long run's gaps may be sorted where they lie.
        self.sorted_start = array("q")
        self.sorted_stop = array("q")
        self.sorted_mult = array("q")

    def add(self, first: float, slope: float, start: int, stop: int, mult: int) -> None:
        if mult <= 0 or stop <= start:
            return
        if stop - start == 1:
            self.value.append(first + slope * start)
            self.times.append(mult)
            return
        self.first.append(first)
        self.slope.append(slope)
        self.start.append(start)
        self.stop.append(stop)
        self.mult.append(mult)

    def __len__(self) -> int:
        return len(self.first) + len(self.value)

    @classmethod
    def joined(cls, parts: Iterable[_Gaps]) -> _Gaps:
        """Every run of every one of ``parts``, in one (the gaps of several instances' runs, each
        kept in its own order, as a fleet's or a pool's percentiles read them)."""
        gaps = cls()
        for part in parts:
            offset = len(gaps.value)  # a part's sorted stretches move with its runs of one gap
            gaps.sorted_start.extend(start + offset for start in part.sorted_start)
            gaps.sorted_stop.extend(stop + offset for stop in part.sorted_stop)
            gaps.sorted_mult.extend(part.sorted_mult)
            for name in ("first", "slope", "start", "stop", "mult", "value", "times"):
                getattr(gaps, name).extend(getattr(part, name))
        return gaps

    def sort_last(self, count: int, mult: int) -> None:
        """Sort the last ``count`` runs of one gap, each held by ``mult`` requests (a drawn speculative
        run's iterations), where they lie, and note them as a sorted stretch. Worth it for a long run:
        its gaps grow with the context, so they are nearly sorted already and the sort reads them
        about once."""
        stop = len(self.value)
        start = stop - count
        self.value[start:stop] = array("d", sorted(self.value[start:stop]))
        self.sorted_start.append(start)
        self.sorted_stop.append(stop)
        self.sorted_mult.append(mult)

    def stream(self) -> Iterator[Run]:
        """The runs one at a time, as ``(first, slope, start, stop, mult)``, those of one gap last."""
        yield from zip(self.first, self.slope, self.start, self.stop, self.mult, strict=True)
        for value, mult in zip(self.value, self.times, strict=True):
            yield value, 0.0, 0, 1, mult

    def held(self) -> Iterator[int]:
        """The gaps each longer run holds, ``mult * (stop - start)``, in order (in C: map)."""
        return map(operator.mul, self.mult, map(operator.sub, self.stop, self.start))

    def count(self) -> int:
        return sum(self.times) + sum(self.held())

    def runs(self) -> list[Run]:
        return list(self.stream())

    def mean(self) -> float | None:
        """Sum of every gap / their count."""
        count = self.count()
        if not count:
            return None
        # fsum is exact whatever the order, so the runs of one gap (``mult * value``: their
        # ``_piece_seconds`` is ``value + 0.0``) are read from their arrays, with no tuple each.
        longer = zip(self.first, self.slope, self.start, self.stop, self.mult, strict=True)
        total = math.fsum(
            itertools.chain(
                (mult * _piece_seconds(first, slope, start, stop) for first, slope, start, stop, mult in longer),
                map(operator.mul, self.times, self.value),
            )
        )
        return total / count

    def percentiles(self) -> dict[int, float | None]:
        """The nearest-rank percentiles of every gap (``PERCENTILES``), each an actual gap."""
        count = self.count()
        if not count:
            return dict.fromkeys(PERCENTILES)
        ranks = [max(1, math.ceil(p / 100 * count)) for p in PERCENTILES]
        if len(self) <= _LISTED_RUNS:
            return dict(zip(PERCENTILES, _select_ranks(self.runs(), ranks), strict=True))
        return dict(zip(PERCENTILES, _bracketed(self, ranks, count), strict=True))


def record_run(
    gaps: _Gaps,
    pieces: list[Piece],
    start_s: float,
    steps: int,
    swap_s: float,
    waited: int,
    decodes: int,
    resumed: Iterable[float] = (),
) -> None:
    """The gaps of a run of ``steps`` iterations (its ``pieces``) from ``start_s``, in which each
    of ``decodes`` decoders made a token: at step i >= 1 each waited ``first + slope * i``, the
    iteration's own time. At the first step the ``waited`` decoders whose last token came at the
    run's start waited from then to the step's end, a swap copy included: ``first_end - start_s``,
    taken as that difference of two clock readings, which the fitted calibration was fitted on
    (a refit moves with the last bit of any figure); those swapped back in waited from their last
    token before the preemption (``resumed``, its times) to that end."""
    if decodes <= 0:
        return
    first, slope, start, _ = pieces[0]
    first_end = start_s + swap_s + first + slope * start
    if waited > 0:
        gaps.value.append(first_end - start_s)
        gaps.times.append(waited)
    if steps > 1:
        record_steps(gaps, pieces, steps, decodes)
    for last_token in resumed:
        gaps.add(first_end - last_token, 0.0, 0, 1, 1)


def record_steps(gaps: _Gaps, pieces: list[Piece], steps: int, decodes: int) -> None:
    """The gaps of steps 1 to ``steps - 1`` of a run's ``pieces``, each of ``decodes`` decoders
    waiting ``first + slope * i`` at step i (``_clipped(pieces, 1, steps)``, run by run)."""
    value, times = gaps.value, gaps.times
    for first, slope, low, high in pieces:
        if low < 1:
            low = 1
        if high > steps:
            high = steps
        if high - low == 1:  # Gaps.add inline for the runs of one gap, the loop's hottest path
            value.append(first + slope * low)
            times.append(decodes)
        elif low < high:
            gaps.add(first, slope, low, high, decodes)


#: Most runs whose ranks are found from a list of them (``_select_ranks``); past it, one rank at a
#: time from a bracket of the sorted sample, reading the arrays as a stream (``_bracketed``).
_LISTED_RUNS = 100_000
#: Runs sampled to bracket a rank, and the share of every gap each bracket holds at first.
_SAMPLE_RUNS, _BRACKET_SHARE = 20_000, 0.01


def _picked(held: Sequence[int], numbered_from: int, stride: int, heavy: float) -> list[int]:
    """Which runs of one column a sample keeps, given the gaps each holds (``held``), its runs
    numbered from ``numbered_from``: every one numbered a multiple of ``stride``, and every one
    holding at least ``heavy`` gaps; their indices in the column, in order."""
    evenly = range(-numbered_from % stride, len(held), stride)
    heavies = itertools.compress(range(len(held)), map(operator.ge, held, itertools.repeat(heavy)))
    return sorted({*evenly, *heavies})


def _weight(held: int, stride: int, heavy: float) -> int:
    """The gaps a sampled run holding ``held`` stands for: its own when heavy, else ``stride`` times."""
    return held if held >= heavy else held * stride


def _bracketed(gaps: _Gaps, ranks: list[int], total: int) -> list[float]:
    """The ``rank``-th smallest of ``total`` gaps (1-based) for each of ``ranks``, with memory
    bounded by a bracket a rank.

    A sample of evenly spaced runs and every heavy one, weighted by their gaps at their middle gap and sorted,
    gives the values ``low`` and ``high`` between which the sample puts the ranks ``rank -
    share * total`` to ``rank + share * total``. One pass over the arrays (for every rank still
    open at once) counts exactly the gaps below ``low`` and keeps the parts of runs between
    ``low`` and ``high`` (as clipped runs: ``_count_at_most``); when the rank falls among those,
    ``_select_ranks`` finds it there, exactly. Otherwise the sample misled and that rank's share
    grows fourfold, up to the whole range. The runs of one gap (slope 0, most of them) are read
    from their two arrays directly, without building a tuple each.
    """
    # Every stride-th run (numbered as ``stream`` yields them: the longer runs, then those of one
    # gap) stands for the stride runs around it; a run heavier than that share (the zero gaps
    # after a speculative round's first token) stands for itself, always. The runs kept are
    # picked column by column, so no tuple is built for the others.
    stride = max(1, len(gaps) // _SAMPLE_RUNS)
    heavy = total / _SAMPLE_RUNS
    held = array("q", gaps.held())
    sample = [
        (first + slope * ((start + stop - 1) // 2), _weight(held[run], stride, heavy))
        for run in _picked(held, 0, stride, heavy)
        for first, slope, start, stop in [(gaps.first[run], gaps.slope[run], gaps.start[run], gaps.stop[run])]
    ]
    sample += [
        (gaps.value[run], _weight(gaps.times[run], stride, heavy))
        for run in _picked(gaps.times, len(held), stride, heavy)
    ]
    sample.sort()
    weight = sum(count for _, count in sample)
    found: dict[int, float] = {}
    shares = dict.fromkeys(range(len(ranks)), _BRACKET_SHARE)
    while shares:
        brackets = []
        for which, share in shares.items():
            low_share, high_share = ranks[which] / total - share, ranks[which] / total + share
            low = -math.inf if low_share <= 0 else _value_at(sample, low_share * weight)
            high = math.inf if high_share >= 1 else _value_at(sample, high_share * weight)
            brackets.append((which, low, high, [0], [], array("d"), array("q")))
        for first, slope, start, stop, mult in zip(
            gaps.first, gaps.slope, gaps.start, gaps.stop, gaps.mult, strict=True
        ):
            least, most = first + slope * start, first + slope * (stop - 1)
            for _, low, high, below, inside, _, _ in brackets:
                if most < low:
                    below[0] += mult * (stop - start)
                elif least <= high:
                    under = 0 if least >= low else _count_at_most(first, slope, start, stop, low, strict=True)
                    upto = (
                        stop - start if most <= high else _count_at_most(first, slope, start, stop, high, strict=False)
                    )
                    below[0] += mult * under
                    if under < upto:
                        inside.append((first, slope, start + under, start + upto, mult))
        for _, low, high, below, _, values, counts in brackets:
            # A run of one gap: its least and most are its value (``value + 0.0 * 0``, as a run's
            # gap is ``first + slope * step``). Those inside are kept in two typed arrays, 16 bytes
            # each, not a tuple each (about 120): a drawn speculative run's brackets hold 500,000.
            # A sorted stretch is split at low and high by bisection; the rest is read one by one.
            under_low = read = 0
            for start, stop, mult in zip(gaps.sorted_start, gaps.sorted_stop, gaps.sorted_mult, strict=True):
                under_low += _one_gaps_between(gaps, read, start, low, high, values, counts)
                first = bisect.bisect_left(gaps.value, low, start, stop)
                last = bisect.bisect_right(gaps.value, high, first, stop)
                under_low += mult * (first - start)
                values.extend(map(operator.add, gaps.value[first:last], itertools.repeat(0.0)))
                counts.extend(itertools.repeat(mult, last - first))
                read = stop
            below[0] += under_low + _one_gaps_between(gaps, read, len(gaps.value), low, high, values, counts)
        for which, _, _, below, inside, values, counts in brackets:
            rank, under = ranks[which], below[0]
            kept = sum(mult * (stop - start) for _, _, start, stop, mult in inside) + sum(counts)
            if under < rank <= under + kept:
                found[which] = _select_inside(inside, values, counts, rank - under)
                del shares[which]
            else:
                shares[which] *= 4
    return [found[which] for which in range(len(ranks))]


def _one_gaps_between(
    gaps: _Gaps,
    start: int,
    stop: int,
    low: float,
    high: float,
    values: MutableSequence[float],
    counts: MutableSequence[int],
) -> int:
    """The runs of one gap from ``start`` to ``stop``, read one by one: those from ``low`` to ``high``
    go into ``values`` and ``counts``; returns how many gaps lie below ``low``."""
    under_low = 0
    if start == 0 and stop == len(gaps.value):  # all of them (no sorted stretch): the arrays themselves
        chosen = zip(gaps.value, gaps.times, strict=True)
    else:  # copies of the slices (``islice`` would step through every entry before ``start``)
        chosen = zip(gaps.value[start:stop], gaps.times[start:stop], strict=True)
    for value, mult in chosen:
        if value < low:
            under_low += mult
        elif value <= high:
            values.append(value + 0.0)
            counts.append(mult)
    return under_low


#: Fewest distinct gaps worth narrowing first: below this they are listed and sorted (``_listed``:
#: two typed arrays, the sort's keys and its order, about 85 bytes a gap, 85 MB at the most). A
#: million-request run's brackets hold 230,000-320,000 distinct gaps, listed in 0.38 s of CPU where
#: narrowing first took 0.9 s; a drawn speculative run of 1,000 x 100,000 tokens, about 500,000.
_LISTED_GAPS = 1_000_000
#: Most distinct gaps the narrowed window may hold before quickselect takes the rank instead.
_WINDOW_GAPS = 1_000_000

Run = tuple[float, float, int, int, int]


def _select_ranks(runs: list[Run], ranks: list[int]) -> list[float]:
    """The ``rank``-th smallest gap (1-based, counting multiplicity) for each of ``ranks``.

    Few distinct gaps: they are listed and sorted. Many: a sweep narrows each rank to a
    window first. Count a run's gaps at or below v as if they were spread evenly between its
    lowest and highest, ``mult * ((v - low) / slope + 1)``: too high by less than ``mult``.
    Summed over the runs this estimate F(v) is piecewise linear in v, and so is the bound
    below it, G(v) = F(v) - (mult of every run that straddles v), so one sweep over the runs'
    ends, sorted, finds for each rank the value where F reaches it (fewer gaps lie below)
    and the one where G does (at least that many lie at or below). One pass then counts the
    gaps below each window exactly and lists the ones inside, sorted; a window that the
    rounding misled, or too full to list, leaves the rank to quickselect (``_select``)."""
    distinct = sum(stop - start for _, _, start, stop, _ in runs)
    if distinct <= _LISTED_GAPS:
        return _listed(runs, ranks)
    windows = _windows(runs, ranks)
    below = [0] * len(ranks)
    inside: list[list[Run]] = [[] for _ in ranks]
    for run in runs:
        first, slope, start, stop, mult = run
        low, high = first + slope * start, first + slope * (stop - 1)
        for which, (floor, ceiling) in enumerate(windows):
            if high <= floor:
                below[which] += mult * (stop - start)
            elif low <= ceiling:
                kept_from = start if low > floor else start + _count_at_most(*run[:4], floor, strict=False)
                kept_to = stop if high <= ceiling else start + _count_at_most(*run[:4], ceiling, strict=False)
                below[which] += mult * (kept_from - start)
                if kept_from < kept_to:
                    inside[which].append((first, slope, kept_from, kept_to, mult))
    found = []
    for rank, under, kept in zip(ranks, below, inside, strict=True):
        held = sum(mult * (stop - start) for _, _, start, stop, mult in kept)
        listed = sum(stop - start for _, _, start, stop, _ in kept)
        if under < rank <= under + held and listed <= _WINDOW_GAPS:
            found.extend(_listed(kept, [rank - under]))
        else:
            found.append(_select(runs, rank))
    return found


def _select_inside(runs: list[Run], values: MutableSequence[float], counts: MutableSequence[int], rank: int) -> float:
    """The ``rank``-th smallest gap (1-based, counting multiplicity) of ``runs`` and of the runs of
    one gap kept as ``values`` and ``counts`` (``_bracketed``): listed when they are few enough
    (``_listed``), else handed to ``_select_ranks`` as runs."""
    if sum(stop - start for _, _, start, stop, _ in runs) + len(values) <= _LISTED_GAPS:
        return _listed(runs, [rank], values, counts)[0]
    return _select_ranks(
        [*runs, *((value, 0.0, 0, 1, mult) for value, mult in zip(values, counts, strict=True))], [rank]
    )[0]


def _listed(
    runs: list[Run],
    ranks: list[int],
    values: MutableSequence[float] | None = None,
    counts: MutableSequence[int] | None = None,
) -> list[float]:
    """The ranks found by listing every distinct gap (``first + slope * step``) with its
    multiplicity and walking them in increasing order, the running count reaching each rank;
    ``values`` and ``counts``, when given, are more gaps of one each (runs of one gap kept as two
    typed arrays, 16 bytes a gap, not a tuple each: ``_bracketed``), and are extended in place.

    The gaps are ordered by sorting their indices keyed by the gap, not (gap, count) tuples:
    floats compare faster than tuples, and no tuple is built a gap (310,000 gaps of a
    speculative run's p99 window: 0.15 s against 0.5 s through ``_windows``). Tied gaps are
    equal, so the order among them changes no rank's value."""
    if values is None or counts is None:
        values, counts = array("d"), array("q")
    for first, slope, start, stop, mult in runs:
        if stop - start == 1:  # most runs; a gap each
            values.append(first + slope * start)
            counts.append(mult)
        else:
            for step in range(start, stop):
                values.append(first + slope * step)
                counts.append(mult)
    order = sorted(range(len(values)), key=values.__getitem__)
    found: dict[int, float] = {}
    pending = sorted(set(ranks))
    seen = 0
    for index in order:
        seen += counts[index]
        while pending and seen >= pending[0]:
            found[pending.pop(0)] = values[index]
        if not pending:
            break
    last = values[order[-1]]
    return [found.get(rank, last) for rank in ranks]


def _windows(runs: list[Run], ranks: list[int]) -> list[tuple[float, float]]:
    """For each rank, ``(floor, ceiling)``: fewer than rank gaps lie at or below floor (F is
    below the rank there), and at least rank at or below ceiling (G has reached it); see
    ``_select_ranks``. A sweep over every run's lowest and highest gap, in order."""
    events: list[tuple[float, int, float, int, float]] = []  # (value, kind, F jump, G jump, slope change)
    for first, slope, start, stop, mult in runs:
        low, high = first + slope * start, first + slope * (stop - 1)
        if high <= low:  # one value: every gap of the run lands at once
            events.append((low, 0, mult * (stop - start), mult * (stop - start), 0.0))
        else:
            per = mult * (stop - start - 1) / (high - low)
            events.append((low, 0, mult, 0, per))  # F counts the first gap at once; G does not yet
            events.append((high, 1, 0, mult, -per))  # past the last gap the run counts exactly
    events.sort()
    # The ranks in increasing order: each crossing is sought only for the lowest rank not yet met.
    order = sorted(range(len(ranks)), key=ranks.__getitem__)
    floors: list[float] = [math.inf] * len(ranks)
    ceilings: list[float] = [math.inf] * len(ranks)
    next_floor = next_ceiling = 0
    estimate = bound = slope = 0.0
    previous = events[0][0]
    for value, _, estimate_jump, bound_jump, slope_change in events:
        if value > previous and slope:  # the linear stretch since the last event
            rise = slope * (value - previous)
            while next_floor < len(order) and estimate + rise >= ranks[order[next_floor]]:
                rank = ranks[order[next_floor]]
                floors[order[next_floor]] = math.nextafter(previous + (rank - estimate) / slope, -math.inf)
                next_floor += 1
            while next_ceiling < len(order) and bound + rise >= ranks[order[next_ceiling]]:
                rank = ranks[order[next_ceiling]]
                ceilings[order[next_ceiling]] = min(value, previous + (rank - bound) / slope)
                next_ceiling += 1
            estimate += rise
            bound += rise
        previous = value
        estimate += estimate_jump
        bound += bound_jump
        slope += slope_change
        while next_floor < len(order) and estimate >= ranks[order[next_floor]]:
            floors[order[next_floor]] = math.nextafter(value, -math.inf)
            next_floor += 1
        while next_ceiling < len(order) and bound >= ranks[order[next_ceiling]]:
            ceilings[order[next_ceiling]] = value
            next_ceiling += 1
    last = events[-1][0]
    return [
        (-math.inf if floor == math.inf else floor, min(ceiling, last))
        for floor, ceiling in zip(floors, ceilings, strict=True)
    ]


def _value_at(sample: list[tuple[float, int]], weight: float) -> float:
    """The first value of a sorted, weighted sample at which the running weight reaches ``weight``."""
    seen = 0.0
    for value, count in sample:
        seen += count
        if seen >= weight:
            return value
    return sample[-1][0]


def _select(runs: list[tuple[float, float, int, int, int]], rank: int) -> float:
    """The ``rank``-th smallest gap (1-based) of the runs, by quickselect. The pivot is the
    middle gap of a run, chosen where the rank falls when a sample of up to 256 runs is
    sorted by their middle gaps. Each round counts the gaps below and at the pivot (a run
    wholly on one side at a glance, one that straddles it by ``_count_at_most``), keeps the
    side that holds the rank, runs clipped at the pivot being runs still, and so ends with
    the pivot itself or a lone run."""
    total = sum(mult * (stop - start) for _, _, start, stop, mult in runs)
    while True:
        if len(runs) == 1:
            first, slope, start, _, mult = runs[0]
            return first + slope * (start + (rank - 1) // mult)
        stride = max(1, len(runs) // 256)
        sample = sorted(
            (first + slope * ((start + stop - 1) // 2), mult * (stop - start))
            for first, slope, start, stop, mult in runs[::stride]
        )
        target = rank / total * sum(weight for _, weight in sample)
        pivot = _value_at(sample, target)
        below = at_most = 0
        counts = []
        for first, slope, start, stop, mult in runs:
            if first + slope * (stop - 1) < pivot:
                under = upto = stop - start
            elif first + slope * start > pivot:
                under = upto = 0
            else:
                under = _count_at_most(first, slope, start, stop, pivot, strict=True)
                upto = _count_at_most(first, slope, start, stop, pivot, strict=False)
            counts.append((under, upto))
            below += mult * under
            at_most += mult * upto
        if below < rank <= at_most:
            return pivot
        if rank <= below:
            total = below
            runs = [
                (first, slope, start, start + under, mult)
                for (first, slope, start, _, mult), (under, _) in zip(runs, counts, strict=True)
                if under
            ]
        else:
            rank -= at_most
            total -= at_most
            runs = [
                (first, slope, start + upto, stop, mult)
                for (first, slope, start, stop, mult), (_, upto) in zip(runs, counts, strict=True)
                if start + upto < stop
            ]


# -- the simulation --------------------------------------------------------------------------------


class _Run:
    """The mutable state of one simulation; ``simulate`` is its only user."""

    def __init__(
        self,
        costs: IterationCosts | PipelineCosts,
        config: ServingConfig,
        capacity: int,
        request_overhead_s: float = 0.0,
    ) -> None:
        self.config = config
        #: Host time from a request's send to its reaching the scheduler (``CostModel``); the
        #: arrivals below are at the scheduler, and ``result`` counts the times from the send.
        self.overhead = request_overhead_s
        self.costs = costs
        # The loop records a plain run's gaps inline unless a subclass records them its own way.
        self.records_inline = type(self).record_decodes is _Run.record_decodes
        # An iteration's time alone, without its Pass where the costs can give it so.
        self.iteration_seconds = getattr(costs, "iteration_seconds", None) or (
            lambda *parts: costs.iteration(*parts).seconds
        )
        #: Every KV block; a prefix cache keeps its share of them, and the running batch the rest.
        self.total_blocks = capacity
        self.prefix: LruPrefixCache | None = None
        if config.prefix_caching:
            capacity = self.start_prefix_cache(capacity)
        self.capacity = capacity
        self.paged = config.admission == "paged" and config.policy != "static"
        self.swap = config.preemption == "swap"
        count = config.requests
        arrival, prompt, output = draw_traffic(config, count)
        if request_overhead_s:
            arrival = array("d", (sent + request_overhead_s for sent in arrival))
        self.arrival, self.prompt, self.output = arrival, prompt, output
        #: Requests sent so far: all of them in an open loop; in a closed loop the clients' first
        #: ones, and one more each time a request ends (its arrival set then).
        self.issued = count if config.concurrency is None else min(config.concurrency, count)
        #: KV blocks a reserving scheduler holds for each request: its whole prompt plus output.
        self.blocks = [blocks_for(p + o) for p, o in zip(prompt, output, strict=True)]
        self.admitted, self.first, self.finish = unset_times(count), unset_times(count), unset_times(count)
        self.generated = [0] * count  # tokens each request has produced
        self.rejected = 0
        self.next_arrival = 0
        self.queue: deque[int] = deque()
        self.now = 0.0
        self.busy = 0.0
        self.batch_seconds = 0.0  # requests running (in the batch) * seconds, summed over iterations
        self.iterations = 0
        self.free_blocks = capacity
        self.gaps = _Gaps()
        self.preemptions = 0
        self.recomputed_tokens = 0
        self.swapped_bytes = 0.0
        self.swap_s = 0.0  # copy time to add to the coming iteration
        self.blocks_log: list[tuple[float, int, int]] | None = [] if config.record_blocks else None
        self.traced = min(config.trace_requests, count)
        self.spans: list[list[list]] = [[] for _ in range(self.traced)]
        self.preempted_times = [0] * self.traced
        # Iteration-level state (continuous, chunked).
        self.running: dict[int, None] = {}  # admission order: the last is the newest
        self.prefilling: deque[list[int]] = deque()  # [request, tokens cached, tokens to reach]
        #: Decoding requests: the length their next step reads, less the step number (constant).
        self.base: dict[int, int] = {}
        self.base_sum = 0
        #: Decoding requests by ``(base - 1) % 16``: those with phase q need a block at step s
        #: when ``(q + s) % 16 == 0`` (they hold a whole number of full blocks).
        self.phases = [0] * BLOCK_TOKENS
        self.ends: dict[int, int] = {}  # decoding request -> the step at which it finishes
        self.finishing: list[tuple[int, int]] = []  # (end step, request); entries not in ends are stale
        self.last_token: dict[int, float] = {}  # preempted request -> time of its last token
        self.resume: dict[int, tuple[str, int, int]] = {}  # preempted: (kind, tokens cached, tokens to reach)
        self.redoing: set[int] = set()  # traced requests whose prefill is a recompute
        self.decoders: list[int] = []  # traced requests now decoding
        self.decode_lines: dict[int, tuple[float, float, float, float, float]] = {}
        #: Iterations run at each size in tokens (decodes plus prompt tokens): ``{tokens: count}``,
        #: for figures that are means over iterations (``roofline.epdeploy``'s expert-parallel keys).
        self.sizes: dict[int, int] = {}
        if self.prefix is not None:
            self.group = prefix_groups_drawn(config, count)
            self.shared = [0] * count  # blocks of its prefix a request holds in the prefix cache

    # -- the prefix cache ----------------------------------------------------------------------------

    def start_prefix_cache(self, capacity: int) -> int:
        """Set the prefix cache up: ``floor(share * blocks)`` blocks, room for that many // the
        prefix's whole blocks prefixes. Returns the blocks left to the running batch."""
        config = self.config
        prefix_blocks = config.shared_prefix_tokens // BLOCK_TOKENS
        cache_blocks = math.floor(config.prefix_cache_share * capacity)
        slots = cache_blocks // prefix_blocks
        field = "prefix_tokens" if config.prefix_share is None else "prefix_share"
        if slots < 1:
            raise SpecError(
                f"the prefix cache's {cache_blocks:,} blocks ({config.prefix_cache_share:g} of {capacity:,}) hold"
                f" no whole prefix of {prefix_blocks:,} blocks",
                field=field,
                hint="raise --prefix-cache-share, or shorten the prefix",
            )
        self.prefix = LruPrefixCache(slots)
        self.prefix_blocks, self.cache_blocks = prefix_blocks, cache_blocks
        self.prefix_lookups = self.prefix_hits = self.prefill_tokens_saved = 0
        self.prefix_tokens_queried = self.prefix_tokens_hit = 0
        return capacity - cache_blocks

    def hit_tokens(self, index: int) -> int:
        """Prompt tokens of ``index`` the prefix cache holds now: its prefix's whole blocks, less the
        block of its last prompt token when the prefix is the whole prompt (an engine computes that
        token to get the first output); 0 on a miss."""
        if not self.prefix.lookup(self.group[index]):
            return 0
        return min(self.prefix_blocks, (self.prompt[index] - 1) // BLOCK_TOKENS) * BLOCK_TOKENS

    def start_prefill(self, index: int, first: bool = False) -> int:
        """``index`` starts a prefill from its first token: look its prefix up, take a hit's blocks
        from the cache, and count it. Returns the tokens it need not compute. A ``first`` lookup (the
        request's own, not a recompute after a preemption) also counts its prompt tokens and the
        cached ones, as vLLM's logged hit rate counts a new request's (a preempted one's apart)."""
        hit = self.hit_tokens(index)
        self.prefix_lookups += 1
        if first:
            self.prefix_tokens_queried += self.prompt[index]
            self.prefix_tokens_hit += hit
        if hit:
            self.prefix.acquire(self.group[index])
            self.shared[index] = hit // BLOCK_TOKENS  # the blocks admission did not charge it
            self.prefix_hits += 1
            self.prefill_tokens_saved += hit
        return hit

    def cache_prefix(self, index: int) -> None:
        """``index`` missed and has computed its prefix: the prefix's blocks pass to the cache when it
        has room (the request then holds them there, and its own pool gets them back)."""
        if self.shared[index] or self.prefix.lookup(self.group[index]):
            return
        if self.prefix.insert(self.group[index]):
            self.shared[index] = self.prefix_blocks
            self.free_blocks += self.prefix_blocks

    def let_go(self, index: int) -> int:
        """``index`` stops using the cached prefix (finished or preempted); returns the blocks it held
        there, which its own blocks do not include."""
        held = self.shared[index]
        if held:
            self.prefix.release(self.group[index])
            self.shared[index] = 0
        return held

    # -- arrivals --------------------------------------------------------------------------------

    def never_fits(self, index: int) -> bool:
        """Whether the request needs more blocks than the whole cache even alone (see the module docstring)."""
        if self.paged:
            return blocks_for(self.prompt[index] + self.output[index] - 1) > self.capacity
        return self.blocks[index] > self.capacity

    def issue_next(self, when: float) -> None:
        """Closed loop: the client whose request just ended sends the next one now."""
        if self.issued < self.config.requests:
            self.arrival[self.issued] = when + self.overhead
            self.issued += 1

    def enqueue_arrivals(self) -> None:
        """Move every request that has arrived by now into the queue, or count it as rejected."""
        arrival = self.arrival
        while self.next_arrival < self.issued and arrival[self.next_arrival] <= self.now:
            index = self.next_arrival
            self.next_arrival += 1
            if self.never_fits(index):
                self.rejected += 1
                if self.config.concurrency is not None:
                    self.issue_next(arrival[index])
            else:
                self.queue.append(index)

    def wait_for_arrival(self) -> bool:
        """Idle until the next arrival; False when none is left."""
        if self.next_arrival >= self.issued:
            return False
        self.now = max(self.now, self.arrival[self.next_arrival])
        return True

    def next_arrival_s(self) -> float:
        return self.arrival[self.next_arrival] if self.next_arrival < self.issued else math.inf

    def span(self, index: int, kind: str, start: float, end: float, iterations: int) -> None:
        """Record that traced request ``index`` took part in iterations from start to end."""
        spans = self.spans[index]
        if spans and spans[-1][0] == kind and spans[-1][2] == start:
            spans[-1][2] = end
            spans[-1][3] += iterations
        else:
            spans.append([kind, start, end, iterations])

    def tally(self, tokens: int, iterations: int) -> None:
        """Count ``iterations`` iterations of ``tokens`` tokens each (``sizes``)."""
        if iterations > 0:
            self.sizes[tokens] = self.sizes.get(tokens, 0) + iterations

    def spend(self, seconds: float, iterations: int, running: int | None = None) -> None:
        """Run ``iterations`` iterations taking ``seconds`` in all, with ``running`` requests in the batch."""
        self.now += seconds
        self.busy += seconds
        self.iterations += iterations
        self.batch_seconds += (len(self.running) if running is None else running) * seconds

    def series(
        self,
        steps: int,
        decodes: int,
        context: int,
        new: int = 0,
        cached: int = 0,
        pairs: float = 0.0,
        cached_growth: int = 0,
        pairs_growth: float = 0.0,
    ) -> list[Piece]:
        """The pieces of ``steps`` iterations, iteration i holding ``decodes`` decodes at total
        context ``context + i * decodes``, and ``new`` prefill tokens after ``cached + i *
        cached_growth`` over ``pairs + i * pairs_growth`` token pairs, none finishing a prompt.

        Both times are linear in i, so ``IterationCosts.iteration`` at i = 0 and far out at
        i = ``_PROBE`` gives each line (far out, so the slope keeps its digits). A run of decodes
        alone depends on its batch only through ``decode_line``, worked out once per batch size.
        """
        if not new:
            memory_at, memory_per, compute_at, compute_per, floor = self.decode_line(decodes)
            memory0, compute0 = memory_at + memory_per * context, compute_at + compute_per * context
            memory_slope, compute_slope = memory_per * decodes, compute_per * decodes
        else:
            costs = self.costs
            at0 = costs.iteration(decodes, context, new, cached, pairs, 0)
            if steps == 1:
                return [(at0.seconds, 0.0, 0, 1)]
            floor = iteration_floor(at0)
            far = costs.iteration(
                decodes,
                context + decodes * _PROBE,
                new,
                cached + cached_growth * _PROBE,
                pairs + pairs_growth * _PROBE,
                0,
            )
            memory0, memory_slope, compute0, compute_slope = iteration_line(at0, far)
        return _pieces(memory0, memory_slope, compute0, compute_slope, steps, floor)

    def decode_line(self, decodes: int) -> tuple[float, float, float, float, float]:
        """An iteration of ``decodes`` decodes alone at total context D takes ``max(memory_at +
        memory_per * D, compute_at + compute_per * D, floor)``: the five numbers, from two
        ``IterationCosts.iteration`` calls per batch size (memoized: the same sizes recur)."""
        line = self.decode_lines.get(decodes)
        if line is None:
            at0, far = self.costs.iteration(decodes, 0), self.costs.iteration(decodes, _PROBE)
            line = self.decode_lines[decodes] = (*iteration_line(at0, far), iteration_floor(at0))
        return line

    # -- static ------------------------------------------------------------------------------------

    def run_static(self) -> None:
        config, queue = self.config, self.queue
        while True:
            self.enqueue_arrivals()
            if not queue:
                if not self.wait_for_arrival():
                    return
                continue
            oldest_waited = self.now - self.arrival[queue[0]]
            more_coming = self.next_arrival < self.issued
            if len(queue) < config.max_batch and oldest_waited < config.batch_wait_s and more_coming:
                self.now = min(self.next_arrival_s(), self.arrival[queue[0]] + config.batch_wait_s)
                continue
            self.static_batch(self.form_static_batch())

    def form_static_batch(self) -> list[int]:
        """First come first served, while the padded batch fits: ``B * blocks(longest prompt + longest output)``."""
        queue, members = self.queue, []
        longest_prompt = longest_output = 0
        while queue and len(members) < self.config.max_batch:
            index = queue[0]
            padded_prompt = max(longest_prompt, self.prompt[index])
            padded_output = max(longest_output, self.output[index])
            if (len(members) + 1) * blocks_for(padded_prompt + padded_output) > self.capacity:
                break
            members.append(queue.popleft())
            longest_prompt, longest_output = padded_prompt, padded_output
        return members

    def static_batch(self, members: list[int]) -> None:
        size = len(members)
        longest_prompt = max(self.prompt[index] for index in members)
        longest_output = max(self.output[index] for index in members)
        start = self.now
        for index in members:
            self.admitted[index] = start
        pairs = size * longest_prompt * (longest_prompt + 1) / 2
        self.spend(self.costs.iteration(0, 0, size * longest_prompt, 0, pairs, size).seconds, 1, size)
        self.tally(size * longest_prompt, 1)
        prefill_end = self.now
        # Token j (j >= 2) of every slot comes from decode step j - 1 at padded length P + j - 1.
        steps = longest_output - 1
        pieces = self.series(steps, size, size * (longest_prompt + 1)) if steps else []
        end = prefill_end + _pieces_seconds(pieces)
        self.spend(end - prefill_end, steps, size)
        self.tally(size, steps)
        finishes = []
        for index in members:
            own_steps = self.output[index] - 1
            self.first[index] = prefill_end
            finish = prefill_end + _pieces_seconds(_clipped(pieces, 0, own_steps))
            self.finish[index] = finish
            finishes.append((finish, index))
            if index < self.traced:
                self.span(index, "prefill", start, prefill_end, 1)
                if own_steps:
                    self.span(index, "decode", prefill_end, finish, own_steps)
                if own_steps < steps:
                    self.span(index, "padding", finish, end, steps - own_steps)
        # Step i gives a token to every slot whose request wants more than i + 1 tokens.
        alive, done = size, 0
        for own_steps in sorted(self.output[index] - 1 for index in members):
            for first, slope, low, high in _clipped(pieces, done, own_steps):
                self.gaps.add(first, slope, low, high, alive)
            done = max(done, own_steps)
            alive -= 1
        if self.config.concurrency is not None:
            for finish, _ in sorted(finishes):
                self.issue_next(finish)

    # -- continuous and chunked: the requests' states --------------------------------------------

    def join_decoding(self, index: int, length: int, step: int) -> None:
        """``index`` decodes from now on; its next step (number ``step``) reads ``length`` tokens."""
        base = length - step
        self.base[index] = base
        self.base_sum += base
        self.phases[(base - 1) % BLOCK_TOKENS] += 1
        end = step + self.output[index] - self.generated[index]
        self.ends[index] = end
        heapq.heappush(self.finishing, (end, index))
        if index < self.traced:
            self.decoders.append(index)

    def leave_decoding(self, index: int, step: int) -> int:
        """``index`` stops decoding before step ``step``; returns the tokens it holds in cache."""
        base = self.base.pop(index)
        self.base_sum -= base
        self.phases[(base - 1) % BLOCK_TOKENS] -= 1
        del self.ends[index]
        if index < self.traced:
            self.decoders.remove(index)
        return base + step - 1

    def next_end(self) -> float:
        """The step at which the next decoding request finishes (inf when none decode)."""
        finishing, ends = self.finishing, self.ends
        while finishing and ends.get(finishing[0][1]) != finishing[0][0]:
            heapq.heappop(finishing)  # left behind by a preemption
        return finishing[0][0] if finishing else math.inf

    def complete(self, index: int, held_tokens: int) -> None:
        """``index`` has its last token: it leaves, its blocks are freed, its client may send another."""
        self.finish[index] = self.now
        del self.running[index]
        self.free_blocks += blocks_for(held_tokens) if self.paged else self.blocks[index]
        if self.prefix is not None:
            self.free_blocks -= self.let_go(index)
        if self.config.concurrency is not None:
            self.issue_next(self.now)

    def copy_blocks(self, tokens: int) -> None:
        """Swap the blocks holding ``tokens`` tokens one way over the host link: bytes and time counted."""
        moved = blocks_for(tokens) * BLOCK_TOKENS
        self.swapped_bytes += moved * self.costs.kv_bytes_per_token
        self.swap_s += self.costs.swap_seconds(moved)

    def preempt_newest(self, step: int) -> int:
        """Preempt the newest running request before step ``step``; returns the block it needed
        for that step (1 or 0), which no longer needs finding."""
        running = self.running
        index = next(reversed(running))
        del running[index]
        self.preemptions += 1
        if index < self.traced:
            self.preempted_times[index] += 1
        self.queue.appendleft(index)
        if index in self.base:
            held = self.leave_decoding(index, step)
            self.free_blocks += blocks_for(held)
            if self.prefix is not None:
                self.free_blocks -= self.let_go(index)
            self.last_token[index] = self.now
            self.generated[index] = held + 1 - self.prompt[index]  # its next step would read prompt + generated
            if self.swap:
                self.copy_blocks(held)
                self.resume[index] = ("decode", held, held)
            else:  # its prompt and every generated token, prefilled again: held + 1 = prompt + generated
                self.resume[index] = ("prefill", 0, held + 1)
            return 1 if held % BLOCK_TOKENS == 0 else 0
        for entry in self.prefilling:
            if entry[0] == index:
                break
        self.prefilling.remove(entry)
        _, cached, target = entry
        self.free_blocks += blocks_for(target)
        if self.prefix is not None:
            self.free_blocks -= self.let_go(index)
        if self.swap and cached:
            self.copy_blocks(cached)
            self.resume[index] = ("prefill", cached, target)
        else:
            self.resume[index] = ("prefill", 0, target)
        return 0

    def admission_cost(self, index: int) -> int:
        """Blocks a queued request takes when it starts: its prompt plus output (reserve); its
        prompt, or prompt and generated tokens to prefill again (paged); its swapped cache and
        room for the token the coming step writes (swapped in as a decoder)."""
        if not self.paged:
            return self.blocks[index]
        resume = self.resume.get(index)
        if resume is None:
            tokens = self.prompt[index]
        elif resume[0] == "decode":
            return blocks_for(resume[1] + 1)
        else:
            tokens = resume[2]
        if self.prefix is not None:  # a hit's prefix blocks are the cache's
            return blocks_for(tokens) - self.hit_tokens(index) // BLOCK_TOKENS
        return blocks_for(tokens)

    def admit(self, step: int) -> list[int]:
        """Start queued requests, first come first served, while the batch and the free blocks
        allow; returns those swapped back in as decoders (their next gap is not one iteration)."""
        config, queue, running = self.config, self.queue, self.running
        swapped_in = []
        # Paged, no prefix cache and none preempted (most runs): a newcomer's cost is its
        # prompt's blocks (admission_cost), and nobody resumes (the loop only empties resume).
        fresh = self.paged and self.prefix is None and not self.resume
        while queue and len(running) < config.max_batch:
            index = queue[0]
            cost = -(-self.prompt[index] // BLOCK_TOKENS) if fresh else self.admission_cost(index)
            if cost > self.free_blocks:
                break  # first come first served: later requests wait behind it
            queue.popleft()
            self.free_blocks -= cost
            running[index] = None
            if math.isnan(self.admitted[index]):
                self.admitted[index] = self.now
            resume = None if fresh else self.resume.get(index)
            if resume is None:
                self.prefilling.append(
                    [index, 0 if self.prefix is None else self.start_prefill(index, first=True), self.prompt[index]]
                )
                continue
            del self.resume[index]
            kind, cached, target = resume
            if kind == "decode":
                self.copy_blocks(cached)
                self.join_decoding(index, cached + 1, step)
                swapped_in.append(index)
            else:
                if cached:
                    self.copy_blocks(cached)
                else:
                    if self.prefix is not None:
                        cached = self.start_prefill(index)
                    self.recomputed_tokens += target - cached
                    if index < self.traced:
                        self.redoing.add(index)
                self.prefilling.append([index, cached, target])
        return swapped_in

    def prefilled(self, index: int, target: int, step: int) -> None:
        """``index`` has cached all ``target`` tokens it was prefilling; the iteration gave it a token."""
        generated = self.generated[index]
        if generated == 0:
            self.first[index] = self.now
        else:  # resumed after a recompute: its gap spans the preemption
            self.gaps.add(self.now - self.last_token.pop(index), 0.0, 0, 1, 1)
        self.redoing.discard(index)
        if self.prefix is not None:
            self.cache_prefix(index)
        self.generated[index] = generated + 1
        if generated + 1 == self.output[index]:
            self.complete(index, target)
        else:
            self.join_decoding(index, target + 1, step)

    def note_blocks(self, step: int) -> None:
        """Log the blocks in use and the tokens cached before decode step ``step`` (when asked to):
        a decoder holds ``base + step - 1`` tokens, a prompt being prefilled those cached so far."""
        if self.blocks_log is not None:
            cached = self.base_sum + len(self.base) * (step - 1) + sum(entry[1] for entry in self.prefilling)
            self.blocks_log.append((self.now, self.capacity - self.free_blocks, cached))

    # -- continuous and chunked: the loop ---------------------------------------------------------

    def run_iterative(self) -> None:
        """Iteration-level scheduling; ``chunked`` caps each iteration at the token budget."""
        step = 0  # decode steps so far (iterations that held decodes)
        passes_left = self.steps_per_request * self.config.requests + SPARE_STEPS
        # The calls below are skipped where they would do nothing (no arrival due, an empty
        # queue, no log of blocks): a million requests make millions of passes.
        arrival, logs = self.arrival, self.blocks_log is not None
        while True:
            passes_left -= 1
            if passes_left < 0:
                raise self.thrashing()
            if self.next_arrival < self.issued and arrival[self.next_arrival] <= self.now:
                self.enqueue_arrivals()
            self.swap_s = 0.0
            preempted = False
            if self.paged and self.base:
                need = self.phases[(-step) % BLOCK_TOKENS]
                while need > self.free_blocks:
                    need -= self.preempt_newest(step)
                    preempted = True
                self.free_blocks -= need
            # vLLM admits no one in an iteration that preempted.
            swapped_in = [] if preempted or not self.queue else self.admit(step)
            if not self.running:
                if logs:
                    self.note_blocks(step)
                if not self.wait_for_arrival():
                    return
                continue
            if logs:
                self.note_blocks(step)
            # A run stops where a newcomer could join: only when the queue is empty (its head
            # waits for blocks or a slot, and neither comes back before a request ends).
            can_join = len(self.running) < self.config.max_batch and not self.queue
            # A run stops after one iteration when the next could admit the queue's head.
            single = bool(preempted and self.queue and self.admission_cost(self.queue[0]) <= self.free_blocks)
            if self.prefilling:
                step = self.prefill_iteration(step, can_join, single, swapped_in)
            else:
                step = self.decode_run(step, can_join, single, swapped_in)
            if logs:
                self.note_blocks(step)
            # next_end() inline: drop the entries preemptions left behind, then finish those due.
            finishing, ends = self.finishing, self.ends
            while finishing:
                end, index = finishing[0]
                if ends.get(index) != end:
                    heapq.heappop(finishing)
                elif end == step:
                    heapq.heappop(finishing)
                    self.complete(index, self.leave_decoding(index, step))
                else:
                    break

    @property
    def steps_per_request(self) -> int:
        """The run's bound on scheduling steps a request: the config's, else ``MAX_STEPS_PER_REQUEST``."""
        return self.config.max_steps_per_request or MAX_STEPS_PER_REQUEST

    def thrashing(self) -> SpecError:
        """The error for a run past its steps a request: paged admission preempting without end."""
        config = self.config
        longest = blocks_for(config.prompt.high + config.output.high - 1)
        holds = self.capacity // longest
        done = sum(1 for finish in self.finish if not math.isnan(finish))
        return SpecError(
            f"the KV cache thrashes: {self.preemptions:,} preemptions by the time {done:,} of"
            f" {config.requests:,} requests had finished, past the simulator's bound of"
            f" {self.steps_per_request} scheduling steps a request; the cache holds"
            f" {holds:,} request{'' if holds == 1 else 's'} at the longest prompt plus output",
            field="admission",
            hint="use --admission reserve, more memory (--usable-fraction, --gpus), or shorter outputs",
        )

    def affordable(self, start: int, most: int) -> int:
        """Decode steps from step ``start`` on, up to ``most``, whose new blocks fit in the free
        ones (paged): each decoder needs one block in every 16 steps, at the step its phase says."""
        decodes = len(self.base)
        if not self.paged or not decodes:
            return most
        cycles, left = divmod(self.free_blocks, decodes)
        if BLOCK_TOKENS * cycles >= most:  # room for all of them, whatever the phases
            return most
        needed = 0
        for offset in range(BLOCK_TOKENS):
            needed += self.phases[-(start + offset) % BLOCK_TOKENS]
            if needed > left:
                return min(most, BLOCK_TOKENS * cycles + offset)
        raise AssertionError("a cycle of 16 steps needs one block per decoder")

    def take_blocks(self, start: int, steps: int) -> None:
        """Allocate the new blocks of ``steps`` decode steps from step ``start`` (paged)."""
        if not self.paged or steps <= 0:
            return
        cycles, rest = divmod(steps, BLOCK_TOKENS)
        self.free_blocks -= cycles * len(self.base) + self.phase_sum(start, rest)

    def phase_sum(self, start: int, count: int) -> int:
        """Decoders needing a block in the ``count`` (< 16) steps from step ``start``: the phases
        ``-(start + offset) % 16`` for offset < count, a run of indices falling from ``-start % 16``
        (wrapping past 0), summed as one or two slices."""
        high = -start % BLOCK_TOKENS
        low = high - count + 1
        if low >= 0:
            return sum(self.phases[low : high + 1])
        return sum(self.phases[: high + 1]) + sum(self.phases[BLOCK_TOKENS + low :])

    def record_decodes(self, pieces: list[Piece], start_s: float, steps: int, swapped_in: list[int]) -> None:
        """The gaps and spans of ``steps`` iterations in which every decoder made a token
        (``record_run``); a request swapped back in waited for its first from its last token
        before the preemption."""
        if not self.base:
            return
        decodes = len(self.base)
        resumed = [self.last_token.pop(index) for index in swapped_in]
        record_run(self.gaps, pieces, start_s, steps, self.swap_s, decodes - len(resumed), decodes, resumed)
        for index in self.decoders:
            self.span(index, "decode", start_s, self.now, steps)

    def run_length(self, step: int, most: float, single: bool) -> int:
        """How many like iterations to sum: to the next finish and, paged, while blocks last."""
        if single:
            return 1
        most = int(min(most, self.next_end() - step))
        return _run_cap(1 + self.affordable(step + 1, most - 1))

    def decode_run(self, step: int, can_join: bool, single: bool, swapped_in: list[int]) -> int:
        """Decode steps back to back until someone finishes, a newcomer could join or blocks run out.

        The loop's hottest path (twice a request): ``run_length``, ``series`` for decodes alone,
        ``spend``, ``tally`` and, for a run of one piece with no swap, ``record_decodes`` are
        inline, to the same sums."""
        decodes = len(self.base)
        if single:
            steps = 1
        else:  # run_length, with affordable()'s answer when every decoder's blocks fit
            finishing, ends = self.finishing, self.ends
            while ends.get(finishing[0][1]) != finishing[0][0]:  # next_end(): someone decodes
                heapq.heappop(finishing)  # left behind by a preemption
            most = finishing[0][0] - step
            if self.paged and BLOCK_TOKENS * (self.free_blocks // decodes) < most - 1:
                steps = _run_cap(1 + self.affordable(step + 1, most - 1))
            else:
                steps = _run_cap(most)
        memory_at, memory_per, compute_at, compute_per, floor = self.decode_line(decodes)
        context = self.base_sum + decodes * step
        memory0, compute0 = memory_at + memory_per * context, compute_at + compute_per * context
        memory_slope, compute_slope = memory_per * decodes, compute_per * decodes
        # The run stops at the step whose end reaches the next arrival, if a newcomer could join then.
        gap = self.next_arrival_s() - self.now - self.swap_s if can_join and steps > 1 else math.inf
        last = steps - 1
        leads_first = memory0 >= compute0
        if leads_first == (memory0 + memory_slope * last >= compute0 + compute_slope * last) and floor <= (
            memory0 if leads_first else compute0
        ):
            # One side leads throughout, above any floor (most runs): _pieces, _pieces_to_reach,
            # _clipped and _pieces_seconds on one piece, inline.
            first, slope = (memory0, memory_slope) if leads_first else (compute0, compute_slope)
            run_s = _piece_seconds(first, slope, 0, steps)
            if run_s >= gap:
                steps = _steps_to_reach(first, slope, gap, steps)
                run_s = _piece_seconds(first, slope, 0, steps)
            pieces = [(first, slope, 0, steps)]
        else:
            pieces = _pieces(memory0, memory_slope, compute0, compute_slope, steps, floor)
            if gap < math.inf:
                steps = _pieces_to_reach(pieces, gap)
                pieces = _clipped(pieces, 0, steps)
            run_s = _pieces_seconds(pieces)
        start = self.now
        seconds = self.swap_s + run_s
        self.now += seconds
        self.busy += seconds
        self.iterations += steps
        sizes = self.sizes
        sizes[decodes] = sizes.get(decodes, 0) + steps
        self.batch_seconds += len(self.running) * seconds
        if self.paged and steps > 1:  # take_blocks(step + 1, steps - 1)
            cycles, rest = divmod(steps - 1, BLOCK_TOKENS)
            self.free_blocks -= cycles * decodes + (self.phase_sum(step + 1, rest) if rest else 0)
        if len(pieces) == 1 and not self.swap_s and not swapped_in and not self.decoders and self.records_inline:
            # record_run on one piece with no swap copy: the first step's gap from the run's start
            # (its ``start_s + 0.0 + first + slope * 0 - start_s``, to the bit), then every
            # decoder waited first + slope * i at step i.
            gaps = self.gaps
            gaps.value.append(start + first - start)
            gaps.times.append(decodes)
            if steps == 2:
                gaps.value.append(first + slope)
                gaps.times.append(decodes)
            elif steps > 2:
                gaps.first.append(first)
                gaps.slope.append(slope)
                gaps.start.append(1)
                gaps.stop.append(steps)
                gaps.mult.append(decodes)
        else:
            self.record_decodes(pieces, start, steps, swapped_in)
        return step + steps

    def prefill_iteration(self, step: int, can_join: bool, single: bool, swapped_in: list[int]) -> int:
        """One iteration holding prefill tokens, or a run of them when chunked prefill feeds one
        long prompt a budgetful at a time."""
        config = self.config
        decodes = len(self.base)
        context = self.base_sum + decodes * step
        start = self.now
        if config.policy == "chunked":
            chunk = config.token_budget - decodes
            entry = self.prefilling[0]
            index, cached, target = entry
            if target - cached > chunk:  # only this prompt gets prefill tokens, and it does not finish
                steps = self.run_length(step, (target - cached - 1) // chunk, single)
                pairs = chunk * cached + chunk * (chunk + 1) / 2
                pieces = self.series(steps, decodes, context, chunk, cached, pairs, chunk, chunk * chunk)
                if can_join and steps > 1 and self.next_arrival_s() < math.inf:
                    steps = _pieces_to_reach(pieces, self.next_arrival_s() - self.now - self.swap_s)
                    pieces = _clipped(pieces, 0, steps)
                self.spend(self.swap_s + _pieces_seconds(pieces), steps)
                self.tally(decodes + chunk, steps)
                entry[1] += steps * chunk
                if index < self.traced:
                    self.span(index, "recompute" if index in self.redoing else "prefill", start, self.now, steps)
                if decodes:
                    self.take_blocks(step + 1, steps - 1)
                    self.record_decodes(pieces, start, steps, swapped_in)
                    return step + steps
                return step
        budget = config.token_budget - decodes if config.policy == "chunked" else math.inf
        new = cached_total = finished = 0
        pairs = 0.0
        chunks = []
        for entry in self.prefilling:
            if budget <= 0:
                break
            _, cached, target = entry
            chunk = min(target - cached, budget)
            budget -= chunk
            new += chunk
            cached_total += cached
            pairs += chunk * cached + chunk * (chunk + 1) / 2
            chunks.append((entry, chunk))
            finished += cached + chunk == target
        seconds = self.iteration_seconds(decodes, context, new, cached_total, pairs, finished)
        self.spend(self.swap_s + seconds, 1)
        sizes = self.sizes
        sizes[decodes + new] = sizes.get(decodes + new, 0) + 1
        if decodes:
            if self.swap_s or swapped_in or self.decoders or not self.records_inline:
                self.record_decodes([(seconds, 0.0, 0, 1)], start, 1, swapped_in)
            else:  # record_run on one iteration with no swap copy, to the bit
                self.gaps.value.append(start + seconds - start)
                self.gaps.times.append(decodes)
            step += 1
        for entry, chunk in chunks:
            index = entry[0]
            entry[1] += chunk
            if index < self.traced:
                self.span(index, "recompute" if index in self.redoing else "prefill", start, self.now, 1)
            if entry[1] == entry[2]:
                self.prefilling.popleft()  # chunks are taken in order, so a finished one is first
                self.prefilled(index, entry[2], step)
        return step

    # -- results --------------------------------------------------------------------------------

    def result(self) -> SimulationResult:
        config = self.config
        figures = request_figures(config, sent_times(self), self.admitted, self.first, self.finish, self.output)
        trace = request_traces(self, self.preempted_times)
        return SimulationResult(
            config=config,
            requests=config.requests,
            rejected=self.rejected,
            busy_s=self.busy,
            iterations=self.iterations,
            kv_blocks=self.capacity,
            trace=trace,
            itl_s=self.gaps.percentiles(),
            itl_mean_s=self.gaps.mean(),
            preemptions=self.preemptions,
            recomputed_tokens=self.recomputed_tokens,
            swapped_bytes=self.swapped_bytes,
            blocks_in_use=tuple((time, blocks) for time, blocks, _ in self.blocks_log or ()),
            cached_tokens=tuple((time, tokens) for time, _, tokens in self.blocks_log or ()),
            batch_seconds=self.batch_seconds,
            itl_count=self.gaps.count(),
            **prefix_counts([self]),
            **figures,
        )


def prefix_counts(runs: Sequence[Any]) -> dict[str, int | None]:
    """The prefix cache's counts summed over ``runs`` (replicas each with a cache of their own), as
    ``SimulationResult``'s fields; nothing when the runs have no prefix cache."""
    if runs[0].prefix is None:
        return {}
    return {
        "prefix_lookups": sum(run.prefix_lookups for run in runs),
        "prefix_hits": sum(run.prefix_hits for run in runs),
        "prefill_tokens_saved": sum(run.prefill_tokens_saved for run in runs),
        "prefix_tokens_queried": sum(run.prefix_tokens_queried for run in runs),
        "prefix_tokens_hit": sum(run.prefix_tokens_hit for run in runs),
        "prefix_cache_blocks": runs[0].cache_blocks,
        "prefix_evictions": sum(run.prefix.evictions for run in runs),
    }


def unset_times(count: int) -> array:
    """``count`` times not yet reached (a request's admission, first token, finish), as NaN in a
    typed array: 8 bytes a request, where a list of floats takes 32 (a million requests keep four)."""
    return array("d", [math.nan]) * count


def _time(value: float) -> float | None:
    """A time of ``unset_times`` as a trace gives it: None when never reached."""
    return None if math.isnan(value) else value


def sent_times(run: Any) -> Sequence[float]:
    """When each request of a finished run was sent: its arrival at the scheduler less the run's
    request overhead (``CostModel.request_overhead_s``); the arrivals themselves without one."""
    overhead = run.overhead
    return array("d", (arrival - overhead for arrival in run.arrival)) if overhead else run.arrival


def request_traces(run: Any, preemptions: Sequence[int] | None = None) -> tuple[RequestTrace, ...]:
    """The first ``run.traced`` requests of a finished run as RequestTraces, from the per-request
    lists every simulator here keeps (prompt, output, arrival, admitted, first, finish, spans);
    ``preemptions`` counts each request's preemptions where the run preempts."""
    return tuple(
        RequestTrace(
            id=index,
            prompt=run.prompt[index],
            output=run.output[index],
            arrival_s=run.arrival[index],
            admitted_s=_time(run.admitted[index]),
            first_token_s=_time(run.first[index]),
            finish_s=_time(run.finish[index]),
            spans=tuple((kind, start, end, count) for kind, start, end, count in run.spans[index]),
            **({} if preemptions is None else {"preemptions": preemptions[index]}),
        )
        for index in range(run.traced)
    )


def request_figures(
    config: ServingConfig,
    arrival: Sequence[float],
    admitted: Sequence[float],
    first: Sequence[float],
    finish: Sequence[float],
    output: Sequence[int],
) -> dict[str, Any]:
    """The per-request metrics of a run (see the module docstring), as ``SimulationResult``'s fields:
    over the requests that finished, TTFT, TPOT, latency and their percentiles and means, the queue
    wait, latency per output token, output tokens, the run's duration and goodput's count."""
    # Typed arrays, 8 bytes a request (a list of floats takes 32); each is sorted on its own below.
    ttfts, tpots, latencies, waits, per_token = (array("d") for _ in range(5))
    duration = 0.0
    output_tokens = good = 0
    for index in range(config.requests):
        done, start = finish[index], first[index]
        if math.isnan(done) or math.isnan(start):  # unset_times: not finished
            continue
        ttft, latency = start - arrival[index], done - arrival[index]
        ttfts.append(ttft)
        latencies.append(latency)
        per_token.append(latency / output[index])
        waits.append((0.0 if math.isnan(admitted[index]) else admitted[index]) - arrival[index])
        output_tokens += output[index]
        duration = max(duration, done)
        tpot = (done - start) / (output[index] - 1) if output[index] > 1 else None
        if tpot is not None:
            tpots.append(tpot)
        if ttft <= config.ttft_slo_s and (tpot is None or tpot <= config.tpot_slo_s):
            good += 1

    def mean(values: Sequence[float]) -> float | None:
        return math.fsum(values) / len(values) if values else None

    def ranked(values: Sequence[float]) -> dict[int, float | None]:
        ordered = sorted(values)  # one list at a time, dropped once its percentiles are read
        return {p: percentile(ordered, p) for p in PERCENTILES}

    latency_sum, completed = math.fsum(latencies), len(latencies)
    return {
        "ttft_mean_s": mean(ttfts),
        "tpot_mean_s": mean(tpots),
        "completed": completed,
        "duration_s": float(duration),
        "output_tokens": output_tokens,
        "ttft_s": ranked(ttfts),
        "tpot_s": ranked(tpots),
        "latency_s": ranked(latencies),
        "latency_mean_s": latency_sum / completed if completed else None,
        "queue_wait_mean_s": mean(waits),
        "good": good,
        "latency_sum_s": latency_sum,
        "normalized_latency_mean_s": mean(per_token),
    }


def simulate(
    hardware: Hardware, workload: Workload, config: ServingConfig, split: Split | None = None, costs: Any = None
) -> SimulationResult:
    """Serve ``config.requests`` requests and measure them: ``finished_run(...).result()``."""
    return finished_run(hardware, workload, config, split, costs=costs).result()


def finished_run(
    hardware: Hardware,
    workload: Workload,
    config: ServingConfig,
    split: Split | None = None,
    factory: Any = None,
    costs: Any = None,
) -> _Run:
    """Serve ``config.requests`` requests of ``workload.model`` (at its weight and KV precisions;
    its batch, context and prompt are not used) on ``hardware``; the finished run, whose
    ``result()`` measures it.

    With a ``split`` (``deployment.Split``), on ``split.gpus`` GPUs split that way instead of
    ``hardware.count``: tensor parallelism alone is ``hardware`` with ``split.tp`` GPUs; with
    pipeline stages each iteration takes ``deployment.PipelineCosts``' round of micro-batches
    through the stages (``roofline estimate --parallel``'s rules), and the cache holds the
    blocks the binding stage has room for.

    With ``costs`` (``epdeploy.ExpertCosts``: an expert-parallel layout), every iteration is
    timed by it instead, and the cache holds its ``kv_blocks``; ``split`` is then None.

    Raises SpecError when the weights leave no room for a KV cache, when the model has
    sliding-window layers (the simulator counts every layer's cache as growing with the
    request, which would overstate a windowed model's memory and reads), when swapping
    is asked of a GPU whose spec has no host link, or when paged admission thrashes past
    ``MAX_STEPS_PER_REQUEST`` scheduling steps a request.
    """
    model = workload.model
    if model.sliding_window:
        raise SpecError(
            f"{model.id} has sliding-window layers, which the simulator does not model yet",
            field="model",
            hint="simulate a model whose every layer is global (roofline list models)",
        )
    if config.preemption == "swap" and hardware.gpu.host_link_bytes_per_s is None:
        raise SpecError(
            f"{hardware.gpu.id} has no host link in its spec, so KV blocks cannot be swapped to host memory",
            field="preemption",
            hint="use --preemption recompute, or add host_link_bytes_per_s and host_link_source to its entry",
        )
    if split is not None and split.pp == 1:
        check_split(hardware, model, split)
        hardware, split = replace(hardware, count=split.tp), None
    if costs is not None:
        capacity = costs.kv_blocks
    else:
        costs = iteration_costs(hardware, workload) if split is None else pipeline_costs(hardware, workload, split)
        capacity = kv_blocks_available(hardware, workload, split)
    # ``factory`` builds the run instead of ``_Run`` (``fleet``: one replica's share of a stream).
    run = (factory or _Run)(costs, config, capacity, hardware.costs.request_overhead_s)
    if config.policy == "static":
        run.run_static()
    else:
        run.run_iterative()
    return run


def simulate_expected(
    hardware: Hardware,
    workload: Workload,
    config: ServingConfig,
    calibration: Calibration,
    split: Split | None = None,
) -> SimulationResult:
    """The same run at ``calibration``'s expected costs for ``hardware``'s GPU (``simulate
    --costs expected``): every iteration is timed by ``IterationCosts`` at the fitted shares of
    bandwidth and peak, plus the fitted overheads and all-reduce latency. Its throughput, mean
    TTFT, ITL and TPOT get their band from ``expected_costs(hardware, workload, calibration).bands``,
    the same grounding that fixed the costs here (widened where the fit has no rows)."""
    gpus = split.gpus if split is not None else None
    costs = expected_costs(hardware, workload, calibration, gpus=gpus).costs
    return simulate(replace(hardware, costs=costs), workload, config, split)
