"""Prefix caching's closed forms (roofline/prefixcache.py): a hit's saving, the cache's memory, its hit rate."""

from __future__ import annotations

import random
from collections import OrderedDict

import pytest

from roofline import Hardware, SpecError, Workload, architecture, builtin_specs, prefill_pass
from roofline import prefixcache as pc
from roofline.performance import prefill_after_cached

SPECS = builtin_specs()
H100 = Hardware(SPECS.gpus["h100-sxm"])
LLAMA_8B = Workload(SPECS.models["llama-3.1-8b"])


def test_a_hit_leaves_the_prefill_of_the_uncached_tail_and_the_full_prefill_is_chapter_1s():
    saving = pc.hit_saving(H100, LLAMA_8B, 2000, 1800)
    assert saving.full_s == prefill_pass(H100, Workload(LLAMA_8B.model, prompt=2000)).seconds
    assert saving.after_s == prefill_after_cached(H100, Workload(LLAMA_8B.model, prompt=200), 1800).seconds
    assert saving.saved_s == pytest.approx(saving.full_s - saving.after_s)


def test_the_flops_a_hit_saves_are_the_cached_tokens_layers_and_their_attention_pairs():
    model = LLAMA_8B.model
    saving = pc.hit_saving(H100, LLAMA_8B, 2000, 1800)
    layers = 2 * architecture.multiplied_parameters(model) - 2 * architecture.output_head_parameters(model)
    pair = architecture.attention_flops_per_cached_token(model, latent=False)
    # the whole prompt's pairs 2000*2001/2 less the tail's 200*1800 + 200*201/2
    pairs_saved = 2000 * 2001 / 2 - (200 * 1800 + 200 * 201 / 2)
    assert saving.saved_flops == pytest.approx(1800 * layers + pair * pairs_saved, rel=1e-12)
    assert saving.full_flops == pytest.approx(architecture.prefill_flops(model, 2000), rel=1e-12)


def test_a_ninety_percent_hit_saves_less_than_ninety_percent_of_the_prefill_time():
    saving = pc.hit_saving(H100, LLAMA_8B, 2000, 1800)
    assert saving.hit_share == 0.9
    # the tail still attends over the cached 1,800 tokens: the saving is below the token share
    assert 0.8 < saving.saved_fraction < 0.9


def test_cached_tokens_of_a_share():
    assert pc.cached_tokens(2000, 0.9) == 1800
    assert pc.cached_tokens(101, 0.5) == 50


def test_cache_memory_counts_whole_blocks_and_takes_users_from_the_batch():
    kv_per_token = LLAMA_8B.kv_bytes_per_token  # 2 * 32 layers * 8 heads * 128 * 2 bytes
    assert kv_per_token == 131072
    memory = pc.cache_memory(H100, Workload(LLAMA_8B.model, context=2000), 1800, 10)
    assert memory.prefix_bytes == 10 * 113 * 16 * kv_per_token  # ceil(1800 / 16) = 113 blocks each
    assert memory.users_without_cache == int(memory.pool_bytes // (2000 * kv_per_token))
    assert memory.users_with_cache == int((memory.pool_bytes - memory.prefix_bytes) // (2000 * kv_per_token))
    assert memory.users_with_cache < memory.users_without_cache


def test_prefixes_that_fit_in_a_share_of_the_pool():
    pool = pc.cache_memory(H100, Workload(LLAMA_8B.model, context=16), 16, 1).pool_bytes
    blocks = int(pool // (16 * 131072))
    assert pc.prefixes_that_fit(H100, LLAMA_8B, 1800, 0.2) == int(0.2 * blocks) // 113


def test_lru_hit_rate_is_the_share_of_groups_the_cache_holds():
    assert pc.lru_hit_rate(10, 5) == 0.5
    assert pc.lru_hit_rate(10, 40) == 1.0
    assert pc.lru_hit_rate(10, 0) == 0.0


def test_lru_hit_rate_over_a_cold_run_counts_each_groups_first_request_as_a_miss():
    # two groups, two requests: the first misses; the second hits half the time
    assert pc.lru_hit_rate_over_run(2, 2, 2) == pytest.approx(0.25)


@pytest.mark.parametrize(("groups", "slots"), [(10, 4), (8, 8), (5, 9)])
def test_lru_hit_rate_matches_an_lru_cache_fed_uniform_groups(groups, slots):
    rng = random.Random(7)
    cache: OrderedDict[int, None] = OrderedDict()
    hits, warm, requests = 0, 2000, 40_000
    for i in range(warm + requests):
        group = rng.randrange(groups)
        if group in cache:
            cache.move_to_end(group)
            hits += i >= warm
        else:
            cache[group] = None
            if len(cache) > slots:
                cache.popitem(last=False)
    assert hits / requests == pytest.approx(pc.lru_hit_rate(groups, slots), abs=0.01)


def test_bad_input_says_what_to_fix_in_one_line():
    with pytest.raises(SpecError, match="longer than the prompt") as error:
        pc.hit_saving(H100, LLAMA_8B, 100, 200)
    assert "\n" not in str(error.value)
    with pytest.raises(SpecError, match="between 0 and 1"):
        pc.cached_tokens(100, 1.5)
    with pytest.raises(SpecError, match="between 0 and 1"):
        pc.check_share(-0.1)
    with pytest.raises(SpecError, match="no token to compute"):
        pc.hit_saving(H100, LLAMA_8B, 100, 100)


@pytest.mark.parametrize("gpus", [1, 8])
def test_a_95_percent_hit_on_a_128k_prompt_saves_mooncakes_92_percent_of_the_prefill(gpus):
    # Mooncake (FAST'25 paper, p. 12, as the course's research brief quotes it; the PDF was not re-read
    # for this test): a 128k-token input with a 95 % prefix-cache ratio cut LLaMA3-70B's prefill time
    # by 92 %. Llama 3.1 70B has LLaMA3-70B's shape; 95 % of 131,072 is 124,518 tokens, 124,512 in whole
    # blocks. The saving is below 95 %: the uncached 5 % attends over the whole cached prefix.
    hardware = Hardware(SPECS.gpus["h100-sxm"], count=gpus)
    saving = pc.hit_saving(hardware, Workload(SPECS.models["llama-3.1-70b"]), 131072, 124512)
    assert saving.saved_fraction == pytest.approx(0.92, abs=0.01)
    assert 1 - saving.after_flops / saving.full_flops == pytest.approx(0.9235, abs=1e-4)
