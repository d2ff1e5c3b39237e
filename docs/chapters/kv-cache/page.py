"""Chapter 2, "The KV Cache": every number its prose quotes, its tables and its four figures.

The page is ``index.md`` beside this module; its Run cell shows
``programs/kv_budget.py``, its calculator is ``calculators/kv_budget.py`` and its
chart builders are in ``charts.py``. Every number is computed by the
``roofline`` package (``roofline.kvcache`` above all); the chapter's own
choices (GPU, models, contexts, the length mix for paging) are the constants
below. The one published figure, the vLLM paper's measured waste, lives with
its source in ``roofline.kvcache.VLLM_PAPER_PRIOR_SYSTEMS_USED``.
"""

from __future__ import annotations

from dataclasses import replace

from roofline import (
    Hardware,
    Workload,
    active_parameters,
    attention_cache,
    decode_step,
    generation_work,
    kv_cache_bytes,
    kv_equals_weights_context,
    kv_read_asymptote,
    lognormal_lengths,
    paging_use,
    prefix_sharing_savings,
    recompute_wins_between,
    step_split,
    swap_or_recompute,
    users_that_fit,
    weight_bytes,
)
from roofline import formatting as fmt
from roofline.architecture import local_layers
from roofline.kvcache import PAGED_BLOCK_TOKENS, VLLM_PAPER_PRIOR_SYSTEMS_USED, break_even_host_link
from roofline.kvformats import KV_FORMATS, kv_format
from roofline.performance import gpus_to_fit
from roofline.specs import ModelSpec
from roofline.sweep import Table
from sitegen import escape
from sitegen.context import Context
from sitegen.page import PageContent
from sitegen.values import ms, percent, whole

from . import charts

#: The GPU the chapter works through; the second GPU of the capacity table.
GPU = "h100-sxm"
BIG_GPU = "h200"
#: The two models the prose follows, and the ones that show the other attention designs.
SMALL_MODEL = "llama-3.1-8b"
LARGE_MODEL = "llama-3.1-70b"
MHA_MODEL = "llama-2-13b"
MLA_MODEL = "deepseek-v3"
#: The grouped-query family the prose describes.
LLAMA_3_MODELS = ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b")
WINDOW_MODEL = "gemma-2-9b"
#: KV precisions the chapter compares: 16-bit, 8-bit and 4-bit (with group scales).
KV_PRECISIONS = ("bf16", "fp8", "int4")
#: "Without the cache": a prompt and an output length.
NOCACHE_PROMPT = 1000
NOCACHE_OUTPUT = 1000
#: The context of one request in "how big it is", and how many such requests make a batch.
REQUEST_CONTEXT = 32768
BATCH_EXAMPLE = 16
#: Contexts of the capacity table, and the one the prose quotes from it.
CAPACITY_CONTEXTS = (2048, 8192, 32768, 131072)
CAPACITY_CONTEXT = 8192
#: Context for the throughput asymptote, the shrinking table and the interview answer.
LONG_CONTEXT = 32768
#: Contexts for the users-that-fit figure (every power of two from 1k to 128k).
FIGURE_CONTEXTS = tuple(2**power for power in range(10, 18))
#: The step-split figure: this many users, at these contexts.
SPLIT_USERS = 4
SPLIT_CONTEXTS = tuple(2**power for power in range(10, 17))
#: Gemma's cache is compared at this context, well past its window.
WINDOW_CONTEXT = 32768
#: Paging: this many requests, log-normal lengths (median, spread), room for MAX each.
PAGING_REQUESTS = 1000
PAGING_MEDIAN = 300
PAGING_SPREAD = 1.0
PAGING_MAX = 2048
PAGING_BLOCKS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
#: Prefix sharing: users, a shared system prompt, and each user's context.
PREFIX_USERS = 64
PREFIX_TOKENS = 2000
PREFIX_CONTEXT = 4096
#: Swap or recompute: the context brought back.
SWAP_CONTEXT = 4096


def build(ctx: Context) -> PageContent:
    """The chapter's values, its three tables and its four figures."""
    content = PageContent()
    specs = ctx.specs
    _cached_or_not(ctx, content)
    _how_big(ctx, content)
    _capacity(ctx, content)
    _read_cost(ctx, content)
    _shrinking(ctx, content)
    _paging(content)
    _prefix(ctx, content)
    _swap(ctx, content)
    _self_check(ctx, content)
    content.figure(
        "kv-per-token",
        charts.kv_per_token(specs),
        "KV cache per token at 16 bits. Grouped-query attention caches a fraction of what full multi-head"
        " attention would; latent attention caches less still.",
    )
    content.figure(
        "users-vs-context",
        charts.users_vs_context(specs, ((SMALL_MODEL, GPU, 1), (LARGE_MODEL, GPU, 2)), KV_PRECISIONS, FIGURE_CONTEXTS),
        "Users that fit against context. Each halving of the bytes per cached value nearly doubles the users.",
    )
    content.figure(
        "step-split",
        charts.step_split_chart(specs, SMALL_MODEL, GPU, SPLIT_USERS, SPLIT_CONTEXTS),
        "One decode step's reads. At short contexts the weights dominate; at long ones, the cache.",
    )
    content.figure(
        "paging",
        charts.paging_chart(_paging_lengths(), PAGING_MAX, PAGING_BLOCKS, VLLM_PAPER_PRIOR_SYSTEMS_USED),
        "How much of the reserved cache holds tokens, contiguous against paged, beside the vLLM paper's measurement.",
    )
    return content


def _one(ctx: Context) -> Hardware:
    return Hardware(ctx.specs.gpu(GPU))


def _gb(value_bytes: float) -> str:
    return fmt.gigabytes(value_bytes)


def _users(count: int) -> str:
    """``1`` -> ``"1 user"``, ``41`` -> ``"41 users"``."""
    return f"{count:,} user" if count == 1 else f"{count:,} users"


def _rate(hardware: Hardware, workload: Workload) -> float:
    """Total decode tokens/s for the workload's batch: ``B / step time``."""
    return workload.batch / decode_step(hardware, workload).seconds


def _cached_or_not(ctx: Context, content: PageContent) -> None:
    """What is cached, and why: the work with and without the cache."""
    put = content.put
    small, one = ctx.specs.model(SMALL_MODEL), _one(ctx)
    put("small_name", small.name)
    put("gpu_name", one.gpu.name)
    work = generation_work(small, NOCACHE_PROMPT, NOCACHE_OUTPUT)
    put("nocache_prompt", whole(NOCACHE_PROMPT))
    put("nocache_output", whole(NOCACHE_OUTPUT))
    put("nocache_cached_tflop", f"{work.cached_flops / 1e12:,.0f}")
    put("nocache_uncached_pflop", f"{work.uncached_flops / 1e15:,.0f}")
    put("nocache_ratio", f"{work.ratio:,.0f}")
    put("nocache_cached_s", f"{work.cached_flops / one.peak_flops_per_s:,.2f}")
    put("nocache_uncached_s", f"{work.uncached_flops / one.peak_flops_per_s:,.1f}")


def kv_per_token_table(ctx: Context) -> Table:
    """Every model's cache per token at 16 bits: attention type, the formula's terms, bytes, against full MHA."""
    rows = []
    for model in ctx.specs.models.values():
        cache = attention_cache(model, "bf16")
        if model.mla is not None:
            shape = f"latent {model.mla.kv_lora_rank} + rope {model.mla.qk_rope_head_dim}"
        else:
            shape = f"{model.kv_heads} of {model.attention_heads} heads × {model.head_dim}"
        if model.sliding_window:
            shape += f"; {local_layers(model)} layers windowed at {model.sliding_window:,}"
        rows.append(
            (
                model.name,
                cache.kind,
                str(model.layers),
                shape,
                fmt.bytes_size(cache.bytes_per_token),
                f"{cache.shrink_factor:,.1f}×",
            )
        )
    header = ("Model", "Attention", "Layers", "Cached per layer", "KV per token", "Smaller than MHA")
    return Table(header, tuple(rows))


def _how_big(ctx: Context, content: PageContent) -> None:
    """Per token for every model, per request, per batch."""
    put = content.put
    specs = ctx.specs
    small, large = specs.model(SMALL_MODEL), specs.model(LARGE_MODEL)
    content.table("kv-per-token", escape.table(kv_per_token_table(ctx)))
    put("large_name", large.name)
    put("request_context", whole(REQUEST_CONTEXT))
    put("request_small_gb", _gb(kv_cache_bytes(small, REQUEST_CONTEXT)))
    large_request = kv_cache_bytes(large, REQUEST_CONTEXT)
    put("request_large_gb", _gb(large_request))
    put("batch_example", whole(BATCH_EXAMPLE))
    batch = BATCH_EXAMPLE * large_request
    weights = weight_bytes(large, "bf16")
    put("batch_large_gb", _gb(batch))
    put("batch_vs_weights", "more than" if batch > weights else "less than")
    put("large_weights_bf16", _gb(weights))
    put("kv_per_token_small", fmt.bytes_size(attention_cache(small).bytes_per_token))
    put("kv_per_token_large", fmt.bytes_size(attention_cache(large).bytes_per_token))
    put("llama3_gqa", _gqa_phrase([specs.model(m) for m in LLAMA_3_MODELS]))


def _gqa_phrase(models: list[ModelSpec]) -> str:
    """``"8 KV heads for 32, 64 or 128 query heads"`` (each count once, in order), from the specs."""
    kv = sorted({model.kv_heads for model in models})
    heads = sorted({model.attention_heads for model in models})
    query = ", ".join(f"{h:,}" for h in heads[:-1]) + (" or " if len(heads) > 1 else "") + f"{heads[-1]:,}"
    return f"{' or '.join(f'{k:,}' for k in kv)} KV heads for {query} query heads"


def capacity_table(ctx: Context) -> Table:
    """Users that fit at each capacity context, the 8B and 70B on H100 and H200 (fewest GPUs that hold them)."""
    specs = ctx.specs
    rows = []
    for model_id in (SMALL_MODEL, LARGE_MODEL):
        model = specs.model(model_id)
        for gpu_id in (GPU, BIG_GPU):
            gpu = specs.gpu(gpu_id)
            count = gpus_to_fit(Hardware(gpu), Workload(model))
            hardware = Hardware(gpu, count)
            cells = [whole(users_that_fit(hardware, Workload(model, context=c)) or 0) for c in CAPACITY_CONTEXTS]
            rows.append((model.name, f"{count} × {gpu.name}", *cells))
    header = ("Model, 16-bit", "GPUs", *(f"{c:,} tokens" for c in CAPACITY_CONTEXTS))
    return Table(header, tuple(rows))


def _capacity(ctx: Context, content: PageContent) -> None:
    put = content.put
    specs = ctx.specs
    small, large = specs.model(SMALL_MODEL), specs.model(LARGE_MODEL)
    one = _one(ctx)
    put("usable_fraction", percent(one.usable_fraction))
    content.table("capacity-table", escape.table(capacity_table(ctx)))
    put("capacity_context", whole(CAPACITY_CONTEXT))
    put("cap_small_h100_8k", whole(users_that_fit(one, Workload(small, context=CAPACITY_CONTEXT)) or 0))
    put("cap_small_h100_16k", whole(users_that_fit(one, Workload(small, context=2 * CAPACITY_CONTEXT)) or 0))
    put("large_fits_one_h100", "does not" if users_that_fit(one, Workload(large, context=1)) == 0 else "does")
    for gpu_id, key in ((GPU, "h100"), (BIG_GPU, "h200")):
        two = Hardware(specs.gpu(gpu_id), 2)
        put(f"cap_large_{key}x2_8k", _users(users_that_fit(two, Workload(large, context=CAPACITY_CONTEXT)) or 0))


def _read_cost(ctx: Context, content: PageContent) -> None:
    """Where one user's cache read equals the weights read, and the throughput asymptote."""
    put = content.put
    specs = ctx.specs
    small, large = specs.model(SMALL_MODEL), specs.model(LARGE_MODEL)
    one = _one(ctx)
    put("cstar_small", whole(kv_equals_weights_context(Workload(small))))
    put("cstar_large", whole(kv_equals_weights_context(Workload(large))))
    put("asym_context", whole(LONG_CONTEXT))
    long = Workload(small, context=LONG_CONTEXT)
    put("asym_small_tps", fmt.rate(kv_read_asymptote(one, long)))
    fit = users_that_fit(one, long) or 1
    put("asym_small_users", whole(fit))
    put("asym_small_fit_tps", fmt.rate(_rate(one, replace(long, batch=fit))))
    split = step_split(one, replace(long, batch=fit))
    put("asym_small_kv_share", percent(split.kv_share))
    put("split_users", whole(SPLIT_USERS))


def shrink_rows(ctx: Context) -> list[tuple[str, Workload]]:
    """The shrinking levers, each a workload of the same model and context.

    The MHA and MQA rows are the 8B with its KV heads changed (32, one per query
    head; or 1): the same model otherwise, so only the cache differs.
    """
    small = ctx.specs.model(SMALL_MODEL)
    base = Workload(small, context=LONG_CONTEXT)
    mha = replace(small, kv_heads=small.attention_heads)
    mqa = replace(small, kv_heads=1)
    return [
        (f"as shipped: GQA, {small.kv_heads} KV heads, 16-bit", base),
        (f"full MHA: {small.attention_heads} KV heads", replace(base, model=mha)),
        ("MQA: 1 KV head", replace(base, model=mqa)),
        ("8-bit cache (fp8)", replace(base, kv_precision="fp8")),
        ("4-bit cache (int4, group scales)", replace(base, kv_precision="int4")),
        (
            f"{PREFIX_TOKENS:,}-token shared prefix",
            replace(base, shared_prefix=PREFIX_TOKENS),
        ),
    ]


def shrink_table(ctx: Context) -> Table:
    """Each lever's KV per user, users that fit and decode tokens/s at them, on one GPU."""
    one = _one(ctx)
    rows = []
    for label, workload in shrink_rows(ctx):
        users = users_that_fit(one, workload) or 0
        full = replace(workload, batch=max(users, 1))
        rows.append(
            (
                label,
                _gb(workload.kv_bytes_private),
                whole(users),
                fmt.rate(1 / decode_step(one, full).seconds) if users else "—",
                fmt.rate(_rate(one, full)) if users else "—",
            )
        )
    header = ("Cache", "KV per user", "Users that fit", "Tokens/s per user", "Tokens/s, all users")
    return Table(header, tuple(rows))


def _shrinking(ctx: Context, content: PageContent) -> None:
    put = content.put
    specs = ctx.specs
    small = specs.model(SMALL_MODEL)
    put("shrink_context", whole(LONG_CONTEXT))
    content.table("shrink-table", escape.table(shrink_table(ctx)))
    # Fewer KV heads: a real MHA model beside the GQA one.
    mha = specs.model(MHA_MODEL)
    put("mha_name", mha.name)
    put("mha_kv_heads", whole(mha.kv_heads))
    put("mha_kv_per_token", fmt.bytes_size(attention_cache(mha).bytes_per_token))
    put("small_kv_heads", whole(small.kv_heads))
    put("small_heads", whole(small.attention_heads))
    # Latent attention.
    mla = specs.model(MLA_MODEL)
    cache = attention_cache(mla)
    put("mla_name", mla.name)
    put("mla_kv_per_token", fmt.bytes_size(cache.bytes_per_token))
    put("mla_heads", whole(mla.attention_heads))
    put("mla_rank", whole(mla.mla.kv_lora_rank))
    put("mla_rope", whole(mla.mla.qk_rope_head_dim))
    put("mla_value_dim", whole(mla.mla.v_head_dim))
    put("mla_mha_kv_per_token", fmt.bytes_size(cache.full_mha_bytes_per_token))
    put("mla_ratio", f"{cache.shrink_factor:,.0f}")
    # Quantized caches.
    content.table("kv-formats", kv_formats_table().markdown())
    int4 = kv_format("int4")
    put("int4_effective", f"{int4.effective_bytes:g}")
    put("int4_group", whole(int4.group_size))
    put("int4_scale_bytes", f"{int4.scale_bytes:g}")
    put("int4_vs_bf16", f"{kv_format('bf16').effective_bytes / int4.effective_bytes:.2f}")
    # Sliding windows.
    gemma = specs.model(WINDOW_MODEL)
    windowed = kv_cache_bytes(gemma, WINDOW_CONTEXT)
    all_global = attention_cache(gemma).bytes_per_token * WINDOW_CONTEXT
    put("window_name", gemma.name)
    put("window_size", whole(gemma.sliding_window))
    put("window_local_layers", whole(local_layers(gemma)))
    put("window_layers", whole(gemma.layers))
    put("window_context", whole(WINDOW_CONTEXT))
    put("window_user_gb", _gb(windowed))
    put("window_full_gb", _gb(all_global))
    put("window_saving", percent(1 - windowed / all_global))
    # What the window buys on one GPU: the same model with every layer global, beside it.
    one = _one(ctx)
    for key, model in (("window", gemma), ("global", replace(gemma, sliding_window=0, layer_pattern=()))):
        workload = Workload(model, context=WINDOW_CONTEXT)
        users = users_that_fit(one, workload) or 0
        put(f"{key}_users", whole(users))
        put(f"{key}_tps", fmt.rate(_rate(one, replace(workload, batch=users))) if users else "no")


def kv_formats_table() -> Table:
    """Every KV format: value bytes, its scales, effective bytes per value (``b + scale / group``), source.

    Cells are Markdown already (escaped text, the source's URL as a link).
    """
    rows = []
    for kv in KV_FORMATS.values():
        scales = (
            "none"
            if kv.scale_bytes == 0
            else ("one per tensor" if kv.group_size == 0 else f"{kv.scale_bytes:g} B per {kv.group_size} values")
        )
        cells = (kv.name, f"{kv.value_bytes:g}", scales, f"{kv.effective_bytes:g}", kv.description)
        rows.append((*(escape.text(cell) for cell in cells), escape.linked(kv.source)))
    header = ("Format", "Bytes per value", "Scales", "Effective bytes", "Layout", "Source")
    return Table(header, tuple(rows))


def _paging_lengths() -> tuple[int, ...]:
    return lognormal_lengths(PAGING_REQUESTS, PAGING_MEDIAN, PAGING_SPREAD, PAGING_MAX)


def _paging(content: PageContent) -> None:
    put = content.put
    lengths = _paging_lengths()
    use = paging_use(lengths, PAGING_MAX)
    put("paging_requests", whole(PAGING_REQUESTS))
    put("paging_median", whole(PAGING_MEDIAN))
    put("paging_max", whole(PAGING_MAX))
    put("paging_mean", whole(sum(lengths) / len(lengths)))
    put("paging_block", whole(PAGED_BLOCK_TOKENS))
    put("paging_contiguous", percent(use.contiguous_utilization, 1))
    put("paging_paged", percent(use.paged_utilization, 1))
    measured = VLLM_PAPER_PRIOR_SYSTEMS_USED
    put("vllm_low", percent(measured.low, 1))
    put("vllm_high", percent(measured.high, 1))
    content.put_markdown("vllm_source", escape.linked(measured.source))


def _prefix(ctx: Context, content: PageContent) -> None:
    put = content.put
    small, one = ctx.specs.model(SMALL_MODEL), _one(ctx)
    shared = Workload(small, batch=PREFIX_USERS, context=PREFIX_CONTEXT, shared_prefix=PREFIX_TOKENS)
    put("prefix_users", whole(PREFIX_USERS))
    put("prefix_tokens", whole(PREFIX_TOKENS))
    put("prefix_context", whole(PREFIX_CONTEXT))
    put("prefix_saved_gb", _gb(prefix_sharing_savings(shared)))
    put("prefix_fit_plain", whole(users_that_fit(one, replace(shared, shared_prefix=0)) or 0))
    put("prefix_fit_shared", whole(users_that_fit(one, shared) or 0))


def swap_findings(ctx: Context) -> tuple[list[str], int]:
    """Where recomputing ever beats swapping, in words, and how many pairs were checked: every
    model on every GPU with a host link, each on the fewest GPUs that hold its 16-bit weights."""
    wins, checked = [], 0
    for gpu in ctx.specs.gpus.values():
        if gpu.host_link_bytes_per_s is None:
            continue
        for model in ctx.specs.models.values():
            hardware = Hardware(gpu, gpus_to_fit(Hardware(gpu), Workload(model)))
            checked += 1
            between = recompute_wins_between(hardware, model)
            if between is not None:
                start, end = between
                link = f"{gpu.host_link() / 1e9:,.0f} GB/s"
                even = f"{break_even_host_link(hardware, model) / 1e9:,.1f} GB/s"
                wins.append(
                    f"{model.name} on {_gpus(hardware)}, from {start:,} to {end - 1:,} tokens"
                    f" (its link, {link}, is below the break-even {even})"
                )
    return wins, checked


def _gpus(hardware: Hardware) -> str:
    return f"one {hardware.gpu.name}" if hardware.count == 1 else f"{hardware.count} × {hardware.gpu.name}"


def _swap(ctx: Context, content: PageContent) -> None:
    put = content.put
    small, one = ctx.specs.model(SMALL_MODEL), _one(ctx)
    choice = swap_or_recompute(one, small, SWAP_CONTEXT)
    put("host_link_gbps", whole(one.gpu.host_link() / 1e9))
    content.put_markdown("host_link_source", escape.linked(one.gpu.host_link_source or ""))
    put("swap_context", whole(SWAP_CONTEXT))
    put("swap_ms", ms(choice.swap_s))
    put("recompute_ms", ms(choice.recompute_s))
    put("swap_cheaper", {"swap": "swapping", "recompute": "recomputing"}[choice.cheaper])
    put("swap_factor", f"{max(choice.recompute_s, choice.swap_s) / min(choice.recompute_s, choice.swap_s):,.0f}")
    put("break_even_gbps", f"{break_even_host_link(one, small) / 1e9:,.1f}")
    wins, checked = swap_findings(ctx)
    put("swap_pairs", whole(checked))
    if wins:
        verdict = f"Recomputing wins in {len(wins)} of them: " + "; ".join(wins) + "."
    else:
        verdict = "Recomputing wins in none of them."
    put("swap_exceptions", verdict)
    # Per token: the swap's link time against the prefill's math.
    per_token_swap = attention_cache(small).bytes_per_token / one.gpu.host_link()
    put("swap_per_token_us", f"{per_token_swap * 1e6:.1f}")
    per_token_math = 2.0 * active_parameters(small) / one.peak_flops_per_s
    put("math_per_token_us", f"{per_token_math * 1e6:.1f}")


def _self_check(ctx: Context, content: PageContent) -> None:
    """Answers to the self-check questions and the interview's strong answer."""
    put = content.put
    specs = ctx.specs
    large = specs.model(LARGE_MODEL)
    # 1. The 70B's cache per token from its config.
    put("q_large_layers", whole(large.layers))
    put("q_large_kv_heads", whole(large.kv_heads))
    put("q_large_head_dim", whole(large.head_dim))
    put("q_large_bytes", whole(attention_cache(large).bytes_per_token))
    # 2. Users of the 70B on two H200s at the long context, 16-bit and 8-bit caches.
    two = Hardware(specs.gpu(BIG_GPU), 2)
    put("q_big_gpu_name", two.gpu.name)
    long = Workload(large, context=LONG_CONTEXT)
    put("q_h200_users_bf16", whole(users_that_fit(two, long) or 0))
    put("q_h200_users_fp8", whole(users_that_fit(two, replace(long, kv_precision="fp8")) or 0))
    put("q_h200_free_gb", _gb(two.kv_pool_bytes(weight_bytes(large, "bf16"))))
    put("q_h200_user_gb", _gb(long.kv_bytes_per_user))
    # 3. 4-bit with scales is not a quarter.
    int4 = kv_format("int4")
    put("q_int4_scale_share", percent(int4.scale_overhead, 1))
    put("q_int4_ratio", f"{kv_format('bf16').effective_bytes / int4.effective_bytes:.2f}")
    # 4. Throughput of the 8B at the long context, and the asymptote (quoted in _read_cost).
    small, one = specs.model(SMALL_MODEL), _one(ctx)
    fp8 = Workload(small, kv_precision="fp8", context=LONG_CONTEXT)
    fp8_users = users_that_fit(one, fp8) or 1
    put("q_fp8_users", whole(fp8_users))
    put("q_fp8_tps", fmt.rate(_rate(one, replace(fp8, batch=fp8_users))))
    put("q_fp8_asym", fmt.rate(kv_read_asymptote(one, fp8)))
    # The interview's strong answer: the 8B at the long context, per user and per step.
    put("iv_user_gb", _gb(Workload(small, context=LONG_CONTEXT).kv_bytes_per_user))
