"""The calculator "Serve a stream of requests" (``<!-- roofline:calculator serving -->``).

It runs ``roofline.serving.simulate`` on the reader's deployment (GPU, GPU count, model,
weight precision), traffic and scheduler, declared with their bounds and rules in
``FORM``, and shows the metrics the chapter discusses, plus a Gantt-style timeline of
the first requests: when each arrived, waited, had its prompt prefilled and decoded.
The form offers only deployments that fit: a rule lists, from the specs, every GPU
count, GPU, model and precision whose weights leave a KV cache that holds at least one
request at the form's longest default lengths. Like every calculator, ``view`` runs at
build time in CPython (the defaults' answer is painted into the page) and in the
reader's browser in Pyodide on every input; every number comes from the package.
"""

from __future__ import annotations

from typing import Any

from roofline import Hardware, ServingConfig, SpecError, Workload, builtin_specs, simulate
from roofline import formatting as fmt
from roofline.calibration import UNFITTED_FLAG, expected_costs, load_calibration
from roofline.forms import Field, Form, Output, Rule
from roofline.load_bounds import best_case_times, with_throughput_bound
from roofline.performance import tensor_parallel_degrees
from roofline.serving import (
    ADMISSIONS,
    BLOCK_TOKENS,
    DEFAULT_TPOT_SLO_S,
    DEFAULT_TTFT_SLO_S,
    POLICIES,
    SPAN_LEGEND,
    Lengths,
    kv_blocks_available,
    simulate_expected,
)

#: Requests per run: enough for a p99 of ten samples, few enough to answer within a keystroke.
REQUESTS = 1000
#: Requests drawn in the timeline (the first ones to arrive).
TIMELINE_REQUESTS = 12
POLICY_NAMES = {
    "static": "Static batches",
    "continuous": "Continuous batching",
    "chunked": "Chunked prefill (token budget)",
}
ADMISSION_NAMES = {
    "paged": "Paged, blocks as tokens are written (vLLM)",
    "reserve": "Reserve prompt + output up front (Orca oracle)",
}
#: Scheduling steps a run may take per request before it is refused as thrashing (the package's
#: default is 12): a run of the varied traffic the benchmark sends takes 1 to 4; 8 keeps the
#: costliest input within the form's limits to about a second in the page (issue 25, H2).
STEPS_PER_REQUEST = 8
#: GPU counts offered: tensor-parallel groups within one 8-GPU server.
GPU_COUNTS = (1, 2, 4, 8)
#: Weight formats offered (the KV cache stays bf16), as chapter 1's table shows them.
PRECISIONS = ("bf16", "fp8", "int4")
#: The timeline's kinds of span, in legend order, as the simulator's trace names them: the same order,
#: and so the same colours, as chapter 3's timeline figure.
SPAN_KINDS = [list(pair) for pair in SPAN_LEGEND]  # the figure's order and colours (roofline.serving)
_SPECS = builtin_specs()
#: The simulator refuses models with sliding-window layers (it would overstate their cache).
_MODELS = [model for model in _SPECS.models.values() if not model.sliding_window]
DEFAULT_PROMPT = (128, 2048)
DEFAULT_OUTPUT = (32, 512)
#: A deployment is offered when its KV cache holds one request at the longest default lengths.
SMALLEST_CACHE_TOKENS = DEFAULT_PROMPT[1] + DEFAULT_OUTPUT[1]


def deployments_that_fit() -> list[tuple[str, str, str, str]]:
    """Every (GPU count, GPU, model, precision) whose count splits the model's heads and whose
    KV cache, beside the weights, holds ``SMALLEST_CACHE_TOKENS`` tokens."""
    found = []
    for model in _MODELS:
        degrees = tensor_parallel_degrees(model)
        for gpu in _SPECS.gpus.values():
            for count in GPU_COUNTS:
                if count not in degrees:
                    continue
                for precision in PRECISIONS:
                    try:
                        blocks = kv_blocks_available(Hardware(gpu, count), Workload(model, precision))
                    except SpecError:  # the weights alone do not fit
                        continue
                    if blocks * BLOCK_TOKENS >= SMALLEST_CACHE_TOKENS:
                        found.append((str(count), gpu.id, model.id, precision))
    return found


FORM = Form(
    title="Serve a stream of requests",
    legend="Deployment, traffic and scheduler",
    fields=[
        Field.gpu("gpu", "GPU", _SPECS, default="h100-sxm"),
        Field.choice("gpus", "GPUs (tensor parallel)", [(str(n), str(n)) for n in GPU_COUNTS], default="1"),
        Field.choice("precision", "Weight precision", [(p, p) for p in PRECISIONS], default="bf16"),
        Field.model("model", "Model", _SPECS, default="llama-3.1-8b", keep=lambda model: model in _MODELS, wide=False),
        Field.choice(
            "policy",
            "Scheduler",
            [(policy, POLICY_NAMES[policy]) for policy in POLICIES],
            default="continuous",
            wide=True,
        ),
        Field.choice(
            "admission",
            "KV-cache admission",
            [(admission, ADMISSION_NAMES[admission]) for admission in ADMISSIONS],
            default="paged",
            wide=True,
        ),
        Field.number("rate", "Requests per second", low=1, high=1000, default=10),
        Field.number("max_batch", "Max batch", low=1, high=1024, default=64),
        Field.number("prompt_low", "Prompt tokens, from", low=1, high=32768, default=DEFAULT_PROMPT[0]),
        Field.number("prompt_high", "Prompt tokens, to", low=1, high=32768, default=DEFAULT_PROMPT[1]),
        Field.number("output_low", "Output tokens, from", low=1, high=8192, default=DEFAULT_OUTPUT[0]),
        Field.number("output_high", "Output tokens, to", low=1, high=8192, default=DEFAULT_OUTPUT[1]),
        Field.number("token_budget", "Token budget (chunked)", low=2, high=65536, default=512),
    ],
    outputs=[
        Output.text("ttft", "Time to first token, p50 · p90 · p99"),
        Output.text("itl", "Inter-token latency (every gap), p50 · p90 · p99"),
        Output.text("tpot", "Time per output token (each request's mean), p50 · p90 · p99"),
        Output.text("throughput", "Throughput"),
        Output.text("goodput", f"Goodput (TTFT ≤ {DEFAULT_TTFT_SLO_S:g} s and TPOT ≤ {DEFAULT_TPOT_SLO_S * 1e3:g} ms)"),
        Output.text("expected", "Expected throughput · mean TTFT · mean TPOT (with band)"),
        Output.text("in_flight", "Requests in flight · in the batch (time-weighted means)"),
        Output.text("memory", "KV cache (bf16)"),
        # What "busy" measures is said beside it, so 100% next to "Keeping up" reads right.
        Output.bar(
            "busy",
            "GPU busy: the share of time spent in iterations, however few requests they hold (not spare capacity)",
            share="busy_fraction",
        ),
        Output.timeline(
            "timeline",
            f"The first {TIMELINE_REQUESTS} requests, one row each, against time in seconds: waiting"
            " in the queue, prefill iterations, decode iterations, and prefill again after a preemption."
            " A gap inside a request's decode is a stall. Simulated by the roofline package in your browser.",
        ),
    ],
    rules=[
        Rule.allowed(
            ("gpus", "gpu", "model", "precision"),
            deployments_that_fit(),
            f"{{model}} with {{precision}} weights does not fit on {{gpus}} × {{gpu}} with room for the KV cache"
            f" of one {SMALLEST_CACHE_TOKENS:,}-token request: choose more GPUs, a smaller precision or a GPU"
            " with more memory.",
        ),
        Rule.at_most(
            "prompt_low", "prompt_high", "The shortest prompt ('from') must not be longer than the longest ('to')."
        ),
        Rule.at_most(
            "output_low", "output_high", "The shortest output ('from') must not be longer than the longest ('to')."
        ),
        # vLLM refuses max_num_batched_tokens below max_num_seqs; the simulator's chunked
        # prefill needs one more, so an iteration of decodes always has room for a chunk. Only
        # chunked prefill has a budget: the other schedulers ignore it, as the command line does.
        Rule.below(
            "max_batch",
            "token_budget",
            "Under chunked prefill the max batch must be below the token budget, so that an iteration"
            " of decodes leaves room for a prompt's chunk.",
            when=("policy", "chunked"),
        ),
    ],
)
#: The inputs' defaults (the form's), for tests and the benchmark.
DEFAULTS: dict[str, Any] = FORM.defaults


def _three(values: dict[int, float | None] | None) -> str:
    """Three percentiles as ``"12.0 ms · 15.1 ms · 20.3 ms"`` (— where there is no sample)."""
    return " · ".join("—" if value is None else fmt.duration(value) for value in (values or {}).values())


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
        title = f"Request {request.id + 1}: {request.prompt:,}-token prompt, {request.output:,} output tokens"
        if request.preemptions:
            title += f", preempted {request.preemptions:,} time{'s' if request.preemptions > 1 else ''}"
        rows.append({"label": f"#{request.id + 1}", "title": title, "spans": spans})
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


def _scheduled(hardware: Hardware, workload: Workload, prompt: int) -> str:
    """Why the times above are not ceilings, and the bounds that are (``load_bounds``): a time under
    load is this scheduler's, which another can beat; no scheduler gives a first token sooner than
    the shortest prompt prefilled alone, or a gap shorter than one decode pass of a batch of one."""
    best = best_case_times(hardware, workload, prompt)
    return (
        "Its times under load depend on the scheduler, so they are not ceilings: no scheduler gets a first"
        f" token sooner than {fmt.duration(best['ttft_mean_s'])} (the {prompt:,}-token prompt prefilled alone)"
        f" or a next one sooner than {fmt.duration(best['itl_mean_s'])} (one decode pass for one user)."
    )


def _arrivals_bound(most: float | None) -> str:
    """The throughput no server could measure on these arrivals (``load_bounds.throughput_bound``),
    as a sentence; nothing where some request was turned away (the bound is then not given)."""
    if most is None:
        return ""
    return (
        f" Nor could any server measure more than {fmt.rate(most)} output tokens/s on these arrivals:"
        " the last request cannot finish before it is sent plus those best times."
    )


@FORM.view
def view(
    gpu: str,
    gpus: str,
    precision: str,
    model: str,
    policy: str,
    admission: str,
    rate: int,
    max_batch: int,
    prompt_low: int,
    prompt_high: int,
    output_low: int,
    output_high: int,
    token_budget: int,
) -> dict[str, Any]:
    """The metrics and the timeline of ``REQUESTS`` simulated requests for these inputs.

    The form has checked every input (ranges within bounds, "from" at most "to", a deployment
    that fits, under chunked prefill a budget above the max batch). The simulator still refuses a cache that thrashes
    past ``STEPS_PER_REQUEST`` scheduling steps a request, in one line, which the page shows
    instead of any result.
    """
    specs = FORM.specs()
    config = ServingConfig(
        policy=policy,
        admission=admission,
        rate=float(rate),
        requests=REQUESTS,
        prompt=Lengths(prompt_low, prompt_high),
        output=Lengths(output_low, output_high),
        max_batch=max_batch,
        token_budget=token_budget,
        trace_requests=TIMELINE_REQUESTS,
        max_steps_per_request=STEPS_PER_REQUEST,
    )
    try:
        hardware, workload = Hardware(specs.gpu(gpu), int(gpus)), Workload(specs.model(model), precision)
        result = simulate(hardware, workload, config)
    except SpecError as error:
        if error.field != "admission":
            raise
        # The simulator's way out names command-line options; say it with this form's fields.
        raise SpecError(
            error.message, field="admission", hint="choose reserve admission, more GPUs or shorter outputs"
        ) from None
    calibration = load_calibration()
    fitted = simulate_expected(hardware, workload, config, calibration)
    # The band from the same grounding that fixed the costs: widened, and flagged, where the fit has no rows.
    ground = expected_costs(hardware, workload, calibration)
    # The times' bands no shorter than any scheduler's best (load_bounds.best_case_times), and the
    # throughput's no higher than these arrivals allow any server (load_bounds.throughput_bound).
    bounds = with_throughput_bound(
        best_case_times(hardware, workload, config.prompt.low), config, runs=(result, fitted)
    )
    expected = _expected(fitted.to_dict(), ground.bands(fitted.to_dict(), bounds))
    if ground.widened:
        expected += f"; {UNFITTED_FLAG}"
    little = rate * result.latency_mean_s if result.latency_mean_s is not None else 0.0
    explain = (
        f"{result.completed:,} of {REQUESTS:,} requests served in {result.duration_s:,.1f} s of simulated time,"
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
        f" the figures above are at the ceiling's costs."
        + (f" Expected band: {ground.flag}." if ground.widened else "")
        + f" {_scheduled(hardware, workload, prompt_low)}"
        + _arrivals_bound(bounds["throughput_tokens_per_s"])
        + f" {fmt.EXPECTED_MEANS}"
    )
    keeping_up = result.throughput_requests_per_s >= 0.9 * rate
    if result.preemptions:
        preempted = (
            f"{result.preemptions:,} preemptions, {fmt.rate(result.recomputed_tokens)} tokens prefilled again"
            if policy != "static"
            else ""
        )
    else:
        preempted = "no preemptions" if policy != "static" and admission == "paged" else ""
    memory = f"{fmt.rate(result.kv_blocks)} blocks of {BLOCK_TOKENS} tokens"
    if preempted:
        memory += f"; {preempted}"
    return {
        "fits": keeping_up,
        "verdict": "Keeping up with the traffic" if keeping_up else "Falling behind: the queue grows",
        "summary": f"p99 time to first token {fmt.duration(result.ttft_s[99] or 0.0)},"
        f" p99 inter-token latency {fmt.duration((result.itl_s or {}).get(99) or 0.0)},"
        f" {fmt.rate(result.throughput_tokens_per_s)} tokens/s.",
        "explain": explain,
        "ttft": _three(result.ttft_s),
        "itl": _three(result.itl_s),
        "tpot": _three(result.tpot_s),
        "throughput": f"{fmt.rate(result.throughput_tokens_per_s)} output tokens/s"
        f" ({result.throughput_requests_per_s:,.1f} requests/s)",
        "goodput": f"{result.goodput_requests_per_s:,.1f} requests/s"
        f" ({(result.slo_attainment or 0.0):.0%} of those served met both)",
        "in_flight": f"{result.mean_in_flight:,.1f} · {result.mean_batch:,.1f} (max batch {max_batch:,})",
        "memory": memory,
        "expected": expected,
        "busy": f"{result.busy_fraction:.0%}",
        "busy_fraction": result.busy_fraction,
        "timeline": timeline(result),
    }
