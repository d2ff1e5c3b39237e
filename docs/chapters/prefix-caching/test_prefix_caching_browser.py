"""Chapter 8's widgets in Debian's Chromium: the Run cell and the "Should I disaggregate?" calculator.

On the tests' one built site (``conftest.site``): the browser shows what CPython computes for the
same program and the same inputs, each verdict the chapter names appears for its workload, and the
page shows its figures, self-check and interview box.
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

FOLDER = find(Path(__file__).resolve().parents[2], "prefix-caching")
CHAPTER = FOLDER.url
PROGRAM = FOLDER.folder / "programs" / "hit_and_transfer.py"
CALC = "disaggregate"
calculator_view = FOLDER.calculator(CALC)
SHOWN = ("verdict", "batch", "stall", "transfer", "transfer_bar", "pools", "ratio")


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


def test_the_calculator_shows_the_packages_verdict_for_each_input(chapter) -> None:
    params = dict(calculator_view.DEFAULTS)
    start_at_defaults(form(chapter), params)  # whatever test ran before on this page
    assert shown(chapter) == expected(params)
    assert shown(chapter)["verdict"].startswith("Disaggregate")
    changes = [
        ("link", "nvlink"),
        ("prompt", 16384),
        ("rate", 2.5),
        ("model", "llama-3.1-8b"),
        ("gpus", 1),
        ("prompt", 100),  # short prompts on a small model: keep one pool
        ("gpu", "h200"),
        ("prompt", 32768),
        ("ttft_slo", 0.1),  # a target the prefill alone misses
    ]
    for name, value in changes:
        before = shown(chapter)
        params[name] = value
        set_inputs(form(chapter), {name: value})
        wait_for_render(form(chapter), params)
        assert shown(chapter) == expected(params), name
        assert shown(chapter) != before, f"changing {name} changed nothing"
    assert shown(chapter)["verdict"] == "Neither layout meets these targets"
    assert form(chapter).get_attribute("data-fits") == "false"


def test_the_built_page_shows_its_figures_self_check_and_interview_box(chapter) -> None:
    text = chapter.locator("article").inner_text()
    assert "{{" not in text and "}}" not in text
    captions = [text.strip() for text in chapter.locator("figure figcaption").all_text_contents()]
    assert [caption[:11] for caption in captions if caption.startswith("Figure")] == ["Figure (a).", "Figure (b)."]
    questions = chapter.locator("details.question")
    assert questions.count() == 5
    assert all(not questions.nth(i).evaluate("(details) => details.open") for i in range(questions.count()))
    box = chapter.locator(".admonition.note").filter(has_text="Interview signal")
    assert box.count() == 1
    answers = box.text_content()
    assert answers.index("Weak:") < answers.index("Strong:")
