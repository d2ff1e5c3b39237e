"""Chart builders for the KV-cache chapter, returned as Vega-Lite dicts.

- KV bytes per token for every model, by attention type, beside full multi-head attention;
- users that fit against context (log axis) for 16-bit, 8-bit and 4-bit caches;
- the decode step's reads, weights against cache, across contexts;
- what the block size trades: cache wasted, copies to swap a request, block-table entries.

Every value is computed by the ``roofline`` package; the page module
(``page.py``) chooses the models, GPUs and contexts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from roofline import Hardware, ModelSpec, SpecSet, Workload, attention_cache, paging_use, step_split, swap_cost
from roofline.kvcache import PublishedMeasurement
from roofline.kvformats import kv_format
from roofline.performance import memory_use
from sitegen.figures import PALETTE, WIDTH, figure_spec, sig

#: Where the per-token bars start on their log axis (a log scale has no zero), in kB.
LOG_BASE_KB = 10
#: The block-size figure: each panel's height, and the colours of its one-colour panels.
PANEL_HEIGHT = 150
PALETTE_SWAP, PALETTE_TABLE = PALETTE[4], PALETTE[5]
#: A legend for dash patterns: each entry a grey line long enough to show its dashes, on both schemes.
DASH_LEGEND = alt.Legend(symbolType="stroke", symbolStrokeColor="#888888", symbolStrokeWidth=2, symbolSize=400)
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
    base = alt.Chart(alt.Data(values=rows)).encode(
        x=alt.X(
            "context:Q",
            scale=alt.Scale(type="log", base=2),
            title="context per user, tokens",
            axis=alt.Axis(format=",.0f"),
        ),
        y=alt.Y("users:Q", scale=alt.Scale(type="log"), title="users that fit", axis=alt.Axis(format=",.0f")),
        color=alt.Color("kv:N", sort=list(kv_precisions), title="KV cache"),
        tooltip=[
            alt.Tooltip("deployment:N", title="deployment"),
            alt.Tooltip("kv:N", title="KV cache"),
            alt.Tooltip("context:Q", title="context", format=","),
            alt.Tooltip("users:Q", title="users that fit", format=","),
        ],
    )
    # The dash pattern tells the deployments apart; its legend shows each as a line (points would
    # show as identical dots), and the points are drawn on their own, with no dash to explain.
    lines = base.mark_line().encode(
        strokeDash=alt.StrokeDash("deployment:N", sort=deployments_order, title=None, legend=DASH_LEGEND)
    )
    chart = lines + base.mark_point(filled=True).encode(detail="deployment:N")
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
    lengths: Sequence[int],
    max_context: int,
    block_sizes: Sequence[int],
    measured: PublishedMeasurement,
    swap: tuple[Hardware, ModelSpec, int],
    default_block: int,
) -> dict[str, Any]:
    """What the block size trades, one panel each, with the engines' default marked:

    - the share of reserved cache that holds tokens, paged at each block size against one
      contiguous slab per request, beside the published range for earlier systems;
    - the time to copy one request's cache back from host memory (``swap`` = hardware, model,
      context), block by block at the measured cost of issuing each copy, against the bytes
      alone over the link;
    - block-table entries per request, on average over ``lengths``: one lookup per block,
      per layer, at every decode step.
    """
    contiguous = paging_use(lengths, max_context).contiguous_utilization
    hardware, model, context = swap
    used, copies, tables = [], [], []
    for block in block_sizes:
        use = paging_use(lengths, max_context, block)
        used.append({"block": block, "allocator": "paged blocks", "used": sig(use.paged_utilization)})
        used.append({"block": block, "allocator": "contiguous, max context", "used": sig(contiguous)})
        cost = swap_cost(hardware, model, context, block_tokens=block)
        copies.append({"block": block, "way": "block by block", "ms": sig(cost.seconds * 1e3), "copies": cost.copies})
        copies.append({"block": block, "way": "bytes over the link alone", "ms": sig(cost.link_s * 1e3), "copies": 1})
        tables.append({"block": block, "entries": sig(use.blocks / len(lengths))})
    x = alt.X("block:Q", scale=alt.Scale(type="log", base=2), title="block size, tokens", axis=alt.Axis(format=",.0f"))
    rule = (
        alt.Chart(alt.Data(values=[{"block": default_block, "label": f"{default_block} tokens, vLLM's default"}]))
        .mark_rule(color="#888888", strokeDash=[4, 3])
        .encode(x=alt.X("block:Q"), tooltip=[alt.Tooltip("label:N", title="block size")])
    )
    band = (
        alt.Chart(
            alt.Data(values=[{"low": measured.low, "high": measured.high, "label": "vLLM paper: earlier systems"}])
        )
        .mark_rect(opacity=0.18, color="#e15759")
        .encode(y=alt.Y("low:Q"), y2="high:Q", tooltip=[alt.Tooltip("label:N", title="measured")])
    )
    waste = (
        alt.Chart(alt.Data(values=used))
        .mark_line(point=True)
        .encode(
            x=x,
            y=alt.Y(
                "used:Q", scale=alt.Scale(domain=[0, 1]), title="reserved cache in use", axis=alt.Axis(format=".0%")
            ),
            color=alt.Color("allocator:N", sort=["paged blocks", "contiguous, max context"], title=None),
            tooltip=[
                alt.Tooltip("allocator:N", title="allocator"),
                alt.Tooltip("block:Q", title="block, tokens", format=","),
                alt.Tooltip("used:Q", title="holding tokens", format=".1%"),
            ],
        )
    )
    swap_base = alt.Chart(alt.Data(values=copies)).encode(
        x=x,
        y=alt.Y("ms:Q", scale=alt.Scale(type="log"), title="copy back, ms", axis=alt.Axis(format=",.0f")),
        color=alt.value(PALETTE_SWAP),
        tooltip=[
            alt.Tooltip("way:N", title="copied"),
            alt.Tooltip("block:Q", title="block, tokens", format=","),
            alt.Tooltip("copies:Q", title="copies", format=","),
            alt.Tooltip("ms:Q", title="ms", format=",.1f"),
        ],
    )
    swap_panel = swap_base.mark_line().encode(
        strokeDash=alt.StrokeDash(
            "way:N", sort=["block by block", "bytes over the link alone"], title=None, legend=DASH_LEGEND
        )
    ) + swap_base.mark_point(filled=True).encode(detail="way:N")
    table_panel = (
        alt.Chart(alt.Data(values=tables))
        .mark_line(point=alt.OverlayMarkDef(color=PALETTE_TABLE, filled=True), color=PALETTE_TABLE)
        .encode(
            x=x,
            y=alt.Y("entries:Q", scale=alt.Scale(type="log"), title="table entries per request"),
            tooltip=[
                alt.Tooltip("block:Q", title="block, tokens", format=","),
                alt.Tooltip("entries:Q", title="entries per request", format=",.0f"),
            ],
        )
    )
    panel = {"width": WIDTH, "height": PANEL_HEIGHT}
    chart = alt.vconcat(
        (band + waste + rule).properties(**panel),
        (swap_panel + rule).properties(**panel),
        (table_panel + rule).properties(**panel),
    ).resolve_scale(color="independent", strokeDash="independent")
    return figure_spec(
        chart,
        f"Why blocks of {default_block} tokens: {len(lengths):,} requests, room for {max_context:,} tokens each",
        [
            "Top: small blocks waste least; a contiguous slab wastes the unused rest (red band: earlier systems).",
            f"Middle: copying {context:,} tokens of {model.name} back, one copy per block per layer, costs"
            " more the smaller the blocks.",
            "Bottom: block-table entries the attention kernel follows per request, at every step.",
        ],
        size=None,
    )
