"""Chart builders for the KV-cache chapter, returned as Vega-Lite dicts.

- KV bytes per token for every model, by attention type, beside full multi-head attention;
- users that fit against context (log axis) for 16-bit, 8-bit and 4-bit caches;
- the decode step's reads, weights against cache, across contexts;
- paging: the share of reserved cache that holds tokens, contiguous against paged blocks.

Every value is computed by the ``roofline`` package; the page module
(``page.py``) chooses the models, GPUs and contexts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from roofline import Hardware, SpecSet, Workload, attention_cache, paging_use, step_split
from roofline.kvcache import PublishedMeasurement
from roofline.kvformats import kv_format
from roofline.performance import memory_use
from sitegen.figures import figure_spec, sig

#: Where the per-token bars start on their log axis (a log scale has no zero), in kB.
LOG_BASE_KB = 10
#: Attention types in the order the chapter explains them.
KINDS = ["MHA", "GQA", "MQA", "MLA"]


def kv_per_token(specs: SpecSet) -> dict[str, Any]:
    """Every model's 16-bit KV bytes per token, coloured by attention type, with full MHA's as a tick."""
    rows = []
    for model in specs.models.values():
        cache = attention_cache(model, "bf16")
        rows.append(
            {
                "model": model.name,
                "kind": cache.kind,
                "kb": sig(cache.bytes_per_token / 1e3),
                "mha_kb": sig(cache.full_mha_bytes_per_token / 1e3),
                "shrink": sig(cache.shrink_factor, 3),
                "base": LOG_BASE_KB,
            }
        )
    order = [row["model"] for row in sorted(rows, key=lambda row: row["kb"])]
    y = alt.Y("model:N", sort=order, title=None)
    tooltip = [
        alt.Tooltip("model:N", title="model"),
        alt.Tooltip("kind:N", title="attention"),
        alt.Tooltip("kb:Q", title="kB per token", format=",.1f"),
        alt.Tooltip("mha_kb:Q", title="full MHA would be, kB", format=",.1f"),
        alt.Tooltip("shrink:Q", title="times smaller", format=",.2f"),
    ]
    data = alt.Data(values=rows)
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=y,
            x=alt.X("kb:Q", scale=alt.Scale(type="log"), title="KV cache per token, kB (log scale)"),
            x2="base:Q",
            color=alt.Color("kind:N", sort=KINDS, title="attention"),
            tooltip=tooltip,
        )
    )
    ticks = (
        alt.Chart(data)
        .mark_tick(color="#888888", thickness=2, size=18)
        .encode(y=y, x=alt.X("mha_kb:Q"), tooltip=tooltip)
    )
    # Built on its own, not from the bars: a text mark has no x2, and Vega warns when it is dropped.
    labels = (
        alt.Chart(data)
        .mark_text(align="left", dx=3, fontSize=10)
        .encode(
            y=y,
            x=alt.X("kb:Q", scale=alt.Scale(type="log")),
            text=alt.Text("kb:Q", format=",.0f"),
            color=alt.value("#888888"),
            tooltip=tooltip,
        )
    )
    return figure_spec(
        bars + ticks + labels,
        "KV cache per token, 16-bit, by attention type",
        ["Bars: what each model caches. Grey ticks: what full multi-head attention would cache."],
    )


def users_vs_context(
    specs: SpecSet, deployments: Sequence[tuple[str, str, int]], kv_precisions: Sequence[str], contexts: Sequence[int]
) -> dict[str, Any]:
    """Users that fit, ``floor((usable - weights) / (c * KV per token))``, against context.

    One line per deployment (model id, GPU id, GPU count) and KV precision;
    a line stops where not one user fits.
    """
    rows, gpu_names = [], []
    for model_id, gpu_id, count in deployments:
        model, gpu = specs.model(model_id), specs.gpu(gpu_id)
        gpu_names.append(gpu.name)
        label = f"{model.name}, {count} GPU{'s' if count > 1 else ''}"
        for precision in kv_precisions:
            for context in contexts:
                users = memory_use(Hardware(gpu, count), Workload(model, kv_precision=precision, context=context))
                if not users.max_batch:
                    break
                rows.append({"deployment": label, "kv": precision, "context": context, "users": users.max_batch})
    deployments_order = list(dict.fromkeys(row["deployment"] for row in rows))
    chart = (
        alt.Chart(alt.Data(values=rows))
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "context:Q",
                scale=alt.Scale(type="log", base=2),
                title="context per user, tokens",
                axis=alt.Axis(format=",.0f"),
            ),
            y=alt.Y("users:Q", scale=alt.Scale(type="log"), title="users that fit", axis=alt.Axis(format=",.0f")),
            color=alt.Color("kv:N", sort=list(kv_precisions), title="KV cache"),
            strokeDash=alt.StrokeDash("deployment:N", sort=deployments_order, title=None),
            tooltip=[
                alt.Tooltip("deployment:N", title="deployment"),
                alt.Tooltip("kv:N", title="KV cache"),
                alt.Tooltip("context:Q", title="context", format=","),
                alt.Tooltip("users:Q", title="users that fit", format=","),
            ],
        )
    )
    names = ", ".join(kv_format(p).name for p in kv_precisions)
    return figure_spec(
        chart,
        f"Users that fit against context, 16-bit weights, {' / '.join(dict.fromkeys(gpu_names))}",
        [f"KV cache in {names}. Double the context, half the users.", "A line ends where not one user fits."],
    )


def step_split_chart(specs: SpecSet, model_id: str, gpu_id: str, users: int, contexts: Sequence[int]) -> dict[str, Any]:
    """One memory-bound decode step's time, weights read against cache read, at each context."""
    model, gpu = specs.model(model_id), specs.gpu(gpu_id)
    hardware = Hardware(gpu)
    rows = []
    for context in contexts:
        split = step_split(hardware, Workload(model, batch=users, context=context))
        label = f"{context:,}"
        share = f"{split.kv_share:.0%} cache"
        rows.append({"context": label, "part": "weights", "ms": sig(split.weights_s * 1e3), "share": share})
        rows.append({"context": label, "part": "KV cache", "ms": sig(split.kv_s * 1e3), "share": share})
    chart = (
        alt.Chart(alt.Data(values=rows))
        .mark_bar()
        .encode(
            x=alt.X("context:N", sort=None, title="context per user, tokens", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("ms:Q", stack="zero", title="time to read, ms per step"),
            color=alt.Color("part:N", sort=["weights", "KV cache"], title=None),
            order=alt.Order("part:N", sort="descending"),
            tooltip=[
                alt.Tooltip("context:N", title="context"),
                alt.Tooltip("part:N", title="read"),
                alt.Tooltip("ms:Q", title="ms", format=",.2f"),
                alt.Tooltip("share:N", title="share of the step"),
            ],
        )
    )
    return figure_spec(
        chart,
        f"What a decode step reads: {model.name}, {users} users, one {gpu.name}",
        ["The weights cost the same at every context; the cache grows with it."],
    )


def paging_chart(
    lengths: Sequence[int], max_context: int, block_sizes: Sequence[int], measured: PublishedMeasurement
) -> dict[str, Any]:
    """Share of reserved cache that holds tokens: paged at each block size, against one contiguous slab per request.

    The band is the published range of the same share in earlier systems.
    """
    contiguous = paging_use(lengths, max_context).contiguous_utilization
    rows = []
    for block in block_sizes:
        use = paging_use(lengths, max_context, block)
        rows.append({"block": block, "allocator": "paged blocks", "used": sig(use.paged_utilization)})
        rows.append({"block": block, "allocator": "contiguous, max context", "used": sig(contiguous)})
    x = alt.X("block:Q", scale=alt.Scale(type="log", base=2), title="block size, tokens", axis=alt.Axis(format=",.0f"))
    y = alt.Y(
        "used:Q", scale=alt.Scale(domain=[0, 1]), title="reserved cache holding tokens", axis=alt.Axis(format=".0%")
    )
    band = (
        alt.Chart(
            alt.Data(values=[{"low": measured.low, "high": measured.high, "label": "vLLM paper: earlier systems"}])
        )
        .mark_rect(opacity=0.18, color="#e15759")
        .encode(y=alt.Y("low:Q"), y2="high:Q", tooltip=[alt.Tooltip("label:N", title="measured")])
    )
    lines = (
        alt.Chart(alt.Data(values=rows))
        .mark_line(point=True)
        .encode(
            x=x,
            y=y,
            color=alt.Color("allocator:N", sort=["paged blocks", "contiguous, max context"], title=None),
            tooltip=[
                alt.Tooltip("allocator:N", title="allocator"),
                alt.Tooltip("block:Q", title="block, tokens", format=","),
                alt.Tooltip("used:Q", title="holding tokens", format=".1%"),
            ],
        )
    )
    return figure_spec(
        band + lines,
        f"Paging: {len(lengths):,} requests, room for {max_context:,} tokens each",
        [
            "Paged blocks waste less than one block per request; a contiguous slab wastes the unused rest.",
            f"Red band: {measured.low:.1%} to {measured.high:.1%} in use, measured in earlier systems (vLLM paper).",
        ],
    )
