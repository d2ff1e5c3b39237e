"""Reference page "How the numbers are computed": the precisions table and the usable share of memory."""

from __future__ import annotations

from roofline.performance import DEFAULT_USABLE_FRACTION

from ..context import Context
from ..page import PageContent
from ..tables import precisions_table
from ..values import percent

PAGE = "reference/formulas.md"


def build(ctx: Context) -> PageContent:
    content = PageContent()
    content.put("usable_fraction", percent(DEFAULT_USABLE_FRACTION))
    content.table("precisions", precisions_table())
    return content
