"""conftest.py's scheduling under pytest-xdist, as ``make test`` runs it: longest first, yet the tests
that share a module-scoped fixture (a page booted once for a module) stay next to each other, so a
worker that takes them sets the fixture up once, not again after running another module's tests.
Run with pytest in a subprocess on two small files, on one worker, so that the order is the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import run_pytest

pytestmark = [pytest.mark.slow, pytest.mark.cost(5)]


def test_a_module_fixture_is_set_up_once_though_its_tests_differ_in_cost(tmp_path: Path) -> None:
    setups = tmp_path / "setups"
    shared = f"""
        import pytest

        @pytest.fixture(scope="module")
        def booted():
            with open({str(setups)!r}, "a") as log:
                log.write("booted\\n")

        @pytest.mark.cost(30)
        def test_long(booted):
            pass

        @pytest.mark.parametrize("n", range(3))
        def test_quick(booted, n):
            pass
        """
    other = """
        import pytest

        @pytest.mark.cost(10)
        @pytest.mark.parametrize("n", range(3))
        def test_middling(n):
            pass
        """
    done = run_pytest(tmp_path, {"test_shared.py": shared, "test_other.py": other}, workers=1)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "7 passed" in done.stdout
    # Each test alone, longest first, would run test_long, the three middling ones, then the quick
    # ones: the page booted twice.
    assert setups.read_text().split() == ["booted"]
