"""Chart builders for the speculative-decoding chapter, returned as Vega-Lite dicts.

- the speedup over α and γ at one user (a heatmap with the value in every cell);
- the speedup against the batch for several γ, with the break-even line at 1;
- choosing γ: measured speedups by draft length beside the package's, for two EAGLE heads;
- what a round really costs: Spec-Bench's τ against its measured speedup, one point per method;
- under load: median TPOT and goodput against the request rate, with and without speculation.

Every value is computed by the ``roofline`` package in ``page.py``; these functions
only draw the rows they are given.
"""

from __future__ import annotations

from typing import Any

import altair as alt

from sitegen.figures import WIDTH, figure_spec


def speedup_heatmap(rows: list[dict[str, Any]], title: str, subtitle: list[str]) -> dict[str, Any]:
    """Rows of ``{"alpha", "gamma", "speedup"}``: one cell per pair, coloured around 1 (no gain)
    and labelled with its value, so the figure reads without the colours."""
    data = alt.Data(values=rows)
    base = alt.Chart(data).encode(
        x=alt.X("gamma:O", title="draft tokens per round, γ"),
        y=alt.Y("alpha:O", sort="descending", title="acceptance rate α"),
    )
    cells = base.mark_rect().encode(
        color=alt.Color(
            "speedup:Q",
            scale=alt.Scale(scheme="blueorange", domainMid=1),
            # No legend: every cell is labelled with its value, and a gradient legend would give the SVG
            # an id from the renderer's counter, different on every render.
            legend=None,
        ),
        tooltip=[
            alt.Tooltip("alpha:Q", title="α"),
            alt.Tooltip("gamma:Q", title="γ"),
            alt.Tooltip("speedup:Q", title="speedup", format=".2f"),
        ],
    )
    labels = base.mark_text(fontSize=10).encode(
        text=alt.Text("speedup:Q", format=".1f"),
        color=alt.condition("datum.speedup > 2.2 || datum.speedup < 0.6", alt.value("white"), alt.value("black")),
    )
    return figure_spec(cells + labels, title, subtitle)


def speedup_vs_batch(rows: list[dict[str, Any]], title: str, subtitle: list[str]) -> dict[str, Any]:
    """Rows of ``{"batch", "gamma", "speedup"}``: a line per γ over a log batch axis, and a rule at 1."""
    data = alt.Data(values=rows)
    lines = (
        alt.Chart(data)
        .mark_line()
        .encode(
            x=alt.X(
                "batch:Q",
                scale=alt.Scale(
                    type="log", domain=[min(row["batch"] for row in rows), max(row["batch"] for row in rows)]
                ),
                title="users decoding together (log scale)",
            ),
            y=alt.Y("speedup:Q", title="speedup over plain decoding"),
            color=alt.Color("gamma:N", title="γ"),
            strokeDash=alt.StrokeDash("gamma:N", title="γ"),
            tooltip=[
                alt.Tooltip("gamma:N", title="γ"),
                alt.Tooltip("batch:Q", title="users", format=",.0f"),
                alt.Tooltip("speedup:Q", title="speedup", format=".2f"),
            ],
        )
    )
    even = alt.Chart(alt.Data(values=[{"y": 1}])).mark_rule(color="#888888", strokeDash=[2, 2]).encode(y="y:Q")
    return figure_spec(lines + even, title, subtitle)


def gamma_choice(rows: list[dict[str, Any]], title: str, subtitle: list[str]) -> dict[str, Any]:
    """Rows of ``{"gamma", "speedup", "head", "kind"}`` where kind is "measured" or "model":
    points for what was measured, lines for what the package computes."""
    data = alt.Data(values=rows)
    x = alt.X("gamma:Q", title="draft tokens per round, γ", scale=alt.Scale(zero=False), axis=alt.Axis(tickMinStep=1))
    y = alt.Y("speedup:Q", title="speedup at one user", scale=alt.Scale(zero=False))
    tooltip = [
        alt.Tooltip("head:N", title="head"),
        alt.Tooltip("kind:N", title=" "),
        alt.Tooltip("gamma:Q", title="γ"),
        alt.Tooltip("speedup:Q", title="speedup", format=".2f"),
    ]
    model = (
        alt.Chart(data)
        .transform_filter("datum.kind == 'model'")
        .mark_line()
        .encode(x=x, y=y, color=alt.Color("head:N", title=None), tooltip=tooltip)
    )
    measured = (
        alt.Chart(data)
        .transform_filter("datum.kind == 'measured'")
        .mark_point(filled=True, size=60)
        .encode(x=x, y=y, color=alt.Color("head:N", title=None), tooltip=tooltip)
    )
    return figure_spec(model + measured, title, subtitle)


def round_costs(rows: list[dict[str, Any]], title: str, subtitle: list[str]) -> dict[str, Any]:
    """Rows of ``{"method", "drafter", "tau", "speedup", "cost", "label"}`` (label: "above-right",
    "left" or "below-right", where the method's name goes): a labelled point per method, τ across
    and the measured speedup up, coloured by what drafts, with the line speedup = τ (a round that
    costs one plain step) for reference."""
    data = alt.Data(values=rows)
    top = max(row["tau"] for row in rows) * 1.05
    x = alt.X("tau:Q", title="tokens per verification step, τ", scale=alt.Scale(domain=[1, top]))
    y = alt.Y("speedup:Q", title="measured speedup", scale=alt.Scale(domain=[1, top]))
    free = (
        alt.Chart(alt.Data(values=[{"tau": 1, "speedup": 1}, {"tau": top, "speedup": top}]))
        .mark_line(color="#888888", strokeDash=[4, 4])
        .encode(x=x, y=y)
    )
    base = alt.Chart(data).encode(x=x, y=y)
    points = base.mark_point(filled=True, size=70).encode(
        color=alt.Color("drafter:N", title="drafts with"),
        shape=alt.Shape("drafter:N", title="drafts with"),
        tooltip=[
            alt.Tooltip("method:N", title="method"),
            alt.Tooltip("drafter:N", title="drafts with"),
            alt.Tooltip("tau:Q", title="τ", format=".2f"),
            alt.Tooltip("speedup:Q", title="speedup", format=".2f"),
            alt.Tooltip("cost:Q", title="round cost, plain steps", format=".2f"),
        ],
    )
    # Each label sits where the row's "label" field says (above-right by default), so that the
    # crowded corner of cheap drafters stays readable.
    places = {"above-right": ("left", 7, -7), "left": ("right", -7, 0), "below-right": ("left", 7, 10)}
    chart = free + points
    for place, (align, dx, dy) in places.items():
        chart += (
            base.transform_filter(f"datum.label == '{place}'")
            .mark_text(align=align, dx=dx, dy=dy, fontSize=10, color="#666666")
            .encode(text="method:N")
        )
    return figure_spec(chart, title, subtitle)


def under_load(rows: list[dict[str, Any]], title: str, subtitle: list[str]) -> dict[str, Any]:
    """Rows of ``{"rate", "setup", "tpot_ms", "goodput", "tokens_per_s"}``: median TPOT above and
    goodput below, both against the request rate, a line per setup."""
    data = alt.Data(values=rows)
    setups = list(dict.fromkeys(row["setup"] for row in rows))
    x = alt.X("rate:Q", title="requests per second")
    color = alt.Color("setup:N", title=None, sort=setups)
    # The dashes tell the lines apart without colour; the colour legend names them (a legend of its own
    # for the dashes would repeat it, since the lines carry points).
    dash = alt.StrokeDash("setup:N", title=None, sort=setups, legend=None)
    tooltip = [
        alt.Tooltip("setup:N", title=" "),
        alt.Tooltip("rate:Q", title="requests/s"),
        alt.Tooltip("tpot_ms:Q", title="median TPOT, ms", format=".2f"),
        alt.Tooltip("goodput:Q", title="goodput, requests/s", format=".1f"),
        alt.Tooltip("tokens_per_s:Q", title="output tokens/s", format=",.0f"),
    ]

    def panel(field: str, axis_title: str) -> alt.Chart:
        return (
            alt.Chart(data)
            .mark_line(point=True)
            .encode(x=x, y=alt.Y(field, title=axis_title), color=color, strokeDash=dash, tooltip=tooltip)
            .properties(width=WIDTH, height=200)
        )

    chart = alt.vconcat(
        panel("tpot_ms:Q", "median TPOT (ms)"), panel("goodput:Q", "goodput (requests/s)")
    ).resolve_scale(color="shared", strokeDash="shared")
    return figure_spec(chart, title, subtitle, size=None)
