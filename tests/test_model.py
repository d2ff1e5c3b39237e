"""Unit tests of the formulas: architecture, decode, prefill, memory and crossover."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import roofline
from roofline import (
    Hardware,
    SpecError,
    Workload,
    builtin_specs,
    crossover_batch,
    decode_step,
    estimate,
    gpus_to_fit,
    memory_use,
    prefill_pass,
    simple_prefill_seconds,
    tensor_parallel_degrees,
)
from roofline import architecture as arch

SPECS = builtin_specs()
H100 = SPECS.gpu("h100-sxm")
LLAMA_8B = SPECS.model("llama-3.1-8b")
MIXTRAL = SPECS.model("mixtral-8x7b")
DEEPSEEK = SPECS.model("deepseek-v3")


def test_gqa_cache_uses_kv_heads_not_attention_heads() -> None:
    as_if_mha = dataclasses.replace(LLAMA_8B, kv_heads=LLAMA_8B.attention_heads)
    assert arch.kv_cache_bytes_per_token(as_if_mha) == 4 * arch.kv_cache_bytes_per_token(LLAMA_8B)


def test_mla_cache_is_the_latent_not_full_heads() -> None:
    full_heads = 2 * DEEPSEEK.layers * DEEPSEEK.attention_heads * (128 + 64) * 2
    assert arch.kv_cache_bytes_per_token(DEEPSEEK) == 61 * (512 + 64) * 2
    assert arch.kv_cache_bytes_per_token(DEEPSEEK) < full_heads / 40


def test_kv_precision_scales_the_cache() -> None:
    assert arch.kv_cache_bytes_per_token(LLAMA_8B, "fp8") == arch.kv_cache_bytes_per_token(LLAMA_8B) / 2


def test_tied_embeddings_count_the_table_once() -> None:
    tied = dataclasses.replace(LLAMA_8B, tied_embeddings=True)
    saved = arch.total_parameters(LLAMA_8B) - arch.total_parameters(tied)
    assert saved == LLAMA_8B.vocab_size * LLAMA_8B.hidden_size


@pytest.mark.parametrize(
    ("precision", "bytes_per_weight"), [("fp32", 4), ("bf16", 2), ("fp8", 1), ("int4", 4.125 / 8), ("fp4", 0.5)]
)
def test_weight_bytes_per_precision(precision: str, bytes_per_weight: float) -> None:
    assert arch.weight_bytes(LLAMA_8B, precision) == 8_030_261_248 * bytes_per_weight


def test_expected_experts_is_top_k_at_one_token_and_all_when_many() -> None:
    assert arch.expected_distinct_experts(8, 2, 1) == pytest.approx(2)
    assert arch.expected_distinct_experts(256, 8, 1) == pytest.approx(8)
    assert arch.expected_distinct_experts(8, 2, 1024) == pytest.approx(8)
    assert arch.expected_distinct_experts(8, 2, 0) == 0


def test_moe_decode_at_batch_one_reads_only_active_experts() -> None:
    """Active parameters, less the untied embedding table but for the one row the token reads."""
    step = decode_step(Hardware(H100), Workload(MIXTRAL))
    table = MIXTRAL.vocab_size * MIXTRAL.hidden_size
    assert step.bytes_moved == pytest.approx((arch.active_parameters(MIXTRAL) - table + MIXTRAL.hidden_size) * 2)


def test_moe_decode_reads_more_experts_as_the_batch_grows() -> None:
    small = decode_step(Hardware(H100), Workload(MIXTRAL, batch=1)).bytes_moved
    large = decode_step(Hardware(H100), Workload(MIXTRAL, batch=1024)).bytes_moved
    assert large > 3 * small
    table = MIXTRAL.vocab_size * MIXTRAL.hidden_size
    rows = 1024 * MIXTRAL.hidden_size
    assert large == pytest.approx((arch.total_parameters(MIXTRAL) - table + rows) * 2, rel=1e-6)


def test_tied_table_is_read_whole_because_it_is_the_head() -> None:
    tied = dataclasses.replace(LLAMA_8B, tied_embeddings=True)
    assert arch.parameters_read(tied, 1) == arch.total_parameters(tied)
    assert arch.parameters_read(LLAMA_8B, 1) == arch.total_parameters(LLAMA_8B) - 128_256 * 4096 + 4096
    assert arch.decode_flops_per_token(tied, 0) == 2 * arch.total_parameters(tied)


def test_decode_reads_every_users_cache() -> None:
    hardware = Hardware(H100)
    empty = decode_step(hardware, Workload(LLAMA_8B, batch=8)).bytes_moved
    cached = decode_step(hardware, Workload(LLAMA_8B, batch=8, context=1000)).bytes_moved
    assert cached - empty == 8 * 1000 * 131_072


def test_decode_flops_are_two_per_multiplied_parameter_per_user_at_empty_context() -> None:
    """Every active parameter but the looked-up embedding table: the lookup is a copy, not math."""
    step = decode_step(Hardware(H100), Workload(MIXTRAL, batch=4))
    table = MIXTRAL.vocab_size * MIXTRAL.hidden_size
    assert step.flops == 4 * 2 * (arch.active_parameters(MIXTRAL) - table)


def test_decode_time_is_the_longer_of_memory_and_compute() -> None:
    step = decode_step(Hardware(H100), Workload(LLAMA_8B, batch=1000))
    assert step.bound == "compute"
    assert step.seconds == step.compute_s > step.memory_s


def test_compute_precision_sets_the_peak() -> None:
    assert Hardware(H100).peak_flops_per_s == 989.4e12
    assert Hardware(H100, compute_precision="fp8").peak_flops_per_s == 1978.9e12


def test_missing_math_precision_is_an_error_naming_what_exists() -> None:
    with pytest.raises(SpecError, match=r"a100-80gb has no fp8 math.*bf16, fp16, int8"):
        Hardware(SPECS.gpu("a100-80gb"), compute_precision="fp8")


def test_several_gpus_add_bandwidth_peak_and_memory() -> None:
    four = Hardware(H100, count=4)
    assert four.bandwidth_bytes_per_s == 4 * H100.bandwidth_bytes_per_s
    assert four.peak_flops_per_s == 4 * H100.peak_flops_per_s("bf16")
    assert four.usable_memory_bytes == pytest.approx(0.9 * 4 * 80e9)


def test_prefill_is_never_faster_than_one_read_of_the_weights() -> None:
    result = prefill_pass(Hardware(H100), Workload(LLAMA_8B, prompt=1))
    assert result.bound == "memory"
    assert result.seconds >= arch.parameters_read(LLAMA_8B, 1) * 2 / H100.bandwidth_bytes_per_s


def test_prefill_of_nothing_takes_no_time() -> None:
    assert prefill_pass(Hardware(H100), Workload(LLAMA_8B)).seconds == 0


def test_quantization_speeds_decode_but_not_long_prefill() -> None:
    bf16 = estimate("h100-sxm", "llama-3.1-8b", prompt=2000)
    int4 = estimate("h100-sxm", "llama-3.1-8b", prompt=2000, precision="int4")
    # 16 bits against 4.125 (int4 with a 16-bit scale per 128 weights), and the same 16-bit math.
    assert int4.decode_tokens_per_s_per_user == pytest.approx(16 / 4.125 * bf16.decode_tokens_per_s_per_user)
    assert int4.prefill.seconds == bf16.prefill.seconds


def test_prefill_attention_grows_with_the_square_of_the_prompt() -> None:
    assert arch.prefill_attention_flops(LLAMA_8B, 2000) == 2000 * 2001 / 2 * 4 * 32 * 32 * 128


def test_memory_reports_largest_batch_that_fits() -> None:
    use = memory_use(Hardware(H100), Workload(LLAMA_8B, context=4096))
    room = 72e9 - 16_060_522_496
    assert use.max_batch == int(room // (4096 * 131_072))
    over = memory_use(Hardware(H100), Workload(LLAMA_8B, batch=use.max_batch + 1, context=4096))
    assert not over.fits


def test_memory_has_no_batch_limit_without_a_cache_and_zero_when_weights_do_not_fit() -> None:
    assert memory_use(Hardware(H100), Workload(LLAMA_8B)).max_batch is None
    assert memory_use(Hardware(H100), Workload(SPECS.model("llama-3.1-405b"))).max_batch == 0


def test_usable_fraction_is_configurable() -> None:
    assert Hardware(H100, usable_fraction=0.5).usable_memory_bytes == 40e9
    with pytest.raises(SpecError, match="usable_fraction"):
        Hardware(H100, usable_fraction=1.5)


def test_crossover_moves_out_with_context_then_disappears() -> None:
    hardware = Hardware(H100)
    at = [crossover_batch(hardware, Workload(LLAMA_8B, context=context)) for context in (0, 128, 256, 4096)]
    assert at[0] < at[1] < at[2]
    assert at[3] is None


def test_moe_crossover_exists_and_is_later_than_dense() -> None:
    mixtral = crossover_batch(Hardware(H100), Workload(MIXTRAL))
    assert mixtral is not None and mixtral > 295


@pytest.mark.parametrize(
    ("field", "value"), [("batch", 0), ("context", -1), ("prompt", -5), ("batch", 1.5), ("batch", True)]
)
def test_workload_rejects_bad_values(field: str, value: object) -> None:
    with pytest.raises(SpecError, match=f"field '{field}'"):
        Workload(LLAMA_8B, **{field: value})


def test_hardware_rejects_zero_gpus() -> None:
    with pytest.raises(SpecError, match="field 'gpus': must be at least 1, got 0"):
        Hardware(H100, count=0)


def test_estimate_json_has_the_documented_keys() -> None:
    keys = estimate("h100-sxm", "llama-3.1-8b").to_dict().keys()
    for key in (
        "weights_bytes",
        "kv_bytes_per_token",
        "kv_bytes",
        "memory_used_bytes",
        "memory_usable_bytes",
        "fits",
        "decode_tokens_per_s_per_user",
        "decode_tokens_per_s_total",
        "decode_bound",
        "prefill_s",
        "crossover_batch",
    ):
        assert key in keys


def test_simple_prefill_rule_is_two_flops_per_parameter_per_token() -> None:
    """The rule counts the head for every prompt token and no attention: here it lands above the ceiling."""
    seconds = simple_prefill_seconds(Hardware(H100), Workload(LLAMA_8B, prompt=2000))
    assert seconds == 2 * 8_030_261_248 * 2000 / 989.4e12
    assert seconds > prefill_pass(Hardware(H100), Workload(LLAMA_8B, prompt=2000)).seconds


def test_gpus_to_fit_counts_weights_and_cache() -> None:
    llama_70b = SPECS.model("llama-3.1-70b")
    assert gpus_to_fit(Hardware(H100), Workload(llama_70b)) == 2
    assert gpus_to_fit(Hardware(H100), Workload(LLAMA_8B)) == 1
    assert gpus_to_fit(Hardware(H100), Workload(LLAMA_8B, batch=200, context=4096)) == 2
    # 16.06 GB + 300 users × 4,096 × 131,072 B = 177 GB: 2.5 GPUs' worth, so 4 (3 splits no heads evenly).
    assert gpus_to_fit(Hardware(H100), Workload(LLAMA_8B, batch=300, context=4096)) == 4


def test_tensor_parallel_degrees_divide_the_heads() -> None:
    assert tensor_parallel_degrees(LLAMA_8B) == (1, 2, 4, 8, 16, 32)
    assert tensor_parallel_degrees(DEEPSEEK) == (1, 2, 4, 8, 16, 32, 64, 128)
    six_kv = dataclasses.replace(LLAMA_8B, attention_heads=48, kv_heads=6)
    assert tensor_parallel_degrees(six_kv) == (1, 2)


def test_past_the_largest_degree_gpus_come_in_whole_groups() -> None:
    """16.06 GB on GPUs of 0.45 GB usable needs 35.7; the 8B's heads allow TP 32 at most, so two groups: 64."""
    tiny = dataclasses.replace(H100, memory_bytes=0.5e9)
    assert gpus_to_fit(Hardware(tiny), Workload(LLAMA_8B)) == 64


def test_builtin_specs_follow_an_edited_file(tmp_path) -> None:
    import shutil

    from roofline import builtin_specs

    data = tmp_path / "data"
    shutil.copytree(Path(roofline.__file__).parent / "data", data)
    assert builtin_specs(data) is builtin_specs(data)  # unchanged text is parsed once
    gpus = data / "gpus.toml"
    gpus.write_text(gpus.read_text().replace("bandwidth_bytes_per_s = 3.35e12", "bandwidth_bytes_per_s = 4e12"))
    assert builtin_specs(data).gpu("h100-sxm").bandwidth_bytes_per_s == 4e12


def test_rates_below_ten_keep_two_significant_digits() -> None:
    """A slow rate is never printed as 0: 0.154 -> 0.15; from 10 up, whole numbers."""
    from roofline.formatting import rate

    assert [rate(x) for x in (0, 0.154, 0.00123, 4.18, 9.6, 208.6, 12_345.6)] == [
        "0",
        "0.15",
        "0.0012",
        "4.2",
        "10",
        "209",
        "12,346",
    ]
