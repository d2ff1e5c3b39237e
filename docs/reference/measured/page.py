"""Reference page "Measured vs ceiling": every published measurement beside the package's
ceiling and its expected band.

The measurements are ``roofline/data/measurements.toml``; ``roofline.measured``
computes each one's ceiling on the same hardware and workload and the ratio
(measured ÷ ceiling for rates, ceiling ÷ measured for times, so 100% is the
ceiling reached), and ``roofline.benchmarks.expect_measurement`` its expected figure
and band at the fitted costs. The serving runs are ``data/serving-measurements.csv``,
with the ceiling and expected figure ``scripts/fit_expected.py`` wrote for each in
``data/serving-expected.csv``. This module lays them out: one table per kind, each
row with its conditions and a link to the table or section it came from, the serving
runs by split, a chart of the ratios to the ceiling and one of measured ÷ expected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import altair as alt

from roofline import benchmarks
from roofline.benchmarks import Expectation, ServingRun
from roofline.calibration import Calibration, load_calibration, measured_link_share
from roofline.errors import SpecError
from roofline.measured import (
    KINDS,
    SPLIT_METRICS,
    Comparison,
    Measurement,
    compare,
    compare_all,
    load_measurements,
)
from sitegen import escape
from sitegen.context import Context
from sitegen.figures import PALETTE
from sitegen.page import PageContent
from sitegen.values import percent

#: Metrics whose expected figure has no band (the fit's band is for serving figures): the page shows
#: the package's figure at the fitted costs instead.
NO_BAND = ("allreduce_latency_s", *SPLIT_METRICS)
#: Table names on the page, one per kind, in the order of ``KINDS``.
TABLES = {
    "single-GPU decode": "measured-single-gpu-decode",
    "multi-GPU decode": "measured-multi-gpu-decode",
    "prefill (time to first token)": "measured-prefill",
    "maximum throughput": "measured-throughput",
    "HBM bandwidth": "measured-hbm-bandwidth",
    "GEMM rate": "measured-gemm",
    "all-reduce latency": "measured-allreduce-latency",
    "one split against another": "measured-split-speedups",
}
#: Runs with speculative decoding or multi-token prediction get a table and a row of the chart of their own,
#: whatever their kind: they are the only ones allowed above their ceilings.
SPECULATIVE = "speculative decoding"
SPECULATIVE_TABLE = "measured-speculative"
#: Every table in the page's order, the speculative runs right after single-GPU decode, so rows are
#: numbered in reading order.
_SINGLE_GPU_DECODE, *_OTHER_TABLES = TABLES.items()
PAGE_TABLES = dict([_SINGLE_GPU_DECODE, (SPECULATIVE, SPECULATIVE_TABLE), *_OTHER_TABLES])
#: The answer first (what was measured, the ceiling, their ratio), then the conditions: on a phone the
#: first columns are what shows before the table is scrolled.
HEADER = (
    "#",
    "Metric",
    "Measured",
    "Ceiling",
    "Ratio",
    "Expected (band)",
    "Hardware",
    "GPUs",
    "Software",
    "Model",
    "Weights / KV, batch, in / out tokens",
    "Source (section), date",
)
#: A split's speedup is set beside the package's ratio, which is no bound: the columns say so.
SPLIT_HEADER = (
    "#",
    "Figure",
    "Measured",
    "Package, ceiling's costs",
    "Measured ÷ package",
    "Package, expected costs",
    *HEADER[6:],
)
#: Columns aligned right: the numbers.
RIGHT = {0, 2, 3, 4, 5, 7}
ROOT = Path(__file__).resolve().parents[3]
RUNS_FILE = ROOT / "data" / "serving-measurements.csv"
PREDICTIONS_FILE = ROOT / "data" / "serving-expected.csv"
#: The serving runs' tables, one per split, and what each split is.
SPLITS = {"fit": "serving-runs-fit", "check": "serving-runs-check"}
SERVING_HEADER = (
    "#",
    "Engine",
    "GPU × count",
    "Model",
    "Weights / KV",
    "In / out tokens",
    "Load",
    "Metric",
    "Measured",
    "Ceiling",
    "Expected (band)",
    "Measured ÷ expected",
    "Source",
)
SERVING_RIGHT = {0, 5, 8, 9, 10, 11}
#: How each kind of figure reads on the page and in the chart.
FIGURE_KINDS = {"throughput": "throughput", "ttft": "time to first token", "itl": "time between tokens"}


def shown(metric: str, value: float) -> str:
    """A measured figure or its ceiling in the metric's reading unit."""
    if metric in SPLIT_METRICS:
        return f"{value:,.2f}×"
    if metric == "allreduce_latency_s":
        return f"{value * 1e6:,.2f} µs"
    if metric in ("decode_tokens_per_s_per_user", "output_tokens_per_s_total"):
        return f"{value:,.1f} tok/s"
    if metric in ("inter_token_latency_s", "time_to_first_token_s"):
        return f"{value * 1e3:,.2f} ms"
    if metric == "hbm_bandwidth_bytes_per_s":
        return f"{value / 1e12:,.2f} TB/s"
    return f"{value / 1e12:,.0f} TFLOP/s"


METRIC_NAMES = {
    "decode_tokens_per_s_per_user": "decode, per user",
    "inter_token_latency_s": "inter-token latency",
    "time_to_first_token_s": "time to first token",
    "output_tokens_per_s_total": "output, all users",
    "hbm_bandwidth_bytes_per_s": "memory bandwidth",
    "gemm_flops_per_s": "matrix multiply",
    "allreduce_latency_s": "all-reduce latency",
    "split_speedup_per_user": "decode per user",
    "split_speedup_total": "output, all users",
}


def metric_name(m: Measurement) -> str:
    """The first cell: the metric, a split's two splits, and whether speculation was on."""
    name = METRIC_NAMES[m.metric]
    if m.metric in SPLIT_METRICS:
        name = f"{m.split.upper()}{m.gpus} ÷ {m.versus.upper()}{m.gpus}, {name}"
    return name + (" (speculative)" if m.speculative else "")


def source_link(measurement: Measurement) -> str:
    """The section it came from, linked to the source page (plain text if the URL is not a safe link)."""
    target = escape.http_url(measurement.source)
    section = escape.text(measurement.section)
    return f"[{section}]({target})" if target else f"{section} ({escape.text(measurement.source)})"


def band_cell(metric: str, expectation: Expectation | None) -> str:
    """``"14.2 tok/s (10.4–17.1)"``: the expected figure and its band; a dash without one."""
    if expectation is None:
        return "—"
    low, high = shown(metric, expectation.low), shown(metric, expectation.high)
    return f"{shown(metric, expectation.expected)} ({low.split()[0]}–{high})"


def expected_cell(m: Measurement, expectation: Expectation | None, fitted: float | None) -> str:
    """The expected figure with its band; for a figure the band does not cover (an all-reduce's
    latency, a split's speedup), the package's figure at the fitted costs, said to have none."""
    if expectation is None and fitted is not None:
        return f"{shown(m.metric, fitted)} (fitted; no band)"
    return band_cell(m.metric, expectation)


def _row(
    number: int, comparison: Comparison, expectation: Expectation | None, fitted: float | None, ctx: Context
) -> tuple[str, ...]:
    m = comparison.measurement
    model = "—" if not m.model else escape.text(ctx.specs.model(m.model).name)
    precisions = "—" if not m.model else f"{m.weight_precision} / {m.kv_precision}"
    batch = "—" if not m.model else ("max" if m.batch is None else f"{m.batch:,}")
    lengths = "—" if not m.model else f"{m.input_tokens:,} / {m.output_tokens:,}"
    if m.lengths_assumed:
        lengths += " (assumed)"
    workload = "—" if not m.model else f"{precisions}, batch {batch}, {lengths}"
    return (
        str(number),
        metric_name(m),
        shown(m.metric, m.value),
        shown(m.metric, comparison.ceiling),
        percent(comparison.ratio),
        expected_cell(m, expectation, fitted),
        escape.text(ctx.specs.gpu(m.gpu).name),
        str(m.gpus),
        escape.text(f"{m.software} ({m.software_version})"),
        model,
        workload,
        f"{source_link(m)}, {m.date}",
    )


def measured_table(rows: list[tuple[str, ...]], header: tuple[str, ...] = HEADER, right: set[int] = RIGHT) -> str:
    """A Markdown table of already escaped cells under ``header``."""
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


#: A serving run's metric -> the measurements file's metric, whose reading unit it shares.
SERVING_UNITS = {
    "throughput_tokens_per_s": "output_tokens_per_s_total",
    "ttft_mean_s": "time_to_first_token_s",
    "ttft_p50_s": "time_to_first_token_s",
    "itl_mean_s": "inter_token_latency_s",
    "itl_p50_s": "inter_token_latency_s",
}
SERVING_METRIC_NAMES = {
    "throughput_tokens_per_s": "output, all users",
    "ttft_mean_s": "mean time to first token",
    "ttft_p50_s": "median time to first token",
    "itl_mean_s": "mean time between tokens",
    "itl_p50_s": "median time between tokens",
}


#: After measured ÷ expected, on a row whose source reports it as an engine's defect.
DEFECT_MARK = " †"


def serving_row(
    number: int, run: ServingRun, ceiling: float, expectation: Expectation, ctx: Context
) -> tuple[str, ...]:
    """One serving run's cells: its conditions, measured, ceiling, expected band and residual
    (marked ``DEFECT_MARK`` when its source reports it as a defect)."""
    unit = SERVING_UNITS[run.metric]
    target = escape.http_url(run.source)
    link = f"[link]({target})" if target else escape.text(run.source)
    return (
        str(number),
        escape.text(run.engine),
        f"{escape.text(ctx.specs.gpu(run.gpu).name)} × {run.gpus}",
        escape.text(ctx.specs.model(run.model).name),
        f"{run.weight_precision} / {run.kv_precision}",
        f"{run.input_tokens:,} / {run.output_tokens:,}",
        escape.text(run.load),
        SERVING_METRIC_NAMES[run.metric],
        shown(unit, run.value),
        shown(unit, ceiling),
        band_cell(unit, expectation),
        f"{expectation.measured_over_expected:.2f}" + ("" if run.counted else DEFECT_MARK),
        link,
    )


def reported_defects(numbered: list[tuple[int, ServingRun]]) -> str:
    """The held-out rows left out of the figures the goals are read on, each with its number in the
    table above and its source's sentence reporting the defect: what was left out, and why."""
    flagged = [(number, run) for number, run in numbered if not run.counted]
    if not flagged:
        return "No held-out row is flagged as a reported defect.\n"
    lines = [
        f"{DEFECT_MARK.strip()} Reported by its source as an engine's defect, so left out of the held-out"
        " figures the goals are read on (the summary above gives them with these rows too):",
        "",
    ]
    for number, run in flagged:
        lines.append(f"- **{number}.** {escape.text(run.reported_defect)}")
    return "\n".join(lines) + "\n"


def serving_runs(calibration: Calibration) -> list[tuple[ServingRun, float, Expectation]]:
    """Every fit and check run with its ceiling and expectation, from the fit's predictions file."""
    runs = [run for run in benchmarks.load_serving_runs(RUNS_FILE) if run.split in SPLITS]
    predictions = benchmarks.parse_predictions(PREDICTIONS_FILE.read_text(encoding="utf-8"), str(PREDICTIONS_FILE))
    chosen = []
    for run in runs:
        if run.id not in predictions:
            raise SpecError(
                "has no prediction", file=str(PREDICTIONS_FILE), entry=run.id, hint="rerun scripts/fit_expected.py"
            )
        ceiling, expected = predictions[run.id]
        chosen.append((run, ceiling, benchmarks.expectation(run, expected, calibration, ceiling_figure=ceiling)))
    return chosen


def fit_summary(calibration: Calibration) -> str:
    """Measured ÷ expected on the fit and held-out runs, per kind, as the fit recorded it: the held-out
    runs without the rows their sources report as defects (what the goals are read on), then with them."""
    header = ("Runs", "Kind", "Count", "Median", "p10–p90", "In the band")
    lines = ["| " + " | ".join(header) + " |", "|---|---|---:|---:|---:|---:|"]
    flagged = calibration.provenance["held_out_reported_defect_rows"]
    sets = (
        ("fit_rows_summary", "fitted on"),
        ("held_out_rows_summary", "held out"),
        ("held_out_rows_with_reported_defects_summary", f"held out, with the {flagged:,} reported defects"),
    )
    for split, name in sets:
        for kind, label in FIGURE_KINDS.items():
            figures = calibration.provenance[split][kind]
            lines.append(
                f"| {name} | {label} | {figures['runs']:,} | {figures['median']:.2f} |"
                f" {figures['p10']:.2f}–{figures['p90']:.2f} | {percent(figures['in_band'])} |"
            )
    return "\n".join(lines) + "\n"


#: The coverage rows the fit records (``[fit.coverage]``), as the page names them.
COVERAGE_SETS = {
    "in_sample": "fit runs, in sample",
    "left_out_benchmark": "fit runs, each benchmark left out",
    "leave_one_release_out": "fit runs, each engine release left out",
    "leave_one_gpu_out": "fit runs, each GPU left out",
    "leave_one_release_out_on_ground": "fit runs, each release left out, the band of their ground",
    "leave_one_gpu_out_on_ground": "fit runs, each GPU left out, the band of their ground",
    "leave_one_release_out_nested": "fit runs, each release left out, the band a fit without it gives",
    "leave_one_gpu_out_nested": "fit runs, each GPU left out, the band a fit without it gives",
    "held_out_fixed_band": "held-out runs, the fit's band",
    "held_out_on_ground": "held-out runs, the band of their ground",
}


def coverage_summary(calibration: Calibration) -> str:
    """The share of measured values inside the band, as the fit recorded it: in sample beside the
    cross-validations (by benchmark, by release, by GPU) and the held-out runs."""
    coverage = calibration.provenance["coverage"]
    kinds = {"all": "all", **FIGURE_KINDS}
    lines = ["| Runs | " + " | ".join(kinds.values()) + " |", "|---|" + "---:|" * len(kinds)]
    for key, name in COVERAGE_SETS.items():
        shares = coverage[key]
        lines.append(f"| {name} | " + " | ".join(percent(shares[k]) if k in shares else "–" for k in kinds) + " |")
    return "\n".join(lines) + "\n"


def gpu_summary(calibration: Calibration) -> str:
    """Held-out throughput, measured ÷ expected, per GPU and GPU count (one or several)."""
    lines = ["| GPUs | Runs | Median | p10–p90 | In the band of their ground |", "|---|---:|---:|---:|---:|"]
    for label, figures in calibration.provenance["held_out_throughput_by_gpu"].items():
        lines.append(
            f"| {label} | {figures['runs']:,} | {figures['median']:.2f} |"
            f" {figures['p10']:.2f}–{figures['p90']:.2f} | {percent(figures['in_band'])} |"
        )
    return "\n".join(lines) + "\n"


def expected_chart(points: list[dict[str, Any]], calibration: Calibration) -> dict[str, Any]:
    """Measured ÷ expected of every run and measurement with a prediction, one row per kind of
    figure, the band (the fit's 80% band) shaded behind and 1 marked."""
    kinds = list(FIGURE_KINDS.values())
    bands = [
        {"kind": FIGURE_KINDS[kind], "low": calibration.band[metric][0], "high": calibration.band[metric][1]}
        for kind, metric in benchmarks.BAND_METRIC.items()
    ]
    values = [p["ratio"] for p in points]
    domain = [min(0.2, *values) * 0.9, max(5.0, *values) * 1.1]
    x = alt.X(
        "ratio:Q",
        title="measured ÷ expected (log scale)",
        scale=alt.Scale(type="log", domain=domain),
        axis=alt.Axis(values=[0.25, 0.5, 1, 2, 4], format="~g"),
    )
    y = alt.Y("kind:N", sort=kinds, title=None)
    band = (
        alt.Chart(alt.Data(values=bands))
        .mark_bar(opacity=0.25, color="#888888", height=26)
        .encode(x=alt.X("low:Q", scale=alt.Scale(type="log", domain=domain)), x2="high:Q", y=y)
    )
    dots = (
        alt.Chart(alt.Data(values=points))
        .mark_point(filled=True, size=40, opacity=0.55)
        .encode(
            x=x,
            y=alt.Y("kind:N", sort=kinds, title=None),
            yOffset=alt.YOffset("set:N", sort=list(SETS)),
            color=alt.Color("set:N", sort=list(SETS), title=None, legend=alt.Legend(orient="bottom")),
            tooltip=[
                alt.Tooltip("what:N", title="run"),
                alt.Tooltip("set:N", title="set"),
                alt.Tooltip("label:N", title="measured ÷ expected"),
            ],
        )
    )
    one = (
        alt.Chart(alt.Data(values=[{"ratio": 1.0}]))
        .mark_rule(strokeDash=[4, 4], color="#888888")
        .encode(x=alt.X("ratio:Q", scale=alt.Scale(type="log", domain=domain)))
    )
    spec = (
        (band + one + dots)
        .properties(
            width=640,
            height=70 * len(kinds),
            title=alt.TitleParams(
                "Published runs against the expected figure",
                subtitle=[
                    "1 is the prediction met; the grey bar is the band, where 80% of the fit's runs fell.",
                    "Each point is one run; throughput above 1 is faster than expected, a time above 1 slower.",
                ],
                anchor="start",
            ),
        )
        .configure_range(category=PALETTE)
        .configure_axis(labelFontSize=12, titleFontSize=12, labelLimit=220)
    )
    return spec.to_dict()


#: The chart's sets of points, in legend order.
SETS = {"fit": "fitted on", "check": "held out", "defect": "held out, reported defect", "page": "tables above"}


def conditions(numbered: list[tuple[int, Comparison]]) -> str:
    """Each row's hardware as its source describes it, its note and the ceiling's accounting, as a
    list under its table."""
    lines = ["", "**Conditions and how each ceiling was computed**", ""]
    for number, comparison in numbered:
        # The source's own words for the hardware (power caps, the system) live here, not in the
        # table, where they would squeeze every other column.
        note = comparison.measurement.note
        said = f"Hardware: {escape.text(comparison.measurement.hardware)}. " + (f"{escape.text(note)} " if note else "")
        spec = " Speculative decoding or multi-token prediction was on." if comparison.measurement.speculative else ""
        # A split's speedup is set beside the package's ratio, which is no ceiling.
        label = "Ceiling" if comparison.measurement.bounded else "The package's ratio, no bound"
        lines.append(f"- **{number}.** {said}{label}: {escape.text(comparison.accounting)}.{spec}")
    return "\n".join(lines) + "\n"


def group(comparison: Comparison) -> str:
    """The table and chart row a measurement goes in: its kind, or ``SPECULATIVE`` for a speculative run."""
    return SPECULATIVE if comparison.measurement.speculative else comparison.measurement.kind


def ratio_chart(comparisons: list[Comparison]) -> dict[str, Any]:
    """Each measurement's ratio to its ceiling, one row of points per kind, with the ceiling at 100%;
    a split's speedup, whose "ceiling" is a ratio of two ceilings and bounds nothing, is left out."""
    comparisons = [c for c in comparisons if c.measurement.bounded]
    points = [
        {
            "kind": group(c),
            "ratio": round(c.ratio, 4),
            "label": percent(c.ratio),
            "what": f"{c.measurement.software}, {c.measurement.hardware}",
            "measured": shown(c.measurement.metric, c.measurement.value),
            "ceiling": shown(c.measurement.metric, c.ceiling),
        }
        for c in comparisons
    ]
    kinds = [kind for kind in (*KINDS, SPECULATIVE) if any(p["kind"] == kind for p in points)]
    top = max(1.0, *(p["ratio"] for p in points)) * 1.05
    x = alt.X("ratio:Q", title="measured ÷ ceiling", scale=alt.Scale(domain=[0, top]), axis=alt.Axis(format="%"))
    y = alt.Y("kind:N", sort=kinds, title=None)
    dots = (
        alt.Chart(alt.Data(values=points))
        .mark_point(filled=True, size=90, opacity=0.75)
        .encode(
            x=x,
            y=y,
            color=alt.Color("kind:N", sort=kinds, legend=None),
            tooltip=[
                alt.Tooltip("what:N", title="measured with"),
                alt.Tooltip("measured:N", title="measured"),
                alt.Tooltip("ceiling:N", title="ceiling"),
                alt.Tooltip("label:N", title="ratio"),
            ],
        )
    )
    ceiling = (
        alt.Chart(alt.Data(values=[{"ratio": 1.0}]))
        .mark_rule(strokeDash=[4, 4], color="#888888")
        .encode(x=alt.X("ratio:Q", scale=alt.Scale(domain=[0, top])))
    )
    spec = (
        (ceiling + dots)
        .properties(
            width=640,
            height=40 * len(kinds) + 40,
            title=alt.TitleParams(
                "Published measurements as a share of their ceilings",
                subtitle=["The dashed line is the ceiling: 100%.", "Each point is one measurement."],
                anchor="start",
            ),
        )
        # Not charts.figure_spec: this chart's size follows its rows, and its axis labels
        # (the kinds of measurement) are longer than Vega's default limit cuts at.
        .configure_range(category=PALETTE)
        .configure_axis(labelFontSize=12, titleFontSize=12, labelLimit=220)
    )
    return spec.to_dict()


def measured_links(calibration: Calibration, ctx: Context) -> str:
    """Each built-in GPU whose links are of a kind no fit run crossed and whose spec measured the
    share a large all-reduce reaches on them (``calibration.measured_link_share``), the share its
    expected figures take: "NVLink 3 + NVSwitch (HGX A100) on the NVIDIA A100 80GB SXM, 200 of
    300 GB/s each way, 67%"."""
    parts = []
    for gpu in ctx.specs.gpus.values():
        share = measured_link_share(gpu)
        if share is None or calibration.unfitted_link_kind(gpu) is None:
            continue
        links = gpu.interconnect
        parts.append(
            f"{escape.text(links.scale_up)} on the {escape.text(gpu.name)},"
            f" {links.allreduce_bus_bytes_per_s / 1e9:g} of {links.link_bytes_per_s / 1e9:g} GB/s each way,"
            f" {percent(share)}"
        )
    return "; ".join(parts) or "none"


def build(ctx: Context) -> PageContent:
    content = PageContent()
    calibration = load_calibration()
    comparisons = compare_all(load_measurements(specs=ctx.specs), ctx.specs)
    expectations = {
        c.measurement.id: benchmarks.expect_measurement(c.measurement, calibration, ctx.specs) for c in comparisons
    }
    # The package's own figure at the fitted costs, where the fit's band does not reach.
    fitted = {
        c.measurement.id: compare(c.measurement, ctx.specs, calibration.cost_model(c.measurement.gpu)).ceiling
        for c in comparisons
        if c.measurement.metric in NO_BAND
    }
    content.put("count", f"{len(comparisons):,}")
    content.put("speculative", f"{sum(c.measurement.speculative for c in comparisons):,}")
    number = 0
    for kind, name in PAGE_TABLES.items():
        numbered = []
        for comparison in comparisons:
            if group(comparison) == kind:
                number += 1
                numbered.append((number, comparison))
        rows = [_row(n, c, expectations[c.measurement.id], fitted.get(c.measurement.id), ctx) for n, c in numbered]
        header = SPLIT_HEADER if name == TABLES["one split against another"] else HEADER
        content.table(name, measured_table(rows, header) + conditions(numbered) if rows else "*None yet.*\n")
    content.put("single_rows_note", single_rows_note(ctx, comparisons))
    content.figure(
        "measured-ratios",
        ratio_chart(comparisons),
        "Every measurement on this page that has a ceiling (all but the splits' speedups) as a share of it,"
        " grouped by kind, with the speculative runs in a row of their own. Rates are measured ÷ ceiling,"
        " times ceiling ÷ measured, so further right is always closer to the ceiling; only the speculative"
        " row may pass 100%.",
    )
    runs = serving_runs(calibration)
    for split, name in SPLITS.items():
        chosen = [(run, ceiling, expectation) for run, ceiling, expectation in runs if run.split == split]
        rows = [serving_row(n, *entry, ctx) for n, entry in enumerate(chosen, start=1)]
        content.table(name, measured_table(rows, SERVING_HEADER, SERVING_RIGHT))
        content.put(f"{split}_runs", f"{len(chosen):,}")
        if split == "check":
            numbered = [(n, run) for n, (run, _, _) in enumerate(chosen, start=1)]
            content.table("serving-reported-defects", reported_defects(numbered))
            content.put("reported_defects", f"{sum(not run.counted for _, run in numbered):,}")
    content.table("serving-fit-summary", fit_summary(calibration))
    content.table("serving-coverage", coverage_summary(calibration))
    unbanded = calibration.provenance["coverage_runs_without_a_band"]
    content.put("unbanded_release", f"{unbanded['leave_one_release_out_nested']:,}")
    content.put("unbanded_gpu", f"{unbanded['leave_one_gpu_out_nested']:,}")
    content.table("serving-by-gpu", gpu_summary(calibration))
    content.put("session_serial_share", f"{calibration.harnesses['session'].context_serial_share:.2f}")
    content.put("session_serial_rows", f"{calibration.provenance['context_serial_rows']:,}")
    content.put("measured_links", measured_links(calibration, ctx))
    content.put("nvlink_share", percent(calibration.link_efficiency))
    worst = max(run.ratio(ceiling) for run, ceiling, _ in runs)
    content.put("serving_worst_ceiling", percent(worst))
    points = [
        {
            "kind": FIGURE_KINDS[e.kind],
            "set": SETS[run.split if run.counted else "defect"],
            "ratio": round(e.measured_over_expected, 4),
            "label": f"{e.measured_over_expected:.2f}",
            "what": f"{run.engine}, {run.gpus} × {run.gpu}, {run.model}, {run.input_tokens}/{run.output_tokens}",
        }
        for run, _, e in runs
    ]
    points += [
        {
            "kind": FIGURE_KINDS[e.kind],
            "set": SETS["page"],
            "ratio": round(e.measured_over_expected, 4),
            "label": f"{e.measured_over_expected:.2f}",
            "what": f"{c.measurement.software}, {c.measurement.gpus} × {c.measurement.gpu}, {c.measurement.model}",
        }
        for c in comparisons
        if (e := expectations[c.measurement.id]) is not None
    ]
    content.figure(
        "measured-vs-expected",
        expected_chart(points, calibration),
        "Measured ÷ expected for every serving run (fitted on, and held out) and every measurement in the tables"
        " above that has an expected figure, by kind of figure; the grey bar is the band.",
    )
    return content


def single_rows_note(ctx: Context, comparisons: list[Comparison]) -> str:
    """What the single-GPU decode rows are evidence of: when they are all one stack on one machine,
    that one tuned stack on that GPU, not a range for every GPU."""
    rows = [c.measurement for c in comparisons if group(c) == "single-GPU decode"]
    stacks = {(m.software, m.software_version) for m in rows}
    machines = {(m.gpu, m.hardware) for m in rows}
    if not rows:
        return "There are none yet."
    if len(stacks) > 1 or len(machines) > 1:
        return f"These {len(rows):,} rows come from {len(stacks):,} stacks on {len(machines):,} machines."
    (software, version), (gpu, hardware) = next(iter(stacks)), next(iter(machines))
    return (
        f"These {len(rows):,} rows are one stack on one machine: {software} ({version}) on one"
        f" {ctx.specs.gpu(gpu).name} (in its source's words: {hardware}). They show what that tuned stack"
        " reached on that GPU, not a range for every GPU, and the calculator's range for an H100 is no"
        " stronger than they are."
    )
