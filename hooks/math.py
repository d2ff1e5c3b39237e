"""MkDocs glue for scripts/prerender_math.py: formulas become KaTeX HTML at build time.

- on_config:       load the renderer (and its cache of earlier builds' formulas);
- on_page_content: replace every arithmatex formula on the page with KaTeX's HTML.

Pages then need only katex.min.css and its fonts; no math JavaScript runs in the browser.
A formula KaTeX cannot parse fails the build with one line naming it.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parent.parent
_state: dict[str, Any] = {}


def _load_module() -> Any:
    spec = importlib.util.spec_from_file_location("prerender_math", ROOT / "scripts" / "prerender_math.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["prerender_math"] = module
    spec.loader.exec_module(module)
    return module


def on_config(config: Any) -> None:
    module = _load_module()
    try:
        _state["renderer"] = module.MathRenderer()
    except module.MathError as error:
        raise PluginError(str(error)) from None
    _state["module"] = module


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    module = _state["module"]
    try:
        return module.render_page(html, _state["renderer"])
    except module.MathError as error:
        raise PluginError(f"docs/{page.file.src_uri}: {error}") from None
