"""Markdown tables for the reference pages, and the link formatting sources share.

The reference tables list every spec with its source. (A chapter's own tables
come from its page module, such as the package's ``decode_prefill_table``.)
"""

from __future__ import annotations

from collections.abc import Iterable

from roofline import GpuSpec, ModelSpec, active_parameters, kv_cache_bytes_per_token, total_parameters
from roofline import formatting as fmt
from roofline.kvcache import attention_kind
from roofline.precisions import BYTES_PER_VALUE, PRECISIONS

from . import escape
from .context import Context

#: Sources become links through ``escape.linked``: http(s) URLs only, the rest literal text.
linked = escape.linked
_URL = escape.URL


def _cells(header: tuple[str, ...], rows: list[tuple[str, ...]], right: set[int]) -> str:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _peak(gpu: GpuSpec, precision: str) -> str:
    value = gpu.dense_flops_per_s.get(precision)
    return "—" if value is None else f"{value / 1e12:,.0f}"


def hardware_table(ctx: Context) -> str:
    """Every GPU: memory, bandwidth, dense peak per math precision it has, and its source."""
    precisions = [p for p in PRECISIONS if any(p in gpu.dense_flops_per_s for gpu in ctx.specs.gpus.values())]
    header = ("GPU", "id", "Memory", "Bandwidth", "Host link", *(f"{p} TFLOP/s" for p in precisions))
    rows = []
    for gpu in ctx.specs.gpus.values():
        rows.append(
            (
                escape.text(gpu.name),
                f"`{gpu.id}`",
                fmt.gigabytes(gpu.memory_bytes, 0),
                f"{gpu.bandwidth_bytes_per_s / 1e9:,.0f} GB/s",
                "—" if gpu.host_link_bytes_per_s is None else f"{gpu.host_link_bytes_per_s / 1e9:,.0f} GB/s",
                *(_peak(gpu, p) for p in precisions),
            )
        )
    table = _cells(header, rows, right=set(range(2, 5 + len(precisions))))
    sources = _sources((gpu.name, gpu.id, _gpu_sources(gpu)) for gpu in ctx.specs.gpus.values())
    # Notes after the sources: each source line stays the first line that names its chip.
    return table + sources + _memory_notes(ctx.specs.gpus.values())


def _memory_notes(gpus: Iterable[GpuSpec]) -> str:
    """What each chip's memory figure means (its ``memory_note``), one line per distinct note
    naming every chip it applies to, so a note shared by two chips is read once."""
    by_note: dict[str, list[str]] = {}
    for gpu in gpus:
        if gpu.memory_note:
            by_note.setdefault(gpu.memory_note, []).append(f"**{escape.text(gpu.name)}** (`{gpu.id}`)")
    if not by_note:
        return ""
    lines = ["", "**What the memory figure means**", ""]
    lines += [f"- {', '.join(names)}: {escape.text(note)}" for note, names in by_note.items()]
    return "\n".join(lines) + "\n"


def _gpu_sources(gpu: GpuSpec) -> str:
    """The chip's source, then its host link's (one direction of its PCIe link) when it has one."""
    if gpu.host_link_source is None:
        return gpu.source
    return f"{gpu.source} · host link, one direction: {gpu.host_link_source}"


def _sources(entries: Iterable[tuple[str, str, str]]) -> str:
    """A list under a table, one line per entry: its name, id and linked source.

    Sources are long; in a column they squeeze every other column on a laptop screen.
    """
    lines = ["", "**Sources**", ""]
    lines += [f"- **{escape.text(name)}** (`{entry_id}`): {linked(source)}" for name, entry_id, source in entries]
    return "\n".join(lines) + "\n"


def _architecture(model: ModelSpec) -> str:
    """The attention and MLP shape in one short cell."""
    if model.mla is not None:
        mla = model.mla
        attention = f"MLA, {model.attention_heads} heads, latent {mla.kv_lora_rank} + RoPE {mla.qk_rope_head_dim}"
    else:
        kind = attention_kind(model)
        attention = f"{kind}, {model.attention_heads} heads / {model.kv_heads} KV × {model.head_dim}"
    if model.layer_pattern:
        pattern = "/".join(model.layer_pattern)
        attention += f", layers {pattern} (local window {model.sliding_window:,})"
    if model.moe is None:
        mlp = f"FFN {model.ffn_size:,}"
    else:
        moe = model.moe
        shared = f" + {moe.shared_experts} shared" if moe.shared_experts else ""
        mlp = f"{moe.experts} experts (top-{moe.experts_per_token}{shared}) × FFN {moe.expert_ffn_size:,}"
        if moe.dense_layers:
            mlp += f", first {moe.dense_layers} layers dense (FFN {model.ffn_size:,})"
    return f"{model.layers} layers × {model.hidden_size:,}; {attention}; {mlp}"


def models_table(ctx: Context) -> str:
    """Every model: architecture, derived parameter counts and KV bytes per token, and its source."""
    header = ("Model", "id", "Architecture", "Vocab", "Parameters", "Active", "KV cache / token (16-bit)")
    rows = []
    for model in ctx.specs.models.values():
        rows.append(
            (
                escape.text(model.name),
                f"`{model.id}`",
                _architecture(model),
                f"{model.vocab_size:,}",
                fmt.parameters(total_parameters(model)),
                fmt.parameters(active_parameters(model)),
                fmt.bytes_size(kv_cache_bytes_per_token(model, "bf16")),
            )
        )
    table = _cells(header, rows, right={3, 4, 5, 6})
    return table + _sources((model.name, model.id, model.source) for model in ctx.specs.models.values())


def precisions_table() -> str:
    """Every number format the package knows, with its bytes (and bits) per value."""
    rows = [(f"`{name}`", f"{size:g}", f"{size * 8:g}") for name, size in BYTES_PER_VALUE.items()]
    return _cells(("Precision", "Bytes per value", "Bits"), rows, right={1, 2})
