"""Chapter 5's widgets in Debian's Chromium: the speculate_batch Run cell and the speculation calculator.

On the tests' one built site (``conftest.site``): the browser must show what CPython
computes for the same program and the same inputs, name the ceiling and the expected
figures side by side, flag a speculative rate above the plain ceiling, and refuse a
draft with another vocabulary in words.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sitegen.pages import find
from support import BOOT_MS, STEP_MS, Recorded, set_inputs, start_at_defaults, text_outputs, wait_for_render

pytestmark = [pytest.mark.browser, pytest.mark.slow]
expect = pytest.importorskip("playwright.sync_api").expect

FOLDER = find(Path(__file__).resolve().parents[2], "speculative-decoding")
CHAPTER = FOLDER.url
PROGRAM = FOLDER.folder / "programs" / "speculate_batch.py"
CALC = "speculate"
calculator_view = FOLDER.calculator(CALC)
SHOWN = ("verdict", "tau", "speedup", "per_user", "expected", "baseline", "break_even")


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
    return {name: text for name, text in text_outputs(form(page)).items() if name in SHOWN}


def expected(params: dict[str, object]) -> dict[str, str]:
    view = calculator_view.view(**params)
    return {name: str(view[name]) for name in SHOWN}


def test_the_run_cell_prints_what_cpython_prints(chapter) -> None:
    cell = chapter.locator("[data-rf-cell]")
    cell.locator("[data-rf-action=run]").click()
    expect(cell.locator(".rf-status")).to_contain_text("Finished", timeout=STEP_MS)
    cpython = subprocess.run([sys.executable, str(PROGRAM)], capture_output=True, text=True, check=True).stdout
    assert cell.locator(".rf-output").text_content() == cpython


def test_the_calculator_shows_the_packages_numbers_for_each_input(chapter) -> None:
    params = dict(calculator_view.DEFAULTS)
    start_at_defaults(form(chapter), params)  # whatever test ran before on this page
    assert shown(chapter) == expected(params)
    assert "speculative" in shown(chapter)["per_user"]
    for name, value in [("alpha", 0.6), ("gamma", 8), ("batch", 256), ("draft", "given-cost"), ("context", 4096)]:
        before = shown(chapter)
        params[name] = value
        set_inputs(form(chapter), {name: value})
        wait_for_render(form(chapter), params)
        assert shown(chapter) == expected(params), name
        assert shown(chapter) != before, f"changing {name} changed nothing"


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
    text = chapter.locator("article").inner_text()
    assert "{{" not in text and "}}" not in text
    captions = [text.strip() for text in chapter.locator("figure figcaption").all_text_contents()]
    assert [caption[:11] for caption in captions if caption.startswith("Figure")] == [
        f"Figure ({letter})." for letter in "abcde"
    ]
    questions = chapter.locator("details.question")
    assert questions.count() >= 4
    assert all(not questions.nth(i).evaluate("(details) => details.open") for i in range(questions.count()))
    box = chapter.locator(".admonition.note").filter(has_text="Interview signal")
    assert box.count() == 1
    answers = box.text_content()  # innerText skips what content-visibility has not laid out
    assert answers.index("Weak:") < answers.index("Strong:")
