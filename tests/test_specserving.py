"""The serving simulator with speculative decoding (``roofline.specserving``, ``simulate --speculate-*``).

Issue 20's goals: over 10,000 rounds the tokens a round emits average τ within 2%; at a high
request rate speculation with α = 0.6 and γ = 4 lowers throughput, as vLLM measured; without
speculation the run is ``serving.simulate``'s continuous, reserve-admission run exactly; and
each bad input is one line.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from roofline import Hardware, SpecError, Workload, builtin_specs, iteration_costs
from roofline import formatting as fmt
from roofline.calibration import load_calibration
from roofline.serving import Lengths, ServingConfig, simulate
from roofline.specserving import Drafting, simulate_speculative, verification_with_prefill
from roofline.speculative import tokens_per_step
from support import assert_one_line_error, run_cli

SPECS = builtin_specs()
H100 = Hardware(SPECS.gpu("h100-sxm"))
TARGET = Workload(SPECS.model("llama-3.1-8b"))
DRAFT = SPECS.model("llama-3.2-1b")
TRAFFIC = {"prompt": Lengths(128, 1024), "output": Lengths(32, 512)}


def config(rate: float, requests: int = 300, **changes: object) -> ServingConfig:
    return ServingConfig(**{"policy": "continuous", "rate": rate, "requests": requests, **TRAFFIC, **changes})


@pytest.mark.parametrize("rate", [2.0, 16.0, 64.0])
def test_without_speculation_it_is_the_continuous_reserve_run_of_chapter_3(rate: float) -> None:
    plain = simulate(H100, TARGET, config(rate, admission="reserve"))
    mine = simulate_speculative(H100, TARGET, config(rate), None).result
    assert mine.iterations == plain.iterations
    assert mine.output_tokens == plain.output_tokens
    assert mine.throughput_tokens_per_s == pytest.approx(plain.throughput_tokens_per_s, rel=1e-9)
    assert mine.tpot_s == pytest.approx(plain.tpot_s, rel=1e-9)
    assert mine.ttft_s == pytest.approx(plain.ttft_s, rel=1e-9)
    assert mine.goodput_requests_per_s == pytest.approx(plain.goodput_requests_per_s, rel=1e-9)


@pytest.mark.parametrize(("alpha", "gamma"), [(0.6, 4), (0.8, 4), (0.9, 7), (0.3, 2)])
def test_over_ten_thousand_rounds_the_tokens_per_round_are_tau_within_two_percent(alpha: float, gamma: int) -> None:
    run = simulate_speculative(
        H100, TARGET, config(8.0, requests=400, output=Lengths(256, 256)), Drafting(gamma, alpha, draft_cost=0.0)
    )
    assert run.rounds >= 10_000
    assert run.tokens_per_round == pytest.approx(tokens_per_step(alpha, gamma), rel=0.02)
    # Emitted tokens: every round's draw, cut at each output's end; plus each request's first token.
    assert run.emitted_tokens + run.result.completed == run.result.output_tokens


def test_a_lone_requests_rounds_are_timed_pass_by_pass() -> None:
    """Every draft accepted (α = 1), one request: its prefill, then rounds of γ+1 = 4 tokens at a
    context 4 longer each time, each the verification of 4 tokens plus 3 draft steps of Llama 3.2 1B.
    The simulator times decode-only iterations from two lines per batch size; summed pass by pass
    here, the busy time must agree."""
    traffic = ServingConfig(policy="continuous", rate=math.inf, requests=1, prompt=Lengths(100, 100),
                            output=Lengths(41, 41))  # fmt: skip
    run = simulate_speculative(H100, TARGET, traffic, Drafting(3, 1.0, draft=DRAFT))
    costs, draft = iteration_costs(H100, TARGET), iteration_costs(H100, Workload(DRAFT))
    prefill = verification_with_prefill(costs, 0, 0, 1, 100, 100 * 101 / 2, 1).seconds
    rounds = [
        verification_with_prefill(costs, 1, 101 + 4 * r, 4, 0, 0, 0).seconds
        + 3 * draft.iteration(1, 101 + 4 * r).seconds
        for r in range(10)
    ]
    assert run.rounds == 10 and run.emitted_tokens == 40 and run.result.iterations == 11
    assert run.result.busy_s == pytest.approx(prefill + math.fsum(rounds), rel=1e-12)


def test_a_verification_keeps_every_time_of_its_pass_but_the_math() -> None:
    """Verifying γ + 1 tokens a request adds the other queries' attention to the pass's math, and
    nothing else moves: a weight-only (W4A16) pass that widens its weights first (past the engine's
    switch) keeps that kernel's time, as its all-reduces and overheads (it was dropped before)."""
    widening = replace(H100, costs=replace(H100.costs, dequant_switch_tokens=256))
    costs = iteration_costs(widening, Workload(SPECS.model("llama-3.1-8b"), "int4-awq"))
    timed = costs.iteration(8 * 5, 4000, 512, 0, 512 * 513 / 2, 1)
    verified = verification_with_prefill(costs, 8, 4000, 5, 512, 512 * 513 / 2, 1)
    assert timed.dequantize_s > 0
    assert verified.dequantize_s == timed.dequantize_s
    assert (verified.communication_s, verified.overhead_s) == (timed.communication_s, timed.overhead_s)
    assert verified.flops > timed.flops and verified.compute_s > timed.compute_s
    assert verified.seconds >= timed.seconds


def test_at_a_low_rate_speculation_cuts_tpot_and_at_a_high_rate_it_lowers_throughput() -> None:
    drafting = Drafting(4, 0.6, draft=DRAFT)
    quiet = config(4.0, max_batch=256)
    busy = config(128.0, max_batch=256)
    plain_quiet, spec_quiet = (simulate_speculative(H100, TARGET, quiet, d).result for d in (None, drafting))
    plain_busy, spec_busy = (simulate_speculative(H100, TARGET, busy, d).result for d in (None, drafting))
    assert spec_quiet.tpot_s[50] < 0.8 * plain_quiet.tpot_s[50]
    assert spec_busy.throughput_tokens_per_s < plain_busy.throughput_tokens_per_s  # vLLM's direction
    assert spec_busy.tpot_s[50] > plain_busy.tpot_s[50]


def test_the_draft_models_steps_are_charged() -> None:
    free = simulate_speculative(H100, TARGET, config(4.0), Drafting(4, 0.8)).result
    drafted = simulate_speculative(H100, TARGET, config(4.0), Drafting(4, 0.8, draft=DRAFT)).result
    assert drafted.tpot_s[50] > free.tpot_s[50]
    assert drafted.busy_s > free.busy_s


def test_the_same_seed_gives_the_same_run_and_another_seed_another() -> None:
    drafting = Drafting(4, 0.7, draft=DRAFT)
    first = simulate_speculative(H100, TARGET, config(16.0), drafting)
    again = simulate_speculative(H100, TARGET, config(16.0), drafting)
    other = simulate_speculative(H100, TARGET, config(16.0, seed=1), drafting)
    assert first.to_dict() == again.to_dict()
    assert first.drawn_tokens != other.drawn_tokens


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: Drafting(0, 0.5), "speculate_gamma"),
        (lambda: Drafting(65, 0.5), "speculate_gamma"),
        (lambda: Drafting(4, 1.5), "speculate_alpha"),
        (lambda: Drafting(4, float("nan")), "speculate_alpha"),
        (lambda: Drafting(4, 0.5, draft_cost=11), "draft_cost"),
    ],
)
def test_bad_drafting_is_one_error_naming_its_field(make, field: str) -> None:
    with pytest.raises(SpecError) as caught:
        make()
    assert caught.value.field == field


def test_a_draft_with_another_vocabulary_is_refused_unless_a_cost_is_given() -> None:
    mistral = SPECS.model("mistral-7b")
    with pytest.raises(SpecError, match="vocabulary"):
        simulate_speculative(H100, TARGET, config(4.0, requests=20), Drafting(4, 0.5, draft=mistral))
    run = simulate_speculative(H100, TARGET, config(4.0, requests=20), Drafting(4, 0.5, draft=mistral, draft_cost=0.1))
    assert "vocabulary" in run.notes[0]


def test_only_continuous_batching_speculates() -> None:
    with pytest.raises(SpecError) as caught:
        simulate_speculative(H100, TARGET, config(4.0, policy="chunked"), Drafting(4, 0.5))
    assert caught.value.field == "policy"


# ---- The command line --------------------------------------------------------------------------------

BASE = ("simulate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--requests", "60")


def test_the_report_says_what_the_rounds_emitted(capsys) -> None:
    status, out, err = run_cli(
        capsys, *BASE, "--speculate-gamma", "4", "--speculate-alpha", "0.8", "--draft", "llama-3.2-1b"
    )
    assert status == 0 and err == ""
    assert "Speculation: γ = 4, α = 0.8, drafting at Llama 3.2 1B's own decode step (ceiling costs)" in out
    assert "(τ = 3.362 expected)" in out


def test_json_has_a_speculation_object(capsys) -> None:
    status, out, _ = run_cli(capsys, *BASE, "--speculate-gamma", "2", "--speculate-alpha", "0.5", "--json")
    data = json.loads(out)
    assert status == 0
    assert data["speculation"]["expected_tokens_per_round"] == pytest.approx(1.75)
    assert data["speculation"]["drafter"] == "free"
    assert data["admission"] == "reserve"


def test_expected_costs_give_the_plain_runs_band(capsys) -> None:
    """``--costs expected``: the ceiling's run as before, then the same run at the fitted costs with
    the band plain runs get (``Calibration.bands``), in JSON and in words."""
    argv = (*BASE, "--rate", "8", "--speculate-gamma", "4", "--speculate-alpha", "0.7", "--draft", "llama-3.2-1b")
    status, out, _ = run_cli(capsys, *argv, "--costs", "expected", "--json")
    assert status == 0
    data = json.loads(out)
    drafting, traffic = Drafting(4, 0.7, draft=DRAFT), ServingConfig(rate=8.0, requests=60)  # the CLI's defaults
    calibration = load_calibration()
    ceiling = simulate_speculative(H100, TARGET, traffic, drafting)
    fitted = replace(H100, costs=calibration.cost_model("h100-sxm"))
    expected = simulate_speculative(fitted, TARGET, traffic, drafting)
    assert data["costs"] == "expected"
    assert data["throughput_tokens_per_s"] == pytest.approx(ceiling.result.throughput_tokens_per_s, rel=1e-12)
    assert data["expected"]["throughput_tokens_per_s"] == pytest.approx(
        expected.result.throughput_tokens_per_s, rel=1e-12
    )
    assert data["expected"]["speculation"]["rounds"] == expected.rounds
    # Each band is held within its best-case bound, which no scheduler can beat.
    assert data["band"] == calibration.bands(data["expected"], data["best_case"])
    for metric in ("throughput_tokens_per_s", "tpot_mean_s", "ttft_mean_s", "itl_mean_s"):
        low, high = data["band"][metric]
        assert low < data["expected"][metric] <= high
    assert data["expected"]["throughput_tokens_per_s"] < data["throughput_tokens_per_s"]

    status, text, _ = run_cli(capsys, *argv, "--costs", "expected")
    assert status == 0
    low, high = data["band"]["throughput_tokens_per_s"]
    rate = fmt.rate(data["expected"]["throughput_tokens_per_s"])
    assert f"expected throughput    {rate} output tokens/s (band {fmt.rate(low)} to {fmt.rate(high)})" in text
    assert f"expected rounds   {expected.rounds:,} verifications" in text
    assert "fitted to published runs without speculation" in text
    # Without --costs expected: no expected run, no band.
    status, out, _ = run_cli(capsys, *argv, "--json")
    assert "band" not in json.loads(out) and "expected" not in json.loads(out)


@pytest.mark.parametrize(
    ("extra", "fragments"),
    [
        (("--speculate-gamma", "0", "--speculate-alpha", "0.5"), ("--speculate-gamma", "at least 1")),
        (("--speculate-gamma", "65", "--speculate-alpha", "0.5"), ("--speculate-gamma", "at most 64")),
        (("--speculate-gamma", "4", "--speculate-alpha", "1.5"), ("--speculate-alpha", "between 0 and 1")),
        (("--speculate-gamma", "4"), ("--speculate-alpha", "needed")),
        (("--draft", "llama-3.2-1b"), ("--draft", "only with")),
        (("--speculate-gamma", "4", "--speculate-alpha", "0.5", "--draft", "mistral-7b"), ("--draft", "vocabulary")),
        (("--speculate-gamma", "4", "--speculate-alpha", "0.5", "--policy", "static"), ("--policy", "continuous")),
        (("--speculate-gamma", "4", "--speculate-alpha", "0.5", "--draft", "nosuch"), ("--draft", "unknown model")),
    ],
)
def test_each_bad_speculation_option_is_one_line(capsys, extra: tuple[str, ...], fragments: tuple[str, ...]) -> None:
    status, out, err = run_cli(capsys, *BASE, *extra)
    assert out == ""
    assert_one_line_error(status, err, *fragments)


#: One speculative run of 64 requests (64-request batches, prompts of 128, every output ``sys.argv[1]``
#: tokens, γ 8, α 0.95, a free draft): the peak of the memory Python traced while it ran, and its rounds.
#: It runs in a Python of its own, so that nothing else is counted: inside the test process the first
#: of two runs also paid for what a process allocates once (caches, lazy imports), and tracemalloc counts
#: every thread's allocations, a pytest-xdist worker's message thread's included, at times the
#: machine's load decides; the difference of two peaks moved by tens of kilobytes from run to run.
_PEAK_OF_A_RUN = """
import math, sys, tracemalloc
from dataclasses import replace
import roofline.serving
from roofline import Hardware, Workload, builtin_specs
from roofline.serving import Lengths, ServingConfig
from roofline.specserving import Drafting, simulate_speculative

roofline.serving._LISTED_RUNS, roofline.serving._SAMPLE_RUNS = 1_000, 200
specs, output = builtin_specs(), int(sys.argv[1])
traffic = ServingConfig(
    policy="continuous", rate=math.inf, requests=64, max_batch=64,
    prompt=Lengths(128, 128), output=Lengths(output, output),
)
hardware, target = Hardware(specs.gpu("h100-sxm")), Workload(specs.model("llama-3.1-8b"))
tracemalloc.start()
run = simulate_speculative(hardware, target, traffic, Drafting(8, 0.95, draft_cost=0.0))
print(tracemalloc.get_traced_memory()[1], run.rounds)
"""


def _peak_bytes_and_rounds(output: int) -> tuple[int, int]:
    """``_PEAK_OF_A_RUN``'s traced peak and rounds with every output ``output`` tokens, in a fresh Python."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _PEAK_OF_A_RUN, str(output)], capture_output=True, text=True, check=True, timeout=600
    )
    peak, rounds = done.stdout.split()
    return int(peak), int(rounds)


def test_memory_does_not_grow_with_the_tokens_a_run_emits() -> None:
    """64 requests in one batch, each round emitting about 7 tokens a request: ten times the output is
    1.15 million more tokens and about 156,000 more rounds, but the run keeps one 16-byte entry an
    iteration for the gaps, not one a token or a round. The percentiles are read as a million-request
    run reads them, streaming the arrays and listing only the runs of gaps in a bracket around each rank
    (1 % of the gaps at first). Measured: about 470 kB more (125 kB of gap entries, the rest the brackets);
    a list of one float a round would be 1.2 MB more, of one a token 9 MB."""
    (short, short_rounds), (long, long_rounds) = _peak_bytes_and_rounds(2_000), _peak_bytes_and_rounds(20_000)
    more_tokens, more_rounds = 64 * (20_000 - 2_000), long_rounds - short_rounds
    assert more_rounds > 100_000
    assert long - short < 8 * more_rounds / 2, f"{long - short:,} more bytes for {more_rounds:,} more rounds"
    assert long - short < more_tokens / 2, f"{long - short:,} more bytes for {more_tokens:,} more tokens"


@pytest.mark.parametrize(("alpha", "gamma", "rate"), [(0.0, 1, math.inf), (1.0, 3, 4.0), (0.0, 4, 30.0)])
def test_fixed_rounds_timed_a_run_at_a_time_agree_with_rounds_timed_one_by_one(monkeypatch, alpha, gamma, rate):
    """α 0 or 1 fixes every round's tokens, so a run of rounds between two events is timed in closed
    form over its pieces (``fixed_run``); the same traffic through the drawn path (``drawn_run``, which
    draws and gets the same tokens, and times each iteration) gives the same counts and every figure
    to 1e-9, with one gap entry a piece instead of one an iteration."""
    import roofline.specserving

    kept: list[object] = []

    class KeptGaps(roofline.specserving._Gaps):
        def __init__(self) -> None:
            super().__init__()
            kept.append(self)

    monkeypatch.setattr(roofline.specserving, "_Gaps", KeptGaps)
    traffic = config(rate, requests=200, prompt=Lengths(64, 2048), output=Lengths(1, 3000))
    drafting = Drafting(gamma, alpha, draft_cost=0.05)
    at_once = simulate_speculative(H100, TARGET, traffic, drafting)
    at_once_entries = len(kept[-1])
    monkeypatch.setattr(roofline.specserving, "fixed_round_tokens", lambda _: None)
    one_by_one = simulate_speculative(H100, TARGET, traffic, drafting)
    assert (at_once.rounds, at_once.drawn_tokens, at_once.emitted_tokens) == (
        one_by_one.rounds,
        one_by_one.drawn_tokens,
        one_by_one.emitted_tokens,
    )
    assert at_once.result.iterations == one_by_one.result.iterations
    # Drawn, an entry for nearly every iteration; in closed form, one for a run's piece (the
    # runs are short here, cut by an arrival or a finish every 10 to 15 iterations).
    assert len(kept[-1]) > at_once.result.iterations * 0.9 > 5 * at_once_entries
    mine, theirs = at_once.to_dict(), one_by_one.to_dict()
    for key, value in theirs.items():
        if isinstance(value, float):
            assert mine[key] == pytest.approx(value, rel=1e-9), key
        else:
            assert mine[key] == value, key


def test_a_run_past_the_tokens_a_speculative_run_may_draw_is_refused_before_any_draw(capsys, monkeypatch) -> None:
    """10,000 requests of 100,000 tokens (each within its own range) are a billion tokens, past what a
    speculative run may emit: refused in one line before the traffic is drawn."""
    import roofline.specserving

    def never(*_: object) -> None:
        raise AssertionError("the run started")

    monkeypatch.setattr(roofline.specserving, "_SpeculativeRun", never)
    status, out, err = run_cli(
        capsys,
        *("simulate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--requests", "10000", "--output", "100000"),
        *("--speculate-gamma", "1", "--speculate-alpha", "0"),
    )
    assert_one_line_error(status, err, "--requests: 10,000 requests of up to 100,000 output tokens are 1,000,000,000")
    assert out == ""
