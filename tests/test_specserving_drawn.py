"""Drawn rounds (0 < α < 1) in the speculative simulator: each request's rounds drawn up front, and runs of
iterations between events worked out at once (``specserving.RoundDraws``, ``_SpeculativeRun.drawn_run``).

Issue 42's NH4: speculative runs stay within 2× of plain ones and keep no state a token. These tests check
the fast path against a plain reference written here: each round of each request drawn one at a time from
its own SHAKE-128 streams (``hashlib.shake_128``, read a round at a time, not by the package's batches and
tables) and compared with α^i exactly (``fractions``), and a scheduler stepped one iteration at a time, one
request at a time, with the simulator's own cost lines. Both must give the same iterations, counts, times
and gaps, to the bit.
"""

from __future__ import annotations

import hashlib
import math
from fractions import Fraction

import pytest

import roofline.specserving
from roofline import Hardware, SpecError, Workload, builtin_specs
from roofline.performance import iteration_costs
from roofline.serving import Lengths, ServingConfig, blocks_for, kv_blocks_available
from roofline.specserving import Drafting, RoundDraws, _SpeculativeRun, simulate_speculative
from roofline.speculative import tokens_per_step
from support import assert_one_line_error, run_cli

SPECS = builtin_specs()
H100 = Hardware(SPECS.gpu("h100-sxm"))
TARGET = Workload(SPECS.model("llama-3.1-8b"))


def reference_tokens(alpha: float, gamma: int, seed: int, index: int, need: int) -> list[int]:
    """Request ``index``'s rounds, one draw each: accepted ≥ i while u / 2^64 < α^i, plus the target's token.

    Round j's draw u has the top byte t = byte 56 + j of the request's stream 0; where every u with that
    top byte gives the same count (no α^i · 2^64 strictly inside [t · 2^56, (t + 1) · 2^56)), that is the
    count, else u's 7 low bytes are the next unread of stream 0's first 56 bytes, then of stream 1.
    """
    key = ((index << 64) | seed).to_bytes(16, "little")

    read: dict[int, bytes] = {}

    def stream(part: int, length: int) -> bytes:
        """Stream ``part``'s first ``length`` bytes (hashed afresh, twice as many, when more are asked for)."""
        if len(read.get(part, b"")) < length:
            read[part] = hashlib.shake_128(bytes((part,)) + key).digest(2 * length)
        return read[part][:length]

    powers = [Fraction(alpha) ** i for i in range(1, gamma + 1)]  # P(accepted ≥ i) = α^i
    tokens, lows_read = [], 0
    while sum(tokens) < need:
        top = stream(0, 57 + len(tokens))[56 + len(tokens)]
        low_end, high_end = Fraction(top, 256), Fraction(top + 1, 256)
        if any(low_end < power < high_end for power in powers):
            lows = stream(0, 56) + stream(1, 7 * lows_read + 7)
            low = int.from_bytes(lows[7 * lows_read : 7 * lows_read + 7], "little")
            lows_read += 1
        else:
            low = 0  # any: every draw with this top byte counts the same
        u = Fraction((top << 56) | low, 1 << 64)
        accepted = 0
        while accepted < gamma and u < powers[accepted]:
            accepted += 1
        tokens.append(accepted + 1)
    return tokens


def reference_run(config: ServingConfig, drafting: Drafting, unserved: _SpeculativeRun) -> dict:
    """The run stepped one iteration at a time, every decoding request's round one at a time.

    ``unserved`` is a ``_SpeculativeRun`` of the same inputs that has not served: its traffic
    (drawn as ``serving`` draws it) and its cost lines (``round_line``, ``prefill_seconds``) are read,
    nothing else."""
    run = unserved
    arrival, prompt, output = list(run.arrival), run.prompt, run.output
    issued = len(arrival) if config.concurrency is None else min(config.concurrency, len(arrival))
    queue: list[int] = []
    running: dict[int, list[int]] = {}  # request -> its rounds' tokens still to come, capped
    newcomers: list[int] = []
    free, now, busy, batch_seconds, context = run.capacity, 0.0, 0.0, 0.0, 0
    nxt = iterations = rounds = drawn = emitted = zero = rejected = 0
    gaps: list[tuple[float, int]] = []
    first, finish, admitted = {}, {}, {}

    def issue(when: float) -> None:
        nonlocal issued
        if config.concurrency is not None and issued < len(arrival):
            arrival[issued] = when + run.overhead
            issued += 1

    def complete(index: int) -> None:
        nonlocal context, free
        finish[index] = now
        context -= prompt[index] + output[index]
        del running[index]
        free += blocks_for(prompt[index] + output[index])
        issue(now)

    while True:
        while nxt < issued and arrival[nxt] <= now:
            nxt += 1
            if blocks_for(prompt[nxt - 1] + output[nxt - 1]) > run.capacity:
                rejected += 1
                issue(arrival[nxt - 1])
            else:
                queue.append(nxt - 1)
        while queue and len(running) < config.max_batch and blocks_for(prompt[queue[0]] + output[queue[0]]) <= free:
            index = queue.pop(0)
            free -= blocks_for(prompt[index] + output[index])
            running[index] = []
            admitted[index] = now
            newcomers.append(index)
        if not running:
            if nxt >= issued:
                break
            now = max(now, arrival[nxt])
            continue
        joining, newcomers = newcomers, []
        decoders = [index for index in running if index not in joining]
        start = now
        run.context = context
        if joining:
            seconds = run.prefill_seconds(joining, len(decoders))
        else:
            verify, draft = run.round_line(len(decoders))
            seconds = max(verify[0] + verify[1] * context, verify[2] + verify[3] * context) + drafting.gamma * max(
                draft[0] + draft[1] * context, draft[2] + draft[3] * context
            )
        now += seconds
        busy += seconds
        batch_seconds += len(running) * seconds
        added = 0
        for index in decoders:
            tokens = running[index].pop(0)
            added += tokens
            if not running[index]:
                complete(index)
        if decoders:
            gaps.append((now - start, len(decoders)))
        context += added
        for index in joining:
            first[index] = now
            context += prompt[index] + 1
            need = output[index] - 1
            if not need:
                complete(index)
                continue
            tokens = reference_tokens(drafting.alpha, drafting.gamma, config.seed, index, need)
            rounds += len(tokens)
            drawn += sum(tokens)
            emitted += need
            zero += need - len(tokens)
            tokens[-1] -= sum(tokens) - need
            running[index] = tokens
        iterations += 1
    return {
        "iterations": iterations,
        "rounds": rounds,
        "drawn": drawn,
        "emitted": emitted,
        "zero_gaps": zero,
        "rejected": rejected,
        "now": now,
        "busy": busy,
        "batch_seconds": batch_seconds,
        "gaps": gaps,
        "first": first,
        "finish": finish,
        "admitted": admitted,
    }


def served(config: ServingConfig, drafting: Drafting) -> _SpeculativeRun:
    """A ``_SpeculativeRun`` of the inputs, as ``simulate_speculative`` builds it (reserve admission)."""
    config = ServingConfig(**{**config.__dict__, "admission": "reserve"})
    return _SpeculativeRun(
        iteration_costs(H100, TARGET),
        config,
        kv_blocks_available(H100, TARGET),
        drafting,
        None,
        None,
        H100.costs.request_overhead_s,
    )


CASES = [
    # (gamma, alpha, config changes): few and many requests, open and closed loops, a small batch,
    # a burst, outputs of one token (no rounds) to thousands, paged admission asked for (reserve is used).
    (1, 0.3, {"requests": 12, "rate": 2.0, "output": Lengths(1, 40)}),
    (2, 0.6, {"requests": 300, "rate": 30.0, "output": Lengths(1, 600), "seed": 5}),
    (3, 0.95, {"requests": 200, "rate": math.inf, "max_batch": 16, "output": Lengths(50, 900), "seed": 11}),
    (4, 0.6, {"requests": 400, "concurrency": 24, "output": Lengths(1, 300), "seed": 2}),
    (5, 0.3, {"requests": 80, "rate": 8.0, "output": Lengths(2000, 3000), "admission": "paged", "seed": 9}),
    (4, 0.95, {"requests": 80, "rate": 4.0, "prompt": Lengths(64, 4096), "output": Lengths(1, 2500), "seed": 3}),
    (3, 0.0, {"requests": 100, "rate": 20.0, "output": Lengths(1, 500), "seed": 4}),
    # A batch limit whose rounds could overflow 16-bit fields (14,000 × 5 tokens): 32-bit fields.
    (
        4,
        0.6,
        {
            "requests": 14_000,
            "rate": math.inf,
            "max_batch": 14_000,
            "prompt": Lengths(16, 64),
            "output": Lengths(1, 40),
        },
    ),
]


@pytest.mark.parametrize(("gamma", "alpha", "changes"), CASES)
@pytest.mark.parametrize("lead", [roofline.specserving._LEAD, math.inf])
def test_runs_of_drawn_rounds_agree_with_a_round_by_round_reference(monkeypatch, gamma, alpha, changes, lead) -> None:
    """Every count, every request's admission, first token and finish, the clock and every gap, to the
    bit (α 0 goes through the drawn path here too, with the fixed path switched off). With an infinite
    ``_LEAD`` no line is taken for the max of two without comparing them, at every iteration."""
    monkeypatch.setattr(roofline.specserving, "fixed_round_tokens", lambda _: None)
    monkeypatch.setattr(roofline.specserving, "_LEAD", lead)
    config = ServingConfig(**{"prompt": Lengths(128, 1024), "max_batch": 64, **changes})
    drafting = Drafting(gamma, alpha, draft_cost=0.1)
    want = reference_run(config, drafting, served(config, drafting))
    run = served(config, drafting)
    covered = [0]
    one_run = run.drawn_run

    def counted() -> bool:
        before = run.iterations
        ran = one_run()
        covered[0] += run.iterations - before
        return ran

    run.drawn_run = counted  # type: ignore[method-assign]
    run.serve()
    assert (run.iterations, run.rounds, run.drawn, run.emitted, run.zero_gaps, run.rejected) == (
        want["iterations"],
        want["rounds"],
        want["drawn"],
        want["emitted"],
        want["zero_gaps"],
        want["rejected"],
    )
    assert (run.now, run.busy, run.batch_seconds) == (want["now"], want["busy"], want["batch_seconds"])
    assert list(zip(run.gaps.value, run.gaps.times, strict=True)) == want["gaps"]
    assert len(run.gaps.first) == 0  # one entry an iteration, none spanning several
    for name in ("first", "finish", "admitted"):
        times = getattr(run, name)
        assert {index: times[index] for index in want[name]} == want[name], name
    assert run.pending == 0 and not run.ends and not run.running  # nothing left over, nothing kept
    assert run.field_bytes == (4 if config.max_batch * (gamma + 1) >= 1 << 16 else 2)
    # Most iterations were worked out a run at a time, not one by one.
    assert covered[0] > run.iterations / 2


@pytest.mark.parametrize(("alpha", "gamma"), [(0.3, 1), (0.6, 4), (0.95, 5), (0.5, 64), (0.999, 3), (1e-9, 2)])
def test_a_requests_round_draws_are_its_own_exact_draws(alpha: float, gamma: int) -> None:
    """``RoundDraws.tokens`` (a byte table over the draws' top bytes, then thresholds where a top byte
    is not enough) gives what drawing and comparing each round one by one gives, in many batches."""
    draws, in_sixteens = RoundDraws(alpha, gamma, seed=7), RoundDraws(alpha, gamma, seed=7)
    in_sixteens.tokens_per_round = math.inf  # batches of 16 rounds: the stream is the same however it is cut
    for index, need in [(0, 1), (1, 5), (17, 300), (2_000_000, 4_000)]:
        want = reference_tokens(alpha, gamma, 7, index, need)
        assert list(draws.tokens(index, need)) == want
        assert list(in_sixteens.tokens(index, need)) == want


def test_round_draws_average_tau() -> None:
    """Over 200,000 rounds the tokens per round are τ(α, γ) within 1 %, and the shares of each count
    are α^i (1 - α) to within 1 % of all rounds."""
    alpha, gamma = 0.7, 4
    tokens = RoundDraws(alpha, gamma, seed=1).tokens(3, 200_000 * 3)
    assert len(tokens) >= 200_000
    assert sum(tokens) / len(tokens) == pytest.approx(tokens_per_step(alpha, gamma), rel=0.01)
    for count in range(1, gamma + 1):
        share = tokens.count(count) / len(tokens)
        assert share == pytest.approx(alpha ** (count - 1) * (1 - alpha), abs=0.01)


def test_a_requests_rounds_do_not_depend_on_the_schedule() -> None:
    """The same traffic at another rate and batch limit: the requests wait and batch differently, but each
    one's rounds are drawn from its own generator, so the rounds and tokens drawn are the same; another
    seed draws others."""
    drafting = Drafting(4, 0.6, draft_cost=0.1)
    traffic = ServingConfig(requests=300, prompt=Lengths(128, 1024), output=Lengths(1, 700), seed=4)
    slow = simulate_speculative(H100, TARGET, ServingConfig(**{**traffic.__dict__, "rate": 2.0}), drafting)
    fast = simulate_speculative(
        H100, TARGET, ServingConfig(**{**traffic.__dict__, "rate": math.inf, "max_batch": 16}), drafting
    )
    assert slow.result.iterations != fast.result.iterations
    assert (slow.rounds, slow.drawn_tokens) == (fast.rounds, fast.drawn_tokens)
    other = simulate_speculative(H100, TARGET, ServingConfig(**{**traffic.__dict__, "seed": 5}), drafting)
    assert other.drawn_tokens != slow.drawn_tokens


def test_long_drawn_runs_sorted_where_they_lie_give_the_same_figures(monkeypatch) -> None:
    """A drawn run of ``_SORTED_STEPS`` iterations or more has its gaps sorted in place for the
    percentiles' bisection (``_Gaps.sort_last``): every figure is what the unsorted gaps give, read
    through the brackets (``_bracketed``, forced here) and the mean."""
    import roofline.serving

    traffic = ServingConfig(requests=6, rate=math.inf, output=Lengths(2_000, 3_000), seed=3)
    drafting = Drafting(4, 0.6, draft_cost=0.1)
    monkeypatch.setattr(roofline.serving, "_LISTED_RUNS", 0)
    sorted_calls = []
    real = roofline.serving._Gaps.sort_last
    monkeypatch.setattr(roofline.serving._Gaps, "sort_last", lambda gaps, *a: sorted_calls.append(a) or real(gaps, *a))
    kept = simulate_speculative(H100, TARGET, traffic, drafting).to_dict()
    assert sorted_calls and all(count >= roofline.specserving._SORTED_STEPS for count, _ in sorted_calls)
    monkeypatch.setattr(roofline.specserving, "_SORTED_STEPS", 10**9)
    assert simulate_speculative(H100, TARGET, traffic, drafting).to_dict() == kept


def test_the_same_seed_gives_the_same_run() -> None:
    drafting = Drafting(3, 0.8, draft_cost=0.2)
    traffic = ServingConfig(requests=200, rate=16.0, output=Lengths(1, 900), trace_requests=20, seed=8)
    first = simulate_speculative(H100, TARGET, traffic, drafting).to_dict(trace=True)
    again = simulate_speculative(H100, TARGET, traffic, drafting).to_dict(trace=True)
    assert first == again


@pytest.mark.parametrize(
    ("extra", "fragments"),
    [
        (("--speculate-gamma", "0", "--speculate-alpha", "0.6"), ("--speculate-gamma",)),
        (("--speculate-gamma", "4", "--speculate-alpha", "-0.1"), ("--speculate-alpha", "between 0 and 1")),
        (("--speculate-gamma", "4", "--speculate-alpha", "nan"), ("--speculate-alpha", "between 0 and 1")),
        (("--speculate-gamma", "2.5", "--speculate-alpha", "0.6"), ("--speculate-gamma",)),
    ],
)
def test_bad_alpha_or_gamma_is_one_line_before_anything_is_drawn(capsys, monkeypatch, extra, fragments) -> None:
    def never(*_: object) -> None:
        raise AssertionError("rounds were drawn")

    monkeypatch.setattr(roofline.specserving, "RoundDraws", never)
    monkeypatch.setattr(roofline.specserving, "_SpeculativeRun", never)
    status, out, err = run_cli(
        capsys, "simulate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--requests", "50", *extra
    )
    assert out == ""
    assert_one_line_error(status, err, *fragments)


def test_bad_round_draws_are_refused_in_the_api() -> None:
    with pytest.raises(SpecError) as caught:
        Drafting(4, 1.01)
    assert caught.value.field == "speculate_alpha"
