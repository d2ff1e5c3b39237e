"""Figures as files: the Vega-Lite spec, its static SVG, and a Markdown snippet that embeds them.

The page shows the SVG in an ``<img>``; the page script (``docs/javascripts/charts.js``)
finds the spec next to it (same name, ``.vl.json``) and swaps in the interactive
vega-embed view. Without JavaScript the SVG stays.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import vl_convert

from . import escape
from .page import LETTER, Figure

#: vl-convert's name for the Vega-Lite version Altair 6.3 writes (its schema is v6.4.1).
VL_VERSION = "6.4"
#: The static SVGs' text font. Vega lays a chart out by its text's widths, and vl-convert measures
#: them with the first family here it finds, preferring a system font to its own copy of one. With
#: "sans-serif" it took the system's Liberation Sans, whose versions differ in a few glyphs' widths,
#: so a chart came out a pixel wider or narrower from one machine to the next. Arimo, from npm
#: (``FONT_FOLDERS``), is a family few systems have, so the layout is the same everywhere. A reader's
#: browser draws the first it has: Arimo, Liberation Sans, Arial and Helvetica share their widths.
STATIC_FONT = "Arimo, Liberation Sans, Arial, Helvetica, sans-serif"
#: Arimo's regular and bold faces in node_modules (@expo-google-fonts/arimo, pinned in
#: package-lock.json; SIL Open Font License), read at build time only: the site does not serve them.
FONT_FOLDERS = ("@expo-google-fonts/arimo/400Regular", "@expo-google-fonts/arimo/700Bold")
NODE_MODULES = Path(__file__).resolve().parents[2] / "node_modules"


class FontMissingError(RuntimeError):
    """The static SVGs' font is not in node_modules; one line naming the folder and the fix."""


@functools.cache
def _register_fonts(modules: Path = NODE_MODULES) -> None:
    """Hand vl-convert Arimo's faces once a process; FontMissingError when npm has not installed them."""
    for folder in FONT_FOLDERS:
        path = modules / folder
        if not any(path.glob("*.ttf")):
            raise FontMissingError(
                f"{path} holds no .ttf: the figures' SVGs are laid out in Arimo from npm; run `make setup`"
                " (npm ci from package-lock.json)"
            )
        vl_convert.register_font_directory(str(path))


def svg(spec: dict[str, Any]) -> str:
    """The chart as a static SVG (vl-convert runs Vega in-process; no browser, no network), its
    text in ``STATIC_FONT`` unless the chart names a font of its own."""
    _register_fonts()
    config = {"font": STATIC_FONT, **spec.get("config", {})}
    return vl_convert.vegalite_to_svg({**spec, "config": config}, vl_version=VL_VERSION)


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
