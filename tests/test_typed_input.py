"""What a reader types: one number rule for every option, and no error that echoes more than a line
(issue 25: P1, P2). Neighbours of the report's cases: other scripts' digits, other separators, other
negative forms, other options and other places an error can quote its input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from roofline_views import answer as worker_answer

from roofline import SpecError
from roofline.cli import main
from roofline.parsing import parse_real, parse_whole
from sitegen.pages import find

ROOT = Path(__file__).resolve().parent.parent
ESTIMATE = ["estimate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b"]
SIMULATE = ["simulate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--requests", "20"]
#: The longest error line any of these may print: a line, whatever was typed.
LONGEST_LINE = 600


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        status = main(list(argv))
    except SystemExit as exit_:  # argparse ends a bad command line itself
        status = exit_.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def assert_refused(status: int, err: str, *said: str) -> None:
    assert status == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert len(err) <= LONGEST_LINE, len(err)
    assert "expected one argument" not in err, err
    for part in said:
        assert part in err, err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        ([*ESTIMATE, "--batch", "१२"], "--batch: must be a whole number, got '१२'"),  # Devanagari
        ([*ESTIMATE, "--context", "๑๐๐"], "--context: must be a whole number"),  # Thai
        ([*ESTIMATE, "--gpus", "２"], "--gpus: must be a whole number"),  # full-width
        ([*ESTIMATE, "--usable-fraction", "０.５"], "--usable-fraction: must be a number"),
        ([*ESTIMATE, "--usable-fraction", "0,,5"], "--usable-fraction: must be a number"),
        ([*ESTIMATE, "--batch", "1,,000"], "--batch: must be a whole number"),
        ([*ESTIMATE, "--batch", "_12"], "--batch: must be a whole number"),
        ([*ESTIMATE, "--batch", "12_"], "--batch: must be a whole number"),
        ([*ESTIMATE, "--batch", "0x10"], "--batch: must be a whole number"),
        ([*ESTIMATE, "--batch", "-3"], "--batch: must be at least 1, got -3"),
        ([*ESTIMATE, "--shared-prefix", "-1,000"], "--shared-prefix: must be at least 0"),
        ([*SIMULATE, "--rate", "1,,0"], "--rate: must be a number"),
        ([*SIMULATE, "--rate", "٣"], "--rate: must be a number"),
        ([*SIMULATE, "--ttft-slo", "1e_3"], "--ttft-slo: must be a number"),
        ([*SIMULATE, "--tpot-slo", "-0.5"], "--tpot-slo: must be between"),
        ([*SIMULATE, "--rate", "-2e3"], "--rate: must be between"),
        ([*SIMULATE, "--prompt", "-3:-1"], "--prompt: must satisfy 1 <= LO <= HI"),
        ([*SIMULATE, "--output", "-1e3"], "--output: must be a whole number"),
        ([*SIMULATE, "--prompt", ",5"], "--prompt: must be a whole number"),
        ([*SIMULATE, "--prompt", "１２:２０"], "--prompt: must be a whole number"),
        ([*SIMULATE, "--seed", "1_"], "--seed: must be a whole number"),
        ([*SIMULATE, "--max-batch", "-7"], "--max-batch: must be at least 1"),
        # A sign other than a number's own "-" is refused, as "-0" is: the page's fields take neither.
        ([*ESTIMATE, "--batch", "+12"], "--batch: must be a whole number, got '+12'"),
        ([*ESTIMATE, "--gpus", "+1"], "--gpus: must be a whole number, got '+1'"),
        ([*ESTIMATE, "--usable-fraction", "+0.5"], "--usable-fraction: must be a number, got '+0.5'"),
        ([*SIMULATE, "--rate", "+inf"], "--rate: must be a number"),
        ([*SIMULATE, "--prompt", "+5:+10"], "--prompt: must be a whole number"),
        ([*ESTIMATE, "--context", "-0"], "--context: must be written without a sign, got '-0'"),
        ([*SIMULATE, "--seed", "-0"], "--seed: must be written without a sign"),
        (
            [*ESTIMATE, "--allreduce-latency", "-0.0", "--gpus", "2"],
            "--allreduce-latency: must be written without a sign",
        ),
    ],
)
def test_one_number_rule_for_every_option(capsys, argv: list[str], said: str) -> None:
    assert_refused(*run(capsys, *argv)[::2], said)


@pytest.mark.parametrize(
    ("option", "text", "value"),
    [("--batch", "1,000", "1,000 users"), ("--batch", "1_000", "1,000 users"), ("--batch", " 12 ", "12 users")],
)
def test_grouped_ascii_digits_are_accepted(capsys, option: str, text: str, value: str) -> None:
    status, out, err = run(capsys, *ESTIMATE, option, text)
    assert status == 0, err
    assert value in out.splitlines()[0]


def test_the_parser_itself() -> None:
    assert parse_whole("12,345", (0, 10**6)) == 12_345
    assert parse_real("2.5e-3", (0, 1)) == 0.0025
    for bad in ("", " ", "1.", "+", "1 2", "1,2,", "٣", "1e3"):
        with pytest.raises(SpecError):
            parse_whole(bad, (0, 10**9))
    for bad in ("", ".", "e5", "1e", "1,,5", "--1", "0x1p3", "１"):
        with pytest.raises(SpecError):
            parse_real(bad, (-1e9, 1e9))
    for outside in ("inf", "-Infinity", "nan", "1e400"):
        with pytest.raises(SpecError, match="must be between"):
            parse_real(outside, (0, 1e9))


HUGE = "z" * 100_000


@pytest.mark.parametrize(
    "argv",
    [
        [*ESTIMATE[:2], HUGE, "--model", "llama-3.1-8b"],
        [*ESTIMATE[:4], HUGE],
        [*ESTIMATE, "--precision", HUGE],
        [*ESTIMATE, "--kv-precision", HUGE],
        [*ESTIMATE, "--compute-precision", HUGE],
        [*ESTIMATE, "--batch", "9" * 50_000],
        [*ESTIMATE, "--usable-fraction", "0." + "5" * 50_000 + "x"],
        [*ESTIMATE, HUGE],  # an argument nobody asked for
        ["list", HUGE],
        ["table", "--format", HUGE],
        ["table", "--precisions", "bf16," + HUGE],
        [*SIMULATE, "--policy", HUGE],
        [*SIMULATE, "--output", HUGE],
        [*SIMULATE, "--prompt", f"1:{'8' * 40_000}"],
        [*SIMULATE, "--token-budget", "7" * 30_000],
        [*ESTIMATE, "--specs", "/nonexistent/" + "d" * 5_000 + ".toml"],
    ],
)
def test_no_error_echoes_more_than_a_line(capsys, argv: list[str]) -> None:
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert len(err) <= LONGEST_LINE, (len(err), err[:200])


def test_a_spec_error_is_a_line_whatever_its_message_holds() -> None:
    error = SpecError("got " + "q" * 100_000, file="f.toml", entry='[gpu."x"]', field="name", hint="h" * 10_000)
    text = str(error)
    assert len(text) < 1_200 and text.startswith("f.toml: [gpu.\"x\"]: field 'name': got qqq")
    assert text.endswith("hhh)")


def test_a_calculator_note_is_a_line_whatever_the_request_held() -> None:
    find(ROOT / "docs", "prefill-vs-decode").calculator("decode_speed")  # importable as the worker names it
    defaults = {"gpu": "h100-sxm", "model": "llama-3.1-8b", "precision": "bf16", "gpus": 1, "users": 1, "context": 0}
    for request in (
        {**defaults, "k" * 30_000: 1},  # a key nobody declared
        {**defaults, "users": "9" * 30_000},  # a value of the wrong type, as long as a link can hold
        {**defaults, "model": "m" * 30_000},  # an unknown id
    ):
        error = json.loads(worker_answer("decode_speed", json.dumps(request)))["error"]
        assert len(error) <= 500, len(error)
