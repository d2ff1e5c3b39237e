"""Invariants of the KV-cache model, checked with hypothesis over made-up chips, models and lengths."""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

import strategies
from roofline import (
    GpuSpec,
    Hardware,
    ModelSpec,
    Workload,
    architecture,
    decode_step,
    evaluate,
    generation_work,
    kv_cache_bytes,
    kv_equals_weights_context,
    kv_read_asymptote,
    paging_use,
    users_that_fit,
)
from roofline.kvcache import weights_read_bytes
from roofline.kvformats import KV_FORMAT_NAMES
from strategies import gpus  # made-up chips, with a host link

settings.register_profile("roofline-kv", max_examples=150, deadline=None)
settings.load_profile("roofline-kv")


def models(*, windowed: bool | None = None) -> st.SearchStrategy:
    """Dense models, windowed or not, at sizes where the KV cache and the weights both matter."""
    return strategies.models(moe=False, windowed=windowed, max_layers=64, max_hidden=8192, max_ffn=32768)


kv_formats = st.sampled_from(KV_FORMAT_NAMES)
contexts = st.integers(0, 262144)


#: Weights too big for the memory (found by hypothesis): not even an empty context fits a user.
TOO_BIG = (
    GpuSpec(
        id="made-up",
        name="Made-up GPU",
        memory_bytes=8e9,
        bandwidth_bytes_per_s=100e9,
        dense_flops_per_s=MappingProxyType({"bf16": 50e12}),
        source="test",
    ),
    ModelSpec(
        id="made-up",
        name="Made-up model",
        layers=39,
        hidden_size=1318,
        attention_heads=128,
        kv_heads=8,
        head_dim=256,
        ffn_size=64,
        vocab_size=4099,
        tied_embeddings=False,
        source="test",
    ),
)


@given(gpus(), models(), kv_formats, contexts, contexts)
@example(*TOO_BIG, "fp32", 0, 0)
def test_users_that_fit_never_rise_with_context(gpu, model, kv_format, context_a, context_b) -> None:
    short, long = sorted((context_a, context_b))
    hardware = Hardware(gpu)
    shorter = Workload(model, kv_precision=kv_format, context=short)
    at_short = users_that_fit(hardware, shorter)
    at_long = users_that_fit(hardware, Workload(model, kv_precision=kv_format, context=long))
    if architecture.weight_bytes(model, shorter.weight_precision) > hardware.usable_memory_bytes:
        # No user fits at any context, an empty one included.
        assert at_short == at_long == 0
        return
    # None means no limit (nothing cached), which only an empty context gives.
    assert (at_short is None) == (short == 0)
    if at_short is not None:
        assert at_long <= at_short


@given(models(windowed=True), kv_formats, contexts)
def test_a_window_never_increases_the_cache(model, kv_format, context) -> None:
    unwindowed = dataclasses.replace(model, sliding_window=0, layer_pattern=())
    assert kv_cache_bytes(model, context, kv_format) <= kv_cache_bytes(unwindowed, context, kv_format)
    if context <= model.sliding_window:
        assert kv_cache_bytes(model, context, kv_format) == kv_cache_bytes(unwindowed, context, kv_format)


@given(models(), kv_formats, contexts, contexts)
def test_the_cache_never_shrinks_as_the_context_grows(model, kv_format, context_a, context_b) -> None:
    short, long = sorted((context_a, context_b))
    assert kv_cache_bytes(model, short, kv_format) <= kv_cache_bytes(model, long, kv_format)


@given(models(), kv_formats, contexts)
def test_the_cache_is_the_sum_over_layers_of_the_tokens_each_keeps(model, kv_format, context) -> None:
    per_layer_token = architecture.kv_cache_bytes_per_token(model, kv_format) / model.layers
    kinds = model.layer_pattern or ("global",)
    kept = sum(
        min(context, model.sliding_window) if kinds[layer % len(kinds)] == "local" else context
        for layer in range(model.layers)
    )
    assert kv_cache_bytes(model, context, kv_format) == pytest.approx(kept * per_layer_token, rel=1e-12)


@given(
    st.lists(st.integers(1, 32768), min_size=1, max_size=200),
    st.integers(1, 512),
    st.integers(1, 512),
)
def test_paged_utilization_is_at_least_contiguous(lengths, blocks_per_request, block) -> None:
    # A maximum context that is a whole number of blocks, as real ones are (2,048 = 128 x 16);
    # otherwise the last block of the longest request can overshoot the contiguous reservation.
    max_context = blocks_per_request * block
    assume(max(lengths) <= max_context)
    use = paging_use(lengths, max_context, block)
    assert use.paged_utilization >= use.contiguous_utilization
    assert use.paged_utilization <= 1.0
    # Each request wastes less than one block.
    assert use.paged_reserved - use.tokens < len(lengths) * block


@given(models(), st.integers(1, 300), st.integers(1, 300))
def test_generation_work_closed_forms_match_a_step_by_step_sum(model, prompt, output) -> None:
    def forward(tokens: int) -> float:  # a pass over the sequence that predicts its next token
        return architecture.prefill_flops(model, tokens)

    cached = forward(prompt) + sum(
        architecture.decode_flops_per_token(model, prompt + step) for step in range(1, output)
    )
    uncached = sum(forward(prompt + step) for step in range(output))
    work = generation_work(model, prompt, output)
    assert work.cached_flops == pytest.approx(cached, rel=1e-9)
    assert work.uncached_flops == pytest.approx(uncached, rel=1e-9)
    assert work.uncached_flops >= work.cached_flops * (1 - 1e-12)


@given(models(), kv_formats, st.integers(1, 512))
def test_kv_equals_weights_context_is_where_the_reads_match(model, kv_format, batch) -> None:
    workload = Workload(model, kv_precision=kv_format, batch=batch)
    context = kv_equals_weights_context(workload)
    weights = weights_read_bytes(workload)  # what one step reads: an untied embedding gives one row a user
    if context is None:  # every layer local: the cache stops growing below the weights
        assert batch * kv_cache_bytes(model, 10**12, kv_format) < weights
    else:
        assert batch * kv_cache_bytes(model, context, kv_format) == pytest.approx(weights, rel=1e-9)


@given(gpus(), models(), kv_formats, st.integers(1, 131072), st.integers(1, 1 << 16))
def test_total_tokens_per_s_stay_below_the_kv_read_asymptote(gpu, model, kv_format, context, batch) -> None:
    hardware = Hardware(gpu)
    workload = Workload(model, kv_precision=kv_format, batch=batch, context=context)
    assert batch / decode_step(hardware, workload).seconds < kv_read_asymptote(hardware, workload)


@given(gpus(), models(), kv_formats, st.integers(1, 65536), st.integers(1, 256), st.data())
def test_a_shared_prefix_never_costs_memory_or_reads(gpu, model, kv_format, context, batch, data) -> None:
    prefix = data.draw(st.integers(0, context))
    hardware = Hardware(gpu)
    plain = evaluate(hardware, Workload(model, kv_precision=kv_format, batch=batch, context=context))
    shared = evaluate(
        hardware, Workload(model, kv_precision=kv_format, batch=batch, context=context, shared_prefix=prefix)
    )
    assert shared.memory.kv_bytes <= plain.memory.kv_bytes * (1 + 1e-12)
    assert shared.decode.bytes_moved <= plain.decode.bytes_moved * (1 + 1e-12)
    if batch == 1:
        assert shared.memory.kv_bytes == pytest.approx(plain.memory.kv_bytes, rel=1e-12)
    if plain.memory.max_batch is not None and shared.memory.max_batch is not None:
        assert shared.memory.max_batch >= plain.memory.max_batch
