"""What one page's generator module hands the build: the values its prose quotes, its tables, its figures.

A page folder's generator (``docs/chapters/<slug>/page.py``, beside the page's
``index.md``; see ``sitegen.pages``) computes these from the package::

    def build(ctx: Context) -> PageContent:
        content = PageContent()
        content.put("decode_bf16", fmt.rate(...))          # {{ n.decode_bf16 }} on that page, as literal text
        content.put_markdown("source", escape.linked(url))  # already Markdown: a link
        content.table("my-table", table.markdown())        # {{ md.my-table }} on any page
        content.figure("my-chart", spec, "What it shows.")  # {{ md.figure-my-chart }}; spec from figure_spec
        return content

Figures carry no number: the page that shows them letters them in reading
order when it is built (see ``shortcodes``). A figure's alternative text is its
title and subtitle (``render.alt_text``); one without fails the build.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import escape

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
        """A prose value, shown as literal text: a spec name such as ``<b>8B`` prints its characters.

        Each name once, since a second ``put`` would silently win.
        """
        self.put_markdown(name, escape.text(value))

    def put_markdown(self, name: str, markdown: str) -> None:
        """A prose value that is already Markdown (a link from ``escape.linked``): the caller escaped it."""
        if name in self.values:
            raise PageModuleError(f"value {name!r} is computed twice")
        self.values[name] = markdown

    def table(self, name: str, markdown: str) -> None:
        if name in self.tables:
            raise PageModuleError(f"table {name!r} is made twice")
        self.tables[name] = markdown

    def figure(self, name: str, spec: dict[str, Any], caption: str) -> None:
        if any(figure.name == name for figure in self.figures):
            raise PageModuleError(f"figure {name!r} is made twice")
        self.figures.append(Figure(name, spec, caption))
