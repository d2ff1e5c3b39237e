"""The quiz in Debian's Chromium, on chapter 1 of the tests' one built site (``conftest.site``).

The page's question, its grade, its diagnosis and its working are what CPython's
``QUIZ.view`` gives for the same seed and the same typed text; hostile answers each get
Python's one line and insert nothing into the page; progress is counted in localStorage,
shown on the home page, cleared by its button, and a tampered value is ignored and removed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sitegen.pages import find
from support import BOOT_MS, Recorded

pytestmark = [pytest.mark.browser, pytest.mark.slow]
expect = pytest.importorskip("playwright.sync_api").expect

FOLDER = find(Path(__file__).resolve().parents[1] / "docs", "prefill-vs-decode")
QUIZ = FOLDER.quiz().QUIZ
KEY = "roofline-quiz-progress"
HOSTILE = ("1e309", "NaN", "9" * 10_000, "<img src=x onerror=window.hacked=1>", "١٢٣", "")


@pytest.fixture(scope="module")
def chapter(browser, site) -> Iterator[object]:
    recorded = Recorded.open(browser)
    page = recorded.page()
    page.goto(site.isolated + FOLDER.url)
    yield page
    recorded.assert_only(site.isolated)
    recorded.close()


def quiz(page: object) -> object:
    return page.locator("[data-rf-quiz]")


def new_question(page: object) -> int:
    """Press "New question" and wait for Python's question; its seed."""
    quiz(page).locator("[data-rf-quiz-new]").click()
    expect(quiz(page).locator("[data-rf-quiz-result]")).to_contain_text("New question drawn", timeout=BOOT_MS)
    return int(quiz(page).get_attribute("data-rf-seed"))


def check(page: object, typed: str, unit: str) -> str:
    """Type ``typed``, pick ``unit`` and press Enter (the keyboard's Check); the verdict line."""
    box = quiz(page).locator("input[name=answer]")
    box.fill(typed)
    quiz(page).locator("select[name=unit]").select_option(unit)
    result = quiz(page).locator("[data-rf-quiz-result]")
    result.evaluate("(element) => (element.textContent = '')")
    box.press("Enter")
    expect(result).not_to_have_text("", timeout=BOOT_MS)
    expect(result).not_to_have_text("Checking…", timeout=BOOT_MS)
    return result.text_content()


def test_the_built_page_shows_the_build_s_question_before_python(chapter) -> None:
    assert quiz(chapter).locator("[data-rf-quiz-question]").text_content() == QUIZ.view("new", 0)["question"]
    assert quiz(chapter).locator("label").all_text_contents() == ["Your answer", "Unit"]
    assert quiz(chapter).locator("[data-rf-quiz-result]").get_attribute("aria-live") == "polite"


def test_a_new_question_a_right_answer_and_a_slip_get_python_s_verdict_and_working(chapter) -> None:
    chapter.evaluate(f"localStorage.removeItem({KEY!r})")
    seed = new_question(chapter)
    drawn = QUIZ.draw(seed)
    assert quiz(chapter).locator("[data-rf-quiz-question]").text_content() == drawn.question
    unit = drawn.template.unit
    right = check(chapter, repr(drawn.solution.answer), unit)
    assert right == QUIZ.view("check", seed, repr(drawn.solution.answer), unit)["line"] and right.startswith("Right")
    assert quiz(chapter).locator("[data-rf-quiz-working] li").all_text_contents() == drawn.working()
    slip = drawn.solution.slips[0]  # every chapter-1 template declares at least one
    wrong = check(chapter, repr(slip.value), unit)
    assert wrong == f"Not quite: {slip.diagnosis}"
    assert quiz(chapter).get_attribute("data-verdict") == "wrong"
    expect(quiz(chapter).locator("[data-rf-quiz-progress]")).to_have_text("Quiz: 1 of 1 question right")


@pytest.mark.parametrize("typed", HOSTILE, ids=["1e309", "nan", "10000-digits", "img", "arabic-indic", "empty"])
def test_a_hostile_answer_gets_python_s_one_line_and_inserts_nothing(chapter, typed) -> None:
    seed = int(quiz(chapter).get_attribute("data-rf-seed"))
    unit = QUIZ.draw(seed).template.unit
    line = check(chapter, typed, unit)
    assert line == QUIZ.view("check", seed, typed, unit)["line"]
    assert chapter.evaluate("document.querySelectorAll('[data-rf-quiz] img').length") == 0
    assert chapter.evaluate("window.hacked") is None


def test_progress_shows_on_the_home_page_clears_and_a_tampered_value_is_removed(browser, site) -> None:
    recorded = Recorded.open(browser)
    page = recorded.page()
    page.goto(site.isolated)
    page.evaluate(f"localStorage.setItem({KEY!r}, JSON.stringify({{'prefill-vs-decode': {{attempted: 3, right: 2}}}}))")
    page.reload()
    item = page.locator("article ol li").first
    expect(item.locator(".rf-progress__count")).to_have_text(" (Quiz: 2 of 3 questions right)")
    page.get_by_role("button", name="Clear my quiz progress").click()
    expect(item.locator(".rf-progress__count")).to_have_count(0)
    assert page.evaluate(f"localStorage.getItem({KEY!r})") is None
    for tampered in ('{"prefill-vs-decode": {"attempted": 1, "right": 99}}', "not json", '{"<b>": {}}'):
        page.evaluate(f"localStorage.setItem({KEY!r}, {tampered!r})")
        page.reload()
        # The block starts hidden in the HTML; wait until the page has read the stored value.
        painted = page.locator("[data-rf-progress-home][data-rf-progress-painted]")
        expect(painted).to_be_attached()
        expect(painted).to_be_hidden()
        assert page.locator(".rf-progress__count").count() == 0
        assert page.evaluate(f"localStorage.getItem({KEY!r})") is None
    recorded.close()


PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True}
DESKTOP = {"viewport": {"width": 1280, "height": 800}}


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", ["390px", "1280px"])
def test_no_serious_axe_violation_in_the_quiz_open_right_and_wrong(browser, site, size, scheme) -> None:
    from bench_pages import AXE

    recorded = Recorded.open(browser, color_scheme=scheme, **(PHONE if size == "390px" else DESKTOP))
    page = recorded.page()
    page.goto(site.isolated + FOLDER.url)
    expect(page.locator("body")).to_have_attribute("data-md-color-scheme", "slate" if scheme == "dark" else "default")
    page.add_script_tag(path=str(AXE))
    page.locator("[data-rf-quiz]").scroll_into_view_if_needed()

    def violations() -> list[str]:
        found = page.evaluate(
            "async () => (await axe.run(document.querySelector('[data-rf-quiz]'),"
            " { resultTypes: ['violations'] })).violations"
        )
        return [f"{item['id']}: {item['help']}" for item in found if item["impact"] in ("serious", "critical")]

    assert violations() == [], "question open"
    seed = new_question(page)
    drawn = QUIZ.draw(seed)
    assert check(page, repr(drawn.solution.answer), drawn.template.unit).startswith("Right")
    assert violations() == [], "answered right"
    assert check(page, repr(drawn.solution.answer * 3), drawn.template.unit).startswith("Not quite")
    assert violations() == [], "answered wrong"
    recorded.close()
