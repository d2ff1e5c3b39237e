"""Chapter 2's widgets in Debian's Chromium: the kv_budget Run cell and the KV budget calculator.

On the tests' one built site (``conftest.site``): these tests open the KV-cache
chapter and check that the browser shows what CPython computes for the same
program and the same inputs, and that the form's rule between the shared prefix
and the context is checked in the page.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sitegen.pages import find
from support import BOOT_MS, STEP_MS, Recorded, set_inputs, start_at_defaults, wait_for_render

pytestmark = [pytest.mark.browser, pytest.mark.slow]
expect = pytest.importorskip("playwright.sync_api").expect

FOLDER = find(Path(__file__).resolve().parents[2], "kv-cache")
CHAPTER = FOLDER.url
PROGRAM = FOLDER.folder / "programs" / "kv_budget.py"
CALC = "kv_budget"
calculator_view = FOLDER.calculator(CALC)
SHOWN = ("verdict", "users", "per_user", "total", "kv_per_user", "memory", "step")


@pytest.fixture(scope="module")
def chapter(browser, site) -> Iterator[object]:
    recorded = Recorded.open(browser)
    page = recorded.page()
    page.goto(site.isolated + CHAPTER)
    expect(page.locator("[data-rf-cell]")).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    yield page
    recorded.assert_only(site.isolated)
    recorded.close()


def form(page: object) -> object:
    return page.locator(f"form[data-rf-calc={CALC}]")


def shown(page: object) -> dict[str, str]:
    return {name: form(page).locator(f"[data-rf-out={name}]").first.text_content() for name in SHOWN}


def expected(params: dict[str, object]) -> dict[str, str]:
    view = calculator_view.view(**params)
    return {name: str(view[name]) for name in SHOWN}


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
    cell = chapter.locator("[data-rf-cell]")
    cell.locator("[data-rf-action=run]").click()
    expect(cell.locator(".rf-status")).to_contain_text("Finished", timeout=STEP_MS)
    cpython = subprocess.run([sys.executable, str(PROGRAM)], capture_output=True, text=True, check=True).stdout
    assert cell.locator(".rf-output").text_content() == cpython


def test_the_calculator_shows_the_packages_numbers_and_bars_for_each_input(chapter) -> None:
    params = dict(calculator_view.DEFAULTS)
    start_at_defaults(form(chapter), params)  # whatever test ran before on this page
    assert shown(chapter) == expected(params)
    view = calculator_view.view(**params)
    widths = stack_widths(chapter, "memory_parts")
    assert widths == pytest.approx([part["share"] for part in view["memory_parts"]], abs=0.01)
    for name, value in [("kv", "fp8"), ("context", 32768), ("prefix", 2000), ("gpu", "h200"), ("gpus", 2)]:
        before = shown(chapter)
        params[name] = value
        set_inputs(form(chapter), {name: value})
        wait_for_render(form(chapter), params)
        assert shown(chapter) == expected(params), name
        assert shown(chapter) != before, f"changing {name} changed nothing"
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

    text = chapter.locator("article").inner_text()
    assert "{{" not in text and "}}" not in text
    # text_content: figures off screen are skipped by content-visibility, and innerText leaves them out.
    captions = [text.strip() for text in chapter.locator("figure figcaption").all_text_contents()]
    assert [caption[:11] for caption in captions if caption.startswith("Figure")] == [
        f"Figure ({letter})." for letter in "abcd"
    ]
    questions = chapter.locator("details.question")
    assert questions.count() >= 4
    assert all(not questions.nth(i).evaluate("(details) => details.open") for i in range(questions.count()))
    # One style in every chapter: the question, then a weak answer and why it is weak, then a strong one.
    box = chapter.locator(".admonition.note").filter(has_text="Interview signal")
    assert box.count() == 1
    answers = box.text_content()  # innerText skips what content-visibility has not laid out
    assert answers.index("Weak:") < answers.index("Strong:")
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
