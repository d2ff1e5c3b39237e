"""The calculator contract (roofline.forms): one declaration, checked the same way everywhere.

A declaration that breaks the contract fails on import with one line naming the key;
an input the form refuses is one line naming the field and what it must be, with the
words the page shows too; decimal steps are exact; rules between fields name both.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from decimal import Decimal

import pytest

import support
from roofline import parsing
from roofline.forms import Field, Form, FormError, InputError, Output, Rule, plain


def form(**changes: object) -> Form:
    declared = {
        "title": "T",
        "legend": "L",
        "fields": [
            Field.choice("gpu", "GPU", [("h100-sxm", "H100"), ("h200", "H200")], default="h100-sxm"),
            Field.number("users", "Users", low=1, high=4096, default=1),
            Field.number("accept", "Acceptance", low=0, high=1, step=0.05, default=0.8),
            Field.number("low", "From", low=1, high=100, default=10),
            Field.number("high", "To", low=1, high=100, default=20),
        ],
        "outputs": [Output.text("speed", "Speed"), Output.bar("memory", "Memory", share="share")],
        "rules": [Rule.at_most("low", "high", "'From' must not be above 'To'.")],
    }
    declared.update(changes)
    return Form(**declared)


def test_the_defaults_pass_and_whole_numbers_come_back_as_ints() -> None:
    values = form().validate({"gpu": "h200", "users": 4096.0, "accept": 0.8, "low": 3, "high": 3})
    assert values == {"gpu": "h200", "users": 4096, "accept": 0.8, "low": 3, "high": 3}
    assert isinstance(values["users"], int)


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (0.8, True),
        (0.85, True),
        (0.05, True),
        (0, True),
        (1, True),
        (0.3, True),
        (0.83, False),
        (1.05, False),
        (-0.05, False),
        (float("nan"), False),
        ("0.8", False),
        (True, False),
    ],
)
def test_a_decimal_step_is_exact(value: object, ok: bool) -> None:
    request = dict(form().defaults, accept=value)
    if ok:
        assert form().validate(request)["accept"] == value
    else:
        with pytest.raises(InputError, match=r"field 'accept': must be a number from 0 to 1 in steps of 0\.05"):
            form().validate(request)


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"users": 0}, "users", "must be a whole number from 1 to 4,096, got 0"),
        ({"users": 1.5}, "users", "must be a whole number from 1 to 4,096, got 1.5"),
        ({"users": True}, "users", "got True"),
        ({"gpu": "h100"}, "gpu", "must be one of the choices, got 'h100' (did you mean 'h100-sxm'?)"),
        ({"low": 30, "high": 20}, "low", "'From' must not be above 'To'."),
        ({"extra": 1}, "extra", "is not a field of this calculator (fields: gpu, users, accept, low, high)"),
    ],
)
def test_a_refused_input_is_one_line_naming_the_field(change: dict, field: str, message: str) -> None:
    with pytest.raises(InputError) as refused:
        form().validate(dict(form().defaults, **change))
    assert refused.value.fields[0] == field and message in str(refused.value)
    assert str(refused.value).startswith(f"field '{field}': ") and "\n" not in str(refused.value)


def test_a_missing_field_says_what_it_must_be() -> None:
    request = form().defaults
    del request["users"]
    with pytest.raises(InputError, match="field 'users': is missing; it must be a whole number from 1 to 4,096"):
        form().validate(request)


def with_counts(allowed: list[tuple[str, str]]) -> Form:
    """The test form with a GPU count, and a rule that allows only ``allowed`` (gpu, count) pairs."""
    fields = [*form().fields, Field.choice("count", "GPUs", [("1", "1"), ("2", "2"), ("4", "4")], default="1")]
    message = "The model does not fit on {count} × {gpu}: choose more GPUs."
    return form(fields=fields, rules=[Rule.allowed(("count", "gpu"), allowed, message)])


def test_an_allowed_rule_takes_only_its_combinations_and_names_the_choices_in_its_message() -> None:
    checked = with_counts([("1", "h200"), ("2", "h100-sxm"), ("2", "h200"), ("1", "h100-sxm"), ("4", "h200")])
    assert checked.validate(dict(checked.defaults, count="4", gpu="h200"))["count"] == "4"
    strict = with_counts([("2", "h100-sxm"), ("1", "h200"), ("1", "h100-sxm")])
    with pytest.raises(InputError) as refused:
        strict.validate(dict(strict.defaults, count="4", gpu="h100-sxm"))
    assert refused.value.fields == ("count", "gpu")
    assert str(refused.value) == "field 'count': The model does not fit on 4 × H100: choose more GPUs."
    # The page reads the combinations as a tree: each field's value in turn, the last one's values listed.
    assert strict.rules[0].declaration() == {
        "kind": "allowed",
        "first": "count",
        "second": "gpu",
        "fields": ["count", "gpu"],
        "message": "The model does not fit on {count} × {gpu}: choose more GPUs.",
        "allowed": {"1": ["h100-sxm", "h200"], "2": ["h100-sxm"]},
    }


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (Rule.allowed(("gpu", "count"), [], "m"), "rule 'allowed' lists no combination"),
        (Rule.allowed(("gpu", "count"), [("h200",)], "m"), "does not give one value per field"),
        (Rule.allowed(("gpu", "count"), [("h100", "1")], "m"), "'h100' is not a choice of 'gpu'"),
        (Rule.allowed(("gpu", "count"), [("h200", "1")], "m"), "the defaults break a rule: field 'gpu': m"),
        (Rule.allowed(("gpu", "count"), [("h100-sxm", "1")], "{model}"), "message names {model}"),
        (Rule.allowed(("gpu", "nope"), [("h100-sxm", "1")], "m"), "rule 'allowed' names 'nope', which is not a field"),
    ],
)
def test_an_allowed_rule_that_breaks_the_contract_is_one_line(rule: Rule, message: str) -> None:
    fields = [*form().fields, Field.choice("count", "GPUs", [("1", "1"), ("2", "2")], default="1")]
    with pytest.raises(FormError) as broken:
        form(fields=fields, rules=[rule])
    assert message in str(broken.value) and "\n" not in str(broken.value)
    with pytest.raises(FormError, match="needs two fields or more"):
        Rule.allowed(("gpu",), [("h100-sxm",)], "m")


def test_a_broken_rule_names_both_fields() -> None:
    with pytest.raises(InputError) as refused:
        form().validate(dict(form().defaults, low=50, high=20))
    assert refused.value.fields == ("low", "high")
    assert form().validate(dict(form().defaults, low=20, high=20))["low"] == 20  # at_most allows equal
    below = form(rules=[Rule.below("low", "high", "x")])
    with pytest.raises(InputError):
        below.validate(dict(below.defaults, low=20, high=20))


def test_a_rule_for_one_choice_holds_for_the_others_and_names_that_field_too() -> None:
    """A limit of one scheduler (the serving widget's max batch below the chunked token budget)
    applies only while that choice is made, as the command line applies it (issue 42, NW3)."""
    rule = Rule.below("low", "high", "Below, for the H200.", when=("gpu", "h200"))
    strict = form(rules=[rule])
    assert strict.validate(dict(strict.defaults, low=30, high=20))["low"] == 30  # the H100 is chosen
    with pytest.raises(InputError) as refused:
        strict.validate(dict(strict.defaults, gpu="h200", low=30, high=20))
    assert refused.value.fields == ("low", "high", "gpu")
    assert rule.declaration()["when"] == {"field": "gpu", "value": "h200"}
    with pytest.raises(FormError, match="applies when 'gpu' is 'b200', which is not one of that field's choices"):
        form(rules=[Rule.below("low", "high", "m", when=("gpu", "b200"))])


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"title": ""}, "the form needs a title and a legend"),
        ({"fields": []}, "at least one field and one output"),
        ({"fields": [Field.number("users", "Users", low=1, high=10, default=0)]}, "field 'users': default 0 is not"),
        ({"fields": [Field.number("Users", "Users", low=1, high=10, default=1)]}, "field 'Users': a field's name"),
        ({"fields": [Field.choice("gpu", "GPU", [("a", "A")], default="b")]}, "default 'b' is not one of its choices"),
        ({"fields": [Field.choice("gpu", "GPU", [], default="b")]}, "needs choices (Field.choice) or bounds"),
        ({"fields": [Field.number("x", "X", low=0, high=1, step=1e-7, default=0)]}, "at most 6 decimals"),
        ({"fields": [Field.number("x", "X", low=2, high=1, default=1)]}, "needs low <= high and a positive step"),
        ({"outputs": [Output.text("speed", "")]}, "output 'speed' (text) needs a label (a row) or a caption"),
        ({"outputs": [Output.vega("chart", "")]}, "output 'chart' (vega) needs a label (a row) or a caption"),
        ({"outputs": [Output.text("fits", "Fits")]}, "key 'fits' must be lowercase letters"),
        ({"outputs": [Output.text("a", "A"), Output.text("a", "B")]}, "output 'a' is declared twice"),
        ({"rules": [Rule.at_most("low", "nope", "m")]}, "rule 'at_most' names 'nope', which is not a field"),
        ({"rules": [Rule("between", "low", "high", "m")]}, "rule 'between' is not one of at_most, below, allowed"),
        ({"rules": [Rule.allowed(("gpu", "users"), [("h200", "1")], "m")]}, "rule 'allowed' reads choice fields only"),
        ({"rules": ["low <= high"]}, "rules holds 'low <= high'; declare each with Rule.at_most"),
        ({"rules": [Rule.at_most("high", "low", "m")]}, "the defaults break a rule: field 'high': m"),
    ],
)
def test_a_declaration_that_breaks_the_contract_is_one_line_naming_the_key(changes: dict, message: str) -> None:
    with pytest.raises(FormError) as broken:
        form(**changes)
    assert message in str(broken.value) and "\n" not in str(broken.value)


def test_the_view_is_checked_at_its_door_and_must_take_the_fields() -> None:
    declared = form()

    @declared.view
    def view(gpu: str, users: int, accept: float, low: int, high: int) -> dict:
        return {"speed": f"{users * accept:g}", "memory": "m", "share": 0.5}

    assert view.form is declared
    assert view(**dict(declared.defaults, users=10))["speed"] == "8"
    with pytest.raises(InputError, match="field 'users'"):
        view(**dict(declared.defaults, users=0))
    with pytest.raises(FormError, match=r"view\(\) takes \(gpu, users\) but the form's fields are"):

        @declared.view
        def wrong(gpu: str, users: int) -> dict:
            return {}


def test_an_answer_must_hold_every_key_the_outputs_read() -> None:
    declared = form()
    declared.check_answer({"speed": "1", "memory": "m", "share": 0.5, "fits": True, "verdict": "ok"})
    with pytest.raises(FormError, match=r"output 'memory' \(bar\): the answer has no 'share'; return it from view\(\)"):
        declared.check_answer({"speed": "1", "memory": "m"})
    with pytest.raises(FormError, match="the answer's 'fits' must be a bool, got str"):
        declared.check_answer({"speed": "1", "memory": "m", "share": 0.5, "fits": "yes"})


def test_requests_at_the_bounds_move_one_field_at_a_time() -> None:
    requests = form().requests_at_bounds()
    assert requests[0] == form().defaults
    assert {"gpu": "h200"} | {k: v for k, v in form().defaults.items() if k != "gpu"} in requests
    assert dict(form().defaults, accept=0) in requests and dict(form().defaults, accept=1) in requests
    assert len(requests) == len({tuple(sorted(r.items())) for r in requests})


def test_numbers_in_the_markup_and_the_messages_read_as_written() -> None:
    assert [plain(v) for v in (4096, 0.05, 1.0, 1_048_576, 0.5)] == ["4096", "0.05", "1", "1048576", "0.5"]
    field = Field.number("c", "C", low=0, high=1_048_576, step=2, default=0)
    assert field.describe() == "a whole number from 0 to 1,048,576 in steps of 2"
    with pytest.raises(InputError):
        field.check(3)


# ---- The page's checks (checks.mjs) give Python's answers ------------------------------------------

NUMBER_FIELDS = [
    Field.number("users", "Users", low=1, high=4096, default=1),
    Field.number("accept", "Acceptance", low=0, high=1, step=0.05, default=0.8),
    Field.number("share", "Share", low=0.5, high=1, step=0.05, default=0.8),
    Field.number("even", "Even", low=0, high=1_048_576, step=2, default=0),
    Field.number("fine", "Fine", low=0, high=0.01, step=0.001, default=0.005),
]
RAW = ["1", "4096", "4,096", "4_096", " 7 ", "0", "4097", "1.5", "", "abc", "1e3", "0.8", "0.85", "0.83", "0.80",
       "0.05", "1.05", "1", "1.0", "-0.05", ".5", "5.", "3", "1048576", "0.009", "0.0095", "0.010",
       ",,1,,", "1__0", "4,,096", "_4096", "4096,", "1,048,576", "0,5"]  # fmt: skip


def python_answer(field: Field, raw: str) -> dict:
    """What the page must answer for ``raw``: the text read as a decimal, digit groups as the
    package's number rule has them (``roofline.parsing``: one "_" or "," between two digits),
    then Python's own check."""
    written = raw.strip()
    grouped = re.fullmatch(rf"-?{parsing.DIGIT_GROUPS}(\.\d*)?", written)
    text = written.replace(",", "").replace("_", "") if grouped or not re.search("[_,]", written) else ""
    if not re.fullmatch(r"-?\d*(\.\d*)?", text) or text in ("", "-", ".", "-."):
        return {"error": f"must be {field.describe()}"}
    number = Decimal(text)
    value = int(number) if number == number.to_integral_value() else float(number)
    try:
        checked = field.check(value)
    except InputError:
        return {"error": f"must be {field.describe()}"}
    return {"value": checked}


@pytest.mark.node
def test_the_page_checks_every_input_and_rule_as_python_does(node: str, tmp_path) -> None:
    """checks.mjs (the page's checks) gives Python's answer for every case, under Node."""
    fields = [
        {
            "field": {"min": plain(f.low), "max": plain(f.high), "step": plain(f.step), "describe": f.describe()},
            "raw": raw,
            "expected": python_answer(f, raw),
        }
        for f in NUMBER_FIELDS
        for raw in RAW
    ]
    choice = Field.choice("gpu", "GPU", [("h100-sxm", "H100"), ("h200", "H200")], default="h100-sxm")
    menu = {"values": [value for value, _ in choice.choices], "describe": choice.describe()}
    for raw in ("h200", "h100", "", "H200"):
        expected = {"value": raw} if raw in menu["values"] else {"error": "must be one of the choices"}
        fields.append({"field": menu, "raw": raw, "expected": expected})
    allowed = Rule.allowed(
        ("count", "gpu", "model"),
        [("1", "h200", "8b"), ("2", "h200", "70b"), ("4", "h100-sxm", "70b"), ("4", "h200", "70b")],
        "{model} does not fit on {count} × {gpu}; {other} stays as written.",
    )
    conditional = Rule.at_most("high", "users", "m", when=("gpu", "h100-sxm"))
    declared = (*form().rules, conditional, Rule.below("users", "accept", "m"), allowed)
    rule_cases = []
    for params in (
        {"low": 3, "high": 4},
        {"low": 4, "high": 4},
        {"low": 5, "high": 4},
        {"users": 2},
        {"count": "2"},
        {"count": "4", "gpu": "h100-sxm"},
        {"count": "2", "gpu": "h100-sxm"},
        {"count": "1", "gpu": "h200", "model": "70b"},
        {"count": "8"},
        {"gpu": "constructor"},
        {"count": "__proto__"},
        {"gpu": "h100-sxm", "count": "4", "model": "70b", "high": 5, "users": 2},  # the comparison applies
        {"gpu": "h200", "high": 5, "users": 2},  # it does not
    ):
        params = {"low": 1, "high": 1, "users": 1, "accept": 2, "count": "1", "gpu": "h200", "model": "8b", **params}
        holds = [rule.holds(params) for rule in declared]
        broken = holds.index(False) if False in holds else None
        rule_cases.append({"rules": [rule.declaration() for rule in declared], "params": params, "broken": broken})
    texts = {"count": "4", "gpu": "NVIDIA H100 SXM", "model": "Llama 3.1 70B"}
    messages = [{"rule": allowed.declaration(), "texts": texts, "expected": allowed.message_for(texts)}]
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps({"fields": fields, "rules": rule_cases, "messages": messages}), encoding="utf-8")
    done = subprocess.run(
        [node, "--test", "--test-reporter=spec", str(support.ROOT / "tests" / "node" / "checks.test.mjs")],
        capture_output=True,
        text=True,
        env={"ROOFLINE_CHECK_CASES": str(cases), "PATH": os.environ["PATH"]},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "pass 3\n" in done.stdout
    assert {case["broken"] for case in rule_cases} == {None, 0, 1, 2, 3}  # each rule breaks somewhere, and all hold
    assert sum("value" in case["expected"] for case in fields) > 20  # the cases accept as well as refuse
