"""Graded questions with fresh numbers each attempt: templates, seeded draws, strict grading.

A chapter declares its questions in ``docs/chapters/<slug>/quiz.py`` (beside its page, as its
calculators are): ``QUIZ = Quiz("<slug>", [Template(...), ...])`` and ``view = QUIZ.view``.
The same file is imported by the build (which pre-draws one question into the page and checks
every template, ``check_quiz``) and by the reader's Pyodide worker, which answers the page's
"New question" and "Check" through the calculators' channel (``roofline_views.answer``).

- A ``Template`` is a question with named parameters, each drawn from a tuple of choices (GPU,
  model and precision ids from the spec files, batches, contexts, ...), and ``solve``, which
  calls the package and returns a ``Solution``: the answer in the template's unit, the worked
  steps (each a sentence and the number it reaches; the last one is the answer) and the known
  slips, each the number a reader who made it would type and the diagnosis to show.
- ``Quiz.draw(seed)`` is deterministic per seed: ``random.Random(f"{slug}:{seed}")`` (string
  seeds hash with SHA-512, so CPython and Pyodide draw alike) picks the template, then each
  parameter in the template's order. A ``solve`` that returns None (a model that does not fit
  the GPU) makes the draw go on with the same generator.
- ``grade`` reads the typed answer strictly (``read_answer``: ASCII digits, optional ``,``/``_``
  groups, a fraction, an exponent; at most ``MAX_ANSWER_CHARS`` characters) and converts it from
  the unit the reader picked (``UNITS``). It is right when ``|typed − answer| ≤ tolerance ×
  answer``; otherwise the nearest slip within the same tolerance names the mistake, and a
  number off by a power of 1,000 says "check the unit".

Nothing here raises on a reader's input: every bad answer is one line (``Graded.line``).
"""

from __future__ import annotations

import math
import random
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .parsing import DIGIT_GROUPS

#: A unit the reader may pick: its dimension and its size in the dimension's base unit.
UNITS: dict[str, tuple[str, float]] = {
    "ns": ("time", 1e-9),
    "µs": ("time", 1e-6),
    "ms": ("time", 1e-3),
    "s": ("time", 1.0),
    "tokens/s": ("rate", 1.0),
    "k tokens/s": ("rate", 1e3),
    "B": ("bytes", 1.0),
    "kB": ("bytes", 1e3),
    "MB": ("bytes", 1e6),
    "GB": ("bytes", 1e9),
    "TB": ("bytes", 1e12),
    "users": ("users", 1.0),
    "requests/s": ("requests", 1.0),
    "tokens": ("tokens", 1.0),
    "GPUs": ("gpus", 1.0),
    "×": ("ratio", 1.0),
    "%": ("share", 0.01),
}
#: The longest answer read: 40 characters hold any number a question here needs.
MAX_ANSWER_CHARS = 40
#: A typed number: digit groups, a fraction, an exponent; a leading "-" is read to refuse it by name.
NUMBER = re.compile(rf"-?(?:{DIGIT_GROUPS}(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: Questions a quiz keeps drawn, newest last, so grading one does not solve it again.
RECENT_DRAWS = 8
#: A seed the page may send: a whole number from 0 to 2**53 (what JavaScript counts exactly).
MAX_SEED = 2**53


class QuizError(ValueError):
    """A declaration or a request the quiz cannot use; the message is one line."""


def words(params: Mapping[str, Any], specs: Any = None) -> dict[str, str]:
    """A question's words for drawn ``params``: whole numbers with thousands separators
    (``32,768``), other numbers as Python's ``g`` writes them, and a ``gpu`` or ``model`` id
    replaced by its name from ``specs`` (a ``SpecSet``)."""
    filled: dict[str, str] = {}
    for key, value in params.items():
        if specs is not None and key in ("gpu", "model"):
            filled[key] = (specs.gpu if key == "gpu" else specs.model)(value).name
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            filled[key] = str(value)
        elif isinstance(value, int):
            filled[key] = f"{value:,}"
        else:
            filled[key] = f"{value:g}"
    return filled


def units_of(unit: str) -> tuple[str, ...]:
    """The units a reader may pick for an answer in ``unit``: every unit of its dimension."""
    dimension = UNITS[unit][0]
    return tuple(name for name, (kind, _) in UNITS.items() if kind == dimension)


def show(value: float, unit: str) -> str:
    """``value`` to three significant figures with thousands separators, then the unit: ``1,230 tokens/s``."""
    if not math.isfinite(value):
        return f"{value} {unit}"
    if value == int(value) and abs(value) < 1e15:  # a count (users, GPUs, tokens) shows whole
        text = f"{int(value):,}"
        return f"{text}{unit}" if unit in ("%", "×") else f"{text} {unit}"
    digits = max(0, 2 - math.floor(math.log10(abs(value))))
    rounded = round(value, digits)
    if digits and abs(rounded) >= 10 ** (3 - digits):  # 9.996 rounds to 10.00: one decimal fewer
        digits -= 1
    text = f"{rounded:,.{digits}f}"
    return f"{text}{unit}" if unit in ("%", "×") else f"{text} {unit}"


@dataclass(frozen=True)
class Step:
    """One line of the working: ``text`` says what is computed, ``value`` (in ``unit``) what it comes to."""

    text: str
    value: float
    unit: str

    def line(self) -> str:
        """The step as the reader sees it: ``text = value unit``."""
        return f"{self.text} = {show(self.value, self.unit)}"


@dataclass(frozen=True)
class Slip:
    """A known mistake: ``value`` is what a reader who makes it would get (in the template's unit)."""

    name: str
    value: float
    diagnosis: str


@dataclass(frozen=True)
class Solution:
    """A drawn question's answer (in its template's unit), its working and its known slips.

    ``words`` fill the question's ``{placeholders}`` (the GPU's and model's names, the numbers
    drawn, written as a reader reads them)."""

    answer: float
    steps: tuple[Step, ...]
    slips: tuple[Slip, ...] = ()
    words: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Template:
    """One kind of question. ``params``: each parameter's choices, drawn in this order;
    ``solve(params)`` returns the Solution (or None: redraw); ``unit`` the answer's unit (a
    key of ``UNITS``); ``tolerance`` the relative error still marked right."""

    name: str
    question: str
    params: Mapping[str, Sequence[Any]]
    solve: Callable[[dict[str, Any]], Solution | None]
    unit: str
    tolerance: float = 0.02

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise QuizError(f"template {self.name!r}: unit {self.unit!r} is not one of {', '.join(UNITS)}")
        if not 0 < self.tolerance <= 0.1:
            raise QuizError(f"template {self.name!r}: tolerance {self.tolerance} must be above 0 and at most 0.1")
        for name, choices in self.params.items():
            if not len(choices):
                raise QuizError(f"template {self.name!r}: parameter {name!r} has no choices")


@dataclass(frozen=True)
class Drawn:
    """One question as drawn for ``seed``."""

    seed: int
    template: Template
    params: dict[str, Any]
    solution: Solution

    @property
    def question(self) -> str:
        """The question's text, its placeholders filled with the solution's words."""
        return self.template.question.format(**self.solution.words)

    def working(self) -> list[str]:
        """The worked solution, one line a step; the last line shows the answer."""
        return [step.line() for step in self.solution.steps]


@dataclass(frozen=True)
class Graded:
    """The verdict on one typed answer: ``correct`` is None when the answer could not be read."""

    correct: bool | None
    line: str
    slip: str = ""


def _odd_character(text: str) -> str | None:
    """The line for a character no number here holds (a digit of another script, markup), or None."""
    for character in text:
        if character.isdigit() and not "0" <= character <= "9":
            name = unicodedata.name(character, "a digit of another script").lower()
            return f"Type the number with the digits 0–9: the answer holds {name}."
        if character in "<>&\"'`":
            return "Type a number only: markup and quotes are not part of an answer."
    return None


def read_answer(text: object) -> float | str:
    """The typed ``text`` as a positive finite number, or the one line that says why it is not one."""
    if not isinstance(text, str):
        return "Type a number as text."
    typed = text.strip()
    if not typed:
        return "Type a number first, then press Check."
    if len(typed) > MAX_ANSWER_CHARS:
        return f"That answer is {len(typed):,} characters long; type a number of at most {MAX_ANSWER_CHARS}."
    odd = _odd_character(typed)
    if odd:
        return odd
    if typed.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        return f"{typed} is not a quantity: type a finite number, such as 12.5 or 3e4."
    if not NUMBER.fullmatch(typed):
        return "That is not a number: use digits, a decimal point, an exponent such as 2.5e3 (commas group thousands)."
    value = float(typed.replace(",", "").replace("_", ""))
    if not math.isfinite(value):
        return "That number is too large to be an answer here: type it with an exponent that fits, such as 2.5e12."
    if value <= 0:
        return "Every answer here is a positive quantity: type a number above 0."
    return value


def _near(value: float, target: float, tolerance: float) -> bool:
    return abs(value - target) <= tolerance * abs(target)


def grade(drawn: Drawn, text: object, unit: object) -> Graded:
    """Grade ``text`` typed in ``unit`` against ``drawn``'s answer; never raises on a reader's input."""
    template = drawn.template
    allowed = units_of(template.unit)
    if not isinstance(unit, str) or unit not in allowed:
        return Graded(None, f"Pick the answer's unit from the list ({', '.join(allowed)}).")
    value = read_answer(text)
    if isinstance(value, str):
        return Graded(None, value)
    typed = value * UNITS[unit][1] / UNITS[template.unit][1]  # in the template's unit
    answer = drawn.solution.answer
    if _near(typed, answer, template.tolerance):
        return Graded(True, f"Right: {show(answer, template.unit)} (within {template.tolerance:.0%}).")
    slips = [slip for slip in drawn.solution.slips if _near(typed, slip.value, template.tolerance)]
    if slips:
        slip = min(slips, key=lambda s: abs(typed - s.value))
        return Graded(False, f"Not quite: {slip.diagnosis}", slip.name)
    for power in (1e3, 1e6, 1e-3, 1e-6):
        if _near(typed, answer * power, template.tolerance):
            return Graded(False, "The digits are right but the size is not: check the unit you picked.", "unit")
    ratio = typed / answer
    how = f"your number is {ratio:.2g}× the answer" if ratio >= 1 else f"the answer is {1 / ratio:.2g}× your number"
    return Graded(False, f"Not quite: {how}. The working below shows each step.")


class Quiz:
    """A chapter's questions: ``slug`` names the chapter, ``templates`` its kinds of question."""

    def __init__(self, slug: str, templates: Sequence[Template]) -> None:
        names = [template.name for template in templates]
        if not templates:
            raise QuizError(f"quiz {slug!r} has no templates")
        if len(set(names)) != len(names):
            raise QuizError(f"quiz {slug!r}: two templates share a name ({', '.join(names)})")
        self.slug = slug
        self.templates = tuple(templates)
        #: The last questions drawn, by seed: "Check" grades the question "New question" drew, so it
        #: is not solved again (a simulated question costs a serving run).
        self._drawn: dict[int, Drawn] = {}

    def template(self, name: str) -> Template:
        """The template called ``name``; QuizError naming the quiz if there is none."""
        for template in self.templates:
            if template.name == name:
                return template
        raise QuizError(f"quiz {self.slug!r} has no template {name!r}")

    def draw(self, seed: int, template: str | None = None) -> Drawn:
        """The question for ``seed`` (of the named ``template``, or of one the seed picks)."""
        rng = random.Random(f"{self.slug}:{seed}")
        chosen = self.template(template) if template else rng.choice(self.templates)
        for _ in range(200):
            params = {name: rng.choice(tuple(choices)) for name, choices in chosen.params.items()}
            solution = chosen.solve(params)
            if solution is not None:
                return Drawn(seed, chosen, params, solution)
        raise QuizError(f"quiz {self.slug!r}: template {chosen.name!r} found no solvable parameters in 200 tries")

    def view(self, action: str, seed: int, answer: str = "", unit: str = "") -> dict[str, Any]:
        """What the page shows: ``action`` "new" draws the question for ``seed``; "check" grades
        ``answer`` in ``unit`` against it. Raises ValueError (one line) for a malformed request."""
        if action not in ("new", "check"):
            raise ValueError(f"action must be 'new' or 'check', got {str(action)[:20]!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
            raise ValueError("seed must be a whole number from 0 to 2**53")
        drawn = self._drawn.get(seed) or self.draw(seed)
        self._drawn.pop(seed, None)
        self._drawn[seed] = drawn
        while len(self._drawn) > RECENT_DRAWS:
            del self._drawn[next(iter(self._drawn))]
        reply: dict[str, Any] = {
            "seed": seed,
            "template": drawn.template.name,
            "question": drawn.question,
            "units": list(units_of(drawn.template.unit)),
            "unit": drawn.template.unit,
        }
        if action == "check":
            graded = grade(drawn, answer, unit)
            reply.update(correct=graded.correct, line=graded.line, slip=graded.slip)
            if graded.correct is not None:
                reply["working"] = drawn.working()
        return reply


def check_quiz(quiz: Quiz, draws: int = 200) -> list[str]:
    """Every template drawn ``draws`` times: the answer finite and positive, the working's last
    number the answer, the shown answer graded right, every slip outside the tolerance and
    diagnosed. Returns one line per problem, naming the chapter, template and field."""
    problems: list[str] = []
    for template in quiz.templates:
        where = f"{quiz.slug}: quiz template {template.name!r}"
        for seed in range(draws):
            try:
                drawn = quiz.draw(seed, template.name)
                question = drawn.question
            except Exception as error:  # a bug in solve, or a placeholder words does not fill
                problems.append(f"{where}: solve: {type(error).__name__}: {error} (seed {seed})")
                break
            problem = _check_drawn(drawn, question)
            if problem:
                problems.append(f"{where}: {problem} (seed {seed}, {drawn.params})")
                break
    return problems


def _check_drawn(drawn: Drawn, question: str) -> str | None:
    solution, template = drawn.solution, drawn.template
    answer = solution.answer
    if not isinstance(answer, (int, float)) or not math.isfinite(answer) or answer <= 0:
        return f"answer: {answer!r} is not a finite positive number"
    if "{" in question or "}" in question:
        return "question: a placeholder is left unfilled"
    if not solution.steps:
        return "steps: the working is empty"
    last = solution.steps[-1]
    if last.value != answer or last.unit != template.unit:
        return f"steps: the last step gives {last.value!r} {last.unit}, not the answer {answer!r} {template.unit}"
    shown_answer = show(answer, template.unit)
    if shown_answer not in last.line():
        return f"steps: the working's last line does not show the answer {shown_answer}"
    typed = shown_answer.removesuffix(template.unit).strip()
    if grade(drawn, typed, template.unit).correct is not True:
        return f"tolerance: the answer as shown ({shown_answer}) is not graded right"
    for slip in solution.slips:
        if not math.isfinite(slip.value) or slip.value <= 0:
            return f"slip {slip.name!r}: value {slip.value!r} is not a finite positive number"
        if _near(slip.value, answer, template.tolerance):
            return f"slip {slip.name!r}: {show(slip.value, template.unit)} is within the tolerance of the answer"
        if grade(drawn, repr(slip.value), template.unit).slip != slip.name:
            return f"slip {slip.name!r}: typing its value does not get its diagnosis"
    return None
