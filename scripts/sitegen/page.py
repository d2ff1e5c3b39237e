"""What one page's generator module hands the build: the values its prose quotes, its tables, its figures.

A page module (``sitegen/pages/<slug>.py``) names its page and computes these
from the package::

    PAGE = "chapters/my-chapter.md"          # relative to docs/

    def build(ctx: Context) -> PageContent:
        content = PageContent()
        content.put("decode_bf16", fmt.rate(...))          # {{ n.decode_bf16 }} on that page
        content.table("my-table", table.markdown())        # {{ md.my-table }} on any page
        content.figure("my-chart", spec, "What it shows.")  # {{ md.figure-my-chart }}
        return content

Figures carry no number: the page that shows them letters them in reading
order when it is built (see ``shortcodes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Where a figure snippet's letter goes; the page that embeds it fills it in, in reading order (``shortcodes``).
LETTER = "@figure-letter@"


class PageModuleError(ValueError):
    """A page module that breaks the contract above: one line naming the module and what is wrong."""


@dataclass(frozen=True)
class Figure:
    """One chart: its file stem in ``figures/`` (and id ``figure-NAME``), its Vega-Lite spec, its caption."""

    name: str
    spec: dict[str, Any]
    caption: str


@dataclass
class PageContent:
    """Everything one page module computed, in the order it computed it (so output is deterministic)."""

    values: dict[str, str] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)
    figures: list[Figure] = field(default_factory=list)

    def put(self, name: str, value: str) -> None:
        """A prose value; each name once, since a second ``put`` would silently win."""
        if name in self.values:
            raise PageModuleError(f"value {name!r} is computed twice")
        self.values[name] = value

    def table(self, name: str, markdown: str) -> None:
        if name in self.tables:
            raise PageModuleError(f"table {name!r} is made twice")
        self.tables[name] = markdown

    def figure(self, name: str, spec: dict[str, Any], caption: str) -> None:
        if any(figure.name == name for figure in self.figures):
            raise PageModuleError(f"figure {name!r} is made twice")
        self.figures.append(Figure(name, spec, caption))
