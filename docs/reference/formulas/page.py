"""Reference page "How the numbers are computed": the notation table, the precisions table, one H100's
memory by kind and the usable share of memory."""

from __future__ import annotations

import math

from roofline import Hardware, Workload
from roofline import formatting as fmt
from roofline.architecture import weight_bytes
from roofline.memorykinds import DRIVER, NAMEPLATE, USABLE, labelled, memory_of
from roofline.performance import DEFAULT_USABLE_FRACTION, DEFAULT_WORKSPACE_BYTES
from roofline.precisions import BYTES_PER_VALUE
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
    content.table("precisions", precisions_table())
    # The chapters' one notation (docs/notation.toml), the same table the build checks them against.
    content.table("notation", notation.markdown(notation.load()))
    return content


def precisions_table() -> str:
    """Every number format the package knows, with its bytes (and bits) per value."""
    rows = [(f"`{name}`", f"{size:g}", f"{size * 8:g}") for name, size in BYTES_PER_VALUE.items()]
    return markdown_table(("Precision", "Bytes per value", "Bits"), rows, right={1, 2})
