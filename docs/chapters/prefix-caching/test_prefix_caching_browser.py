"""Chapter 8's widgets in Debian's Chromium: the Run cell and the "Should I disaggregate?" calculator.

On the tests' one built site (``conftest.site``): the browser shows what CPython computes for the
same program and the same inputs, each verdict the chapter names appears for its workload, and the
page shows its figures, self-check and interview box.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sitegen.pages import find
from support import (
    CalculatorUnderTest,
    assert_figures_self_check_and_interview,
    assert_run_cell_prints_what_cpython_prints,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
expect = pytest.importorskip("playwright.sync_api").expect

FOLDER = find(Path(__file__).resolve().parents[2], "prefix-caching")
PROGRAM = FOLDER.folder / "programs" / "hit_and_transfer.py"
calculator_view = FOLDER.calculator("disaggregate")
CALCULATOR = CalculatorUnderTest(
    calculator_view, "disaggregate", ("verdict", "batch", "stall", "transfer", "transfer_bar", "pools", "ratio")
)
form = CALCULATOR.form
shown = CALCULATOR.displayed
expected = CALCULATOR.expected


def test_the_run_cell_prints_what_cpython_prints(chapter) -> None:
    assert_run_cell_prints_what_cpython_prints(chapter, PROGRAM)


def test_the_calculator_shows_the_packages_verdict_for_each_input(chapter) -> None:
    assert expected(calculator_view.DEFAULTS)["verdict"].startswith("Disaggregate")
    CALCULATOR.assert_follows(
        chapter,
        [
            ("link", "nvlink"),
            ("prompt", 16384),
            ("rate", 2.5),
            ("model", "llama-3.1-8b"),
            ("gpus", 1),
            ("prompt", 100),  # short prompts on a small model: keep one pool
            ("gpu", "h200"),
            ("prompt", 32768),
            ("ttft_slo", 0.1),  # a target the prefill alone misses
        ],
    )
    assert shown(chapter)["verdict"] == "Neither layout meets these targets"
    assert form(chapter).get_attribute("data-fits") == "false"


def test_the_built_page_shows_its_figures_self_check_and_interview_box(chapter) -> None:
    assert_figures_self_check_and_interview(chapter, "ab", questions_at_least=5)
