"""``prefill_after_cached``: the time to first token of what a prompt has left once part of it is cached."""

from __future__ import annotations

import math

import pytest

from roofline import Hardware, SpecError, Workload, builtin_specs, prefill_after_cached, prefill_pass
from roofline.performance import iteration_costs

SPECS = builtin_specs()
CASES = [
    ("h100-sxm", "llama-3.1-8b", "bf16", 1),
    ("h100-sxm", "llama-3.1-70b", "fp8", 4),
    ("a100-80gb", "mixtral-8x7b", "bf16", 1),
]


@pytest.mark.parametrize(("gpu", "model", "precision", "gpus"), CASES)
def test_with_nothing_cached_it_is_the_prefill_pass(gpu: str, model: str, precision: str, gpus: int) -> None:
    hardware = Hardware(SPECS.gpu(gpu), count=gpus)
    workload = Workload(SPECS.model(model), precision, prompt=2000)
    assert math.isclose(
        prefill_after_cached(hardware, workload, 0).seconds, prefill_pass(hardware, workload).seconds, rel_tol=1e-12
    )


def test_cached_tokens_add_their_reads_and_their_attention_pairs_only() -> None:
    hardware, model = Hardware(SPECS.gpu("h100-sxm")), SPECS.model("llama-3.1-8b")
    workload = Workload(model, prompt=500)
    costs = iteration_costs(hardware, workload)
    alone, after = prefill_after_cached(hardware, workload, 0), prefill_after_cached(hardware, workload, 8000)
    assert after.bytes_moved - alone.bytes_moved == pytest.approx(costs.kv_bytes_per_token * 8000)
    assert after.flops - alone.flops == pytest.approx(costs.prefill_attention_flops_per_pair * 500 * 8000)
    assert after.seconds > alone.seconds
    # Cheaper than prefilling the whole 8,500 tokens: the point of a prefix cache.
    assert after.seconds < prefill_pass(hardware, Workload(model, prompt=8500)).seconds


def test_a_negative_cache_is_refused_in_one_line() -> None:
    workload = Workload(SPECS.model("llama-3.1-8b"), prompt=10)
    with pytest.raises(SpecError, match="cached tokens must be 0 or more, got -1"):
        prefill_after_cached(Hardware(SPECS.gpu("h100-sxm")), workload, -1)
