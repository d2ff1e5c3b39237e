"""Reference page "Hardware": every GPU spec with its source."""

from __future__ import annotations

from ..context import Context
from ..page import PageContent
from ..tables import hardware_table

PAGE = "reference/hardware.md"


def build(ctx: Context) -> PageContent:
    content = PageContent()
    content.table("hardware", hardware_table(ctx))
    return content
