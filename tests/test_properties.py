"""Invariants of the roofline model, checked with hypothesis over made-up chips and models."""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from roofline import Hardware, Workload, crossover_batch, decode_step, evaluate
from roofline.performance import decode_pass
from strategies import gpus, models

settings.register_profile("roofline", max_examples=150, deadline=None)
settings.load_profile("roofline")


contexts = st.integers(0, 131072)
batches = st.integers(1, 4096)
precisions = st.sampled_from(["fp32", "bf16", "fp8", "int4"])


@given(gpus(), models(), precisions, batches, contexts, st.floats(1.01, 10))
def test_more_bandwidth_never_slows_decode(gpu, model, precision, batch, context, factor) -> None:
    faster = dataclasses.replace(gpu, bandwidth_bytes_per_s=gpu.bandwidth_bytes_per_s * factor)
    workload = Workload(model, precision, batch=batch, context=context)
    assert decode_step(Hardware(faster), workload).seconds <= decode_step(Hardware(gpu), workload).seconds


@given(gpus(), models(), precisions, batches, batches, contexts)
def test_per_user_speed_never_rises_with_batch(gpu, model, precision, batch_a, batch_b, context) -> None:
    small, large = sorted((batch_a, batch_b))
    hardware = Hardware(gpu)
    slow = evaluate(hardware, Workload(model, precision, batch=large, context=context))
    fast = evaluate(hardware, Workload(model, precision, batch=small, context=context))
    assert slow.decode_tokens_per_s_per_user <= fast.decode_tokens_per_s_per_user * (1 + 1e-12)


@given(gpus(), models(), precisions, batches, batches, contexts)
def test_total_throughput_never_falls_with_batch_while_memory_fits(
    gpu, model, precision, batch_a, batch_b, context
) -> None:
    small, large = sorted((batch_a, batch_b))
    hardware = Hardware(gpu)
    bigger = evaluate(hardware, Workload(model, precision, batch=large, context=context))
    assume(bigger.memory.fits)
    smaller = evaluate(hardware, Workload(model, precision, batch=small, context=context))
    assert bigger.decode_tokens_per_s_total >= smaller.decode_tokens_per_s_total * (1 - 1e-12)


@given(gpus(), models(), precisions, st.integers(0, 4096))
def test_memory_and_compute_times_are_equal_at_the_crossover(gpu, model, precision, context) -> None:
    hardware = Hardware(gpu)
    workload = Workload(model, precision, context=context)
    crossover = crossover_batch(hardware, workload)
    assume(crossover is not None)
    at = decode_pass(hardware, workload, crossover)
    assert at.compute_s == pytest.approx(at.memory_s, rel=1e-9)
    below = decode_pass(hardware, workload, crossover * 0.99)
    above = decode_pass(hardware, workload, crossover * 1.01)
    assert below.bound == "memory"
    assert above.bound == "compute"


@given(gpus(), models(), precisions, st.integers(0, 4096), st.floats(1.01, 1e6))
def test_no_crossover_means_memory_bound_at_every_batch(gpu, model, precision, context, batch) -> None:
    hardware = Hardware(gpu)
    workload = Workload(model, precision, context=context)
    assume(crossover_batch(hardware, workload) is None)
    assert decode_pass(hardware, workload, batch).bound == "memory"


@given(gpus(), models(moe=False), st.integers(1, 64), st.integers(0, 131072))
def test_twice_the_bytes_decodes_at_half_the_speed_when_memory_bound(gpu, model, batch, context) -> None:
    hardware = Hardware(gpu)
    # Caches scale with the weights so every byte read doubles.
    light = evaluate(hardware, Workload(model, "bf16", "bf16", batch=batch, context=context))
    heavy = evaluate(hardware, Workload(model, "fp32", "fp32", batch=batch, context=context))
    assume(light.decode.bound == "memory" and heavy.decode.bound == "memory")
    ratio = light.decode_tokens_per_s_per_user / heavy.decode_tokens_per_s_per_user
    assert math.isclose(ratio, 2.0, rel_tol=1e-12)
