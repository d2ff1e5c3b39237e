"""Reference page "Models": every model spec, its derived sizes and its source."""

from __future__ import annotations

from ..context import Context
from ..page import PageContent
from ..tables import models_table

PAGE = "reference/models.md"


def build(ctx: Context) -> PageContent:
    content = PageContent()
    content.table("models", models_table(ctx))
    return content
