"""``roofline estimate --parallel tp|pp|tpxpp --pp-stages N --microbatches M`` (issue 21): a pipeline's
figures as ``roofline.deployment`` computes them, the best TP degree in every JSON, and one line for
each bad split."""

from __future__ import annotations

import json

import pytest

from roofline import Hardware, Workload, builtin_specs
from roofline.deployment import Split, best_tp_degree, deploy
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
        (("--gpus", "16", "--parallel", "tpxpp", "--pp-stages", "1"), "spans more than one"),
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
