"""Chart builders for chapter 8, returned as Vega-Lite dicts.

- the time to first token a prefix hit leaves, as a share of the whole prompt's, against the
  share of the prompt cached, for a few prompt lengths (``roofline.prefixcache.hit_saving``);
- a disaggregated server's KV transfer over each link against the prefill it follows, across
  prompt lengths (``roofline.disagg.kv_transfer``).

Every value is computed by the ``roofline`` package; ``page.py`` picks the models, GPUs and lengths.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt

from roofline import Hardware, Workload
from roofline.disagg import kv_transfer
from roofline.prefixcache import cached_tokens, hit_saving
from sitegen.figures import figure_spec, sig


def ttft_left(hardware: Hardware, workload: Workload, prompts: Sequence[int], shares: Sequence[float]) -> dict:
    """The prefill a hit leaves, ``after / full``, against the share cached, one line per prompt,
    beside the line a saving in proportion to the tokens would follow (``1 - share``)."""
    rows = []
    for prompt in prompts:
        for share in shares:
            saving = hit_saving(hardware, workload, prompt, cached_tokens(prompt, share))
            label = f"{prompt:,}-token prompt"
            rows.append({"share": sig(share * 100), "left": sig(100 * saving.after_s / saving.full_s), "line": label})
    for share in shares:
        rows.append({"share": sig(share * 100), "left": sig(100 * (1 - share)), "line": "in proportion to tokens"})
    order = [f"{prompt:,}-token prompt" for prompt in prompts] + ["in proportion to tokens"]
    chart = (
        alt.Chart(alt.Data(values=rows))
        .mark_line(point=True)
        .encode(
            x=alt.X("share:Q", title="share of the prompt already cached, %"),
            y=alt.Y("left:Q", title="time to first token left, % of no hit"),
            color=alt.Color("line:N", sort=order, title=None),
            # one legend: the colour's; the dash only sets the reference line apart on the chart
            strokeDash=alt.StrokeDash("line:N", sort=order, title=None, legend=None),
            tooltip=[
                alt.Tooltip("line:N", title="line"),
                alt.Tooltip("share:Q", title="cached, %", format=".0f"),
                alt.Tooltip("left:Q", title="TTFT left, %", format=".1f"),
            ],
        )
    )
    title = f"What a prefix hit leaves of the prefill, {workload.model.name} on one {hardware.gpu.name}"
    subtitle = ["Long prompts keep attention over the cached part; short ones stop at one read of the weights."]
    return figure_spec(chart, title, subtitle)


def transfer_vs_prefill(
    hardware: Hardware, workload: Workload, prompts: Sequence[int], links: Sequence[tuple[str, str]]
) -> dict[str, Any]:
    """KV transfer seconds over each ``(link, label)`` and the prefill's, against the prompt (log-log)."""
    rows = []
    for prompt in prompts:
        for link, label in links:
            moved = kv_transfer(hardware, workload, prompt, link)
            rows.append({"prompt": prompt, "ms": sig(moved.seconds * 1e3), "line": f"KV transfer, {label}"})
        rows.append({"prompt": prompt, "ms": sig(moved.prefill_s * 1e3), "line": "prefill"})
    order = ["prefill"] + [f"KV transfer, {label}" for _, label in links]
    chart = (
        alt.Chart(alt.Data(values=rows))
        .mark_line(point=True)
        .encode(
            x=alt.X(
                "prompt:Q",
                scale=alt.Scale(type="log", base=2),
                title="prompt, tokens",
                axis=alt.Axis(format=",.0f"),
            ),
            y=alt.Y("ms:Q", scale=alt.Scale(type="log"), title="ms (log scale)", axis=alt.Axis(format=",.2~f")),
            color=alt.Color("line:N", sort=order, title=None),
            tooltip=[
                alt.Tooltip("line:N", title="line"),
                alt.Tooltip("prompt:Q", title="prompt", format=","),
                alt.Tooltip("ms:Q", title="ms", format=",.3~f"),
            ],
        )
    )
    gpus = f"{hardware.count} × {hardware.gpu.name}"
    title = f"Sending the KV cache against computing it, {workload.model.name} on {gpus}"
    subtitle = ["Each GPU of the prefill pool sends its shard over its own link, at the nameplate."]
    return figure_spec(chart, title, subtitle)
