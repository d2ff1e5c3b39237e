"""Serving with speculative decoding: continuous batching in which every decode iteration verifies.

The scheduler is ``serving``'s ``continuous`` policy with ``reserve`` admission: requests
arrive as ``serving`` draws them (the same seed gives the same arrivals, prompts and
outputs), start first come first served while the batch (``max_batch``) and the KV
blocks of their whole prompt plus output allow, and a newcomer's prompt is prefilled in
the next iteration beside the running requests' decodes, which gives its first token.
What speculation changes is each decode:

- **Verification.** Each iteration checks γ+1 tokens of every decoding request in one
  pass, as ``speculative.verification_iteration`` prices it: the weights and layer math
  of ``decodes * (γ+1)`` tokens, each request's cache read once, and γ+1 queries'
  attention over it. The newcomers' prompts ride in the same pass.
- **Drafting.** Before the pass, γ draft steps for the decoding requests: the draft
  model's own decode iteration at their batch and context (``iteration_costs`` of the
  draft, at the target's precisions), or ``draft_cost`` times the target's plain decode
  iteration, or nothing (a free draft, as prompt lookup nearly is). A head with a fusion
  layer (EAGLE-3) runs it on the first of the γ steps only (``speculative.without_fusion``).
- **Timing.** An iteration of decodes alone, the common kind, is timed from two lines per batch
  size (``serving.iteration_line``: the verification's and the draft step's times are each linear
  in the total context), worked out once, as ``serving`` times plain decodes; an iteration with a
  newcomer's prefill is priced pass by pass.
- **Emitted tokens.** After the pass each decoding request accepts a random number of
  draft tokens and emits those plus the target's own token, capped at what its output
  still needs. A request's rounds are all drawn when it gets its first token, from a
  stream of its own (``RoundDraws``: a hash of the seed and its index, nothing else), so a
  request's rounds are the same whatever runs beside it. Its tokens of one round arrive
  together: the first after a gap of one iteration, the others with a gap of 0.
- **Runs.** Between two events (an arrival, a request's last round) nothing but the
  context changes, so the iterations between them are worked out at once: in closed form
  when every round's tokens are fixed (``fixed_run``, to within a few units in the last
  place), else over the list of contexts the drawn rounds give (``drawn_run``, every figure
  to the bit what stepping iteration by iteration gives). Nothing is kept a token or a
  request's round: the rounds of all requests are summed, as they are drawn, into one
  integer of per-iteration fields, and a request keeps only when its last round comes.

The metrics (``serving.SimulationResult``) count emitted tokens: TPOT = (finish - first
token) / (output - 1), throughput = output tokens / duration. With no speculation
(``drafting=None``) every decode emits one token and the run is ``serving.simulate``'s
continuous, reserve-admission run, iteration for iteration.

Left out: the draft model's weights and cache are not taken from the KV pool, a round's
γ draft steps are timed at the context the round starts from, and the slots a rejected
draft token wrote are not counted against the reserved blocks (reserve holds the whole
output anyway).
"""

from __future__ import annotations

import hashlib
import heapq
import math
import sys
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, replace
from functools import reduce
from itertools import accumulate, repeat
from operator import add, mul, sub
from typing import Any

from .errors import SpecError
from .performance import Hardware, IterationCosts, Pass, Workload, iteration_costs, pass_seconds
from .serving import (
    LINE_PROBE,
    Piece,
    ServingConfig,
    SimulationResult,
    _clipped,
    _Gaps,
    _pieces,
    _pieces_seconds,
    _pieces_to_reach,
    blocks_for,
    draw_traffic,
    iteration_line,
    kv_blocks_available,
    request_figures,
    request_traces,
    sent_times,
    unset_times,
)
from .specs import ModelSpec
from .speculative import check_alpha, check_draft, check_gamma, tokens_per_step, without_fusion

#: A draft cost above this is a typo: a drafter ten times slower than the target never pays.
MAX_DRAFT_COST = 10.0
#: Most output tokens a speculative run may emit, ``requests * longest output``: with drawn rounds it
#: keeps one gap entry an iteration and hashes a byte a round, so its time and memory grow with the
#: iterations. Measured (2-core machine, 2026-12-06, γ 4, α 0.6, a free draft, CPU seconds): 100,000
#: requests of the default 256 tokens, 3.7–4.3 s and 84–100 MB; 1,000 × 10,000, 0.3–0.36 s; 1,000 ×
#: 100,000, whose reserved blocks hold the batch to about 5 (10.8 million iterations), 8.4–13.2 s and
#: 250 MB (370 MB before the percentiles kept a bracket's gaps in typed arrays); 3,000 × 100,000, at
#: this limit, 32–39 s and 1.1 GB before that change (the spread is the machine's load). On a slower
#: machine the next day, with the rounds hashed and a gap's count in 4 bytes: 100,000 requests 6.2–6.6
#: s and 79 MB (the plain run 3.1–3.3 s), 1,000 × 100,000 12 s and 218 MB (wall clock). 10,000 of
#: 100,000 (a billion tokens) are refused at once.
MAX_SPECULATIVE_TOKENS = 300_000_000
#: Iterations a run may take per request before it is stopped: each iteration emits at least one
#: token of some running request, so a run can never need more than its outputs' total plus its prompts.
_MAX_ITERATIONS_PER_REQUEST = 1_000_000
#: ``pending``'s fields are packed little-endian; an array of them is read in the host's order.
_BIG_ENDIAN = sys.byteorder == "big"
#: A drawn run of this many iterations or more has its gaps sorted where they lie (``_Gaps.sort_last``), so
#: the percentiles find their part of it by bisection: 1,000 requests of 100,000 tokens make 10.8 million
#: gaps in runs of thousands.
_SORTED_STEPS = 256
#: Runs of drawn rounds up to this many iterations are stepped in a plain loop (``drawn_steps``) where
#: they can be; longer ones are worked out over lists.
_LOOPED_STEPS = 24


@dataclass(frozen=True)
class Drafting:
    """How the simulated server speculates: γ draft tokens a round, each accepted with probability α,
    drafted by ``draft`` (its own decode step), at ``draft_cost`` of the target's step, or for free."""

    gamma: int
    alpha: float
    draft: ModelSpec | None = None
    draft_cost: float | None = None

    def __post_init__(self) -> None:
        check_gamma(self.gamma, "speculate_gamma")
        check_alpha(self.alpha, "speculate_alpha")
        cost = self.draft_cost
        if cost is not None and (
            isinstance(cost, bool) or not isinstance(cost, (int, float)) or not 0 <= cost <= MAX_DRAFT_COST
        ):
            raise SpecError(
                f"must be between 0 and {MAX_DRAFT_COST:g}, got {cost!r}",
                field="draft_cost",
                hint="the draft's step over the target's: 0 for a free draft, about 0.1 for a model a tenth the size",
            )

    @property
    def tokens_per_round(self) -> float:
        """``τ(α, γ)``: what one request's round emits on average, before its output's end cuts it."""
        return tokens_per_step(self.alpha, self.gamma)

    @property
    def drafter(self) -> str:
        """Where the draft's cost comes from: "given", a draft model's id, or "free"."""
        return "given" if self.draft_cost is not None else self.draft.id if self.draft else "free"


@dataclass(frozen=True)
class SpeculativeSimulation:
    """A run with speculation: the usual metrics, and what the rounds emitted."""

    result: SimulationResult
    drafting: Drafting | None
    #: Verification rounds: one per decoding request per iteration.
    rounds: int
    #: Accepted draft tokens plus one, summed over the rounds, as drawn (before an output's end cut them).
    drawn_tokens: int
    #: Tokens the rounds emitted (the first token of each request, from its prefill, not included).
    emitted_tokens: int
    notes: tuple[str, ...] = ()

    @property
    def tokens_per_round(self) -> float | None:
        """Drawn tokens per round: the simulated τ, which should approach ``Drafting.tokens_per_round``."""
        return self.drawn_tokens / self.rounds if self.rounds else None

    def to_dict(self, *, trace: bool = False) -> dict[str, Any]:
        """``SimulationResult.to_dict`` plus a ``speculation`` object (None without speculation)."""
        figures = self.result.to_dict(trace=trace)
        drafting = self.drafting
        figures["speculation"] = (
            None
            if drafting is None
            else {
                "gamma": drafting.gamma,
                "alpha": drafting.alpha,
                "drafter": drafting.drafter,
                "draft_cost": drafting.draft_cost,
                "expected_tokens_per_round": drafting.tokens_per_round,
                "tokens_per_round": self.tokens_per_round,
                "rounds": self.rounds,
                "emitted_tokens": self.emitted_tokens,
                "notes": list(self.notes),
            }
        )
        return figures


def _draft_pass(
    drafting: Drafting | None, costs: IterationCosts, draft_costs: IterationCosts | None
) -> tuple[Any, float]:
    """One draft step for ``decodes`` requests at total context ``context``, as ``(pass, scale)``: its
    seconds are ``scale * pass(decodes, context).seconds``. The draft model's own decode iteration
    (scale 1), ``draft_cost`` times the target's plain one, or none (a free draft: scale 0)."""
    if drafting is not None and drafting.draft_cost is not None:
        return costs.iteration, drafting.draft_cost
    if drafting is not None and draft_costs is not None:
        return draft_costs.iteration, 1.0
    return costs.iteration, 0.0


def _draft_costs(
    hardware: Hardware, workload: Workload, drafting: Drafting | None
) -> tuple[IterationCosts | None, IterationCosts | None]:
    """The draft model's iteration costs for its first step and for the later ones (the same but
    for a head with a fusion layer, which runs it first only), or (None, None) without a draft
    model to time."""
    if drafting is None or drafting.draft is None or drafting.draft_cost is not None:
        return None, None
    draft = drafting.draft
    first = iteration_costs(hardware, Workload(draft, workload.weight_precision, workload.kv_precision))
    if not draft.fusion_input_size:
        return first, first
    later = Workload(without_fusion(draft), workload.weight_precision, workload.kv_precision)
    return first, iteration_costs(hardware, later)


def verification_with_prefill(
    costs: IterationCosts, decodes: int, context: float, tokens_per_user: int, new: int, pairs: float, prompts: int
) -> Pass:
    """One iteration: ``tokens_per_user`` tokens verified for each of ``decodes`` requests whose caches
    hold ``context`` tokens in all (each cache read once, each token's attention over it), plus
    ``prompts`` whole prompts of ``new`` tokens and ``pairs`` attention pairs prefilled beside them.

    ``IterationCosts.iteration`` of ``decodes * tokens_per_user`` decode tokens reads the caches
    once and does one query's attention over them; the other ``tokens_per_user - 1`` queries'
    attention is added to its math, at the rate the pass was timed at."""
    timed, flops, compute_s = _verification_parts(costs, decodes, context, tokens_per_user, new, pairs, prompts)
    if flops == timed.flops:
        return timed
    # Every other field as timed: the all-reduces, the overheads and a widening kernel's time.
    return replace(timed, flops=flops, compute_s=compute_s)


def verification_seconds(
    costs: IterationCosts, decodes: int, context: float, tokens_per_user: int, new: int, pairs: float, prompts: int
) -> float:
    """``verification_with_prefill(...).seconds``, to the bit, without building a second ``Pass``
    (a speculative run prices every iteration that holds a prefill this way)."""
    timed, _, compute_s = _verification_parts(costs, decodes, context, tokens_per_user, new, pairs, prompts)
    return pass_seconds(
        timed.memory_s, compute_s, timed.overlapped_s, timed.communication_s, timed.overhead_s, timed.dequantize_s
    )


def _verification_parts(
    costs: IterationCosts, decodes: int, context: float, tokens_per_user: int, new: int, pairs: float, prompts: int
) -> tuple[Pass, float, float]:
    """The pass as timed for one query a request, and the verification's flops and compute time:
    ``extra = (tokens_per_user - 1) · attention flops per cached token · context`` added to the math,
    at the rate the pass was timed at (``compute_s · flops / timed flops``)."""
    timed = costs.iteration(decodes * tokens_per_user, context, new, 0, pairs, prompts)
    extra = (tokens_per_user - 1) * costs.decode_attention_flops_per_cached_token * context
    if not extra:
        return timed, timed.flops, timed.compute_s
    flops = timed.flops + extra
    return timed, flops, timed.compute_s * flops / timed.flops


def fixed_round_tokens(drafting: Drafting | None) -> int | None:
    """Tokens every round draws when no draw can change them, else None: 1 without speculation or
    with α = 0 (every draft token rejected), γ + 1 with α = 1 (``RoundDraws`` compares a draw in
    [0, 2^64) with α^i · 2^64, so 0 never accepts and 1 always does). Such a run draws nothing and
    times its rounds a run of iterations at a time in closed form (``_SpeculativeRun.fixed_run``)."""
    if drafting is None or drafting.alpha == 0.0 or drafting.gamma == 0:
        return 1
    if drafting.alpha == 1.0:
        return drafting.gamma + 1
    return None


#: Bits of one round's draw: a uniform integer u in [0, 2^64), so P(u < T) = T / 2^64 exactly.
_DRAW_BITS = 64
#: Bytes of a draw below its top byte, read only where the top byte leaves the count open.
_LOW_BYTES = _DRAW_BITS // 8 - 1
#: Draws whose low bytes open a request's stream 0, before its top bytes: most requests need no more
#: (at γ 4 about 1 round in 64 needs them), so they need no second stream.
_POOLED_LOWS = 8
_POOL_BYTES = _LOW_BYTES * _POOLED_LOWS
#: Extra rounds drawn beyond the expected count R, plus √R (the count's spread is under √R), so one
#: batch of draws nearly always reaches the output.
_SPARE_ROUNDS = 16


def round_stream(seed: int, index: int, part: int) -> Any:
    """Request ``index``'s stream ``part`` (0: the draws' top bytes, 1: their low bytes): SHAKE-128
    (FIPS 202's extendable-output hash) of the part's byte, then ``index · 2^64 + seed`` as 16
    bytes, little-endian (a seed is below 2^64, ``serving.SEED_RANGE``, so no two share a key)."""
    return hashlib.shake_128(bytes((part,)) + ((index << 64) | seed).to_bytes(16, "little"))


class RoundDraws:
    """Each request's rounds, drawn when it gets its first token: one 64-bit draw u a round from the
    request's own byte streams (``round_stream``), so a request's rounds depend on the seed and its
    index only, never on what else runs or when. Stream 0 opens with a pool of ``_POOLED_LOWS``
    draws' low bytes, then holds one top byte a round, round j's at byte ``_POOL_BYTES + j``. Where a
    round's top byte alone does not settle it (a threshold lies inside its range of draws: at most γ
    top bytes in 256), its 7 low bytes, little-endian, are the next unread of the pool, then of stream
    1. So each u is uniform and independent of the others, and a round hashes one byte, not eight.

    Hash streams, not a Mersenne Twister seeded a request: seeding one builds 2.5 kB of state from
    the key, which cost more than drawing a request's hundred rounds (0.36 s of a 100,000-request
    run's 3.7 s).

    A round accepts at least i draft tokens when its draw u is below ``T_i``, the ceiling of
    ``α^i · 2^64`` worked out exactly from α's binary fraction, so P(accepted ≥ i) is α^i to
    within 2^-64, as for γ independent draws each kept with probability α (``speculative``'s
    capped geometric run); it emits the accepted tokens plus the target's own. The count is read
    from the draw's top byte through a 256-entry table (``bytes.translate``, over all of a request's
    rounds at once); only a draw whose top byte holds a threshold is compared with the thresholds
    themselves (``bisect``)."""

    def __init__(self, alpha: float, gamma: int, seed: int) -> None:
        self.gamma, self.seed = gamma, seed
        self.tokens_per_round = tokens_per_step(alpha, gamma)
        numerator, denominator = float(alpha).as_integer_ratio()
        thresholds = [-((-(numerator**i) << _DRAW_BITS) // denominator**i) for i in range(1, gamma + 1)]
        #: The thresholds from the smallest (T_γ) up: ``bisect_right`` counts those at or below u.
        self.ascending = thresholds[::-1]
        shift = _DRAW_BITS - 8
        table = bytearray(256)
        for top in range(256):
            low, high = top << shift, (top + 1) << shift
            if not any(low < threshold < high for threshold in thresholds):  # else 0: look closer
                table[top] = 1 + sum(threshold >= high for threshold in thresholds)
        self.table = bytes(table)

    def closer(self, chunk: bytes, data: bytes, at_top: int, looked: int, index: int) -> tuple[bytearray, int]:
        """``chunk``'s rounds with every 0 (a top byte whose range holds a threshold) worked out from
        the whole draw: γ + 1 less the thresholds at or below it. The rounds' top bytes are ``data``'s
        (stream 0 from its start) from ``at_top`` on; their low bytes are the next after the
        ``looked`` already read, in the pool, then stream 1. Returns the rounds and the lows read."""
        ascending, most = self.ascending, self.gamma + 1
        lows = data[:_POOL_BYTES]
        past = looked + chunk.count(0) - _POOLED_LOWS
        if past > 0:
            lows += round_stream(self.seed, index, 1).digest(_LOW_BYTES * past)
        rounds = bytearray(chunk)
        at = rounds.find(0)
        while at >= 0:
            offset = _LOW_BYTES * looked
            draw = (data[at_top + at] << 8 * _LOW_BYTES) | int.from_bytes(lows[offset : offset + _LOW_BYTES], "little")
            rounds[at] = most - bisect_right(ascending, draw)
            looked += 1
            at = rounds.find(0, at + 1)
        return rounds, looked

    def tokens(self, index: int, need: int) -> bytearray:
        """Request ``index``'s rounds as the tokens each emits (one byte a round, 1 to γ + 1): as many
        rounds as it takes for them to reach ``need`` tokens, the last as drawn (it may overshoot)."""
        return self.drawn(index, need)[0]

    def drawn(self, index: int, need: int) -> tuple[bytearray, int]:
        """``tokens(index, need)`` and their sum. Drawn in batches of about the expected count; a batch
        after the first reads the streams on from where the last stopped, so the rounds are the same
        however the streams are cut."""
        table = self.table
        stream = round_stream(self.seed, index, 0)
        out = bytearray()
        total = read = looked = 0
        while True:  # until the rounds reach ``need``
            left = need - total
            expected = int(left / self.tokens_per_round)
            count = min(left, expected + math.isqrt(expected) + _SPARE_ROUNDS)  # each round emits ≥ 1
            # SHAKE gives its output from the start on each call: a later batch skips what was read.
            data = stream.digest(_POOL_BYTES + read + count)
            chunk = data[_POOL_BYTES + read :].translate(table)
            if 0 in chunk:
                chunk, looked = self.closer(chunk, data, _POOL_BYTES + read, looked, index)
            out += chunk
            total += sum(chunk)
            if total >= need:
                break
            read += count
        # Drop the rounds past the one that reached ``need``: the last d go while their tokens, at least
        # d, are at most the excess, so only the last ``excess`` rounds' running sums are looked at.
        excess = total - need
        if excess:
            dropped = list(accumulate(reversed(out[-excess:])))
            drop = bisect_right(dropped, excess)
            if drop:
                del out[-drop:]
                total -= dropped[drop - 1]
        return out, total


def simulate_speculative(
    hardware: Hardware, workload: Workload, config: ServingConfig, drafting: Drafting | None
) -> SpeculativeSimulation:
    """Serve ``config``'s requests of ``workload.model`` on ``hardware`` with continuous batching and
    reserved blocks, every decode iteration verifying ``drafting.gamma + 1`` tokens per request
    (plain decoding when ``drafting`` is None); see the module docstring.

    Raises SpecError for a policy other than ``continuous``, a model with sliding-window layers
    (as ``serving.simulate`` does), or a draft model whose vocabulary is not the target's with no
    ``draft_cost`` given (with one, the difference is stated in ``notes``).
    """
    model = workload.model
    tokens = config.requests * config.output.high
    if drafting is not None and tokens > MAX_SPECULATIVE_TOKENS:  # before anything is drawn
        raise SpecError(
            f"{config.requests:,} requests of up to {config.output.high:,} output tokens are {tokens:,} tokens,"
            f" past the {MAX_SPECULATIVE_TOKENS:,} a speculative run may emit",
            field="requests",
            hint="fewer --requests or a shorter --output",
        )
    if config.prefix_caching:
        raise SpecError(
            "prefix caching is not simulated with speculation yet",
            field="prefix_tokens" if config.prefix_share is None else "prefix_share",
            hint="leave out the --prefix options or the --speculate options",
        )
    if config.policy != "continuous":
        raise SpecError(
            f"speculation is simulated under continuous batching only, got {config.policy!r}",
            field="policy",
            hint="use --policy continuous",
        )
    if model.sliding_window:
        raise SpecError(
            f"{model.id} has sliding-window layers, which the simulator does not model yet",
            field="model",
            hint="simulate a model whose every layer is global (roofline list models)",
        )
    notes: tuple[str, ...] = ()
    if drafting is not None and drafting.draft is not None:
        notes = check_draft(model, drafting.draft, drafting.draft_cost is not None)
    first_costs, later_costs = _draft_costs(hardware, workload, drafting)
    config = replace(config, admission="reserve")
    costs = iteration_costs(hardware, workload)
    overhead = hardware.costs.request_overhead_s
    run = _SpeculativeRun(
        costs, config, kv_blocks_available(hardware, workload), drafting, first_costs, later_costs, overhead
    )
    run.serve()
    return SpeculativeSimulation(run.result(), drafting, run.rounds, run.drawn, run.emitted, notes)


#: How far one line must lead the other at both ends of a range for ``_leading`` to call it the max
#: all along: far above the few units in the last place that computing either line can be off by.
_LEAD = 1e-12


def _leading(lines: tuple[float, float, float, float], low: int, high: int) -> tuple[float, float] | None:
    """The line ``(a, b)`` that ``max(a + b·D, c + d·D)`` returns for every D from ``low`` to ``high``
    (``lines`` is ``(a, b, c, d)``), or None where neither leads by a clear margin at both ends. The
    difference of two lines is linear, so a lead at both ends is a lead all along, and by a margin
    no rounding undoes, so ``max`` would pick that line's value, computed the same way, at each D."""
    first, slope, other, other_slope = lines
    if first == other and slope == other_slope:
        return first, slope
    at_low, other_low = first + slope * low, other + other_slope * low
    at_high, other_high = first + slope * high, other + other_slope * high
    if at_low - other_low > _LEAD * abs(at_low) and at_high - other_high > _LEAD * abs(at_high):
        return first, slope
    if other_low - at_low > _LEAD * abs(other_low) and other_high - at_high > _LEAD * abs(other_high):
        return other, other_slope
    return None


def _line_maxima(lines: tuple[float, float, float, float], contexts: list[int]) -> Any:
    """``max(a + b·D, c + d·D)`` for each D of ``contexts`` (increasing), lazily and in C, in
    ``round_seconds``' operations and order, for the two lines ``(a, b, c, d)``: the leading line's
    values alone where one leads all along (``_leading``)."""
    lead = _leading(lines, contexts[0], contexts[-1])
    if lead is not None:
        return map(add, repeat(lead[0]), map(mul, repeat(lead[1]), contexts))
    first, slope, other, other_slope = lines
    return map(
        max,
        map(add, repeat(first), map(mul, repeat(slope), contexts)),
        map(add, repeat(other), map(mul, repeat(other_slope), contexts)),
    )


def _summed(verify: list[Piece], draft: list[Piece], gamma: int) -> list[Piece]:
    """Steps each taking its verification piece's time plus ``gamma`` times its draft piece's
    (both lists cover the same steps), cut wherever either list is."""
    out: list[Piece] = []
    i = j = start = 0
    while i < len(verify) and j < len(draft):
        verify_first, verify_slope, _, verify_stop = verify[i]
        draft_first, draft_slope, _, draft_stop = draft[j]
        stop = min(verify_stop, draft_stop)
        out.append((verify_first + gamma * draft_first, verify_slope + gamma * draft_slope, start, stop))
        start = stop
        i += verify_stop == stop
        j += draft_stop == stop
    return out


class _SpeculativeRun:
    """The mutable state of one run; ``simulate_speculative`` is its only user."""

    def __init__(
        self,
        costs: IterationCosts,
        config: ServingConfig,
        capacity: int,
        drafting: Drafting | None,
        draft_costs: IterationCosts | None,
        later_costs: IterationCosts | None = None,
        request_overhead_s: float = 0.0,
    ) -> None:
        self.costs, self.config, self.capacity, self.drafting = costs, config, capacity, drafting
        #: As ``serving._Run``'s: arrivals are at the scheduler, the times count from the send.
        self.overhead = request_overhead_s
        self.gamma = 0 if drafting is None else drafting.gamma
        self.draft_pass, self.draft_scale = _draft_pass(drafting, costs, draft_costs)
        #: The steps after a round's first: the same pass but for a head with a fusion layer.
        self.later_pass = self.draft_pass if later_costs is None else later_costs.iteration
        #: A decode-only iteration's time by its number of decodes (``round_line``), worked out once each.
        self.round_lines: dict[int, tuple[tuple[float, float, float, float], tuple[float, float, float, float]]] = {}
        #: By batch size, a range of contexts over which one line of each pair leads (``lines_leading``).
        self.leads: dict[int, tuple[int, int, Any, Any]] = {}
        # The traffic, drawn exactly as serving._Run draws it.
        count = config.requests
        self.arrival, self.prompt, self.output = draw_traffic(config, count)
        if request_overhead_s:
            self.arrival = array("d", (sent + request_overhead_s for sent in self.arrival))
        self.issued = count if config.concurrency is None else min(config.concurrency, count)
        self.admitted, self.first, self.finish = unset_times(count), unset_times(count), unset_times(count)
        self.free_blocks = capacity
        self.queue: list[int] = []
        self.head = 0  # the queue's first waiting entry (a list read from the front)
        self.next_arrival = 0
        self.running: dict[int, None] = {}
        self.newcomers: list[int] = []
        self.rejected = 0
        self.now = self.busy = self.batch_seconds = 0.0
        #: Tokens cached by the running requests past their prefill: the next round's total context.
        self.context = 0
        self.iterations = self.rounds = self.drawn = self.emitted = 0
        #: Every gap as runs of equal gaps (``serving._Gaps``): a round's tokens arrive together, so an
        #: iteration adds one run for its decoders' gaps and a count of zero gaps, never one entry a token.
        self.gaps = _Gaps()
        self.zero_gaps = 0
        self.traced = min(config.trace_requests, count)
        self.spans: list[list[list]] = [[] for _ in range(self.traced)]
        #: Tokens every round draws when that is fixed (``fixed_round_tokens``), else None: then each
        #: request's rounds are drawn when it gets its first token (``draws``).
        self.fixed = fixed_round_tokens(drafting)
        self.draws = None if self.fixed or drafting is None else RoundDraws(drafting.alpha, drafting.gamma, config.seed)
        #: ``(iteration of its last round, request)`` for every decoding request, a heap: all of a
        #: request's rounds are known from its first token, so nothing of it changes until the last.
        self.ends: list[tuple[int, int]] = []
        self.traced_decoders: list[int] = []  # traced requests now decoding
        #: With drawn rounds, the tokens the decoders' rounds add to the context in each iteration to
        #: come, summed over the decoders, as one integer of ``field_bits``-bit fields: the lowest is
        #: this iteration's (``self.iterations``). A request adds its rounds' fields when it gets its
        #: first token; an iteration takes its field off the bottom. A field holds at most
        #: ``max_batch * (γ + 1)``, so it is 16 bits wide unless that could overflow it.
        self.pending = 0
        field_bytes = 2 if min(config.max_batch, count) * (self.gamma + 1) < 1 << 16 else 4
        self.field_type = next(code for code in "HIL" if array(code).itemsize == field_bytes)
        self.field_bytes, self.field_bits = field_bytes, 8 * field_bytes
        self.field_mask = (1 << self.field_bits) - 1

    # -- arrivals and admission ----------------------------------------------------------------

    def enqueue_arrivals(self) -> None:
        while self.next_arrival < self.issued and self.arrival[self.next_arrival] <= self.now:
            index = self.next_arrival
            self.next_arrival += 1
            if blocks_for(self.prompt[index] + self.output[index]) > self.capacity:
                self.rejected += 1
                self.issue_next(self.arrival[index])
            else:
                self.queue.append(index)

    def issue_next(self, when: float) -> None:
        """Closed loop: the client whose request just ended sends the next one now."""
        if self.config.concurrency is not None and self.issued < self.config.requests:
            self.arrival[self.issued] = when + self.overhead
            self.issued += 1

    def admit(self) -> None:
        """First come first served while the batch and the free blocks allow."""
        while self.head < len(self.queue) and len(self.running) < self.config.max_batch:
            index = self.queue[self.head]
            cost = blocks_for(self.prompt[index] + self.output[index])
            if cost > self.free_blocks:
                break
            self.head += 1
            self.free_blocks -= cost
            self.running[index] = None
            self.admitted[index] = self.now
            self.newcomers.append(index)

    def complete(self, index: int) -> None:
        self.finish[index] = self.now
        self.context -= self.prompt[index] + self.output[index]  # it has emitted its whole output
        del self.running[index]
        self.free_blocks += blocks_for(self.prompt[index] + self.output[index])
        self.issue_next(self.now)

    def span(self, index: int, kind: str, start: float, end: float, iterations: int = 1) -> None:
        """Record that traced request ``index`` took part in iterations from start to end."""
        spans = self.spans[index]
        if spans and spans[-1][0] == kind and spans[-1][2] == start:
            spans[-1][2] = end
            spans[-1][3] += iterations
        else:
            spans.append([kind, start, end, iterations])

    # -- the loop --------------------------------------------------------------------------------

    def serve(self) -> None:
        limit = _MAX_ITERATIONS_PER_REQUEST * self.config.requests
        arrival, queue, running, max_batch = self.arrival, self.queue, self.running, self.config.max_batch
        between = self.fixed_run if self.fixed else self.drawn_run  # the iterations up to the next event
        while True:
            if self.next_arrival < self.issued and arrival[self.next_arrival] <= self.now:
                self.enqueue_arrivals()
            if self.head < len(queue) and len(running) < max_batch:
                self.admit()
            if not running:
                if self.next_arrival >= self.issued:
                    return
                self.now = max(self.now, arrival[self.next_arrival])
                continue
            if not self.newcomers and between():
                continue
            self.iteration()
            self.iterations += 1
            if self.iterations > limit:  # pragma: no cover - every iteration emits a token
                raise AssertionError("the speculative simulator made no progress")

    def fixed_run(self) -> bool:
        """With fixed rounds (``self.fixed``), the iterations of decodes alone before the next one in
        which a request finishes or a request arrives, as one run. False when there are none (the
        next iteration is not of them).

        Between those events nothing else changes (admission waits for an arrival or a finish) but
        the context, which grows by k tokens a decoder each iteration, so iteration i takes
        ``max(verify lines at D_i) + γ · max(draft lines at D_i)`` with D_i = D_0 + k·decoders·i:
        a sum of two maxima of lines, linear in i but at the at most two steps where a lead changes
        (``serving._pieces`` finds them). The run's time is each piece's closed-form sum
        (``serving._pieces_seconds``), it ends at the first step whose end reaches the next arrival
        (``serving._pieces_to_reach``), and its gaps are recorded a piece at a time, ``decoders``
        requests each waiting ``first + slope · i`` at step i: the work and the memory are a
        piece's, not an iteration's, as for ``serving``'s plain decode runs.
        """
        last, iteration = self.ends[0][0], self.iterations
        due = self.arrival[self.next_arrival] if self.next_arrival < self.issued else math.inf
        if iteration >= last or due <= self.now:
            return False
        decoders, context = len(self.running), self.context
        added = self.fixed * decoders  # tokens the decoders' rounds add to the context
        (v0, v1, v2, v3), (d0, d1, d2, d3) = self.round_line(decoders)
        steps = last - iteration
        pieces = _summed(
            _pieces(v0 + v1 * context, v1 * added, v2 + v3 * context, v3 * added, steps),
            _pieces(d0 + d1 * context, d1 * added, d2 + d3 * context, d3 * added, steps),
            self.gamma,
        )
        if due < math.inf:
            steps = _pieces_to_reach(pieces, due - self.now)
            pieces = _clipped(pieces, 0, steps)
        seconds = _pieces_seconds(pieces)
        for first, slope, begin, stop in pieces:
            self.gaps.add(first, slope, begin, stop, decoders)
        start = self.now
        self.now += seconds
        self.busy += seconds
        self.batch_seconds += decoders * seconds
        self.context += added * steps
        self.iterations += steps
        for index in self.traced_decoders:
            self.span(index, "decode", start, self.now, steps)
        return True

    def drawn_run(self) -> bool:
        """With drawn rounds, ``fixed_run``'s run: the iterations of decodes alone up to the next one in
        which a request finishes (that one included) or the first whose end reaches an arrival, all at
        once. False when the next iteration has newcomers to prefill (``serve`` does not call it then).

        Iteration i takes ``round_seconds`` at context D_i, and D_(i+1) - D_i is the field of
        ``pending`` for that iteration, so the fields are read off as an array, the contexts are their
        running sum and the times, clock readings and gaps are worked out over those lists by C-level
        loops (``map``, ``accumulate``), in the same operations and order as iteration by iteration:
        every figure comes out the same to the bit, with one gap entry an iteration. Each iteration
        takes at least the first's time (the context only grows), which bounds the iterations read
        before the next arrival. A short run where one line of each pair leads all along (the common
        case: away from where the two lines cross) is stepped in a plain loop instead (``drawn_steps``)."""
        now = self.now
        due = self.arrival[self.next_arrival] if self.next_arrival < self.issued else math.inf
        if due <= now:  # pragma: no cover - ``serve`` has just taken every arrival up to now
            return False
        steps, decoders, gamma = self.ends[0][0] - self.iterations + 1, len(self.running), self.gamma
        if steps > _LOOPED_STEPS and due < math.inf:
            first = self.round_seconds(decoders)
            if first > 0:
                steps = min(steps, int((due - now) / first) + 2)
        if steps <= _LOOPED_STEPS:
            context = self.context
            most = context + steps * decoders * (gamma + 1)  # the context cannot grow past this in the run
            leads = self.leads.get(decoders)
            if leads is None or not (leads[0] <= context and most <= leads[1]):
                leads = self.lines_leading(decoders, context, most)
            if leads is not None:
                return self.drawn_steps(steps, due, leads[2], leads[3])
        contexts = list(accumulate(self.fields(steps), initial=self.context))
        verify, draft = self.round_line(decoders)
        at = contexts[:steps]
        verify, draft = _line_maxima(verify, at), _line_maxima(draft, at)
        seconds = list(map(add, verify, map(mul, repeat(gamma), draft)))
        clock = list(accumulate(seconds, initial=now))
        steps = min(steps, bisect_left(clock, due, 1))  # the first iteration whose end reaches the arrival
        del seconds[steps:], clock[steps + 1 :]
        # One gap a decoder an iteration, kept as ``_Gaps.add`` keeps a run of one gap: value and count.
        self.gaps.value.extend(map(sub, clock[1:], clock[:-1]))
        busy = reduce(add, seconds, self.busy)
        batch = reduce(add, map(mul, repeat(decoders), seconds), self.batch_seconds)
        return self.drawn_ran(steps, decoders, clock[-1], busy, batch, contexts[steps])

    def drawn_steps(self, steps: int, due: float, verify: tuple[float, float], draft: tuple[float, float]) -> bool:
        """``drawn_run`` for a short run, up to ``steps`` iterations, one at a time in a plain loop, where
        one line of each pair leads all along (``lines_leading``): ``verify`` and ``draft``, whose values
        are what ``round_seconds``' maxima give. For a few iterations that is quicker than the lists."""
        decoders, gamma = len(self.running), self.gamma
        (v, v_slope), (d, d_slope) = verify, draft
        context, clock, busy, batch = self.context, self.now, self.busy, self.batch_seconds
        append, taken = self.gaps.value.append, 0
        for added in self.fields(steps):
            seconds = (v + v_slope * context) + gamma * (d + d_slope * context)
            start = clock
            clock += seconds
            busy += seconds
            batch += decoders * seconds
            append(clock - start)  # as ``_Gaps.add`` keeps a run of one gap
            context += added
            taken += 1
            if clock >= due:
                break
        return self.drawn_ran(taken, decoders, clock, busy, batch, context)

    def fields(self, steps: int) -> array:
        """``pending``'s lowest ``steps`` fields, the next iterations' context increments, as an array."""
        fields = array(
            self.field_type,
            (self.pending & ((1 << self.field_bits * steps) - 1)).to_bytes(self.field_bytes * steps, "little"),
        )
        if _BIG_ENDIAN:  # pragma: no cover - the fields are packed little-endian
            fields.byteswap()
        return fields

    def lines_leading(self, decoders: int, low: int, high: int) -> tuple[int, int, Any, Any] | None:
        """``(low, high, verify line, draft line)``: the line of each pair that leads for every context
        from low to high (``_leading``), or None where either pair has none. A lead over twice the range
        is kept for the batch size (``leads``), so the runs after it need not look again."""
        verify_lines, draft_lines = self.round_line(decoders)
        for wide_low, wide_high in ((low // 2, 2 * high), (low, high)):
            verify, draft = _leading(verify_lines, wide_low, wide_high), _leading(draft_lines, wide_low, wide_high)
            if verify is not None and draft is not None:
                leads = self.leads[decoders] = (wide_low, wide_high, verify, draft)
                return leads
        return None

    def drawn_ran(self, steps: int, decoders: int, clock: float, busy: float, batch: float, context: int) -> bool:
        """A drawn run of ``steps`` iterations (their gaps' values recorded) ended at ``clock``: the rest
        of its books, and the requests whose last round was its last iteration complete."""
        start = self.now
        self.gaps.times.extend(repeat(decoders, steps))
        if steps >= _SORTED_STEPS:
            self.gaps.sort_last(steps, decoders)
        self.now, self.busy, self.batch_seconds, self.context = clock, busy, batch, context
        self.pending >>= self.field_bits * steps
        self.iterations += steps
        for index in self.traced_decoders:
            self.span(index, "decode", start, clock, steps)
        ends, last = self.ends, self.iterations - 1
        while ends and ends[0][0] == last:
            index = heapq.heappop(ends)[1]
            if index < self.traced:
                self.traced_decoders.remove(index)
            self.complete(index)
        return True

    def round_line(self, decodes: int) -> tuple[tuple[float, float, float, float], tuple[float, float, float, float]]:
        """An iteration of ``decodes`` verifications alone at total context D takes the verification
        line's time at D plus γ times the draft line's (``serving.iteration_line``: each time is linear
        in D for a given batch), worked out once per batch size, as ``serving`` does for plain decodes.
        The draft line is the mean of the γ steps' lines (the first runs a head's fusion layer), which
        is the mean of their times wherever both are bound by the same resource: the fusion adds
        weights and their math in the proportion of the head's other weights."""
        lines = self.round_lines.get(decodes)
        if lines is None:
            costs, tokens = self.costs, self.gamma + 1
            verify = iteration_line(
                verification_with_prefill(costs, decodes, 0, tokens, 0, 0, 0),
                verification_with_prefill(costs, decodes, LINE_PROBE, tokens, 0, 0, 0),
            )
            scale = self.draft_scale
            draft = iteration_line(self.draft_pass(decodes, 0), self.draft_pass(decodes, LINE_PROBE))
            if self.later_pass is not self.draft_pass:
                later = iteration_line(self.later_pass(decodes, 0), self.later_pass(decodes, LINE_PROBE))
                gamma = self.gamma
                draft = tuple((first + (gamma - 1) * rest) / gamma for first, rest in zip(draft, later, strict=True))
            lines = self.round_lines[decodes] = (verify, tuple(scale * part for part in draft))  # type: ignore[misc]
        return lines

    def iteration(self) -> None:
        """One iteration: the newcomers' prefills and a verification round for every decoding request."""
        newcomers, self.newcomers = self.newcomers, []
        decoders = len(self.running) - len(newcomers)
        start = self.now
        seconds = self.prefill_seconds(newcomers, decoders) if newcomers else self.round_seconds(decoders)
        self.now += seconds
        self.busy += seconds
        self.batch_seconds += len(self.running) * seconds
        # The decoders' rounds first, so a newcomer is not taken for one (the order of two requests'
        # finishes changes nothing: each frees its blocks and sends its client's next at ``now``).
        self.end_rounds(decoders, start)
        for index in newcomers:
            self.prefilled(index, start)

    def prefill_seconds(self, newcomers: list[int], decoders: int) -> float:
        """An iteration with prefills, priced pass by pass: the newcomers' prompts in the
        verification pass of ``decoders`` requests, plus γ draft steps if any decode."""
        context = self.context
        if len(newcomers) == 1:  # the common case, and the same sums
            new = self.prompt[newcomers[0]]
            pairs = new * (new + 1) / 2
        else:
            new = sum(self.prompt[index] for index in newcomers)
            pairs = sum(self.prompt[index] * (self.prompt[index] + 1) / 2 for index in newcomers)
        gamma = self.gamma if decoders else 0
        verify_s = verification_seconds(self.costs, decoders, context, gamma + 1, new, pairs, len(newcomers))
        draft_s = 0.0
        if decoders and self.draft_scale:  # a free draft (scale 0) adds nothing to time
            first = self.draft_pass(decoders, context).seconds
            rest = first if self.later_pass is self.draft_pass else self.later_pass(decoders, context).seconds
            draft_s = self.draft_scale * (first + (gamma - 1) * rest) / gamma if gamma else 0.0
        return verify_s + gamma * draft_s

    def round_seconds(self, decoders: int) -> float:
        """Decodes alone, the common iteration: ``max(verify line) + γ max(draft line)`` at the
        context, from the batch size's two lines (``round_line``)."""
        context = self.context
        verify, draft = self.round_line(decoders)
        return max(verify[0] + verify[1] * context, verify[2] + verify[3] * context) + self.gamma * max(
            draft[0] + draft[1] * context, draft[2] + draft[3] * context
        )

    def prefilled(self, index: int, start: float) -> None:
        """Newcomer ``index``'s prefill ended this iteration (started at ``start``) with its first token.
        Its rounds start next iteration, and all of them are known now: k tokens each with fixed rounds
        (the last is round ceil((output - 1) / k)), else drawn (``RoundDraws``), the last cut at what
        its output still needs. They go into the totals at once, and into ``pending``."""
        self.first[index] = self.now
        self.context += self.prompt[index] + 1
        if index < self.traced:
            self.span(index, "prefill", start, self.now)
        need = self.output[index] - 1
        if not need:
            self.complete(index)
            return
        if self.fixed:
            rounds = -(-need // self.fixed)
            drawn = self.fixed * rounds
        else:
            rounds, drawn = self.draw_rounds(index, need)
        self.rounds += rounds
        self.drawn += drawn
        self.emitted += need
        self.zero_gaps += need - rounds  # a round's tokens after its first: gaps of 0
        heapq.heappush(self.ends, (self.iterations + rounds, index))
        if index < self.traced:
            self.traced_decoders.append(index)

    def draw_rounds(self, index: int, need: int) -> tuple[int, int]:
        """Request ``index``'s rounds, drawn, as ``(rounds, tokens drawn)``: the tokens each emits go
        into ``pending``'s fields from the next iteration's on, one byte each spread to a field."""
        tokens, drawn = self.draws.drawn(index, need)  # type: ignore[union-attr]
        rounds = len(tokens)
        size = self.field_bytes
        fields = bytearray(size * rounds)
        fields[::size] = tokens
        fields[size * (rounds - 1)] -= drawn - need  # the last round emits only what the output still needs
        self.pending += int.from_bytes(fields, "little")
        return rounds, drawn

    def end_rounds(self, decoders: int, start: float) -> None:
        """This iteration's rounds, one a decoder: the tokens they add to the context (k a decoder with
        fixed rounds, but a request's last round emits only what its output still needs, ``output - 1
        - k (rounds - 1)``; else ``pending``'s lowest field), one run of ``decoders`` gaps of ``now -
        start``, and the requests whose last round it is complete (``ends``)."""
        k, output, ends, iteration = self.fixed, self.output, self.ends, self.iterations
        if k:
            added = k * decoders
        else:
            added = self.pending & self.field_mask
            self.pending >>= self.field_bits
        while ends and ends[0][0] == iteration:
            index = heapq.heappop(ends)[1]
            if k:
                added -= k * (-(-(output[index] - 1) // k)) - (output[index] - 1)  # k minus its last round's
            if index < self.traced:
                self.traced_decoders.remove(index)
                self.span(index, "decode", start, self.now)
            self.complete(index)
        for index in self.traced_decoders:
            self.span(index, "decode", start, self.now)
        self.gaps.add(self.now - start, 0.0, 0, 1, decoders)
        self.context += added

    # -- results --------------------------------------------------------------------------------

    def result(self) -> SimulationResult:
        config = self.config
        gaps = self.gaps
        gaps.add(0.0, 0.0, 0, 1, self.zero_gaps)
        self.zero_gaps = 0  # counted once, should the result be asked for again
        trace = request_traces(self)
        return SimulationResult(
            config=config,
            requests=config.requests,
            rejected=self.rejected,
            busy_s=self.busy,
            iterations=self.iterations,
            kv_blocks=self.capacity,
            trace=trace,
            itl_s=gaps.percentiles(),
            itl_mean_s=gaps.mean(),
            batch_seconds=self.batch_seconds,
            itl_count=gaps.count(),
            **request_figures(config, sent_times(self), self.admitted, self.first, self.finish, self.output),
        )


__all__ = ["Drafting", "RoundDraws", "SpeculativeSimulation", "simulate_speculative", "verification_with_prefill"]
