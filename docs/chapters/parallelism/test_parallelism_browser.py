"""Chapter 6's widgets in Debian's Chromium: the TP-sweep Run cell and the Deploy-it calculator.

On the tests' one built site (``conftest.site``): the browser shows what CPython computes for
the same program and the same inputs, a bad split greys nothing but answers with the package's
one line, and the page shows its figures, self-check and interview box.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sitegen.pages import find
from support import (
    CalculatorUnderTest,
    assert_figures_self_check_and_interview,
    assert_run_cell_prints_what_cpython_prints,
    set_inputs,
    wait_for_render,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
expect = pytest.importorskip("playwright.sync_api").expect

FOLDER = find(Path(__file__).resolve().parents[2], "parallelism")
PROGRAM = FOLDER.folder / "programs" / "tp_sweep.py"
calculator_view = FOLDER.calculator("deploy")
CALCULATOR = CalculatorUnderTest(
    calculator_view, "deploy", ("verdict", "per_user", "total", "prefill", "memory", "step", "talk", "best")
)
form = CALCULATOR.form
shown = CALCULATOR.displayed
expected = CALCULATOR.expected


def test_the_run_cell_prints_what_cpython_prints(chapter) -> None:
    assert_run_cell_prints_what_cpython_prints(chapter, PROGRAM)


def test_the_calculator_shows_the_packages_numbers_for_each_input(chapter) -> None:
    CALCULATOR.assert_follows(
        chapter,
        [
            ("split", "pp"),
            ("microbatches", 8),
            ("batch", 256),
            ("split", "tpxpp"),
            ("pp_stages", 4),
            ("gpu", "h200"),
            ("latency", "nccl"),
            ("model", "llama-3.1-405b"),
        ],
    )


def test_a_split_that_does_not_divide_the_heads_says_which_do(chapter) -> None:
    params = {**calculator_view.DEFAULTS, "gpus": 6}
    set_inputs(form(chapter), params)
    wait_for_render(form(chapter), params)
    assert form(chapter).get_attribute("data-fits") == "false"
    assert shown(chapter)["per_user"] == "—"
    assert "4 and 8" in form(chapter).locator("[data-rf-out=explain]").text_content()


def test_the_built_page_shows_its_figures_self_check_and_interview_box(chapter) -> None:
    assert_figures_self_check_and_interview(chapter, "abcdefg")  # (c): TP4 against TP8 over the base latency
    assert "TP8 wins if the base latency is above" in " ".join(chapter.locator("article").text_content().split())
