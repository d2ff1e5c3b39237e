"""The acceptance table: published τ by method, model and task, read with the spec loader's guarantees.

Spot values are the sources' own digits: Spec-Bench's Leaderboard.md @ fd2c1cd (A100,
Vicuna-13B-v1.3) and vllm-project/vllm#20780 (EAGLE-1 and EAGLE-3 accept lengths by K).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from roofline import SpecError
from roofline.acceptance import (
    DRAFTERS,
    held_out_speedups,
    load_acceptance,
    parse_acceptance,
    round_cost_line,
)
from roofline.speculative import tokens_per_step

ROWS = {row.id: row for row in load_acceptance()}

GOOD = """\
[acceptance."my-row"]
method = "EAGLE-3"
drafter = "head"
target = "Llama 3.1 8B"
model = "llama-3.1-8b"
task = "MT-Bench"
tokens_per_step = 3.08
gamma = 4
tree = false
speedup = 1.75
batch = 1
decoding = "greedy"
hardware = "1 × H100"
source = "https://example.com/run"
section = "table 1"
date = "2025-07-10"
"""


def test_spec_bench_rows_carry_the_leaderboards_digits() -> None:
    eagle3 = ROWS["spec-bench-a100-vicuna-13b-eagle3"]
    assert (eagle3.tokens_per_step, eagle3.speedup) == (5.71, 3.02)
    assert eagle3.cost_per_round == pytest.approx(5.71 / 3.02)
    assert eagle3.tree and eagle3.alpha is None  # a tree's τ is not a chain's τ(α, γ)
    pld = ROWS["spec-bench-a100-vicuna-7b-pld"]
    assert (pld.tokens_per_step, pld.speedup, pld.drafter) == (1.75, 1.66, "n-gram")
    assert "summarization 2.66×" in pld.note and "translation 1.06×" in pld.note


def test_every_row_is_sourced_and_every_drafter_known() -> None:
    assert len(ROWS) >= 50
    for row in ROWS.values():
        assert row.source.startswith("https://"), row.id
        assert row.drafter in DRAFTERS, row.id
        assert 1 <= row.tokens_per_step <= (row.gamma + 1 if row.gamma and not row.tree else 100), row.id


def test_a_chain_rows_alpha_gives_its_tau_back() -> None:
    row = ROWS["vllm-20780-llama-3.1-8b-eagle3-k4"]
    assert (row.gamma, row.tokens_per_step) == (4, 3.08)
    assert tokens_per_step(row.alpha, 4) == pytest.approx(3.08, rel=1e-9)
    # EAGLE-3's acceptance rate barely moves with K (0.74 to 0.77): the chain model fits it.
    alphas = [ROWS[f"vllm-20780-llama-3.1-8b-eagle3-k{k}"].alpha for k in range(2, 8)]
    assert max(alphas) - min(alphas) < 0.03


def test_round_cost_line_through_the_eagle_rows() -> None:
    rows = [row for key, row in ROWS.items() if key.startswith("vllm-20780") and "eagle1" in key]
    line = round_cost_line(rows)
    assert len(line.rows) == 6
    for row in rows:
        assert line.fixed + line.per_draft_token * row.gamma == pytest.approx(row.cost_per_round, abs=0.05)
    with pytest.raises(SpecError, match="two or more values of γ"):
        round_cost_line(rows[:1])


def test_held_out_speedups_predict_each_gamma_from_the_others() -> None:
    """Leave-one-out: each γ's prediction comes from a line that never saw its row."""
    rows = [row for key, row in ROWS.items() if key.startswith("vllm-20780") and "eagle3" in key]
    held = held_out_speedups(rows)
    assert sorted(held) == [2, 3, 4, 5, 6, 7]
    for row in rows:
        others = round_cost_line([other for other in rows if other is not row])
        assert held[row.gamma] == pytest.approx(
            row.tokens_per_step / (others.fixed + others.per_draft_token * row.gamma), rel=1e-12
        )
    # Out of sample misses more than in sample: the ends of the γ range are extrapolated.
    line = round_cost_line(rows)
    in_sample = {row.gamma: row.tokens_per_step / (line.fixed + line.per_draft_token * row.gamma) for row in rows}
    assert max(abs(held[g] - r.speedup) for g, r in ((r.gamma, r) for r in rows)) > max(
        abs(in_sample[r.gamma] - r.speedup) for r in rows
    )
    with pytest.raises(SpecError, match="three or more values of γ"):
        held_out_speedups(rows[:2])


def test_the_deepseek_v3_mtp_rows_are_the_reports_range_at_one_draft_token() -> None:
    low, high = ROWS["deepseek-v3-mtp-low"], ROWS["deepseek-v3-mtp-high"]
    assert (low.drafter, low.gamma, low.alpha, high.alpha) == ("mtp", 1, 0.85, 0.9)
    assert (low.tokens_per_step, high.tokens_per_step) == (pytest.approx(1.85), pytest.approx(1.9))
    assert low.speedup == high.speedup == 1.8 and "2412.19437" in low.source


def test_good_file_parses(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(GOOD, encoding="utf-8")
    (row,) = load_acceptance(path)
    assert row.alpha == pytest.approx(0.7545, abs=1e-3)
    alpha_row = GOOD.replace("tokens_per_step = 3.08", "alpha = 0.75")
    (row,) = parse_acceptance(alpha_row, "mine.toml")
    assert row.tokens_per_step == pytest.approx(tokens_per_step(0.75, 4))


@pytest.mark.parametrize(
    "change,expected",
    [
        (("method =", "methd ="), "field 'methd': unknown key (did you mean 'method'?)"),
        (('task = "MT-Bench"\n', ""), "field 'task': is missing"),
        (("tokens_per_step = 3.08", "tokens_per_step = 3.08\nalpha = 0.7"), "give tokens_per_step (τ) or alpha"),
        (("tokens_per_step = 3.08\ngamma = 4\n", "alpha = 0.7\n"), "an acceptance rate needs the chain's gamma"),
        (("tokens_per_step = 3.08", "alpha = 1.2"), "field 'alpha': must be between 0 and 1, got 1.2"),
        (("tokens_per_step = 3.08", "tokens_per_step = 5.5"), "field 'tokens_per_step': must be between 1 and 5"),
        (("gamma = 4", "gamma = 0"), "field 'gamma': must be a whole number from 1 to 64, got 0"),
        (("gamma = 4", "gamma = 65"), "field 'gamma': must be a whole number from 1 to 64, got 65"),
        (('drafter = "head"', 'drafter = "heads"'), "field 'drafter': unknown drafter 'heads' (did you mean 'head'?)"),
        (('model = "llama-3.1-8b"', 'model = "llama-3.1"'), "field 'model': unknown model 'llama-3.1'"),
        (('source = "https://example.com/run"', 'source = "a paper"'), "field 'source': must be an http(s) URL"),
        (('date = "2025-07-10"', 'date = "July 2025"'), "field 'date': must be YYYY-MM-DD or 'undated'"),
        (("tree = false", 'tree = "no"'), "field 'tree': must be true or false"),
        (("speedup = 1.75", "speedup = -1"), "field 'speedup': must be between 0.01 and 100"),
        (("batch = 1", "batch = 0"), "field 'batch': must be a whole number from 1 to 1,000,000, got 0"),
        (('decoding = "greedy"', 'decoding = "beam"'), "field 'decoding': must be one of greedy, sampled"),
        (('[acceptance."my-row"]', '[acceptance."My Row"]'), 'acceptance."My Row"]: bad id'),
        (('[acceptance."my-row"]', '[acceptanse."my-row"]'), "unknown table [acceptanse]"),
        (('hardware = "1 × H100"', 'hardware = "1 × H100'), "TOML syntax error: "),
    ],
)
def test_each_mistake_is_one_line_naming_file_entry_and_field(change: tuple[str, str], expected: str) -> None:
    old, new = change
    assert old in GOOD
    with pytest.raises(SpecError) as error:
        parse_acceptance(GOOD.replace(old, new, 1), "mine.toml")
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("mine.toml: ")
    assert expected in message
    if "syntax" not in expected and "table [" not in expected:
        assert '[acceptance."' in message


def test_files_that_are_not_acceptance_tables(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="is a directory, not a spec file"):
        load_acceptance(tmp_path)
    with pytest.raises(SpecError, match="no such file"):
        load_acceptance(tmp_path / "missing.toml")
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * 1_000_001)
    with pytest.raises(SpecError, match="is larger than 1 MB"):
        load_acceptance(big)
    latin = tmp_path / "latin.toml"
    latin.write_bytes(GOOD.replace("×", "x").encode() + "# caf\xe9\n".encode("latin-1"))
    with pytest.raises(SpecError, match="is not UTF-8 text"):
        load_acceptance(latin)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "pipe.toml"
        os.mkfifo(fifo)
        with pytest.raises(SpecError, match="is a named pipe"):
            load_acceptance(fifo)
