"""Disaggregation's closed forms (roofline/disagg.py): KV transfer, pool rates, goodput."""

from __future__ import annotations

from dataclasses import replace

import pytest

from roofline import Hardware, SpecError, Workload, builtin_specs, decode_step, iteration_costs, prefill_pass
from roofline import disagg as dg

SPECS = builtin_specs()
H100 = Hardware(SPECS.gpus["h100-sxm"])
LLAMA_8B = Workload(SPECS.models["llama-3.1-8b"])


def test_kv_transfer_is_prompt_times_kv_bytes_over_the_cited_link():
    transfer = dg.kv_transfer(H100, LLAMA_8B, 2000, "network")
    assert transfer.bytes == 2000 * 131072
    # one 400 Gb/s NIC per H100 (gpus.toml's interconnect): 50 GB/s
    assert transfer.seconds == pytest.approx(2000 * 131072 / 50e9)
    nvlink = dg.kv_transfer(H100, LLAMA_8B, 2000, "nvlink")
    assert nvlink.seconds == pytest.approx(2000 * 131072 / 450e9)
    pcie = dg.kv_transfer(H100, LLAMA_8B, 2000, "pcie")
    assert pcie.seconds == pytest.approx(2000 * 131072 / 64e9)


def test_kv_transfer_spreads_over_every_gpu_of_the_prefill_instance_and_adds_the_latency():
    two = dg.kv_transfer(replace(H100, count=2), LLAMA_8B, 2000, "network", latency_s=1e-3)
    assert two.seconds == pytest.approx(1e-3 + 2000 * 131072 / (2 * 50e9))


def test_kv_transfer_sits_beside_the_prefill_it_follows():
    transfer = dg.kv_transfer(H100, LLAMA_8B, 2000)
    assert transfer.prefill_s == prefill_pass(H100, Workload(LLAMA_8B.model, prompt=2000)).seconds
    # a 2,000-token transfer over a 50 GB/s NIC is a fraction of its own prefill
    assert transfer.transfer_to_prefill < 0.25
    layers = LLAMA_8B.model.layers
    assert transfer.exposed_layerwise_s == pytest.approx(
        max(transfer.seconds / layers, transfer.seconds - transfer.prefill_s * (layers - 1) / layers)
    )


def test_pool_rates_match_prefill_and_decode_instances_by_their_request_rates():
    rates = dg.pool_rates(H100, H100, LLAMA_8B, 512, 128, 64)
    prefill = prefill_pass(H100, Workload(LLAMA_8B.model, prompt=512)).seconds
    step = decode_step(H100, Workload(LLAMA_8B.model, batch=64, context=512 + 64)).seconds
    assert rates.prefill_requests_per_s == pytest.approx(1 / prefill)
    assert rates.decode_requests_per_s == pytest.approx(64 / (127 * step))
    assert rates.prefill_gpus_per_decode_gpu == pytest.approx(rates.decode_requests_per_s * prefill)
    # eight prompts in one iteration read the weights once: more prompts a second than one at a time
    batched = dg.pool_rates(H100, H100, LLAMA_8B, 100, 128, 64, prefill_batch=8)
    alone = dg.pool_rates(H100, H100, LLAMA_8B, 100, 128, 64)
    assert batched.prefill_requests_per_s > 2 * alone.prefill_requests_per_s
    # the eight prompts' pairs are 8 x 100 x 101 / 2, not 800 x 801 / 2: the same as eight prefills' FLOPs
    eight = 8 * prefill_pass(H100, Workload(LLAMA_8B.model, prompt=100)).flops
    costs = iteration_costs(H100, LLAMA_8B).iteration(0, 0, 800, 0, 8 * 100 * 101 / 2, 8)
    assert costs.flops == pytest.approx(eight)


def test_the_ttft_limited_rate_puts_the_m_d_1_mean_ttft_on_the_slo():
    prefill, slo, transfer = 0.05, 0.2, 0.01
    rate = dg.ttft_limited_rate(prefill, slo, transfer)
    load = rate * prefill
    assert prefill + rate * prefill**2 / (2 * (1 - load)) + transfer == pytest.approx(slo)
    assert dg.ttft_limited_rate(0.3, 0.2) == 0.0


def test_the_itl_limited_batch_is_the_largest_whose_step_meets_the_slo():
    batch = dg.itl_limited_batch(H100, LLAMA_8B, 1000, 200, 0.012, max_batch=1024)
    assert batch > 1

    def step(b):
        return decode_step(H100, Workload(LLAMA_8B.model, batch=b, context=1100)).seconds

    assert step(batch) <= 0.012 < step(batch + 1)


def test_goodput_is_the_smaller_pools_rate():
    goodput = dg.disaggregated_goodput(H100, H100, LLAMA_8B, 1000, 200, 2, 1, 0.5, 0.02)
    assert goodput.requests_per_s == min(goodput.prefill_pool_rate, goodput.decode_pool_rate)
    assert goodput.per_gpu == goodput.requests_per_s / 3


def test_bad_input_says_what_to_fix_in_one_line():
    with pytest.raises(SpecError, match="at least 1") as error:
        dg.disaggregated_goodput(H100, H100, LLAMA_8B, 100, 100, 0, 1, 1.0, 0.05)
    assert "--disaggregate 1:1" in str(error.value)
    with pytest.raises(SpecError, match="positive number of seconds"):
        dg.ttft_limited_rate(0.1, 0)
    with pytest.raises(SpecError, match="positive number of seconds"):
        dg.itl_limited_batch(H100, LLAMA_8B, 100, 100, 0.0)
    with pytest.raises(SpecError, match="unknown link"):
        dg.kv_transfer(H100, LLAMA_8B, 100, "carrier-pigeon")


def test_distserves_worked_transfer_opt_175b_2048_tokens_over_eight_pcie_5_links():
    # DistServe's blog (hao-ai-lab.github.io, content/blogs/distserve/index.md, "KV cache transfer"):
    # "2048 tokens * (4.5 MB/token) / (64GB/s * 8) = 17.6 ms" for OPT-175B. OPT-175B's cache is
    # 2 x 96 layers x 96 heads x 128 x 2 bytes = 4,718,592 bytes a token, 4.5 MiB; the blog's
    # 17.6 ms comes out in binary units (64 GiB/s a PCIe 5.0 x16 link).
    llama = SPECS.models["llama-3.1-8b"]
    opt = replace(llama, layers=96, hidden_size=12288, attention_heads=96, kv_heads=96, head_dim=128)
    a100 = SPECS.gpus["a100-80gb"]
    pcie5 = replace(a100, host_link_bytes_per_s=64 * 2**30)
    transfer = dg.kv_transfer(Hardware(pcie5, count=8), Workload(opt), 2048, "pcie")
    assert transfer.bytes == 2048 * 4_718_592
    assert transfer.seconds == pytest.approx(17.6e-3, rel=0.005)
    # in decimal units (64e9 bytes/s a link) the same transfer is 7 % longer
    decimal = dg.kv_transfer(Hardware(replace(a100, host_link_bytes_per_s=64e9), count=8), Workload(opt), 2048, "pcie")
    assert decimal.seconds == pytest.approx(18.87e-3, rel=0.001)


@pytest.mark.parametrize(
    ("gpus", "nic_bytes_per_s", "measured_bytes_per_s"),
    [(8, 50e9, 190e9), (4, 25e9, 87e9)],
    ids=["8x400Gbps", "4x200Gbps"],
)
def test_mooncakes_40_gb_transfer_takes_at_least_the_ceilings_time(gpus, nic_bytes_per_s, measured_bytes_per_s):
    # Mooncake's README (kvcache-ai/Mooncake, "Transfer Engine"): 40 GB, "the KVCache generated by 128k
    # tokens in the LLaMA3-70B model", moved at 87 GB/s over 4 x 200 Gbps and 190 GB/s over 8 x 400 Gbps
    # RoCE. The cache is 2 x 80 layers x 8 heads x 128 x 2 bytes = 320 KiB a token, 40 GiB for 131,072.
    llama_70b = Workload(SPECS.models["llama-3.1-70b"])
    gpu = SPECS.gpus["h100-sxm"]
    nics = replace(gpu, interconnect=replace(gpu.interconnect, scale_out_bytes_per_s=nic_bytes_per_s))
    transfer = dg.kv_transfer(Hardware(nics, count=gpus), llama_70b, 131072, "network")
    assert transfer.bytes == 40 * 2**30
    measured_s = transfer.bytes / measured_bytes_per_s
    # the ceiling's line rate is a true bound: the measured transfer is slower (1.15x and 2.1x)
    assert transfer.seconds < measured_s < 2.2 * transfer.seconds
