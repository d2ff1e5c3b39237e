"""Issue 35, links: every built-in GPU has cited links, a multi-GPU run is charged for them or
refused without them, a malformed links table is refused in one line, every report names the
links, and a pipeline's JSON carries the keys a tensor-parallel script reads."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from roofline import SpecError, builtin_specs
from roofline.cli import TP_ONLY_KEYS
from roofline.deployment import deploy, split_for
from roofline.performance import Hardware, Workload, decode_step, gpus_to_fit
from roofline.specs import ALLREDUCE_ALGORITHMS
from support import GOOD_GPU, assert_one_line_error, run_cli, write

SPECS = builtin_specs()

#: A links table for GOOD_GPU's "my-gpu", as a PCIe Gen4 x16 card has it.
LINKS = """
[gpu."my-gpu".interconnect]
scale_up = "PCIe Gen4 x16"
domain_gpus = 8
link_bytes_per_s = 32e9
scale_out_bytes_per_s = 32e9
allreduce_latency_s = { nccl = { ring_gpus = 8, ring_s = 40e-6 } }
source = "https://example.com/my-gpu-links"
"""


def estimate_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    status, out, err = run_cli(capsys, "estimate", *argv, "--json")
    assert status == 0, err
    return json.loads(out)


@pytest.mark.parametrize("gpu_id", sorted(SPECS.gpus))
def test_every_builtin_gpu_has_cited_links(gpu_id: str) -> None:
    link = SPECS.gpu(gpu_id).interconnect
    assert link is not None, f"{gpu_id} has no interconnect"
    assert "http" in link.source and link.scale_up
    # One direction: a PCIe Gen4 x16 card's "64 GB/s bidirectional" is 32e9 here.
    if "PCIe Gen4 x16" in link.scale_up:
        assert link.link_bytes_per_s == 32e9
        assert "peer to peer" in link.scale_up  # P2P or through host memory, said either way


@pytest.mark.parametrize("gpu_id", sorted(SPECS.gpus))
def test_every_builtin_latency_names_its_algorithm_and_has_a_fixed_part(gpu_id: str) -> None:
    """H1 as a class: no built-in preset is the older ring scaled by (G-1)/7 (no fixed part,
    extrapolated below its one measurement) or an all-reduce whose algorithm is not stated."""
    for preset in SPECS.gpu(gpu_id).interconnect.allreduce_latency_s.values():
        assert preset.algorithm in ALLREDUCE_ALGORITHMS, (gpu_id, preset.name)
        assert preset.ring_s is None, (gpu_id, preset.name)
        if preset.algorithm == "ring":
            # A ring is priced base + step x 2(G-1): two GPUs pay more than the base alone.
            assert preset.base_s and preset.base_s > 0 and preset.at(2) > preset.base_s
            # The fit meets what was measured at the counts the source measured.
            for gpus, seconds in preset.measured_s.items():
                assert preset.fit(gpus) == pytest.approx(seconds, rel=0.05), (gpu_id, gpus)


def test_l40s_at_two_gpus_pays_a_pcie_all_reduce(capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's goal: the L40S's all-reduces were free; now each one crosses PCIe Gen4 x16."""
    args = ("--gpu", "l40s", "--model", "llama-3.1-8b", "--gpus", "2", "--batch", "64")
    figures = estimate_json(capsys, *args)
    assert figures["communication_s"] > 0 and figures["allreduces_per_step"] == 64
    one = estimate_json(capsys, "--gpu", "l40s", "--model", "llama-3.1-8b", "--batch", "64")
    assert figures["decode_step_s"] > one["decode_step_s"] / 2 + figures["communication_s"] * 0.99
    status, out, _ = run_cli(capsys, "estimate", *args)
    assert status == 0
    assert "ceiling's links      64 all-reduces a pass" in out and "/ 32 GB/s over PCIe Gen4 x16" in out
    # Nothing was measured on fewer than 8 L40S-class cards: the report says the latency is a fit,
    # never that it is "the smallest measured".
    assert "fitted: 5.56 µs + 2.46 µs x 2 steps" in out and "(nothing measured at or below 2 GPUs)" in out
    assert "the smallest measured" not in out


def test_l40s_tp8_is_charged_more_talk_than_tp4(capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's ranking: on PCIe, 8 GPUs talk more per step than 4 (a longer ring)."""
    base = ("--gpu", "l40s", "--model", "llama-3.1-70b", "--precision", "fp8", "--batch", "64")
    four = estimate_json(capsys, *base, "--gpus", "4")
    eight = estimate_json(capsys, *base, "--gpus", "8")
    assert eight["communication_s"] > four["communication_s"] > 0


@pytest.mark.parametrize("gpu_id", sorted(SPECS.gpus))
def test_every_report_names_its_links_on_one_gpu_too(gpu_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "estimate", "--gpu", gpu_id, "--model", "llama-3.1-8b", "--precision", "int8")
    assert status == 0, err
    link = SPECS.gpu(gpu_id).interconnect
    assert f"ceiling's links      one GPU: no all-reduces; its links: {link.scale_up}," in out


def test_a_pipeline_report_names_its_links(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("--gpu", "l40s", "--model", "llama-3.1-8b", "--gpus", "2", "--batch", "64", "--parallel", "pp")
    status, out, err = run_cli(capsys, "estimate", *argv)
    assert status == 0, err
    assert "ceiling's links              PCIe Gen4 x16, peer to peer (no NVLink), 32 GB/s each way" in out
    assert "each hop" in out


# -- A GPU of one's own without links: refused for more than one GPU, in one line -----------------


@pytest.mark.parametrize(
    "extra",
    [(), ("--parallel", "pp"), ("--parallel", "tpxpp", "--gpus", "4", "--pp-stages", "2")],
    ids=["tp", "pp", "tpxpp"],
)
@pytest.mark.parametrize("how", ["--specs", "--gpu"])
def test_more_than_one_gpu_without_links_is_refused(
    how: str, extra: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, GOOD_GPU)
    gpu = ("--specs", path, "--gpu", "my-gpu") if how == "--specs" else ("--gpu", path)
    status, out, err = run_cli(capsys, "estimate", *gpu, "--model", "llama-3.1-8b", "--gpus", "2", *extra)
    assert_one_line_error(
        status,
        err,
        "roofline estimate: error:",
        "field 'interconnect'",
        "my-gpu has no interconnect in its spec",
        'add a [gpu."my-gpu".interconnect] table',
        "or run it on one GPU",
    )
    assert out == ""


def test_a_table_leaves_out_what_needs_links_it_lacks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The table puts each model on the GPUs it needs: a chip without links gets the models one
    of it holds, and a warning counts the pairs left out."""
    path = write(tmp_path, GOOD_GPU)
    status, out, err = run_cli(capsys, "table", "--gpu", "my-gpu", "--specs", path, "--format", "csv")
    assert status == 0 and "Llama 3.1 8B" in out and "Llama 3.1 405B" not in out
    assert "left out: each needs more than one my-gpu, which has no interconnect in its spec" in err


def test_one_gpu_without_links_still_runs_and_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "estimate", "--gpu", write(tmp_path, GOOD_GPU), "--model", "llama-3.1-8b")
    assert status == 0, err
    assert "ceiling's links      one GPU: no all-reduces; no interconnect in its spec, so one GPU only" in out


def test_the_calculators_refuse_alike() -> None:
    """The calculators build the same Hardware and call the same deploy: both refuse."""
    unlinked = dataclasses.replace(SPECS.gpu("h100-sxm"), interconnect=None)
    workload = Workload(SPECS.model("llama-3.1-8b"))
    with pytest.raises(SpecError, match="no interconnect in its spec, so 2 GPUs' all-reduces cannot be charged"):
        decode_step(Hardware(unlinked, 2), workload)
    assert gpus_to_fit(Hardware(unlinked), Workload(SPECS.model("llama-3.1-405b"))) > 1  # sizes need no links
    with pytest.raises(SpecError, match="no interconnect in its spec, so 4 GPUs"):
        deploy(Hardware(unlinked, 1), workload, split_for("pp", 4, None, 1))
    assert Hardware(unlinked, 1).allreduce_latency == 0.0  # one GPU: nothing to charge


# -- A malformed links table: one line naming the file, the entry and the field, and the fix ------

BAD_LINKS = {
    "missing field": (
        LINKS.replace("link_bytes_per_s = 32e9\n", ""),
        ["field 'interconnect.link_bytes_per_s'", "is missing", "(an entry states scale_up, domain_gpus"],
    ),
    "negative": (
        LINKS.replace("link_bytes_per_s = 32e9", "link_bytes_per_s = -32e9"),
        ["field 'interconnect.link_bytes_per_s'", "must be positive", "one direction, in bytes per second"],
    ),
    "string": (
        LINKS.replace("link_bytes_per_s = 32e9", 'link_bytes_per_s = "32 GB/s"'),
        ["field 'interconnect.link_bytes_per_s'", "must be a number, got '32 GB/s'", "link_bytes_per_s = 32e9"],
    ),
    "domain as text": (
        LINKS.replace("domain_gpus = 8", 'domain_gpus = "eight"'),
        ["field 'interconnect.domain_gpus'", "for example domain_gpus = 8"],
    ),
    "unknown key": (
        LINKS.replace("domain_gpus = 8", "domain_gpus = 8\nlanes = 16"),
        ["field 'interconnect.lanes'", "unknown key", "allowed: scale_up, domain_gpus", "lanes go in scale_up's"],
    ),
    "empty latencies": (
        LINKS.replace("{ nccl = { ring_gpus = 8, ring_s = 40e-6 } }", "{}"),
        ["field 'interconnect.allreduce_latency_s'", "got an empty table", "ring_gpus = 8"],
    ),
    "bus bandwidth negative": (
        LINKS.replace("domain_gpus = 8", "domain_gpus = 8\nallreduce_bus_bytes_per_s = -20e9"),
        ["field 'interconnect.allreduce_bus_bytes_per_s'", "must be positive", "nccl-tests' busbw"],
    ),
    "bus bandwidth as text": (
        LINKS.replace("domain_gpus = 8", 'domain_gpus = 8\nallreduce_bus_bytes_per_s = "20 GB/s"'),
        ["field 'interconnect.allreduce_bus_bytes_per_s'", "must be a number", "allreduce_bus_bytes_per_s = 200e9"],
    ),
    "bus bandwidth in the wrong unit": (  # 20 GB/s typed in bits, or both directions of many links
        LINKS.replace("domain_gpus = 8", "domain_gpus = 8\nallreduce_bus_bytes_per_s = 160e9"),
        ["field 'interconnect.allreduce_bus_bytes_per_s'", "is 5 times link_bytes_per_s", "at most 2 times"],
    ),
    "wrong table type": (
        "",  # the links given as text on the entry itself
        ["field 'interconnect'", "must be a table", 'write it as a table, [gpu."my-gpu".interconnect]'],
    ),
}


def _bad_links_file(case: str) -> str:
    text, _ = BAD_LINKS[case]
    if case == "wrong table type":
        return GOOD_GPU.replace('source = "', 'interconnect = "PCIe Gen4 x16"\nsource = "', 1)
    return GOOD_GPU + text


@pytest.mark.parametrize("case", list(BAD_LINKS))
@pytest.mark.parametrize("how", ["--specs", "--gpu", "validate"])
def test_a_malformed_links_table_is_one_line_naming_file_entry_field(
    case: str, how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, _bad_links_file(case))
    if how == "validate":
        argv: tuple[str, ...] = ("validate", path)
    elif how == "--specs":
        argv = ("estimate", "--specs", path, "--gpu", "my-gpu", "--model", "llama-3.1-8b")
    else:
        argv = ("estimate", "--gpu", path, "--model", "llama-3.1-8b")
    status, out, err = run_cli(capsys, *argv)
    assert_one_line_error(status, err, path, '[gpu."my-gpu"]', *BAD_LINKS[case][1])
    assert out == ""


# -- One JSON schema across layouts ----------------------------------------------------------------


@pytest.mark.parametrize("costs", ["ceiling", "expected"])
def test_every_layout_carries_the_tensor_parallel_keys(costs: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A script written for ``--parallel tp --json`` reads pp and tpxpp: every key tp has, but
    for the documented totals and comparisons (TP_ONLY_KEYS), is in every layout, and the
    expected block's decode_step_s too."""
    base = ("--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--gpus", "4", "--batch", "16", "--costs", costs)
    layouts = {
        "tp": estimate_json(capsys, *base),
        "pp": estimate_json(capsys, *base, "--parallel", "pp"),
        "tpxpp": estimate_json(capsys, *base, "--parallel", "tpxpp", "--pp-stages", "2"),
    }
    common = set(layouts["tp"]) - TP_ONLY_KEYS
    assert TP_ONLY_KEYS <= set(layouts["tp"])  # the list names real keys
    for name, figures in layouts.items():
        assert common <= set(figures), f"{name} lacks {sorted(common - set(figures))}"
        # decode_step_s means the same in every layout: the seconds between one user's tokens.
        assert figures["decode_step_s"] == pytest.approx(1 / figures["decode_tokens_per_s_per_user"])
        if costs == "expected":
            assert "decode_step_s" in figures["expected"]
    pipeline = layouts["pp"]
    assert pipeline["decode_step_s"] == pipeline["decode_interval_s"]
    assert pipeline["allreduce_latency_s"] == 0.0 and layouts["tpxpp"]["allreduce_latency_s"] > 0
    assert pipeline["weights_bytes"] == layouts["tp"]["weights_bytes"]
