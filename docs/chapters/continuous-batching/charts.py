"""Chart builders for the continuous-batching chapter, returned as Vega-Lite dicts.

- the first requests' timelines under static and continuous batching;
- throughput against p99 time per output token as the arrival rate rises, one
  curve per policy; goodput against the rate;
- p99 TPOT and p99 TTFT against the chunked scheduler's token budget.

Each takes simulation results the page module ran (``roofline.serving.simulate``);
nothing here simulates or computes a metric. Data is inline, as in ``charts``; each is one view
(no facets or concatenation), since the page stretches a view to its column.
"""

from __future__ import annotations

from typing import Any

import altair as alt

from roofline.serving import SimulationResult
from sitegen.figures import WIDTH, figure_spec, sig

#: Colours and order of a request's spans, as the simulator's trace names them.
SPAN_KINDS = {"wait": "queued", "prefill": "prefill", "decode": "decode", "padding": "padding (static)"}
SPAN_COLOURS = ["#bab0ac", "#f28e2b", "#4e79a7", "#e15759"]
POLICY_NAMES = {"static": "static", "continuous": "continuous", "chunked": "chunked prefill"}


def timelines(runs: dict[str, SimulationResult], count: int) -> dict[str, Any]:
    """One Gantt panel per policy: the first ``count`` traced requests' wait, prefill, decode and padding spans."""
    rows = []
    for policy, result in runs.items():
        for request in result.trace[:count]:
            spans = []
            if request.admitted_s is not None and request.admitted_s > request.arrival_s:
                spans.append(("wait", request.arrival_s, request.admitted_s))
            spans.extend((kind, start, end) for kind, start, end, _ in request.spans)
            for kind, start, end in spans:
                rows.append(
                    {
                        "policy": POLICY_NAMES[policy],
                        "request": request.id + 1,
                        "kind": SPAN_KINDS[kind],
                        "start_s": sig(start),
                        "end_s": sig(end),
                    }
                )
    kinds = list(SPAN_KINDS.values())
    # One view (the page stretches single views to the column): a lane per policy and request.
    lanes = [f"{POLICY_NAMES[policy]} #{index + 1}" for policy in runs for index in range(count)]
    for row in rows:
        row["lane"] = f"{row['policy']} #{row['request']}"
    chart = (
        alt.Chart(alt.Data(values=rows))
        .mark_bar(height=9)
        .encode(
            x=alt.X("start_s:Q", title="time (s)"),
            x2="end_s:Q",
            y=alt.Y("lane:N", title=None, sort=lanes),
            color=alt.Color("kind:N", title=None, scale=alt.Scale(domain=kinds, range=SPAN_COLOURS)),
            tooltip=["policy:N", "request:O", "kind:N", "start_s:Q", "end_s:Q"],
        )
        .properties(width=WIDTH, height=14 * len(lanes))
    )
    return figure_spec(
        chart,
        "The same requests, static against continuous batching",
        ["Static batches run until their longest request ends; continuous batching lets each one go."],
        size=None,  # each policy's panel is as tall as its requests
    )


def _sweep_rows(sweep: dict[str, list[tuple[float, SimulationResult]]]) -> list[dict[str, Any]]:
    return [
        {
            "policy": POLICY_NAMES[policy],
            "rate": rate,
            "tokens_per_s": sig(result.throughput_tokens_per_s),
            "tpot_p99_ms": sig((result.tpot_s[99] or 0.0) * 1e3),
            "ttft_p99_s": sig(result.ttft_s[99] or 0.0),
            "goodput": sig(result.goodput_requests_per_s),
        }
        for policy, points in sweep.items()
        for rate, result in points
    ]


def _sweep_chart(sweep: dict[str, list[tuple[float, SimulationResult]]]) -> alt.Chart:
    return alt.Chart(alt.Data(values=_sweep_rows(sweep))).encode(
        color=alt.Color("policy:N", title=None, sort=[POLICY_NAMES[p] for p in sweep]),
        tooltip=["policy:N", "rate:Q", "tokens_per_s:Q", "tpot_p99_ms:Q", "ttft_p99_s:Q", "goodput:Q"],
    )


def throughput_latency(sweep: dict[str, list[tuple[float, SimulationResult]]]) -> dict[str, Any]:
    """Throughput against p99 TPOT, one curve per policy, a point per arrival rate (in rate order)."""
    chart = (
        _sweep_chart(sweep)
        .mark_line(point=True)
        .encode(
            x=alt.X("tpot_p99_ms:Q", title="p99 time per output token (ms)", scale=alt.Scale(zero=False)),
            y=alt.Y("tokens_per_s:Q", title="output tokens/s"),
            order="rate:Q",
        )
    )
    return figure_spec(
        chart,
        "Throughput against p99 inter-token latency as the rate rises",
        ["Each point is one arrival rate; static batches stop gaining early."],
    )


def goodput(sweep: dict[str, list[tuple[float, SimulationResult]]]) -> dict[str, Any]:
    """Goodput against the arrival rate, one curve per policy."""
    chart = (
        _sweep_chart(sweep)
        .mark_line(point=True)
        .encode(
            x=alt.X("rate:Q", title="arrival rate (requests/s)"),
            y=alt.Y("goodput:Q", title="goodput (requests/s)"),
        )
    )
    return figure_spec(
        chart,
        "Goodput peaks, then falls",
        ["Requests per second that meet both latency targets."],
    )


def budget_sweep(points: list[tuple[int, SimulationResult]]) -> dict[str, Any]:
    """p99 TPOT and p99 TTFT against the token budget, both in milliseconds on one log axis."""
    rows = [
        {
            "budget": budget,
            "tpot_p99_ms": sig((result.tpot_s[99] or 0.0) * 1e3),
            "ttft_p99_ms": sig((result.ttft_s[99] or 0.0) * 1e3),
        }
        for budget, result in points
    ]
    long = [
        {"budget": row["budget"], "metric": metric, "ms": row[field]}
        for row in rows
        for field, metric in (("tpot_p99_ms", "p99 TPOT"), ("ttft_p99_ms", "p99 TTFT"))
    ]
    chart = (
        alt.Chart(alt.Data(values=long))
        .mark_line(point=True)
        .encode(
            x=alt.X("budget:Q", title="token budget per iteration", scale=alt.Scale(type="log", base=2)),
            y=alt.Y("ms:Q", title="milliseconds (log scale)", scale=alt.Scale(type="log")),
            color=alt.Color("metric:N", title=None, sort=["p99 TPOT", "p99 TTFT"]),
            tooltip=["budget:Q", "metric:N", "ms:Q"],
        )
    )
    return figure_spec(
        chart,
        "The token budget trades inter-token latency for time to first token",
        ["A small budget keeps every iteration short; a large one finishes prompts sooner."],
    )
