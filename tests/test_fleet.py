"""Issue 36: ``simulate --warmup N`` measures the steady state after N warm-up requests (AIPerf's
--warmup-request-count), and ``--replicas N`` serves the stream on N data-parallel copies, split
round-robin (roofline/fleet.py)."""

from __future__ import annotations

import json
import math

import pytest

from roofline import Hardware, ServingConfig, Workload, builtin_specs
from roofline.cli import main
from roofline.fleet import FleetResult, simulate_fleet
from roofline.serving import Lengths, finished_run, simulate
from support import run_cli

SPECS = builtin_specs()
HARDWARE = Hardware(SPECS.gpu("h100-sxm"))
WORKLOAD = Workload(SPECS.model("llama-3.1-8b"), "bf16")
BASE = ["--gpu", "h100-sxm", "--model", "llama-3.1-8b"]


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``roofline simulate`` with ``BASE`` and ``args`` (``support.run_cli``)."""
    return run_cli(capsys, "simulate", *BASE, *args)


@pytest.mark.parametrize(
    "config",
    [
        ServingConfig(requests=120, rate=15.0, prompt=Lengths(100, 900), output=Lengths(20, 200)),
        ServingConfig(requests=120, concurrency=12, policy="chunked", prompt=Lengths(100, 900), output=Lengths(2, 200)),
        ServingConfig(requests=60, rate=math.inf, policy="static", max_batch=8, output=Lengths(1, 150)),
    ],
    ids=["open-continuous", "closed-chunked", "static"],
)
def test_warmup_leaves_out_the_first_requests_and_measures_the_window_after_them(config: ServingConfig) -> None:
    """One replica with W warm-up requests is the plain run of W + requests, measured over the
    requests after the first W: their TTFT and TPOT, every gap they waited (ITL), and the rate over
    the window from the first measured send to the last finish."""
    warmup = 30
    whole = finished_run(HARDWARE, WORKLOAD, ServingConfig(**{**config.__dict__, "requests": warmup + config.requests}))
    kept = range(warmup, warmup + config.requests)
    ttfts = [whole.first[i] - whole.arrival[i] for i in kept]
    gaps = sum(whole.output[i] - 1 for i in kept)
    fleet = simulate_fleet(HARDWARE, WORKLOAD, config, warmup=warmup)
    assert isinstance(fleet, FleetResult) and fleet.completed == config.requests
    assert fleet.ttft_mean_s == pytest.approx(math.fsum(ttfts) / len(ttfts), rel=1e-12)
    assert fleet.ttft_s[99] == sorted(ttfts)[math.ceil(0.99 * len(ttfts)) - 1]
    # A request's gaps add up to its finish less its first token, so the measured ITL mean is exact.
    assert fleet.itl_count == gaps
    assert fleet.itl_mean_s == pytest.approx(math.fsum(whole.finish[i] - whole.first[i] for i in kept) / gaps)
    window = max(whole.finish[i] for i in kept) - whole.arrival[warmup]
    assert fleet.duration_s == pytest.approx(window)
    assert fleet.throughput_tokens_per_s == pytest.approx(sum(whole.output[i] for i in kept) / window)
    plain = simulate(HARDWARE, WORKLOAD, config)
    assert fleet.ttft_mean_s != plain.ttft_mean_s  # the warm-up changes what is measured


def test_no_replicas_and_no_warmup_is_the_one_replica_run_figure_for_figure() -> None:
    config = ServingConfig(requests=80, concurrency=8, prompt=Lengths(50, 500), output=Lengths(10, 90))
    assert simulate_fleet(HARDWARE, WORKLOAD, config).to_dict() == simulate(HARDWARE, WORKLOAD, config).to_dict()


def test_replicas_split_clients_round_robin_and_sum_the_totals(capsys: pytest.CaptureFixture[str]) -> None:
    """Fixed lengths: four replicas of 8 clients each are four copies of the one-replica run with 8
    clients, so the throughput is four times it and every latency percentile the same."""
    lengths = ["--prompt", "600", "--output", "120", "--json"]
    one = json.loads(_cli(capsys, "--concurrency", "8", "--requests", "64", *lengths)[1])
    status, out, err = _cli(capsys, "--concurrency", "32", "--requests", "256", "--replicas", "4", *lengths)
    four = json.loads(out)
    assert status == 0 and err == ""
    assert four["fleet"]["replicas"] == 4 and four["fleet"]["split"] == "round-robin"
    assert four["completed"] == 256
    assert four["throughput_tokens_per_s"] == pytest.approx(4 * one["throughput_tokens_per_s"], rel=1e-12)
    for key in ("ttft_p50_s", "ttft_p99_s", "itl_p99_s", "tpot_mean_s", "latency_p90_s"):
        assert four[key] == pytest.approx(one[key], rel=1e-12), key
    assert four["busy_fraction"] == pytest.approx(one["busy_fraction"])


def test_replicas_share_an_open_loop_and_lower_its_wait() -> None:
    """Requests split round-robin over 3 replicas at the same total rate: every request is served,
    the throughput follows the arrivals, and each replica, with a third of the load, queues less."""
    config = ServingConfig(requests=300, rate=40.0, prompt=Lengths(500, 1500), output=Lengths(50, 300))
    one, three = simulate(HARDWARE, WORKLOAD, config), simulate_fleet(HARDWARE, WORKLOAD, config, replicas=3)
    assert three.completed == one.completed == 300
    assert three.output_tokens == one.output_tokens  # the same stream, split
    assert three.ttft_mean_s < one.ttft_mean_s and three.itl_mean_s < one.itl_mean_s


def test_the_report_and_json_name_the_replicas_and_the_warmup(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--concurrency", "16", "--requests", "80", "--warmup", "20", "--replicas", "2", "--output", "40"]
    status, text, _ = _cli(capsys, *args)
    assert status == 0
    assert text.startswith("Llama 3.1 8B on 2 replicas of 1 × NVIDIA H100 SXM")
    assert (
        "  replicas               2 independent copies, requests (and a closed loop's clients) split round-robin"
        in text
    )
    figures = json.loads(_cli(capsys, *args, "--json")[1])
    fleet = figures["fleet"]
    assert (fleet["warmup_requests"], fleet["measured_requests"], figures["completed"]) == (20, 80, 80)
    assert fleet["window_end_s"] - fleet["window_start_s"] == pytest.approx(figures["duration_s"])
    start, end = fleet["window_start_s"], fleet["window_end_s"]
    assert "  warm-up                the first 20 requests sent are left out of every figure above" in text
    assert f"measured from {start:,.2f} s to {end:,.2f} s" in text
    assert fleet["run_duration_s"] >= end > start > 0


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--warmup", "-1"], "argument --warmup: must be at least 0, got -1"),
        (["--replicas", "0"], "argument --replicas: must be at least 1, got 0"),
        (["--replicas", "8", "--concurrency", "4"], "--replicas: 8 replicas need at least one client each, got 4"),
        (["--replicas", "30", "--requests", "20"], "--replicas: 30 replicas need at least one request each"),
        (
            ["--warmup", "5", "--speculate-gamma", "3", "--speculate-alpha", "0.7"],
            "--warmup: not simulated with speculation yet",
        ),
    ],
)
def test_bad_replicas_or_warmup_is_one_line(capsys: pytest.CaptureFixture[str], args: list[str], line: str) -> None:
    status, out, err = _cli(capsys, *args)
    assert status == 2 and out == ""
    assert line in err and err.count("\n") == 1


@pytest.mark.parametrize("layout", [[], ["--parallel", "pp"], ["--costs", "expected"]], ids=["tp", "pp", "expected"])
def test_estimate_replicas_multiplies_one_copys_totals(capsys: pytest.CaptureFixture[str], layout: list[str]) -> None:
    """``estimate --replicas 4``: four copies of TP2, each with its own 32 users (MLPerf's TP2x4):
    per-user figures unchanged, users, GPUs and decode tokens/s four times one copy's."""
    args = ["estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--precision", "fp8", "--gpus", "2"]
    args += ["--batch", "32", *layout]
    assert main([*args, "--json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert "replicas" not in one  # one copy: the JSON as before
    assert main([*args, "--replicas", "4", "--json"]) == 0
    four = json.loads(capsys.readouterr().out)
    total = four.pop("replicas")
    assert four == one
    assert (total["count"], total["gpus"], total["users"]) == (4, 8, 128)
    assert total["decode_tokens_per_s_total"] == pytest.approx(4 * one["decode_tokens_per_s_total"])
    if "band" in one:
        assert total["expected_decode_tokens_per_s_total"] == pytest.approx(
            4 * one["expected"]["decode_tokens_per_s_total"]
        )
        assert total["expected_band"] == pytest.approx([4 * x for x in one["band"]["throughput_tokens_per_s"]])
    assert main([*args, "--replicas", "4"]) == 0
    line = f"4 independent copies of the above: 128 users on 8 GPUs, {total['decode_tokens_per_s_total']:,.0f} tokens/s"
    assert line in capsys.readouterr().out
