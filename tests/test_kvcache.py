"""KV-cache numbers: published worked examples recomputed by the package, and hand-worked values.

Tolerances follow tests/test_golden.py: 1% where the source prints an exact
figure (only rounding may differ), 5% where it rounds by hand ("about").
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import pytest

from roofline import (
    GpuSpec,
    Hardware,
    SpecError,
    Workload,
    architecture,
    attention_cache,
    builtin_specs,
    decode_step,
    estimate,
    generation_work,
    gpus_to_fit,
    kv_bytes_per_value,
    kv_cache_bytes,
    kv_equals_weights_context,
    kv_read_asymptote,
    lognormal_lengths,
    paging_use,
    prefix_sharing_savings,
    recompute_wins_between,
    step_split,
    swap_cost,
    swap_or_recompute,
    total_parameters,
    users_that_fit,
    with_kv_heads,
)
from roofline.kvcache import (
    CUDA_COPY_ISSUE,
    ENGINE_PRACTICE_SOURCES,
    VLLM_PAPER_PRIOR_SYSTEMS_USED,
    break_even_host_link,
    swap_copies,
)

EXACT = 0.01
ABOUT = 0.05

SPECS = builtin_specs()
LLAMA_2_13B = SPECS.model("llama-2-13b")
GEMMA_2_9B = SPECS.model("gemma-2-9b")
DEEPSEEK = SPECS.model("deepseek-v3")
LLAMA_8B = SPECS.model("llama-3.1-8b")

#: The machine scaling-book's inference chapter uses for Llama 2 13B: 8 TPU v5e,
#: "128GiB of HBM, 6.5TiB/s of HBM bandwidth (0.82TiB/s each) and 1600TF/s".
#: Its step times divide by 8 x 0.82e12 B/s (32.7 GB / 4.98 ms = 6.57e12), so
#: the test builds that chip rather than reading tpu-v5e from gpus.toml (its links are the
#: v5e's: eight chips talk, though the book's step leaves the all-reduces out).
BOOK_TPU = GpuSpec(
    id="book-tpu-v5e",
    name="TPU v5e as scaling-book counts it",
    memory_bytes=16 * 2**30,
    bandwidth_bytes_per_s=0.82e12,
    dense_flops_per_s=MappingProxyType({"bf16": 200e12}),
    source="https://jax-ml.github.io/scaling-book/inference/",
    interconnect=SPECS.gpu("tpu-v5e").interconnect,
)
BOOK_SLICE = Hardware(BOOK_TPU, count=8, usable_fraction=1.0)


# -- Published worked examples ---------------------------------------------------------


def test_scaling_book_llama_2_13b_cache_of_one_8k_sequence() -> None:
    """scaling-book, "Transformer Inference", memory section: for LLaMA-13B a single
    8192-token sequence at bf16 caches 8192 x 40 x 128 x 40 x 2 x 2 = 6.7 GB. Exact (1%)."""
    assert kv_cache_bytes(LLAMA_2_13B, 8192) == pytest.approx(6.7e9, rel=EXACT)


def test_scaling_book_llama_2_13b_parameter_count() -> None:
    """scaling-book, same section: 8.5e9 FFW + 0.3e9 vocab + 4.2e9 attention = 13e9 parameters. Exact."""
    assert total_parameters(LLAMA_2_13B) == pytest.approx(13e9, rel=EXACT)
    assert architecture.attention_parameters(LLAMA_2_13B) * 40 == pytest.approx(4.2e9, rel=EXACT)


@pytest.mark.parametrize(
    ("batch", "step_ms", "tokens_per_s"),
    [(1, 4.98, 200.61), (8, 12.13, 659.30), (16, 20.30, 787.99), (64, 69.33, 923.13), (240, 249.09, 963.53)],
)
def test_scaling_book_llama_2_13b_step_times(batch: int, step_ms: float, tokens_per_s: float) -> None:
    """scaling-book, "Modeling throughput and latency for LLaMA 2-13B": at 8,192 tokens on 8 TPU v5e,
    step = (batch x KV per sequence + parameter bytes) / total bandwidth.

    The book rounds the weights to 26 GB and the cache to 6.7 GB; the package
    derives 26.03 GB and 6.71 GB, so 1% holds.
    """
    workload = Workload(LLAMA_2_13B, batch=batch, context=8192)
    step = decode_step(BOOK_SLICE, workload)
    assert step.bound == "memory"
    book_s = step.seconds - step.communication_s  # the book's step: bytes / bandwidth, no all-reduces
    assert book_s * 1e3 == pytest.approx(step_ms, rel=EXACT)
    assert batch / book_s == pytest.approx(tokens_per_s, rel=EXACT)


def test_scaling_book_llama_2_13b_runs_out_of_memory_beyond_16() -> None:
    """scaling-book, same table: "We OOM beyond batch size 16" in 128 GiB (all of it usable there)."""
    assert users_that_fit(BOOK_SLICE, Workload(LLAMA_2_13B, context=8192)) == 16


def test_scaling_book_gqa_makes_the_cache_five_times_smaller() -> None:
    """scaling-book, same section: 8 KV heads over 40 query heads make the cache 5x smaller,
    1.34 GB per sequence; batch 240 then steps in 52.99 ms for 4,529 tokens/s, and a batch of 64
    fits (85.76 GB of cache + 26 GB of weights < 128 GiB)."""
    grouped = dataclasses.replace(LLAMA_2_13B, kv_heads=8)
    assert kv_cache_bytes(grouped, 8192) == pytest.approx(1.34e9, rel=EXACT)
    big = Workload(grouped, batch=240, context=8192)
    step = decode_step(BOOK_SLICE, big)
    book_s = step.seconds - step.communication_s  # the book's step leaves the all-reduces out
    assert book_s * 1e3 == pytest.approx(52.99, rel=EXACT)
    assert 240 / book_s == pytest.approx(4529.34, rel=EXACT)
    assert users_that_fit(BOOK_SLICE, Workload(grouped, context=8192)) >= 64


def test_vllm_paper_opt_13b_cache_per_token_and_per_request() -> None:
    """vLLM paper (Kwon et al. 2023), Section 3: for OPT-13B one token's cache is
    2 (K and V) x 5120 (hidden) x 40 (layers) x 2 (bytes) = 800 KB, and a 2,048-token request
    up to 1.6 GB. Llama 2 13B has the same 40 layers of 5,120 with full MHA, so the same cache.

    800 KB is 800 KiB = 819,200 bytes exactly; 2,048 of them are 1.5625 GiB, printed "1.6 GB" (5%).
    """
    assert attention_cache(LLAMA_2_13B).bytes_per_token == 2 * 5120 * 40 * 2 == 800 * 1024
    assert kv_cache_bytes(LLAMA_2_13B, 2048) / 2**30 == pytest.approx(1.6, rel=ABOUT)


def test_deepseek_v2_paper_mla_equals_gqa_with_two_and_a_quarter_groups() -> None:
    """DeepSeek-V2 paper (arXiv 2405.04434), Table 1: MLA caches (d_c + d_h^R) l = 9/2 d_h l elements,
    "equal to GQA with only 2.25 groups"; MHA caches 2 n_h d_h l. With DeepSeek-V3's d_h = 128,
    n_h = 128, l = 61 (config.json), MLA is 2 x 128 / 4.5 = 56.9 times smaller than full MHA. Exact."""
    cache = attention_cache(DEEPSEEK)
    assert cache.kind == "MLA"
    assert cache.bytes_per_token == 4.5 * 128 * 61 * 2 == 2 * 2.25 * 128 * 61 * 2
    assert cache.full_mha_bytes_per_token == 2 * 128 * 128 * 61 * 2
    assert cache.shrink_factor == pytest.approx(2 * 128 / 4.5, rel=1e-12)


def test_gemma_2_report_parameter_count() -> None:
    """Gemma 2 report (arXiv 2408.00118), Table 2, 9B: 8,324,201,984 non-embedding parameters;
    the embedding is 256,000 x 3,584 = 917,504,000 (the config's vocabulary). With Gemma 2's four
    norms per layer (norms_per_layer = 4) the count is exact."""
    published = 917_504_000 + 8_324_201_984
    assert total_parameters(GEMMA_2_9B) == published


# -- Worked by hand from the specs --------------------------------------------------------


def test_gemma_local_layers_stop_at_the_window() -> None:
    """Gemma 2 9B, config.json: 42 layers alternating local (4,096) and global, 8 KV heads of 256:
    344,064 bytes per token. At 8,192 tokens, 21 layers hold 8,192 and 21 hold 4,096, an average of
    6,144: 344,064 x 6,144 = 2,113,929,216 bytes, three quarters of an all-global cache."""
    assert architecture.local_layers(GEMMA_2_9B) == 21
    assert attention_cache(GEMMA_2_9B).bytes_per_token == 2 * 42 * 8 * 256 * 2 == 344_064
    assert kv_cache_bytes(GEMMA_2_9B, 4096) == 344_064 * 4096
    assert kv_cache_bytes(GEMMA_2_9B, 8192) == 344_064 * 6144


def test_estimate_reads_and_stores_the_windowed_cache() -> None:
    """The estimate's memory and its decode read both use the capped cache, not context x bytes per token."""
    result = estimate("h100-sxm", "gemma-2-9b", batch=4, context=8192)
    assert result.memory.kv_bytes == 4 * 344_064 * 6144
    weights = result.memory.weights_bytes
    assert result.decode.bytes_moved == weights + 4 * 344_064 * 6144


@pytest.mark.parametrize(
    ("name", "effective"),
    # int4: 0.5 + (2-byte scale + 2-byte zero point) / 64; nvfp4: 0.5 + 1-byte E4M3 scale / 16;
    # fp8 and int8 keep one scale per tensor, nothing per token.
    [("bf16", 2.0), ("fp8", 1.0), ("int8", 1.0), ("int4", 0.5625), ("nvfp4", 0.5625)],
)
def test_kv_formats_count_their_scales(name: str, effective: float) -> None:
    assert kv_bytes_per_value(name) == effective
    assert attention_cache(LLAMA_8B, name).bytes_per_token == 2 * 32 * 8 * 128 * effective


def test_4_bit_kv_is_not_a_quarter_of_bf16() -> None:
    """The scales are why: 0.5625 / 2 = 28% of the bf16 cache, not 25%."""
    small = estimate("h100-sxm", "llama-3.1-8b", kv_precision="int4", context=8192).memory.max_batch
    large = estimate("h100-sxm", "llama-3.1-8b", context=8192).memory.max_batch
    assert small / large == pytest.approx(2 / 0.5625, rel=0.01)


def test_users_that_fit_on_h100_at_8k() -> None:
    """Llama 3.1 8B on one H100: 0.95 x (85.52e9 the driver reports - 0.5e9 workspace - 16.06e9)
    / (8192 x 131,072) = 61.0 -> 61 users."""
    assert users_that_fit(Hardware(SPECS.gpu("h100-sxm")), Workload(LLAMA_8B, context=8192)) == 61


def test_kv_read_equals_weights_read() -> None:
    """c = weight bytes read per step / KV bytes per token. For the 8B that is all 16,060,522,496 bytes
    less the untied input embedding, of which one row is read (issue 9): 128,256 x 4,096 x 2 =
    1,050,673,152 bytes out, 8,192 back, so 15,009,857,536 / 131,072 = 114,516 tokens. For Gemma past
    the window, only the 21 global layers grow (its embedding is tied: the head reads it whole)."""
    read = 16_060_522_496 - 128_256 * 4096 * 2 + 4096 * 2
    assert kv_equals_weights_context(Workload(LLAMA_8B)) == pytest.approx(read / 131_072, rel=1e-12)
    context = kv_equals_weights_context(Workload(GEMMA_2_9B))
    weights = architecture.weight_bytes(GEMMA_2_9B, "bf16")
    assert kv_cache_bytes(GEMMA_2_9B, context) == pytest.approx(weights, rel=1e-12)
    assert context > weights / 344_064


def test_throughput_approaches_the_kv_read_asymptote() -> None:
    """BW / (c x KV per token) = 3.35e12 / (8192 x 131,072) = 3,120 tokens/s; a big batch gets close."""
    hardware = Hardware(SPECS.gpu("h100-sxm"))
    asymptote = kv_read_asymptote(hardware, Workload(LLAMA_8B, context=8192))
    assert asymptote == pytest.approx(3.35e12 / (8192 * 131_072), rel=1e-12)
    rates = [b / decode_step(hardware, Workload(LLAMA_8B, batch=b, context=8192)).seconds for b in (1, 64, 4096)]
    assert rates == sorted(rates)
    assert rates[-1] < asymptote
    assert rates[-1] == pytest.approx(asymptote, rel=0.03)


def test_step_split_weights_against_cache() -> None:
    """32 users at 8,192 tokens on the 8B: 16.06 GB of weights less the untied embedding table
    (1.05 GB, of which the 32 tokens read 32 rows), so 15.01 GB, against 32 x 1.07 GB of cache."""
    split = step_split(Hardware(SPECS.gpu("h100-sxm")), Workload(LLAMA_8B, batch=32, context=8192))
    assert split.kv_bytes == 32 * 8192 * 131_072
    assert split.kv_share == pytest.approx(34.36 / (34.36 + 15.01), rel=0.001)
    assert split.weights_s + split.kv_s == pytest.approx(
        decode_step(Hardware(SPECS.gpu("h100-sxm")), Workload(LLAMA_8B, batch=32, context=8192)).seconds
    )


def test_generation_without_a_cache_is_quadratic() -> None:
    """Ignoring attention, cached work is 2M per token (M = multiplied parameters: the 8B's
    8,030,261,248 less its 525,336,576-parameter untied input embedding), and a recomputation
    over n tokens costs 2(M - H)n + 2H (only the last token goes through the H-parameter head):
    doubling the output doubles one and quadruples the other at a short prompt. Attention
    (a few percent at these lengths) grows faster in both, so "about" (5%)."""
    short, long = generation_work(LLAMA_8B, 1, 1000), generation_work(LLAMA_8B, 1, 2000)
    assert long.cached_flops / short.cached_flops == pytest.approx(2, rel=ABOUT)
    assert long.uncached_flops / short.uncached_flops == pytest.approx(4, rel=ABOUT)
    multiplied, head = 8_030_261_248 - 525_336_576, 525_336_576
    assert short.cached_flops == pytest.approx(2 * multiplied * 1000, rel=ABOUT)
    assert short.uncached_flops == pytest.approx(2 * (multiplied - head) * 1000 * 1001 / 2 + 2 * head * 1000, rel=ABOUT)


def test_paged_blocks_waste_less_than_the_vllm_paper_found_in_contiguous_systems() -> None:
    """A skewed length mix under a 2,048-token reservation uses about a fifth of it, inside
    the vLLM paper's measured 20.4-38.2%; 16-token blocks use over 95%."""
    lengths = lognormal_lengths(1000, median=300, spread=1.0, max_context=2048)
    use = paging_use(lengths, 2048)
    low, high = VLLM_PAPER_PRIOR_SYSTEMS_USED.low, VLLM_PAPER_PRIOR_SYSTEMS_USED.high
    assert low - 0.05 < use.contiguous_utilization < high
    assert use.paged_utilization > 0.95
    assert lengths == lognormal_lengths(1000, median=300, spread=1.0, max_context=2048)


def test_prefix_sharing_saves_all_but_one_copy() -> None:
    """(B - 1) x prefix x KV bytes per token: 63 x 2,000 x 131,072 = 16.5 GB for 64 users of the 8B."""
    workload = Workload(LLAMA_8B, batch=64, context=4096, shared_prefix=2000)
    assert prefix_sharing_savings(workload) == 63 * 2000 * 131_072
    plain = estimate("h100-sxm", "llama-3.1-8b", batch=64, context=4096)
    shared = estimate("h100-sxm", "llama-3.1-8b", batch=64, context=4096, shared_prefix=2000)
    assert plain.memory.kv_bytes - shared.memory.kv_bytes == 63 * 2000 * 131_072
    assert plain.decode.bytes_moved - shared.decode.bytes_moved == 63 * 2000 * 131_072
    assert shared.memory.max_batch > plain.memory.max_batch


def test_swap_against_recompute_on_h100() -> None:
    """4,096 tokens of the 8B's cache are 4096 x 131,072 = 0.54 GB: 8.4 ms over 64 GB/s in one piece.
    vLLM moves it block by block, one copy per 16-token block per layer for keys and for values:
    2 x 32 x 256 = 16,384 copies, 82 ms at the 5 us DualPath measured per cudaMemcpyAsync. The
    recompute is estimate's 4,096-token prefill, 2 x 7.5e9 x 4096 / 989.4e12 = 62 ms with attention.
    So recomputing wins (as vLLM found, PR 12) unless a copy costs under 62.2 / 16,384 = 3.8 us;
    with the copies batched, swapping wins, and recomputing would need a link under
    0.54 GB / 62.2 ms = 8.6 GB/s."""
    hardware = Hardware(SPECS.gpu("h100-sxm"))
    choice = swap_or_recompute(hardware, LLAMA_8B, 4096)
    assert choice.swap.copies == 2 * 32 * 4096 // 16
    assert choice.swap.link_s == pytest.approx(4096 * 131_072 / 64e9, rel=1e-12)
    assert choice.swap_s == pytest.approx(16_384 * 5e-6, rel=1e-12)
    assert choice.swap.bound == "copies"
    prefill = estimate("h100-sxm", "llama-3.1-8b", prompt=4096).prefill.seconds
    assert choice.recompute_s == prefill == pytest.approx(0.0622, rel=EXACT)
    assert choice.cheaper == "recompute"
    assert choice.break_even_copy_overhead_s == pytest.approx(prefill / 16_384, rel=1e-12)
    batched = swap_or_recompute(hardware, LLAMA_8B, 4096, copy_overhead_s=0)
    assert batched.cheaper == "swap"
    assert batched.recompute_s / batched.swap_s == pytest.approx(7.4, rel=EXACT)
    assert break_even_host_link(hardware, LLAMA_8B, 4096) == pytest.approx(4096 * 131_072 / prefill, rel=1e-12)
    assert recompute_wins_between(hardware, LLAMA_8B, copy_overhead_s=0) is None


@pytest.mark.parametrize(
    ("link", "overhead"), [(64e9, 5e-6), (1e9, 0.0)], ids=["block-by-block copies", "batched over a slow link"]
)
def test_recompute_range_is_where_recomputing_wins(link: float, overhead: float) -> None:
    """The range is found at whole blocks: recomputing wins at its first and last block and loses
    just outside them; the model's max_context caps the search."""
    hardware = Hardware(dataclasses.replace(SPECS.gpu("h100-sxm"), host_link_bytes_per_s=link))
    start, end = recompute_wins_between(hardware, LLAMA_8B, copy_overhead_s=overhead)
    last = end - 1

    def cheaper(context: int) -> str:
        return swap_or_recompute(hardware, LLAMA_8B, context, copy_overhead_s=overhead).cheaper

    assert start % 16 == 0 and last % 16 == 0 and start < last <= LLAMA_8B.max_context
    assert cheaper(start) == cheaper(last) == "recompute"
    assert cheaper(start - 16) == "swap"
    assert last == LLAMA_8B.max_context or cheaper(last + 16) == "swap"


def test_recompute_range_stops_at_the_limit() -> None:
    capped = recompute_wins_between(Hardware(SPECS.gpu("h100-sxm")), LLAMA_8B, limit=4096)
    assert capped is not None and capped[1] == 4097


def test_recompute_range_matches_a_scan_of_every_block() -> None:
    """The ternary search assumes swap minus prefill rises, peaks and falls; a scan of every block
    (coarsened to 64 tokens, up to 16k) agrees for every built-in model on three GPUs."""
    for gpu_id in ("h100-sxm", "b200", "mi300x"):
        gpu = SPECS.gpu(gpu_id)
        for model in SPECS.models.values():
            hardware = Hardware(gpu, gpus_to_fit(Hardware(gpu), Workload(model)))
            found = recompute_wins_between(hardware, model, block_tokens=64, limit=16_384)
            wins = [
                n * 64
                for n in range(1, 16_384 // 64 + 1)
                if swap_or_recompute(hardware, model, n * 64, block_tokens=64).cheaper == "recompute"
            ]
            expected = (wins[0], wins[-1] + 1) if wins else None
            assert found == expected, (gpu_id, model.id)
            assert wins == list(range(wins[0], wins[-1] + 1, 64)) if wins else True


def test_swap_copies_count_blocks_per_layer_and_tensor() -> None:
    """Gemma 2's local layers hold at most its 4,096-token window; DeepSeek-V3 copies one latent per
    layer, not keys and values; a tensor-parallel group issues as many copies per GPU as one GPU."""
    assert swap_copies(GEMMA_2_9B, 8192) == 2 * (21 * 512 + 21 * 256)
    assert swap_copies(DEEPSEEK, 100) == 61 * 7
    assert swap_copies(LLAMA_8B, 0) == 0
    two = swap_cost(Hardware(SPECS.gpu("h100-sxm"), 2), LLAMA_8B, 4096)
    one = swap_cost(Hardware(SPECS.gpu("h100-sxm")), LLAMA_8B, 4096)
    assert two.copies == one.copies and two.link_s == pytest.approx(one.link_s / 2)


def test_engine_practice_and_copy_cost_are_cited() -> None:
    assert CUDA_COPY_ISSUE.low == 5e-6 and CUDA_COPY_ISSUE.high == 7e-6
    assert "arxiv.org/abs/2602.21548" in CUDA_COPY_ISSUE.source
    assert any("vllm/pull/12" in source for source in ENGINE_PRACTICE_SOURCES)


def test_kv_heads_variant_changes_the_projections_too() -> None:
    """Full MHA for the 8B: K and V projections grow from 4096 x 1024 to 4096 x 4096 in 32 layers,
    2 x 32 x 4096 x 3072 = 805 M more parameters (1.61 GB at 16 bits); MQA has 2 x 32 x 4096 x 896
    = 235 M fewer."""
    mha, mqa = with_kv_heads(LLAMA_8B, 32), with_kv_heads(LLAMA_8B, 1)
    base = architecture.total_parameters(LLAMA_8B)
    assert architecture.total_parameters(mha) - base == 2 * 32 * 4096 * 3072
    assert base - architecture.total_parameters(mqa) == 2 * 32 * 4096 * 896
    with pytest.raises(SpecError, match="must divide the 32 query heads"):
        with_kv_heads(LLAMA_8B, 3)
    with pytest.raises(SpecError, match="latent"):
        with_kv_heads(DEEPSEEK, 1)


def test_every_gpu_cites_its_host_link() -> None:
    for gpu in SPECS.gpus.values():
        assert gpu.host_link() > 0
        assert gpu.host_link_source and "http" in gpu.host_link_source
