"""Figures as files: the Vega-Lite spec, its static SVG, and a Markdown snippet that embeds them.

The page shows the SVG in an ``<img>``; the page script (``docs/javascripts/charts.js``)
finds the spec next to it (same name, ``.vl.json``) and swaps in the interactive
vega-embed view. Without JavaScript the SVG stays.
"""

from __future__ import annotations

import re
from typing import Any

import vl_convert

from . import escape
from .page import LETTER, Figure

#: vl-convert's name for the Vega-Lite version Altair 6.3 writes (its schema is v6.4.1).
VL_VERSION = "6.4"


def svg(spec: dict[str, Any]) -> str:
    """The chart as a static SVG (vl-convert runs Vega in-process; no browser, no network)."""
    return vl_convert.vegalite_to_svg(spec, vl_version=VL_VERSION)


def svg_size(image: str) -> tuple[int, int]:
    """Width and height from an SVG's root element, so the ``<img>`` reserves its space."""
    head = image[: image.index(">")]

    def attribute(name: str) -> int:
        start = head.index(f' {name}="') + len(name) + 3
        return int(float(head[start : head.index('"', start)]))

    return attribute("width"), attribute("height")


def alt_text(spec: dict[str, Any]) -> str:
    """The chart's title and subtitle (or, without a title, its ``description``), as the image's alternative text.

    Empty when the chart has neither: the generator refuses such a figure (``generate.page_contents``).
    """
    title = spec.get("title") or {}
    if isinstance(title, (str, list)):
        title = {"text": title}
    lines = []
    for part in (title.get("text", ""), title.get("subtitle", [])):
        lines += [part] if isinstance(part, str) else list(part)
    if not any(line.strip() for line in lines):
        lines = [spec.get("description", "")]
    return " ".join(part if part.endswith(".") else part + "." for part in lines if part.strip())


def snippet(figure: Figure, image: str) -> str:
    """Markdown (md_in_html + attr_list) that shows the SVG and marks it for the page script.

    The image path is absolute from the docs root (MkDocs rewrites it per page
    with ``validation.links.absolute_links: relative_to_docs``), so the same
    snippet works on any page.
    """
    width, height = svg_size(image)
    alt = escape.text(alt_text(figure.spec))
    return (
        f'<figure class="roofline-figure" id="figure-{figure.name}" markdown="1">\n'
        f'<div class="roofline-chart" data-figure="{figure.name}" markdown="1">\n'
        f'![{alt}](/figures/{figure.name}.svg){{ width="{width}" height="{height}" loading="lazy" }}\n'
        "</div>\n"
        f'<figcaption markdown="span">**Figure ({LETTER}).** {figure.caption}</figcaption>\n'
        "</figure>\n"
    )


#: An <img> tag, and its alt and src attributes.
_IMAGE = re.compile(r"<img\b[^>]*>", re.I)
_ALT = re.compile(r"""\salt\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I)
_SRC = re.compile(r"""\ssrc\s*=\s*["']?([^"'\s>]+)""", re.I)


class AltTextError(ValueError):
    """A page shows an image without alternative text; one line naming the page, the image and the fix."""


def check_alt_text(html: str, where: str) -> None:
    """AltTextError for the first ``<img>`` in ``html`` (the page ``where``) whose alt text is missing or blank.

    A figure's alt text is its chart's title and subtitle; an image written by hand needs
    its own (``![what it shows](path)``). A screen reader reads nothing else for it.
    """
    for image in _IMAGE.findall(html):
        alt = _ALT.search(image)
        if alt and "".join(part or "" for part in alt.groups()).strip():
            continue
        src = _SRC.search(image)
        raise AltTextError(
            f"{where}: the image {src.group(1) if src else image[:60]!r} has no alt text; write what it shows,"
            " ![what it shows](path), or make it a figure (PageContent.figure), whose title is its alt text"
        )
