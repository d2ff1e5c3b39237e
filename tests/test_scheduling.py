"""conftest.py's scheduling under pytest-xdist, as ``make test`` runs it: the tests that share a
module-scoped fixture (a page booted once for a module) run on one worker, so that fixture is set up
once; the other tests are handed out one at a time. Run with pytest in a subprocess on a small file."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import run_pytest

pytestmark = [pytest.mark.slow, pytest.mark.cost(5)]


def test_tests_sharing_a_module_fixture_run_on_one_worker_which_sets_it_up_once(tmp_path: Path) -> None:
    done = run_pytest(
        tmp_path,
        f"""
        import os, time
        import pytest

        @pytest.fixture(scope="module")
        def booted():
            with open({str(tmp_path / "setups")!r}, "a") as log:
                log.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")

        @pytest.mark.parametrize("n", range(8))
        def test_shares(booted, n):
            time.sleep(0.05)

        @pytest.mark.parametrize("n", range(8))
        def test_alone(n):
            time.sleep(0.05)
        """,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "16 passed" in done.stdout
    setups = (tmp_path / "setups").read_text().split()
    assert len(setups) == 1, f"the module's fixture was set up on {setups}, not once"
