"""Reference page "Measured vs ceiling": every published measurement beside the package's ceiling.

The measurements are ``roofline/data/measurements.toml``; ``roofline.measured``
computes each one's ceiling on the same hardware and workload and the ratio
(measured ÷ ceiling for rates, ceiling ÷ measured for times, so 100% is the
ceiling reached). This module lays them out: one table per kind, each row with
its conditions and a link to the table or section it came from, and a chart of
the ratios by kind.
"""

from __future__ import annotations

from typing import Any

import altair as alt

from roofline.measured import KINDS, Comparison, Measurement, compare_all, load_measurements
from sitegen import escape
from sitegen.context import Context
from sitegen.figures import PALETTE
from sitegen.page import PageContent
from sitegen.values import percent

#: Table names on the page, one per kind, in the order of ``KINDS``.
TABLES = {
    "single-GPU decode": "measured-single-gpu-decode",
    "multi-GPU decode": "measured-multi-gpu-decode",
    "prefill (time to first token)": "measured-prefill",
    "maximum throughput": "measured-throughput",
    "HBM bandwidth": "measured-hbm-bandwidth",
    "GEMM rate": "measured-gemm",
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
    "Hardware",
    "GPUs",
    "Software",
    "Model",
    "Weights / KV, batch, in / out tokens",
    "Source (section), date",
)
#: Columns aligned right: the numbers.
RIGHT = {0, 2, 3, 4, 6}


def shown(metric: str, value: float) -> str:
    """A measured figure or its ceiling in the metric's reading unit."""
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
}


def source_link(measurement: Measurement) -> str:
    """The section it came from, linked to the source page (plain text if the URL is not a safe link)."""
    target = escape.http_url(measurement.source)
    section = escape.text(measurement.section)
    return f"[{section}]({target})" if target else f"{section} ({escape.text(measurement.source)})"


def _row(number: int, comparison: Comparison, ctx: Context) -> tuple[str, ...]:
    m = comparison.measurement
    model = "—" if not m.model else escape.text(ctx.specs.model(m.model).name)
    precisions = "—" if not m.model else f"{m.weight_precision} / {m.kv_precision}"
    batch = "—" if not m.model else ("max" if m.batch is None else f"{m.batch:,}")
    lengths = "—" if not m.model else f"{m.input_tokens:,} / {m.output_tokens:,}"
    workload = "—" if not m.model else f"{precisions}, batch {batch}, {lengths}"
    return (
        str(number),
        METRIC_NAMES[m.metric] + (" (speculative)" if m.speculative else ""),
        shown(m.metric, m.value),
        shown(m.metric, comparison.ceiling),
        percent(comparison.ratio),
        escape.text(ctx.specs.gpu(m.gpu).name),
        str(m.gpus),
        escape.text(f"{m.software} ({m.software_version})"),
        model,
        workload,
        f"{source_link(m)}, {m.date}",
    )


def measured_table(rows: list[tuple[str, ...]]) -> str:
    """A Markdown table of already escaped cells under ``HEADER``."""
    lines = ["| " + " | ".join(HEADER) + " |"]
    lines.append("|" + "|".join("---:" if i in RIGHT else "---" for i in range(len(HEADER))) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


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
        lines.append(f"- **{number}.** {said}Ceiling: {escape.text(comparison.accounting)}.{spec}")
    return "\n".join(lines) + "\n"


def group(comparison: Comparison) -> str:
    """The table and chart row a measurement goes in: its kind, or ``SPECULATIVE`` for a speculative run."""
    return SPECULATIVE if comparison.measurement.speculative else comparison.measurement.kind


def ratio_chart(comparisons: list[Comparison]) -> dict[str, Any]:
    """Each measurement's ratio to its ceiling, one row of points per kind, with the ceiling at 100%."""
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


def build(ctx: Context) -> PageContent:
    content = PageContent()
    comparisons = compare_all(load_measurements(specs=ctx.specs), ctx.specs)
    content.put("count", f"{len(comparisons):,}")
    content.put("speculative", f"{sum(c.measurement.speculative for c in comparisons):,}")
    number = 0
    for kind, name in PAGE_TABLES.items():
        numbered = []
        for comparison in comparisons:
            if group(comparison) == kind:
                number += 1
                numbered.append((number, comparison))
        rows = [_row(n, c, ctx) for n, c in numbered]
        content.table(name, measured_table(rows) + conditions(numbered) if rows else "*None yet.*\n")
    content.put("single_rows_note", single_rows_note(ctx, comparisons))
    content.figure(
        "measured-ratios",
        ratio_chart(comparisons),
        "Every measurement on this page as a share of its ceiling, grouped by kind, with the speculative runs"
        " in a row of their own. Rates are measured ÷ ceiling, times ceiling ÷ measured, so further right is"
        " always closer to the ceiling; only the speculative row may pass 100%.",
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
