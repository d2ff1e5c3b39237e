"""Chapter 4's page in Debian's Chromium: the "Which format on my GPU" calculator and what a reader sees.

On the tests' one built site (``conftest.site``): the calculator shows, for each input changed,
what CPython computes for the same inputs (ceiling and expected range per format); the page
letters its five figures, collapses its self-check questions and shows the interview box.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sitegen.pages import find
from support import BOOT_MS, Recorded, set_inputs, start_at_defaults, text_outputs, wait_for_render

pytestmark = [pytest.mark.browser, pytest.mark.slow]
expect = pytest.importorskip("playwright.sync_api").expect

FOLDER = find(Path(__file__).resolve().parents[2], "quantization")
CALC = "which_format"
calculator_view = FOLDER.calculator(CALC)
SHOWN = ("verdict", "bf16", "fp8", "int8_sq", "int4_awq", "nvfp4", "users", "critical", "explain")


@pytest.fixture(scope="module")
def chapter(browser, site) -> Iterator[object]:
    recorded = Recorded.open(browser)
    page = recorded.page()
    page.goto(site.isolated + FOLDER.url)
    expect(page.locator("[data-rf-cell]")).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    yield page
    recorded.assert_only(site.isolated)
    recorded.close()


def form(page: object) -> object:
    return page.locator(f"form[data-rf-calc={CALC}]")


def shown(page: object) -> dict[str, str]:
    outputs = text_outputs(form(page))
    return {name: outputs[name] for name in SHOWN}


def expected(params: dict[str, object]) -> dict[str, str]:
    view = calculator_view.view(**params)
    return {name: str(view[name]) for name in SHOWN}


def test_the_calculator_shows_what_cpython_computes_for_each_input(chapter) -> None:
    params = dict(calculator_view.DEFAULTS)
    start_at_defaults(form(chapter), params)  # whatever test ran before on this page
    assert shown(chapter) == expected(params)
    for name, value in [
        ("gpu", "a100-80gb"),
        ("prompt", 0),
        ("batch", 256),
        ("context", 32768),
        ("model", "llama-3.1-70b"),
        ("batch", 1),
        ("gpu", "b200"),
    ]:
        before = shown(chapter)
        params[name] = value
        set_inputs(form(chapter), {name: value})
        wait_for_render(form(chapter), params)
        assert shown(chapter) == expected(params), name
        assert shown(chapter) != before, f"changing {name} changed nothing"
    # On the B200 NVFP4 runs its own fp4 math; the A100 step above ran it weight-only.
    assert "nvfp4: fp4 math;" in shown(chapter)["explain"]


def test_the_page_letters_five_figures_and_shows_its_self_check_and_interview_box(chapter) -> None:
    text = chapter.locator("article").inner_text()
    assert "{{" not in text and "}}" not in text
    captions = [caption.strip() for caption in chapter.locator("figure figcaption").all_text_contents()]
    assert [caption[:11] for caption in captions if caption.startswith("Figure")] == [
        f"Figure ({letter})." for letter in "abcde"
    ]
    questions = chapter.locator("details.question")
    assert questions.count() >= 4
    assert all(not questions.nth(i).evaluate("(details) => details.open") for i in range(questions.count()))
    box = chapter.locator(".admonition.note").filter(has_text="Interview signal")
    assert box.count() == 1
    # text_content: a box off screen is skipped by content-visibility, and innerText leaves it out.
    answers = box.text_content()
    assert answers.index("Weak:") < answers.index("Strong:")
    assert "critical batch" in answers.split("Strong:")[1]
