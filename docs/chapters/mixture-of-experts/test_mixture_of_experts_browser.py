"""Chapter 7's widgets in Debian's Chromium: the Run cells and the layout calculator.

On the tests' one built site (``conftest.site``): each Run cell prints what CPython prints for the
same program, the calculator shows the package's answer for each input and its example, and the
page shows its figure, self-check and interview box. Its speed is a benchmark
(``scripts/bench_browser.py``, "moe layout"), and axe checks it with every page
(``tests/test_page_quality.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sitegen.pages import find
from support import (
    CalculatorUnderTest,
    assert_figures_self_check_and_interview,
    assert_run_cell_prints_what_cpython_prints,
    wait_for_render,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
expect = pytest.importorskip("playwright.sync_api").expect

FOLDER = find(Path(__file__).resolve().parents[2], "mixture-of-experts")
PROGRAMS = ("experts_touched", "expert_step", "break_even")
calculator_view = FOLDER.calculator("mixture_of_experts")
CALCULATOR = CalculatorUnderTest(calculator_view, "mixture_of_experts", ("fewest", "best", "g8", "g32", "g72"))
form = CALCULATOR.form
shown = CALCULATOR.displayed
expected = CALCULATOR.expected


@pytest.mark.parametrize("program", PROGRAMS)
def test_each_run_cell_prints_what_cpython_prints(chapter, program: str) -> None:
    assert_run_cell_prints_what_cpython_prints(chapter, FOLDER.folder / "programs" / f"{program}.py")


def test_the_calculator_shows_the_packages_layouts_for_each_input(chapter) -> None:
    CALCULATOR.assert_follows(
        chapter, [("model", "qwen3-30b-a3b"), ("weights", "bf16"), ("batch", 512), ("gpu", "h200")]
    )


def test_the_example_button_loads_sglangs_layout(chapter) -> None:
    button = form(chapter).locator("[data-rf-example]")
    button.click()
    params = {**calculator_view.DEFAULTS, **FOLDER.module().EXAMPLES["sglang"]}
    wait_for_render(form(chapter), params)
    assert shown(chapter) == expected(params)
    assert "EP72" in shown(chapter)["g72"] and "tokens/s" in shown(chapter)["g72"]


def test_the_built_page_shows_its_figure_self_check_and_interview_box(chapter) -> None:
    assert_figures_self_check_and_interview(chapter, "a", questions_at_least=5)
