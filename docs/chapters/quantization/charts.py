"""Chart and table builders for the quantization chapter, returned as Vega-Lite dicts or Markdown.

- the format × GPU matrix: where each (weights, KV cache) pair stops helping, and which math it runs;
- decode speedup over bf16 against the batch;
- prefill time relative to bf16 against the prompt: the ceilings, and int4 at the expected costs
  (the fitted dequantization overhead and the switch to widening) with its band;
- one user's inter-token latency against context: the ceiling's lines and vLLM's fits;
- every published speedup beside its ceiling.

Each computes its points with ``roofline.quantization`` (or takes rows the page module computed);
each is one view, since the page stretches a view to its column.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

import altair as alt

from roofline import Hardware, Workload
from roofline import formatting as fmt
from roofline import quantization as q
from roofline.calibration import Calibration, expected_costs
from roofline.measured import Comparison
from roofline.performance import decode_pass, memory_use, prefill_pass
from roofline.sweep import Table
from sitegen import escape
from sitegen.figures import figure_spec, sig

#: Batches of the speedup-by-batch figure: 1, 2, 4 … 4,096.
BATCHES = tuple(2**power for power in range(13))
#: Colours of a matrix cell: the format's own math, or weight-only at 16 bits.
MATH_COLOURS = {"own math": "#4e79a7", "weight-only": "#f28e2b"}
#: Line charts' legends: one entry a line, so a phone shows each label whole.
LEGEND = alt.Legend(columns=1, labelLimit=320)


def short_gpu_name(name: str) -> str:
    """A GPU's name without vendor, brand, memory size or form factor, for a narrow axis:
    "NVIDIA A100 80GB SXM" -> "A100", "NVIDIA GeForce RTX 4090" -> "RTX 4090"."""
    words = name.removeprefix("NVIDIA ").removeprefix("GeForce ").split()
    return " ".join(w for w in words if not (w.endswith("GB") or w.startswith("(") or w in {"SXM", "PCIe"}))


def faster_is_higher(base: Comparison, run: Comparison) -> float:
    """How many times faster ``run`` is than ``base`` (same metric): a rate's ratio, or a time's inverse."""
    if base.measurement.metric != run.measurement.metric:
        raise ValueError(f"{base.measurement.id} and {run.measurement.id} measure different things")
    if base.measurement.metric == "decode_tokens_per_s_per_user":
        return run.measurement.value / base.measurement.value
    return base.measurement.value / run.measurement.value


def capacity_table(hardware: Hardware, workload: Workload, precisions: Iterable[str]) -> str:
    """Weights, the KV pool they leave and the users that fit, one row per weight format."""
    rows = []
    for precision in precisions:
        trial = replace(workload, weight_precision=precision)
        memory = memory_use(q.quantized_hardware(hardware, precision), trial)
        users = memory.max_batch or 0
        rows.append(
            (
                precision,
                fmt.gigabytes(memory.weights_bytes),
                fmt.gigabytes(memory.pool_bytes) if memory.pool_bytes > 0 else "none",
                f"{users:,}",
            )
        )
    return Table(("weights", "weight bytes", "KV pool left", "users that fit"), tuple(rows)).markdown()


#: ``page.prefill_rule``'s expected column where δ was never measured (every GPU but the A100).
NOT_MEASURED = -1


def prefill_rule_table(specs: Any, rule: dict[str, tuple[float, int | None, int | None]]) -> str:
    """Per GPU: the bf16 critical batch and the prompt from which W4A16 prefill is no faster than
    bf16, on the ceiling and at the expected costs (``page.prefill_rule``)."""
    rows = []
    for gpu_id, (critical, ceiling, expected) in rule.items():
        rows.append(
            (
                escape.text(short_gpu_name(specs.gpu(gpu_id).name)),
                f"{critical:,.0f}",
                "never" if ceiling is None else f"{ceiling:,}",
                "not measured" if expected == NOT_MEASURED else "never" if expected is None else f"{expected:,}",
            )
        )
    header = ("GPU", "bf16 critical batch", "no faster from, ceiling", "no faster from, expected (awq_gemm)")
    return Table(header, tuple(rows)).markdown()


def kernel_table(paths: Sequence[Any]) -> str:
    """The kernel vLLM selects per format and GPU (``kernels.load_paths``): format, the GPUs,
    the kernel, the math it runs and the source file at its commit, as a link."""
    rows = []
    for path in paths:
        url = path.source.partition(" ")[0]
        file = url.rstrip("/").rsplit("/", 1)[-1]
        commit = next((part[:7] for part in url.split("/") if len(part) == 40), "docs")
        rows.append(
            (
                path.format,
                escape.text(path.gpus),
                escape.text(path.kernel),
                path.math,
                f"[{escape.text(file)} @ {commit}]({url})",
            )
        )
    header = ("format", "GPUs", "kernel vLLM selects", "math", "where vLLM decides")
    return Table(header, tuple(rows)).markdown()


def published_table(specs: Any, comparisons: Sequence[Comparison]) -> str:
    """The chapter's published runs: what was measured, the ceiling, and the share reached."""
    rows = []
    for c in comparisons:
        m = c.measurement
        if m.metric == "inter_token_latency_s":
            measured, ceiling = fmt.milliseconds(m.value), fmt.milliseconds(c.ceiling)
        else:
            measured, ceiling = f"{m.value:,.1f} tok/s", f"{c.ceiling:,.0f} tok/s"
        engine = "TinyChat" if "TinyChat" in m.software else m.software.split(" (")[0]
        # Spec names are text, never markup: escaped as every page's tables escape them.
        model, gpu = escape.text(specs.model(m.model).name), escape.text(short_gpu_name(specs.gpu(m.gpu).name))
        rows.append((engine, model, m.weight_precision, gpu, measured, ceiling, f"{c.ratio:.0%}"))
    header = ("engine", "model", "weights", "GPU", "measured", "ceiling", "share of ceiling")
    return Table(header, tuple(rows)).markdown()


def format_matrix(
    specs: Any,
    model: Any,
    gpus: Sequence[str],
    formats: Sequence[tuple[str, str]],
    context: int,
    limit: int,
) -> dict[str, Any]:
    """One cell per GPU and (weights, KV) pair: the batch from which it decodes no faster than bf16
    weights with a bf16 cache (``stops_helping_batch``), coloured by the math it runs there."""
    rows = []
    for gpu_id in gpus:
        hardware = Hardware(specs.gpu(gpu_id))
        for weights, kv in formats:
            workload = Workload(model, weights, kv, context=context)
            stop = q.stops_helping_batch(hardware, workload, limit=limit)
            math = q.math_for(hardware.gpu, weights)
            rows.append(
                {
                    "gpu": short_gpu_name(hardware.gpu.name),
                    "format": f"{weights} / {kv} KV",
                    "math": "own math" if math.native else "weight-only",
                    "multiplies in": math.precision,
                    "stops": f"{stop:,}" if stop else "never",
                }
            )
    gpu_names = [short_gpu_name(specs.gpu(gpu_id).name) for gpu_id in gpus]
    formats_order = [f"{weights} / {kv} KV" for weights, kv in formats]
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X(
            "gpu:N",
            title=None,
            sort=gpu_names,
            axis=alt.Axis(orient="top", labelAngle=0, labelLimit=80, labelFontSize=11),
        ),
        y=alt.Y("format:N", title=None, sort=formats_order),
    )
    cells = base.mark_rect(stroke="#ffffff", strokeWidth=2).encode(
        color=alt.Color(
            "math:N",
            title="math",
            scale=alt.Scale(domain=list(MATH_COLOURS), range=list(MATH_COLOURS.values())),
        ),
        tooltip=[
            "gpu:N",
            "format:N",
            "math:N",
            "multiplies in:N",
            alt.Tooltip("stops:N", title="stops helping at batch"),
        ],
    )
    labels = base.mark_text(fontSize=12, color="#ffffff", fontWeight="bold").encode(text="stops:N")
    return figure_spec(
        alt.layer(cells, labels),
        "Where each format stops helping, by GPU",
        [
            f"Batch from which decode is no faster than with bf16 weights and cache ({context} tokens",
            f"of context, ceilings); never: still faster at {limit:,} users. Rows: weights / KV cache.",
        ],
    )


def speedup_by_batch(specs: Any, model: Any, lines: Sequence[tuple[str, str]], context: int) -> dict[str, Any]:
    """Decode-step ceiling at bf16 over the ceiling at each format, at 1 … 4,096 users."""
    rows = []
    for gpu_id, precision in lines:
        hardware = Hardware(specs.gpu(gpu_id))
        math = q.math_for(hardware.gpu, precision)
        label = f"{precision} on {short_gpu_name(hardware.gpu.name)} ({math.precision} math)"
        for batch in BATCHES:
            workload = Workload(model, precision, batch=batch, context=context)
            rows.append({"line": label, "batch": batch, "speedup": sig(q.decode_speedup_ceiling(hardware, workload))})
    chart = (
        alt.Chart(alt.Data(values=rows))
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "batch:Q",
                title="users decoding together",
                scale=alt.Scale(type="log", base=2),
                axis=alt.Axis(values=[4**power for power in range(7)], format=",d"),
            ),
            y=alt.Y("speedup:Q", title="decode speedup over bf16 (ceiling)"),
            color=alt.Color("line:N", title=None, legend=LEGEND),
            strokeDash=alt.StrokeDash("line:N", title=None),
            tooltip=["line:N", "batch:Q", alt.Tooltip("speedup:Q", format=".2f")],
        )
    )
    return figure_spec(
        chart,
        f"Decode speedup over bf16 by batch, {model.name}",
        [f"{context} tokens of context per user. Ceilings: each step is max(bytes / bandwidth, FLOPs / peak)."],
    )


def prefill_ratio(hardware: Hardware, model: Any, prompts: Sequence[int], calibration: Calibration) -> dict[str, Any]:
    """Prefill time at each format over bf16's, by prompt length: int4 fused and fp8 W8A8 on the
    ceilings (no dequantization), and int4 at the expected costs (δ fitted, the engine's switch
    to widening) over bf16 at the same costs, with the band of its expected time as an area."""
    # Costs and band from one grounding (calibration.expected_costs): the wider band on an unfitted GPU.
    ground = expected_costs(hardware, Workload(model, "int4-awq"), calibration)
    expected = replace(hardware, costs=ground.costs)
    low, high = ground.calibration.band["ttft_mean_s"]
    switch = calibration.dequant_switch_tokens
    expected_line = f"int4-awq, expected (δ = {calibration.dequant_overhead:.2f}, widened from {switch} tokens)"
    rows, band = [], []
    for prompt in prompts:
        base = prefill_pass(hardware, Workload(model, "bf16", prompt=prompt)).seconds
        int4 = Workload(model, "int4-awq", prompt=prompt)
        fp8 = Workload(model, "fp8", prompt=prompt)
        base_expected = prefill_pass(expected, Workload(model, "bf16", prompt=prompt)).seconds
        int4_expected = prefill_pass(expected, int4).seconds / base_expected
        lines = {
            "int4-awq, fused kernel (ceiling)": prefill_pass(q.quantized_hardware(hardware, "int4-awq"), int4).seconds
            / base,
            expected_line: int4_expected,
            "fp8 W8A8 (ceiling)": prefill_pass(q.quantized_hardware(hardware, "fp8"), fp8).seconds / base,
        }
        for line, ratio in lines.items():
            rows.append({"line": line, "prompt": prompt, "ratio": sig(ratio)})
        band.append({"prompt": prompt, "low": sig(int4_expected * low), "high": sig(int4_expected * high)})
    x = alt.X("prompt:Q", title="prompt tokens", scale=alt.Scale(type="log", base=2), axis=alt.Axis(format=",d"))
    area = (
        alt.Chart(alt.Data(values=band))
        .mark_area(opacity=0.2, color="#e15759")
        .encode(
            x=x,
            y=alt.Y("low:Q", title="prefill time ÷ bf16 prefill time"),
            y2="high:Q",
            tooltip=[
                alt.Tooltip("prompt:Q", format=",d"),
                alt.Tooltip("low:Q", title="band, low", format=".2f"),
                alt.Tooltip("high:Q", title="band, high", format=".2f"),
            ],
        )
    )
    lines_chart = (
        alt.Chart(alt.Data(values=rows))
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y("ratio:Q", title="prefill time ÷ bf16 prefill time"),
            color=alt.Color("line:N", title=None, legend=LEGEND),
            strokeDash=alt.StrokeDash("line:N", title=None),
            tooltip=["line:N", "prompt:Q", alt.Tooltip("ratio:Q", format=".2f")],
        )
    )
    return figure_spec(
        area + lines_chart,
        "Weight-only int4 helps only short prompts",
        [
            "Below 1: faster than bf16. Shaded: the band of the expected int4 time (the fit's 80% band).",
            "Ceilings have no dequantization cost; the expected line adds the fitted one.",
        ],
    )


def kv_slope(hardware: Hardware, model: Any, slope16: float, slope8: float, fits: Sequence[Any]) -> dict[str, Any]:
    """ITL against context: ``a + s c`` for the ceiling (a = the batch-1 weight read) at a bf16 and
    an fp8 cache, and the engine's fitted lines."""
    contexts = (0, 16384, 32768, 65536, 98304, 131072)
    base = decode_pass(hardware, Workload(model), 1).seconds
    rows = []
    for context in contexts:
        rows += [
            {"line": "ceiling, bf16 KV", "context": context, "ms": sig((base + slope16 * context) * 1e3)},
            {"line": "ceiling, fp8 KV", "context": context, "ms": sig((base + slope8 * context) * 1e3)},
        ]
        rows += [
            {
                "line": f"vLLM's fit, {fit.kv_precision} KV",
                "context": context,
                "ms": sig((fit.intercept_s + fit.slope_s_per_token * context) * 1e3),
            }
            for fit in fits
        ]
    chart = (
        alt.Chart(alt.Data(values=rows))
        .mark_line()
        .encode(
            x=alt.X("context:Q", title="tokens of context", axis=alt.Axis(format="~s")),
            y=alt.Y("ms:Q", title="inter-token latency (ms)"),
            color=alt.Color("line:N", title=None, legend=LEGEND),
            strokeDash=alt.StrokeDash("line:N", title=None),
            tooltip=["line:N", "context:Q", alt.Tooltip("ms:Q", format=".2f")],
        )
    )
    return figure_spec(
        chart,
        "The KV cache sets the slope, not the intercept",
        ["ITL = a + s · c, with s = KV bytes per token ÷ bandwidth on the ceiling."],
    )


def speedup_vs_ceiling(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A bar per published speedup and a tick at its ceiling's speedup, one row per run."""
    data = [{"run": row["run"], "measured": sig(row["measured"], 3), "ceiling": sig(row["ceiling"], 3)} for row in rows]
    order = [row["run"] for row in data]
    base = alt.Chart(alt.Data(values=data)).encode(
        y=alt.Y("run:N", title=None, sort=order, axis=alt.Axis(labelLimit=230)),
        tooltip=["run:N", alt.Tooltip("measured:Q", format=".2f"), alt.Tooltip("ceiling:Q", format=".2f")],
    )
    bars = base.mark_bar(color="#4e79a7", height=14).encode(x=alt.X("measured:Q", title="speedup over 16-bit"))
    ticks = base.mark_tick(color="#e15759", thickness=3, size=22).encode(x="ceiling:Q")
    return figure_spec(
        alt.layer(bars, ticks).properties(height=34 * len(data)),
        "Published speedups beside their ceilings",
        ["Bars: measured. Red ticks: the speedup if both runs reached their ceilings."],
        size=None,
    )
