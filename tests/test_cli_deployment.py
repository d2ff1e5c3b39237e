"""``roofline estimate --parallel tp|pp|tpxpp --pp-stages N --microbatches M`` (issue 21): a pipeline's
figures as ``roofline.deployment`` computes them, the best TP degree in every JSON, and one line for
each bad split; ``roofline simulate`` with the same flags, its iterations timed by the same rules."""

from __future__ import annotations

import json
import math

import pytest

from roofline import Hardware, Workload, builtin_specs, serving
from roofline import formatting as fmt
from roofline.calibration import load_calibration
from roofline.deployment import Split, best_tp_degree, deploy, pipeline_costs, pipeline_decode
from roofline.serving import ServingConfig, parse_lengths, simulate
from support import run_cli

SPECS = builtin_specs()
BASE = ("estimate", "--gpu", "h200", "--model", "llama-3.1-405b", "--precision", "fp8", "--kv-precision", "fp8")


def test_a_pipeline_prints_the_deployments_figures(capsys) -> None:
    argv = (*BASE, "--gpus", "8", "--parallel", "pp", "--microbatches", "8", "--batch", "1024", "--context", "1024")
    status, out, err = run_cli(capsys, *argv, "--json")
    assert status == 0 and err == ""
    data = json.loads(out)
    hardware = Hardware(SPECS.gpu("h200"), 1, "auto")
    work = Workload(SPECS.model("llama-3.1-405b"), "fp8", "fp8", 1024, 1024)
    result = deploy(hardware, work, Split(1, 8, 8))
    assert data["parallel"] == "PP8" and data["stage_layers"] == [16] * 6 + [15] * 2
    assert data["decode_tokens_per_s_total"] == result.step.tokens_per_s_total
    assert data["pipeline_bubble_fraction"] == 7 / 15
    assert data["allreduces_per_step"] == 0 and data["hops"] == 7
    status, text, _ = run_cli(capsys, *argv)
    assert "as PP8 (8 stages of 1 GPU)" in text.splitlines()[0]
    assert "every stage in turn, and 7 hops" in text


def test_tensor_parallel_json_gains_the_best_degree_and_no_bubble(capsys) -> None:
    argv = ("estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--gpus", "8", "--json")
    data = json.loads(run_cli(capsys, *argv)[1])
    assert data["pipeline_bubble_fraction"] == 0.0
    work = Workload(SPECS.model("llama-3.1-8b"))
    assert data["best_tp_degree"] == best_tp_degree(Hardware(SPECS.gpu("h100-sxm"), 8), work)
    assert data["allreduces_per_step"] == 64 and data["allreduce_bytes"] == 4096 * 2


def test_a_split_across_nodes_warns_and_counts_the_crossing_hops(capsys) -> None:
    argv = (*BASE, "--gpus", "16", "--parallel", "tpxpp", "--pp-stages", "2", "--json")
    status, out, err = run_cli(capsys, *argv)
    assert status == 0
    assert "spans 2 nodes" in err and err.count("\n") == 1
    data = json.loads(out)
    assert data["spans_nodes"] is True and data["hops_across_nodes"] == 1 and data["tp"] == 8


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (("--gpus", "200", "--parallel", "pp"), "must not exceed the model's 126 layers"),
        (
            ("--gpus", "6", "--parallel", "tpxpp", "--pp-stages", "1"),
            "nearest usable tensor-parallel degrees are 4 and 8",
        ),
        (("--gpus", "8", "--parallel", "tpxpp", "--pp-stages", "3"), "must divide the 8 GPUs"),
        (("--gpus", "8", "--parallel", "tpxpp"), "add --pp-stages N"),
        (("--pp-stages", "2"), "--pp-stages splits a pipeline"),
        (("--allreduce-latency", "-1e-6"), "--allreduce-latency"),
    ],
)
def test_bad_splits_give_one_line(capsys, extra, words) -> None:
    status, out, err = run_cli(capsys, *BASE, *extra)
    assert status != 0 and out == ""
    assert words in err and err.count("\n") == 1


def test_more_gpus_than_a_domain_say_so(capsys) -> None:
    status, _, err = run_cli(capsys, "estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--gpus", "16")
    assert status == 0
    assert "more than one NVLink 4 + NVSwitch (HGX H100) domain of 8" in err


def test_a_pipeline_at_the_expected_costs_comes_with_its_band(capsys) -> None:
    argv = (*BASE, "--gpus", "8", "--parallel", "pp", "--microbatches", "8", "--batch", "256", "--costs", "expected")
    data = json.loads(run_cli(capsys, *argv, "--json")[1])
    assert data["costs"] == "expected"
    assert data["expected"]["decode_tokens_per_s_total"] < data["decode_tokens_per_s_total"]
    low, high = data["band"]["throughput_tokens_per_s"]
    assert low <= data["expected"]["decode_tokens_per_s_total"] <= high
    status, text, _ = run_cli(capsys, *argv)
    assert status == 0 and "  expected " in text
    # The text shows the band the JSON holds, and what the fit rests on, as the TP report does.
    assert (
        f"{fmt.rate(data['expected']['decode_tokens_per_s_total'])} in all (band {fmt.rate(low)} to {fmt.rate(high)})"
        in text
    )
    step_low, step_high = data["band"]["itl_mean_s"]
    assert f"(band {fmt.milliseconds(step_low)} to {fmt.milliseconds(step_high)})" in text
    assert "  expected costs " in text and "  expected harness " in text
    assert "of the fp8 peak" in text  # the math resolved, not "auto"


def test_a_pipeline_on_an_unfitted_gpu_says_so_in_its_text_as_in_its_json(capsys) -> None:
    argv = ("estimate", "--gpu", "mi300x", "--model", "llama-3.1-70b", "--gpus", "4", "--parallel", "pp")
    argv = (*argv, "--prompt", "2000", "--costs", "expected")
    data = json.loads(run_cli(capsys, *argv, "--json")[1])
    assert data["fit"]["band_widened"] and data["fit"]["unfitted"]
    text = run_cli(capsys, *argv)[1]
    for sentence in data["fit"]["unfitted"]:
        assert "  unfitted " in text and sentence in text
    ttft_low, ttft_high = data["band"]["ttft_mean_s"]
    prefill = fmt.milliseconds(data["expected"]["prefill_s"])
    assert f"{prefill} (band {fmt.milliseconds(ttft_low)} to {fmt.milliseconds(ttft_high)})" in text


# -- simulate takes the same split (issue 21: "simulate takes the same flags") ---------------------

SIMULATE = (
    "simulate",
    "--gpu",
    "h200",
    "--model",
    "llama-3.1-405b",
    "--precision",
    "fp8",
    "--kv-precision",
    "fp8",
    "--rate",
    "inf",
)


@pytest.mark.parametrize(
    ("gpu", "model", "precision", "split", "batch", "context"),
    [
        ("h200", "llama-3.1-405b", "fp8", Split(1, 8, 8), 1024, 1024),
        ("h200", "llama-3.1-405b", "fp8", Split(1, 8, 1), 1, 1024),
        ("h100-sxm", "llama-3.1-70b", "bf16", Split(4, 2, 4), 64, 4000),
        ("h100-sxm", "llama-3.1-8b", "bf16", Split(8, 2, 2), 512, 100),
        ("h100-sxm", "llama-3.1-8b", "bf16", Split(2, 4, 2), 2048, 2000),
    ],
)
@pytest.mark.parametrize("costs", ["ceiling", "expected"])
def test_a_serving_iteration_of_decodes_takes_the_deployments_interval(
    gpu, model, precision, split, batch, context, costs
) -> None:
    hardware = Hardware(SPECS.gpu(gpu), 1, "auto")
    if costs == "expected":
        hardware = Hardware(SPECS.gpu(gpu), 1, "auto", costs=load_calibration().cost_model(gpu))
    work = Workload(SPECS.model(model), precision, precision, batch, context)
    iteration = pipeline_costs(hardware, work, split).iteration(batch, batch * context)
    assert iteration.seconds == pytest.approx(pipeline_decode(hardware, work, split).interval_s, rel=1e-12)


def test_simulate_runs_a_pipeline_at_the_estimates_interval(capsys) -> None:
    # 8 users, all at once, long prompts and 9 tokens each: the decode iterations read about the
    # same context, so each gap is estimate --parallel pp's interval at that batch and context.
    argv = (*SIMULATE, "--gpus", "8", "--parallel", "pp", "--microbatches", "4", "--requests", "8")
    status, out, err = run_cli(capsys, *argv, "--max-batch", "8", "--prompt", "4000", "--output", "9", "--json")
    assert status == 0 and err == ""
    data = json.loads(out)
    assert (data["parallel"], data["pp_stages"], data["microbatches"], data["gpus"]) == ("PP8", 8, 4, 8)
    assert data["pipeline_bubble_fraction"] == 7 / 11
    hardware = Hardware(SPECS.gpu("h200"), 1, "auto")
    work = Workload(SPECS.model("llama-3.1-405b"), "fp8", "fp8", 8, 4004)
    interval = pipeline_decode(hardware, work, Split(1, 8, 4)).interval_s
    assert data["tpot_mean_s"] == pytest.approx(interval, rel=1e-3)
    status, text, _ = run_cli(capsys, *argv)
    assert "8 × NVIDIA H200 SXM as PP8 (8 stages of 1 GPU) in 4 micro-batches" in text.splitlines()[0]


def test_simulate_without_a_pipeline_is_unchanged(capsys) -> None:
    plain = run_cli(capsys, *SIMULATE, "--gpus", "8", "--requests", "50", "--json")[1]
    assert run_cli(capsys, *SIMULATE, "--gpus", "8", "--requests", "50", "--parallel", "tp", "--json")[1] == plain
    config = ServingConfig(rate=math.inf, requests=50)
    work = Workload(SPECS.model("llama-3.1-405b"), "fp8", "fp8")
    by_split = simulate(Hardware(SPECS.gpu("h200"), 1), work, config, Split(8, 1, 1)).to_dict()
    assert by_split == simulate(Hardware(SPECS.gpu("h200"), 8), work, config).to_dict()


def test_simulate_pipelines_at_the_expected_costs_with_their_band(capsys) -> None:
    argv = (*SIMULATE, "--gpus", "16", "--parallel", "tpxpp", "--pp-stages", "2", "--requests", "40")
    status, out, err = run_cli(capsys, *argv, "--costs", "expected", "--json")
    assert status == 0 and "spans 2 nodes: 1 of the hops" in err and err.count("\n") == 1
    data = json.loads(out)
    assert data["parallel"] == "TP8 × PP2" and data["costs"] == "expected"
    low, high = data["band"]["throughput_tokens_per_s"]
    assert data["expected"]["throughput_tokens_per_s"] < data["throughput_tokens_per_s"]
    assert low <= data["expected"]["throughput_tokens_per_s"] <= high


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (("--gpus", "200", "--parallel", "pp"), "--pp-stages: must not exceed the model's 126 layers"),
        (
            ("--gpus", "6", "--parallel", "tpxpp", "--pp-stages", "1"),
            "nearest usable tensor-parallel degrees are 4 and 8",
        ),
        (("--gpus", "8", "--parallel", "tpxpp", "--pp-stages", "3"), "must divide the 8 GPUs"),
        (("--gpus", "8", "--parallel", "tpxpp"), "add --pp-stages N"),
        (("--pp-stages", "2"), "--pp-stages splits a pipeline"),
        (("--allreduce-latency", "-1e-6"), "--allreduce-latency"),
        (("--gpus", "8", "--allreduce-preset", "nccl", "--allreduce-latency", "0"), "cannot be combined"),
        (("--gpus", "8", "--parallel", "pp", "--allreduce-preset", "nccl2"), "unknown all-reduce latency preset"),
        (
            ("--gpus", "8", "--parallel", "pp", "--speculate-gamma", "3", "--speculate-alpha", "0.7"),
            "--parallel: speculation is simulated with tensor parallelism only",
        ),
        (("--gpus", "2", "--parallel", "pp"), "leave no room for a KV cache"),
    ],
)
def test_bad_simulated_splits_give_one_line(capsys, extra, words) -> None:
    status, out, err = run_cli(capsys, *SIMULATE, "--requests", "10", *extra)
    assert status == 2 and out == ""
    assert words in err and err.count("\n") == 1


@pytest.mark.parametrize("microbatches", [1, 2, 4, 8])
@pytest.mark.parametrize("policy", ["continuous", "chunked"])
def test_a_pipelines_runs_summed_in_closed_form_match_stepping_one_iteration_at_a_time(
    microbatches: int, policy: str, monkeypatch
) -> None:
    # The simulator sums runs of like iterations as lines in the context; a pipeline's round is
    # max(lap, m x slowest stage), so where the two cross within a run the sum is a close secant.
    hardware = Hardware(SPECS.gpu("h100-sxm"), 1, "auto")
    work = Workload(SPECS.model("llama-3.1-70b"), "fp8", "fp8")
    lengths = {"prompt": parse_lengths("64:2048", "--prompt"), "output": parse_lengths("16:512", "--output")}
    config = ServingConfig(policy=policy, rate=30, requests=300, trace_requests=100, seed=3, **lengths)
    split = Split(1, 4, microbatches)
    fast = simulate(hardware, work, config, split)
    monkeypatch.setattr(serving, "_run_cap", lambda _: 1)
    monkeypatch.setattr(serving, "MAX_STEPS_PER_REQUEST", 10**9)
    stepped = simulate(hardware, work, config, split)
    assert fast.iterations == stepped.iterations and fast.completed == stepped.completed == 300
    for mine, reference in zip(fast.trace, stepped.trace, strict=True):
        assert mine.finish_s == pytest.approx(reference.finish_s, rel=1e-6)
