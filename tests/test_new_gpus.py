"""Issue 36: GPUs that published rows ran on and the package lacked, GH200 (the 96 GB HBM3 version
TensorRT-LLM 0.17 measured as "GH200 480GB"), MI325X and A100 80GB PCIe, each cited with its links;
the GH200 rows, kept out before for want of a spec, are now held-out rows under their ceilings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline import benchmarks
from roofline.calibration import load_calibration
from roofline.cli import main
from roofline.loader import load_specs

ROOT = Path(__file__).resolve().parents[1]
RUNS = benchmarks.load_serving_runs(ROOT / "data" / "serving-measurements.csv")
SPECS = load_specs()


def test_the_gh200_rows_are_held_out_and_each_stays_under_its_ceiling() -> None:
    """TensorRT-LLM 0.17's 35 GH200 rows (Llama 3.1 8B and 70B, Mistral 7B, Mixtral 8x7B, fp8, one GPU):
    each reaches 33 to 60 % of the ceiling of a GH200 whose KV pool is sized from the 97,871 MiB the
    driver reports, at 4 TB/s."""
    rows = [run for run in RUNS if run.gpu == "gh200"]
    assert len(rows) == 35 and {run.split for run in rows} == {"check"}
    assert all("no spec" not in run.note and "gptManagerBenchmark" in run.note for run in rows)
    ratios = [run.ratio(benchmarks.ceiling(run, SPECS)) for run in rows]
    assert 0.33 < min(ratios) and max(ratios) < 0.60
    seventy = next(r for r in rows if r.model == "llama-3.1-70b" and (r.input_tokens, r.output_tokens) == (128, 2048))
    assert seventy.value == pytest.approx(2082.74)
    assert seventy.ratio(benchmarks.ceiling(seventy, SPECS)) == pytest.approx(0.35, abs=0.01)


def test_the_new_chips_are_cited_and_compute_as_the_chips_whose_dies_they_share() -> None:
    gh200, mi325x, pcie = SPECS.gpu("gh200"), SPECS.gpu("mi325x"), SPECS.gpu("a100-80gb-pcie")
    assert (gh200.memory_bytes, gh200.bandwidth_bytes_per_s) == (96e9, 4.0e12)
    assert "GH200 480GB" in gh200.source and "96GB HBM3" in gh200.source
    # The driver's figure, as for the H100 and H200: 97,871 MiB, printed by nvidia-smi on a GH200 480GB.
    assert gh200.addressable_memory_bytes == 97871 * 2**20
    assert "97871MiB" in gh200.addressable_memory_source and "GH200 480GB" in gh200.addressable_memory_source
    assert (mi325x.memory_bytes, mi325x.bandwidth_bytes_per_s) == (256e9, 6.0e12)
    assert (pcie.memory_bytes, pcie.bandwidth_bytes_per_s) == (80e9, 1.935e12)
    for gpu, twin in ((gh200, "h100-sxm"), (mi325x, "mi300x"), (pcie, "a100-80gb")):
        assert gpu.same_compute_as == twin
        assert dict(gpu.dense_flops_per_s) == dict(SPECS.gpu(twin).dense_flops_per_s)
        assert gpu.interconnect is not None and "http" in gpu.interconnect.source
    assert (pcie.interconnect.domain_gpus, pcie.interconnect.link_bytes_per_s) == (2, 300e9)
    assert (mi325x.interconnect.domain_gpus, mi325x.interconnect.link_bytes_per_s) == (8, 448e9)
    # Expected mode gives each the compute shares fitted on the chip it computes as.
    shares = load_calibration().cost_model(gh200).compute_efficiency
    assert shares == load_calibration().cost_model(SPECS.gpu("h100-sxm")).compute_efficiency
    assert shares and all(0.33 < share < 0.60 for share in shares.values())


def test_a_pair_of_bridged_a100_pcie_cards_is_one_domain_and_four_cross_pcie(capsys) -> None:
    base = ["estimate", "--gpu", "a100-80gb-pcie", "--model", "llama-3.1-70b", "--batch", "8", "--json"]
    assert main([*base, "--gpus", "2"]) == 0
    two = json.loads(capsys.readouterr().out)
    assert main([*base, "--gpus", "4"]) == 0
    four = json.loads(capsys.readouterr().out)
    assert two["warnings"] == []
    assert any("more than one NVLink 3 bridge (pairs) domain of 2" in line for line in four["warnings"])
    assert four["communication_s"] > two["communication_s"]
