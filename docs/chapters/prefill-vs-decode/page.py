"""Chapter 1, "Prefill vs Decode": every number its prose quotes, its H100 table and its four figures.

The page is ``index.md`` beside this module; its Run cell shows
``programs/h100_decode_prefill.py``, its calculator is ``calculators/decode_speed.py``
and its chart builders are in ``charts.py``. Everything here is computed by the
``roofline`` package from the spec files; the chapter's own choices (which
GPU, which models, which precisions and prompt) are the constants below.
"""

from __future__ import annotations

from collections.abc import Callable

from roofline import (
    Estimate,
    Hardware,
    Workload,
    crossover_batch,
    decode_step,
    estimate,
    kv_cache_bytes_per_token,
    memory_use,
    rule_decode_tokens_per_s_per_user,
    simple_crossover_batch,
    simple_prefill_seconds,
    total_parameters,
)
from roofline import formatting as fmt
from roofline.architecture import active_parameters, lookup_only_parameters, prefill_attention_flops, prefill_flops
from roofline.kvcache import no_crossover_from
from roofline.measured import Comparison, compare_all, load_measurements, ratio_range_by_kind, well_tuned_decode_range
from roofline.memorykinds import DRIVER, NAMEPLATE, USABLE, labelled, memory_of
from roofline.precisions import number_format, value_bytes
from roofline.quantization import critical_batch_for
from roofline.rule import rule_weight_bytes
from roofline.sweep import decode_prefill_rows, decode_prefill_table, gpus_to_fit
from sitegen import escape
from sitegen.context import Context
from sitegen.page import PageContent
from sitegen.values import ms, percent, tera, whole

from . import charts
from .charts import Focus

#: The GPU the chapter works through, and the two models its prose follows.
GPU = "h100-sxm"
SMALL_MODEL = "llama-3.1-8b"
LARGE_MODEL = "llama-3.1-70b"
#: The weight precisions the chapter compares (16, 8 and 4 bits) and its example prompt.
PRECISIONS = ("bf16", "fp8", "int4")
PROMPT_TOKENS = 2000
#: A second GPU for the self-check ("what changes with more bandwidth?").
QUIZ_GPU = "h200"
#: The mixture of experts and the latent-attention model the second table explains.
MOE_MODEL = "mixtral-8x7b"
MLA_MODEL = "deepseek-v3"
#: Measurements (roofline/data/measurements.toml) that "Ceilings, not predictions" quotes.
STREAM_MEASUREMENT = "azure-babelstream-triad-h100"
GEMM_MEASUREMENT = "azure-cublaslt-fp8-h100"
GPTFAST_SINGLE = "gptfast-llama-3.1-8b-bf16-1gpu"
GPTFAST_PARALLEL = {
    2: "gptfast-llama-3.1-8b-bf16-tp2",
    4: "gptfast-llama-3.1-8b-bf16-tp4",
    8: "gptfast-llama-3.1-8b-bf16-tp8",
}
NIM_DECODE = "nim-llama-3.3-70b-fp8-tp2-5000-500-itl"
#: Contexts at which the chapter quotes the batching crossover.
CROSSOVER_CONTEXTS = (128, 256)
#: The batch the chapter compares with a single user.
BATCH_EXAMPLE = 32
#: Tokens each user has cached in the "a cache makes the step heavier" example.
CACHED_EXAMPLE = 1000
#: Context per user in the capacity example and the self-check.
CAPACITY_CONTEXT = 4096
QUIZ_CONTEXT = 8192
QUIZ_PROMPT = 8000
#: The decode-speed calculator's "Load this section's example" (``<!-- roofline:calculator decode_speed
#: example=lone -->``): the single user with no context that "A lightly loaded GPU is an expensive way to
#: serve" prices just above the widget, whose defaults (4,096 tokens of context) differ. ``build`` computes
#: that paragraph's step from these same inputs; the build checks them against the form's fields.
EXAMPLES: dict[str, dict[str, object]] = {
    "lone": {"gpu": GPU, "model": SMALL_MODEL, "precision": PRECISIONS[0], "gpus": 1, "users": 1, "context": 0},
}


def model_groups(ctx: Context) -> tuple[list[str], list[str]]:
    """The dense models with ordinary attention, then the rest (mixtures of experts, latent attention).

    The chapter's rules hold for the first group as they stand; the second breaks
    them in ways the chapter explains beside its own table.
    """
    dense = [m.id for m in ctx.specs.models.values() if m.moe is None and m.mla is None]
    return dense, [m.id for m in ctx.specs.models.values() if m.id not in dense]


def focus_of(ctx: Context) -> Focus:
    """The chapter's GPU, models, precisions and prompt, looked up in this run's specs."""
    return Focus(
        ctx.specs,
        ctx.specs.gpu(GPU),
        ctx.specs.model(SMALL_MODEL),
        ctx.specs.model(LARGE_MODEL),
        PRECISIONS,
        PROMPT_TOKENS,
    )


def build(ctx: Context) -> PageContent:
    """The chapter's values, its H100 table and its figures (their order here is not their letters')."""
    content = PageContent()
    compute_values(ctx, content)
    focus = focus_of(ctx)
    dense, sparse = model_groups(ctx)
    for name, models in (("h100-decode-prefill", dense), ("h100-decode-prefill-sparse", sparse)):
        rows = decode_prefill_rows(ctx.specs, GPU, models, precisions=PRECISIONS, prompt=PROMPT_TOKENS)
        content.table(name, escape.table(decode_prefill_table(rows)))
    content.figure(
        "decode-by-precision",
        charts.decode_by_precision(focus),
        "Decode ceiling per weight precision, on the fewest GPUs that hold the weights. Halving the bytes"
        " doubles it only where the GPU count stays and no scales are added: 4-bit formats store block"
        " scales, and a model that needs fewer GPUs at fewer bytes also gets less bandwidth.",
    )
    content.figure(
        "prefill-vs-prompt",
        charts.prefill_vs_prompt(focus),
        "Prefill time against prompt length, 16-bit weights, with the rule's straight line for the small model."
        " fp8 weights would halve the compute-bound part (fp8 math); 4-bit weights would change nothing.",
    )
    content.figure(
        "batching-crossover",
        charts.batching_crossover(focus),
        "Per-user and total decode tokens/s against batch size. A KV cache moves the crossover right,"
        " and past a few hundred tokens of context removes it.",
    )
    content.figure(
        "roofline",
        charts.roofline_chart(focus),
        "The roofline: decode at one user sits far left of the ridge, prefill far right.",
    )
    return content


def compute_values(ctx: Context, content: PageContent) -> None:
    """All prose numbers, by name, in a fixed order."""
    focus = focus_of(ctx)
    specs, gpu, small, large = ctx.specs, focus.gpu, focus.small, focus.large
    one = Hardware(gpu)
    put = content.put

    def at(model_id: str, **kwargs: object) -> Estimate:
        return estimate(gpu.id, model_id, specs=specs, **kwargs)

    # The GPU.
    put("gpu_name", gpu.name)
    put("gpu_bandwidth_tb", tera(gpu.bandwidth_bytes_per_s))
    put("gpu_peak_tflops", tera(gpu.peak_flops_per_s("bf16"), 0))
    # Each memory figure named by its kind (roofline.memorykinds), as every page and calculator names it.
    put("gpu_memory_gb", labelled(NAMEPLATE, memory_of(one, NAMEPLATE), 0))
    put("gpu_usable_gb", labelled(USABLE, memory_of(one, USABLE)))
    put("gpu_addressable_gb", labelled(DRIVER, memory_of(one, DRIVER)))
    put("usable_fraction", percent(one.usable_fraction))
    put("ridge_flops_per_byte", whole(gpu.peak_flops_per_s("bf16") / gpu.bandwidth_bytes_per_s))

    # The small model, decode at each chapter precision: the rule of thumb, which the chapter
    # teaches first (every weight byte per step, at the width the format's name says).
    put("small_name", small.name)
    put("small_params", fmt.parameters(total_parameters(small)))
    for precision in PRECISIONS:
        result = at(small.id, precision=precision)
        rule_tps = rule_decode_tokens_per_s_per_user(one, result.workload)
        put(f"small_weights_{precision}", fmt.gigabytes(rule_weight_bytes(result.workload)))
        put(f"decode_small_{precision}", fmt.rate(rule_tps))
        if precision == "bf16":  # the prose works one step through, at 16 bits
            put("step_small_bf16_ms", ms(1 / rule_tps))
    # The rule's math for one user: 2 FLOPs per parameter.
    rule_flops = 2.0 * total_parameters(small)
    rule_step_s = 1 / rule_decode_tokens_per_s_per_user(one, Workload(small))
    put("small_step_compute_us", f"{rule_flops / one.peak_flops_per_s * 1e6:,.0f}")
    put("batch1_math_use", percent(rule_flops / one.peak_flops_per_s / rule_step_s, 1))

    # The large model: how many GPUs its weights need, and what decode gets.
    large_bf16 = Workload(large, "bf16")
    large_gpus = gpus_to_fit(one, large_bf16)
    large_result = at(large.id, gpus=large_gpus)
    put("large_name", large.name)
    put("large_weights_bf16", fmt.gigabytes(large_result.memory.weights_bytes))
    put("large_gpus_bf16", str(large_gpus))
    put("decode_large_bf16", fmt.rate(large_result.rule.decode_tokens_per_s_per_user))
    put("large_bandwidth_tb", tera(large_result.hardware.bandwidth_bytes_per_s, 1))

    # Prefill: the 2·N·P/peak rule; the ceiling comes later, beside the rule.
    prompt = PROMPT_TOKENS
    put("prompt_tokens", whole(prompt))
    pre = at(small.id, prompt=prompt)
    rule_s = simple_prefill_seconds(one, pre.workload)
    put("prefill_rule_tflop", f"{rule_s * one.peak_flops_per_s / 1e12:,.1f}")
    put("prefill_rule_ms", ms(rule_s))
    put("prefill_weights_read_ms", ms(pre.prefill.memory_s))
    put("prefill_tokens_per_read", whole(prompt))

    _rule_and_ceiling(ctx, focus, content, at)

    # Batching at no context, on the ceiling's accounting (one step, computed once, quoted everywhere).
    alone = EXAMPLES["lone"]  # the inputs the calculator's example loads
    lone = decode_step(
        one, Workload(small, str(alone["precision"]), batch=int(alone["users"]), context=int(alone["context"]))
    )
    crowd = decode_step(one, Workload(small, str(alone["precision"]), batch=BATCH_EXAMPLE))
    put("batch_example", str(BATCH_EXAMPLE))
    put("step_batch1_ms", ms(lone.seconds))
    put("step_batchN_ms", ms(crowd.seconds))
    put("total_batchN", fmt.rate(BATCH_EXAMPLE / crowd.seconds))
    put("decode_small_ceiling", fmt.rate(1 / lone.seconds))
    put("ceiling_math_use", percent(lone.compute_s / lone.seconds, 1))
    # With a cache the step grows: each user's cached tokens are read too.
    put("cached_example", whole(CACHED_EXAMPLE))
    lone_cached = decode_step(one, Workload(small, batch=1, context=CACHED_EXAMPLE))
    crowd_cached = decode_step(one, Workload(small, batch=BATCH_EXAMPLE, context=CACHED_EXAMPLE))
    put("step_batch1_cached_ms", ms(lone_cached.seconds))
    put("step_batchN_cached_ms", ms(crowd_cached.seconds))
    put("step_cached_growth", percent(crowd_cached.seconds / lone_cached.seconds - 1))
    put("total_batchN_cached", fmt.rate(BATCH_EXAMPLE / crowd_cached.seconds))
    put("cost_ratio_cached", f"{(lone_cached.seconds / 1) / (crowd_cached.seconds / BATCH_EXAMPLE):,.0f}")

    # The crossover: the rule, and how a cache moves and then removes it.
    put("crossover_bf16", fmt.users(simple_crossover_batch(one, "bf16")))
    put("crossover_int4_weights", fmt.users(simple_crossover_batch(one, "int4")))
    # The same crossover with the format's block scales counted, as chapter 4 counts them.
    put("int4_bytes_per_weight", f"{number_format('int4').bytes_per_weight:.4g}")
    put("crossover_int4_scaled", fmt.users(critical_batch_for(one, "int4")))
    put("crossover_int4_awq", fmt.users(critical_batch_for(one, "int4-awq")))
    for letter, context in zip("ab", CROSSOVER_CONTEXTS, strict=True):
        put(f"crossover_context_{letter}", whole(context))
        put(f"crossover_users_{letter}", fmt.users(crossover_batch(one, Workload(small, context=context))))
    threshold = no_crossover_from(one, Workload(small))
    put("crossover_none_from", "never" if threshold is None else whole(threshold))
    put("kv_per_token_small", fmt.bytes_size(kv_cache_bytes_per_token(small, "bf16")))

    # Capacity: the cache fills the memory the weights leave.
    put("capacity_context", whole(CAPACITY_CONTEXT))
    capacity = memory_use(one, Workload(small, context=CAPACITY_CONTEXT))
    put("capacity_users", whole(capacity.max_batch or 0))
    put("capacity_free_gb", fmt.gigabytes(capacity.usable_bytes - capacity.weights_bytes))
    put("capacity_per_user_gb", fmt.gigabytes(CAPACITY_CONTEXT * kv_cache_bytes_per_token(small, "bf16"), 2))
    full = decode_step(one, Workload(small, batch=capacity.max_batch or 1, context=CAPACITY_CONTEXT))
    put("capacity_total_tps", fmt.rate((capacity.max_batch or 1) / full.seconds))
    put("capacity_per_user_tps", fmt.rate(1 / full.seconds))
    put("capacity_bound", full.bound)

    _measured(ctx, focus, content, at)
    _self_check(ctx, focus, put, at)
    _interview(focus, put, at)


def _rule_and_ceiling(ctx: Context, focus: Focus, content: PageContent, at: Callable[..., Estimate]) -> None:
    """The section "The rule and the ceiling": each rule figure, then the engine's, and why they differ."""
    put = content.put
    small, large, gpu = focus.small, focus.large, focus.gpu
    prompt = PROMPT_TOKENS
    put("embedding_gb", fmt.gigabytes(lookup_only_parameters(small) * value_bytes("bf16"), 2))
    for precision in PRECISIONS:
        result = at(small.id, precision=precision, prompt=prompt)
        put(f"explain_decode_small_{precision}", result.decode_vs_rule)
        if precision != "bf16":  # 16-bit's is the prefill the section works through, quoted as prefill_small
            put(f"ceiling_prefill_small_{precision}_ms", ms(result.prefill.seconds))
    pre = at(small.id, prompt=prompt)
    put("explain_prefill_small", pre.prefill_vs_rule)
    put("prefill_small_bound", pre.prefill.bound)
    put("gpu_peak_fp8_tflops", tera(gpu.peak_flops_per_s("fp8"), 0))
    put("fp8_math", at(small.id, precision="fp8").math)
    put("int4_math", at(small.id, precision="int4").math)

    # The large model on as many GPUs as hold it, all-reduces paid, and what was measured.
    large_gpus = gpus_to_fit(Hardware(gpu), Workload(large))
    two = at(large.id, gpus=large_gpus, prompt=prompt)
    put("explain_decode_large_bf16", two.decode_vs_rule)
    ranges = ratio_range_by_kind(list(_comparisons(ctx).values()))
    for kind, key in (("single-GPU decode", "single"), ("multi-GPU decode", "multi")):
        low, high = ranges[kind]
        put(f"measured_{key}_decode_low", percent(low))
        put(f"measured_{key}_decode_high", percent(high))

    # Mixtures of experts and latent attention: the second table.
    _sparse_rows(ctx, focus, put, at)


def _sparse_rows(ctx: Context, focus: Focus, put: Callable[[str, str], None], at: Callable[..., Estimate]) -> None:
    """What the mixture-of-experts and latent-attention rows need explained, by the numbers."""
    one = Hardware(focus.gpu)
    prompt = PROMPT_TOKENS
    mixtral = ctx.specs.model(MOE_MODEL)
    mixtral_gpus = gpus_to_fit(one, Workload(mixtral))
    mix = at(mixtral.id, gpus=mixtral_gpus, prompt=prompt)
    put("moe_name", mixtral.name)
    put("moe_gpus", str(mixtral_gpus))
    put("moe_experts", str(mixtral.moe.experts))
    put("moe_experts_per_token", str(mixtral.moe.experts_per_token))
    put("moe_total_params", fmt.parameters(total_parameters(mixtral)))
    put("moe_active_params", fmt.parameters(active_parameters(mixtral)))
    put("moe_rule", fmt.rate(mix.rule.decode_tokens_per_s_per_user))
    put("moe_ceiling", fmt.rate(mix.decode_tokens_per_s_per_user))
    put("explain_decode_moe", mix.decode_vs_rule)
    fp8_gpus = gpus_to_fit(one, Workload(mixtral, "fp8"))
    put("moe_gpus_fp8", f"{fp8_gpus} GPU{'' if fp8_gpus == 1 else 's'}")
    put("moe_ceiling_fp8", fmt.rate(at(mixtral.id, precision="fp8", gpus=fp8_gpus).decode_tokens_per_s_per_user))

    deepseek = ctx.specs.model(MLA_MODEL)
    put("mla_name", deepseek.name)
    put("mla_total_params", fmt.parameters(total_parameters(deepseek)))
    put("mla_active_params", fmt.parameters(active_parameters(deepseek)))
    put("mla_experts", str(deepseek.moe.experts))
    put("mla_experts_per_token", str(deepseek.moe.experts_per_token))
    results = {}
    for precision in ("bf16", "fp8"):
        count = gpus_to_fit(one, Workload(deepseek, precision))
        results[precision] = result = at(deepseek.id, precision=precision, gpus=count, prompt=prompt)
        put(f"mla_bandwidth_{precision}_tb", tera(result.hardware.bandwidth_bytes_per_s, 0))
    # The prose follows the 16-bit model's decode, then fp8's prefill beside 16-bit's: both wait on
    # one read of the weights, and 16-bit's all-reduces cross the network between servers.
    bf16, fp8 = results["bf16"], results["fp8"]
    put("mla_gpus_bf16", str(bf16.hardware.count))
    put("mla_gpus_fp8", str(fp8.hardware.count))
    put("mla_ceiling_bf16", fmt.rate(bf16.decode_tokens_per_s_per_user))
    put("mla_prefill_fp8_ms", ms(fp8.prefill.seconds))
    put("mla_prefill_bf16_ms", ms(bf16.prefill.seconds))
    put("mla_prefill_fp8_bound", fp8.prefill.bound)
    put("mla_cross_share", f"1/{one.gpu.interconnect.domain_gpus}")
    put("explain_prefill_mla_fp8", fp8.prefill_vs_rule)
    put("mla_active_gb", fmt.gigabytes(active_parameters(deepseek) * value_bytes("bf16"), 0))
    put("mla_weights_bf16", fmt.gigabytes(bf16.memory.weights_bytes, 0))
    put("mla_gpus_saved", str(bf16.hardware.count - fp8.hardware.count))
    put("mla_per_gpu", fmt.rate(bf16.decode_tokens_per_s_per_user / bf16.hardware.count))
    put("mla_kv_per_token", fmt.bytes_size(kv_cache_bytes_per_token(deepseek, "bf16")))
    put("kv_per_token_large", fmt.bytes_size(kv_cache_bytes_per_token(focus.large, "bf16")))
    put("small_ceiling_bf16_for_mla", fmt.rate(at(focus.small.id).decode_tokens_per_s_per_user))


def _comparisons(ctx: Context) -> dict[str, Comparison]:
    """Every published measurement beside its ceiling, by id (the reference page shows them all)."""
    return {c.measurement.id: c for c in compare_all(load_measurements(specs=ctx.specs), ctx.specs)}


def _measured(ctx: Context, focus: Focus, content: PageContent, at: Callable[..., Estimate]) -> None:
    """Section "Ceilings, not predictions": published measurements set against the package's ceilings."""
    put, put_markdown = content.put, content.put_markdown
    comparisons = _comparisons(ctx)

    def quote(key: str, measurement_id: str, *, cited: bool = True) -> Comparison:
        """Its ratio to its ceiling; with ``cited``, its source and section for a footnote."""
        comparison = comparisons[measurement_id]
        put(f"{key}_ratio", percent(comparison.ratio))
        if cited:
            put_markdown(f"{key}_source", escape.linked(comparison.measurement.source))
            put(f"{key}_section", comparison.measurement.section)
        return comparison

    stream = quote("stream", STREAM_MEASUREMENT)
    put("stream_tb", tera(stream.measurement.value))
    put("stream_gpu", ctx.specs.gpu(stream.measurement.gpu).name)
    put("stream_software", stream.measurement.software)
    gemm = quote("gemm", GEMM_MEASUREMENT, cited=False)
    put("gemm_tflops", tera(gemm.measurement.value, 0))
    put("gemm_peak_tflops", tera(gemm.ceiling, 0))

    single = quote("gptfast", GPTFAST_SINGLE)
    # The prose names the README itself, so the data's "(README)" attribution is not repeated.
    put("gptfast_hardware", single.measurement.hardware.removesuffix(" (README)"))
    put("gptfast_software", single.measurement.software)
    put("gptfast_version", single.measurement.software_version)
    put("gptfast_model", ctx.specs.model(single.measurement.model).name)
    put("gptfast_tps", f"{single.measurement.value:,.1f}")
    put("gptfast_ceiling", fmt.rate(single.ceiling))
    expected = well_tuned_decode_range(list(comparisons.values()))
    put("well_tuned_low", percent(expected.low))
    put("well_tuned_high", percent(expected.high))
    put("well_tuned_count", str(len(expected.basis)))

    for gpus, measurement_id in GPTFAST_PARALLEL.items():
        comparison = quote(f"gptfast_tp{gpus}", measurement_id, cited=False)
        put(f"gptfast_tp{gpus}_tps", fmt.rate(comparison.measurement.value))

    nim = quote("nim", NIM_DECODE)
    m = nim.measurement
    put("nim_software", f"{m.software}, {m.software_version},")
    put("nim_gpus", str(m.gpus))
    put("nim_gpu", ctx.specs.gpu(m.gpu).name)
    put("nim_precision", m.weight_precision)
    put("nim_input", whole(m.input_tokens))
    put("nim_output", whole(m.output_tokens))
    put("nim_itl_ms", f"{m.value * 1e3:.2f}")
    put("nim_tps", fmt.rate(1 / m.value))
    put("nim_ceiling_tps", fmt.rate(1 / nim.ceiling))
    ranges = ratio_range_by_kind(list(comparisons.values()))
    for kind, key in (("prefill (time to first token)", "prefill"), ("maximum throughput", "throughput")):
        low, high = ranges[kind]
        put(f"measured_{key}_low", percent(low))
        put(f"measured_{key}_high", percent(high))
    put("measured_count", str(len(comparisons)))
    put("speculative_sentence", speculative_sentence(list(comparisons.values())))


def speculative_sentence(comparisons: list[Comparison]) -> str:
    """How many measurements used speculation, and how many beat their ceiling, in one sentence."""
    speculative = sum(c.measurement.speculative for c in comparisons)
    above = sum(c.ratio > 1 for c in comparisons)
    used = "None" if speculative == 0 else f"{speculative:,}"
    beat = "none" if above == 0 else f"{above:,}"
    ceilings = "its ceiling" if above <= 1 else "their ceilings"
    return f"{used} of the {len(comparisons):,} measurements here used them, and {beat} exceeded {ceilings}."


def _self_check(ctx: Context, focus: Focus, put: Callable[[str, str], None], at: Callable[..., Estimate]) -> None:
    """Answers to the chapter's self-check questions."""
    small = focus.small
    quiz_gpu = ctx.specs.gpu(QUIZ_GPU)
    other = estimate(quiz_gpu.id, small.id, specs=ctx.specs)
    put("quiz_gpu_name", quiz_gpu.name)
    put("quiz_gpu_bandwidth_tb", tera(quiz_gpu.bandwidth_bytes_per_s, 1))
    put("quiz_decode", fmt.rate(other.rule.decode_tokens_per_s_per_user))
    put("quiz_decode_ceiling", fmt.rate(other.decode_tokens_per_s_per_user))
    put("quiz_step_ms", ms(1 / other.rule.decode_tokens_per_s_per_user))

    put("quiz_context", whole(QUIZ_CONTEXT))
    fit = at(small.id, context=QUIZ_CONTEXT)
    put("quiz_users", whole(fit.memory.max_batch or 0))
    put("quiz_user_gb", fmt.gigabytes(QUIZ_CONTEXT * kv_cache_bytes_per_token(small, "bf16"), 2))

    put("quiz_prompt", whole(QUIZ_PROMPT))
    long = at(small.id, prompt=QUIZ_PROMPT)
    put("quiz_prefill_ms", ms(long.prefill.seconds))
    put("quiz_explain_prefill", long.prefill_vs_rule)
    for tokens, key in ((PROMPT_TOKENS, "prefill_attention_share"), (QUIZ_PROMPT, "quiz_attention_share")):
        put(key, percent(prefill_attention_flops(small, tokens) / prefill_flops(small, tokens)))

    large = focus.large
    int4 = at(large.id, precision="int4")
    put("quiz_large_int4_weights", fmt.gigabytes(int4.memory.weights_bytes))
    put("quiz_large_int4_rule_weights", fmt.gigabytes(rule_weight_bytes(int4.workload)))
    put("quiz_large_int4_decode", fmt.rate(int4.rule.decode_tokens_per_s_per_user))
    put("quiz_large_int4_ceiling", fmt.rate(int4.decode_tokens_per_s_per_user))
    put("quiz_large_int4_prefill_ms", ms(at(large.id, precision="int4", prompt=PROMPT_TOKENS).prefill.seconds))
    large_gpus = gpus_to_fit(Hardware(focus.gpu), Workload(large))
    put("quiz_large_bf16_prefill_ms", ms(at(large.id, gpus=large_gpus, prompt=PROMPT_TOKENS).prefill.seconds))


def _interview(focus: Focus, put: Callable[[str, str], None], at: Callable[..., Estimate]) -> None:
    """The interview's strong answer: a long prompt's TTFT and one user's decode, at 16, 8 and 4 bits."""
    small = focus.small
    for precision in ("bf16", "fp8", "int4"):
        result = at(small.id, precision=precision, prompt=QUIZ_PROMPT)
        put(f"iv_prefill_{precision}_ms", ms(result.prefill.seconds))
        put(f"iv_decode_{precision}", fmt.rate(result.decode_tokens_per_s_per_user))
    put("iv_prefill_bound", at(small.id, prompt=QUIZ_PROMPT).prefill.bound)
