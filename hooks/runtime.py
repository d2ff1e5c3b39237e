"""MkDocs hook for the in-page Python runtime: the Press Run cell and the calculator.

- on_config:       build the package's pure wheel (scripts/build_wheel.py; cached by
                   source digest) and the Pyodide memory snapshot the worker starts from
                   (scripts/build_snapshot.py; cached by input digest), and compute the
                   calculator's defaults with the package.
- on_files:        serve the wheel, the snapshot and Pyodide's runtime files (from
                   node_modules, pinned by package-lock.json) under ``assets/runtime/``.
- on_page_content: replace ``<!-- roofline:run-cell -->`` and ``<!-- roofline:calculator -->``
                   with the widgets. The chapter must hold both, or the build fails.

The Run cell shows ``docs/programs/h100_decode_prefill.py`` exactly as committed;
the browser runs that text, and ``tests/test_program.py`` runs the same file.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.utils import get_relative_url

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = "chapters/prefill-vs-decode.md"
PROGRAM = ROOT / "docs" / "programs" / "h100_decode_prefill.py"
CALCULATOR_MODULE = ROOT / "docs" / "javascripts" / "runtime" / "roofline_calculator.py"
PYODIDE = ROOT / "node_modules" / "pyodide"
#: What Pyodide needs to boot, and nothing else (the npm package also holds maps and typings).
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
RUNTIME_DIR = "assets/runtime"
MARKERS = {"run-cell": "<!-- roofline:run-cell -->", "calculator": "<!-- roofline:calculator -->"}

log = logging.getLogger("mkdocs.hooks.runtime")
_state: dict[str, Any] = {}


def _load(name: str, path: Path) -> ModuleType:
    """Import ``path`` afresh (MkDocs loads hooks by path, and `mkdocs serve` should see edits)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


runtime_markup = _load("runtime_markup", Path(__file__).resolve().parent / "runtime_markup.py")


def on_config(config: Any) -> None:
    build_wheel = _load("build_wheel", ROOT / "scripts" / "build_wheel.py")
    try:
        wheel = build_wheel.build_wheel()
    except build_wheel.WheelError as error:
        raise PluginError(f"runtime hook: {error}") from None
    digest = build_wheel.source_digest()[:12]
    missing = [name for name in PYODIDE_FILES if not (PYODIDE / name).is_file()]
    if missing:
        raise PluginError(f"node_modules/pyodide lacks {', '.join(missing)}; run `make setup` (npm ci)")
    build_snapshot = _load("build_snapshot", ROOT / "scripts" / "build_snapshot.py")
    try:
        snapshot = build_snapshot.build_snapshot(wheel)
    except build_snapshot.SnapshotError as error:
        raise PluginError(f"runtime hook: {error}") from None
    calculator = _load("roofline_calculator", CALCULATOR_MODULE)
    options = calculator.form_options()
    _state.update(
        wheel=wheel,
        wheel_uri=f"{RUNTIME_DIR}/wheels/{digest}/{wheel.name}",
        snapshot=snapshot,
        snapshot_uri=f"{RUNTIME_DIR}/snapshots/{snapshot.name}",  # the name is its inputs' digest
        version=digest,
        options=options,
        initial=calculator.view(**options["defaults"]),
        program=PROGRAM.read_text(encoding="utf-8"),
    )
    log.info("runtime: %s, Pyodide from node_modules", _state["wheel_uri"])


def on_files(files: Files, config: Any) -> Files:
    served = {_state["wheel_uri"]: _state["wheel"], _state["snapshot_uri"]: _state["snapshot"]}
    served.update({f"{RUNTIME_DIR}/pyodide/{name}": PYODIDE / name for name in PYODIDE_FILES})
    for uri, path in served.items():
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    if files.get_file_from_path(CHAPTER) is None:
        raise PluginError(f"runtime hook: docs/{CHAPTER} is missing; it holds the Run cell and the calculator")
    return files


def replace_markers(html: str, page_uri: str, page_url: str) -> str:
    """``html`` with each marker replaced by its widget; the chapter must contain both markers."""
    links = runtime_markup.RuntimeLinks(
        wheel=get_relative_url(_state["wheel_uri"], page_url),
        snapshot=get_relative_url(_state["snapshot_uri"], page_url),
        version=_state["version"],
    )
    widgets = {
        "run-cell": lambda: runtime_markup.run_cell(_state["program"], PROGRAM.name, links),
        "calculator": lambda: runtime_markup.calculator(_state["options"], _state["initial"], links),
    }
    for name, marker in MARKERS.items():
        count = html.count(marker)
        if count == 0 and page_uri == CHAPTER:
            raise PluginError(f"runtime hook: docs/{CHAPTER} lacks the marker line {marker}")
        if count > 1:
            raise PluginError(f"runtime hook: docs/{page_uri} has {marker} {count} times; one widget per page")
        if count:
            html = html.replace(marker, widgets[name]())
    return html


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    return replace_markers(html, page.file.src_uri, page.url)
