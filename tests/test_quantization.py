"""The quantization chapter's formulas (roofline.quantization) and the formats they read.

Golden figures cite their source; the tolerance rule is test_golden's: a figure the source
states exactly must match within 1%, a product of spec numbers to float rounding.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline import SpecError, builtin_specs, total_parameters
from roofline import architecture as arch
from roofline.performance import CostModel, Hardware, Workload, decode_pass, math_precision, prefill_pass
from roofline.precisions import FORMATS, NumberFormat, ScaleLayout, effective_bits, native_math
from roofline.quantization import (
    compare_formats,
    critical_batch,
    critical_batch_for,
    decode_speedup_ceiling,
    dequantized_pass,
    fixed_cost_fit,
    kv_break_even_context,
    kv_slope_s_per_token,
    math_for,
    stops_helping_batch,
    users_by_format,
    weight_only_prefill_slower_from,
    weight_only_speedup_ceiling,
)
from strategies import gpus, models

SPECS = builtin_specs()
H100 = Hardware(SPECS.gpu("h100-sxm"))
A100 = Hardware(SPECS.gpu("a100-80gb"))
B200 = Hardware(SPECS.gpu("b200"))
LLAMA_8B = SPECS.model("llama-3.1-8b")
EXACT = 0.01


# -- Effective bits --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("precision", "bits"),
    [
        ("int4", 4 + 16 / 128),  # Marlin README: "the 0.125 bits storage overhead of the group scales"
        ("int4-awq", 4 + (16 + 4) / 128),  # AutoAWQ WQLinear_GEMM: fp16 scales and packed 4-bit zeros per group
        ("int4-g32", 4 + (16 + 16) / 32),  # gpt-fast: bf16 scale and zero per 32
        ("nvfp4", 4 + 8 / 16),  # NVIDIA: E4M3 scale per 16
        ("mxfp4", 4 + 8 / 32),  # OCP MX v1.0: E8M0 scale per 32
        ("fp8-block", 8 + 32 / (128 * 128)),  # DeepSeek-V3: fp32 scale per 128 x 128 block
        ("fp8", 8),
        ("bf16", 16),
    ],
)
def test_effective_bits_count_scales_and_zero_points(precision: str, bits: float) -> None:
    fmt = FORMATS[precision]
    assert fmt.bits_per_weight == bits
    assert effective_bits(fmt.value_bits, fmt.scales) == bits


def test_awq_zero_points_cost_a_thirty_second_of_a_bit() -> None:
    """AWQ's 4-bit zero point per group of 128 adds 4/128 = 0.03125 bits to GPTQ-style int4."""
    assert FORMATS["int4-awq"].bits_per_weight - FORMATS["int4"].bits_per_weight == 4 / 128


@pytest.mark.parametrize("group", [0, -128])
def test_group_size_below_one_is_one_line(group: int) -> None:
    with pytest.raises(SpecError) as raised:
        ScaleLayout(group, 16)
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(f"field 'group size': must be at least 1, got {group}")
    assert "one scale per row" in message


@pytest.mark.parametrize("group", [1.5, "128", True, None])
def test_group_size_not_a_whole_number_is_one_line(group: object) -> None:
    with pytest.raises(SpecError, match="field 'group size': must be a whole number of weights"):
        ScaleLayout(group, 16)  # type: ignore[arg-type]


@pytest.mark.parametrize("bits", [-1, float("nan"), float("inf"), "16"])
def test_scale_bits_must_be_a_count(bits: object) -> None:
    with pytest.raises(SpecError, match="field 'scale_bits': must be a number of bits"):
        ScaleLayout(128, bits)  # type: ignore[arg-type]


def test_scales_larger_than_the_weights_are_one_line() -> None:
    """A 16-bit scale and zero point for every 2 int4 weights is 16 bits of scales a weight."""
    with pytest.raises(SpecError) as raised:
        effective_bits(4, ScaleLayout(2, 16, 16))
    message = str(raised.value)
    assert "\n" not in message
    assert message == (
        "field 'scale layout': 32 bits of scale and zero point per 2 weights is 16 bits a weight,"
        " more than the 4-bit values they scale (use a larger group: int4 formats share one scale"
        " among 32 to 128 weights)"
    )


def test_scales_as_large_as_the_values_are_allowed() -> None:
    assert effective_bits(4, ScaleLayout(8, 32)) == 8


def test_a_format_whose_bits_disagree_with_its_scales_is_refused() -> None:
    with pytest.raises(SpecError) as raised:
        NumberFormat("int4-x", 4, 4.1, "test", "test", scales=ScaleLayout(128, 16))
    assert str(raised.value) == "int4-x: field 'bits_per_weight': 4.1 bits a weight, but its scale layout gives 4.125"


def test_every_format_declares_its_math() -> None:
    for fmt in FORMATS.values():
        assert fmt.math in {"unquantized", "weight-only", "W8A8", "W4A4"}
        assert (fmt.native_math is None) == (fmt.math in {"weight-only"} or fmt.name in {"bf16", "fp16"})
        if fmt.math in {"W8A8", "W4A4"}:
            assert fmt.native_on and fmt.native_source.count("https://") == 1
    assert native_math("nvfp4") == "fp4"
    assert native_math("int4-awq") is None


# -- Which math runs where ---------------------------------------------------------------------


def test_fp8_on_ampere_falls_back_to_weight_only_and_says_so() -> None:
    choice = math_for(A100.gpu, "fp8")
    assert (choice.precision, choice.native) == ("bf16", False)
    assert choice.line == (
        "bf16: NVIDIA A100 80GB SXM has no fp8 math, so fp8 runs weight-only, widened to bf16 in the kernel"
        " (fp8 math: NVIDIA Ada Lovelace, Hopper and Blackwell; AMD MI300X)"
    )


def test_nvfp4_runs_fp4_math_only_on_blackwell() -> None:
    assert math_for(B200.gpu, "nvfp4").precision == "fp4"
    assert math_for(B200.gpu, "nvfp4").line == "fp4: W4A4, weights and activations multiplied at the fp4 peak"
    fallback = math_for(H100.gpu, "nvfp4")
    assert (fallback.precision, fallback.native) == ("bf16", False)
    assert "NVIDIA H100 SXM has no fp4 math" in fallback.line


def test_weight_only_formats_multiply_at_sixteen_bits_everywhere() -> None:
    for gpu in SPECS.gpus.values():
        choice = math_for(gpu, "int4-awq")
        assert choice.precision in {"bf16", "fp16"}
        assert choice.line.endswith("weight-only int4-awq (W4A16), widened to " + choice.precision + " in the kernel")


def test_every_format_on_every_gpu_gets_one_line_and_never_an_error() -> None:
    for gpu in SPECS.gpus.values():
        for precision in FORMATS:
            choice = math_for(gpu, precision)
            assert choice.precision in gpu.dense_flops_per_s
            assert "\n" not in choice.line
            assert choice.native == (choice.precision == FORMATS[precision].native_math)


def test_the_declaration_agrees_with_the_estimates_math_where_both_decide() -> None:
    """fp8, fp32, 16-bit and weight-only formats: math_for and performance.math_precision agree
    on every built-in GPU (fp8-block and the fp4 and int8 W·A formats are wired into the
    estimates' "auto" later)."""
    for gpu in SPECS.gpus.values():
        for precision, fmt in FORMATS.items():
            if fmt.native_math in (None, "fp32") or precision == "fp8":
                assert math_for(gpu, precision).precision == math_precision(gpu, precision), (gpu.id, precision)


# -- Decode at batch 1 -------------------------------------------------------------------------


def test_sixteen_over_b_eff() -> None:
    """Marlin README: "the optimal 3.87x (note the 0.125 bits storage overhead of the group scales)"."""
    assert weight_only_speedup_ceiling("int4") == pytest.approx(3.879, abs=5e-4)
    assert weight_only_speedup_ceiling("int4-awq") == pytest.approx(3.850, abs=5e-4)
    assert weight_only_speedup_ceiling("fp8") == 2.0
    assert weight_only_speedup_ceiling("nvfp4") == pytest.approx(3.556, abs=5e-4)


def test_decode_speedup_ceiling_at_batch_one_reads_the_head_at_sixteen_bits() -> None:
    """Issue 35 (M3): 16 / b_eff holds for the decoder blocks only. Every quantized format keeps
    Llama 3.1 8B's 525M-weight head (and the embedding row a token copies) at 16 bits, so the
    batch-1 ceiling is 3.23x for int4 and 1.87x for fp8, not 3.88x and 2.00x."""
    head, row = 128_256 * 4096, 4096
    blocks = 8_030_261_248 - 2 * head
    for precision, bits, expected in (("int4", 4.125, 3.23), ("fp8", 8, 1.87), ("int4-awq", 4.15625, 3.21)):
        ratio = (blocks + head + row) * 2 / (blocks * bits / 8 + (head + row) * 2)
        speedup = decode_speedup_ceiling(H100, Workload(LLAMA_8B, precision))
        assert speedup == pytest.approx(ratio, rel=1e-12)
        assert round(speedup, 2) == expected


def test_the_cache_read_pulls_the_speedup_towards_one() -> None:
    speedups = [decode_speedup_ceiling(H100, Workload(LLAMA_8B, "int4", context=c)) for c in (0, 8192, 131072)]
    assert speedups == sorted(speedups, reverse=True)
    assert 1 < speedups[-1] < 1.6


def test_tinychat_a100_ceilings() -> None:
    """llm-awq tinychat/README.md (A100, LLaMA-3-8B, 4 context tokens): the research brief's
    ceilings, 7.361 ms at bf16 and 1.898 ms at int4 g128, counted the head at 4 bits; AWQ keeps it
    (525M weights) at 16 bits, so the int4 step reads 1.05 GB more: 2.281 ms (issue 35, M3)."""
    bf16 = decode_pass(A100, Workload(LLAMA_8B, "bf16", context=4), 1)
    int4 = decode_pass(A100, Workload(LLAMA_8B, "int4", context=4), 1)
    assert bf16.seconds * 1e3 == pytest.approx(7.361, abs=1e-3)
    head = 128_256 * 4096
    kv = 4 * 131_072
    expected = ((8_030_261_248 - 2 * head) * 4.125 / 8 + (head + 4096) * 2 + kv) / 2.039e12
    assert int4.seconds == pytest.approx(expected, rel=1e-12)
    assert int4.seconds * 1e3 == pytest.approx(2.281, abs=1e-3)


# -- The critical batch ------------------------------------------------------------------------


def test_critical_batch_on_an_h100() -> None:
    """989.4e12 * b_w / (2 * 3.35e12): bf16 295, W4A16 int4 76, W8A8 fp8 295."""
    assert critical_batch_for(H100, "bf16") == pytest.approx(989.4e12 * 2 / 6.7e12, rel=1e-12)
    assert critical_batch_for(H100, "bf16") == pytest.approx(295.3, abs=0.05)
    assert critical_batch_for(H100, "int4") == pytest.approx(76.1, abs=0.05)
    assert critical_batch_for(H100, "fp8") == pytest.approx(295.4, abs=0.05)


def test_critical_batch_matches_scaling_books_tpu_figures() -> None:
    """scaling-book inference.md: on a TPU v5e, "int8 parameters ... computation in bf16, the
    critical batch size drops to 120 ... int8 activations and int8 params, it jumps back up to 240"."""
    tpu = Hardware(SPECS.gpu("tpu-v5e"))
    assert critical_batch_for(tpu, "int8") == pytest.approx(120, rel=EXACT)
    assert critical_batch_for(tpu, "int8-sq") == pytest.approx(240, rel=EXACT)


def test_w4a4_keeps_the_critical_batch_on_blackwell() -> None:
    assert critical_batch_for(B200, "nvfp4") == pytest.approx(9e15 * 0.5625 / (2 * 7.7e12), rel=1e-12)
    assert critical_batch_for(B200, "nvfp4") > critical_batch_for(B200, "bf16")
    assert critical_batch_for(H100, "nvfp4") < critical_batch_for(H100, "bf16") / 3


def test_critical_batch_does_not_depend_on_the_gpu_count() -> None:
    eight = dataclasses.replace(H100, count=8)
    assert critical_batch_for(eight, "int4") == pytest.approx(critical_batch_for(H100, "int4"), rel=1e-12)


@pytest.mark.parametrize(
    ("args", "field"),
    [((0, 2, 1e12), "peak_flops_per_s"), ((1e15, 0, 1e12), "bytes_per_weight"), ((1e15, 2, -1), "bandwidth")],
)
def test_critical_batch_refuses_non_positive_input(args: tuple[float, float, float], field: str) -> None:
    with pytest.raises(SpecError, match=f"field '{field}"):
        critical_batch(*args)


# -- The KV slope and the break-even context -----------------------------------------------------


def test_kv_slope_is_kv_bytes_over_bandwidth() -> None:
    """Llama 3.1 8B on an H100: 131,072 B / 3.35e12 B/s = 3.913e-8 s per token (the research
    brief's 3.913e-5 ms); fp8 KV halves it."""
    bf16 = kv_slope_s_per_token(H100, Workload(LLAMA_8B, context=4096))
    fp8 = kv_slope_s_per_token(H100, Workload(LLAMA_8B, kv_precision="fp8", context=4096))
    assert bf16 == pytest.approx(131072 / 3.35e12, rel=1e-12)
    assert fp8 == pytest.approx(bf16 / 2, rel=1e-12)


def test_kv_slope_past_a_window_counts_only_global_layers() -> None:
    gemma = SPECS.model("gemma-2-9b")
    inside = kv_slope_s_per_token(H100, Workload(gemma, context=1000))
    past = kv_slope_s_per_token(H100, Workload(gemma, context=100_000))
    assert past == pytest.approx(inside / 2, rel=1e-9)  # half its layers are local


def test_kv_slope_of_a_compute_bound_step_is_attention_math() -> None:
    workload = Workload(LLAMA_8B, batch=4096, context=16)
    assert decode_pass(H100, workload, 4096).bound == "compute"
    expected = (arch.decode_flops_per_token(LLAMA_8B, 17) - arch.decode_flops_per_token(LLAMA_8B, 16)) / 989.4e12
    assert kv_slope_s_per_token(H100, workload) == pytest.approx(expected, rel=1e-9)


def test_break_even_from_vllms_fits() -> None:
    """vLLM fp8-KV blog (Llama 3.1 8B, H100): 6.44 ms + 4.37e-5 ms/token against 6.58 ms + 2.37e-5."""
    assert kv_break_even_context(6.44e-3, 4.37e-8, 6.58e-3, 2.37e-8) == pytest.approx(7000, rel=1e-9)


def test_break_even_from_the_specs_slopes_and_vllms_intercepts() -> None:
    """The slopes from the spec sheet (KV / W) and vLLM's measured intercept gap give 7,154
    tokens, within 2% of the 7,010 vLLM fitted."""
    bf16 = kv_slope_s_per_token(H100, Workload(LLAMA_8B, context=1))
    fp8 = kv_slope_s_per_token(H100, Workload(LLAMA_8B, kv_precision="fp8", context=1))
    assert kv_break_even_context(6.44e-3, bf16, 6.58e-3, fp8) == pytest.approx(7010, rel=0.025)


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ((1.0, 2.0, 0.9, 1.0), 0.0),
        ((1.0, 2.0, 1.0, 2.0), 0.0),
        ((1.0, 1.0, 2.0, 1.0), None),
        ((1.0, 1.0, 0.5, 2.0), None),
    ],
)
def test_break_even_edges(lines: tuple[float, float, float, float], expected: float | None) -> None:
    assert kv_break_even_context(*lines) == expected


# -- Capacity ------------------------------------------------------------------------------------


def test_smaller_weights_fit_more_users() -> None:
    model = SPECS.model("llama-3.1-70b")
    users = users_by_format(dataclasses.replace(H100, count=2), Workload(model, context=8192), ["bf16", "fp8", "int4"])
    assert users["bf16"] < users["fp8"] < users["int4"]
    # Each GPU's driver-reported memory less its workspace; the cache gets the usable
    # fraction of what the weights leave (performance.memory_use).
    room = 2 * (H100.gpu.addressable_bytes - H100.workspace_bytes)
    for precision, count in users.items():
        pool = H100.usable_fraction * (room - arch.weight_bytes(model, precision))
        assert count == int(pool // arch.kv_cache_bytes(model, 8192))


# -- Dequantization ----------------------------------------------------------------------------


def test_no_overhead_and_no_switch_is_the_ceiling() -> None:
    for prompt in (1, 100, 5000):
        workload = Workload(LLAMA_8B, "int4-awq", prompt=prompt, batch=8, context=300)
        assert (
            dequantized_pass(H100, workload, prefill=True, overhead=0).seconds == prefill_pass(H100, workload).seconds
        )
        assert (
            dequantized_pass(H100, workload, prefill=False, overhead=0).seconds
            == decode_pass(H100, workload, 8).seconds
        )


def test_the_switch_widens_then_runs_a_sixteen_bit_pass() -> None:
    workload = Workload(LLAMA_8B, "int4-awq", prompt=2048)
    switched = dequantized_pass(H100, workload, prefill=True, overhead=1.0, switch_tokens=1024)
    assert switched.path == "dequantize-then-gemm"
    # The head is already 16-bit in an AWQ checkpoint: only the blocks are widened.
    widen = (arch.multiplied_parameters(LLAMA_8B) - 128_256 * 4096) * (4.15625 / 8 + 2) / 3.35e12
    assert switched.dequantize_s == pytest.approx(widen, rel=1e-12)
    sixteen = prefill_pass(H100, Workload(LLAMA_8B, "bf16", prompt=2048))
    # The widened pass reads every multiplied weight at 2 bytes (the embedding rows it copies stay narrow).
    assert switched.gemm.flops == sixteen.flops and switched.gemm.seconds == pytest.approx(sixteen.seconds, rel=1e-12)
    assert switched.seconds == pytest.approx(sixteen.seconds + widen, rel=1e-12)
    below = dequantized_pass(
        H100, dataclasses.replace(workload, prompt=1023), prefill=True, overhead=1.0, switch_tokens=1024
    )
    assert below.path == "fused"


def test_overhead_is_charged_per_quantized_weight_per_token_tile() -> None:
    """Issue 35 (H2): a tiled GEMM widens each quantized weight once per 16-token tile (vLLM's
    awq_gemm runs one block per 16 activation rows), so the charge is δ * 2 * N_q * 16 * ceil(T/16):
    at 4,096 tokens the per-FLOP charge on the quantized layers (not the 16-bit head, not
    attention), and a 1-token decode pays a whole tile, 16 times its own FLOPs' share."""
    head = 128_256 * 4096
    quantized = arch.multiplied_parameters(LLAMA_8B) - head
    workload = Workload(LLAMA_8B, "int4", prompt=4096)
    fused = dequantized_pass(H100, workload, prefill=True, overhead=0.5)
    plain = prefill_pass(H100, workload)
    assert fused.gemm.compute_s == pytest.approx((plain.flops + 0.5 * 2 * quantized * 4096) / 989.4e12, rel=1e-12)
    one = dequantized_pass(H100, Workload(LLAMA_8B, "int4"), prefill=False, overhead=0.5)
    step = decode_pass(H100, Workload(LLAMA_8B, "int4"), 1)
    assert one.gemm.compute_s == pytest.approx((step.flops + 0.5 * 2 * quantized * 16) / 989.4e12, rel=1e-12)
    seventeen = dequantized_pass(H100, Workload(LLAMA_8B, "int4", batch=17), prefill=False, overhead=0.5)
    flops17 = decode_pass(H100, Workload(LLAMA_8B, "int4"), 17).flops
    assert seventeen.gemm.compute_s == pytest.approx((flops17 + 0.5 * 2 * quantized * 32) / 989.4e12, rel=1e-12)


def test_a_short_prompt_reads_fewer_bytes_and_prefills_faster() -> None:
    """Below the 16-bit critical batch a prefill is read-bound like a decode step, so int4 helps."""
    short = Workload(LLAMA_8B, "int4", prompt=16)
    assert (
        prefill_pass(H100, short).seconds
        < prefill_pass(H100, dataclasses.replace(short, weight_precision="bf16")).seconds / 3
    )


@settings(max_examples=150, deadline=None)
@given(
    gpus(),
    models(moe=False),
    st.sampled_from(["int4", "int4-awq", "int4-g32", "int8"]),
    st.integers(1, 65536),
    st.floats(0, 3),
    st.one_of(st.none(), st.integers(1, 4096)),
)
def test_weight_only_prefill_never_beats_a_compute_bound_sixteen_bit_prefill(
    gpu, model, precision, prompt, overhead, switch
) -> None:
    """Issue 19: W4A16 prefill is never faster than 16-bit prefill. Exactly: never once the 16-bit
    prefill is compute-bound (prompts past the 16-bit critical batch), in the ceiling (δ = 0) and
    with any dequantization cost; shorter prompts are read-bound and do get faster."""
    hardware = Hardware(gpu)
    sixteen = prefill_pass(hardware, Workload(model, "bf16", prompt=prompt))
    if sixteen.bound != "compute":
        return
    quantized = Workload(model, precision, prompt=prompt)
    for cost, switch_tokens in ((0.0, None), (overhead, switch)):
        assert dequantized_pass(
            hardware, quantized, prefill=True, overhead=cost, switch_tokens=switch_tokens
        ).seconds >= (sixteen.seconds * (1 - 1e-12))


def test_where_w4a16_prefill_stops_being_faster() -> None:
    """On the ceiling: a little past the bf16 critical batch (295 on an H100; the prompt's cache
    writes keep the pass read-bound a little longer); with δ, sooner, about 295 / (1 + δ)."""
    workload = Workload(LLAMA_8B, "int4-awq")
    start = weight_only_prefill_slower_from(H100, workload)
    assert start == 317
    expensive = dataclasses.replace(H100, costs=CostModel(dequant_overhead=2.0, dequant_switch_tokens=256))
    sooner = weight_only_prefill_slower_from(expensive, workload)
    assert sooner is not None and 295 / 3 * 0.9 < sooner < 295 / 3 * 1.2
    # W8A8 fp8 halves the math too: its prefill is faster at every length tried.
    assert weight_only_prefill_slower_from(H100, Workload(LLAMA_8B, "fp8"), limit=1 << 16) is None


@settings(max_examples=60, deadline=None)
@given(
    gpus(),
    models(moe=False),
    st.sampled_from(["int4", "int4-awq", "int4-g32", "int8"]),
    st.floats(0, 3),
    st.one_of(st.none(), st.integers(1, 4096)),
    st.integers(0, 20000),
)
def test_from_where_it_stops_w4a16_prefill_is_never_faster_again(gpu, model, precision, overhead, switch, extra):
    """``weight_only_prefill_slower_from``'s answer is exact: one token shorter the format is
    faster, and at that length and any longer one it is not, with or without a dequantization cost."""
    for costs in (CostModel(), CostModel(dequant_overhead=overhead, dequant_switch_tokens=switch)):
        hardware = Hardware(gpu, costs=costs)
        workload = Workload(model, precision)
        start = weight_only_prefill_slower_from(hardware, workload)
        assert start is not None

        def seconds(weights: str, prompt: int, hardware: Hardware = hardware) -> float:
            return prefill_pass(hardware, Workload(model, weights, prompt=prompt)).seconds

        if start > 1:
            assert seconds(precision, start - 1) < seconds("bf16", start - 1)
        for prompt in (start, start + extra):
            assert seconds(precision, prompt) >= seconds("bf16", prompt) * (1 - 1e-12)


@pytest.mark.parametrize(
    ("overhead", "switch"), [(-0.1, None), (float("nan"), None), (True, None), (0.5, 0), (0.5, 1.5)]
)
def test_bad_dequantization_parameters_are_one_line(overhead: float, switch: int | None) -> None:
    with pytest.raises(SpecError) as raised:
        dequantized_pass(
            H100, Workload(LLAMA_8B, "int4", prompt=10), prefill=True, overhead=overhead, switch_tokens=switch
        )
    assert "\n" not in str(raised.value)


# -- Where a format stops helping ----------------------------------------------------------------


def test_weight_only_int4_stops_helping_where_bf16_turns_compute_bound() -> None:
    workload = Workload(LLAMA_8B, "int4")
    batch = stops_helping_batch(H100, workload)
    assert batch is not None and 290 < batch < 300
    base = Workload(LLAMA_8B)
    assert decode_pass(H100, workload, batch).seconds >= decode_pass(H100, base, batch).seconds
    assert decode_pass(H100, workload, batch - 1).seconds < decode_pass(H100, base, batch - 1).seconds


def test_w8a8_and_w4a4_never_stop_helping_on_their_own_math() -> None:
    assert stops_helping_batch(H100, Workload(LLAMA_8B, "fp8")) is None
    assert stops_helping_batch(B200, Workload(LLAMA_8B, "nvfp4")) is None


def test_fp8_kv_alone_keeps_helping_at_long_context() -> None:
    assert stops_helping_batch(H100, Workload(LLAMA_8B, kv_precision="fp8", context=8192)) is None


# -- One answer per format -----------------------------------------------------------------------


def test_compare_formats_agrees_with_the_parts() -> None:
    workload = Workload(LLAMA_8B, batch=16, context=2048, prompt=1000)
    answers = {answer.weight_precision: answer for answer in compare_formats(H100, workload, ["bf16", "fp8", "int4"])}
    assert answers["fp8"].math.precision == "fp8"
    assert answers["int4"].critical_batch == critical_batch_for(H100, "int4")
    assert answers["bf16"].decode_step_s == decode_pass(H100, workload, 16).seconds
    assert answers["int4"].users_that_fit > answers["fp8"].users_that_fit > answers["bf16"].users_that_fit
    assert answers["fp8"].prefill_s < answers["bf16"].prefill_s / 1.9


# -- The new specs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "published"),
    [
        # Hugging Face checkpoints' parameter counts (transformers' num_parameters on the
        # meta-llama safetensors): exact.
        ("llama-2-7b", 6_738_415_616),
        ("llama-2-70b", 68_976_648_192),
        ("llama-3.2-1b", 1_235_814_400),
    ],
)
def test_new_models_match_their_published_parameter_counts(model_id: str, published: int) -> None:
    assert total_parameters(SPECS.model(model_id)) == published


def test_new_gpus() -> None:
    """A10 datasheet and the Ada whitepaper's RTX 4090 appendix (dense figures)."""
    a10, rtx = SPECS.gpu("a10"), SPECS.gpu("rtx-4090")
    assert (a10.memory_bytes, a10.bandwidth_bytes_per_s, a10.dense_flops_per_s["bf16"]) == (24e9, 600e9, 125e12)
    assert "fp8" not in a10.dense_flops_per_s  # Ampere
    peaks = rtx.dense_flops_per_s
    assert rtx.bandwidth_bytes_per_s == 1008e9
    # GeForce accumulates in fp32 at half rate: bf16 (fp32 accumulate only) 165.2, fp16 with
    # fp16 accumulate 330.3 (TinyChat 2.0's W4A16 GEMMs), fp8 with fp32 accumulate 330.3.
    assert (peaks["bf16"], peaks["fp16"], peaks["fp8"], peaks["int8"]) == (165.2e12, 330.3e12, 330.3e12, 660.6e12)
    # Marlin README: near-ideal 3.87x "up to batchsizes around 16-32" on an A10; the
    # ceiling's W4A16 critical batch there, 125e12 * 0.515625 / 1.2e12 = 54, is above that.
    assert critical_batch_for(Hardware(a10), "int4") == pytest.approx(53.7, abs=0.05)


# -- Why measured gains are about half -----------------------------------------------------------


def test_an_awq_head_at_sixteen_bits_lowers_the_ceiling() -> None:
    """llm-awq quantizes the decoder blocks only: Llama 3.1 8B's 525M-weight head is read at 16 bits
    by every decode step, in the package's one weight-read rule (``arch.weights_read_bytes``)."""
    workload = Workload(LLAMA_8B, "int4-awq", context=4)
    step = decode_pass(A100, workload, 1)
    head = 128_256 * 4096
    all_narrow = arch.parameters_read(LLAMA_8B, 1) * 4.15625 / 8
    assert step.bytes_moved - all_narrow - 4 * 131_072 == pytest.approx((head + 4096) * (2 - 4.15625 / 8), rel=1e-9)
    bf16 = decode_pass(A100, Workload(LLAMA_8B, "bf16", context=4), 1)
    assert bf16.seconds / step.seconds == pytest.approx(3.21, abs=0.005)


def test_gpt_fasts_three_widths_lie_on_one_fixed_cost_line() -> None:
    """gpt-fast README @32971d3 (A100-80GB at 330 W, batch 1, 5-token prompt): Llama-2-7B at
    104.9, 155.58 and 196.80 tokens/s in bf16, int8 and int4 g32. One fixed time per step and one
    bandwidth efficiency reproduce all three within 1.5%."""
    model = SPECS.model("llama-2-7b")
    steps = [
        (decode_pass(A100, Workload(model, precision, context=5), 1).seconds, 1 / rate)
        for precision, rate in (("bf16", 104.9), ("int8", 155.58), ("int4-g32", 196.80))
    ]
    fixed, efficiency = fixed_cost_fit(steps)
    assert fixed == pytest.approx(3.13e-3, abs=0.01e-3)
    assert efficiency == pytest.approx(1.0, abs=0.02)
    for ceiling, measured in steps:
        assert fixed + ceiling / efficiency == pytest.approx(measured, rel=0.015)


def test_two_steps_fit_exactly() -> None:
    fixed, efficiency = fixed_cost_fit([(2.0, 5.0), (1.0, 3.0)])
    assert (fixed, efficiency) == (1.0, 0.5)


@pytest.mark.parametrize("steps", [[], [(1.0, 2.0)], [(1.0, 2.0), (1.0, 3.0)], [(2.0, 1.0), (1.0, 3.0)]])
def test_a_fit_needs_two_widths_in_order(steps: list[tuple[float, float]]) -> None:
    with pytest.raises(SpecError, match="field 'steps'"):
        fixed_cost_fit(steps)


# -- The estimate's JSON: critical batch and KV slope ----------------------------------------------


@pytest.mark.parametrize(
    ("gpu", "precision", "math"),
    [
        ("h100-sxm", "bf16", "bf16"),
        ("h100-sxm", "int4-awq", "bf16"),
        ("h100-sxm", "fp8", "fp8"),
        ("a100-80gb", "fp8", "bf16"),
        ("b200", "nvfp4", "fp4"),
    ],
)
def test_the_estimate_json_gives_the_critical_batch_of_its_format_and_math(gpu: str, precision: str, math: str) -> None:
    """``critical_batch`` = F x bytes per weight / (2W), F at the math the format runs on that GPU;
    the GPU count cancels out."""
    from roofline import estimate, load_specs
    from roofline.precisions import bytes_per_value

    spec = load_specs().gpu(gpu)
    expected = spec.peak_flops_per_s(math) * bytes_per_value(precision) / (2 * spec.bandwidth_bytes_per_s)
    for count in (1, 2):
        found = estimate(gpu, "llama-3.1-8b", precision=precision, gpus=count).to_dict()["critical_batch"]
        assert found == pytest.approx(expected, rel=1e-12)


def test_the_estimate_json_gives_the_kv_slope_a_cached_token_adds() -> None:
    """``kv_slope_s_per_token`` = KV bytes per token / bandwidth in a memory-bound step; fp8 halves it."""
    from roofline import estimate, load_specs

    h100 = load_specs().gpu("h100-sxm")
    bf16 = estimate("h100-sxm", "llama-3.1-8b", context=4096).to_dict()
    fp8 = estimate("h100-sxm", "llama-3.1-8b", kv_precision="fp8", context=4096).to_dict()
    assert bf16["kv_slope_s_per_token"] == pytest.approx(bf16["kv_bytes_per_token"] / h100.bandwidth_bytes_per_s)
    assert fp8["kv_slope_s_per_token"] == pytest.approx(bf16["kv_slope_s_per_token"] / 2)
