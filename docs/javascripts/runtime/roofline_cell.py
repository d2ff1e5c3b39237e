"""Runs a reader's program for the Run cell, inside Pyodide's worker.

``run`` executes the source as ``__main__`` in a fresh namespace, streams what it
prints through ``emit(stream, text)`` as it is written, and reports how it ended.
A reader's exception comes back as the traceback CPython would print, starting
at the reader's own file: the frames of this module and of Pyodide's machinery
(``_pyodide/_base.py``) are left out, while frames inside the ``roofline``
package stay, since they explain the error.
"""

from __future__ import annotations

import io
import json
import linecache
import sys
import traceback
from collections.abc import Callable
from types import TracebackType

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


def _from_reader_frame(tb: TracebackType | None, filename: str) -> TracebackType | None:
    """Skip the leading frames that are not the reader's file (this runner, exec, Pyodide)."""
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    return tb


def format_error(error: BaseException, filename: str) -> str:
    """The traceback of ``error`` as CPython prints it, from the reader's first frame on."""
    error.__traceback__ = _from_reader_frame(error.__traceback__, filename)
    return "".join(traceback.format_exception(error))


def run(source: str, filename: str, emit: Emit) -> str:
    """Execute ``source`` as a program named ``filename``; answer JSON ``{"status": ...}``.

    status is ``ok``, ``error`` (with ``traceback``) or ``stopped`` (the reader
    pressed Stop, which raises KeyboardInterrupt through Pyodide's interrupt buffer).
    """
    # Registering the source lets tracebacks quote the reader's lines, as they would from a file.
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace = {"__name__": "__main__", "__file__": filename, "__builtins__": __builtins__}
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Stream("stdout", emit), _Stream("stderr", emit)
    try:
        exec(compile(source, filename, "exec"), namespace)
    except KeyboardInterrupt:
        return json.dumps({"status": "stopped"})
    except SystemExit as exit_:
        if exit_.code in (None, 0):
            return json.dumps({"status": "ok"})
        return json.dumps({"status": "error", "traceback": format_error(exit_, filename)})
    except BaseException as error:  # the reader's program may raise anything; report it, as python would
        return json.dumps({"status": "error", "traceback": format_error(error, filename)})
    finally:
        sys.stdout, sys.stderr = saved
    return json.dumps({"status": "ok"})
