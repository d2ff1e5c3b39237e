"""Chapter 6's widgets in Debian's Chromium: the TP-sweep Run cell and the Deploy-it calculator.

On the tests' one built site (``conftest.site``): the browser shows what CPython computes for
the same program and the same inputs, a bad split greys nothing but answers with the package's
one line, and the page shows its figures, self-check and interview box.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sitegen.pages import find
from support import BOOT_MS, STEP_MS, Recorded, set_inputs, start_at_defaults, wait_for_render

pytestmark = [pytest.mark.browser, pytest.mark.slow]
expect = pytest.importorskip("playwright.sync_api").expect

FOLDER = find(Path(__file__).resolve().parents[2], "parallelism")
CHAPTER = FOLDER.url
PROGRAM = FOLDER.folder / "programs" / "tp_sweep.py"
CALC = "deploy"
calculator_view = FOLDER.calculator(CALC)
SHOWN = ("verdict", "per_user", "total", "prefill", "memory", "step", "talk", "best")


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
    changes = [
        ("split", "pp"),
        ("microbatches", 8),
        ("batch", 256),
        ("split", "tpxpp"),
        ("pp_stages", 4),
        ("gpu", "h200"),
        ("latency", "nccl"),
        ("model", "llama-3.1-405b"),
    ]
    for name, value in changes:
        before = shown(chapter)
        params[name] = value
        set_inputs(form(chapter), {name: value})
        wait_for_render(form(chapter), params)
        assert shown(chapter) == expected(params), name
        assert shown(chapter) != before, f"changing {name} changed nothing"


def test_a_split_that_does_not_divide_the_heads_says_which_do(chapter) -> None:
    params = {**calculator_view.DEFAULTS, "gpus": 6}
    set_inputs(form(chapter), params)
    wait_for_render(form(chapter), params)
    assert form(chapter).get_attribute("data-fits") == "false"
    assert shown(chapter)["per_user"] == "—"
    assert "4 and 8" in form(chapter).locator("[data-rf-out=explain]").text_content()


def test_the_built_page_shows_its_figures_self_check_and_interview_box(chapter) -> None:
    text = chapter.locator("article").inner_text()
    assert "{{" not in text and "}}" not in text
    captions = [text.strip() for text in chapter.locator("figure figcaption").all_text_contents()]
    assert [caption[:11] for caption in captions if caption.startswith("Figure")] == [
        f"Figure ({letter})."
        for letter in "abcdefg"  # (c): TP4 against TP8 over the base latency (issue 35)
    ]
    assert "TP8 wins if the base latency is above" in " ".join(chapter.locator("article").text_content().split())
    questions = chapter.locator("details.question")
    assert questions.count() >= 4
    assert all(not questions.nth(i).evaluate("(details) => details.open") for i in range(questions.count()))
    box = chapter.locator(".admonition.note").filter(has_text="Interview signal")
    assert box.count() == 1
    answers = box.text_content()  # innerText skips what content-visibility has not laid out
    assert answers.index("Weak:") < answers.index("Strong:")
