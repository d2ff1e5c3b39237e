"""The rule-versus-ceiling sentences: each ends on the ceiling the package reports."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from roofline import (
    Hardware,
    Workload,
    builtin_specs,
    decode_steps,
    evaluate,
    prefill_steps,
    rule_decode_tokens_per_s_per_user,
)

SPECS = builtin_specs()
CASES = list(
    itertools.product(
        ("h100-sxm", "a100-80gb", "b200"),
        SPECS.models,
        ("bf16", "fp8", "int4", "nvfp4"),
        (1, 64, 1024),
        (0, 4096),
    )
)


@pytest.mark.parametrize(("gpu", "model", "precision", "batch", "context"), CASES)
def test_the_last_step_is_the_ceiling(gpu: str, model: str, precision: str, batch: int, context: int) -> None:
    hardware = Hardware(SPECS.gpu(gpu), 8)
    workload = Workload(SPECS.model(model), precision, batch=batch, context=context, prompt=2000)
    result = evaluate(hardware, workload)
    decode, prefill = decode_steps(hardware, workload), prefill_steps(hardware, workload)
    # The sentence starts from the rule for the weights alone ("the rule gives 209"), before any cache.
    weights_only = rule_decode_tokens_per_s_per_user(hardware, dataclasses.replace(workload, context=0))
    assert decode[0].value == pytest.approx(weights_only, rel=1e-12)
    assert decode[-1].value == pytest.approx(result.decode_tokens_per_s_per_user, rel=1e-9)
    assert prefill[0].value == pytest.approx(result.rule.prefill_s, rel=1e-12)
    assert prefill[-1].value == pytest.approx(result.prefill.seconds, rel=1e-9)


def test_a_fixed_math_precision_is_named_as_fixed() -> None:
    hardware = Hardware(SPECS.gpu("h100-sxm"), compute_precision="fp8")
    result = evaluate(hardware, Workload(SPECS.model("llama-3.1-8b"), "bf16", prompt=2000))
    assert result.math == "fp8 (set by the caller)"
    assert "fp8 math (fixed) changes the peak, so 14.1 ms" in result.prefill_vs_rule


def test_compute_bound_decode_says_so() -> None:
    result = evaluate(Hardware(SPECS.gpu("h100-sxm")), Workload(SPECS.model("llama-3.1-8b"), batch=1000))
    assert result.decode.bound == "compute"
    assert result.decode_vs_rule.endswith(
        f"at 1,000 users the bf16 math takes longer than the reads, so {result.decode_tokens_per_s_per_user:,.0f}"
    )


def test_rounding_never_hides_a_step() -> None:
    # 405B at 16 bits on one H100: the rule's 4.13 tokens/s and the engine's 4.15 both round to 4,
    # and "the rule gives 4; ... so 4" would say the embedding changes nothing.
    result = evaluate(Hardware(SPECS.gpu("h100-sxm")), Workload(SPECS.model("llama-3.1-405b")))
    assert result.decode_vs_rule == (
        "the rule gives 4.13; an engine reads one row of the embedding, not the whole table, so 4.15"
    )


def test_whole_numbers_where_they_tell_the_steps_apart() -> None:
    result = evaluate(Hardware(SPECS.gpu("h100-sxm")), Workload(SPECS.model("llama-3.1-8b"), context=4096))
    assert result.decode_vs_rule == (
        "the rule gives 209; an engine reads one row of the embedding, not the whole table, so 223,"
        " and this user's context brings it to 215"
    )


@pytest.mark.parametrize(("gpu", "model", "precision", "batch", "context"), CASES[::7])
def test_neighbouring_figures_that_differ_print_differently(
    gpu: str, model: str, precision: str, batch: int, context: int
) -> None:
    hardware = Hardware(SPECS.gpu(gpu), 8)
    workload = Workload(SPECS.model(model), precision, batch=batch, context=context, prompt=2000)
    result = evaluate(hardware, workload)
    pairs = ((decode_steps(hardware, workload), result.decode_vs_rule),)
    pairs += ((prefill_steps(hardware, workload), result.prefill_vs_rule),)
    for steps, sentence in pairs:
        # The figure each step prints is the word after its reason.
        shown = [sentence.split(step.reason + " ", 1)[1].split(" ", 1)[0].rstrip(",;") for step in steps]
        for (a, b), (x, y) in zip(itertools.pairwise(shown), itertools.pairwise(steps), strict=True):
            assert a != b or x.value == pytest.approx(y.value, rel=1e-6), sentence
