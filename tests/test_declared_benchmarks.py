"""Calculators that declare their benchmark (``BENCH_INPUTS``, ``BENCH_TRIGGER``; found by
``scripts/bench_browser.py``): what the benchmark will time is valid input the view answers.

The speed itself is a benchmark, never a timed test (README, "Speed is a benchmark").
"""

from __future__ import annotations

import pytest

from bench_browser import declared_calculators
from sitegen.pages import find
from support import ROOT

DECLARED = declared_calculators()


def test_the_new_chapters_declare_their_calculators_benchmarks() -> None:
    assert {name for _, name, _, _ in DECLARED} >= {"mixture_of_experts", "disaggregate"}


@pytest.mark.parametrize(("url", "name", "trigger", "inputs"), DECLARED, ids=[entry[1] for entry in DECLARED])
def test_each_benchmark_input_is_answered_and_differs_from_the_last(url, name, trigger, inputs) -> None:
    module = find(ROOT / "docs", url.split("/")[1]).calculator(name)
    assert trigger in module.DEFAULTS, f"{name}: BENCH_TRIGGER {trigger!r} is not one of its fields"
    for before, params in zip([None, *inputs], inputs, strict=False):
        assert params != before
        assert set(params) <= set(module.DEFAULTS), f"{name}: {sorted(set(params) - set(module.DEFAULTS))}"
        view = module.view(**{**module.DEFAULTS, **params})
        assert isinstance(view, dict) and view
