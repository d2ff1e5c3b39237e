"""The worker's Python side of a Run, in CPython: isolation between Runs, stdin, KeyboardInterrupt.

The same module runs in Pyodide (tests/node/golden.test.mjs repeats the isolation case
there, and tests/test_browser.py through the page); here each case is quick to check.
"""

from __future__ import annotations

import json
import sys

import pytest
import roofline_cell as cell  # the page's helper module, docs/javascripts/runtime/ (pytest's pythonpath)


def run(source: str, stop_pressed=None) -> tuple[dict, str]:
    printed: list[str] = []
    answer = json.loads(cell.run(source, "cell.py", lambda _stream, text: printed.append(text), stop_pressed))
    return answer, "".join(printed)


@pytest.mark.parametrize(
    "hostile",
    [
        "from roofline.precisions import BYTES_PER_VALUE; BYTES_PER_VALUE['bf16'] = 1.0",
        "import roofline.precisions as p; p.BYTES_PER_VALUE = {'bf16': 1.0}",
        "import builtins; builtins.print = lambda *a, **k: None",
        "import builtins; del builtins.len",
        "import json; json.dumps = None",
        "import sys; sys.path.insert(0, '/nowhere'); sys.modules['json'] = None",
    ],
)
def test_a_run_cannot_change_later_runs_or_the_calculator(hostile: str) -> None:
    from roofline.precisions import BYTES_PER_VALUE

    path = list(sys.path)
    assert run(hostile)[0] == {"status": "ok"}
    assert BYTES_PER_VALUE["bf16"] == 2.0 and json.dumps(1) == "1" and sys.path == path
    probe = (
        "import json\nfrom roofline.precisions import BYTES_PER_VALUE\nprint(len(json.dumps(BYTES_PER_VALUE['bf16'])))"
    )
    assert run(probe) == ({"status": "ok"}, "3\n")


def test_each_run_gets_its_own_copy_of_the_package() -> None:
    import roofline

    answer, printed = run("import roofline\nprint(id(roofline))\n")
    assert answer == {"status": "ok"} and printed != f"{id(roofline)}\n"
    assert sys.modules["roofline"] is roofline


def test_a_module_a_run_imports_is_gone_after_it() -> None:
    sys.modules.pop("colorsys", None)
    assert run("import colorsys")[0] == {"status": "ok"}
    assert "colorsys" not in sys.modules


@pytest.mark.parametrize(
    "call", ["input('Your name? ')", "import sys; sys.stdin.read()", "import sys; sys.stdin.readline()"]
)
def test_reading_stdin_ends_with_an_eoferror_that_says_why(call: str) -> None:
    answer, _ = run(call)
    assert answer["status"] == "error"
    assert (
        answer["traceback"]
        .rstrip()
        .endswith(
            "EOFError: input() has nothing to read: a program on this page gets no keyboard input."
            " Set the value in the code instead, then press Run."
        )
    )
    assert "roofline_cell" not in answer["traceback"]


def test_keyboard_interrupt_is_stop_only_when_stop_was_pressed() -> None:
    raised = "raise KeyboardInterrupt('by hand')"
    answer, _ = run(raised, stop_pressed=lambda: False)
    assert answer["status"] == "error" and answer["traceback"].endswith("KeyboardInterrupt: by hand\n")
    assert run(raised, stop_pressed=lambda: True)[0] == {"status": "stopped"}


@pytest.mark.parametrize(
    ("code", "status"), [("raise SystemExit", "ok"), ("raise SystemExit(0)", "ok"), ("raise SystemExit(3)", "error")]
)
def test_system_exit_ends_the_program_as_python_would(code: str, status: str) -> None:
    assert run(code)[0]["status"] == status


@pytest.mark.parametrize("writes_no_bytecode", [True, False])
def test_preparing_a_package_copy_writes_bytecode_and_puts_the_setting_back(writes_no_bytecode, monkeypatch) -> None:
    """prepare() lets Python write .pyc files for the package copy, so the next copy is read,
    not compiled; the reader's own setting is what it was."""
    monkeypatch.setattr(sys, "dont_write_bytecode", writes_no_bytecode)
    seen = []
    real_import = cell.importlib.import_module

    def import_module(name: str):
        seen.append(sys.dont_write_bytecode)
        return real_import(name)

    monkeypatch.setattr(cell.importlib, "import_module", import_module)
    monkeypatch.setattr(cell, "_spare", None)
    cell.prepare()
    assert seen and not any(seen)  # bytecode was written for every import of the copy
    assert sys.dont_write_bytecode is writes_no_bytecode
    assert cell._spare and cell._spare["roofline"] is not sys.modules["roofline"]


def test_writing_the_bytecode_leaves_a_pyc_for_every_module_that_importlib_accepts(tmp_path, monkeypatch) -> None:
    """package_sources() and write_bytecode() (the Run worker's idle tasks, one file each) compile the
    package where it is installed, so the next copy's import reads .pyc files instead of compiling:
    every module gets one that importlib accepts for its source, by the source's hash."""
    import importlib.util
    import shutil
    from pathlib import Path

    package = tmp_path / "roofline"
    installed = Path(cell.importlib.import_module("roofline").__file__).parent
    shutil.copytree(installed, package, ignore=shutil.ignore_patterns("__pycache__"))
    spec = importlib.util.spec_from_file_location(
        "roofline", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    monkeypatch.setattr(cell.importlib.util, "find_spec", lambda name: spec if name == "roofline" else None)
    sources = cell.package_sources()
    assert sources == sorted(str(path) for path in package.rglob("*.py")) and sources
    for source in sources:
        cell.write_bytecode(source)
    for source in map(Path, sources):
        header = Path(importlib.util.cache_from_source(str(source))).read_bytes()[:16]
        assert header[:4] == importlib.util.MAGIC_NUMBER
        assert int.from_bytes(header[4:8], "little") == 0b11  # checked by the source's hash
        assert header[8:16] == importlib.util.source_hash(source.read_bytes())
