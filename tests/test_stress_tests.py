"""``make test-stress`` (scripts/stress_tests.py): runs pytest beside busy processes, counts, and leaves none behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
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


def _processes(keep) -> list[int]:
    """The pids of /proc whose command line (NUL-separated bytes) and pid ``keep(command, pid)`` accepts."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if keep((entry / "cmdline").read_bytes(), int(entry.name)):
                    found.append(int(entry.name))
            except OSError:  # gone meanwhile
                continue
    return found


def _spinners() -> list[int]:
    """Processes running the script's spinner (its code is on their command line)."""
    return _processes(lambda command, pid: b"parent, deadline = int(sys.argv[1])" in command)


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


def test_a_stress_run_stopped_midway_leaves_no_process_behind(tmp_path) -> None:
    """``make test-stress`` stopped (Ctrl-C, a killed job): pytest, its workers and the spinners end too."""
    (tmp_path / "test_slow.py").write_text("import time\n\ndef test_sleeps():\n    time.sleep(120)\n")
    script = Path(__file__).resolve().parent.parent / "scripts" / "stress_tests.py"
    command = [sys.executable, str(script), "--busy", "1", "--workers", "2", "--marker", ""]
    command += ["--logs", str(tmp_path / "logs"), str(tmp_path)]
    before = set(_spinners())
    stress = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _stop_midway(stress, tmp_path, before)
    finally:
        if stress.poll() is None:
            stress.kill()


def _stop_midway(stress: subprocess.Popen, tmp_path: Path, before: set[int]) -> None:
    deadline = time.monotonic() + 60
    while not (_sleepers(tmp_path) and len(_in_group(_sleepers(tmp_path)[0])) >= 3) and time.monotonic() < deadline:
        time.sleep(0.2)
    (controller,) = _sleepers(tmp_path)
    group = _in_group(controller)  # pytest and its xdist workers: a session of their own
    assert len(group) >= 3, group
    stress.send_signal(signal.SIGTERM)
    stress.wait(timeout=30)
    # Killed processes take a moment to be reaped, and a spinner looks for its parent five times a second.
    deadline = time.monotonic() + 10
    while (_alive(group) or set(_spinners()) - before) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _alive(group) == [] and set(_spinners()) - before == set(), stress.stdout.read()


def _alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (a zombie, killed and not yet reaped, is not)."""
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def _in_group(leader: int) -> list[int]:
    """Every process in the process group ``leader`` leads."""
    return _processes(lambda command, pid: os.getpgid(pid) == leader)


def _sleepers(folder: Path) -> list[int]:
    """The pytest processes whose command line names ``folder`` (the controller; its workers read theirs from stdin)."""
    return _processes(lambda command, pid: b"-m\x00pytest\x00" in command and str(folder).encode() in command)
