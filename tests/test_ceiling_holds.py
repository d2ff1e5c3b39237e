"""Issue 17: the ceiling is an upper bound. No published run, in measurements.toml or among the
verified serving runs (data/serving-measurements.csv, sources in each row), beats it by more than
2%; only speculative decoding may, and such runs are flagged."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline import benchmarks
from roofline.loader import load_specs
from roofline.measured import compare_all

ROOT = Path(__file__).resolve().parents[1]
RUNS = benchmarks.load_serving_runs(ROOT / "data" / "serving-measurements.csv")
SPECS = load_specs()
#: The issue's tolerance: published figures round, and a source may state a condition loosely.
TOLERANCE = 1.02


def test_no_measurement_beats_its_ceiling() -> None:
    for comparison in compare_all(specs=SPECS):
        # Speculative runs may pass; a split's speedup is set beside a ratio of two ceilings, no bound.
        if comparison.measurement.speculative or not comparison.measurement.bounded:
            continue
        assert comparison.ratio <= TOLERANCE, (comparison.measurement.id, comparison.ratio)


@pytest.mark.parametrize("split", ["fit", "check"])
def test_no_published_serving_run_beats_its_ceiling(split: str) -> None:
    """Measured ÷ ceiling for a throughput, ceiling ÷ measured for a time, at most 1.02. Issue 17
    found four rows above the old ceiling: the 70B fp8 on one H100 at 128/2048 and 2048/128
    (memory the driver reports), and the 70B NVFP4 on a B200 (fp4 math)."""
    chosen = [run for run in RUNS if run.split == split]
    assert len(chosen) > 90
    worst = max(chosen, key=lambda run: run.ratio(benchmarks.ceiling(run, SPECS)))
    assert worst.ratio(benchmarks.ceiling(worst, SPECS)) <= TOLERANCE, worst.id


def test_the_rows_the_issue_found_above_the_old_ceiling_are_below_the_new_one() -> None:
    by_id = {run.id: run for run in RUNS}
    h100 = "tensorrt-llm0.17-h100-sxm-tp1-llama-3.1-70b-fp8-128-2048-rateinf-throughput_tokens_per"
    ratio = by_id[h100].ratio(benchmarks.ceiling(by_id[h100], SPECS))
    assert 0.2 < ratio < 1  # 911.6 tok/s measured; the old ceiling gave 190.7
    b200 = [run for run in RUNS if run.gpu == "b200" and run.weight_precision == "nvfp4" and run.gpus == 1]
    assert b200 and all(run.ratio(benchmarks.ceiling(run, SPECS)) < 1 for run in b200)
