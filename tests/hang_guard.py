"""A pytest plugin (the root conftest.py loads it): no test may hang the run.

A test that never returns holds its pytest-xdist worker, and the run never ends: CI once stopped
``make test`` after 90 minutes with two tests unreported and no word of which. Here a test (its
setup, call and teardown together) that is still running after ``hang_guard_s`` seconds (an ini
option; the default is far above the slowest test on a loaded machine):

1. is named, with every thread's stack, on stderr (pytest captures it into the test's report);
2. is made to fail, so that the run goes on and ends with the usual summary:
   - when the main thread waits on Playwright (a call with no timeout of its own, such as
     ``evaluate`` or ``close``), this process's Chromium is killed: the call raises "browser has
     been closed", and conftest's ``browser`` launches a new one for the tests after;
   - otherwise (a socket, a subprocess, a lock), or when that did not end it within
     ``GRACE_S``, SIGUSR1 makes the main thread raise ``TestHung`` where it waits. Playwright
     needs that too at times: a ``new_page`` in flight when Chromium dies never settled in 3 of 14
     kills here (the browser was gone and ``is_connected()`` False), and after the raise the same
     Playwright launched a new browser and went on. The kill comes first all the same: it ends a
     hung renderer, and Playwright's usual answer to a dead browser is the error itself.

The worker is never killed: pytest-xdist 3.8 with ``--dist loadgroup`` hangs itself when it
replaces a crashed worker (pytest-dev/pytest-xdist#1323), which would turn one hang into another.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

#: Seconds the guard waits, after killing Chromium, for the test to end before raising in it (a
#: call that notices the dead browser raises within a second).
GRACE_S = 10.0
#: The default for ``hang_guard_s``: eight times the slowest test of a quiet fresh-clone run on two
#: cores (38 s, a page-quality share), so a loaded machine never meets it, and a hang costs the
#: run five minutes, not CI's ninety.
DEFAULT_HANG_S = 300.0


class TestHung(Exception):
    """Raised in the main thread of a test the guard found hung."""

    __test__ = False  # a name pytest would otherwise try to collect


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("hang_guard_s", "seconds after which a test is reported as hung and made to fail", default=None)


def pytest_configure(config: pytest.Config) -> None:
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGUSR1, _raise_hung)


#: The test now running in this process, and the one the guard found hung: the signal raises only
#: while they are the same (the test may end between the guard's last look and the signal).
_running: str | None = None
_hung: str | None = None


#: The guard of the test now running in this process (see ``extended``).
_guard: _Guard | None = None


@contextmanager
def extended(seconds: float) -> Iterator[None]:
    """Time spent in this block, up to ``seconds``, does not count against the test's limit.

    For set-up whose length is another's doing: the tests' site, built once a run by whichever
    worker comes first while the others wait on it (minutes on a loaded machine, and its build has
    a timeout of its own). A test waiting on it has not hung; one whose block outlives ``seconds``
    has, and is ended as any other."""
    guard = _guard
    if guard is None:
        yield
        return
    remaining = guard.deadline - time.monotonic()
    guard.deadline = time.monotonic() + seconds + remaining
    try:
        yield
    finally:
        guard.deadline = time.monotonic() + remaining


def _raise_hung(signum: int, frame: object) -> None:
    if _running is not None and _running == _hung:
        raise TestHung(f"{_hung} was still running after the hang guard's limit (every thread's stack is on stderr)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    global _running, _guard
    limit = float(item.config.getini("hang_guard_s") or DEFAULT_HANG_S)
    _running = item.nodeid
    guard = _guard = _Guard(item.nodeid, limit)
    guard.start()
    try:
        return (yield)
    finally:
        _running = _guard = None
        guard.stop()


class _Guard(threading.Thread):
    """Watches one test from another thread, and ends it if it outlives ``limit`` seconds."""

    def __init__(self, nodeid: str, limit: float) -> None:
        super().__init__(name="hang-guard", daemon=True)
        self.nodeid = nodeid
        self.limit = limit
        self.deadline = time.monotonic() + limit  # moved on by ``extended``
        self.done = threading.Event()

    def stop(self) -> None:
        self.done.set()

    def run(self) -> None:
        started = time.monotonic()
        while (left := self.deadline - time.monotonic()) > 0:
            if self.done.wait(left):
                return
        ran = time.monotonic() - started
        _say(f"\nhang guard: {self.nodeid} is still running after {ran:.0f} s; every thread's stack:\n")
        faulthandler.dump_traceback(file=sys.__stderr__, all_threads=True)
        global _hung
        _hung = self.nodeid
        if _in_playwright():
            # Said before the kill: the test may end as soon as Chromium dies, and with it the capture
            # that puts this text in its report.
            _say("hang guard: the main thread waits on Playwright; killing this process's Chromium\n")
            _say(f"hang guard: killed Chromium {_kill_chromium()}\n")
            if self.done.wait(GRACE_S):
                return
        # Raise where the main thread waits: once it is out of Playwright, or anyway after GRACE_S;
        # again every GRACE_S, in case the test catches the first.
        since = time.monotonic()
        while not self.done.is_set():
            if not _in_playwright() or time.monotonic() - since > GRACE_S:
                signal.pthread_kill(threading.main_thread().ident, signal.SIGUSR1)
                since = time.monotonic()
                self.done.wait(GRACE_S)
            else:
                self.done.wait(0.5)


def _say(text: str) -> None:
    sys.__stderr__.write(text)
    sys.__stderr__.flush()


def _main_stack_files() -> list[str]:
    """The source files of the main thread's stack now, innermost first."""
    frame = sys._current_frames().get(threading.main_thread().ident)
    files = []
    while frame is not None:
        files.append(frame.f_code.co_filename)
        frame = frame.f_back
    return files


def _in_playwright() -> bool:
    return any(f"{os.sep}playwright{os.sep}" in name for name in _main_stack_files())


def _kill_chromium() -> list[int]:
    """SIGKILL every Chromium process this process started (through Playwright's driver), again
    until none is left: one may be forking another as it dies. Their pids."""
    killed: list[int] = []
    for _ in range(10):
        alive = _chromium_of_this_process()
        if not alive:
            break
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass  # ended meanwhile
        killed += [pid for pid in alive if pid not in killed]
        time.sleep(0.2)
    return killed


def _chromium_of_this_process() -> list[int]:
    """The pids of the Chromium processes descended from this one, read from /proc."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # ended meanwhile
        # "pid (name) state ppid ...": the name may hold spaces and parentheses.
        name, _, rest = stat[stat.index("(") + 1 :].rpartition(")")
        state, parent = rest.split()[:2]
        names[int(entry.name)] = name
        if state == "Z":
            continue  # a zombie: dead already, waiting for its parent to read its status
        children.setdefault(int(parent), []).append(int(entry.name))
    found, frontier = [], [os.getpid()]
    while frontier:
        for child in children.get(frontier.pop(), []):
            frontier.append(child)
            if names.get(child) == "chromium":
                found.append(child)
    return found
