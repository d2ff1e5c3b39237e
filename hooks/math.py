"""MkDocs glue for scripts/prerender_math.py: formulas become KaTeX HTML at build time.

- on_config:       load the renderer (and its cache of earlier builds' formulas);
- on_page_content: check every page's formulas (chapters, reference pages, any page with math)
                   against the course's notation (docs/notation.toml, scripts/sitegen/notation.py),
                   then replace every arithmatex formula on the page
                   with KaTeX's HTML.

Pages then need only katex.min.css and its fonts; no math JavaScript runs in the browser.
A formula KaTeX cannot parse fails the build with one line naming it.
"""

from __future__ import annotations

from typing import Any

from mkdocs.exceptions import PluginError

_state: dict[str, Any] = {}


def on_config(config: Any) -> None:
    import prerender_math as module  # scripts/ is on the venv's path (make setup)

    try:
        _state["renderer"] = module.MathRenderer()
    except module.MathError as error:
        raise PluginError(str(error)) from None
    _state["module"] = module
    from sitegen import notation

    try:
        _state["notation"] = notation.load()
    except notation.NotationError as error:
        raise PluginError(str(error)) from None


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    module = _state["module"]
    # Every page, not a list of them: a page without formulas passes at once, and one that gains
    # a formula later is checked without anyone remembering to add it.
    from sitegen import notation

    try:
        notation.check_page(f"docs/{page.file.src_uri}", html, _state["notation"])
    except notation.NotationError as error:
        raise PluginError(str(error)) from None
    try:
        return module.render_page(html, _state["renderer"])
    except module.MathError as error:
        raise PluginError(f"docs/{page.file.src_uri}: {error}") from None
