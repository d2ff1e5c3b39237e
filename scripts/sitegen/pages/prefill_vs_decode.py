"""Chapter 1, "Prefill vs Decode": every number its prose quotes, its H100 table and its four figures.

The page is ``docs/chapters/prefill-vs-decode.md``; its Run cell shows
``docs/programs/h100_decode_prefill.py`` and its calculator is
``docs/calculators/decode_speed.py``. Everything here is computed by the
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
from roofline.architecture import prefill_attention_flops, prefill_flops
from roofline.rule import rule_weight_bytes
from roofline.sweep import decode_prefill_rows, decode_prefill_table, gpus_to_fit

from .. import charts, escape
from ..context import Context, Focus
from ..page import PageContent
from ..tables import linked
from ..values import ms, percent, tera, whole

PAGE = "chapters/prefill-vs-decode.md"

#: The GPU the chapter works through, and the two models its prose follows.
GPU = "h100-sxm"
SMALL_MODEL = "llama-3.1-8b"
LARGE_MODEL = "llama-3.1-70b"
#: The weight precisions the chapter compares (16, 8 and 4 bits) and its example prompt.
PRECISIONS = ("bf16", "fp8", "int4")
PROMPT_TOKENS = 2000
#: A second GPU for the self-check ("what changes with more bandwidth?").
QUIZ_GPU = "h200"
#: The GPU that gpt-fast measured on, to turn its GB/s into a share of peak.
MEASURED_A100 = "a100-80gb"
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
    rows = decode_prefill_rows(ctx.specs, GPU, precisions=PRECISIONS, prompt=PROMPT_TOKENS)
    content.table("h100-decode-prefill", escape.table(decode_prefill_table(rows)))
    content.figure(
        "decode-by-precision",
        charts.decode_by_precision(focus),
        "Decode tokens/s per weight precision. Halving the bytes per weight doubles the ceiling.",
    )
    content.figure(
        "prefill-vs-prompt",
        charts.prefill_vs_prompt(focus),
        "Prefill time against prompt length. Weight precision does not enter: the math runs at 16 bits.",
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


def no_crossover_from(hardware: Hardware, workload: Workload, limit: int = 1 << 20) -> int | None:
    """The shortest context (tokens) at which decode never turns compute-bound, or None below ``limit``.

    ``crossover_batch`` is None exactly when each user's cache read costs at
    least as much time as its math, a condition that only grows more true as
    the context grows, so a bisection over whole contexts finds the threshold.
    """

    def removed(context: int) -> bool:
        probe = Workload(workload.model, workload.weight_precision, workload.kv_precision, context=context)
        return crossover_batch(hardware, probe) is None

    if not removed(limit):
        return None
    low, high = 0, limit
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if removed(middle) else (middle, high)
    return high


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
    put("gpu_memory_gb", fmt.gigabytes(gpu.memory_bytes, 0).removesuffix(" GB"))
    put("gpu_usable_gb", fmt.gigabytes(one.usable_memory_bytes, 0).removesuffix(" GB"))
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
        put(f"step_small_{precision}_ms", ms(1 / rule_tps))
    # The rule's math for one user: 2 FLOPs per parameter.
    rule_flops = 2.0 * total_parameters(small)
    rule_step_s = 1 / rule_decode_tokens_per_s_per_user(one, Workload(small))
    put("small_step_flops_g", f"{rule_flops / 1e9:,.0f}")
    put("small_step_compute_us", f"{rule_flops / one.peak_flops_per_s * 1e6:,.0f}")
    put("batch1_math_use", percent(rule_flops / one.peak_flops_per_s / rule_step_s, 1))

    # The large model: how many GPUs its weights need, and what decode gets.
    large_bf16 = Workload(large, "bf16")
    large_gpus = gpus_to_fit(one, large_bf16)
    large_result = at(large.id, gpus=large_gpus)
    put("large_name", large.name)
    put("large_weights_bf16", fmt.gigabytes(large_result.memory.weights_bytes))
    put("large_gpus_bf16", str(large_gpus))
    put("large_usable_gb", fmt.gigabytes(large_result.hardware.usable_memory_bytes, 0).removesuffix(" GB"))
    put("decode_large_bf16", fmt.rate(large_result.rule.decode_tokens_per_s_per_user))
    put("large_bandwidth_tb", tera(large_result.hardware.bandwidth_bytes_per_s, 1))

    # Prefill: the full estimate, the 2·N·P/peak rule, and what attention adds.
    prompt = PROMPT_TOKENS
    put("prompt_tokens", whole(prompt))
    pre = at(small.id, prompt=prompt)
    rule_s = simple_prefill_seconds(one, pre.workload)
    rule_flops = rule_s * one.peak_flops_per_s
    put("prefill_small_ms", ms(pre.prefill.seconds))
    put("prefill_small_int4_ms", ms(at(small.id, precision="int4", prompt=prompt).prefill.seconds))
    put("prefill_rule_tflop", f"{rule_flops / 1e12:,.1f}")
    put("prefill_rule_ms", ms(rule_s))
    put("prefill_attention_share", percent(prefill_attention_flops(small, prompt) / prefill_flops(small, prompt)))
    put("prefill_bound", pre.prefill.bound)
    put("prefill_weights_read_ms", ms(pre.prefill.memory_s))
    put("prefill_tokens_per_read", whole(prompt))

    # Batching at no context: the step costs the same, tokens multiply.
    lone = decode_step(one, Workload(small, batch=1))
    crowd = decode_step(one, Workload(small, batch=BATCH_EXAMPLE))
    put("batch_example", str(BATCH_EXAMPLE))
    put("step_batch1_ms", ms(lone.seconds))
    put("step_batchN_ms", ms(crowd.seconds))
    put("total_batchN", fmt.rate(BATCH_EXAMPLE / crowd.seconds))
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


def _measured(ctx: Context, focus: Focus, content: PageContent, at: Callable[..., Estimate]) -> None:
    """Published measurements, set against the package's ceilings for the same hardware."""
    put, put_markdown = content.put, content.put_markdown
    gpt_fast, nim = (ctx.measured[k] for k in ("gpt_fast", "nim_llama_8b"))
    a100 = ctx.specs.gpu(MEASURED_A100)
    put("a100_name", a100.name)
    put("a100_bandwidth_gb", whole(a100.bandwidth_bytes_per_s / 1e9))
    put("gptfast_tps", f"{gpt_fast.values['tokens_per_s']:.1f}")
    put("gptfast_gbps", whole(gpt_fast.values["achieved_bandwidth_bytes_per_s"] / 1e9))
    put("gptfast_share", percent(gpt_fast.values["achieved_bandwidth_bytes_per_s"] / a100.bandwidth_bytes_per_s))
    practical = gpt_fast.values["practical_peak_bandwidth_bytes_per_s"]
    put("gptfast_practical_gbps", whole(practical / 1e9))
    put("gptfast_practical_share", percent(practical / a100.bandwidth_bytes_per_s))
    put("gptfast_share_of_practical", percent(gpt_fast.values["achieved_bandwidth_bytes_per_s"] / practical))
    put_markdown("gptfast_source", linked(gpt_fast.source))
    itl = nim.values["inter_token_latency_s"]
    put("nim_itl_ms", f"{itl * 1e3:.2f}")
    put("nim_tps", fmt.rate(1 / itl))
    put("nim_ttft_ms", f"{nim.values['time_to_first_token_s'] * 1e3:.2f}")
    fp8 = at(focus.small.id, precision="fp8")
    put("nim_share_of_fp8", percent((1 / itl) / fp8.rule.decode_tokens_per_s_per_user))
    put_markdown("nim_source", linked(nim.source))


def _self_check(ctx: Context, focus: Focus, put: Callable[[str, str], None], at: Callable[..., Estimate]) -> None:
    """Answers to the chapter's self-check questions."""
    small = focus.small
    quiz_gpu = ctx.specs.gpu(QUIZ_GPU)
    other = estimate(quiz_gpu.id, small.id, specs=ctx.specs)
    put("quiz_gpu_name", quiz_gpu.name)
    put("quiz_gpu_bandwidth_tb", tera(quiz_gpu.bandwidth_bytes_per_s, 1))
    put("quiz_decode", fmt.rate(other.rule.decode_tokens_per_s_per_user))
    put("quiz_step_ms", ms(1 / other.rule.decode_tokens_per_s_per_user))

    put("quiz_context", whole(QUIZ_CONTEXT))
    fit = at(small.id, context=QUIZ_CONTEXT)
    put("quiz_users", whole(fit.memory.max_batch or 0))
    put("quiz_user_gb", fmt.gigabytes(QUIZ_CONTEXT * kv_cache_bytes_per_token(small, "bf16"), 2))

    put("quiz_prompt", whole(QUIZ_PROMPT))
    long = at(small.id, prompt=QUIZ_PROMPT)
    rule_s = simple_prefill_seconds(long.hardware, long.workload)
    put("quiz_prefill_ms", ms(long.prefill.seconds))
    put("quiz_prefill_rule_ms", ms(rule_s))
    put(
        "quiz_attention_share", percent(prefill_attention_flops(small, QUIZ_PROMPT) / prefill_flops(small, QUIZ_PROMPT))
    )

    large = focus.large
    int4 = at(large.id, precision="int4")
    put("quiz_large_int4_weights", fmt.gigabytes(rule_weight_bytes(int4.workload)))
    put("quiz_large_int4_decode", fmt.rate(int4.rule.decode_tokens_per_s_per_user))
    put("quiz_large_int4_fits", "yes" if int4.memory.fits else "no")
    put("quiz_large_int4_prefill_ms", ms(at(large.id, precision="int4", prompt=PROMPT_TOKENS).prefill.seconds))
    large_gpus = gpus_to_fit(Hardware(focus.gpu), Workload(large))
    put("quiz_large_bf16_prefill_ms", ms(at(large.id, gpus=large_gpus, prompt=PROMPT_TOKENS).prefill.seconds))
