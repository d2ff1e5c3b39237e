"""Deep nesting is refused before any parser sees it (issue 42, NC1).

In Pyodide a config.json nested 3,000 deep overflowed JavaScript's stack inside ``json.loads``
and killed the calculators' Python for the page; CPython raises RecursionError instead, so
the check that matters here is that the parsers are never reached: every reader counts the
nesting first (``roofline.loader.MAX_NESTING``) and answers in one line naming the limit.
"""

from __future__ import annotations

import json
import time
import tomllib

import pytest

from roofline import SpecError
from roofline.hfconfig import parse_config
from roofline.loader import MAX_NESTING, nesting_depth, parse_specs
from roofline.ownspecs import own_entry, parse_gpu_text

LIMIT = f"nested more than {MAX_NESTING} deep"
DEEP = 3000


def _never_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a parser was reached")

    monkeypatch.setattr(json, "loads", refuse)
    monkeypatch.setattr(tomllib, "loads", refuse)


@pytest.mark.parametrize(
    ("read", "text"),
    [
        (lambda text: own_entry("model", "own-00000001", text), '{"a":' + "[" * DEEP + "]" * DEEP + "}"),
        (lambda text: own_entry("model", "own-00000002", text), '{"b":' * DEEP + "1" + "}" * DEEP),
        (lambda text: own_entry("gpu", "own-00000003", text), '{"a":' + "[" * DEEP + "]" * DEEP + "}"),
        (lambda text: own_entry("gpu", "own-00000004", text), "x = " + "[" * DEEP + "]" * DEEP + "\n"),
        (lambda text: own_entry("gpu", "own-00000005", text), "x = " + "{a = " * DEEP + "1" + "}" * DEEP + "\n"),
        (lambda text: parse_config(text), "[" * DEEP),
        (lambda text: parse_gpu_text(text, "gpu.toml"), "x = " + "[" * DEEP),
        (lambda text: parse_specs(text, "specs.toml"), "x = " + "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1)),
    ],
)
def test_deep_nesting_is_refused_in_one_line_before_parsing(read, text: str, monkeypatch) -> None:
    _never_parse(monkeypatch)
    with pytest.raises(SpecError, match=LIMIT) as caught:
        read(text)
    assert "\n" not in str(caught.value)


def test_nesting_up_to_the_limit_reaches_the_parser() -> None:
    text = '{"a": ' + "[" * MAX_NESTING + "]" * MAX_NESTING + "}"
    assert nesting_depth(text) == MAX_NESTING + 1
    inside = '{"a": ' + "[" * (MAX_NESTING - 1) + "]" * (MAX_NESTING - 1) + "}"
    with pytest.raises(SpecError, match="architectures"):  # read, then refused for what it lacks
        own_entry("model", "own-0000000a", inside)


@pytest.mark.parametrize(
    ("text", "toml", "depth"),
    [
        ('{"a": "[[[[", "b": ["]"]}', False, 2),  # brackets in strings do not nest
        ('{"a": "\\"[[[", "b": {}}', False, 2),  # nor after an escaped quote
        ('x = "[[[" # [[[[\ny = [1]\n', True, 1),  # nor in TOML strings and comments
        ("x = '[[[['\ny = '''\n[[[\n'''\nz = \"\"\"\n\"[[[\n\"\"\"\n", True, 0),
        ("[gpu.a]\nx = [[1], [2]]\n[[b]]\n", True, 2),
        ("]]]]" + "[" * 10, False, 6),  # a stray closer: the parser stops there, the count only lowers
    ],
)
def test_the_count_skips_strings_and_comments(text: str, toml: bool, depth: int) -> None:
    assert nesting_depth(text, toml=toml) == depth


@pytest.mark.parametrize(
    "text",
    ['\\"' * 500_000, '"' + "\\" * 999_999, "[" * 999_999, "[]" * 500_000, '"""' + '\\"' * 300_000, "'''" * 333_333],
)
def test_the_count_is_linear_on_hostile_text(text: str) -> None:
    started = time.perf_counter()
    nesting_depth(text)
    nesting_depth(text, toml=True)
    assert time.perf_counter() - started < 5  # about 0.2 s for the slowest here; quadratic would take hours
