"""Run tests again and again with the machine's cores kept busy, and report how often they flake.

Run: ``python scripts/stress_tests.py [--runs 3] [--busy 2] [--marker browser] [--workers N] [-- PYTEST ARGS]``,
or ``make test-stress`` (``RUNS=`` and ``BUSY=`` change the first two).

A test that passes on a quiet machine and fails beside other work is a defect: CI runs on a
developer's own machine, which may be as loaded as this one gets. This starts ``--busy``
processes that each spin one core (as ``stress --cpu N`` does), then runs pytest as ``make test``
does (``--workers`` workers, ``--dist loadgroup``), restricted to ``--marker`` tests (the browser
tests by default), ``--runs`` times in a row. It prints each run's counts, wall time and the load
average it ran at, every test that failed and in which run, and the flake rate (failed test runs
÷ test runs). The spinners stop with it: each ends by itself when this process is gone or its
time limit has passed, whichever comes first, so none outlives a killed run.

Exit status: 0 when every run passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: One spinner: burns a core until its parent is gone or its deadline passes (it checks a few
#: times a second, so a killed stress run leaves no spinner behind for long).
SPINNER = """
import os, sys, time
parent, deadline = int(sys.argv[1]), float(sys.argv[2])
while time.time() < deadline and os.getppid() == parent:
    end = time.perf_counter() + 0.2
    while time.perf_counter() < end:
        pass
"""
#: pytest's closing line: "3 failed, 110 passed, 2 skipped in 512.30s (0:08:32)" under -q, framed
#: by "=" signs without it.
SUMMARY = re.compile(r"^(?:=+ )?(?P<counts>\d+ [a-z]+(?:, \d+ [a-z]+)*) in (?P<seconds>[\d.]+)s", re.M)
COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|deselected|xfailed|xpassed)")
FAILED_LINE = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)


@dataclass
class Run:
    """One pytest run under load."""

    number: int
    returncode: int
    seconds: float
    load: tuple[float, float]  # the 1-minute load average at its start and end
    counts: dict[str, int] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)

    @property
    def tests(self) -> int:
        return sum(self.counts.get(kind, 0) for kind in ("passed", "failed", "error"))

    def line(self) -> str:
        counts = ", ".join(f"{number} {kind}" for kind, number in self.counts.items()) or "no summary line"
        low, high = self.load
        return f"run {self.number}: {counts} in {self.seconds:.0f} s (load {low:.1f} at start, {high:.1f} at end)"


def parse(output: str) -> tuple[dict[str, int], list[str]]:
    """pytest's counts by kind ("error" for "errors") and the failed tests' ids, from its output."""
    found = SUMMARY.findall(output)
    counts: dict[str, int] = {}
    if found:
        for number, kind in COUNT.findall(found[-1][0]):
            counts[kind.rstrip("s") if kind.startswith("error") else kind] = int(number)
    return counts, FAILED_LINE.findall(output)


def start_spinners(count: int, limit_s: float) -> list[subprocess.Popen]:
    deadline = time.time() + limit_s
    command = [sys.executable, "-c", SPINNER, str(os.getpid()), str(deadline)]
    return [subprocess.Popen(command, stdin=subprocess.DEVNULL) for _ in range(count)]


def stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()


def pytest_command(workers: int, marker: str, extra: list[str]) -> list[str]:
    """As ``make test`` runs pytest (see its XDIST), on the tests ``marker`` selects."""
    command = [sys.executable, "-m", "pytest", "-n", str(workers), "--dist", "loadgroup", "--no-loadscope-reorder"]
    command += ["--max-worker-restart", "0", "-p", "no:cacheprovider", "-q", "-rfE"]
    if marker:
        command += ["-m", marker]
    return command + extra


def run_once(number: int, command: list[str], log: Path) -> Run:
    start_load = os.getloadavg()[0]
    started = time.monotonic()
    with log.open("w", encoding="utf-8") as out:
        # A session of its own, so that a stress run stopped midway takes pytest, its workers, their
        # servers and their Chromium with it (they would otherwise outlive it, each holding a core).
        pytest = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            returncode = pytest.wait()
        finally:
            if pytest.poll() is None:
                os.killpg(pytest.pid, signal.SIGKILL)
    seconds = time.monotonic() - started
    counts, failed = parse(log.read_text(encoding="utf-8", errors="replace"))
    return Run(number, returncode, seconds, (start_load, os.getloadavg()[0]), counts, failed)


def report(runs: list[Run]) -> str:
    lines = [run.line() for run in runs]
    failures = [(run.number, test) for run in runs for test in run.failed]
    tests = sum(run.tests for run in runs)
    failed = sum(run.counts.get("failed", 0) + run.counts.get("error", 0) for run in runs)
    passed_runs = sum(run.returncode == 0 for run in runs)
    lines.append(f"{passed_runs} of {len(runs)} runs passed; flake rate {failed} of {tests} test runs")
    lines += [f"  failed in run {number}: {test}" for number, test in failures]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="pytest runs in a row (default 3)")
    parser.add_argument("--busy", type=int, default=2, help="processes spinning a core each (default 2)")
    parser.add_argument("--marker", default="browser", help='pytest -m expression (default "browser"; "" for all)')
    parser.add_argument("--workers", type=int, default=min(4, os.cpu_count() or 1), help="pytest-xdist workers")
    parser.add_argument("--limit", type=float, default=3 * 3600, help="seconds after which the spinners stop")
    parser.add_argument("--logs", type=Path, default=ROOT / "build" / "stress", help="where each run's output goes")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest (test paths, -k, …)")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.busy < 0 or args.workers < 1:
        parser.error("--runs and --workers must be at least 1, --busy at least 0")
    args.logs.mkdir(parents=True, exist_ok=True)
    command = pytest_command(args.workers, args.marker, args.pytest_args)
    print(f"{args.busy} busy processes beside {' '.join(command[1:])}", flush=True)
    # SIGTERM (a stopped make, a killed job) ends the runs as Ctrl-C does: through the finally blocks.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(143))
    spinners = start_spinners(args.busy, args.limit)
    runs: list[Run] = []
    try:
        for number in range(1, args.runs + 1):
            log = args.logs / f"run-{number}.log"
            runs.append(run_once(number, command, log))
            print(runs[-1].line() + f"  ({log})", flush=True)
    finally:
        stop(spinners)
    print(report(runs), flush=True)
    return 0 if all(run.returncode == 0 for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
