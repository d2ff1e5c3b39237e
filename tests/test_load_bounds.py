"""Issue 36: ceilings on times under load are bounds. A simulation at the ceiling's costs is one
scheduler's result (chunked budget, admission, every client starting at once), which an engine
with other choices beats; the bounds in roofline.load_bounds are any scheduler's best and no
published row may beat them by more than 2 %."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline import benchmarks
from roofline import formatting as fmt
from roofline.cli import main
from roofline.load_bounds import ITL_ACCOUNTING, NO_THROUGHPUT_BOUND, TTFT_ACCOUNTING
from roofline.loader import load_specs
from roofline.measured import compare_all
from roofline.performance import CEILING

ROOT = Path(__file__).resolve().parents[1]
RUNS = benchmarks.load_serving_runs(ROOT / "data" / "serving-measurements.csv")
BY_ID = {run.id: run for run in RUNS}
SPECS = load_specs()
TOLERANCE = 1.02
NIM = "nim1.8.0-h100-sxm-tp2-llama-3.1-70b-fp8-5000-500-concurrency{}-ttft_mean"
#: Rows no bound is computed for, each with the reason (the test checks the list is exactly these).
UNBOUNDED = {
    "yi-34b": "the model has no spec in the package (split = out)",
}


def _simulate_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["simulate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("clients", "measured"), [(25, 0.68869), (50, 0.83451)])
def test_the_nim_closed_loop_rows_do_not_beat_their_ttft_ceiling(clients: int, measured: float) -> None:
    """Measured 0.689 s at 25 clients and 0.835 s at 50; the simulation at the ceiling's costs
    gives more than that (its scheduler queues prompts), so it cannot be the ceiling. The bound
    can, and stays under the measured mean."""
    run = BY_ID[NIM.format(clients)]
    assert run.value == pytest.approx(measured)
    scheduled = benchmarks.predict(run, CEILING, SPECS)
    assert scheduled > run.value  # the old "ceiling": one scheduler's time, beaten by the engine
    bound = benchmarks.ceiling(run, SPECS)
    assert bound <= run.value * TOLERANCE
    assert run.ratio(bound) <= TOLERANCE
    assert benchmarks.ceiling_accounting(run) == TTFT_ACCOUNTING


def test_simulate_names_the_bounds_and_their_accounting(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--gpu", "h100-sxm", "--gpus", "2", "--model", "llama-3.1-70b", "--precision", "fp8"]
    args += ["--kv-precision", "fp8", "--concurrency", "50", "--requests", "200", "--prompt", "5000"]
    args += ["--output", "500", "--policy", "chunked", "--token-budget", "8192", "--max-batch", "2048"]
    figures = _simulate_json(capsys, *args, "--admission", "reserve")
    best = figures["best_case"]
    assert figures["ttft_mean_s"] > 0.83451 >= best["ttft_mean_s"]
    assert figures["itl_mean_s"] >= best["itl_mean_s"] and 0.05973 >= best["itl_mean_s"]
    assert best["accounting"] == {
        "ttft": TTFT_ACCOUNTING,
        "itl": ITL_ACCOUNTING,
        "tpot": ITL_ACCOUNTING,
        "throughput": NO_THROUGHPUT_BOUND,
    }
    assert best["times_under_load"].startswith("depends on the scheduler")
    assert main(["simulate", *args]) == 0
    text = capsys.readouterr().out
    assert "times under load       depends on the scheduler" in text
    shown = fmt.duration(best["ttft_mean_s"])
    assert shown == "211.0 ms"  # 5,000 tokens of 70B fp8 on 2 H100s at the datasheet's peak, NCCL's ring latency
    assert f"TTFT bound             ≥ {shown} (prefill-first, unlimited token budget" in text


def test_the_bound_never_exceeds_the_simulation_at_ceiling_costs(capsys: pytest.CaptureFixture[str]) -> None:
    """Whatever the scheduler, the load and the lengths, the simulator itself never beats the bound."""
    base = ["--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--requests", "60", "--prompt", "100:900"]
    for extra in (["--rate", "inf"], ["--concurrency", "8", "--policy", "continuous"], ["--rate", "3"]):
        figures = _simulate_json(capsys, *base, "--output", "20:80", *extra)
        best = figures["best_case"]
        assert figures["ttft_p50_s"] >= best["ttft_mean_s"] * 0.999
        assert figures["itl_p50_s"] >= best["itl_mean_s"] * 0.999


def test_no_published_row_beats_a_ceiling_by_more_than_two_percent() -> None:
    """Every row of data/serving-measurements.csv, every split: throughput against its ceiling,
    every time (under load or not) against the best-case bound."""
    skipped, checked = {}, 0
    for run in RUNS:
        reason = UNBOUNDED.get(run.gpu) or UNBOUNDED.get(run.model)
        if reason or run.kind == "iteration":
            skipped[run.id] = reason or "one iteration's time, not a request's (split = out)"
            continue
        ratio = run.ratio(benchmarks.ceiling(run, SPECS))
        assert ratio <= TOLERANCE, (run.id, ratio)
        checked += 1
    assert checked >= 800 and all(BY_ID[row].split == "out" for row in skipped)


def test_no_measurement_beats_its_ceiling_speculative_flagged() -> None:
    """roofline/data/measurements.toml: speculative runs are left out (several tokens a pass,
    so a one-token-a-pass bound does not hold), and they are the only ones left out."""
    comparisons = compare_all(specs=SPECS)
    left_out = [c.measurement.id for c in comparisons if c.measurement.speculative]
    for comparison in comparisons:
        if comparison.measurement.speculative or not comparison.measurement.bounded:
            continue
        assert comparison.ratio <= TOLERANCE, (comparison.measurement.id, comparison.ratio)
    # The reason they are flagged: speculation beats a one-token-a-pass ceiling (EAGLE-3 by 1.67x).
    assert "sglang-eagle3-llama-3.1-8b-h100" in left_out
    assert max(c.ratio for c in comparisons if c.measurement.speculative) > 1.5


def test_the_nim_rows_steady_state_after_a_warmup_stays_above_the_bound(capsys: pytest.CaptureFixture[str]) -> None:
    """At the NIM rows' conditions (50 clients, 5,000/500 tokens), every client sending at time 0
    queues 50 prompts at once; after a warm-up of 100 requests the steady state's mean TTFT is far
    lower, closer to the measured 0.835 s, and still no lower than any scheduler's bound."""
    args = ["--gpu", "h100-sxm", "--gpus", "2", "--model", "llama-3.1-70b", "--precision", "fp8"]
    args += ["--kv-precision", "fp8", "--concurrency", "50", "--requests", "200", "--prompt", "5000"]
    args += ["--output", "500", "--policy", "chunked", "--token-budget", "8192", "--max-batch", "2048"]
    cold = _simulate_json(capsys, *args, "--admission", "reserve")
    warm = _simulate_json(capsys, *args, "--admission", "reserve", "--warmup", "100")
    assert warm["fleet"]["warmup_requests"] == 100 and cold["fleet"]["warmup_requests"] == 0
    assert cold["ttft_mean_s"] > 2 * 0.83451 > 0.83451 > warm["ttft_mean_s"] > warm["best_case"]["ttft_mean_s"]
    assert warm["itl_mean_s"] >= warm["best_case"]["itl_mean_s"]


def test_no_simulated_throughput_beats_the_arrivals_bound(capsys: pytest.CaptureFixture[str]) -> None:
    """Open loop: the arrivals are the seed's, so no server (the simulator at either costs included)
    measures more output tokens/s than the last request's send plus its best-case service allows;
    with a warm-up the window starts at the first measured send, with replicas the stream is shared."""
    base = ["--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--requests", "120", "--prompt", "100:900"]
    base += ["--output", "20:300", "--costs", "expected"]
    for extra in ([], ["--warmup", "30"], ["--replicas", "3", "--warmup", "12"], ["--prefix-tokens", "64"]):
        for rate in ("0.5", "4", "60"):
            figures = _simulate_json(capsys, *base, "--rate", rate, *extra)
            most = figures["best_case"]["throughput_tokens_per_s"]
            assert figures["throughput_tokens_per_s"] <= most * (1 + 1e-12), (extra, rate)
            assert figures["expected"]["throughput_tokens_per_s"] <= most * (1 + 1e-12), (extra, rate)
            assert figures["band"]["throughput_tokens_per_s"][1] <= most


def test_an_expected_throughput_band_never_promises_more_than_the_arrivals(capsys: pytest.CaptureFixture[str]) -> None:
    """At 4 requests/s of 256 output tokens (about 1,024 tokens/s offered) the band's high end was
    1,241 tokens/s, a share of the expected figure, though the stream cannot give more than the
    ceiling run's 1,070; it is now held there, in the JSON and the report."""
    args = ["--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--costs", "expected", "--rate", "4", "--requests", "300"]
    figures = _simulate_json(capsys, *args)
    most = figures["best_case"]["throughput_tokens_per_s"]
    assert figures["throughput_tokens_per_s"] == pytest.approx(most, rel=2e-3)  # the ceiling run keeps up
    low, high = figures["band"]["throughput_tokens_per_s"]
    assert high == most and low < figures["expected"]["throughput_tokens_per_s"] < high
    assert main(["simulate", *args]) == 0
    text = capsys.readouterr().out
    assert f"throughput bound       ≤ {fmt.rate(most)} output tokens/s (open loop" in text
    assert f"(band {fmt.rate(low)} to {fmt.rate(most)})" in text


def test_a_closed_loop_has_no_throughput_bound_and_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--costs", "expected", "--requests", "60"]
    for load in (["--concurrency", "4"], ["--rate", "inf"]):
        figures = _simulate_json(capsys, *args, *load)
        assert figures["best_case"]["throughput_tokens_per_s"] is None
        assert figures["best_case"]["accounting"]["throughput"].startswith("none: a closed loop")
        assert main(["simulate", *args, *load]) == 0
        assert "throughput bound       none: a closed loop" in capsys.readouterr().out


def test_a_speculative_runs_bands_are_held_to_bounds_it_names(capsys: pytest.CaptureFixture[str]) -> None:
    """Speculation emits several tokens a pass, so it has no gap bound; its JSON names the two bounds
    it has (the first token's, and the arrivals' throughput with every later token at once), and the
    expected run's bands stay within them."""
    args = ["--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--costs", "expected", "--rate", "4", "--requests", "200"]
    figures = _simulate_json(capsys, *args, "--speculate-gamma", "3", "--speculate-alpha", "0.6")
    best = figures["best_case"]
    assert set(best) == {"ttft_mean_s", "accounting", "times_under_load", "throughput_tokens_per_s"}
    assert best["accounting"]["ttft"] == TTFT_ACCOUNTING
    assert "every later token at once (no gap bound)" in best["accounting"]["throughput"]
    assert figures["throughput_tokens_per_s"] <= best["throughput_tokens_per_s"]
    assert figures["band"]["throughput_tokens_per_s"][1] <= best["throughput_tokens_per_s"]
    assert figures["band"]["ttft_mean_s"][0] >= best["ttft_mean_s"]


@pytest.mark.parametrize("microbatches", ["2", "4"])
def test_a_pipeline_of_micro_batches_does_not_beat_its_bounds(capsys: pytest.CaptureFixture[str], microbatches) -> None:
    """With M micro-batches a prompt's tokens are shared among them and pass the stages at once, so
    a first token can come sooner than the whole prompt through every stage: at 2 micro-batches the
    mean TTFT was 56.4 ms against a 62.2 ms "bound", and throughput beat its bound by 0.17%. The TTFT
    bound is now one micro-batch's share of the prompt through every stage."""
    args = ["--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--gpus", "4", "--parallel", "pp"]
    args += ["--microbatches", microbatches, "--prompt", "4096", "--output", "2:64", "--rate", "5", "--requests", "60"]
    figures = _simulate_json(capsys, *args, "--costs", "expected")
    best = figures["best_case"]
    assert figures["ttft_p50_s"] >= best["ttft_mean_s"] and figures["ttft_mean_s"] >= best["ttft_mean_s"]
    for run in (figures, figures["expected"]):
        assert run["throughput_tokens_per_s"] <= best["throughput_tokens_per_s"] * (1 + 1e-12)
    assert f"on {microbatches} micro-batches, which pass the stages at once" in best["accounting"]["ttft"]


def test_a_run_that_turns_requests_away_says_why_it_has_no_throughput_bound(capsys) -> None:
    args = ["--gpu", "a10", "--model", "llama-3.1-8b", "--prompt", "20000:80000", "--output", "16", "--rate", "0.2"]
    figures = _simulate_json(capsys, *args, "--requests", "10")
    assert figures["rejected"] > 0 and figures["best_case"]["throughput_tokens_per_s"] is None
    assert figures["best_case"]["accounting"]["throughput"].startswith("none: some requests never fit in the KV cache")
