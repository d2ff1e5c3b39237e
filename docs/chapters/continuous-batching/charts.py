"""Chart builders for the continuous-batching chapter, returned as Vega-Lite dicts.

- the first requests' timelines under static and continuous batching;
- KV blocks held and tokens cached over time, paged against reserved admission;
- throughput against the p99 inter-token latency as the arrival rate rises, one
  curve per policy; goodput against the rate, and against the max batch;
- p99 inter-token latency and p99 TTFT against the chunked scheduler's token budget.

Each takes simulation results the page module ran (``roofline.serving.simulate``);
nothing here simulates or computes a metric. Data is inline, as in ``charts``; each is one view
(no facets or concatenation), since the page stretches a view to its column.
"""

from __future__ import annotations

from typing import Any

import altair as alt

from roofline.serving import BLOCK_TOKENS, SPAN_LEGEND, SimulationResult
from sitegen.figures import PALETTE, WIDTH, figure_spec, sig

#: A request's spans by kind, named and ordered as the simulator's timeline shows them (serving.SPAN_LEGEND),
#: and coloured as that timeline colours the n-th kind (runtime.css, rf-timeline__span--n).
SPAN_KINDS = dict(SPAN_LEGEND)
SPAN_COLOURS = ["#bab0ac", "#f28e2b", "#4e79a7", "#e15759", "#59a14f"]
ADMISSION_NAMES = {"paged": "paged (vLLM)", "reserve": "reserve (Orca oracle)"}
#: Spans of the run over which the blocks-over-time chart averages each log (one point per span).
KV_SPANS = 100
POLICY_NAMES = {"static": "static", "continuous": "continuous", "chunked": "chunked prefill"}


def policy_scale(policies: list[str]) -> alt.Scale:
    """The colours of ``policies``, each policy's the same in every chart whichever others it shows."""
    order = list(POLICY_NAMES)
    return alt.Scale(domain=[POLICY_NAMES[p] for p in policies], range=[PALETTE[order.index(p)] for p in policies])


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
    # The legend lists the kinds these runs hold, each in its own colour whichever others are present.
    present = {row["kind"] for row in rows}
    shown = [index for index, kind in enumerate(SPAN_KINDS) if SPAN_KINDS[kind] in present]
    kinds = [list(SPAN_KINDS.values())[index] for index in shown]
    colours = [SPAN_COLOURS[index] for index in shown]
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
            color=alt.Color("kind:N", title=None, scale=alt.Scale(domain=kinds, range=colours)),
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


def _itl_p99_ms(result: SimulationResult) -> float:
    return sig(((result.itl_s or {}).get(99) or 0.0) * 1e3)


def _sweep_rows(sweep: dict[str, list[tuple[float, SimulationResult]]]) -> list[dict[str, Any]]:
    return [
        {
            "policy": POLICY_NAMES[policy],
            "rate": rate,
            "tokens_per_s": sig(result.throughput_tokens_per_s),
            "itl_p99_ms": _itl_p99_ms(result),
            "ttft_p99_s": sig(result.ttft_s[99] or 0.0),
            "goodput": sig(result.goodput_requests_per_s),
            "attainment": sig(result.slo_attainment or 0.0),
        }
        for policy, points in sweep.items()
        for rate, result in points
    ]


def _sweep_chart(sweep: dict[str, list[tuple[float, SimulationResult]]]) -> alt.Chart:
    return alt.Chart(alt.Data(values=_sweep_rows(sweep))).encode(
        color=alt.Color("policy:N", title=None, scale=policy_scale(list(sweep))),
        tooltip=["policy:N", "rate:Q", "tokens_per_s:Q", "itl_p99_ms:Q", "ttft_p99_s:Q", "goodput:Q", "attainment:Q"],
    )


def throughput_latency(sweep: dict[str, list[tuple[float, SimulationResult]]]) -> dict[str, Any]:
    """Throughput against the p99 inter-token latency (every gap), one curve per policy, a point per rate."""
    chart = (
        _sweep_chart(sweep)
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "itl_p99_ms:Q",
                title="p99 inter-token latency, every gap (ms, log)",
                scale=alt.Scale(type="log"),
            ),
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
        ["Requests per second that met both latency targets, at a max batch of 64."],
    )


def goodput_by_batch(runs: dict[str, list[tuple[int, SimulationResult]]]) -> dict[str, Any]:
    """Goodput and throughput against the max batch (log scale), one pair of curves per policy."""
    rows = [
        {"policy": POLICY_NAMES[policy], "max_batch": size, "metric": metric, "requests_per_s": sig(value)}
        for policy, points in runs.items()
        for size, result in points
        for metric, value in (
            ("goodput", result.goodput_requests_per_s),
            ("throughput", result.throughput_requests_per_s),
        )
    ]
    chart = (
        alt.Chart(alt.Data(values=rows))
        .mark_line()
        .encode(
            x=alt.X("max_batch:Q", title="max batch, max_num_seqs (log scale)", scale=alt.Scale(type="log", base=2)),
            y=alt.Y("requests_per_s:Q", title="requests/s"),
            color=alt.Color("policy:N", title=None, scale=policy_scale(list(runs))),
            strokeDash=alt.StrokeDash("metric:N", title=None, sort=["goodput", "throughput"]),
            tooltip=["policy:N", "max_batch:Q", "metric:N", "requests_per_s:Q"],
        )
    )
    return figure_spec(
        chart,
        "Goodput against the max batch at 48 requests per second",
        ["Below the requests in flight the rate needs, the queue grows and goodput collapses."],
    )


def _time_means(series: tuple[tuple[float, int], ...], buckets: int) -> list[tuple[float, float]]:
    """A step function logged as ``(time, value)`` points (each value holds until the next point),
    as its time-weighted mean over ``buckets`` equal spans of the run: ``(span's middle, mean)``."""
    if len(series) < 2:
        return [(time, float(value)) for time, value in series]
    end = series[-1][0]
    width = end / buckets
    means = []
    index = 0
    for bucket in range(buckets):
        low, high = bucket * width, (bucket + 1) * width
        total = 0.0
        while index + 1 < len(series) and series[index + 1][0] <= low:
            index += 1
        step = index
        while step < len(series) and series[step][0] < high:
            start = max(series[step][0], low)
            stop = min(series[step + 1][0] if step + 1 < len(series) else end, high)
            total += series[step][1] * max(stop - start, 0.0)
            step += 1
        means.append(((low + high) / 2, total / width))
    return means


def kv_blocks(runs: dict[str, SimulationResult], capacity: int) -> dict[str, Any]:
    """KV blocks held and tokens cached (in blocks) over time, one pair of lines per admission rule,
    against the cache's size: each run's log (``record_blocks``), a step function, as its
    time-weighted mean over ``KV_SPANS`` equal spans of the run."""
    rows = [
        {"admission": ADMISSION_NAMES[admission], "measure": measure, "time_s": sig(time), "blocks": sig(mean / scale)}
        for admission, result in runs.items()
        for measure, series, scale in (
            ("blocks held", result.blocks_in_use, 1),
            ("tokens cached, in blocks", result.cached_tokens, BLOCK_TOKENS),
        )
        for time, mean in _time_means(series, KV_SPANS)
    ]
    lines = (
        alt.Chart(alt.Data(values=rows))
        .mark_line(strokeWidth=1.5)
        .encode(
            x=alt.X("time_s:Q", title="time (s)"),
            y=alt.Y("blocks:Q", title=f"KV blocks of {BLOCK_TOKENS} tokens"),
            color=alt.Color("admission:N", title=None, sort=list(ADMISSION_NAMES.values())),
            strokeDash=alt.StrokeDash("measure:N", title=None, sort=["blocks held", "tokens cached, in blocks"]),
            tooltip=["admission:N", "measure:N", "time_s:Q", "blocks:Q"],
        )
    )
    cache = (
        alt.Chart(alt.Data(values=[{"blocks": capacity, "label": f"the whole cache, {capacity:,} blocks"}]))
        .mark_rule(color="#888888", strokeDash=[2, 2])
        .encode(y="blocks:Q", tooltip=["label:N"])
    )
    return figure_spec(
        alt.layer(lines, cache),
        "KV blocks held and filled, paged against reserved",
        ["Reservation holds room for tokens not yet written; paging fills what it holds."],
    )


def budget_sweep(points: list[tuple[int, SimulationResult]]) -> dict[str, Any]:
    """p99 inter-token latency and p99 TTFT against the token budget, both in milliseconds on one log axis."""
    long = [
        {"budget": budget, "metric": metric, "ms": value}
        for budget, result in points
        for metric, value in (
            ("p99 inter-token latency", _itl_p99_ms(result)),
            ("p99 time to first token", sig((result.ttft_s[99] or 0.0) * 1e3)),
        )
    ]
    chart = (
        alt.Chart(alt.Data(values=long))
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "budget:Q",
                title="token budget per iteration, max_num_batched_tokens",
                scale=alt.Scale(type="log", base=2),
            ),
            y=alt.Y("ms:Q", title="milliseconds (log scale)", scale=alt.Scale(type="log")),
            color=alt.Color("metric:N", title=None, sort=["p99 inter-token latency", "p99 time to first token"]),
            tooltip=["budget:Q", "metric:N", "ms:Q"],
        )
    )
    return figure_spec(
        chart,
        "The token budget trades inter-token latency for time to first token",
        ["A small budget keeps every iteration short; a large one finishes prompts sooner."],
    )
