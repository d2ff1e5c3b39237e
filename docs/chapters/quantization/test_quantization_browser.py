"""Chapter 4's page in Debian's Chromium: the "Which format on my GPU" calculator and what a reader sees.

On the tests' one built site (``conftest.site``): the calculator shows, for each input changed,
what CPython computes for the same inputs (ceiling and expected range per format); the page
letters its five figures, collapses its self-check questions and shows the interview box.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sitegen.pages import find
from support import CalculatorUnderTest, assert_figures_self_check_and_interview

pytestmark = [pytest.mark.browser, pytest.mark.slow]
expect = pytest.importorskip("playwright.sync_api").expect

FOLDER = find(Path(__file__).resolve().parents[2], "quantization")
calculator_view = FOLDER.calculator("which_format")
CALCULATOR = CalculatorUnderTest(
    calculator_view,
    "which_format",
    ("verdict", "bf16", "fp8", "int8_sq", "int4_awq", "nvfp4", "users", "critical", "explain"),
)
form = CALCULATOR.form
shown = CALCULATOR.displayed
expected = CALCULATOR.expected


def test_the_calculator_shows_what_cpython_computes_for_each_input(chapter) -> None:
    CALCULATOR.assert_follows(
        chapter,
        [
            ("gpu", "a100-80gb"),
            ("prompt", 0),
            ("batch", 256),
            ("context", 32768),
            ("model", "llama-3.1-70b"),
            ("batch", 1),
            ("gpu", "b200"),
        ],
    )
    # On the B200 NVFP4 runs its own fp4 math; the A100 step above ran it weight-only.
    assert "nvfp4: fp4 math;" in shown(chapter)["explain"]


def test_the_page_letters_five_figures_and_shows_its_self_check_and_interview_box(chapter) -> None:
    answers = assert_figures_self_check_and_interview(chapter, "abcde")
    assert "critical batch" in answers.split("Strong:")[1]
