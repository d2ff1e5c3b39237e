"""Issue 38: ``simulate --prefix-tokens/--prefix-share/--prefix-groups``: a prefix cache with its own
share of the KV blocks and LRU eviction, in the one serving simulator (roofline/serving.py)."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from roofline import Hardware, ServingConfig, Workload, builtin_specs, load_calibration
from roofline.fleet import simulate_fleet
from roofline.prefixcache import hit_saving, lru_hit_rate
from roofline.serving import Lengths, draw_traffic, finished_run, simulate
from support import run_cli

SPECS = builtin_specs()
CEILING = Hardware(SPECS.gpu("h100-sxm"))
EXPECTED = replace(CEILING, costs=load_calibration().cost_model(CEILING.gpu))
WORKLOAD = Workload(SPECS.model("llama-3.1-8b"))
BASE = ["--gpu", "h100-sxm", "--model", "llama-3.1-8b"]
#: Requests far apart (one every 5 s on average), so each prefill runs alone: the TTFT is its prefill.
QUIET = ServingConfig(rate=0.2, requests=200, prompt=Lengths(2000, 2000), output=Lengths(16, 16))


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``roofline simulate`` with ``BASE`` and ``args`` (``support.run_cli``)."""
    return run_cli(capsys, "simulate", *BASE, *args)


@pytest.mark.parametrize("hardware", [CEILING, EXPECTED], ids=["ceiling", "expected"])
def test_a_ninety_percent_shared_prefix_saves_the_ttft_the_arithmetic_predicts(hardware):
    plain = simulate(hardware, WORKLOAD, QUIET)
    cached = simulate(hardware, WORKLOAD, replace(QUIET, prefix_share=0.9))
    # 90 % of 2,000 is 1,800 tokens: 112 whole blocks, 1,792 tokens, are cached.
    arithmetic = hit_saving(hardware, WORKLOAD, 2000, 1792)
    assert cached.prefix_hits == cached.prefix_lookups - 1 == 199  # only the first request misses
    saved = plain.ttft_mean_s - cached.ttft_mean_s
    assert saved == pytest.approx(cached.prefix_hit_rate * arithmetic.saved_s, rel=0.05)
    # the hit skips 90 % of the tokens but saves less of the time: the rest attends over the prefix
    assert 0.75 < arithmetic.saved_fraction < 0.9


def test_the_hit_rate_of_uniform_groups_is_the_share_of_groups_the_cache_holds():
    config = ServingConfig(
        rate=20.0,
        requests=3000,
        prompt=Lengths(1000, 1500),
        output=Lengths(50, 200),
        prefix_tokens=800,
        prefix_groups=50,
        prefix_cache_share=0.05,
    )
    result = simulate(CEILING, WORKLOAD, config)
    slots = result.prefix_cache_blocks // (800 // 16)
    assert slots < 50  # the cache holds fewer prefixes than there are groups: LRU evicts
    assert result.prefix_evictions > 0
    assert result.prefix_hit_rate == pytest.approx(lru_hit_rate(50, slots), abs=0.03)


def test_the_cache_takes_its_blocks_from_the_running_batch_and_counts_the_tokens_it_saves():
    plain = simulate(CEILING, WORKLOAD, QUIET)
    cached = simulate(CEILING, WORKLOAD, replace(QUIET, prefix_tokens=1800, prefix_cache_share=0.2))
    assert cached.prefix_cache_blocks == math.floor(0.2 * plain.kv_blocks)
    assert cached.kv_blocks == plain.kv_blocks - cached.prefix_cache_blocks
    assert cached.prefill_tokens_saved == cached.prefix_hits * 1792


def test_without_the_prefix_options_the_json_has_no_prefix_keys_and_the_run_is_unchanged():
    plain = simulate(CEILING, WORKLOAD, QUIET).to_dict()
    assert "prefix_hit_rate" not in plain
    zero_share = simulate(CEILING, WORKLOAD, replace(QUIET, prefix_share=0.0)).to_dict()
    assert zero_share == plain


def test_chunked_prefill_and_replicas_keep_the_cache():
    config = replace(QUIET, rate=5.0, policy="chunked", token_budget=512, prefix_share=0.9, prefix_groups=4)
    chunked = simulate(CEILING, WORKLOAD, config)
    assert chunked.prefix_hit_rate > 0.9
    assert chunked.ttft_mean_s < simulate(CEILING, WORKLOAD, replace(config, prefix_share=None)).ttft_mean_s
    fleet = simulate_fleet(CEILING, WORKLOAD, config, replicas=2, warmup=10)
    # each replica has its own cache, so each misses every group once
    assert fleet.prefix_lookups == 210
    assert fleet.prefix_lookups - fleet.prefix_hits >= 2 * 4 - 1


def test_the_cli_reports_the_hit_rate_and_tokens_saved(capsys):
    args = ("--prompt", "2000", "--output", "16", "--rate", "0.2", "--requests", "50", "--prefix-share", "0.9")
    status, out, _ = _cli(capsys, *args, "--json", "--costs", "expected")
    assert status == 0
    figures = json.loads(out)
    assert figures["prefix_hit_rate"] == 49 / 50
    assert figures["prefill_tokens_saved"] == 49 * 1792
    assert figures["expected"]["prefix_hit_rate"] == 49 / 50
    # the best-case TTFT is the prefill after a hit, below every simulated TTFT
    assert figures["best_case"]["ttft_mean_s"] <= figures["ttft_p50_s"]
    status, out, _ = _cli(capsys, *args)
    assert "prefix cache           49 of 50 prefills hit (98.0%), 87,808 prompt tokens not prefilled" in out


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--prompt", "2000", "--prefix-tokens", "3000"), "--prefix-tokens: a shared prefix of 3,000 tokens is longer"),
        (("--prefix-share", "1.5"), "--prefix-share: must be between 0 and 1"),
        (("--prefix-share", "-0.1"), "--prefix-share: must be between 0 and 1"),
        (("--prefix-tokens", "8"), "fills no whole 16-token block"),
        (("--prompt", "100", "--prefix-share", "0.001"), "a shared prefix of 0 tokens fills no whole 16-token block"),
        (("--prefix-tokens", "100", "--prefix-share", "0.5"), "not both"),
        (("--prefix-tokens", "100", "--policy", "static"), "prefix caching is simulated with paged admission"),
        (("--prefix-tokens", "500", "--prefix-cache-share", "0.000001"), "hold no whole prefix"),
    ],
)
def test_bad_prefix_input_is_one_line_naming_the_fix(capsys, args, words):
    status, out, err = _cli(capsys, *args)
    assert status != 0 and not out
    line = err.strip().splitlines()[-1]
    assert words in line


@pytest.mark.parametrize("policy", ["continuous", "chunked"])
@pytest.mark.parametrize(
    ("prefix", "prompt"), [(512, Lengths(512, 512)), (500, Lengths(500, 900)), (256, Lengths(300, 2000))]
)
def test_every_block_comes_back_when_the_run_ends_even_through_preemptions(policy, prefix, prompt):
    # A cache so small that paged admission preempts thousands of times; a prefix that is the whole
    # prompt (its last block is then computed, not cached), or shorter than some prompts.
    hardware = replace(CEILING, usable_fraction=0.03)
    config = ServingConfig(
        rate=math.inf,
        requests=2000,
        prompt=prompt,
        output=Lengths(16, 1024),
        max_batch=256,
        policy=policy,
        prefix_tokens=prefix,
        prefix_groups=7,
        prefix_cache_share=0.2,
    )
    run = finished_run(hardware, WORKLOAD, config)
    assert run.preemptions > 1000 and run.prefix_hits > 0
    assert run.free_blocks == run.capacity  # nothing leaked, nothing freed twice
    assert sum(run.shared) == 0


def test_the_token_hit_rate_is_the_share_vllm_logs_and_sits_below_the_prefill_rate(capsys):
    """Two hit rates: prefills that found their prefix, and prompt tokens served from the cache over
    the prompt tokens looked up (vLLM's logged "Prefix cache hit rate", PrefixCacheStats' token counts).
    49 of 50 prompts of 2,000 tokens hit a 1,800-token prefix whose 112 whole blocks (1,792 tokens)
    are cached: 49 x 1,792 of 50 x 2,000 tokens."""
    args = ("--prompt", "2000", "--output", "16", "--rate", "0.2", "--requests", "50", "--prefix-share", "0.9")
    status, out, _ = _cli(capsys, *args, "--json")
    assert status == 0
    figures = json.loads(out)
    assert figures["prefix_tokens_queried"] == 50 * 2000 and figures["prefix_tokens_hit"] == 49 * 1792
    assert figures["prefix_token_hit_rate"] == 49 * 1792 / (50 * 2000) < figures["prefix_hit_rate"]
    status, out, _ = _cli(capsys, *args)
    assert "87,808 prompt tokens not prefilled; 87.8% of the requests' prompt tokens were cached" in out
    assert "(recomputes left out: the share vLLM logs as its hit rate)" in out
    plain = json.loads(_cli(capsys, "--requests", "20", "--json")[1])
    assert "prefix_token_hit_rate" not in plain and "prefix_tokens_queried" not in plain


def test_the_token_hit_rate_counts_each_requests_own_lookup_not_its_recomputes(capsys):
    """vLLM records a preempted request's lookup apart (PrefixCacheStats.record(preempted=True)) and
    leaves it out of its logged rate; so does the token rate here, where the prefill counts keep it."""
    args = ("--usable-fraction", "0.03", "--prompt", "512:2048", "--output", "256:1024", "--rate", "20")
    status, out, _ = _cli(capsys, *args, "--prefix-share", "0.5", "--requests", "200", "--json")
    assert status == 0
    figures = json.loads(out)
    assert figures["preemptions"] > 0 and figures["prefix_lookups"] > 200  # recomputes looked up again
    config = ServingConfig(requests=200, rate=20.0, prompt=Lengths(512, 2048), output=Lengths(256, 1024))
    _, prompts, _ = draw_traffic(config, 200)
    assert figures["prefix_tokens_queried"] == sum(prompts)  # each request's prompt once
    assert figures["prefix_tokens_hit"] <= figures["prefill_tokens_saved"]


def test_replicas_sum_the_tokens_looked_up():
    config = replace(QUIET, requests=60, prefix_share=0.5, prefix_groups=3)
    fleet = simulate_fleet(CEILING, WORKLOAD, config, replicas=3)
    assert fleet.prefix_tokens_queried == 60 * 2000
    assert fleet.prefix_token_hit_rate == fleet.prefix_tokens_hit / fleet.prefix_tokens_queried
