"""Chapter 4, "Quantization": every number its prose quotes, its tables and its five figures.

The page is ``index.md`` beside this module; its Run cell shows
``programs/quantization_formats.py``, its calculator is ``calculators/which_format.py``
and its chart builders are in ``charts.py``. Every number comes from
``roofline.quantization`` and the ceilings beneath it, from the calibrated expected costs
(``roofline.calibration``), or from a published figure (``measurements.toml`` and
``published.py`` beside this module, each with its source); the chapter's own choices
(GPUs, models, contexts, prompts) are the constants below.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from roofline import Hardware, Workload, evaluate
from roofline import architecture as arch
from roofline import quantization as q
from roofline.calibration import expected_costs, load_calibration
from roofline.measured import Comparison, compare_all, load_measurements
from roofline.performance import DEQUANT_TILE_TOKENS, decode_pass, decode_step, memory_use, prefill_pass
from roofline.precisions import number_format
from roofline.sweep import Table
from sitegen import escape
from sitegen.context import Context
from sitegen.page import PageContent
from sitegen.values import ms, whole

from . import charts, kernels, published

HERE = Path(__file__).resolve().parent
MEASUREMENTS = HERE / "measurements.toml"

GPU = "h100-sxm"
AMPERE = "a100-80gb"
BLACKWELL = "b200"
GEFORCE = "rtx-4090"
SMALL_MODEL = "llama-3.1-8b"
LARGE_MODEL = "llama-3.1-70b"
#: The formats the chapter's table lists, in the order it explains them.
TABLE_FORMATS = ("bf16", "int8", "int4", "int4-awq", "int4-g32", "fp8", "fp8-block", "int8-sq", "nvfp4", "mxfp4")
#: Prefill prompt in the worked example, and the self-check's longer one.
PREFILL_PROMPT = 2000
QUIZ_PROMPT = 4000
#: Capacity: context per user, and the formats compared.
CAP_CONTEXT = 8192
CAP_FORMATS = ("bf16", "fp8", "int4-awq")
#: Context of every user in the speedup-by-batch figure and the format matrix.
BATCH_CONTEXT = 256
#: The matrix: past this batch a format that still helps is shown as "keeps helping".
MATRIX_LIMIT = 4096
MATRIX_GPUS = ("a10", AMPERE, GEFORCE, GPU, BLACKWELL)
#: (weights, KV cache) pairs in the matrix, each against bf16 weights and a bf16 cache.
MATRIX_FORMATS = (
    ("int8", "bf16"),
    ("int4-awq", "bf16"),
    ("fp8", "bf16"),
    ("fp8", "fp8"),
    ("int8-sq", "bf16"),
    ("nvfp4", "bf16"),
    ("nvfp4", "fp8"),
)
#: Prompts of the prefill figure: 16 to 8,192 tokens.
PREFILL_PROMPTS = tuple(2**power for power in range(4, 14))
#: A prompt short enough to be read-bound on every GPU: the one int4 speeds up.
SHORT_PROMPT = 16


def prefill_rule(specs, gpu_id: str, model, calibration) -> tuple[float, int | None, int | None]:
    """For one GPU: the bf16 critical batch, and the shortest prompt from which W4A16 (int4-awq)
    prefills no faster than bf16, on the ceiling and at the expected costs of the legacy
    ``awq_gemm`` kernel, which were measured on the A100 only (``charts.NOT_MEASURED`` elsewhere)."""
    hardware = Hardware(specs.gpu(gpu_id))
    workload = Workload(model, "int4-awq")
    expected: int | None = charts.NOT_MEASURED
    if calibration.dequant_measured_on(gpu_id):
        expected = q.weight_only_prefill_slower_from(replace(hardware, costs=calibration.cost_model(gpu_id)), workload)
    return (
        q.critical_batch_for(hardware, "bf16"),
        q.weight_only_prefill_slower_from(hardware, workload),
        expected,
    )


def published_comparisons(ctx: Context) -> list[Comparison]:
    """The chapter's published runs, each with its ceiling (``roofline.measured``)."""
    return compare_all(load_measurements(MEASUREMENTS, ctx.specs), ctx.specs)


def _format_table() -> str:
    rows = []
    for name in TABLE_FORMATS:
        fmt_ = number_format(name)
        rows.append(
            (
                name,
                fmt_.math,
                f"{fmt_.bits_per_weight:.4g}",
                fmt_.native_math or "16-bit",
            )
        )
    # Where each format's own math exists is the section "Formats by GPU generation"; a column of it
    # would make every row three lines tall on a phone.
    header = ("format", "math", "bits a weight", "multiplies in, where the GPU has it")
    return Table(header, tuple(rows)).markdown()


def request_seconds(hardware: Hardware, workload: Workload, output_tokens: int) -> float:
    """One batch of requests at the ceiling: ``batch`` prompts prefilled one after another, then
    ``output_tokens`` decode steps at the mean context (prompt + half the output)."""
    prefill = workload.batch * prefill_pass(hardware, workload).seconds
    mean = replace(workload, context=workload.prompt + output_tokens // 2)
    return prefill + output_tokens * decode_step(hardware, mean).seconds


def ratio_ceiling(specs, ratio: published.SpeedupRatio) -> float:
    """The speedup a published ratio could reach if both runs met their ceilings."""
    hardware = Hardware(specs.gpu(ratio.gpu))
    model = specs.model(ratio.model)

    def seconds(precision: str) -> float:
        workload = Workload(model, precision, batch=ratio.batch, prompt=ratio.input_tokens)
        return request_seconds(hardware, workload, ratio.output_tokens)

    return seconds(ratio.baseline) / seconds(ratio.weight_precision)


def _size(model_name: str) -> str:
    """A model's name as a narrow axis shows it: "Llama 3.1 8B" -> "8B" (its family is in the caption)."""
    return model_name.split()[-1]


def speedup_rows(ctx: Context) -> list[dict]:
    """Every published speedup beside its ceiling: pairs of single runs (same source, GPU and
    model, one 16-bit) and the published ratios."""
    comparisons = published_comparisons(ctx)
    rows = []
    by_key: dict[tuple[str, str, str], dict[str, Comparison]] = {}
    for comparison in comparisons:
        m = comparison.measurement
        by_key.setdefault((m.software_version, m.gpu, m.model), {})[m.weight_precision] = comparison
    for (_, gpu, model), runs in by_key.items():
        base_precision = next(p for p in runs if number_format(p).bits_per_weight == 16)
        base = runs[base_precision]
        for precision, run in runs.items():
            if precision == base_precision:
                continue
            faster = charts.faster_is_higher(base, run)
            workload = Workload(
                ctx.specs.model(model), precision, run.measurement.kv_precision, 1, run.measurement.mean_context
            )
            ceiling = q.decode_speedup_ceiling(Hardware(ctx.specs.gpu(gpu)), workload, baseline=base_precision)
            source = "TinyChat" if "TinyChat" in run.measurement.software else "gpt-fast"
            where = charts.short_gpu_name(ctx.specs.gpu(gpu).name)
            rows.append(
                {
                    "run": f"{source}, {_size(ctx.specs.model(model).name)}, {precision}, {where}, b=1",
                    "measured": faster,
                    "ceiling": ceiling,
                }
            )
    for ratio in published.TRT_SPEEDUPS:
        rows.append(
            {
                "run": f"{ratio.source_name}, {_size(ctx.specs.model(ratio.model).name)}, {ratio.weight_precision},"
                f" {charts.short_gpu_name(ctx.specs.gpu(ratio.gpu).name)}, b={ratio.batch}",
                "measured": ratio.speedup,
                "ceiling": ratio_ceiling(ctx.specs, ratio),
            }
        )
    return rows


def build(ctx: Context) -> PageContent:
    content = PageContent()
    specs = ctx.specs
    put = content.put
    h100, a100, b200, rtx = (Hardware(specs.gpu(gpu)) for gpu in (GPU, AMPERE, BLACKWELL, GEFORCE))
    small, large = specs.model(SMALL_MODEL), specs.model(LARGE_MODEL)
    put("gpu_name", h100.gpu.name)
    put("b200_name", b200.gpu.name)
    put("rtx_name", rtx.gpu.name)
    put("small_name", small.name)
    put("large_name", large.name)

    # Effective bits.
    for name in ("int4", "int4-awq", "int4-g32", "mxfp4", "nvfp4", "fp8-block"):
        put("bits_" + name.replace("-", "_"), f"{number_format(name).bits_per_weight:.6g}")
    put("bytes_int4", f"{number_format('int4-awq').bytes_per_weight:.4g}")
    content.table("format-table", _format_table())

    # Decode at batch 1: the ceiling, and the expected figure with fitted overheads.
    for name in ("int4", "int4-awq", "fp8", "nvfp4"):
        put("s1_" + name.replace("-", "_"), f"{q.weight_only_speedup_ceiling(name):.2f}")
    steps = {}
    for name in ("bf16", "fp8", "int4-awq"):
        workload = Workload(small, name)
        steps[name] = decode_pass(q.quantized_hardware(h100, name), workload, 1).seconds
        put(f"b1_{name.replace('-', '_')}_tps", whole(1 / steps[name]))
    calibration = load_calibration()
    expected = {name: evaluate(h100, Workload(small, name), calibration).expected for name in ("bf16", "int4-awq")}
    assert all(e is not None for e in expected.values())
    expected_bf16, expected_int4 = (expected[name].decode.seconds for name in ("bf16", "int4-awq"))  # type: ignore[union-attr]
    put("exp_b1_bf16_tps", whole(1 / expected_bf16))
    put("exp_b1_int4_tps", whole(1 / expected_int4))
    put("exp_s1_int4", f"{expected_bf16 / expected_int4:.2f}")
    put("exp_overhead_ms", ms(expected[("int4-awq")].decode.overhead_s))  # type: ignore[union-attr]
    # The whole step's batch-1 ceiling: the head and the embedding row stay at 16 bits (issue 35, M3).
    put("head_params", f"{arch.output_head_parameters(small) / 1e6:,.0f} million")
    for name in ("fp8", "int4-awq"):
        put(f"s1_step_{name.replace('-', '_')}", f"{steps['bf16'] / steps[name]:.2f}")

    # The published batch-1 runs against their ceilings.
    comparisons = {c.measurement.id: c for c in published_comparisons(ctx)}
    tc16, tc4 = comparisons["tinychat-llama-3-8b-a100-fp16"], comparisons["tinychat-llama-3-8b-a100-int4-awq"]
    put("tc_a100_fp16_ms", ms(tc16.measurement.value))
    put("tc_a100_int4_ms", ms(tc4.measurement.value))
    put("tc_a100_speedup", f"{tc16.measurement.value / tc4.measurement.value:.2f}")
    put("tc_a100_ceiling_speedup", f"{tc16.ceiling / tc4.ceiling:.2f}")
    put("tc_a100_gain_share", f"{tc16.measurement.value / tc4.measurement.value / (tc16.ceiling / tc4.ceiling):.0%}")
    put("tc_a100_fp16_share", f"{tc16.ratio:.0%}")
    put("tc_a100_int4_share", f"{tc4.ratio:.0%}")
    gf = [comparisons[f"gptfast-llama-2-7b-{p}-1gpu"] for p in ("bf16", "int8", "int4-g32")]
    t0, efficiency = q.fixed_cost_fit((1 / c.ceiling, 1 / c.measurement.value) for c in gf)
    put("gf_fixed_ms", ms(t0))
    put("gf_efficiency", f"{efficiency:.2f}")
    put("gf_int4_fixed_share", f"{t0 * gf[2].measurement.value:.0%}")
    put("gf_model", specs.model("llama-2-7b").name)
    # η > 1 is a fit artefact (issue 35, M7): fix η at the share of the bandwidth the expected costs
    # reach on every engine, take t0 from the bf16 run, and the int4 step it predicts falls short.
    eta = calibration.bandwidth_efficiency
    bf16_ceiling, bf16_measured = 1 / gf[0].ceiling, 1 / gf[0].measurement.value
    t0_fixed = bf16_measured - bf16_ceiling / eta
    int4_predicted = t0_fixed + (1 / gf[2].ceiling) / eta
    put("gf_eta_fixed", f"{eta:.2f}")
    put("gf_t0_fixed_ms", ms(t0_fixed))
    put("gf_int4_predicted_ms", ms(int4_predicted))
    put("gf_int4_measured_ms", ms(1 / gf[2].measurement.value))
    # The power cap the runs' own record states ("power-limited to 330 W (README)").
    put("gf_a100_power", gf[2].measurement.hardware.split("power-limited to ")[1].split(" (")[0])

    # The critical batch.
    put("peak_h100", f"{h100.gpu.peak_flops_per_s('bf16') / 1e12:,.1f}")
    put("bw_h100", f"{h100.gpu.bandwidth_bytes_per_s / 1e12:.2f}")
    put("peak_a100", f"{a100.gpu.peak_flops_per_s('bf16') / 1e12:,.0f}")
    put("bw_a100", f"{a100.gpu.bandwidth_bytes_per_s / 1e12:.3f}")
    for label, hardware in (("h100", h100), ("a100", a100), ("b200", b200)):
        for name in ("bf16", "int4-awq", "fp8", "nvfp4") if label != "b200" else ("bf16", "nvfp4"):
            put(f"cb_{label}_{name.replace('-', '_')}", whole(q.critical_batch_for(hardware, name)))
    put("batch_context", whole(BATCH_CONTEXT))
    stop = q.stops_helping_batch(h100, Workload(small, "int4-awq", context=BATCH_CONTEXT))
    put("stop_h100_int4", whole(stop) if stop else "never")
    at_stop = Workload(small, "int4-awq", batch=stop or 1, context=BATCH_CONTEXT)
    put("fp8_at_stop", f"{q.decode_speedup_ceiling(h100, replace(at_stop, weight_precision='fp8')):.2f}")
    put("nvfp4_h100_line", q.math_for(h100.gpu, "nvfp4").line)
    # The math follows the checkpoint's activations, not the format's name (issue 35, M6):
    # MXFP4 weights on a B200 at bf16, fp8 and fp4 math.
    for math in ("bf16", "fp8", "fp4"):
        scheme = replace(b200, compute_precision=math)
        put(f"cb_b200_mxfp4_{math}", whole(q.critical_batch_for(scheme, "mxfp4")))

    # Prefill: weight-only int4 against bf16 and fp8, on the ceiling and through each engine's switch.
    for name in ("bf16", "int4-awq", "fp8"):
        hardware = q.quantized_hardware(h100, name)
        key = name.replace("-", "_")
        put(f"prefill_{key}_ms", ms(prefill_pass(hardware, Workload(small, name, prompt=PREFILL_PROMPT)).seconds))
        put(f"q_prefill_{key}_ms", ms(prefill_pass(hardware, Workload(small, name, prompt=QUIZ_PROMPT)).seconds))
    # L3: the ceiling times attention at the fp8 peak too; over a bf16 cache vLLM runs attention in
    # bf16, so the same pass with attention's FLOPs at the bf16 peak is what fp8 gains if it does.
    for prompt, key in ((PREFILL_PROMPT, "prefill_fp8_att16_ms"), (QUIZ_PROMPT, "q_prefill_fp8_att16_ms")):
        work = Workload(small, "fp8", prompt=prompt)
        fp8_pass = prefill_pass(q.quantized_hardware(h100, "fp8"), work)
        attention = arch.prefill_attention_flops(small, prompt)
        slower = (fp8_pass.flops - attention) / h100.gpu.peak_flops_per_s(
            "fp8"
        ) + attention / h100.gpu.peak_flops_per_s("bf16")
        put(key, ms(max(fp8_pass.memory_s, slower)))
    put("prefill_prompt", whole(PREFILL_PROMPT))
    put("q_prompt", whole(QUIZ_PROMPT))
    for engine, (tokens, _) in published.SWITCH_TOKENS.items():
        put(f"switch_{engine.lower()}", whole(tokens))
    switch_tokens = published.SWITCH_TOKENS["vLLM"][0]
    widened = q.dequantized_pass(
        h100,
        Workload(small, "int4-awq", prompt=PREFILL_PROMPT),
        prefill=True,
        overhead=0.0,
        switch_tokens=switch_tokens,
    )
    put("widen_ms", ms(widened.dequantize_s))
    put("switch_prefill_ms", ms(widened.seconds))
    content.table("kernel-table", charts.kernel_table(kernels.load_paths()))
    short = SHORT_PROMPT
    put("short_prompt", whole(short))
    short_bf16 = prefill_pass(h100, Workload(small, "bf16", prompt=short)).seconds
    short_int4 = prefill_pass(q.quantized_hardware(h100, "int4-awq"), Workload(small, "int4-awq", prompt=short)).seconds
    put("short_prefill_gain", f"{short_bf16 / short_int4:.1f}")

    # The dequantization cost at the expected costs: δ, its fit and its check, and where the rule holds.
    assert calibration.dequant_switch_tokens == switch_tokens, "the expected costs switch where vLLM's source does"
    put("delta", f"{calibration.dequant_overhead:.2f}")
    dequant = calibration.provenance["dequant"]
    for split in ("fit", "check"):
        for label, pair in dequant[split].items():
            tokens = label.split("-")[0]
            put(f"pr2566_{split}_{tokens}_measured", f"{pair['measured_ratio']:.2f}")
            put(f"pr2566_{split}_{tokens}_expected", f"{pair['expected_ratio']:.2f}")
    pairs = [pair for split in ("fit", "check") for pair in dequant[split].values()]
    for path in ("fused", "widened"):
        shares = [pair[f"{path}_measured_over_expected"] for pair in pairs]
        put(f"pr2566_{path}_share_low", f"{min(shares):.2f}")
        put(f"pr2566_{path}_share_high", f"{max(shares):.2f}")
    # δ describes the legacy awq_gemm on the A100 it was measured on: the worked example runs there.
    assert calibration.dequant_measured_on(a100.gpu.id) and not calibration.dequant_measured_on(h100.gpu.id)
    a100_expected = replace(a100, costs=calibration.cost_model(a100.gpu.id))
    int4_work = Workload(small, "int4-awq", prompt=PREFILL_PROMPT)
    exp_bf16 = prefill_pass(a100_expected, Workload(small, "bf16", prompt=PREFILL_PROMPT)).seconds
    exp_int4 = prefill_pass(a100_expected, int4_work).seconds
    put("a100_name", a100.gpu.name)
    put("exp_prefill_bf16_ms", ms(exp_bf16))
    put("exp_prefill_int4_ms", ms(exp_int4))
    # The band of this GPU and math (calibration.expected_costs): the wider one were either unfitted.
    low, high = expected_costs(a100, int4_work, calibration).calibration.band["ttft_mean_s"]
    put("exp_prefill_int4_low_ms", ms(exp_int4 * low))
    put("exp_prefill_int4_high_ms", ms(exp_int4 * high))
    exp_short16 = prefill_pass(a100_expected, Workload(small, "bf16", prompt=short)).seconds
    exp_short4 = prefill_pass(a100_expected, Workload(small, "int4-awq", prompt=short)).seconds
    put("exp_short_prefill_gain", f"{exp_short16 / exp_short4:.1f}")
    put("dequant_tile", whole(DEQUANT_TILE_TOKENS))
    # On the H100 the expected costs charge no δ (Marlin/Machete, unmeasured): int4 and bf16 meet.
    h100_expected = replace(h100, costs=calibration.cost_model(h100.gpu.id))
    h100_bf16 = prefill_pass(h100_expected, Workload(small, "bf16", prompt=PREFILL_PROMPT)).seconds
    h100_int4 = prefill_pass(h100_expected, int4_work).seconds
    put("exp_h100_prefill_bf16_ms", ms(h100_bf16))
    put("exp_h100_prefill_int4_ms", ms(h100_int4))
    rule = {gpu_id: prefill_rule(specs, gpu_id, small, calibration) for gpu_id in MATRIX_GPUS}
    put("rule_ceiling_h100", whole(rule[GPU][1] or 0))
    put("rule_ceiling_a100", whole(rule[AMPERE][1] or 0))
    put("rule_expected_a100", whole(rule[AMPERE][2] or 0))
    content.table("prefill-rule", charts.prefill_rule_table(specs, rule))

    # The KV slope and the break-even context.
    slope16 = q.kv_slope_s_per_token(h100, Workload(small, context=1))
    slope8 = q.kv_slope_s_per_token(h100, Workload(small, kv_precision="fp8", context=1))
    vllm16, vllm8 = published.VLLM_LINES
    put("kv_bytes_bf16", whole(arch.kv_cache_bytes_per_token(small, "bf16")))
    put("slope_bf16_ns", f"{slope16 * 1e9:.1f}")
    put("slope_fp8_ns", f"{slope8 * 1e9:.1f}")
    put("vllm_slope_bf16_ns", f"{vllm16.slope_s_per_token * 1e9:.1f}")
    put("vllm_slope_fp8_ns", f"{vllm8.slope_s_per_token * 1e9:.1f}")
    put("vllm_slope_share", f"{slope16 / vllm16.slope_s_per_token:.0%}")
    put("vllm_intercept_bf16_ms", ms(vllm16.intercept_s))
    put("vllm_intercept_fp8_ms", ms(vllm8.intercept_s))
    gap = vllm8.intercept_s - vllm16.intercept_s
    put("vllm_intercept_gap_ms", f"{gap * 1e3:.2f}")
    model_even = q.kv_break_even_context(vllm16.intercept_s, slope16, vllm8.intercept_s, slope8)
    vllm_even = q.kv_break_even_context(
        vllm16.intercept_s, vllm16.slope_s_per_token, vllm8.intercept_s, vllm8.slope_s_per_token
    )
    assert model_even is not None and vllm_even is not None
    put("breakeven_model", whole(model_even))
    put("breakeven_model_round", whole(round(model_even, -3)))
    put("breakeven_fits", whole(vllm_even))
    put("breakeven_vllm", whole(published.VLLM_BREAK_EVEN))
    load = published.VLLM_LOAD_TPS
    put("vllm_load_gain", f"{load['fp8'] / load['bf16'] - 1:.0%}")
    # Was that run capped by memory? Its 8 users' longest contexts against the bf16 pool (issue 35, M1).
    users, context = published.VLLM_LOAD_SHAPE
    held = users * context * arch.kv_cache_bytes_per_token(small, "bf16")
    pool = memory_use(h100, Workload(small, context=context)).pool_bytes
    put("vllm_load_users", whole(users))
    put("vllm_load_context", whole(context))
    put("vllm_load_kv_gb", f"{held / 1e9:.0f}")
    put("vllm_load_pool_gb", f"{pool / 1e9:.1f}")
    put("vllm_load_pool_share", f"{held / pool:.0%}")
    low_batch, high_batch = published.TRT_FP8_KV_BATCH
    put("trt_kv_batch", f"{low_batch}–{high_batch}")
    put("trt_kv_gain", f"{published.TRT_FP8_KV_GAIN:g}")
    for label, score in published.VLLM_NIAH_128K.items():
        put("niah_" + label.replace(" ", "_"), f"{score:.0%}")
    itl16, itl8 = published.VLLM_LOAD_ITL_S
    put("vllm_load_itl_bf16_ms", f"{itl16 * 1e3:.2f}")
    put("vllm_load_itl_fp8_ms", f"{itl8 * 1e3:.2f}")
    put("vllm_load_itl_gain", f"{itl16 / itl8 - 1:.0%}")

    # Capacity.
    users = q.users_by_format(h100, Workload(large, context=CAP_CONTEXT), CAP_FORMATS)
    put("cap_context", whole(CAP_CONTEXT))
    put("cap_kv_precision", Workload(large, context=CAP_CONTEXT).kv_precision)  # stated with the counts
    for name, count in users.items():
        put(f"cap_h100_{name.replace('-', '_')}", whole(count or 0))
    rtx_users = q.users_by_format(rtx, Workload(small, context=CAP_CONTEXT), ("bf16", "int4-awq"))
    put("cap_rtx_bf16", whole(rtx_users["bf16"] or 0))
    put("cap_rtx_int4_awq", whole(rtx_users["int4-awq"] or 0))
    content.table("capacity-by-format", charts.capacity_table(h100, Workload(large, context=CAP_CONTEXT), CAP_FORMATS))

    # Formats by GPU generation.
    put("a100_fp8_line", q.math_for(a100.gpu, "fp8").line)
    put("rtx_fp8_line", q.math_for(rtx.gpu, "fp8").line)
    put("b200_nvfp4_line", q.math_for(b200.gpu, "nvfp4").line)

    # Measured against the model.
    rows = speedup_rows(ctx)
    put("published_count", str(len(rows)))
    shares = [row["measured"] / row["ceiling"] for row in rows]
    put("published_share_low", f"{min(shares):.0%}")
    put("published_share_high", f"{max(shares):.0%}")
    trt = [row for row in rows if row["run"].startswith("TensorRT-LLM")]
    put("trt_fp8_b1", f"{trt[0]['measured']:.2f}")
    put("trt_fp8_b1_ceiling", f"{trt[0]['ceiling']:.2f}")
    put("trt_fp8_b8", f"{trt[1]['measured']:.2f}")
    put("trt_fp8_b8_ceiling", f"{trt[1]['ceiling']:.2f}")
    content.table("published-runs", charts.published_table(specs, list(comparisons.values())))

    # The figures.
    content.figure(
        "format-matrix",
        charts.format_matrix(specs, small, MATRIX_GPUS, MATRIX_FORMATS, BATCH_CONTEXT, MATRIX_LIMIT),
        f"Where each format stops helping: the smallest batch at which {escape.text(small.name)} decodes no faster"
        f" than with bf16 weights and a bf16 cache, {BATCH_CONTEXT} tokens of context per user, on the ceilings."
        " Blue cells run the format's own math; orange ones run it weight-only, widened to 16 bits.",
    )
    content.figure(
        "batch-speedup",
        charts.speedup_by_batch(
            specs, small, ((GPU, "int4-awq"), (GPU, "fp8"), (GPU, "nvfp4"), (BLACKWELL, "nvfp4")), BATCH_CONTEXT
        ),
        "Decode speedup over bf16 as more users share each step (ceilings, log scale). Weight-only formats lose"
        " their lead once bf16 math catches up; W8A8 and W4A4, which multiply at their own peak, keep it.",
    )
    content.figure(
        "prefill-dequant",
        charts.prefill_ratio(a100, small, PREFILL_PROMPTS, calibration),
        f"Prefill time of {escape.text(small.name)} on one {escape.text(a100.gpu.name)} relative to bf16, by prompt"
        " length. On the ceilings weight-only int4 only helps prompts shorter than the bf16 critical batch."
        " At the expected costs of vLLM's legacy awq_gemm, measured on this GPU,"
        f" the fused kernel's dequantization (δ = {calibration.dequant_overhead:.2f}) makes int4 slower from"
        f" {whole(rule[AMPERE][2] or 0)} tokens, and from {switch_tokens} the engine widens the weights first"
        " and pays that on top of a bf16 pass. The A100 has no fp8 math, so fp8 runs weight-only here.",
    )
    content.figure(
        "kv-slope",
        charts.kv_slope(h100, small, slope16, slope8, published.VLLM_LINES),
        f"One user's inter-token latency against context, {escape.text(small.name)}, {escape.text(h100.gpu.name)}:"
        " the ceiling's lines and vLLM's fitted ones. An fp8 cache halves the slope; its small fixed cost is"
        " repaid past the break-even context.",
    )
    content.figure(
        "speedup-vs-ceiling",
        charts.speedup_vs_ceiling(rows),
        "Every published speedup in this chapter (bars) beside the speedup the two runs' ceilings allow (ticks)."
        " No run reaches its ceiling's speedup; TinyChat's and gpt-fast's fall furthest short, because fixed costs"
        " per step do not shrink with the weights.",
    )

    # The self-check.
    put("s1_int4_awq_q", f"{q.weight_only_speedup_ceiling('int4-awq'):.3f}")
    put("q_a100_fp8_line", q.math_for(a100.gpu, "fp8").line)
    return content
