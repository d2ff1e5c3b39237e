"""The reference page "Measured vs ceiling": every measurement in its table with its ceiling, ratio and link."""

from __future__ import annotations

from pathlib import Path

import pytest

import roofline
from roofline import benchmarks
from roofline.calibration import load_calibration
from roofline.measured import compare
from sitegen import escape
from sitegen.context import load_context
from sitegen.pages import find
from sitegen.values import percent

FOLDER = find(Path(__file__).resolve().parents[2], "measured")
measured = FOLDER.module()
#: Kinds without a band: the kernel benchmarks, an all-reduce's latency and a split's speedup.
#: The measurements that are times, whose ceiling is the least they can be.
TIME_METRICS = ("inter_token_latency_s", "time_to_first_token_s")
NO_BAND_KINDS = ("HBM bandwidth", "GEMM rate", "all-reduce latency", "one split against another")


@pytest.fixture(scope="module")
def ctx():
    return load_context(FOLDER.docs.parent)


def test_the_measured_page_lists_every_measurement_with_its_ceiling_and_link(ctx):
    from roofline.measured import compare_all

    content = measured.build(ctx)
    comparisons = compare_all()
    rows = {}
    for name in measured.PAGE_TABLES.values():
        for line in content.tables[name].splitlines()[2:]:
            if line.startswith("| "):
                cells = [cell.strip() for cell in line.strip("|").split(" | ")]
                rows[int(cells[0])] = cells
    assert sorted(rows) == list(range(1, len(comparisons) + 1))
    order = list(measured.PAGE_TABLES)
    by_kind = sorted(comparisons, key=lambda c: order.index(measured.group(c)))
    for number, comparison in enumerate(by_kind, start=1):
        m, cells = comparison.measurement, rows[number]
        # The answer leads (measured, ceiling, ratio), so a phone shows it before the table scrolls;
        # a speculative run says so in its first cell.
        assert cells[1] == measured.metric_name(m)
        assert cells[1].startswith(measured.METRIC_NAMES[m.metric]) or m.kind == "one split against another"
        assert cells[2] == measured.shown(m.metric, m.value)
        assert cells[3] == measured.shown(m.metric, comparison.ceiling)
        assert cells[4] == f"{comparison.ratio * 100:.0f}%"
        calibration = load_calibration()
        expectation = benchmarks.expect_measurement(m, calibration)
        assert (expectation is None) == (m.kind in NO_BAND_KINDS)
        if m.metric in measured.NO_BAND:
            fitted = compare(m, costs=calibration.cost_model(m.gpu)).ceiling
            assert cells[5] == f"{measured.shown(m.metric, fitted)} (fitted; no band)"
        else:
            assert cells[5] == measured.band_cell(m.metric, expectation)
            if expectation is not None and m.metric in TIME_METRICS:  # held within the ceiling beside it
                assert expectation.low >= comparison.ceiling * (1 - 1e-12), m.id
            elif expectation is not None:
                assert expectation.high <= comparison.ceiling * (1 + 1e-12), m.id
        assert cells[6] == escape.text(ctx.specs.gpu(m.gpu).name) and cells[7] == str(m.gpus)
        assert (
            f"- **{number}.** Hardware: {escape.text(m.hardware)}."
            in content.tables[measured.PAGE_TABLES[measured.group(comparison)]]
        )
        assert (
            cells[10]
            == f"{m.weight_precision} / {m.kv_precision}, batch {m.batch or 'max'},"
            + (f" {m.input_tokens:,} / {m.output_tokens:,}")
            + (" (assumed)" if m.lengths_assumed else "")
            if m.model
            else cells[10] == "—"
        )
        assert cells[11] == f"[{escape.text(m.section)}]({m.source}), {m.date}"
    assert content.values["count"] == str(len(comparisons))
    # The chart has one point per measurement with a ceiling that bounds it, and every kind that has one:
    # a split's speedup, a ratio of two ceilings, is not on it.
    figure = next(f for f in content.figures if f.name == "measured-ratios")
    points = next(layer for layer in figure.spec["layer"] if layer["mark"]["type"] == "point")["data"]["values"]
    bounded = [c for c in comparisons if c.measurement.bounded]
    assert len(points) == len(bounded) < len(comparisons)
    assert {p["kind"] for p in points} == {*roofline.measured.KINDS, measured.SPECULATIVE} - {
        "one split against another"
    }
    # Only the speculative runs pass their ceilings, and each is in the speculative row.
    assert all(p["kind"] == measured.SPECULATIVE for p in points if p["ratio"] > 1)


def test_shown_units_per_metric():
    shown = measured.shown
    assert shown("allreduce_latency_s", 19.19e-6) == "19.19 µs"
    assert shown("split_speedup_per_user", 5.6) == "5.60×"
    assert shown("decode_tokens_per_s_per_user", 93.89) == "93.9 tok/s"
    assert shown("inter_token_latency_s", 0.01858) == "18.58 ms"
    assert shown("hbm_bandwidth_bytes_per_s", 2.97e12) == "2.97 TB/s"
    assert shown("gemm_flops_per_s", 1.3822e15) == "1,382 TFLOP/s"


def test_the_single_gpu_rows_say_they_are_one_stack_on_one_machine(ctx):
    """All three come from gpt-fast on one power-capped A100: the page says so, in the source's words."""
    note = measured.build(ctx).values["single_rows_note"]
    assert note.startswith("These 3 rows are one stack on one machine: gpt-fast")
    assert "power-limited to 330 W" in note and "not a range for every GPU" in note


def _rows(table: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip("|").split(" | ")]
        for line in table.splitlines()[2:]
        if line.startswith("| ")
    ]


def test_every_serving_run_shows_measured_ceiling_and_expected_band(ctx):
    """Issue 17: each fit and held-out run of data/serving-measurements.csv with its ceiling, its expected
    figure and band (data/serving-expected.csv, the refit's own), and measured ÷ expected; none above
    its ceiling; the chart has a point for each, and for each measurement with an expected figure."""
    content = measured.build(ctx)
    calibration = load_calibration()
    runs = benchmarks.load_serving_runs(measured.RUNS_FILE)
    predictions = benchmarks.parse_predictions(measured.PREDICTIONS_FILE.read_text(encoding="utf-8"))
    for split, name in measured.SPLITS.items():
        chosen = [run for run in runs if run.split == split]
        rows = _rows(content.tables[name])
        assert len(rows) == len(chosen) > 60 and content.values[f"{split}_runs"] == f"{len(chosen):,}"
        for cells, run in zip(rows, chosen, strict=True):
            ceiling, expected = predictions[run.id]
            unit = measured.SERVING_UNITS[run.metric]
            assert cells[8] == measured.shown(unit, run.value) and cells[9] == measured.shown(unit, ceiling)
            expectation = benchmarks.expectation(run, expected, calibration, ceiling_figure=ceiling)
            assert cells[10] == measured.band_cell(unit, expectation)
            # No band reaches past the ceiling beside it (a widened band for an unfitted ground did).
            if run.kind == "throughput":
                assert expectation.high <= ceiling, run.id
            else:
                assert expectation.low >= ceiling, run.id
            assert cells[11] == f"{run.value / expected:.2f}" + ("" if run.counted else measured.DEFECT_MARK)
            assert cells[12] == f"[link]({run.source})"
            assert run.ratio(ceiling) <= 1.02, run.id  # the ceiling holds for what the page shows
    summary = content.tables["serving-fit-summary"]
    held_out = calibration.provenance["held_out_rows_summary"]["throughput"]
    assert f"| held out | throughput | {held_out['runs']:,} | {held_out['median']:.2f} |" in summary
    # Both sets of held-out figures: without the rows reported as defects (the goals'), and with them.
    flagged = [run for run in runs if not run.counted]
    for kind, label in measured.FIGURE_KINDS.items():
        every = calibration.provenance["held_out_rows_with_reported_defects_summary"][kind]
        line = f"| held out, with the {len(flagged)} reported defects | {label} | {every['runs']:,} |"
        assert line in summary
    # Each flagged row listed under the held-out table by its number there, with its source's sentence.
    listed = content.tables["serving-reported-defects"]
    checks = [run for run in runs if run.split == "check"]
    for run in flagged:
        number = checks.index(run) + 1
        assert f"- **{number}.** “We see consistent and significant slow-down in TTFT" in listed
    assert content.values["reported_defects"] == f"{len(flagged)}" and len(flagged) == 4
    figure = next(f for f in content.figures if f.name == "measured-vs-expected")
    points = next(layer for layer in figure.spec["layer"] if layer["mark"]["type"] == "point")["data"]["values"]
    with_expected = [m for m in roofline.measured.load_measurements() if m.model and m.bounded]
    assert len(points) == sum(run.split in measured.SPLITS for run in runs) + len(with_expected)
    marked = [p for p in points if p["set"] == measured.SETS["defect"]]
    assert len(marked) == len(flagged) and all(p["kind"] == "time to first token" for p in marked)
    bands = next(layer for layer in figure.spec["layer"] if layer["mark"]["type"] == "bar")["data"]["values"]
    assert {(b["low"], b["high"]) for b in bands} == {
        tuple(calibration.band[m]) for m in benchmarks.BAND_METRIC.values()
    }


def test_a_decode_rate_per_user_gets_its_band_from_the_time_between_tokens():
    """A rate that is one over a time: its band is the time's band inverted, and measured ÷ expected is
    read on the time, as the fit reads it."""
    calibration = load_calibration()
    low, high = calibration.band["itl_mean_s"]
    e = benchmarks.expectation_of("itl", 50.0, 100.0, calibration, rate_of_time=True)
    assert (e.low, e.high) == pytest.approx((100 / high, 100 / low))
    assert e.measured_over_expected == pytest.approx(2.0)  # half the rate is twice the time
    assert measured.band_cell("decode_tokens_per_s_per_user", e).startswith("100.0 tok/s (")


def test_the_all_reduce_and_split_rows_stand_beside_the_package(ctx):
    """Issue 21: the all-reduce latencies behind the presets and NVIDIA's TP8/PP8 ratios, each beside what
    the package computes, the split table's columns saying the package's ratio is no bound, and the
    NVIDIA rows saying they were read in a republished copy and which lengths are assumed."""
    content = measured.build(ctx)
    latency = content.tables["measured-allreduce-latency"]
    assert "| all-reduce latency | 5.90 µs | 5.70 µs | 97% |" in latency
    assert "| all-reduce latency | 5.70 µs | 5.70 µs | 100% |" in latency
    assert "data size 512" in latency and "data size 4096" in latency
    splits = content.tables["measured-split-speedups"]
    header = "| # | Figure | Measured | Package, ceiling's costs | Measured ÷ package | Package, expected costs |"
    assert splits.splitlines()[0].startswith(header)
    rows = _rows(splits)
    assert [row[1] for row in rows] == ["TP8 ÷ PP8, decode per user", "PP8 ÷ TP8, output, all users"]
    assert [row[2] for row in rows] == ["5.60×", "1.50×"]
    for row in rows:
        assert "read in a republished copy" in row[11] and "(assumed)" in row[10]
    assert splits.count("the primary page could not be opened from here") == 2


def test_the_page_shows_the_cross_validated_coverage_beside_the_in_sample_one(ctx):
    """Issue 36: the coverage table has one row per way the fit's runs were predicted (in sample, without
    their benchmark, their release, their GPU) and for the held-out runs, each percentage the file's;
    the per-GPU table gives each GPU's held-out throughput as the fit recorded it."""
    content = measured.build(ctx)
    calibration = load_calibration()
    coverage = content.tables["serving-coverage"]
    for key, name in measured.COVERAGE_SETS.items():
        shares = calibration.provenance["coverage"][key]
        cells = [percent(shares[k]) if k in shares else "–" for k in ("all", *measured.FIGURE_KINDS)]
        assert f"| {name} | " + " | ".join(cells) + " |" in coverage
    assert "each engine release left out" in coverage and "each GPU left out" in coverage
    # The nested rows count only the runs a fit without their group could band; the prose gives the rest.
    unbanded = calibration.provenance["coverage_runs_without_a_band"]
    assert content.values["unbanded_release"] == f"{unbanded['leave_one_release_out_nested']:,}"
    assert content.values["unbanded_gpu"] == f"{unbanded['leave_one_gpu_out_nested']:,}"
    # The static sessions' κ, as the file holds it, and how many rows fixed it.
    session = calibration.harnesses["session"]
    assert content.values["session_serial_share"] == f"{session.context_serial_share:.2f}"
    assert content.values["session_serial_rows"] == f"{calibration.provenance['context_serial_rows']:,}"
    # The measured link share an unfitted kind of link takes, from the spec, beside NVLink's fitted one.
    assert content.values["measured_links"] == (
        "NVLink 3 + NVSwitch (HGX A100) on the NVIDIA A100 80GB SXM, 200 of 300 GB/s each way, 67%"
    )
    assert content.values["nvlink_share"] == percent(calibration.link_efficiency)
    by_gpu = content.tables["serving-by-gpu"]
    for label, figures in calibration.provenance["held_out_throughput_by_gpu"].items():
        assert f"| {label} | {figures['runs']:,} | {figures['median']:.2f} |" in by_gpu
    assert "| l40s x2+ |" in by_gpu
