"""Chapter 1's chart builders, returned as Vega-Lite dicts framed by ``sitegen.figures.figure_spec``.

- decode tokens/s per weight precision, models × precisions;
- prefill time against prompt length;
- the batching crossover, and how a KV cache moves or removes it;
- a classic roofline with decode and prefill placed on it.
(Their letters on a page follow the order the page shows them in.)

Every value is computed by the package; the page module (``page.py``) chooses the GPU,
models, precisions and prompt (``Focus``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import altair as alt

from roofline import (
    GpuSpec,
    Hardware,
    ModelSpec,
    SpecSet,
    Workload,
    active_parameters,
    crossover_batch,
    decode_step,
    evaluate,
    memory_use,
    prefill_pass,
)
from roofline import formatting as fmt
from roofline.sweep import decode_prefill_rows, gpus_to_fit
from sitegen.figures import HEIGHT, figure_spec, geometric, sig

#: Contexts (tokens cached per user) drawn in the batching-crossover figure.
CROSSOVER_CONTEXTS = (0, 128, 256, 1024)
BATCHED_DECODE = (32, 128)


@dataclass(frozen=True)
class Focus:
    """What the chapter's worked examples and charts are drawn for: a GPU, two models, precisions and a prompt."""

    specs: SpecSet
    gpu: GpuSpec
    small: ModelSpec
    large: ModelSpec
    precisions: tuple[str, ...]
    prompt: int


def decode_by_precision(ctx: Focus) -> dict[str, Any]:
    """Decode tokens/s for one user, per model and weight precision, on the fewest GPUs that hold it."""
    rows = []
    for row in decode_prefill_rows(ctx.specs, ctx.gpu.id, precisions=ctx.precisions, prompt=ctx.prompt):
        est = row.estimate
        rows.append(
            {
                "model": est.workload.model.name,
                "precision": est.workload.weight_precision,
                "gpus": row.gpus,
                "weights_gb": sig(est.memory.weights_bytes / 1e9),
                "tokens_per_s": sig(est.decode_tokens_per_s_per_user),
                # The label and tooltip print the same string the tables print, so a bar
                # never reads 847 where the table says 848.
                "label": fmt.rate(est.decode_tokens_per_s_per_user),
            }
        )
    order = list(dict.fromkeys(r["model"] for r in rows))
    precisions = list(dict.fromkeys(r["precision"] for r in rows))
    bars = (
        alt.Chart(alt.Data(values=rows))
        .mark_bar()
        .encode(
            y=alt.Y("model:N", sort=order, title=None),
            yOffset=alt.YOffset("precision:N", sort=precisions),
            x=alt.X("tokens_per_s:Q", title="decode tokens/s, one user"),
            color=alt.Color("precision:N", sort=precisions, title="weights"),
            tooltip=[
                alt.Tooltip("model:N", title="model"),
                alt.Tooltip("precision:N", title="weights"),
                alt.Tooltip("weights_gb:Q", title="weights, GB", format=",.1f"),
                alt.Tooltip("gpus:Q", title="GPUs"),
                alt.Tooltip("label:N", title="tokens/s"),
            ],
        )
    )
    labels = bars.mark_text(align="left", dx=3, fontSize=10).encode(text="label:N", color=alt.value("#888888"))
    return figure_spec(
        bars + labels,
        f"Decode ceiling per weight precision, {ctx.gpu.name}",
        [
            "One user, on the fewest GPUs that hold the weights, all-reduces between them counted.",
            "Fewer bytes per weight, more tokens per second, unless they also mean fewer GPUs.",
        ],
    )


def prefill_vs_prompt(ctx: Focus) -> dict[str, Any]:
    """Prefill time against prompt length, 16-bit weights, with the 2·N·P/peak rule for the small model."""
    gpu = ctx.gpu
    rows = []
    prompts = [round(p) for p in geometric(128, 32768, per_doubling=2)]
    for model in ctx.specs.models.values():
        count = gpus_to_fit(Hardware(gpu), Workload(model))
        hardware = Hardware(gpu, count)
        label = f"{model.name} ({count} GPU{'s' if count > 1 else ''})"
        for prompt in prompts:
            step = prefill_pass(hardware, Workload(model, prompt=prompt))
            rows.append({"series": label, "kind": "estimate", "prompt": prompt, "ms": sig(step.seconds * 1e3)})
    small = ctx.small
    for prompt in prompts:
        rule = 2.0 * active_parameters(small) * prompt / Hardware(gpu).peak_flops_per_s
        rows.append({"series": f"{small.name}: 2·N·P / peak", "kind": "rule", "prompt": prompt, "ms": sig(rule * 1e3)})
    series = list(dict.fromkeys(r["series"] for r in rows))
    chart = (
        alt.Chart(alt.Data(values=rows))
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "prompt:Q", scale=alt.Scale(type="log", base=2), title="prompt tokens", axis=alt.Axis(format=",.0f")
            ),
            y=alt.Y("ms:Q", scale=alt.Scale(type="log"), title="prefill time, ms", axis=alt.Axis(format=",.0f")),
            color=alt.Color("series:N", sort=series, title=None),
            strokeDash=alt.StrokeDash("kind:N", sort=["estimate", "rule"], legend=None),
            tooltip=[
                alt.Tooltip("series:N", title="model"),
                alt.Tooltip("prompt:Q", title="prompt tokens", format=","),
                alt.Tooltip("ms:Q", title="prefill, ms", format=",.1f"),
            ],
        )
    )
    return figure_spec(
        chart,
        f"Prefill time vs prompt length, 16-bit weights, {gpu.name}",
        [
            "Compute-bound: time grows with tokens; attention's P² term bends long prompts up.",
            "Flat at the left: never faster than one read of the weights.",
        ],
    )


def batching_crossover(ctx: Focus) -> dict[str, Any]:
    """Per-user and total decode tokens/s against batch, at several contexts, with each crossover marked.

    Lines stop where the KV cache no longer fits beside the weights.
    """
    hardware = Hardware(ctx.gpu)
    model = ctx.small
    lines, marks = [], []
    for context in CROSSOVER_CONTEXTS:
        label = f"{context:,} tokens cached"
        limit = memory_use(hardware, Workload(model, context=context)).max_batch
        top = 4096 if limit is None else min(4096, limit)
        batches = sorted({round(b) for b in geometric(1, top, per_doubling=4)})
        for batch in batches:
            step = decode_step(hardware, Workload(model, batch=batch, context=context))
            for measure, value in (("per user", 1 / step.seconds), ("all users", batch / step.seconds)):
                lines.append(
                    {
                        "context": label,
                        "measure": measure,
                        "batch": batch,
                        "tokens_per_s": sig(value),
                        "bound": step.bound,
                    }
                )
        crossover = crossover_batch(hardware, Workload(model, context=context))
        if crossover is not None and crossover <= top:
            step = decode_step(hardware, Workload(model, batch=max(1, round(crossover)), context=context))
            marks.append(
                {
                    "context": label,
                    "batch": sig(crossover),
                    "tokens_per_s": sig(crossover / step.seconds),
                    "label": f"{crossover:,.0f}",
                    "note": f"compute-bound from {crossover:,.0f} users",
                }
            )
    contexts = [f"{c:,} tokens cached" for c in CROSSOVER_CONTEXTS]
    x = alt.X("batch:Q", scale=alt.Scale(type="log", base=2), title="users in the batch", axis=alt.Axis(format=",.0f"))
    y = alt.Y("tokens_per_s:Q", scale=alt.Scale(type="log"), title="decode tokens/s", axis=alt.Axis(format=",.0f"))
    color = alt.Color("context:N", sort=contexts, title=None)
    curves = (
        alt.Chart(alt.Data(values=lines))
        .mark_line()
        .encode(
            x=x,
            y=y,
            color=color,
            strokeDash=alt.StrokeDash("measure:N", sort=["all users", "per user"], title=None),
            detail="measure:N",
            tooltip=[
                alt.Tooltip("context:N", title="context"),
                alt.Tooltip("measure:N", title="tokens/s"),
                alt.Tooltip("batch:Q", title="users", format=","),
                alt.Tooltip("tokens_per_s:Q", title="tokens/s", format=",.0f"),
                alt.Tooltip("bound:N", title="bound"),
            ],
        )
    )
    points = (
        alt.Chart(alt.Data(values=marks))
        .mark_point(filled=True, size=70, shape="diamond")
        .encode(x=x, y=y, color=color, tooltip=[alt.Tooltip("context:N"), alt.Tooltip("note:N", title="crossover")])
    )
    # The crossovers sit close together on a narrow chart: stack their labels one above another.
    texts = [
        points.transform_filter(alt.datum.label == mark["label"])
        .mark_text(align="center", dy=-12 - 14 * index, fontSize=11, fontWeight="bold")
        .encode(text="label:N")
        for index, mark in enumerate(marks)
    ]
    return figure_spec(
        alt.layer(curves, points, *texts),
        f"Batching: {model.name}, 16-bit, one {ctx.gpu.name}",
        [
            "Solid: all users together; dashed: each user.",
            "Diamonds: where decode turns compute-bound. Lines end where the KV cache fills memory.",
        ],
    )


def roofline_chart(ctx: Focus) -> dict[str, Any]:
    """Attainable FLOP/s against arithmetic intensity, with decode and prefill placed on the roof."""
    hardware = Hardware(ctx.gpu)
    model = ctx.small
    peak, bandwidth = hardware.peak_flops_per_s, hardware.bandwidth_bytes_per_s
    ridge = peak / bandwidth
    roof = [
        {"intensity": sig(i), "tflops": sig(min(peak, i * bandwidth) / 1e12)}
        for i in sorted({*geometric(0.5, 32768, per_doubling=1), ridge})
    ]
    points = []

    def place(label: str, workload: Workload, prefill: bool = False) -> None:
        step = evaluate(hardware, workload)
        passed = step.prefill if prefill else step.decode
        points.append(
            {
                "label": label,
                "intensity": sig(passed.flops / passed.bytes_moved),
                "tflops": sig(passed.flops / passed.seconds / 1e12),
                "bound": passed.bound,
            }
        )

    place("decode, 1 user", Workload(model, batch=1))
    for batch in BATCHED_DECODE:
        place(f"decode, {batch} users", Workload(model, batch=batch))
    place(f"prefill, {ctx.prompt:,} tokens", Workload(model, prompt=ctx.prompt), prefill=True)
    x = alt.X(
        "intensity:Q",
        scale=alt.Scale(type="log", base=2),
        title="arithmetic intensity, FLOPs per byte moved",
        axis=alt.Axis(format=",~g"),
    )
    y = alt.Y(
        "tflops:Q",
        scale=alt.Scale(type="log", domain=[1, 2000]),
        title="attainable TFLOP/s",
        axis=alt.Axis(format=",~g"),
    )
    line = alt.Chart(alt.Data(values=roof)).mark_line(color="#888888").encode(x=x, y=y)
    ridge_rule = alt.Chart(alt.Data(values=[{"intensity": sig(ridge), "label": f"ridge: {ridge:,.0f} FLOPs/byte"}]))
    rule = ridge_rule.mark_rule(strokeDash=[4, 4], color="#888888").encode(x="intensity:Q")
    rule_text = ridge_rule.mark_text(align="left", dx=4, y=HEIGHT - 10, color="#888888").encode(
        x="intensity:Q", text="label:N"
    )
    dots = (
        alt.Chart(alt.Data(values=points))
        .mark_point(filled=True, size=90)
        .encode(
            x=x,
            y=y,
            color=alt.Color("label:N", sort=[p["label"] for p in points], title=None),
            tooltip=[
                alt.Tooltip("label:N", title="pass"),
                alt.Tooltip("intensity:Q", title="FLOPs/byte", format=",.1f"),
                alt.Tooltip("tflops:Q", title="TFLOP/s", format=",.1f"),
                alt.Tooltip("bound:N", title="bound"),
            ],
        )
    )
    # Names left of the ridge go right of their dot; those right of it go left, inside the plot.
    left_of_ridge = alt.datum.intensity < sig(ridge)
    names_right = dots.transform_filter(left_of_ridge).mark_text(align="left", dx=8, dy=12, fontSize=11)
    names_left = dots.transform_filter(~left_of_ridge).mark_text(align="right", dx=-8, dy=12, fontSize=11)
    return figure_spec(
        alt.layer(line, rule, rule_text, dots, names_right.encode(text="label:N"), names_left.encode(text="label:N")),
        f"The roofline of an {ctx.gpu.name}, 16-bit math, {model.name}",
        ["Left of the ridge a pass waits on memory; right of it, on math."],
    )
