"""Chart builders for the parallelism chapter, returned as Vega-Lite dicts.

Each takes rows the page module computed with the package (``roofline.deployment``,
``roofline.performance``, ``roofline.measured``); nothing here computes a figure. Data
is inline and each chart is one view, as the page stretches a view to its column.
"""

from __future__ import annotations

from typing import Any

import altair as alt

from sitegen.figures import figure_spec, sig

#: The step's parts, in the order they stack, and their colours (light and dark pages alike).
STEP_PARTS = ["weights", "cache", "all-reduces", "rest"]
STEP_COLOURS = ["#4e79a7", "#59a14f", "#e15759", "#bab0ac"]


def kv_room(rows: list[dict[str, Any]], model: str, gpu: str, context: str) -> dict[str, Any]:
    """Users that fit against the GPU count (bars), beside ``G times one GPU`` (a dashed line)."""
    long = []
    for row in rows:
        long.append({"gpus": str(row["gpus"]), "what": "users that fit", "users": row["users"]})
        long.append({"gpus": str(row["gpus"]), "what": "G × one GPU's users", "users": row["linear"]})
    base = alt.Chart(alt.Data(values=long)).encode(
        x=alt.X(
            "gpus:N", title="GPUs (tensor parallel)", sort=[str(r["gpus"]) for r in rows], axis=alt.Axis(labelAngle=0)
        ),
        y=alt.Y("users:Q", title="users that fit"),
        color=alt.Color("what:N", title=None, sort=["users that fit", "G × one GPU's users"]),
        tooltip=["gpus:N", "what:N", "users:Q"],
    )
    bars = base.transform_filter(alt.datum.what == "users that fit").mark_bar(width=40)
    line = base.transform_filter(alt.datum.what != "users that fit").mark_line(point=True, strokeDash=[5, 3])
    return figure_spec(
        alt.layer(bars, line),
        f"Users that fit grow faster than the GPUs, {model} on {gpu}s",
        [f"Each user at {context} tokens; the weights are stored once, so each added GPU is all cache."],
    )


def tp_scaling(
    rows: list[dict[str, Any]], measured: list[dict[str, Any]], title: str, order: list[str]
) -> dict[str, Any]:
    """Tokens/s per user against the TP degree: one line per all-reduce latency, measured points on top."""
    lines = (
        alt.Chart(alt.Data(values=rows))
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "gpus:Q",
                title="GPUs (tensor parallel)",
                scale=alt.Scale(type="log", base=2),
                axis=alt.Axis(values=[1, 2, 4, 8]),
            ),
            y=alt.Y("tokens_per_s:Q", title="tokens/s for one user"),
            color=alt.Color("latency:N", title=None, sort=order),
            tooltip=["latency:N", "gpus:Q", "tokens_per_s:Q"],
        )
    )
    points = (
        alt.Chart(alt.Data(values=measured))
        .mark_point(shape="diamond", size=120, filled=True, color="#111111")
        .encode(x="gpus:Q", y="tokens_per_s:Q", tooltip=["what:N", "gpus:Q", "tokens_per_s:Q"])
    )
    return figure_spec(
        alt.layer(lines, points),
        title,
        ["Lines: the model at each all-reduce latency. Black diamonds: gpt-fast measured."],
    )


def pipeline(rows: list[dict[str, Any]], lanes: list[str], title: str, subtitle: str) -> dict[str, Any]:
    """A Gantt chart: each lane a stage of one schedule, each bar a micro-batch at work, gaps the bubble."""
    chart = (
        alt.Chart(alt.Data(values=rows))
        .mark_bar(height=14)
        .encode(
            x=alt.X("start:Q", title="time (stage-steps)"),
            x2="end:Q",
            y=alt.Y("lane:N", title=None, sort=lanes),
            color=alt.Color("micro:N", title="micro-batch"),
            tooltip=["lane:N", "micro:N", "start:Q", "end:Q"],
        )
    )
    return figure_spec(chart, title, [subtitle])


def tp_vs_pp(rows: list[dict[str, Any]], title: str, subtitle: str, order: list[str]) -> dict[str, Any]:
    """Total tokens/s against the batch for each split (log batch axis), where the batch fits."""
    chart = (
        alt.Chart(alt.Data(values=rows))
        .mark_line(point=True)
        .encode(
            x=alt.X("batch:Q", title="users (batch)", scale=alt.Scale(type="log", base=2)),
            y=alt.Y("tokens_per_s:Q", title="tokens/s, all users"),
            color=alt.Color("split:N", title=None, sort=order),
            tooltip=["split:N", "batch:Q", "tokens_per_s:Q", "per_user:Q"],
        )
    )
    return figure_spec(chart, title, [subtitle])


def step_stack(rows: list[dict[str, Any]], order: list[str]) -> dict[str, Any]:
    """One horizontal bar per measured step, stacked from the model's parts and what is left."""
    long = [
        {"run": row["run"], "part": part, "ms": sig(row[part]), "order": STEP_PARTS.index(part)}
        for row in rows
        for part in STEP_PARTS
    ]
    chart = (
        alt.Chart(alt.Data(values=long))
        .mark_bar()
        .encode(
            y=alt.Y("run:N", title=None, sort=order, axis=alt.Axis(labelLimit=300)),
            x=alt.X("ms:Q", title="milliseconds per token", stack="zero"),
            color=alt.Color(
                "part:N", title=None, sort=STEP_PARTS, scale=alt.Scale(domain=STEP_PARTS, range=STEP_COLOURS)
            ),
            order=alt.Order("order:Q"),
            tooltip=["run:N", "part:N", "ms:Q"],
        )
    )
    return figure_spec(
        chart,
        "What a measured multi-GPU decode step is made of",
        ["The model's weights, cache and all-reduces at full speed; the rest is what it does not explain."],
    )


def allreduce_time(rows: list[dict[str, Any]], marks: list[dict[str, Any]], order: list[str]) -> dict[str, Any]:
    """One all-reduce's time against its message (both log scales), one line per link, with a
    dashed rule at each message the prose names."""
    lines = (
        alt.Chart(alt.Data(values=rows))
        .mark_line()
        .encode(
            x=alt.X("bytes:Q", title="message (bytes, log scale)", scale=alt.Scale(type="log")),
            y=alt.Y("us:Q", title="one all-reduce (µs, log scale)", scale=alt.Scale(type="log")),
            color=alt.Color("link:N", title=None, sort=order),
            tooltip=["link:N", "bytes:Q", "us:Q"],
        )
    )
    rules = (
        alt.Chart(alt.Data(values=marks))
        .mark_rule(strokeDash=[4, 3], color="#888888")
        .encode(x="bytes:Q", tooltip=["what:N", "bytes:Q"])
    )
    labels = (
        alt.Chart(alt.Data(values=marks))
        .mark_text(align="left", dx=4, dy=-4, fontSize=11, color="#888888")
        .encode(x="bytes:Q", y=alt.value(12), text="what:N")
    )
    return figure_spec(
        alt.layer(lines, rules, labels),
        "One all-reduce on eight GPUs: a latency floor, then the bytes",
        ["Small messages cost the fixed latency whatever the link; large ones the bytes over it."],
    )


def sensitivity(rows: list[dict[str, Any]], rules: list[dict[str, Any]], title: str, subtitle: str) -> dict[str, Any]:
    """Tokens/s of two splits against the base latency (one line each), with labelled vertical rules."""
    lines = (
        alt.Chart(alt.Data(values=rows))
        .mark_line()
        .encode(
            x=alt.X("base_us:Q", title="NCCL's base latency, µs (the rest of the 8-GPU measurement is steps)"),
            y=alt.Y("tokens_per_s:Q", title="tokens/s for one user", scale=alt.Scale(zero=False)),
            color=alt.Color("split:N", title=None, sort=["TP4", "TP8"]),
            tooltip=["split:N", "base_us:Q", "tokens_per_s:Q"],
        )
    )
    marks = alt.Chart(alt.Data(values=rules)).encode(x="base_us:Q", tooltip=["what:N", "base_us:Q"])
    return figure_spec(
        alt.layer(
            lines,
            marks.mark_rule(strokeDash=[4, 3], color="#888888"),
            marks.mark_text(align="left", dx=3, dy=-6, angle=270, baseline="bottom").encode(
                text="what:N", y=alt.value(0)
            ),
        ),
        title,
        [subtitle],
    )
