"""MkDocs glue for scripts/build_figures.py; everything it computes lives in scripts/sitegen.

- on_config:       regenerate figures/ (a bad spec stops the build with the package's one-line error);
- on_files:        serve the charts (figures/*.svg, *.vl.json) and the vendored Vega/KaTeX files;
- on_page_markdown: expand {{ n.NAME }}, {{ md.NAME }} and {{ fig.NAME }} in Markdown pages
                   (values per page, figures lettered in reading order; see sitegen/shortcodes.py);
- on_page_content: drop the CDN scripts mkdocs-jupyter writes into notebook pages;
- on_serve:        make `mkdocs serve` rebuild when a spec file or the generator changes.

hooks/jupyter/ holds the one nbconvert setting the notebook page needs (see on_config).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "figures"
WATCHED = ("roofline", "scripts/sitegen", "scripts/build_figures.py")
log = logging.getLogger("mkdocs.hooks.figures")

_state: dict[str, Any] = {}


def _load_generator() -> ModuleType:
    """scripts/build_figures.py, freshly imported with its package and helpers.

    Dropping the cached modules first means a long `mkdocs serve` picks up edits
    to the generator or the package, not only to the spec files.
    """
    for name in list(sys.modules):
        if name.split(".")[0] in ("roofline", "sitegen", "build_figures"):
            del sys.modules[name]
    spec = importlib.util.spec_from_file_location("build_figures", ROOT / "scripts" / "build_figures.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["build_figures"] = module
    spec.loader.exec_module(module)
    return module


def on_config(config: Any) -> None:
    # mkdocs-jupyter reads nbconvert's config from the Jupyter config path: run the
    # notebook's kernel over IPC, which spares the build ipykernel's TCP warning.
    config_path = os.environ.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep)
    if str(ROOT / "hooks" / "jupyter") not in config_path:
        entries = [str(ROOT / "hooks" / "jupyter"), *filter(None, config_path)]
        os.environ["JUPYTER_CONFIG_PATH"] = os.pathsep.join(entries)
    generator = _load_generator()
    from sitegen.generate import generate
    from sitegen.page import PageModuleError
    from sitegen.shortcodes import Shortcodes
    from sitegen.vendor import vendor_files

    from roofline import SpecError

    # ROOFLINE_FIGURES=skip builds from the committed figures/ as they are, and
    # =rerender re-renders every SVG; scripts/bench_site.py times all three modes.
    mode = os.environ.get("ROOFLINE_FIGURES", "update")
    if mode not in ("update", "skip", "rerender"):
        raise PluginError(f"ROOFLINE_FIGURES must be update, skip or rerender, got {mode!r}")
    if mode != "skip":
        try:
            run = generate(ROOT, rerender=mode == "rerender")
        except (SpecError, PageModuleError) as error:
            # The package's own one-line message, as `roofline validate` prints it.
            raise PluginError(str(error)) from None
        log.info(run.summary())
    try:
        _state["vendor"] = vendor_files(ROOT)
    except FileNotFoundError as error:
        raise PluginError(str(error)) from None
    _state["shortcodes"] = Shortcodes(FIGURES)
    _state["generator"] = generator


def on_files(files: Files, config: Any) -> Files:
    charts = [path for path in sorted(FIGURES.iterdir()) if path.name.endswith((".svg", ".vl.json"))]
    served = {f"figures/{path.name}": path for path in charts}
    served.update(_state["vendor"])
    for uri, path in served.items():
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if not page.file.src_uri.endswith(".md"):
        return markdown
    from sitegen.shortcodes import ShortcodeError

    try:
        return _state["shortcodes"].expand(markdown, page=page.file.src_uri)
    except ShortcodeError as error:
        raise PluginError(str(error)) from None


_SCRIPT = re.compile(r"<script\b(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.S | re.I)


def _foreign(match: re.Match[str]) -> bool:
    """A script that loads from another origin (MathJax, Mermaid, RequireJS) or only configures one."""
    attrs, body = match.group("attrs"), match.group("body")
    return bool(
        re.search(r"""\bsrc\s*=\s*["']?(https?:)?//""", attrs)
        or "x-mathjax-config" in attrs
        or re.search(r"""import\s*\(?\s*["']https?://|\{\{\s*url\s*\}\}|mermaid""", body)
    )


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    if page.file.src_uri.endswith((".py", ".ipynb")):
        return _SCRIPT.sub(lambda m: "" if _foreign(m) else m.group(0), html)
    return html


def on_serve(server: Any, config: Any, builder: Any) -> Any:
    for path in WATCHED:
        server.watch(str(ROOT / path))
    return server
