"""Unit tests for roofline.parallelism: usable splits, pipeline timing, the best degree.

Hand-worked numbers, each with the arithmetic in the test, so a failure says which rule broke.
"""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from roofline import SpecError, builtin_specs
from roofline import parallelism as par


@pytest.fixture(scope="module")
def specs():
    return builtin_specs()


def test_usable_degrees_llama_8b_are_the_divisors_of_32_heads(specs):
    # 32 heads, 8 KV heads: every divisor of 32 either divides 8 or is a multiple of it.
    assert par.usable_tp_degrees(specs.model("llama-3.1-8b")) == (1, 2, 4, 8, 16, 32)


def test_usable_degrees_need_whole_kv_heads():
    # 24 heads and 8 KV heads: 3 divides 24 but neither divides 8 nor is a multiple of it,
    # so GPUs would hold a fraction of a KV head; 12 and 24 hold whole copies.
    from roofline.specs import ModelSpec

    model = ModelSpec(
        id="toy",
        name="Toy",
        layers=4,
        hidden_size=3072,
        attention_heads=24,
        kv_heads=8,
        head_dim=128,
        ffn_size=8192,
        vocab_size=32000,
        tied_embeddings=False,
        source="test",
    )
    assert par.usable_tp_degrees(model) == (1, 2, 4, 8, 24)
    assert not par.splits_heads(model, 3)
    assert not par.splits_heads(model, 12)  # 12 is not a multiple of 8, nor a divisor
    assert par.nearest_usable_tp_degrees(model, 12) == (8, 24)


def test_latent_attention_is_constrained_by_heads_only(specs):
    model = specs.model("deepseek-v3")  # 128 heads, MLA
    assert par.usable_tp_degrees(model) == (1, 2, 4, 8, 16, 32, 64, 128)


def test_limit_cuts_the_list(specs):
    assert par.usable_tp_degrees(specs.model("llama-3.1-8b"), limit=8) == (1, 2, 4, 8)


@pytest.mark.parametrize(
    ("degree", "nearest"),
    [(6, (4, 8)), (3, (2, 4)), (4, (4,)), (33, (32,)), (1000, (32,))],
)
def test_nearest_usable_degrees(specs, degree, nearest):
    assert par.nearest_usable_tp_degrees(specs.model("llama-3.1-8b"), degree) == nearest


def test_check_tp_degree_names_the_nearest_degrees(specs):
    model = specs.model("llama-3.1-8b")
    assert par.check_tp_degree(model, 8) == 8
    with pytest.raises(SpecError) as caught:
        par.check_tp_degree(model, 6)
    message = str(caught.value)
    assert message == (
        "field 'gpus': a tensor-parallel degree of 6 cannot give each GPU whole heads of Llama 3.1 8B "
        "(32 attention heads and 8 KV heads) (the nearest usable tensor-parallel degrees are 4 and 8)"
    )
    assert "\n" not in message
    with pytest.raises(SpecError, match="nearest usable tensor-parallel degree is 32"):
        par.check_tp_degree(model, 48)


@pytest.mark.parametrize("bad", [0, -2, 2.0, True, "8", None])
def test_check_tp_degree_refuses_what_is_not_a_count(specs, bad):
    with pytest.raises(SpecError, match="field 'tp'"):
        par.check_tp_degree(specs.model("llama-3.1-8b"), bad, field="tp")


def test_stage_layers_split_as_evenly_as_whole_layers_allow():
    assert par.stage_layers(80, 4) == (20, 20, 20, 20)
    assert par.stage_layers(126, 8) == (16, 16, 16, 16, 16, 16, 15, 15)  # 126 = 6 x 16 + 2 x 15
    assert sum(par.stage_layers(61, 7)) == 61
    assert par.stage_layers(5, 5) == (1, 1, 1, 1, 1)


def test_more_stages_than_layers_is_one_clear_line():
    with pytest.raises(SpecError) as caught:
        par.stage_layers(32, 33)
    assert str(caught.value) == (
        "field 'pp_stages': must not exceed the model's 32 layers, got 33 "
        "(each pipeline stage holds at least one whole layer)"
    )


@pytest.mark.parametrize(
    ("stages", "microbatches", "bubble"),
    [(1, 1, 0.0), (4, 1, 3 / 4), (4, 4, 3 / 7), (8, 1, 7 / 8), (2, 6, 1 / 7), (8, 64, 7 / 71)],
)
def test_bubble_is_p_minus_1_over_m_plus_p_minus_1(stages, microbatches, bubble):
    assert par.pipeline_bubble_fraction(stages, microbatches) == pytest.approx(bubble)


def test_bubble_matches_the_pass_it_describes():
    # p equal stages of t seconds, m micro-batches, no hop: the pass takes (m + p - 1) t and each
    # stage works m t, so the idle share is the bubble.
    p, m, t = 4, 3, 0.002
    total = par.pipeline_pass_s([t] * p, 0.0, m)
    assert total == pytest.approx((m + p - 1) * t)
    assert 1 - (m * t) / total == pytest.approx(par.pipeline_bubble_fraction(p, m))


def test_pipeline_latency_is_the_stages_plus_the_hops():
    # 4 stages of 10 ms, 3 hops of 20 us: 40.06 ms, no faster than one GPU's 40 ms.
    assert par.pipeline_latency_s([0.010] * 4, 20e-6) == pytest.approx(0.04006)
    assert par.pipeline_latency_s([0.005], 1.0) == 0.005  # one stage, no hop


def test_pipeline_interval_fills_at_p_microbatches():
    stages = [0.010] * 4
    hop = 0.0
    assert par.pipeline_interval_s(stages, hop, 1) == pytest.approx(0.040)  # a lap, stages idle 3/4
    assert par.pipeline_interval_s(stages, hop, 2) == pytest.approx(0.040)  # still a lap
    assert par.pipeline_interval_s(stages, hop, 4) == pytest.approx(0.040)  # every stage busy
    assert par.pipeline_interval_s(stages, hop, 8) == pytest.approx(0.080)  # the slowest stage, 8 times
    # an uneven split is paced by its slowest stage
    assert par.pipeline_interval_s([0.010, 0.012], 0.0, 4) == pytest.approx(0.048)


@pytest.mark.parametrize("bad", [-1e-6, math.nan, math.inf, "1", None, True])
def test_times_must_be_finite_seconds(bad):
    with pytest.raises(SpecError):
        par.pipeline_latency_s([0.01, bad], 0.0)
    with pytest.raises(SpecError, match="field 'hop_s'"):
        par.pipeline_latency_s([0.01, 0.01], bad)


def test_no_stage_is_an_error():
    with pytest.raises(SpecError, match="at least one stage"):
        par.pipeline_latency_s([], 0.0)


def test_point_to_point_hop():
    # 16 kB of activations over 450 GB/s with 3.7 us of latency: 3.7 + 0.036 us
    assert par.point_to_point_s(16384, 450e9, 3.7e-6) == pytest.approx(3.7e-6 + 16384 / 450e9)
    with pytest.raises(SpecError, match="field 'latency_s'"):
        par.point_to_point_s(1, 1e9, -1.0)
    with pytest.raises(SpecError, match="field 'link'"):
        par.point_to_point_s(1, 0, 0.0)


def test_best_degree_takes_the_fastest_and_the_fewest_gpus_on_a_tie():
    times = {1: 8.0, 2: 4.2, 4: 2.4, 8: 2.6}
    assert par.best_degree(times, times.__getitem__) == 4
    assert par.best_degree([1, 2, 4], {1: 3.0, 2: 2.0, 4: 2.0}.__getitem__) == 2
    assert par.best_degree([], lambda g: 1.0) is None


def test_fitting_degrees_keep_their_order():
    assert par.fitting_degrees([1, 2, 4, 8], lambda g: g >= 2) == (2, 4, 8)


def test_latency_optimal_degree_worked_example():
    # Llama 3.1 8B's 16.06 GB on an H100 at 3.35 TB/s: 4.79 ms of weights; 32 layers; a hop of
    # 19.19 us / 14 (NCCL's 8-GPU small all-reduce spread over 2 x 7 ring steps) = 1.371 us.
    weights_s = 16.06e9 / 3.35e12
    g = par.latency_optimal_degree(weights_s, 32, 19.19e-6 / 14)
    assert g == pytest.approx(math.sqrt(weights_s / (4 * 32 * 19.19e-6 / 14)))
    assert 5.0 < g < 5.4
    # the step time really is least there: a little either side costs more
    step = lambda x: weights_s / x + 2 * 32 * 2 * (x - 1) * 19.19e-6 / 14  # noqa: E731
    assert step(g) < step(0.95 * g) and step(g) < step(1.05 * g)
    assert par.latency_optimal_degree(weights_s, 32, 0.0) == math.inf


def test_kv_room_grows_faster_than_the_gpus():
    # vLLM's blog measured 13.9x the KV blocks from TP1 to TP2; (2 - w) / (1 - w) = 13.9 for w = 0.922
    w = (13.9 - 2) / (13.9 - 1)
    assert par.kv_room_ratio(2, 1.0, w) == pytest.approx(13.9)
    assert par.kv_room_ratio(2, 72e9, 0.0) == pytest.approx(2.0)  # no weights: exactly G times
    assert par.kv_room_ratio(4, 72e9, 80e9) == math.inf
    with pytest.raises(SpecError, match="field 'weight_bytes'"):
        par.kv_room_ratio(2, 1.0, -1.0)


def test_tp_pp_splits_of_eight_gpus(specs):
    assert par.tp_pp_splits(8, specs.model("llama-3.1-8b")) == ((8, 1), (4, 2), (2, 4), (1, 8))
    # 405B has 126 layers and 128 heads: 16 GPUs as 16x1 ... 1x16
    splits = par.tp_pp_splits(16, specs.model("llama-3.1-405b"))
    assert splits[0] == (16, 1) and splits[-1] == (1, 16)
    # 6 GPUs for 32 heads: TP 6 and TP 3 are not usable, so only TP 2 x PP 3 and TP 1 x PP 6
    assert par.tp_pp_splits(6, specs.model("llama-3.1-8b")) == ((2, 3), (1, 6))


def test_module_imports_on_its_own():
    # The chapter's formulas must not need the rest of the package's newer pieces.
    code = "import roofline.parallelism as p; print(p.pipeline_bubble_fraction(4, 4))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(3 / 7)
