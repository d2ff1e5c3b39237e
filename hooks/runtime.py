"""MkDocs hook for the in-page Python runtime: Run cells and calculators, on any page.

- on_config:       build the package's pure wheel (scripts/build_wheel.py; cached by
                   source digest) and the Pyodide memory snapshot the worker starts from
                   (scripts/build_snapshot.py; cached by input digest).
- on_files:        serve the wheel, the snapshot and Pyodide's runtime files (from
                   node_modules, pinned by package-lock.json) under ``assets/runtime/``.
- on_page_content: replace each marker line with its widget (scripts/sitegen/markers.py):

    <!-- roofline:run-cell programs/NAME.py -->   a Run cell showing programs/NAME.py beside the page
    <!-- roofline:calculator NAME -->            the calculator calculators/NAME.py beside the page
    <!-- roofline:calculator NAME example=KEY --> the same, with a button loading page.py's EXAMPLES[KEY]
    <!-- roofline:quiz -->                       the graded quiz quiz.py beside the page

- on_post_page:    on a page with a widget, ``<link rel="modulepreload">`` for the widget
                   modules that main.mjs imports and everything they import, so
                   they download while the page is parsed instead of after it, and
                   Python's start (runtime.mjs) is not held up by them.

A bad marker, a calculator that breaks its contract, or a view whose answer for the
defaults misses an output stops the build with one line naming the page, the marker
and the fix (``sitegen.markers``; a calculator declares itself with ``roofline.forms``).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.utils import get_relative_url

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PYODIDE = ROOT / "node_modules" / "pyodide"
#: What Pyodide needs to boot, and nothing else (the npm package also holds maps and typings).
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
RUNTIME_DIR = "assets/runtime"
#: The page-side runtime modules; main.mjs (loaded on every page) imports the rest on widget pages.
RUNTIME_JS = DOCS / "javascripts" / "runtime"
#: ``import("./x.mjs")`` in main.mjs, and ``import ... from "./x.mjs"`` in the modules it loads.
DYNAMIC_IMPORT = re.compile(r'\bimport\(\s*"\./([\w.-]+\.mjs)"\s*\)')
STATIC_IMPORT = re.compile(r'^import\s[^;]*?\bfrom\s+"\./([\w.-]+\.mjs)"', re.M)
#: Markup only widget pages have (sitegen/widgets.py).
WIDGET = re.compile(r"<[^>]+\sdata-rf-(?:cell|calc|quiz)[\s=>]")

log = logging.getLogger("mkdocs.hooks.runtime")
_state: dict[str, Any] = {}


def on_config(config: Any) -> None:
    import build_snapshot
    import build_wheel

    # The package, helper modules and caches of the checkout being built (a test's copy, say),
    # whichever checkout the scripts were imported from.
    try:
        wheel = build_wheel.build_wheel(root=ROOT)
    except build_wheel.WheelError as error:
        raise PluginError(f"runtime hook: {error}") from None
    digest = build_wheel.source_digest(ROOT)[:12]
    missing = [name for name in PYODIDE_FILES if not (PYODIDE / name).is_file()]
    if missing:
        raise PluginError(f"node_modules/pyodide lacks {', '.join(missing)}; run `make setup` (npm ci)")
    try:
        snapshot = build_snapshot.build_snapshot(wheel, sorted(RUNTIME_JS.glob("*.py")))
        # Read once: the site serves these bytes and the pages name their digest, so another build
        # sharing the cache (a test's, a second checkout's) that replaces or prunes the cached file
        # meanwhile cannot make the two disagree.
        snapshot_bytes = snapshot.read_bytes()
        # What the worker checks the restored memory against (boot.mjs), named in every page.
        snapshot_digest = build_snapshot.content_digest(snapshot, snapshot_bytes)
        # What a copy of the raw snapshot kept by an earlier page must match (snapshot_store.mjs).
        raw_digest = build_snapshot.content_digest(snapshot, snapshot_bytes, "rawSha256")
    except OSError as error:
        raise PluginError(f"runtime hook: the Pyodide snapshot could not be read ({error}); build again") from None
    except build_snapshot.SnapshotError as error:
        raise PluginError(f"runtime hook: {error}") from None
    from sitegen.markers import Markers

    # Pyodide's files under its version: the name never serves other bytes, so a browser may keep
    # them for a year (scripts/serve.py, hooks/headers.py) and a second chapter, or the
    # calculators' worker, reads them from its cache instead of asking again.
    pyodide_version = json.loads((PYODIDE / "package.json").read_text(encoding="utf-8"))["version"]
    _state.clear()
    _state.update(
        pyodide_uri=f"{RUNTIME_DIR}/pyodide/{pyodide_version}/",
        wheel=wheel,
        wheel_uri=f"{RUNTIME_DIR}/wheels/{digest}/{wheel.name}",
        snapshot=snapshot_bytes,
        snapshot_uri=f"{RUNTIME_DIR}/snapshots/{snapshot.name}",  # the name is its inputs' digest
        preloads=widget_modules(),  # read once per build, put in every widget page's head
    )
    _state["markers"] = Markers(
        docs=Path(config["docs_dir"]),
        wheel_uri=_state["wheel_uri"],
        snapshot_uri=_state["snapshot_uri"],
        pyodide_uri=_state["pyodide_uri"],
        snapshot_digest=snapshot_digest,
        snapshot_raw_digest=raw_digest,
        version=digest,
        # What the worker fetches (the modules it imports aside), for its progress line's total.
        sizes={
            _state["wheel_uri"]: wheel.stat().st_size,
            _state["snapshot_uri"]: len(snapshot_bytes),
            **{
                _state["pyodide_uri"] + name: (PYODIDE / name).stat().st_size
                for name in PYODIDE_FILES
                if name.endswith((".wasm", ".zip", ".json"))  # the .mjs are imported, not fetched
            },
        },
    )
    log.info("runtime: %s, Pyodide from node_modules", _state["wheel_uri"])


def on_files(files: Files, config: Any) -> Files:
    served = {_state["wheel_uri"]: _state["wheel"]}
    served.update({_state["pyodide_uri"] + name: PYODIDE / name for name in PYODIDE_FILES})
    for uri, path in served.items():
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    files.append(File.generated(config, _state["snapshot_uri"], content=_state["snapshot"]))
    return files


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    from sitegen.markers import MarkerError

    try:
        return _state["markers"].replace(html, page.file.src_uri, page.url)
    except MarkerError as error:
        raise PluginError(str(error)) from None


def widget_modules(directory: Path = RUNTIME_JS) -> list[str]:
    """The modules main.mjs imports on a widget page, then everything they import, each once (file names)."""
    order: list[str] = []
    waiting = DYNAMIC_IMPORT.findall((directory / "main.mjs").read_text(encoding="utf-8"))
    while waiting:
        name = waiting.pop(0)
        if name in order:
            continue
        order.append(name)
        waiting.extend(STATIC_IMPORT.findall((directory / name).read_text(encoding="utf-8")))
    return order


def on_post_page(output: str, page: Any, config: Any) -> str:
    if not WIDGET.search(output) or "</head>" not in output:
        return output
    links = "".join(
        f'<link rel="modulepreload" href="{get_relative_url(f"javascripts/runtime/{name}", page.url)}">'
        for name in _state["preloads"]
    )
    return output.replace("</head>", links + "</head>", 1)
