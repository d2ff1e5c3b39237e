"""The calculator "Serve a stream of requests" (``<!-- roofline:calculator serving -->``).

It runs ``roofline.serving.simulate`` on the reader's traffic and scheduler (declared,
with its bounds and the rule that each range runs from low to high, in ``FORM``) and
shows the metrics the chapter discusses, plus a Gantt-style timeline of the first
requests: when each arrived, waited, had its prompt prefilled and decoded. Like
every calculator, ``view`` runs at build time in CPython (the defaults' answer is
painted into the page) and in the reader's browser in Pyodide on every input;
every number comes from the package.
"""

from __future__ import annotations

from typing import Any

from roofline import Hardware, ServingConfig, Workload, builtin_specs, simulate
from roofline import formatting as fmt
from roofline.calibration import load_calibration
from roofline.forms import Field, Form, Output, Rule, gpu_menu, model_menu
from roofline.serving import DEFAULT_TPOT_SLO_S, DEFAULT_TTFT_SLO_S, POLICIES, Lengths, simulate_expected

#: Requests per run: enough for a p99 of ten samples, few enough to answer within a keystroke.
REQUESTS = 1000
#: Requests drawn in the timeline (the first ones to arrive).
TIMELINE_REQUESTS = 12
POLICY_NAMES = {
    "static": "Static batches",
    "continuous": "Continuous batching",
    "chunked": "Chunked prefill (token budget)",
}
#: The timeline's kinds of span, in legend order, as the simulator's trace names them.
SPAN_KINDS = [["wait", "Queued"], ["prefill", "Prefill"], ["decode", "Decode"], ["padding", "Padding (static)"]]
_SPECS = builtin_specs()

FORM = Form(
    title="Serve a stream of requests",
    legend="Traffic and scheduler",
    fields=[
        Field.choice("gpu", "GPU", gpu_menu(_SPECS), default="h100-sxm", wide=True),
        # Models with sliding-window layers are left out: the simulator refuses them (it would
        # overstate their cache), so offering them would only ever show an error.
        Field.choice(
            "model",
            "Model",
            model_menu(_SPECS, keep=lambda model: not model.sliding_window),
            default="llama-3.1-8b",
            wide=True,
        ),
        Field.choice(
            "policy",
            "Scheduler",
            [(policy, POLICY_NAMES[policy]) for policy in POLICIES],
            default="continuous",
            wide=True,
        ),
        Field.number("rate", "Requests per second", low=1, high=1000, default=10),
        Field.number("prompt_low", "Prompt tokens, from", low=1, high=32768, default=128),
        Field.number("prompt_high", "Prompt tokens, to", low=1, high=32768, default=2048),
        Field.number("output_low", "Output tokens, from", low=1, high=8192, default=32),
        Field.number("output_high", "Output tokens, to", low=1, high=8192, default=512),
        Field.number("max_batch", "Max batch", low=1, high=1024, default=64),
        Field.number("token_budget", "Token budget (chunked)", low=2, high=65536, default=512),
    ],
    outputs=[
        Output.text("ttft", "Time to first token, p50 · p90 · p99"),
        Output.text("tpot", "Time per output token, p50 · p90 · p99"),
        Output.text("throughput", "Throughput"),
        Output.text("expected", "Expected throughput · mean TTFT · mean TPOT (with band)"),
        Output.text("goodput", f"Goodput (TTFT ≤ {DEFAULT_TTFT_SLO_S:g} s, TPOT ≤ {DEFAULT_TPOT_SLO_S * 1e3:g} ms)"),
        Output.text("in_flight", "Mean requests in flight"),
        Output.bar("busy", "GPU busy", share="busy_fraction"),
        Output.timeline(
            "timeline",
            f"The first {TIMELINE_REQUESTS} requests, one row each, against time in seconds: waiting"
            " in the queue, prefill iterations, decode iterations. A gap inside a request's decode is a stall."
            " Simulated by the roofline package in your browser.",
        ),
    ],
    rules=[
        Rule.at_most(
            "prompt_low", "prompt_high", "The shortest prompt ('from') must not be longer than the longest ('to')."
        ),
        Rule.at_most(
            "output_low", "output_high", "The shortest output ('from') must not be longer than the longest ('to')."
        ),
    ],
)
#: The inputs' defaults (the form's), for tests and the benchmark.
DEFAULTS: dict[str, Any] = FORM.defaults


def _three(values: dict[int, float | None]) -> str:
    """Three percentiles as ``"12.0 ms · 15.1 ms · 20.3 ms"`` (— where there is no sample)."""
    return " · ".join("—" if value is None else fmt.duration(value) for value in values.values())


def timeline(result: Any) -> dict[str, Any]:
    """The first requests' traces as the page's timeline: one row per request, spans in seconds.

    A request's wait (arrival to admission) is a span of its own, so a reader sees the queue.
    """
    rows = []
    for request in result.trace:
        spans = []
        if request.admitted_s is not None and request.admitted_s > request.arrival_s:
            spans.append(["wait", request.arrival_s, request.admitted_s])
        spans.extend([kind, start, end] for kind, start, end, _ in request.spans)
        rows.append(
            {
                "label": f"#{request.id + 1}",
                "title": f"Request {request.id + 1}: {request.prompt:,}-token prompt, {request.output:,} output tokens",
                "spans": spans,
            }
        )
    return {"rows": rows, "kinds": SPAN_KINDS, "unit": "s"}


def _expected(figures: dict[str, Any], bands: dict[str, list[float] | None]) -> str:
    """``"1,234 (band 900–1,480) tokens/s · 120 ms (band …) · 25 ms (band …)"``: the run at the
    expected costs, each mean with its band; a dash where nothing completed."""
    parts = []
    for metric, show in (
        ("throughput_tokens_per_s", fmt.rate),
        ("ttft_mean_s", fmt.duration),
        ("tpot_mean_s", fmt.duration),
    ):
        value, band = figures.get(metric), bands.get(metric)
        if value is None or band is None:
            parts.append("—")
            continue
        text = fmt.banded(show(value), show(band[0]), show(band[1]))
        parts.append(f"{text} tokens/s" if metric == "throughput_tokens_per_s" else text)
    return " · ".join(parts)


@FORM.view
def view(
    gpu: str,
    model: str,
    policy: str,
    rate: int,
    prompt_low: int,
    prompt_high: int,
    output_low: int,
    output_high: int,
    max_batch: int,
    token_budget: int,
) -> dict[str, Any]:
    """The metrics and the timeline of ``REQUESTS`` simulated requests for these inputs.

    The form has checked every input (ranges within bounds, "from" at most "to").
    """
    specs = builtin_specs()
    gpu_spec, model_spec = specs.gpu(gpu), specs.model(model)
    config = ServingConfig(
        policy=policy,
        rate=float(rate),
        requests=REQUESTS,
        prompt=Lengths(prompt_low, prompt_high),
        output=Lengths(output_low, output_high),
        max_batch=max_batch,
        token_budget=token_budget,
        trace_requests=TIMELINE_REQUESTS,
    )
    result = simulate(Hardware(gpu_spec), Workload(model_spec, "bf16"), config)
    calibration = load_calibration()
    fitted = simulate_expected(Hardware(gpu_spec), Workload(model_spec, "bf16"), config, calibration)
    expected = _expected(fitted.to_dict(), calibration.bands(fitted.to_dict()))
    served = result.completed
    little = rate * result.latency_mean_s if result.latency_mean_s is not None else 0.0
    explain = (
        f"{served:,} of {REQUESTS:,} requests served in {result.duration_s:,.1f} s of simulated time,"
        f" {result.iterations:,} iterations."
    )
    if result.rejected:
        explain += f" {result.rejected:,} could never fit in the KV cache and were turned away."
    explain += (
        f" Little's law: {rate:,} requests/s × {fmt.duration(result.latency_mean_s or 0.0)} mean latency"
        f" = {little:,.1f} in flight; the simulator counted {result.mean_in_flight:,.1f}"
        " (a finite run's arrivals stray from the nominal rate; a queue that keeps growing breaks the law)."
    )
    explain += (
        f" At the expected costs the same requests give (throughput · mean TTFT · mean TPOT) {expected};"
        " the figures above are the ceiling's."
        f" {fmt.EXPECTED_MEANS}"
    )
    keeping_up = result.throughput_requests_per_s >= 0.9 * rate
    return {
        "params": dict(
            gpu=gpu,
            model=model,
            policy=policy,
            rate=rate,
            prompt_low=prompt_low,
            prompt_high=prompt_high,
            output_low=output_low,
            output_high=output_high,
            max_batch=max_batch,
            token_budget=token_budget,
        ),
        "fits": keeping_up,
        "verdict": "Keeping up with the traffic" if keeping_up else "Falling behind: the queue grows",
        "summary": f"p99 time to first token {fmt.duration(result.ttft_s[99] or 0.0)},"
        f" p99 time per output token {fmt.duration(result.tpot_s[99] or 0.0)},"
        f" {fmt.rate(result.throughput_tokens_per_s)} tokens/s.",
        "explain": explain,
        "ttft": _three(result.ttft_s),
        "tpot": _three(result.tpot_s),
        "throughput": f"{fmt.rate(result.throughput_tokens_per_s)} tokens/s"
        f" ({result.throughput_requests_per_s:,.1f} requests/s)",
        "expected": expected,
        "goodput": f"{result.goodput_requests_per_s:,.1f} requests/s",
        "in_flight": f"{result.mean_in_flight:,.1f}",
        "busy": f"{result.busy_fraction:.0%}",
        "busy_fraction": result.busy_fraction,
        "timeline": timeline(result),
    }
