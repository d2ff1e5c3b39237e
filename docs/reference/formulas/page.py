"""Reference page "How the numbers are computed": the notation table, the precisions table, one H100's
memory by kind and the usable share of memory."""

from __future__ import annotations

import math

from roofline import Hardware, Workload
from roofline import formatting as fmt
from roofline.architecture import weight_bytes
from roofline.kvcache import CUDA_COPY_ISSUE
from roofline.memorykinds import DRIVER, NAMEPLATE, USABLE, labelled, memory_of
from roofline.performance import DEFAULT_USABLE_FRACTION, DEFAULT_WORKSPACE_BYTES
from roofline.precisions import BYTES_PER_VALUE
from roofline.specs import GpuSpec
from roofline.sweep import gpus_to_fit
from sitegen import notation
from sitegen.context import Context
from sitegen.page import PageContent
from sitegen.tables import markdown_table
from sitegen.values import percent


def build(ctx: Context) -> PageContent:
    content = PageContent()
    content.put("usable_fraction", percent(DEFAULT_USABLE_FRACTION))
    # One H100's memory, each figure named by its kind (roofline.memorykinds), as every page names it.
    h100 = Hardware(ctx.specs.gpu("h100-sxm"))
    content.put("h100_nameplate", labelled(NAMEPLATE, memory_of(h100, NAMEPLATE), 0))
    content.put("h100_driver", labelled(DRIVER, memory_of(h100, DRIVER)))
    content.put("h100_driver_mib", f"{memory_of(h100, DRIVER) / 2**20:,.0f}")
    content.put("h100_usable", labelled(USABLE, memory_of(h100, USABLE)))
    content.put("workspace", fmt.gigabytes(DEFAULT_WORKSPACE_BYTES))
    # The fewest GPUs for Llama 3.1 405B in bf16, as chapter 1's table counts them, against the bytes alone.
    big = ctx.specs.model("llama-3.1-405b")
    weights = weight_bytes(big, "bf16")
    content.put("fit_weights", fmt.gigabytes(weights))
    content.put("fit_gpus", str(gpus_to_fit(h100, Workload(big, "bf16"))))
    content.put("fit_bytes_gpus", str(math.ceil(weights / memory_of(h100, USABLE))))
    allreduce_values(content, ctx.specs.gpu("h100-sxm"))
    content.put("copy_us", f"{_us(CUDA_COPY_ISSUE.low)} to {_us(CUDA_COPY_ISSUE.high)}")
    content.table("precisions", precisions_table())
    # The site's one notation (docs/notation.toml), the same table the build checks every page against.
    content.table("notation", notation.markdown(notation.load()))
    return content


def precisions_table() -> str:
    """Every number format the package knows, with its bytes (and bits) per value."""
    rows = [(f"`{name}`", f"{size:g}", f"{size * 8:g}") for name, size in BYTES_PER_VALUE.items()]
    return markdown_table(("Precision", "Bytes per value", "Bits"), rows, right={1, 2})


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.4g}"


def _listed(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def allreduce_values(content: PageContent, gpu: GpuSpec) -> None:
    """The H100's all-reduce latencies the page quotes: NCCL's fitted ring and its measurement,
    and the one-shot kernel's measurements, from the GPU spec (roofline/data/gpus.toml)."""
    links = gpu.interconnect
    if links is None:
        raise ValueError(f"roofline/data/gpus.toml: {gpu.id} needs an interconnect with allreduce_latency_s")
    nccl = links.allreduce_latency_s["nccl"]
    if nccl.base_s is None or nccl.step_s is None:
        raise ValueError(f"roofline/data/gpus.toml: {gpu.id}'s allreduce_latency_s.nccl needs base_s and step_s")
    content.put("nccl_base_us", _us(nccl.base_s))
    content.put("nccl_step_us", _us(nccl.step_s))
    (gpus, seconds), *_ = sorted(nccl.measurements.items())
    content.put("nccl_measured_us", _us(seconds))
    content.put("nccl_measured_gpus", str(gpus))
    oneshot = sorted(links.allreduce_latency_s["custom_oneshot"].measurements.items())
    content.put("oneshot_counts", _listed([str(count) for count, _ in oneshot]))
    content.put("oneshot_us", _listed([_us(value) for _, value in oneshot]))
