"""MkDocs hook for the in-page Python runtime: Run cells and calculators, on any page.

- on_config:       build the package's pure wheel (scripts/build_wheel.py; cached by
                   source digest) and the Pyodide memory snapshot the worker starts from
                   (scripts/build_snapshot.py; cached by input digest).
- on_files:        serve the wheel, the snapshot and Pyodide's runtime files (from
                   node_modules, pinned by package-lock.json) under ``assets/runtime/``.
- on_page_content: replace each marker line with its widget:

    <!-- roofline:run-cell programs/NAME.py -->   a Run cell showing docs/programs/NAME.py
    <!-- roofline:calculator NAME -->            the calculator docs/calculators/NAME.py

- on_post_page:    on a page with a widget, ``<link rel="modulepreload">`` for the widget
                   modules that main.mjs imports and everything they import, so
                   they download while the page is parsed instead of after it, and
                   Python's start (runtime.mjs) is not held up by them.

A page may hold any number of Run cells and calculators (each calculator once).
A marker that names a missing program or calculator stops the build with one
line naming the page and the marker. A cell shows its program exactly as
committed; the browser runs that text, and ``tests/test_program.py`` runs the
same file. A calculator's first paint is its view of its defaults, computed here
with the package in CPython; see ``docs/calculators/`` for what a calculator holds.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import sys
from pathlib import Path
from types import ModuleType
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
#: Markup only widget pages have (hooks/runtime_markup.py).
WIDGET = re.compile(r"<[^>]+\sdata-rf-(?:cell|calc)[\s=>]")
#: Where calculators live, relative to docs/ (the site serves them there too, for the worker).
CALCULATORS_DIR = "calculators"
#: A marker: the widget kind, then its argument. Matched on the page's HTML, where comments pass through.
MARKER = re.compile(r"<!--\s*roofline:(?P<kind>[\w-]+)(?P<argument>[^>]*?)\s*-->")
KINDS = ("run-cell", "calculator")
CALCULATOR_NAME = re.compile(r"[a-z][a-z0-9_]*")

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
        # What the worker checks the restored memory against (boot.mjs), named in every page.
        snapshot_digest = build_snapshot.content_digest(snapshot)
    except build_snapshot.SnapshotError as error:
        raise PluginError(f"runtime hook: {error}") from None
    _state.clear()
    _state.update(
        wheel=wheel,
        wheel_uri=f"{RUNTIME_DIR}/wheels/{digest}/{wheel.name}",
        snapshot=snapshot,
        snapshot_uri=f"{RUNTIME_DIR}/snapshots/{snapshot.name}",  # the name is its inputs' digest
        snapshot_digest=snapshot_digest,
        version=digest,
        docs=Path(config["docs_dir"]) if config else DOCS,
        calculators={},  # name -> (form, initial view), computed once per build
        preloads=widget_modules(),  # read once per build, put in every widget page's head
    )
    log.info("runtime: %s, Pyodide from node_modules", _state["wheel_uri"])


def on_files(files: Files, config: Any) -> Files:
    served = {_state["wheel_uri"]: _state["wheel"], _state["snapshot_uri"]: _state["snapshot"]}
    served.update({f"{RUNTIME_DIR}/pyodide/{name}": PYODIDE / name for name in PYODIDE_FILES})
    for uri, path in served.items():
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    return files


class MarkerError(PluginError):
    """A marker the build cannot turn into a widget; the message is one line naming page and marker."""


def _program(argument: str, docs: Path) -> tuple[str, str]:
    """``programs/NAME.py`` -> (its text, its path relative to docs/); raises ValueError saying what is wrong."""
    if not argument:
        raise ValueError("names no program; write <!-- roofline:run-cell programs/NAME.py -->")
    relative = Path(argument)
    path = (docs / relative).resolve()
    if relative.is_absolute() or relative.suffix != ".py" or not path.is_relative_to(docs.resolve()):
        raise ValueError("must name a .py file by its path under docs/, such as programs/NAME.py")
    if not path.is_file():
        raise ValueError(f"names a missing program: docs/{argument} does not exist")
    return path.read_text(encoding="utf-8"), relative.as_posix()


def _calculator(argument: str, docs: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """A calculator's form and its view of the defaults; raises ValueError saying what is wrong."""
    if not CALCULATOR_NAME.fullmatch(argument):
        raise ValueError("needs the calculator's name, such as decode_speed (docs/calculators/NAME.py)")
    cached = _state["calculators"].get(argument)
    if cached:
        return cached
    path = docs / CALCULATORS_DIR / f"{argument}.py"
    if not path.is_file():
        known = sorted(p.stem for p in (docs / CALCULATORS_DIR).glob("*.py") if not p.stem.startswith("_"))
        raise ValueError(
            f"names a missing calculator: docs/{CALCULATORS_DIR}/{argument}.py does not exist"
            f" (calculators: {', '.join(known) or 'none'})"
        )
    module = _load(f"roofline_calculator_{argument}", path)
    form = runtime_markup.check_form(module.form())
    initial = module.view(**{field["name"]: field["default"] for field in form["fields"]})
    _state["calculators"][argument] = form, initial
    return form, initial


def replace_markers(html: str, page_uri: str, page_url: str) -> str:
    """``html`` with each marker replaced by its widget; a bad marker raises MarkerError."""
    links = runtime_markup.RuntimeLinks(
        wheel=get_relative_url(_state["wheel_uri"], page_url),
        snapshot=f"{get_relative_url(_state['snapshot_uri'], page_url)}#sha256={_state['snapshot_digest']}",
        version=_state["version"],
    )
    docs: Path = _state["docs"]
    seen: set[str] = set()
    count = 0

    def widget(match: re.Match[str]) -> str:
        nonlocal count
        kind, argument = match.group("kind"), match.group("argument").strip()
        where = f"runtime hook: docs/{page_uri}: {match.group(0)}"
        try:
            if kind == "run-cell":
                source, relative = _program(argument, docs)
                count += 1
                return runtime_markup.run_cell(source, Path(relative).name, links, index=count)
            if kind == "calculator":
                if argument in seen:
                    raise ValueError("appears twice on the page; each calculator once (its inputs live in the URL)")
                seen.add(argument)
                form, initial = _calculator(argument, docs)
                module_url = get_relative_url(f"{CALCULATORS_DIR}/{argument}.py", page_url)
                return runtime_markup.calculator(argument, form, initial, links, module_url)
            raise ValueError(f"is not a widget (use {' or '.join(KINDS)})")
        except ValueError as error:
            raise MarkerError(f"{where} {error}") from None

    return MARKER.sub(widget, html)


def on_page_content(html: str, page: Any, config: Any, files: Files) -> str:
    return replace_markers(html, page.file.src_uri, page.url)


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
