"""The calculator "Serve a stream of requests" (``<!-- roofline:calculator serving -->``).

It runs ``roofline.serving.simulate`` on the reader's traffic and scheduler and
shows the metrics the chapter discusses, plus a Gantt-style timeline of the first
requests: when each arrived, waited, had its prompt prefilled and decoded. Like
every calculator, ``view`` runs at build time in CPython (the defaults' answer is
painted into the page) and in the reader's browser in Pyodide on every input;
every number comes from the package.
"""

from __future__ import annotations

from typing import Any

from roofline import Hardware, ServingConfig, SpecError, Workload, builtin_specs, simulate
from roofline import formatting as fmt
from roofline.serving import DEFAULT_TPOT_SLO_S, DEFAULT_TTFT_SLO_S, POLICIES, Lengths

DEFAULTS: dict[str, Any] = {
    "gpu": "h100-sxm",
    "model": "llama-3.1-8b",
    "policy": "continuous",
    "rate": 10,
    "prompt_low": 128,
    "prompt_high": 2048,
    "output_low": 32,
    "output_high": 512,
    "max_batch": 64,
    "token_budget": 512,
}
#: Inclusive bounds of the whole-number inputs; the page enforces the same ones.
LIMITS = {
    "rate": (1, 1000),
    "prompt_low": (1, 32768),
    "prompt_high": (1, 32768),
    "output_low": (1, 8192),
    "output_high": (1, 8192),
    "max_batch": (1, 1024),
    "token_budget": (2, 65536),
}
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


def form() -> dict[str, Any]:
    """The declared form (see ``decode_speed.py`` for what a form holds) with a timeline output."""
    specs = builtin_specs()

    def whole(name: str, label: str) -> dict[str, Any]:
        low, high = LIMITS[name]
        return {"name": name, "label": label, "min": low, "max": high, "default": DEFAULTS[name]}

    gpus = [[gpu.id, f"{gpu.name} ({fmt.gigabytes(gpu.memory_bytes, 0)})"] for gpu in specs.gpus.values()]
    # Models with sliding-window layers are left out: the simulator refuses them (it would
    # overstate their cache), so offering them would only ever show an error.
    models = [[model.id, model.name] for model in specs.models.values() if not model.sliding_window]
    return {
        "title": "Serve a stream of requests",
        "legend": "Traffic and scheduler",
        "fields": [
            {"name": "gpu", "label": "GPU", "choices": gpus, "default": DEFAULTS["gpu"], "wide": True},
            {"name": "model", "label": "Model", "choices": models, "default": DEFAULTS["model"], "wide": True},
            {
                "name": "policy",
                "label": "Scheduler",
                "choices": [[policy, POLICY_NAMES[policy]] for policy in POLICIES],
                "default": DEFAULTS["policy"],
                "wide": True,
            },
            whole("rate", "Requests per second"),
            whole("prompt_low", "Prompt tokens, from"),
            whole("prompt_high", "Prompt tokens, to"),
            whole("output_low", "Output tokens, from"),
            whole("output_high", "Output tokens, to"),
            whole("max_batch", "Max batch"),
            whole("token_budget", "Token budget (chunked)"),
        ],
        "outputs": [
            {"name": "ttft", "label": "Time to first token, p50 · p90 · p99"},
            {"name": "tpot", "label": "Time per output token, p50 · p90 · p99"},
            {"name": "throughput", "label": "Throughput"},
            {
                "name": "goodput",
                "label": f"Goodput (TTFT ≤ {DEFAULT_TTFT_SLO_S:g} s, TPOT ≤ {DEFAULT_TPOT_SLO_S * 1e3:g} ms)",
            },
            {"name": "in_flight", "label": "Mean requests in flight"},
            {"name": "busy", "label": "GPU busy", "bar": "busy_fraction"},
        ],
        "timeline": {
            "caption": f"The first {TIMELINE_REQUESTS} requests, one row each, against time in seconds: waiting"
            " in the queue, prefill iterations, decode iterations. A gap inside a request's decode is a stall."
            " Simulated by the roofline package in your browser."
        },
    }


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

    Raises SpecError for an unknown id, an out-of-range number or lengths with LO > HI.
    """
    numbers = dict(
        rate=rate,
        prompt_low=prompt_low,
        prompt_high=prompt_high,
        output_low=output_low,
        output_high=output_high,
        max_batch=max_batch,
        token_budget=token_budget,
    )
    for name, value in numbers.items():
        low, high = LIMITS[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise SpecError(f"must be a whole number from {low:,} to {high:,}, got {value!r}", field=name)
    for name, low, high in (("prompt", prompt_low, prompt_high), ("output", output_low, output_high)):
        if low > high:
            raise SpecError(f"'from' ({low:,}) must not exceed 'to' ({high:,})", field=f"{name} tokens")
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
    keeping_up = result.throughput_requests_per_s >= 0.9 * rate
    return {
        "params": dict(DEFAULTS, **numbers, gpu=gpu, model=model, policy=policy),
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
        "goodput": f"{result.goodput_requests_per_s:,.1f} requests/s",
        "in_flight": f"{result.mean_in_flight:,.1f}",
        "busy": f"{result.busy_fraction:.0%}",
        "busy_fraction": result.busy_fraction,
        "timeline": timeline(result),
    }
