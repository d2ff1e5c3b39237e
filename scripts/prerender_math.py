"""Render a page's formulas to HTML at build time with KaTeX in Node, so the page runs no math JavaScript.

``pymdownx.arithmatex`` (``generic: true``) leaves each formula in the HTML as
``<span class="arithmatex">\\(TeX\\)</span>`` or ``<div class="arithmatex">\\[TeX\\]</div>``.
``render_page(html)`` replaces every one with KaTeX's output (the HTML a reader
sees plus the MathML a screen reader reads), so only ``katex.min.css`` and its
fonts reach the browser. ``hooks/math.py`` calls it for every page.

KaTeX runs in Node (``scripts/katex_render.mjs``), once per build for all the
formulas no earlier build has seen: results are cached in
``build/katex-cache/KATEX_VERSION.json``, keyed by the TeX and display mode, so a
rebuild with unchanged formulas never starts Node.

For the search index, the visible KaTeX markup (wrapped in a ``<katex-visual>``
element) and the TeX annotation carry ``data-search-exclude`` (Material's search
then skips them): an inline formula
is indexed by its MathML text (``G``, not ``\\(G\\)``), and a display formula
is left out of the index.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KATEX_PACKAGE = ROOT / "node_modules" / "katex" / "package.json"
RENDERER = Path(__file__).resolve().parent / "katex_render.mjs"
CACHE_DIR = ROOT / "build" / "katex-cache"

_FORMULA = re.compile(
    r'<span class="arithmatex">\\\((?P<inline>.*?)\\\)</span>|<div class="arithmatex">\\\[(?P<display>.*?)\\\]</div>',
    re.S,
)


class MathError(Exception):
    """A formula KaTeX cannot render, or KaTeX itself missing; the message is one line."""


#: A comma between digits with three more after it: a thousands separator, as ``fmt`` writes
#: numbers ("2,000"). TeX takes a bare comma for punctuation and puts a thin space after it
#: ("2, 000"); braced, ``{,}``, it is an ordinary symbol with no space.
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


def thousands_kept_together(tex: str) -> str:
    """``tex`` with every thousands separator braced, so ``2,000`` renders as one number; a comma
    in a list (``(1, 2)``, ``x_{1,2}``) is left as punctuation."""
    return _THOUSANDS.sub("{,}", tex)


def _key(tex: str, display: bool) -> str:
    return hashlib.sha256(f"{int(display)}:{tex}".encode()).hexdigest()[:24]


class MathRenderer:
    """TeX -> KaTeX HTML, through a cache on disk shared by every build with the same KaTeX."""

    def __init__(self, cache_dir: Path = CACHE_DIR) -> None:
        try:
            version = json.loads(KATEX_PACKAGE.read_text(encoding="utf-8"))["version"]
        except FileNotFoundError:
            raise MathError("node_modules/katex is missing; run `make setup` (npm ci from package-lock.json)") from None
        self.cache_file = cache_dir / f"katex-{version}.json"
        try:
            self.cache: dict[str, str] = json.loads(self.cache_file.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            self.cache = {}

    def render(self, formulas: list[tuple[str, bool]]) -> list[str]:
        """KaTeX's HTML for each ``(tex, display)``; Node runs only for formulas not cached yet."""
        missing = {_key(tex, display): (tex, display) for tex, display in formulas}
        missing = {key: item for key, item in missing.items() if key not in self.cache}
        if missing:
            items = [{"tex": tex, "display": display} for tex, display in missing.values()]
            done = subprocess.run(
                ["node", str(RENDERER)], input=json.dumps(items), capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                raise MathError(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "KaTeX failed")
            for key, rendered in zip(missing, json.loads(done.stdout), strict=True):
                self.cache[key] = rendered
            self.cache_file.parent.mkdir(parents=True, exist_ok=True)
            scratch = self.cache_file.with_suffix(".tmp")
            scratch.write_text(json.dumps(self.cache, sort_keys=True), encoding="utf-8")
            scratch.replace(self.cache_file)
        return [self.cache[_key(tex, display)] for tex, display in formulas]


def _for_search(rendered: str, display: bool) -> str:
    """Mark what Material's search should skip: the visible markup, the TeX, and display formulas."""
    # Material's search parser matches skipped elements by tag name alone, so the first nested
    # </span> would end a skipped span: the visible markup goes in an element of its own instead.
    # Inline KaTeX is <span class="katex">MATHML<span class="katex-html">…</span></span>.
    if display:
        return f'<div class="arithmatex" data-search-exclude>{rendered}</div>'
    start = rendered.find('<span class="katex-html"')
    closing = "</span>"
    if start == -1 or not rendered.endswith(closing):
        raise MathError(f"unexpected KaTeX markup: {rendered[:80]}…")
    visual = rendered[start : -len(closing)]
    rendered = f"{rendered[:start]}<katex-visual data-search-exclude>{visual}</katex-visual>{closing}"
    rendered = rendered.replace("<annotation ", "<annotation data-search-exclude ", 1)
    return f'<span class="arithmatex">{rendered}</span>'


def render_page(page_html: str, renderer: MathRenderer) -> str:
    """``page_html`` with every arithmatex formula replaced by KaTeX's HTML."""
    matches = list(_FORMULA.finditer(page_html))
    if not matches:
        return page_html
    formulas = [
        (
            thousands_kept_together(
                html.unescape(m.group("inline") if m.group("inline") is not None else m.group("display")).strip()
            ),
            m.group("display") is not None,
        )
        for m in matches
    ]
    rendered = iter(renderer.render(formulas))
    displays = iter(display for _, display in formulas)
    return _FORMULA.sub(lambda _match: _for_search(next(rendered), next(displays)), page_html)
