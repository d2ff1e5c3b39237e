"""``roofline.moelayout``: TP-G and EP-G side by side, the batch where EP overtakes TP, a batched
prefill on EP-G and the batch reading a share of the weights; each against the package's own
layouts and the formulas in the module's docstrings, and bad input refused in one line."""

from __future__ import annotations

import pytest

from roofline import Hardware, SpecError, Workload, builtin_specs
from roofline import architecture as arch
from roofline.deployment import deploy, split_for
from roofline.epdeploy import ExpertLayout, expert_step
from roofline.loader import parse_specs
from roofline.moelayout import (
    GPU_COUNTS,
    batch_reading_share,
    batched_prefill,
    ep_advantage,
    ep_break_even_batch,
    ep_layout,
    fewest_gpus,
    layouts,
    most_per_gpu,
    tp_layout,
)
from roofline.performance import resolved

SPECS = builtin_specs()
DS = SPECS.model("deepseek-v3")
H100, H200 = Hardware(SPECS.gpu("h100-sxm")), Hardware(SPECS.gpu("h200"))


def work(batch: int = 256, context: int = 4096, prompt: int = 0, model=DS, precision: str = "fp8") -> Workload:
    return Workload(model, precision, "bf16", batch, context, prompt)


def test_each_layout_is_the_packages_own_step() -> None:
    tp = tp_layout(H200, work(), 8)
    assert tp.tokens_per_s == pytest.approx(256 / deploy(H200, work(), split_for("tp", 8)).step.interval_s)
    ep = ep_layout(H200, work(), 8)
    step = expert_step(H200, work(), ExpertLayout(8))
    assert ep.tokens_per_s == pytest.approx(256 / step.step_s) and ep.bound == step.bound
    assert ep.max_batch == step.max_batch_that_fits and ep.name == "EP8"


def test_refusals_are_the_packages_one_line_and_a_full_layout_says_how_many_fit() -> None:
    found = {item.name: item for item in layouts(H100, work(batch=4096), GPU_COUNTS)}
    assert found["EP1"].reason == "one GPU holds every expert: that is TP1"
    assert "do not split evenly over 72 GPUs" in found["EP72"].reason
    assert "whole heads" in found["TP144"].reason
    assert found["TP16"].tokens_per_s is not None and not found["TP16"].fits
    assert found["TP16"].reason == f"holds {found['TP16'].max_batch:,} users at this context, not 4,096"
    assert all("\n" not in (item.reason or "") for item in found.values())


def test_redundant_slots_let_72_and_144_gpus_split_deepseek() -> None:
    found = {item.name: item for item in layouts(H100, work(batch=256 * 72, context=2000), redundant=32)}
    assert found["EP72"].serves and found["EP144"].tokens_per_s is not None


def test_fewest_and_most_per_gpu() -> None:
    found = layouts(H100, work(batch=4096))
    assert fewest_gpus(found).name == "EP32"
    best = most_per_gpu(found)
    assert best.serves and all(
        best.tokens_per_s / best.gpus >= item.tokens_per_s / item.gpus for item in found if item.serves
    )
    assert fewest_gpus(layouts(H100, work(batch=100_000))) is None


def test_a_chip_without_links_runs_on_one_gpu_only() -> None:
    text = SPECS.gpu("h100-sxm")
    own = parse_specs(
        f'[gpu."mine"]\nname = "Mine"\nmemory_bytes = 80e9\nbandwidth_bytes_per_s = 3e12\nsource = "x"\n'
        f'[gpu."mine".dense_flops_per_s]\nbf16 = {text.dense_flops_per_s["bf16"]}\n',
        "mine.toml",
    ).gpu("mine")
    found = layouts(Hardware(own), work(model=SPECS.model("qwen3-30b-a3b"), precision="bf16", batch=8), (1, 2))
    assert found[0].tokens_per_s is not None
    assert "no interconnect" in found[2].reason and "no interconnect" in found[3].reason


def test_the_break_even_batch_is_the_first_where_ep_reaches_tp() -> None:
    even = ep_break_even_batch(H200, work(batch=1), 8)
    assert even is not None and even > 1
    assert ep_advantage(H200, work(), 8, even) >= 1 > ep_advantage(H200, work(), 8, even - 1)
    # Longer contexts weigh the replicated latent cache more: the crossing comes earlier.
    assert ep_break_even_batch(H200, work(batch=1, context=16384), 8) < even


def test_ep_advantage_refuses_a_dense_model_in_one_line() -> None:
    with pytest.raises(SpecError) as error:
        ep_advantage(H200, work(model=SPECS.model("llama-3.1-70b"), precision="bf16"), 8, 4)
    assert "\n" not in str(error.value) and "gpus" in str(error.value)


def test_a_batched_prefill_reads_each_gpus_weights_once_and_sends_every_token() -> None:
    run = batched_prefill(H100, work(batch=1, context=0, prompt=4096), 32, 16384)
    assert run.prompts == 32 * 16384 // 4096
    peak = resolved(H100, work(batch=1, context=0, prompt=4096)).peak_flops_per_s  # fp8 math for fp8 weights
    flops = run.prompts * arch.prefill_flops(DS, 4096)
    assert run.compute_s == pytest.approx(flops / (32 * peak))
    assert run.seconds == max(run.compute_s, run.memory_s, run.alltoall_s)
    assert run.tokens_per_s == pytest.approx(run.prompts * 4096 / run.seconds)
    # Twice the tokens a GPU: twice the all-to-all, the same weights read.
    double = batched_prefill(H100, work(batch=1, context=0, prompt=4096), 32, 2 * 16384)
    assert double.alltoall_s == pytest.approx(2 * run.alltoall_s)
    assert double.memory_s == pytest.approx(run.memory_s, rel=0.01)


@pytest.mark.parametrize(("prompt", "per_gpu"), [(0, 16384), (8192, 4096)])
def test_a_batched_prefill_refuses_prompts_that_do_not_fit_in_one_line(prompt: int, per_gpu: int) -> None:
    with pytest.raises(SpecError) as error:
        batched_prefill(H100, work(batch=1, context=0, prompt=prompt), 32, per_gpu)
    assert "\n" not in str(error.value) and "prompt" in str(error.value)


def test_the_batch_reading_a_share_is_the_first_that_does() -> None:
    found = batch_reading_share(DS, "fp8", 0.9)
    target = 0.9 * arch.weight_bytes(DS, "fp8")
    assert arch.weights_read_bytes(DS, found, "fp8") >= target > arch.weights_read_bytes(DS, found - 1, "fp8")
    assert batch_reading_share(SPECS.model("llama-3.1-8b"), "bf16", 0.5) == 1  # a dense model reads it all
    # Every weight only once the batch looks up as many embedding rows as the vocabulary has.
    assert batch_reading_share(DS, "fp8", 1.0) == DS.vocab_size
    assert batch_reading_share(DS, "fp8", 1.0, limit=1000) is None
    with pytest.raises(SpecError):
        batch_reading_share(DS, "fp8", 1.5)
