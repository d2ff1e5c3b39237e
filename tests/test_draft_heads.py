"""Draft heads as spec entries: the widths an EAGLE-3 head changes, the draft-only marker that
keeps it out of every model list, and the refusals when it is paired with the wrong target.

The parameter count is checked against a count by hand from the head's published config
(SafeAILab/EAGLE, eagle/traineagle3/config.json) and module (eagle/model/cnets.py), term by
term, so a formula that drops or doubles one of them fails here.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from roofline import Hardware, SpecError, Workload, builtin_specs
from roofline import architecture as arch
from roofline.loader import parse_specs
from roofline.performance import decode_pass
from roofline.serving import Lengths, ServingConfig
from roofline.specserving import Drafting, _draft_costs, simulate_speculative
from roofline.speculative import speculation_round, without_fusion
from sitegen.pages import page_folders
from tests.support import assert_one_line_error, run_cli

ROOT = Path(__file__).resolve().parents[1]
HEAD = "eagle3-llama-3.1-8b"
SPECS = builtin_specs()

# The head for Llama 3.1 8B, by hand (d = 4,096, 32 heads and 8 KV heads of 128, MLP 14,336):
D = 4096
Q = 2 * D * 32 * 128  # q_proj reads the embedding and the fused state side by side, 2d
KV = 2 * (2 * D * 8 * 128)  # k_proj and v_proj, from 2d as well
OUT = 32 * 128 * D  # o_proj
MLP = 3 * D * 14336  # gate, up, down
NORMS = 3 * D + D  # hidden_norm, input_layernorm, post_attention_layernorm; the final norm
FC = 3 * D * D  # fc: three of the target's hidden states to one, no bias
LM_HEAD = D * 32000  # lm_head over the draft vocabulary
BY_HAND = Q + KV + OUT + MLP + NORMS + FC + LM_HEAD  # the embedding is the target's, frozen: not the head's


def head():
    return SPECS.draft(HEAD)


# ---- What the head is -------------------------------------------------------------------------------


def test_the_heads_parameters_are_the_hand_count_from_its_config() -> None:
    assert BY_HAND == 424_689_664
    assert arch.total_parameters(head()) == BY_HAND
    assert arch.weight_bytes(head(), "bf16") == 2 * BY_HAND
    assert arch.fusion_parameters(head()) == FC
    assert arch.output_head_parameters(head()) == LM_HEAD
    assert arch.attention_parameters(head()) == Q + KV + OUT


def test_without_the_new_widths_the_head_would_look_a_fifth_too_cheap() -> None:
    """A draft vocabulary alone counts the layer as a plain decoder's: about 349M, not 425M."""
    plain = replace(head(), attention_input_size=None, fusion_input_size=0)
    assert arch.total_parameters(plain) == BY_HAND - FC - (Q + KV) // 2
    assert 0.17 < 1 - arch.total_parameters(plain) / BY_HAND < 0.19


def test_the_heads_cache_is_one_layer_of_eight_kv_heads() -> None:
    assert arch.kv_cache_bytes_per_token(head(), "bf16") == 1 * 8 * 128 * 2 * 2
    assert arch.kv_cache_bytes_per_token(head(), "fp8") == 1 * 8 * 128 * 2 * 1


def test_every_weight_the_head_holds_is_multiplied_and_its_flops_follow() -> None:
    """Nothing of the head is a lookup table (the embedding is the target's), so a token multiplies
    all of it: 2 FLOPs a weight, plus attention over the context, 4·L·H·h a cached token."""
    assert arch.lookup_only_parameters(head()) == 0
    assert arch.decode_flops_per_token(head(), 0) == 2 * BY_HAND
    assert arch.decode_flops_per_token(head(), 1000) == 2 * BY_HAND + 1000 * 4 * 1 * 32 * 128
    assert arch.parameters_read(head(), 7) == BY_HAND


def test_a_plain_models_count_is_unchanged_by_the_new_fields() -> None:
    """The widths default to a plain decoder's: Llama 3.1 8B is still 8,030,261,248 parameters."""
    assert arch.total_parameters(SPECS.model("llama-3.1-8b")) == 8_030_261_248
    assert arch.total_parameters(SPECS.model("llama-3.2-1b")) == 1_235_814_400


# ---- The spec fields, with one-line errors ---------------------------------------------------------------

BASE = """
[model."h"]
name = "A head"
layers = 1
hidden_size = 64
attention_heads = 4
kv_heads = 2
head_dim = 16
ffn_size = 128
vocab_size = 1000
tied_embeddings = false
source = "test"
"""


@pytest.mark.parametrize(
    ("extra", "field", "fragment"),
    [
        ("head_vocab_size = 2000", "head_vocab_size", "at most 1,000"),
        ("head_vocab_size = 0", "head_vocab_size", "at least 1"),
        ("attention_input_size = 1.5", "attention_input_size", "whole number"),
        ("fusion_input_size = -1", "fusion_input_size", "at least 0"),
        ("shares_target_embedding = true", "shares_target_embedding", "draft_for"),
        ("shares_target_embedding = 1", "shares_target_embedding", "true or false"),
        ('draft_for = "Not An Id"', "draft_for", "bad id"),
        ('draft_for = "h"', "draft_for", "names the entry itself"),
        ("head_vocab_sise = 10", "head_vocab_sise", "head_vocab_size"),
    ],
)
def test_a_bad_draft_field_is_one_located_line(extra: str, field: str, fragment: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_specs(BASE + extra + "\n", "my.toml")
    message = str(caught.value)
    assert "\n" not in message
    assert "my.toml" in message and '[model."h"]' in message and field in message and fragment in message


def test_a_tied_head_cannot_score_a_smaller_vocabulary() -> None:
    text = BASE.replace("tied_embeddings = false", "tied_embeddings = true") + "head_vocab_size = 500\n"
    with pytest.raises(SpecError, match="scores the whole vocabulary"):
        parse_specs(text, "my.toml")


def test_attention_input_width_does_not_apply_to_latent_attention() -> None:
    deepseek = SPECS.model("deepseek-v3")
    with pytest.raises(SpecError, match=r"\[mla\]"):
        replace(deepseek, attention_input_size=2 * deepseek.hidden_size)


# ---- Draft-only: a --draft and nothing else -------------------------------------------------------------


def test_the_head_is_a_draft_and_not_a_model() -> None:
    assert HEAD in SPECS.drafts and HEAD not in SPECS.models
    assert head().draft_for == "llama-3.1-8b"
    assert SPECS.draft("llama-3.2-1b") is SPECS.model("llama-3.2-1b")  # any model can still draft
    with pytest.raises(SpecError, match=r"a draft for llama-3\.1-8b, not a model to serve"):
        SPECS.model(HEAD)


def test_a_later_file_moves_an_id_between_models_and_drafts() -> None:
    as_model = parse_specs(BASE, "a.toml")
    as_draft = parse_specs(BASE + 'draft_for = "llama-3.1-8b"\n', "b.toml")
    merged = as_model.merged(as_draft)
    assert "h" in merged.drafts and "h" not in merged.models
    back = merged.merged(as_model)
    assert "h" in back.models and "h" not in back.drafts


def test_roofline_list_models_shows_the_head_apart(capsys) -> None:
    status, out, _ = run_cli(capsys, "list", "models")
    assert status == 0
    models, drafts = out.split("Drafts (")
    assert HEAD not in models
    assert HEAD in drafts and "llama-3.1-8b" in drafts and "0.425B" in drafts


@pytest.mark.parametrize(
    "command",
    [
        ("estimate", "--gpu", "h100-sxm", "--model", HEAD),
        ("speculate", "--gpu", "h100-sxm", "--model", HEAD, "--gamma", "4", "--alpha", "0.8"),
    ],
)
def test_serving_the_head_on_its_own_is_one_line(capsys, command: tuple[str, ...]) -> None:
    status, out, err = run_cli(capsys, *command)
    assert out == ""
    assert_one_line_error(status, err, "--model", "a draft for llama-3.1-8b")


@pytest.mark.parametrize("cost", [(), ("--draft-cost", "0.05")])
def test_the_head_for_another_target_is_refused_even_with_a_cost(capsys, cost: tuple[str, ...]) -> None:
    base = ("speculate", "--gpu", "h100-sxm", "--model", "llama-3.1-70b", "--gpus", "2", "--gamma", "4")
    status, out, err = run_cli(capsys, *base, "--alpha", "0.8", "--draft", HEAD, *cost)
    assert out == ""
    assert_one_line_error(status, err, "--draft", "drafts for llama-3.1-8b only")


def test_simulate_refuses_the_head_for_another_target_in_one_line(capsys) -> None:
    status, out, err = run_cli(
        capsys,
        "simulate",
        *("--gpu", "h100-sxm", "--model", "mistral-7b", "--rate", "1", "--requests", "5"),
        *("--speculate-gamma", "4", "--speculate-alpha", "0.8", "--draft", HEAD),
    )
    assert out == ""
    assert_one_line_error(status, err, "drafts for llama-3.1-8b only")


def test_a_target_whose_vocabulary_differs_is_refused(tmp_path) -> None:
    """A --specs file that redefines the target with another vocabulary: the head cannot score it."""
    other = SPECS.model("llama-3.1-8b")
    hardware = Hardware(SPECS.gpu("h100-sxm"))
    for cost in (None, 0.05):
        with pytest.raises(SpecError, match="vocabulary of 128,256"):
            speculation_round(hardware, Workload(replace(other, vocab_size=32000)), 4, draft=head(), draft_cost=cost)


def test_speculate_with_the_head_reaches_the_sglang_run(capsys) -> None:
    """SGLang's 373 tokens/s with EAGLE-3 on one H100 is reachable with the head at a plausible α."""
    status, out, _ = run_cli(
        capsys,
        "speculate",
        *("--gpu", "h100-sxm", "--model", "llama-3.1-8b", "--gamma", "4", "--speedup", f"{373.25 / 223.2:.4f}"),
        *("--draft", HEAD, "--json"),
    )
    assert status == 0
    figures = json.loads(out)
    assert figures["drafter"] == HEAD
    assert 0.4 < figures["alpha"] < 0.6
    assert 0.04 < figures["draft_cost"] < 0.06


# ---- The fusion runs once a round ------------------------------------------------------------------------


def test_a_round_runs_the_heads_fusion_on_its_first_draft_step_only() -> None:
    hardware, workload = Hardware(SPECS.gpu("h100-sxm")), Workload(SPECS.model("llama-3.1-8b"))
    first = decode_pass(hardware, Workload(head()), 8).seconds
    later = decode_pass(hardware, Workload(without_fusion(head())), 8).seconds
    assert later < first
    for gamma in (1, 4):
        round_ = speculation_round(hardware, workload, gamma, 8, draft=head())
        assert round_.draft_step_s == pytest.approx((first + (gamma - 1) * later) / gamma, rel=1e-12)


def test_the_simulator_charges_the_fusion_once_a_round_too() -> None:
    """The simulator times a head's first step with its fusion layer and the later ones without; a
    run of the same requests with a head that has no fusion layer at all is faster."""
    hardware, workload = Hardware(SPECS.gpu("h100-sxm")), Workload(SPECS.model("llama-3.1-8b"))
    first, later = _draft_costs(hardware, workload, Drafting(4, 0.8, head()))
    assert first is not None and later is not None
    assert later.model.fusion_input_size == 0 and first.model.fusion_input_size == 3 * D
    assert later.iteration(4, 0).seconds < first.iteration(4, 0).seconds
    config = ServingConfig(rate=2, requests=20, prompt=Lengths(64, 64), output=Lengths(32, 32), seed=1)
    fused = simulate_speculative(hardware, workload, config, Drafting(4, 0.8, head()))
    unfused = simulate_speculative(hardware, workload, config, Drafting(4, 0.8, without_fusion(head())))
    assert unfused.result.busy_s < fused.result.busy_s


# ---- Menus: the drafter menu and nowhere else --------------------------------------------------------------


def test_only_the_speculation_calculators_drafter_menu_lists_the_head() -> None:
    found = []
    for folder in page_folders(ROOT / "docs"):
        for name in folder.calculators:
            form = folder.calculator(name).FORM
            for field in form.fields:
                if any(value == HEAD for value, _ in field.choices):
                    found.append((folder.slug, name, field.name))
    assert found == [("speculative-decoding", "speculate", "draft")]


def test_the_head_written_as_a_spec_entry_reads_back_as_a_draft() -> None:
    from roofline.ownspecs import model_entry_toml

    text = model_entry_toml(head())
    assert 'draft_for = "llama-3.1-8b"' in text and "head_vocab_size = 32000" in text
    assert parse_specs(text, "back.toml").drafts[HEAD] == head()


def test_validate_counts_the_drafts_apart(capsys) -> None:
    status, out, _ = run_cli(capsys, "validate", str(ROOT / "roofline" / "data" / "models.toml"))
    assert status == 0 and f"{len(SPECS.models)} models, 1 draft)" in out
