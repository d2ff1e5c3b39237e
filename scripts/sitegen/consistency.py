"""One quantity, one figure, site-wide: the pages' generated values checked against each other.

Every number a page quotes is in ``figures/values.json`` under the page and its ``{{ n.NAME }}``.
Two rules, each broken rule one line naming both pages, both names and both figures:

- a value name two pages both use means one quantity at one set of inputs, so one figure, unless
  ``docs/consistency.toml`` lists it under ``[[differs]]`` with the reason the inputs differ;
- a ``[[same]]`` entry names one quantity at one set of inputs that pages (and calculators, at stated
  inputs) quote under names of their own; all must agree to the coarser figure's rounding
  (``812 GB`` agrees with ``811.7 GB``; chapter 1's ``74`` does not agree with chapter 4's ``77``).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "docs" / "consistency.toml"
SOURCE = "docs/consistency.toml"
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.(\d+))?")


class ConsistencyError(Exception):
    """``docs/consistency.toml`` is malformed; the message is one line."""


@dataclass(frozen=True)
class Same:
    """One quantity at one set of inputs, and where the site shows it."""

    quantity: str
    values: tuple[tuple[str, str], ...]
    calculators: tuple[dict[str, Any], ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Rules:
    same: tuple[Same, ...]
    differs: dict[str, str]


def load(path: Path = TABLE) -> Rules:
    """The rules of ``path``; ConsistencyError names a bad entry."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    same = []
    for number, entry in enumerate(data.get("same", []), 1):
        where = f"{SOURCE}: [[same]] #{number}"
        if not isinstance(entry.get("quantity"), str) or not entry.get("values"):
            raise ConsistencyError(f'{where}: needs quantity (text) and values ("PAGE NAME" each)')
        pairs = []
        for value in entry["values"]:
            page, _, name = str(value).partition(" ")
            if not page.endswith(".md") or not name:
                raise ConsistencyError(f'{where}: {value!r} is not "PAGE NAME" (chapters/x/index.md name)')
            pairs.append((page, name))
        calculators = tuple(entry.get("calculators", ()))
        for calculator in calculators:
            if not {"page", "name", "key"} <= set(calculator):
                raise ConsistencyError(f"{where}: a calculator needs page, name and key (inputs optional)")
        same.append(Same(entry["quantity"], tuple(pairs), calculators))
    differs = {}
    for number, entry in enumerate(data.get("differs", []), 1):
        if not isinstance(entry.get("name"), str) or not isinstance(entry.get("why"), str) or not entry["why"]:
            raise ConsistencyError(f"{SOURCE}: [[differs]] #{number}: needs name and why (the inputs that differ)")
        differs[entry["name"]] = entry["why"]
    return Rules(tuple(same), differs)


def agree(first: str, second: str) -> bool:
    """Whether two shown figures are one figure: equal numbers to the coarser one's decimals (their
    first numbers, thousands separators dropped), or, without a number, equal text."""
    a, b = _NUMBER.search(first), _NUMBER.search(second)
    if a is None or b is None:
        return first == second
    digits = min(len(a.group(1) or ""), len(b.group(1) or ""))
    x, y = float(a.group(0).replace(",", "")), float(b.group(0).replace(",", ""))
    return round(x, digits) == round(y, digits) or abs(x - y) <= 0.5 * 10**-digits * (1 + 1e-9)


def shared_name_problems(pages: dict[str, dict[str, str]], rules: Rules) -> list[str]:
    """One line for each value name two pages show with different figures that ``[[differs]]`` does not explain."""
    seen: dict[str, tuple[str, str]] = {}
    problems = []
    for page, values in pages.items():
        for name, text in values.items():
            if name in seen and name not in rules.differs and not agree(seen[name][1], text):
                first, shown = seen[name]
                problems.append(
                    f"n.{name} is {shown!r} on {first} but {text!r} on {page}: one name, two figures; compute both"
                    f" from the same inputs, rename one, or list the name under [[differs]] in {SOURCE} with why"
                )
            seen.setdefault(name, (page, text))
    return problems


def same_problems(
    pages: dict[str, dict[str, str]], rules: Rules, answer: Callable[[dict[str, Any]], str] | None = None
) -> list[str]:
    """One line for each ``[[same]]`` quantity whose pages (and calculators, through ``answer``) disagree."""
    problems = []
    for same in rules.same:
        shown = []
        for page, name in same.values:
            if name not in pages.get(page, {}):
                problems.append(f"{SOURCE}: {page} has no value n.{name} ({same.quantity}); fix the entry")
                continue
            shown.append((f"{page} n.{name}", pages[page][name]))
        if answer is not None:
            for calculator in same.calculators:
                where = f"calculator {calculator['page']}/{calculator['name']} {calculator['key']}"
                shown.append((where, answer(calculator)))
        for where, text in shown[1:]:
            if not agree(shown[0][1], text):
                problems.append(
                    f"{shown[0][0]} shows {shown[0][1]!r} but {where} shows {text!r} for one quantity"
                    f" ({same.quantity}): compute both with the same function and inputs"
                )
    return problems
