"""MkDocs glue for scripts/build_figures.py; everything it computes lives in scripts/sitegen.

- on_config:       regenerate figures/ (a bad spec stops the build with the package's one-line error),
                   and check that mkdocs.yml's nav lists every chapter (sitegen/navigation.py);
- on_files:        serve the charts (figures/*.svg, *.vl.json) and the vendored Vega/KaTeX files;
- on_page_markdown: expand {{ n.NAME }}, {{ md.NAME }}, {{ fig.NAME }} and {{ nav.NAME }} in Markdown pages
                   (values per page, figures lettered in reading order; see sitegen/shortcodes.py);
- on_page_content: refuse an image without alternative text (sitegen/render.py); drop the CDN
                   scripts mkdocs-jupyter writes into notebook pages;
- on_serve:        make `mkdocs serve` rebuild when a spec file or the generator changes.

``sitegen`` imports by name: ``make setup`` puts scripts/ on the venv's path. Every hook
imports it inside its functions, after on_config here has dropped the cached modules, so
a long `mkdocs serve` picks up edits to the generator, a page folder or the package.

hooks/jupyter/ holds the one nbconvert setting the notebook page needs (see on_config).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "figures"
WATCHED = ("roofline", "scripts/sitegen", "scripts/build_figures.py")
#: Modules imported afresh on every build: the package, the generator, page folders' and calculators' modules.
FRESH = ("roofline", "sitegen", "build_figures", "build_wheel", "build_snapshot", "prerender_math")
FRESH_PREFIXES = ("roofline_page_", "roofline_calculator_")
log = logging.getLogger("mkdocs.hooks.figures")

_state: dict[str, Any] = {}


def drop_cached_modules() -> None:
    """Forget the modules in FRESH, so the next import reads them from disk again."""
    for name in list(sys.modules):
        if name.split(".")[0] in FRESH or name.startswith(FRESH_PREFIXES):
            del sys.modules[name]


def on_config(config: Any) -> None:
    # mkdocs-jupyter reads nbconvert's config from the Jupyter config path: run the
    # notebook's kernel over IPC, which spares the build ipykernel's TCP warning.
    config_path = os.environ.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep)
    if str(ROOT / "hooks" / "jupyter") not in config_path:
        entries = [str(ROOT / "hooks" / "jupyter"), *filter(None, config_path)]
        os.environ["JUPYTER_CONFIG_PATH"] = os.pathsep.join(entries)
    drop_cached_modules()
    from roofline import SpecError
    from sitegen.course import nav_lists
    from sitegen.generate import generate
    from sitegen.glossary import GlossaryError
    from sitegen.navigation import NavError
    from sitegen.page import PageModuleError
    from sitegen.shortcodes import Shortcodes
    from sitegen.vendor import vendor_files

    docs = Path(config["docs_dir"])
    try:
        _state["lists"] = nav_lists(ROOT, docs, config["nav"])
    except (NavError, PageModuleError, GlossaryError) as error:
        raise PluginError(str(error)) from None
    # ROOFLINE_FIGURES=skip builds from the committed figures/ as they are, and
    # =rerender re-renders every SVG; scripts/bench_site.py times all three modes.
    mode = os.environ.get("ROOFLINE_FIGURES", "update")
    if mode not in ("update", "skip", "rerender"):
        raise PluginError(f"ROOFLINE_FIGURES must be update, skip or rerender, got {mode!r}")
    if mode != "skip":
        from sitegen.render import FontMissingError

        try:
            run = generate(ROOT, rerender=mode == "rerender")
        except (SpecError, PageModuleError, FontMissingError) as error:
            # The package's own one-line message, as `roofline validate` prints it.
            raise PluginError(str(error)) from None
        log.info(run.summary())
    try:
        _state["vendor"] = vendor_files(ROOT)
    except FileNotFoundError as error:
        raise PluginError(str(error)) from None
    _state["shortcodes"] = Shortcodes(FIGURES)


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
        return _state["shortcodes"].expand(markdown, page=page.file.src_uri, lists=_state["lists"])
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
    from sitegen.render import AltTextError, check_alt_text

    try:
        check_alt_text(html, f"docs/{page.file.src_uri}")
    except AltTextError as error:
        raise PluginError(str(error)) from None
    return html


def on_serve(server: Any, config: Any, builder: Any) -> Any:
    for path in WATCHED:
        server.watch(str(ROOT / path))
    return server
