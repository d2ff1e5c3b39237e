"""Runs a reader's program for a Run cell, inside Pyodide's worker, isolated from every other widget.

``run`` executes the source as ``__main__`` in a fresh namespace, streams what it
prints through ``emit(stream, text)`` as it is written, and reports how it ended.

Isolation. All widgets of a page share one Python, so a program must not change
what later Runs or the calculators compute:

- the program imports its own copy of the ``roofline`` package (``prepare``
  imports it ahead of time, while the page is idle), never the calculators' copy,
  so mutating ``roofline.precisions.BYTES_PER_VALUE`` dies with the Run;
- every module that existed before the Run (``builtins``, ``json``, ``sys``…) gets
  its top-level names back afterwards, and ``sys.modules`` and ``sys.path`` their
  entries, so ``builtins.print = ...`` or ``json.dumps = ...`` does not outlive it.

What a module-level snapshot cannot see (a class attribute changed in place, a
recursion limit, a thread) is undone by Reset, which restarts the worker.

A reader's exception comes back as the traceback CPython would print, starting
at the reader's own file: the frames of this module and of Pyodide's machinery
(``_pyodide/_base.py``) are left out, while frames inside the ``roofline``
package stay, since they explain the error.
"""

from __future__ import annotations

import builtins
import importlib
import importlib.util
import io
import json
import linecache
import py_compile
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, TracebackType

Emit = Callable[[str, str], None]


class _Stream(io.TextIOBase):
    """A text stream whose every write goes straight to the worker, which passes it to the page."""

    def __init__(self, name: str, emit: Emit) -> None:
        super().__init__()
        self._name = name
        self._emit = emit

    @property
    def encoding(self) -> str:
        return "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if text:
            self._emit(self._name, text)
        return len(text)

    def flush(self) -> None:
        """``print(..., flush=True)`` and ``sys.stdout.flush()``: an empty write tells the page to show it all now."""
        self._emit(self._name, "")


class _NoInput(io.TextIOBase):
    """Standard input of a page: ``input()`` ends with EOFError that says why, instead of an OS error."""

    MESSAGE = (
        "input() has nothing to read: a program on this page gets no keyboard input."
        " Set the value in the code instead, then press Run."
    )

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> str:
        raise EOFError(self.MESSAGE)

    def readline(self, size: int | None = -1) -> str:
        raise EOFError(self.MESSAGE)


PACKAGE = "roofline"
_spare: dict[str, ModuleType] | None = None


def _package_modules() -> dict[str, ModuleType]:
    return {name: module for name, module in sys.modules.items() if name.split(".")[0] == PACKAGE}


def _swap_package(modules: dict[str, ModuleType]) -> dict[str, ModuleType]:
    """Put ``modules`` in ``sys.modules`` as the package; return the package's modules it replaced."""
    previous = _package_modules()
    for name in previous:
        del sys.modules[name]
    sys.modules.update(modules)
    return previous


def package_sources() -> list[str]:
    """The package's source files, each a path, for ``write_bytecode``.

    A Python restored from the snapshot holds the first Run's copy of the package in memory,
    but its file system has only the wheel's sources, so the next copy (``prepare``, after the
    first Run or a Stop) would compile every module: 1–2.5 s on a loaded machine, which a Run
    pressed right after Stop waited for. The Run worker compiles them one file a task while it
    is idle, so a Run pressed meanwhile waits for one file at most. (Compiling them at build time
    into the snapshot's memory instead grew Python's heap by 6 MB, and the restore then failed.)
    """
    spec = importlib.util.find_spec(PACKAGE)
    folders = (spec.submodule_search_locations or []) if spec else []
    return sorted(str(path) for folder in folders for path in Path(folder).rglob("*.py"))


def write_bytecode(source: str) -> None:
    """Compile ``source`` into the .pyc its next import reads.

    Checked by the source's hash, not its time, so a Run that edits a source in the same second
    still gets its edit.
    """
    py_compile.compile(
        source,
        cfile=importlib.util.cache_from_source(source),
        doraise=False,
        quiet=2,
        invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH,
    )


def prepare() -> None:
    """Import a fresh copy of the package (and read its specs) for the next Run, unless one is ready.

    The worker calls this when it is idle, so a Run does not wait for the import.
    """
    global _spare
    if _spare is not None:
        return
    originals = _swap_package({})
    # Pyodide writes no bytecode by default; for these imports it does, so every copy
    # after the first reads each module's .pyc instead of compiling its source again
    # (here about 55 ms a copy instead of 100-225).
    writes_no_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, False
    try:
        package = importlib.import_module(PACKAGE)
        importlib.import_module(f"{PACKAGE}.sweep")
        package.builtin_specs()
        _spare = _package_modules()
    finally:
        sys.dont_write_bytecode = writes_no_bytecode
        _swap_package(originals)


def _put_back(namespace: dict[str, object], saved: dict[str, object]) -> None:
    """Make ``namespace`` hold exactly ``saved`` again, using no builtin name (a program may delete any)."""
    for name in [name for name in namespace if name not in saved]:
        del namespace[name]
    for name, value in saved.items():
        if namespace.get(name, _MISSING) is not value:
            namespace[name] = value


class _Snapshot:
    """The top-level names of every loaded module, and the lists in ``sys`` a program may change."""

    LISTS = ("path", "meta_path", "path_hooks")

    def __init__(self) -> None:
        self.modules = dict(sys.modules)
        # This module's own globals (the spare package) are its business, not the program's.
        self.namespaces = [
            (module.__dict__, dict(module.__dict__))
            for module in self.modules.values()
            if isinstance(module, ModuleType) and module.__dict__ is not globals()
        ]
        self.builtins = dict(builtins.__dict__)
        self.lists = {name: list(getattr(sys, name)) for name in self.LISTS}

    def restore(self) -> None:
        _put_back(builtins.__dict__, self.builtins)  # first: what follows may use builtins
        for namespace, saved in self.namespaces:
            if len(namespace) == len(saved) and all(namespace.get(k, _MISSING) is v for k, v in saved.items()):
                continue  # nearly always: a dict compared by identity, cheaper than rebuilding it
            _put_back(namespace, saved)
        _put_back(sys.modules, self.modules)
        for name, saved_list in self.lists.items():
            getattr(sys, name)[:] = saved_list


_MISSING = object()


def _from_reader_frame(tb: TracebackType | None, filename: str) -> TracebackType | None:
    """Skip the leading frames that are not the reader's file (this runner, exec, Pyodide)."""
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    return tb


def _without_runtime_frames(tb: TracebackType | None) -> TracebackType | None:
    """Cut the chain where it enters this module (the page's stdin raising EOFError for ``input()``)."""
    head = tb
    while tb is not None and tb.tb_next is not None:
        if tb.tb_next.tb_frame.f_code.co_filename == __file__:
            tb.tb_next = None
        tb = tb.tb_next
    return head


def format_error(error: BaseException, filename: str) -> str:
    """The traceback of ``error`` as CPython prints it, from the reader's first frame on."""
    error.__traceback__ = _without_runtime_frames(_from_reader_frame(error.__traceback__, filename))
    return "".join(traceback.format_exception(error))


def run(source: str, filename: str, emit: Emit, stop_pressed: Callable[[], bool] | None = None) -> str:
    """Execute ``source`` as a program named ``filename``; answer JSON ``{"status": ...}``.

    status is ``ok``, ``error`` (with ``traceback``) or ``stopped``: the reader
    pressed Stop, which raises KeyboardInterrupt through Pyodide's interrupt buffer
    and sets the flag ``stop_pressed`` reads. A KeyboardInterrupt the program
    raises itself is an error like any other, with its traceback. The traceback
    is formatted after the state is restored, with the runtime's own modules.
    """
    global _spare
    # Registering the source lets tracebacks quote the reader's lines, as they would from a file.
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    prepare()  # at once, if the idle-time import has not happened yet
    snapshot = _Snapshot()
    _swap_package(_spare or {})
    _spare = None
    namespace = {"__name__": "__main__", "__file__": filename, "__builtins__": builtins}
    failure: BaseException | None = None
    sys.stdout, sys.stderr = _Stream("stdout", emit), _Stream("stderr", emit)
    sys.stdin = _NoInput()
    try:
        exec(compile(source, filename, "exec"), namespace)
    except BaseException as error:  # the reader's program may raise anything; report it, as python would
        failure = error
    finally:
        snapshot.restore()  # sys.stdout and sys.stderr included
    if failure is None:
        return json.dumps({"status": "ok"})
    if isinstance(failure, KeyboardInterrupt) and stop_pressed is not None and stop_pressed():
        return json.dumps({"status": "stopped"})
    if isinstance(failure, SystemExit) and failure.code in (None, 0):
        return json.dumps({"status": "ok"})
    return json.dumps({"status": "error", "traceback": format_error(failure, filename)})
