"""Reference page "Hardware": every GPU spec with its source, and what each memory figure means."""

from __future__ import annotations

from collections.abc import Iterable

from roofline import GpuSpec
from roofline import formatting as fmt
from roofline.precisions import PRECISIONS
from sitegen import escape
from sitegen.context import Context
from sitegen.page import PageContent
from sitegen.tables import markdown_table, sources_list


def build(ctx: Context) -> PageContent:
    content = PageContent()
    content.table("hardware", hardware_table(ctx))
    return content


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
    table = markdown_table(header, rows, right=set(range(2, 5 + len(precisions))))
    sources = sources_list((gpu.name, gpu.id, _gpusources_list(gpu)) for gpu in ctx.specs.gpus.values())
    # Notes after the sources: each source line stays the first line that names its chip.
    return table + sources + _memory_notes(ctx.specs.gpus.values()) + _compute_notes(ctx)


def _peak(gpu: GpuSpec, precision: str) -> str:
    value = gpu.dense_flops_per_s.get(precision)
    return "—" if value is None else f"{value / 1e12:,.0f}"


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


def _compute_notes(ctx: Context) -> str:
    """Each chip that names another as having its tensor cores (``same_compute_as``): the expected
    figures use the measured compute shares of the chip it names, and the source that says so."""
    sharing = [gpu for gpu in ctx.specs.gpus.values() if gpu.same_compute_as]
    if not sharing:
        return ""
    lines = ["", "**Chips with another's tensor cores**", ""]
    for gpu in sharing:
        named = ctx.specs.gpu(gpu.same_compute_as)
        lines.append(
            f"- **{escape.text(gpu.name)}** (`{gpu.id}`) computes as **{escape.text(named.name)}**"
            f" (`{named.id}`): its expected figures use that chip's measured compute shares."
            f" Source: {escape.linked(gpu.same_compute_source or '')}"
        )
    return "\n".join(lines) + "\n"


def _gpusources_list(gpu: GpuSpec) -> str:
    """The chip's source, then its host link's (one direction of its PCIe link) when it has one."""
    if gpu.host_link_source is None:
        return gpu.source
    return f"{gpu.source} · host link, one direction: {gpu.host_link_source}"
