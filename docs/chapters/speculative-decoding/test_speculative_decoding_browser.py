"""Chapter 5's widgets in Debian's Chromium: the speculate_batch Run cell and the speculation calculator.

On the tests' one built site (``conftest.site``): the browser must show what CPython
computes for the same program and the same inputs, name the ceiling and the expected
figures side by side, flag a speculative rate above the plain ceiling, and refuse a
draft with another vocabulary in words.
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

FOLDER = find(Path(__file__).resolve().parents[2], "speculative-decoding")
PROGRAM = FOLDER.folder / "programs" / "speculate_batch.py"
calculator_view = FOLDER.calculator("speculate")
CALCULATOR = CalculatorUnderTest(
    calculator_view, "speculate", ("verdict", "tau", "speedup", "per_user", "expected", "baseline", "break_even")
)
form = CALCULATOR.form
shown = CALCULATOR.displayed
expected = CALCULATOR.expected


def test_the_run_cell_prints_what_cpython_prints(chapter) -> None:
    assert_run_cell_prints_what_cpython_prints(chapter, PROGRAM)


def test_the_calculator_shows_the_packages_numbers_for_each_input(chapter) -> None:
    assert "speculative" in expected(calculator_view.DEFAULTS)["per_user"]
    CALCULATOR.assert_follows(
        chapter, [("alpha", 0.6), ("gamma", 8), ("batch", 256), ("draft", "given-cost"), ("context", 4096)]
    )


def _refused_in_words(chapter, params: dict, words: str) -> None:
    """Set ``params``: the page answers "does not fit" and explains with ``words``; then back to the defaults."""
    set_inputs(form(chapter), params)
    wait_for_render(form(chapter), params)
    assert form(chapter).get_attribute("data-fits") == "false"
    assert words in form(chapter).locator("[data-rf-out=explain]").text_content()
    set_inputs(form(chapter), calculator_view.DEFAULTS)
    wait_for_render(form(chapter), calculator_view.DEFAULTS)


def test_a_draft_with_another_vocabulary_is_refused_in_words(chapter) -> None:
    _refused_in_words(chapter, {**calculator_view.DEFAULTS, "draft": "mistral-7b"}, "vocabulary")


def test_the_eagle3_head_drafts_for_its_target_and_is_refused_for_another(chapter) -> None:
    """The drafter menu's EAGLE-3 head, in Pyodide: the package's numbers for Llama 3.1 8B, and
    one sentence of refusal for another target."""
    head = "eagle3-llama-3.1-8b"
    params = {**calculator_view.DEFAULTS, "draft": head}
    set_inputs(form(chapter), params)
    wait_for_render(form(chapter), params)
    assert shown(chapter) == expected(params)
    _refused_in_words(chapter, {**params, "model": "mistral-7b"}, "drafts for llama-3.1-8b only")


def test_an_acceptance_rate_above_one_is_marked_in_the_page(chapter) -> None:
    # Every input from the defaults (earlier tests share this page and may leave others set).
    set_inputs(form(chapter), {**calculator_view.DEFAULTS, "alpha": 1.5})
    expect(form(chapter)).to_have_attribute("data-state", "invalid")
    expect(form(chapter).locator("[name=alpha]")).to_have_attribute("aria-invalid", "true")
    set_inputs(form(chapter), {"alpha": calculator_view.DEFAULTS["alpha"]})
    wait_for_render(form(chapter), calculator_view.DEFAULTS)


def test_the_built_page_shows_its_figures_self_check_and_interview_box(chapter) -> None:
    assert_figures_self_check_and_interview(chapter, "abcde")
