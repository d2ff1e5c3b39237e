"""Chapter 2's widgets in Debian's Chromium: the kv_budget Run cell and the KV budget calculator.

On the tests' one built site (``conftest.site``): these tests open the KV-cache
chapter and check that the browser shows what CPython computes for the same
program and the same inputs, and that the form's rule between the shared prefix
and the context is checked in the page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from roofline import builtin_specs
from sitegen.pages import find
from support import (
    CalculatorUnderTest,
    assert_figures_self_check_and_interview,
    assert_run_cell_prints_what_cpython_prints,
    set_inputs,
    start_at_defaults,
    text_outputs,
    wait_for_render,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
expect = pytest.importorskip("playwright.sync_api").expect

FOLDER = find(Path(__file__).resolve().parents[2], "kv-cache")
PROGRAM = FOLDER.folder / "programs" / "kv_budget.py"
calculator_view = FOLDER.calculator("kv_budget")
CALCULATOR = CalculatorUnderTest(
    calculator_view, "kv_budget", ("verdict", "users", "per_user", "total", "kv_per_user", "memory", "step")
)
form = CALCULATOR.form
shown = CALCULATOR.displayed
expected = CALCULATOR.expected


def stack_widths(page: object, name: str) -> list[float]:
    """Each part's width as a share of its stack, as the page drew it."""
    return page.evaluate(
        """(name) => {
          const stack = document.querySelector(`[data-rf-draw="stack"][data-rf-key="${name}"]`);
          const total = stack.getBoundingClientRect().width;
          return [...stack.children].map((part) => part.getBoundingClientRect().width / total);
        }""",
        name,
    )


def test_the_run_cell_prints_what_cpython_prints(chapter) -> None:
    assert_run_cell_prints_what_cpython_prints(chapter, PROGRAM)


def test_the_calculator_shows_the_packages_numbers_and_bars_for_each_input(chapter) -> None:
    params = dict(calculator_view.DEFAULTS)
    start_at_defaults(form(chapter), params)  # whatever test ran before on this page
    view = calculator_view.view(**params)
    widths = stack_widths(chapter, "memory_parts")
    assert widths == pytest.approx([part["share"] for part in view["memory_parts"]], abs=0.01)
    params = CALCULATOR.assert_follows(
        chapter, [("kv", "fp8"), ("context", 32768), ("prefix", 2000), ("gpu", "h200"), ("gpus", 2)]
    )
    view = calculator_view.view(**params)
    assert stack_widths(chapter, "step_parts") == pytest.approx(
        [part["share"] for part in view["step_parts"]], abs=0.01
    )


def test_a_model_that_does_not_fit_empties_the_step_bar_and_says_why(chapter) -> None:
    params = {**calculator_view.DEFAULTS, "model": "llama-3.1-405b"}
    set_inputs(form(chapter), params)
    wait_for_render(form(chapter), params)
    assert form(chapter).get_attribute("data-fits") == "false"
    assert shown(chapter)["users"] == "0"
    assert "It needs at least" in form(chapter).locator("[data-rf-out=explain]").text_content()
    assert stack_widths(chapter, "step_parts") == []


def test_the_built_page_shows_its_figures_self_check_and_interview_box(chapter) -> None:
    """What a reader sees: four lettered figures, at least four collapsed questions with computed
    answers, and the interview box, its weak answer before its strong one, which quotes numbers."""
    from roofline import Hardware, Workload, builtin_specs, users_that_fit

    answers = assert_figures_self_check_and_interview(chapter, "abcd")
    specs = builtin_specs()
    users = users_that_fit(Hardware(specs.gpu("h100-sxm")), Workload(specs.model("llama-3.1-8b"), context=32768))
    assert f"fits only {users} users" in answers.split("Strong:")[1]


def test_a_prefix_longer_than_the_context_marks_both_fields_and_greys_the_results(chapter) -> None:
    """The form's rule (prefix at most the context), declared once in Python, checked in the page;
    a prefix as long as the context is accepted, as the command line accepts it."""
    params = dict(calculator_view.DEFAULTS)
    set_inputs(form(chapter), params)
    wait_for_render(form(chapter), params)
    set_inputs(form(chapter), {"prefix": params["context"]})
    wait_for_render(form(chapter), dict(params, prefix=params["context"]))
    expect(form(chapter).locator("[data-rf-out=users]")).to_have_text("no limit")
    set_inputs(form(chapter), {"prefix": params["context"] + 1})
    expect(form(chapter)).to_have_attribute("data-state", "invalid")
    for name in ("prefix", "context"):
        expect(form(chapter).locator(f"[name={name}]")).to_have_attribute("aria-invalid", "true")
    expect(form(chapter).locator("#rf-kv_budget-prefix-error")).to_contain_text(
        "cannot be longer than each user's context"
    )
    expect(form(chapter)).to_have_class(re.compile(r"\brf-calc--stale\b"))
    set_inputs(form(chapter), {"prefix": 2000})
    wait_for_render(form(chapter), dict(params, prefix=2000))
    expect(form(chapter).locator("[name=context]")).not_to_have_attribute("aria-invalid", "true")


def test_an_unfitted_gpu_shows_its_expected_band_widened_and_says_so(chapter) -> None:
    """Issue 36: on a GPU the fit has no rows for at the page's math, the page's expected tokens/s
    carries the widened band and the words "unfitted: band widened", as CPython's view computes them;
    an H100 does not. The GPU is the first built-in one CPython's view flags, so a refit that gives
    one GPU rows moves the test to the next."""
    params = dict(calculator_view.DEFAULTS)
    start_at_defaults(form(chapter), params)
    assert "unfitted: band widened" not in text_outputs(form(chapter))["expected"]
    gpu = next(
        gpu
        for gpu in builtin_specs().gpus
        if calculator_view.view(**dict(params, gpu=gpu))["expected"].endswith("unfitted: band widened")
    )
    params["gpu"] = gpu
    set_inputs(form(chapter), {"gpu": gpu})
    wait_for_render(form(chapter), params)
    view = calculator_view.view(**params)
    assert text_outputs(form(chapter))["expected"] == view["expected"]
    assert view["expected"].endswith("unfitted: band widened")
