"""``roofline.splitchoice``: chapter 8's full-block hits, a prefill's stall inside a decode iteration,
and the verdict "split, keep or neither" the chapter's calculator shows."""

from __future__ import annotations

from dataclasses import replace

import pytest

from roofline import Hardware, SpecError, Workload, builtin_specs
from roofline.disagg import itl_limited_batch, kv_transfer
from roofline.performance import decode_pass, iteration_costs
from roofline.splitchoice import choose, full_block_tokens, prefill_stall

SPECS = builtin_specs()
H100 = Hardware(SPECS.gpu("h100-sxm"))
LLAMA_8B = Workload(SPECS.model("llama-3.1-8b"))
LLAMA_70B = Workload(SPECS.model("llama-3.1-70b"))


@pytest.mark.parametrize(("prefix", "block", "hit"), [(1000, 16, 992), (1024, 16, 1024), (15, 16, 0), (100, 64, 64)])
def test_only_full_blocks_are_reused(prefix, block, hit) -> None:
    assert full_block_tokens(prefix, block) == hit


@pytest.mark.parametrize(("prefix", "block"), [(-1, 16), (10, 0), (1.5, 16), (True, 16)])
def test_a_bad_prefix_or_block_is_one_line_naming_it(prefix, block) -> None:
    with pytest.raises(SpecError) as refused:
        full_block_tokens(prefix, block)
    assert refused.value.field in ("prefix_tokens", "block_tokens") and "\n" not in str(refused.value)


def test_the_stall_is_the_iteration_with_the_prefill_against_the_decodes_alone() -> None:
    stall = prefill_stall(H100, LLAMA_8B, 4096, 32, 4096)
    together = iteration_costs(H100, LLAMA_8B).prefill(4096, 0, decodes=32, decode_context=32 * 4096)
    alone = decode_pass(H100, replace(LLAMA_8B, batch=32, context=4096), 32)
    assert stall.iteration_s == together.seconds and stall.decode_s == alone.seconds
    assert stall.ratio == pytest.approx(together.seconds / alone.seconds) and stall.ratio > 1
    # each decode reads its own cache: the iteration is never shorter than the decodes alone
    assert prefill_stall(H100, LLAMA_8B, 1, 64, 8192).iteration_s >= prefill_stall(H100, LLAMA_8B, 1, 64, 8192).decode_s


def test_long_prompts_on_a_large_model_split_and_short_prompts_on_a_small_one_keep_one_pool() -> None:
    pool = Hardware(SPECS.gpu("h100-sxm"), 4)
    long = choose(pool, LLAMA_70B, 4096, 256, 10.0, 1.0, 0.05)
    assert long.verdict == "split" and long.stall.iteration_s > 0.05
    assert long.decode_batch == itl_limited_batch(pool, LLAMA_70B, 4096, 256, 0.05, 256)
    assert long.transfer == kv_transfer(pool, LLAMA_70B, 4096, "network")
    assert long.prefill_instances >= 1 and long.decode_instances >= 1
    short = choose(H100, LLAMA_8B, 100, 256, 1.0, 1.0, 0.05)
    assert short.verdict == "keep" and short.stall.iteration_s <= 0.05


def test_targets_no_layout_meets_say_which() -> None:
    ttft = choose(H100, LLAMA_8B, 32768, 256, 1.0, 0.05, 0.05)
    assert ttft.verdict == "neither" and "time-to-first-token" in ttft.reason
    itl = choose(H100, LLAMA_8B, 1000, 256, 1.0, 1.0, 0.001)
    assert itl.verdict == "neither" and itl.decode_batch == 0 and "time-between-tokens" in itl.reason


@pytest.mark.parametrize(
    ("changes", "field"), [({"rate": 0}, "rate"), ({"ttft_slo_s": 0}, "ttft_slo"), ({"itl_slo_s": 0}, "tpot_slo")]
)
def test_bad_rates_and_targets_are_one_line_naming_them(changes, field) -> None:
    inputs = {"prompt": 1000, "output": 100, "rate": 1.0, "ttft_slo_s": 1.0, "itl_slo_s": 0.05, **changes}
    with pytest.raises(SpecError) as refused:
        choose(H100, LLAMA_8B, **inputs)
    assert field in str(refused.value.field) and "\n" not in str(refused.value)
