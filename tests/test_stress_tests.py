"""``make test-stress`` (scripts/stress_tests.py): runs pytest beside busy processes, counts, and leaves none behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stress_tests import main, parse

pytestmark = [pytest.mark.slow, pytest.mark.cost(20)]

TESTS = """
import os

def test_passes():
    assert True

def test_fails_the_first_time_only():
    marker = os.path.join(os.path.dirname(__file__), "ran-once")
    first = not os.path.exists(marker)
    open(marker, "a").close()
    assert not first, "fails the first time only"
"""


def _spinners() -> list[int]:
    """Processes running the script's spinner (its code is on their command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"parent, deadline = int(sys.argv[1])" in command:
                found.append(int(entry.name))
    return found


def test_it_reports_each_run_and_the_flake_rate_and_stops_its_spinners(tmp_path, capsys) -> None:
    (tmp_path / "test_flaky.py").write_text(TESTS, encoding="utf-8")
    before = set(_spinners())
    status = main(
        [
            "--runs",
            "2",
            "--busy",
            "1",
            "--workers",
            "1",
            "--marker",
            "",
            "--logs",
            str(tmp_path / "logs"),
            str(tmp_path),
        ]
    )
    out = capsys.readouterr().out
    assert status == 1, out
    assert "run 1: 1 failed, 1 passed in" in out and "run 2: 2 passed in" in out, out
    assert "1 of 2 runs passed; flake rate 1 of 4 test runs" in out, out
    assert "failed in run 1: " in out and "test_flaky.py::test_fails_the_first_time_only" in out, out
    assert set(_spinners()) - before == set(), "a spinner outlived the run"
    assert (tmp_path / "logs" / "run-2.log").is_file()


def test_the_closing_line_is_read_with_and_without_q() -> None:
    assert parse("1 failed, 112 passed in 695.00s (0:11:34)\n")[0] == {"failed": 1, "passed": 112}
    assert parse("===== 3 passed, 1 skipped, 2 errors in 5.10s =====\n")[0] == {
        "passed": 3,
        "skipped": 1,
        "error": 2,
    }
    assert parse("FAILED tests/a.py::test_b - AssertionError\n1 failed in 1.00s\n")[1] == ["tests/a.py::test_b"]
    assert os.getloadavg()  # the report's load figures come from here
