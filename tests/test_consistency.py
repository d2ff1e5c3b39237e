"""Site-wide consistency (issue 40): no two pages, and no calculator at the same inputs, show different
figures for one quantity. The pages' numbers are their generated values (figures/values.json); the
rules, and every exception with its reason, are in docs/consistency.toml (sitegen.consistency)."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from sitegen import consistency
from sitegen.pages import find
from support import ROOT

RULES = consistency.load()


def _pages() -> dict[str, dict[str, str]]:
    return json.loads((ROOT / "figures" / "values.json").read_text(encoding="utf-8"))["pages"]


def _answer(calculator: dict[str, Any]) -> str:
    """What the calculator shows under ``key`` at its defaults with ``inputs`` changed."""
    module = find(ROOT / "docs", calculator["page"]).calculator(calculator["name"])
    return module.view(**{**module.FORM.defaults, **calculator.get("inputs", {})})[calculator["key"]]


def test_a_value_name_on_two_pages_shows_one_figure_or_says_why_not() -> None:
    problems = consistency.shared_name_problems(_pages(), RULES)
    assert not problems, "\n".join(problems)


def test_each_quantity_several_pages_and_calculators_show_is_one_figure() -> None:
    problems = consistency.same_problems(_pages(), RULES, _answer)
    assert not problems, "\n".join(problems)


def test_every_differs_entry_is_still_needed() -> None:
    """An exception whose pages now agree, or whose name one page alone uses, is dropped, not kept."""
    pages = _pages()
    for name in RULES.differs:
        shown = [values[name] for values in pages.values() if name in values]
        assert len(shown) > 1 and len(set(shown)) > 1, f"[[differs]] {name} no longer differs: remove it"


def test_the_issue_s_contradiction_is_caught_in_one_line() -> None:
    """Chapter 1's 4-bit crossover 74 against chapter 4's 77 (issue 40), seeded into today's values."""
    pages = _pages()
    pages["chapters/prefill-vs-decode/index.md"] = {
        **pages["chapters/prefill-vs-decode/index.md"],
        "crossover_int4_awq": "74",
    }
    problems = consistency.same_problems(pages, RULES)
    assert len(problems) == 1 and "\n" not in problems[0]
    assert "crossover_int4_awq" in problems[0] and "'74'" in problems[0] and "'77'" in problems[0]
    assert "cb_h100_int4_awq" in problems[0]


def test_a_shared_name_with_two_figures_is_caught() -> None:
    pages = {"a/index.md": {"gpu_memory": "80 GB", "x": "1"}, "b/index.md": {"gpu_memory": "85.5 GB", "x": "1.0"}}
    (problem,) = consistency.shared_name_problems(pages, RULES)
    assert problem.startswith("n.gpu_memory is '80 GB' on a/index.md but '85.5 GB' on b/index.md")


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [("812 GB", "811.7 GB", True), ("74", "77", False), ("3.35", "3.350", True), ("1,342", "1342", True)],
)
def test_figures_agree_to_the_coarser_rounding(first: str, second: str, same: bool) -> None:
    assert consistency.agree(first, second) is same


def test_the_check_fails_on_the_site_of_e5e79e6() -> None:
    """At e5e79e6 chapter 1 called its weights-only 74 "the 4-bit crossover" and had no AWQ crossover to
    set beside chapter 4's 77; on that commit's values the check fails and names the missing figure."""
    shown = subprocess.run(
        ["git", "show", "e5e79e6:figures/values.json"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if shown.returncode != 0:
        pytest.skip("this checkout has no history (a copy without .git)")
    old = json.loads(shown.stdout)["pages"]
    assert old["chapters/prefill-vs-decode/index.md"]["crossover_int4_weights"] == "74"
    problems = consistency.same_problems(old, RULES)
    assert any("n.crossover_int4_awq" in line for line in problems), problems
