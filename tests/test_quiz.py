"""The graded quiz (roofline.quiz) and every chapter's declaration of it (docs/chapters/<slug>/quiz.py).

- the machinery: a seeded draw is the same every time and differs between seeds; the typed
  answer is read strictly, each hostile input answered in one line and never raised; units
  convert; a slip's value gets its diagnosis; the check names chapter, template and field;
- every chapter with a quiz: at least 5 templates, each drawn 200 times with a finite answer,
  slips outside the tolerance, and working whose last number is the answer.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest

import support
from roofline.quiz import (
    MAX_ANSWER_CHARS,
    Quiz,
    QuizError,
    Slip,
    Solution,
    Step,
    Template,
    check_quiz,
    grade,
    read_answer,
    show,
    units_of,
)
from sitegen.pages import chapters

DOCS = support.ROOT / "docs"
QUIZZES = [chapter.slug for chapter in chapters(DOCS) if chapter.quiz_path]


def _toy(answer_of=lambda p: p["x"] * 2.0, slips=True) -> Quiz:
    def solve(p: dict) -> Solution:
        answer = answer_of(p)
        found = (Slip("half", answer / 2, "you halved it."),) if slips else ()
        return Solution(answer, (Step("x doubled", answer, "ms"),), found, {"x": f"{p['x']:,}"})

    return Quiz("toy", [Template("double", "Double {x}, in ms?", {"x": (3, 5, 7, 11)}, solve, "ms")])


def test_a_seed_draws_the_same_question_every_time_and_seeds_differ():
    quiz = _toy()
    assert quiz.view("new", 7) == quiz.view("new", 7)
    drawn = {quiz.draw(seed).params["x"] for seed in range(40)}
    assert drawn == {3, 5, 7, 11}


@pytest.mark.parametrize(
    ("typed", "words"),
    [
        ("1e309", "too large"),
        ("NaN", "not a quantity"),
        ("inf", "not a quantity"),
        ("-inf", "not a quantity"),
        ("9" * 10_000, "10,000 characters long"),
        ("<img src=x onerror=alert(1)>", "markup"),
        ("١٢", "digits 0–9"),
        ("１２", "digits 0–9"),
        ("", "Type a number first"),
        ("   ", "Type a number first"),
        ("0x10", "not a number"),
        ("1,,0", "not a number"),
        ("-4", "positive"),
        ("0", "positive"),
    ],
)
def test_a_hostile_answer_gets_one_clear_line_and_no_grade(typed, words):
    quiz = _toy()
    reply = quiz.view("check", 1, typed, "ms")
    assert reply["correct"] is None
    assert words in reply["line"]
    assert "\n" not in reply["line"] and len(reply["line"]) < 160
    assert "<" not in reply["line"] and "working" not in reply  # nothing echoed, no working for no answer


def test_reading_an_answer_takes_thousands_groups_and_exponents():
    assert read_answer("1,234.5") == 1234.5
    assert read_answer(" 2.5e3 ") == 2500.0
    assert read_answer("1_000") == 1000.0
    assert read_answer(None) == "Type a number as text."
    assert isinstance(read_answer("1" * (MAX_ANSWER_CHARS + 1)), str)


def test_the_right_answer_in_another_unit_is_right_and_a_power_of_a_thousand_off_is_named():
    quiz = _toy()
    drawn = quiz.draw(3)
    answer = drawn.solution.answer  # in ms
    assert grade(drawn, repr(answer / 1e3), "s").correct is True
    assert grade(drawn, repr(answer * 1e3), "µs").correct is True
    wrong_unit = grade(drawn, repr(answer), "s")
    assert wrong_unit.correct is False and "check the unit" in wrong_unit.line
    assert grade(drawn, "5", "GB").correct is None  # a unit of another dimension: pick from the list
    assert units_of("ms") == ("ns", "µs", "ms", "s")


def test_a_slip_s_value_gets_its_diagnosis_and_a_far_answer_gets_the_ratio():
    drawn = _toy().draw(2)
    half = grade(drawn, repr(drawn.solution.answer / 2), "ms")
    assert half.correct is False and half.slip == "half" and "halved" in half.line
    far = grade(drawn, repr(drawn.solution.answer * 3), "ms")
    assert far.correct is False and "3× the answer" in far.line


def test_a_check_reply_carries_the_working_whose_last_line_is_the_answer():
    quiz = _toy()
    drawn = quiz.draw(5)
    reply = quiz.view("check", 5, "1", "ms")
    assert reply["working"][-1].endswith(show(drawn.solution.answer, "ms"))


@pytest.mark.parametrize(
    ("request_", "words"),
    [
        ({"action": "delete", "seed": 1}, "action"),
        ({"action": "new", "seed": -1}, "seed"),
        ({"action": "new", "seed": "1"}, "seed"),
    ],
)
def test_a_malformed_request_raises_one_value_error_line(request_, words):
    with pytest.raises(ValueError, match=words):
        _toy().view(**request_)


def test_show_rounds_to_three_figures_with_separators():
    assert show(1234.5, "tokens/s") == "1,234 tokens/s" or show(1234.5, "tokens/s") == "1,235 tokens/s"
    assert show(0.012345, "ms") == "0.0123 ms"
    assert show(9.996, "GB") == "10.0 GB"
    assert show(295.358, "users") == "295 users"


def test_the_check_names_chapter_template_and_field_for_each_broken_promise():
    assert check_quiz(_toy()) == []
    slip_on_answer = _toy(slips=False)
    template = slip_on_answer.templates[0]

    def close_slip(p: dict) -> Solution:
        solution = template.solve(p)
        return replace(solution, slips=(Slip("close", solution.answer * 1.01, "close."),))

    problems = check_quiz(Quiz("toy", [replace(template, solve=close_slip)]), draws=5)
    assert problems and problems[0].startswith("toy: quiz template 'double': slip 'close'")
    infinite = check_quiz(_toy(answer_of=lambda p: math.inf), draws=5)
    assert infinite and "answer: inf is not a finite positive number" in infinite[0]

    def wrong_last(p: dict) -> Solution:
        solution = template.solve(p)
        return replace(solution, steps=(Step("x doubled", solution.answer + 1, "ms"),))

    last = check_quiz(Quiz("toy", [replace(template, solve=wrong_last)]), draws=5)
    assert last and "steps: the last step gives" in last[0]


def test_a_bad_declaration_is_refused_in_one_line():
    with pytest.raises(QuizError, match="unit 'furlongs'"):
        Template("t", "?", {"x": (1,)}, lambda p: None, "furlongs")
    with pytest.raises(QuizError, match="tolerance"):
        Template("t", "?", {"x": (1,)}, lambda p: None, "ms", tolerance=0.5)
    with pytest.raises(QuizError, match="no choices"):
        Template("t", "?", {"x": ()}, lambda p: None, "ms")


@pytest.mark.parametrize("slug", QUIZZES)
def test_every_chapter_quiz_has_five_templates_and_each_holds_over_200_draws(slug):
    quiz = next(chapter for chapter in chapters(DOCS) if chapter.slug == slug).quiz().QUIZ
    assert quiz.slug == slug
    assert len(quiz.templates) >= 5, f"{slug}: {len(quiz.templates)} quiz templates; write at least 5"
    assert check_quiz(quiz, draws=200) == []


BROKEN_QUIZ = """
from roofline.quiz import Quiz, Slip, Solution, Step, Template


def solve(p):
    answer = p["x"] * 2.0
    slips = (Slip("close", answer * 1.01, "close."),)
    return Solution(answer, (Step("x doubled", answer, "ms"),), slips, {"x": str(p["x"])})


QUIZ = Quiz("x", [Template("double", "Double {x}?", {"x": (3, 5)}, solve, "ms")])
view = QUIZ.view
"""


def test_the_build_draws_the_page_s_question_and_refuses_a_broken_template_in_one_line(tmp_path):
    from sitegen.markers import MarkerError, Markers

    folder = tmp_path / "chapters" / "x"
    folder.mkdir(parents=True)
    (folder / "index.md").write_text("# X\n")
    (folder / "quiz.py").write_text(BROKEN_QUIZ.replace("answer * 1.01", "answer / 2"))
    markers = Markers(docs=tmp_path, wheel_uri="w.whl", snapshot_uri="s.gz", version="v")
    html = markers.replace("<!-- roofline:quiz -->", "chapters/x/index.md", "chapters/x/")
    assert re.search(r"data-rf-quiz-question>Double [35]\?</p>", html)
    assert 'data-rf-quiz="quiz_x"' in html and 'data-rf-module="quiz.py"' in html and 'data-rf-seed="0"' in html
    (folder / "quiz.py").write_text(BROKEN_QUIZ)
    with pytest.raises(MarkerError) as error:
        Markers(docs=tmp_path, wheel_uri="w.whl", snapshot_uri="s.gz", version="v").replace(
            "<!-- roofline:quiz -->", "chapters/x/index.md", "chapters/x/"
        )
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(
        "runtime hook: docs/chapters/x/index.md: <!-- roofline:quiz --> docs/chapters/x/quiz.py:"
        " x: quiz template 'double': slip 'close': "
    )


def test_every_chapter_declares_a_quiz_and_shows_it():
    missing = [chapter.slug for chapter in chapters(DOCS) if not chapter.quiz_path]
    assert missing == [], f"chapters without quiz.py (declare QUIZ = Quiz(...) and view = QUIZ.view): {missing}"
    unshown = [
        chapter.slug
        for chapter in chapters(DOCS)
        if "<!-- roofline:quiz -->" not in (chapter.folder / "index.md").read_text()
    ]
    assert unshown == [], f"chapters whose index.md lacks <!-- roofline:quiz -->: {unshown}"


def test_checking_a_drawn_question_grades_the_same_question_without_solving_it_again():
    calls = []

    def solve(p: dict) -> Solution:
        calls.append(p)
        return Solution(2.0 * p["x"], (Step("x doubled", 2.0 * p["x"], "ms"),), (), {"x": str(p["x"])})

    quiz = Quiz("toy", [Template("double", "Double {x}?", {"x": (3, 5)}, solve, "ms")])
    asked = quiz.view("new", 11)
    graded = quiz.view("check", 11, "1", "ms")
    assert len(calls) == 1 and graded["question"] == asked["question"]
    fresh = Quiz("toy", [Template("double", "Double {x}?", {"x": (3, 5)}, solve, "ms")])
    assert fresh.view("check", 11, "1", "ms")["question"] == asked["question"]  # stateless: the seed is enough


def test_the_benchmark_times_every_chapter_s_new_question_and_grade():
    import bench

    figures = bench.bench_quiz(draws=3)
    assert sorted(figures) == sorted(QUIZZES)
    for timed in figures.values():
        assert set(timed) == {"new_p50_s", "new_p95_s", "check_p50_s", "check_p95_s", "check_cold_p95_s"}
        assert all(value > 0 for value in timed.values())
