"""The hang guard (``hang_guard.py``): a test that never returns is named, with the stack where it
waits, and fails; the run goes on and ends. Each case runs pytest on a small test file in a
subprocess, with this repository's conftest.py as a plugin (its ``browser`` and the guard) and a
limit of a few seconds, under pytest-xdist as ``make test`` runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from chromium import CHROMIUM_PATH
from support import run_pytest

pytestmark = [pytest.mark.slow, pytest.mark.cost(15)]


def test_a_test_waiting_on_a_socket_fails_named_with_its_stack_and_the_run_goes_on(tmp_path: Path) -> None:
    done = run_pytest(
        tmp_path,
        """
        import socket

        def test_waits_forever():
            quiet, _ = socket.socketpair()
            quiet.recv(1)  # nothing is ever sent

        def test_after_it():
            assert True
        """,
        "-o",
        "hang_guard_s=3",
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "1 failed, 1 passed" in out, out
    assert "hang guard: test_it.py::test_waits_forever is still running after 3 s" in out, out
    assert 'test_it.py", line 6 in test_waits_forever' in out, out  # the stack, at the recv
    assert "TestHung: test_it.py::test_waits_forever was still running" in out, out


@pytest.mark.browser
@pytest.mark.cost(25)
@pytest.mark.skipif(not CHROMIUM_PATH.exists(), reason="Debian's chromium is not installed (.ci/run installs it)")
def test_a_test_waiting_on_the_browser_fails_and_the_next_gets_a_new_browser(tmp_path: Path) -> None:
    done = run_pytest(
        tmp_path,
        """
        def test_the_browser_starts(browser):  # its launch, seconds on a loaded machine, is timed here
            browser.new_page().close()

        def test_waits_forever(browser):
            page = browser.new_page()
            page.evaluate("new Promise(() => {})")  # never settles; evaluate has no timeout

        def test_after_it(browser):
            page = browser.new_page()
            assert page.evaluate("6 * 7") == 42
            page.close()
        """,
        "-o",
        "hang_guard_s=15",  # above a launch on a loaded machine: the one after the kill is timed too
        workers=1,  # the test after the hang meets the browser the guard killed
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "1 failed, 2 passed" in out, out
    assert "hang guard: test_it.py::test_waits_forever is still running" in out, out
    assert "the main thread waits on Playwright; killing this process's Chromium" in out, out
    assert "closed" in out, out  # Playwright's error: the browser has been closed


def test_time_waiting_in_an_extended_block_is_not_counted_up_to_its_own_bound(tmp_path: Path) -> None:
    """The tests' site is built by one worker while the others wait (``conftest.site``): minutes under
    load, and not a hang. A block of ``hang_guard.extended`` is not counted, up to its own bound."""
    done = run_pytest(
        tmp_path,
        """
        import time

        import hang_guard

        def test_waits_for_a_build_longer_than_the_limit():
            with hang_guard.extended(30):
                time.sleep(4)
            time.sleep(1)  # and the test still has the rest of its own limit afterwards

        def test_an_extended_block_that_outlives_its_bound_is_a_hang():
            with hang_guard.extended(2):
                time.sleep(60)
        """,
        "-o",
        "hang_guard_s=3",
    )
    out = done.stdout + done.stderr
    assert "1 failed, 1 passed" in out, out
    assert "test_an_extended_block_that_outlives_its_bound_is_a_hang is still running after 5 s" in out, out
