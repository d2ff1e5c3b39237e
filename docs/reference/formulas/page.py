"""Reference page "How the numbers are computed": the precisions table and the usable share of memory."""

from __future__ import annotations

from roofline.performance import DEFAULT_USABLE_FRACTION
from roofline.precisions import BYTES_PER_VALUE
from sitegen.context import Context
from sitegen.page import PageContent
from sitegen.tables import markdown_table
from sitegen.values import percent


def build(ctx: Context) -> PageContent:
    content = PageContent()
    content.put("usable_fraction", percent(DEFAULT_USABLE_FRACTION))
    content.table("precisions", precisions_table())
    return content


def precisions_table() -> str:
    """Every number format the package knows, with its bytes (and bits) per value."""
    rows = [(f"`{name}`", f"{size:g}", f"{size * 8:g}") for name, size in BYTES_PER_VALUE.items()]
    return markdown_table(("Precision", "Bytes per value", "Bits"), rows, right={1, 2})
