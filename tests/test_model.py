"""Unit tests of the formulas: architecture, decode, prefill, memory and crossover."""

from __future__ import annotations

import dataclasses
import re
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
    kv_copies,
    math_precision,
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
    # The driver reports 81,559 MiB an H100; 0.5 GB of each is workspace.
    assert four.usable_memory_bytes == pytest.approx(4 * (81_559 * 2**20 - 0.5e9))


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
    # The KV pool: 95% of what the 16.06 GB of weights leave of 85.52 GB less 0.5 GB of workspace.
    pool = 0.95 * (81_559 * 2**20 - 0.5e9 - 16_060_522_496)
    assert use.pool_bytes == pytest.approx(pool)
    assert use.max_batch == int(pool // (4096 * 131_072))
    over = memory_use(Hardware(H100), Workload(LLAMA_8B, batch=use.max_batch + 1, context=4096))
    assert not over.fits


def test_memory_has_no_batch_limit_without_a_cache_and_zero_when_weights_do_not_fit() -> None:
    assert memory_use(Hardware(H100), Workload(LLAMA_8B)).max_batch is None
    assert memory_use(Hardware(H100), Workload(SPECS.model("llama-3.1-405b"))).max_batch == 0


def test_usable_fraction_is_configurable() -> None:
    half = Hardware(H100, usable_fraction=0.5)
    assert half.kv_pool_bytes(16e9) == pytest.approx(0.5 * (81_559 * 2**20 - 0.5e9 - 16e9))
    assert half.kv_pool_bytes(100e9) == 0  # weights that fill the memory leave no pool
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
    # Not only powers of two: 3 and 6 divide both; 12, 24 and 48 copy each of the 6 KV heads.
    assert tensor_parallel_degrees(six_kv) == (1, 2, 3, 6, 12, 24, 48)


def test_past_the_largest_degree_gpus_come_in_whole_groups() -> None:
    """16.06 GB on GPUs of 0.45 GB usable needs 35.7; the 8B's heads allow TP 32 at most, so two groups: 64."""
    tiny = dataclasses.replace(H100, memory_bytes=0.5e9, addressable_memory_bytes=None, addressable_memory_source=None)
    assert gpus_to_fit(Hardware(tiny, workspace_bytes=0.05e9), Workload(LLAMA_8B)) == 64


def test_builtin_specs_follow_an_edited_file(tmp_path) -> None:
    import shutil

    from roofline import builtin_specs

    data = tmp_path / "data"
    shutil.copytree(Path(roofline.__file__).parent / "data", data)
    assert builtin_specs(data) is builtin_specs(data)  # unchanged text is parsed once
    gpus = data / "gpus.toml"
    gpus.write_text(gpus.read_text().replace("bandwidth_bytes_per_s = 3.35e12", "bandwidth_bytes_per_s = 4e12"))
    assert builtin_specs(data).gpu("h100-sxm").bandwidth_bytes_per_s == 4e12


def test_the_driver_reports_more_than_the_nameplate_and_engines_size_the_pool_from_it() -> None:
    """Issue 17: Llama 3.1 70B fp8 on one H100 beat a ceiling that took 0.9 x 80e9 as usable (4 users
    at 128/2048). The driver reports 81,559 MiB (85.5 GB); with 0.5 GB of workspace and 95% of what
    the 70.6 GB of fp8 weights leave, the fp8 cache holds about 75 users at a mean context of 1,152."""
    assert H100.addressable_bytes == 81_559 * 2**20
    seventy = Workload(SPECS.model("llama-3.1-70b"), "fp8", "fp8", context=128 + 1024)
    use = memory_use(Hardware(H100), seventy)
    assert use.pool_bytes == pytest.approx(0.95 * (81_559 * 2**20 - 0.5e9 - use.weights_bytes))
    assert use.max_batch == int(use.pool_bytes // (1152 * 163_840))
    assert use.max_batch > 70


def test_kv_heads_are_copied_when_the_gpus_outnumber_them() -> None:
    """Issue 17: Llama 3.1 405B on 16 H100s at 8,192 tokens. Its 8 KV heads are copied to 2 GPUs
    each, so every user's cache takes twice the memory: on the memory the old ceiling assumed
    (72 GB a GPU for weights and cache) 40 users fit, not 80."""
    big = Workload(SPECS.model("llama-3.1-405b"), context=8192)
    sixteen = Hardware(H100, 16)
    assert kv_copies(sixteen, big.model) == 2
    assert kv_copies(Hardware(H100, 8), big.model) == 1
    old_memory = Hardware(H100, 16, usable_fraction=1.0, workspace_bytes=81_559 * 2**20 - 72e9)
    assert memory_use(old_memory, big).max_batch == 40
    # The copies are read too: the step reads twice the cache of one copy.
    one_user = dataclasses.replace(big, batch=1)
    step = decode_step(sixteen, one_user)
    weights = arch.parameters_read(big.model, 1) * 2
    assert step.bytes_moved == pytest.approx(weights + 2 * big.kv_bytes_per_user)


def test_a_latent_cache_is_held_by_every_gpu_unless_attention_is_data_parallel() -> None:
    eight = Hardware(H100, 8)
    assert kv_copies(eight, DEEPSEEK) == 8
    assert kv_copies(dataclasses.replace(eight, attention_dp=True), DEEPSEEK) == 1
    assert kv_copies(Hardware(H100), DEEPSEEK) == 1


def test_fp4_weights_run_fp4_math_where_the_gpu_has_it() -> None:
    b200 = SPECS.gpu("b200")
    assert math_precision(b200, "nvfp4") == "fp4"
    assert math_precision(b200, "mxfp4") == "fp4"
    assert math_precision(H100, "nvfp4") == "bf16"  # Hopper has no fp4 math: weight-only at 16 bits
    prompt = Workload(SPECS.model("llama-3.1-70b"), "nvfp4", prompt=4096)
    assert prefill_pass(Hardware(b200), prompt).compute_s == pytest.approx(
        arch.prefill_flops(prompt.model, 4096) / 9e15
    )


def test_tensor_parallel_passes_pay_two_ring_all_reduces_a_layer() -> None:
    """Each layer all-reduces its tokens' activations twice: tokens x hidden x 2 bytes, costing
    latency + 2(G-1)/G x bytes / link. On 4 H100s (NVLink 4, 450 GB/s a GPU; at 4 GPUs the
    smallest measured latency is SGLang's custom kernel's 3.7 us)."""
    seventy = SPECS.model("llama-3.1-70b")
    four = Hardware(H100, 4)
    step = decode_step(four, Workload(seventy, "fp8", batch=64, context=1000))
    message = 64 * 8192 * 2
    each = 3.7e-6 + 2 * 3 / 4 * message / 450e9
    assert step.communication_s == pytest.approx(160 * each)
    assert step.seconds == pytest.approx(max(step.memory_s, step.compute_s) + 160 * each)
    assert decode_step(Hardware(H100), Workload(seventy, "fp8", batch=64, context=1000)).communication_s == 0
    slower = dataclasses.replace(four, allreduce_latency_s=20e-6)
    assert decode_step(slower, Workload(seventy, "fp8", batch=64, context=1000)).communication_s == pytest.approx(
        160 * (20e-6 + 2 * 3 / 4 * message / 450e9)
    )


def test_all_reduce_latency_is_a_base_plus_steps_and_the_ceiling_is_measured() -> None:
    """NCCL's ring is priced as its cost model prices it, a base paid once plus 2(G-1) steps,
    fitted to nccl-tests#123 (10 us on 2 A100s, 33.7 on 8); on H100s the base is that fit's and the
    step meets the 19.19 us measured on 8. A run naming a preset pays its measurement at G, else the
    fit. The ceiling takes the smallest *measured* latency at G, never an extrapolation: at 2 GPUs
    the one-shot kernel's 3.7 us, not the old (G-1)/7 share of the 8-GPU ring (2.74 us)."""
    link = H100.interconnect
    nccl = link.preset("nccl")
    assert nccl.algorithm == "ring" and nccl.base_s == pytest.approx(5.563e-6)
    assert [link.latency("nccl", g) for g in (2, 4, 8, 16)] == pytest.approx(
        [5.563e-6 + 2 * 0.9734e-6, 5.563e-6 + 6 * 0.9734e-6, 19.19e-6, 5.563e-6 + 30 * 0.9734e-6]
    )
    assert link.latency("nccl", 2) > 2 * 19.19e-6 / 7  # the base: 2 GPUs cost far more than 1/7 of 8
    assert [link.latency("custom_oneshot", g) for g in (2, 3, 4, 6, 8, 16)] == pytest.approx(
        [3.7e-6, 3.7e-6, 3.7e-6, 4.7e-6, 5.7e-6, 5.7e-6]  # held at the last measured past 8
    )
    assert link.preset("custom_oneshot").algorithm == "one_shot"
    assert [link.latency("vllm_custom", g) for g in (2, 4, 8)] == pytest.approx([8.8e-6, 8.5e-6, 9.3e-6])
    assert link.best_allreduce(4).name == "custom_oneshot" and link.best_allreduce(2).name == "custom_oneshot"
    assert [link.ceiling_latency(g) for g in (2, 4, 8)] == pytest.approx([3.7e-6, 3.7e-6, 5.7e-6])
    assert "as measured at 2 GPUs" in Hardware(H100, 2).allreduce_latency_basis
    latencies = [Hardware(H100, g).allreduce_latency for g in (2, 4, 8)]
    assert latencies == sorted(latencies) and latencies[0] < latencies[-1]  # more GPUs, longer wait
    charged = [Hardware(H100, g, allreduce_preset="nccl").allreduce_latency for g in (2, 4, 8)]
    assert charged == pytest.approx([7.5098e-6, 11.4034e-6, 19.19e-6])
    assert Hardware(H100, 8, allreduce_preset="nccl", allreduce_latency_s=1e-6).allreduce_latency == 1e-6
    a100 = SPECS.gpu("a100-80gb").interconnect  # measured at every count from 2 to 8 (nccl-tests#123)
    assert [a100.latency("nccl", g) for g in (2, 3, 8)] == pytest.approx([10e-6, 13.76e-6, 33.7e-6])
    with pytest.raises(SpecError, match=r"unknown all-reduce latency preset 'ncl'.*did you mean 'nccl'"):
        Hardware(H100, 8, allreduce_preset="ncl")
    unlinked = dataclasses.replace(SPECS.gpu("mi300x"), interconnect=None)
    with pytest.raises(SpecError, match="no interconnect in its spec, so no all-reduce presets"):
        Hardware(unlinked, 1, allreduce_preset="nccl")


def test_the_a100_ring_fit_is_the_least_squares_line_through_its_measurements() -> None:
    """The fitted constants in gpus.toml are what a least-squares line of latency against the
    ring's 2(G-1) steps gives for the measurements stored beside them (nccl-tests#123)."""
    preset = SPECS.gpu("a100-80gb").interconnect.preset("nccl")
    points = sorted(preset.measured_s.items())
    xs, ys = [2 * (g - 1) for g, _ in points], [s for _, s in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / sum((x - mean_x) ** 2 for x in xs)
    assert preset.step_s == pytest.approx(slope, rel=1e-3)
    assert preset.base_s == pytest.approx(mean_y - slope * mean_x, rel=1e-3)
    h100 = H100.interconnect.preset("nccl")  # the same base; the step meets the measurement on 8
    assert h100.base_s == preset.base_s and h100.fit(8) == pytest.approx(h100.measured_s[8], rel=1e-4)


def test_no_nccl_latency_at_two_gpus_is_below_the_smallest_two_gpu_measurement_cited() -> None:
    """Every GPU's NCCL preset at 2 GPUs is at least the smallest all-reduce latency any cited
    source measured on 2 GPUs (SGLang's one-shot kernel on H100s, 3.7 us; NCCL's own ring on 2
    A100s measured 10 us): an extrapolated NCCL latency below a one-shot kernel's is backwards."""
    measured_on_two = [
        preset.measurements[2]
        for gpu in SPECS.gpus.values()
        if gpu.interconnect is not None
        for preset in gpu.interconnect.allreduce_latency_s.values()
        if 2 in preset.measurements
    ]
    smallest = min(measured_on_two)
    assert smallest == pytest.approx(3.7e-6)
    for gpu in SPECS.gpus.values():
        if gpu.interconnect is not None and "nccl" in gpu.interconnect.allreduce_latency_s:
            assert gpu.interconnect.latency("nccl", 2) >= smallest, gpu.id
            assert Hardware(gpu, 2).allreduce_latency >= min(
                p.floor(2) or p.at(2) for p in gpu.interconnect.allreduce_latency_s.values()
            )


def test_tp4_against_tp8_turns_on_the_base_latency() -> None:
    """Issue 35's sensitivity: the 8B at batch 1 on H100s, NCCL's 19.19 us on 8 GPUs split into a
    base and 2(G-1) steps. With no base (the old (G-1)/7 rule) four GPUs give the faster token; with
    the fitted base eight do, by a few per cent; the crossover lies between. With the one-shot
    kernel eight stay fastest."""
    from roofline.parallelism import crossover, ring_allreduce_latency_s, ring_step_for_base_s

    eight_b = Workload(SPECS.model("llama-3.1-8b"), context=5)

    def step(g: int, base: float) -> float:
        latency = ring_allreduce_latency_s(base, ring_step_for_base_s(19.19e-6, 8, base), g)
        return decode_step(Hardware(H100, g, allreduce_latency_s=latency), eight_b).seconds

    assert step(4, 0.0) < step(8, 0.0)
    assert step(8, 5.563e-6) < step(4, 5.563e-6) < 1.05 * step(8, 5.563e-6)
    x = crossover(lambda b: step(4, b) - step(8, b), 0.0, 19.19e-6)
    assert x is not None and 0 < x < 5.563e-6
    assert step(4, x) == pytest.approx(step(8, x), rel=1e-6)
    nccl = {g: decode_step(Hardware(H100, g, allreduce_preset="nccl"), eight_b).seconds for g in (1, 2, 4, 8)}
    assert min(nccl, key=nccl.get) == 8
    oneshot = {g: decode_step(Hardware(H100, g), eight_b).seconds for g in (1, 2, 4, 8)}
    assert min(oneshot, key=oneshot.get) == 8


def test_past_the_nvlink_domain_the_all_reduce_crosses_the_scale_out_network() -> None:
    sixteen = Hardware(H100, 16)
    assert sixteen.link_bytes_per_s == 50e9
    assert Hardware(H100, 8).link_bytes_per_s == 450e9
    assert Hardware(SPECS.gpu("mi300x"), 8).link_bytes_per_s == 448e9  # 7 Infinity Fabric links
    assert Hardware(SPECS.gpu("l40s"), 8).link_bytes_per_s == 32e9  # PCIe Gen4 x16, one direction


# -- Small per-layer weights some architectures add (issue 24) ------------------------------------


def test_attention_biases_and_qk_norms_add_their_vectors() -> None:
    """q/k/v biases add H*h + 2*K*h, an output bias d, q/k norms 2*h, per layer."""
    base = arch.attention_parameters(LLAMA_8B)
    d, heads, kv, h = 4096, 32, 8, 128
    assert arch.attention_parameters(dataclasses.replace(LLAMA_8B, qkv_bias=True)) == base + heads * h + 2 * kv * h
    assert arch.attention_parameters(dataclasses.replace(LLAMA_8B, output_bias=True)) == base + d
    assert arch.attention_parameters(dataclasses.replace(LLAMA_8B, qk_norm=True)) == base + 2 * h


def test_four_norms_per_layer_add_two_vectors_a_layer() -> None:
    four = dataclasses.replace(LLAMA_8B, norms_per_layer=4)
    assert arch.total_parameters(four) - arch.total_parameters(LLAMA_8B) == 32 * 2 * 4096


def test_router_and_expert_biases() -> None:
    """A router bias adds E a layer; expert biases 2*f_e + d an expert, for all E experts in the
    total and the k chosen ones in the active count."""
    layers, d, experts, k, f = 32, 4096, 8, 2, 14336
    moe = MIXTRAL.moe
    routed = dataclasses.replace(MIXTRAL, moe=dataclasses.replace(moe, router_bias=True))
    assert arch.total_parameters(routed) - arch.total_parameters(MIXTRAL) == layers * experts
    biased = dataclasses.replace(MIXTRAL, moe=dataclasses.replace(moe, expert_bias=True))
    assert arch.total_parameters(biased) - arch.total_parameters(MIXTRAL) == layers * experts * (2 * f + d)
    assert arch.active_parameters(biased) - arch.active_parameters(MIXTRAL) == layers * k * (2 * f + d)


def test_mla_without_a_query_latent_projects_queries_directly() -> None:
    """q_lora_rank 0 (DeepSeek-V2-Lite's null): d*H*(h_nope + h_rope) in place of the
    down-projection, its norm and the up-projection."""
    direct = dataclasses.replace(DEEPSEEK, mla=dataclasses.replace(DEEPSEEK.mla, q_lora_rank=0))
    d, heads, r_q, width = 7168, 128, 1536, 128 + 64
    latent_query = d * r_q + r_q + r_q * heads * width
    assert arch.attention_parameters(DEEPSEEK) - arch.attention_parameters(direct) == latent_query - d * heads * width


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"qkv_bias": "yes"}, "field 'qkv_bias': must be true or false"),
        ({"norms_per_layer": 17}, "field 'norms_per_layer': must be at most 16"),
        ({"norms_per_layer": -1}, "field 'norms_per_layer': must be at least 0"),
    ],
)
def test_layer_extras_are_validated(change: dict, fragment: str) -> None:
    with pytest.raises(SpecError, match=re.escape(fragment)):
        dataclasses.replace(LLAMA_8B, **change)


def test_biases_and_qk_norms_do_not_apply_to_latent_attention() -> None:
    with pytest.raises(SpecError, match=re.escape("field 'qk_norm': does not apply to a model with [mla]")):
        dataclasses.replace(DEEPSEEK, qk_norm=True)


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
