"""``roofline speculate`` as a user sees it: text, JSON with issue 20's keys, one line per bad input."""

from __future__ import annotations

import json

import pytest

from roofline.cli import main

BASE = ("speculate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main([*BASE, *argv]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def fail(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    try:
        status = main([*BASE, *argv])
    except SystemExit as exit_:  # argparse exits itself
        status = exit_.code
    assert status == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    return captured.err


def test_text_report_at_one_user(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "--gamma", "4", "--alpha", "0.8")
    lines = out.splitlines()
    assert lines[0] == "Llama 3.1 8B on 1 × NVIDIA H100 SXM, bf16 weights; 1 user, 0 tokens of context"
    assert lines[1] == "speculation: γ = 4 draft tokens per round, α = 0.8, given; draft: free (cost 0)"
    assert "  tokens per step    3.362 (τ = (1 − α^5) / (1 − α))" in lines
    assert "  speedup            3.36× over plain decoding at the same batch" in lines
    assert "  tokens/s per user  750 with speculation, 223 without (both ceilings)" in lines
    assert "  break-even batch   199 users: beyond, a round costs more than the tokens it brings" in lines


def test_json_has_issue_20s_keys(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(run(capsys, "--gamma", "4", "--alpha", "0.6", "--batch", "64", "--draft-cost", "0.05", "--json"))
    assert data["tokens_per_step"] == pytest.approx(1 + 0.6 + 0.36 + 0.216 + 0.1296)
    assert data["draft_cost"] == pytest.approx(0.05)
    assert data["alpha"] == 0.6
    # Past the critical batch n* ≈ 295.3: τ·t(B) = B(γ+1)·f + γ·ĉ·t(B), so B = (τ − γĉ)·n*/(γ+1) ≈ 124.4.
    assert data["break_even_batch"] == pytest.approx((data["tokens_per_step"] - 4 * 0.05) * 295.3 / 5, rel=1e-3)
    assert data["tokens_per_s_per_user"] == pytest.approx(data["speedup"] * data["baseline_tokens_per_s_per_user"])
    assert 1 < data["speedup"] < data["tokens_per_step"]


def test_speedup_solves_alpha_and_long_context_never_breaks_even(capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(
        run(capsys, "--gamma", "4", "--speedup", "2", "--draft-cost", "0.1", "--batch", "32", "--context", "2048",
            "--json")
    )  # fmt: skip
    assert data["speedup"] == pytest.approx(2.0, rel=1e-9)
    assert data["alpha_from"] == "speedup" and data["measured_speedup"] == 2
    assert data["break_even_batch"] is None
    out = run(capsys, "--gamma", "4", "--speedup", "2", "--draft-cost", "0.1", "--batch", "32", "--context", "2048")
    assert "never: at this context each user's cache read" in out
    assert "(244 users fit at 2,048 tokens of context)" in out


def test_a_draft_model_sets_the_cost(capsys: pytest.CaptureFixture[str]) -> None:
    # The target drafting for itself: a draft step costs a whole target step.
    data = json.loads(run(capsys, "--gamma", "4", "--alpha", "0.7", "--draft", "llama-3.1-8b", "--json"))
    assert data["drafter"] == "llama-3.1-8b"
    assert data["draft_cost"] == pytest.approx(1.0)
    assert data["speedup"] < 1


@pytest.mark.parametrize(
    "argv,expected",
    [
        (("--gamma", "0", "--alpha", "0.5"), "argument --gamma: must be at least 1, got 0"),
        (("--gamma", "65", "--alpha", "0.5"), "argument --gamma: must be at most 64, got 65"),
        (("--gamma", "4", "--alpha", "1.2"), "argument --alpha: must be between 0 and 1, got '1.2'"),
        (("--gamma", "4", "--alpha", "-0.1"), "argument --alpha: must be between 0 and 1, got '-0.1'"),
        (("--gamma", "4", "--alpha", "nan"), "argument --alpha: must be between 0 and 1, got 'nan'"),
        (("--gamma", "4", "--speedup", "6"), "--speedup: 6× is above γ+1 = 5, the most tokens a round of γ = 4"),
        (("--gamma", "4", "--speedup", "4.9", "--draft-cost", "0.1"), "--speedup: 4.9× is out of reach"),
        (("--gamma", "4"), "one of the arguments --alpha --speedup is required"),
        (("--gamma", "4", "--alpha", "0.5", "--speedup", "2"), "not allowed with argument"),
        (("--gamma", "4", "--alpha", "0.5", "--draft", "mistral-7b"), "--draft: Mistral 7B v0.2's vocabulary"),
        (("--gamma", "4", "--alpha", "0.5", "--draft", "llama-1b"), "--draft: unknown model 'llama-1b'"),
        (("--gamma", "4", "--alpha", "0.5", "--draft-cost", "11"), "argument --draft-cost: must be between 0 and 10"),
    ],
)
def test_bad_input_is_one_line(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], expected: str) -> None:
    err = fail(capsys, *argv)
    assert err.startswith("roofline speculate: error: ")
    assert expected in err


def test_another_vocabulary_is_stated_when_the_cost_is_given(capsys: pytest.CaptureFixture[str]) -> None:
    out = run(capsys, "--gamma", "4", "--alpha", "0.7", "--draft", "mistral-7b", "--draft-cost", "0.1")
    assert "  note               Mistral 7B v0.2's vocabulary (32,000 tokens) is not Llama 3.1 8B's (128,256)" in out
    data = json.loads(run(capsys, "--gamma", "4", "--alpha", "0.7", "--draft", "mistral-7b", "--draft-cost", "0.1",
                          "--json"))  # fmt: skip
    assert data["drafter"] == "given" and len(data["notes"]) == 1
