"""Hypothesis strategies for made-up chips and models, shared by the property tests.

Ranges are wide on purpose: they cover every real spec in ``roofline/data`` and far
beyond, so an invariant that holds here does not depend on today's hardware.
"""

from __future__ import annotations

from types import MappingProxyType

from hypothesis import assume
from hypothesis import strategies as st

from roofline import GpuSpec, ModelSpec, MoeSpec


@st.composite
def gpus(draw: st.DrawFn) -> GpuSpec:
    """A chip with 16-bit math, memory, bandwidth and a host link, each within orders of magnitude of real ones."""
    return GpuSpec(
        id="made-up",
        name="Made-up GPU",
        memory_bytes=draw(st.floats(8e9, 512e9)),
        bandwidth_bytes_per_s=draw(st.floats(100e9, 20e12)),
        dense_flops_per_s=MappingProxyType({"bf16": draw(st.floats(50e12, 5e15))}),
        source="test",
        host_link_bytes_per_s=draw(st.floats(1e9, 200e9)),
        host_link_source="test",
    )


@st.composite
def models(
    draw: st.DrawFn,
    *,
    moe: bool | None = None,
    windowed: bool | None = False,
    max_layers: int = 128,
    max_hidden: int = 16384,
    max_ffn: int = 65536,
) -> ModelSpec:
    """A decoder model; ``moe`` and ``windowed`` force experts or sliding-window layers on
    (True) or off (False), or let hypothesis choose (None)."""
    kv_heads = draw(st.sampled_from([1, 2, 4, 8]))
    layers = draw(st.integers(1, max_layers))
    experts = None
    if draw(st.booleans()) if moe is None else moe:
        count = draw(st.integers(2, 64))
        experts = MoeSpec(
            experts=count,
            experts_per_token=draw(st.integers(1, count)),
            expert_ffn_size=draw(st.integers(64, 16384)),
            shared_experts=draw(st.integers(0, 2)),
            dense_layers=draw(st.integers(0, layers)),
        )
    window, pattern = 0, ()
    if draw(st.booleans()) if windowed is None else windowed:
        window = draw(st.integers(1, 8192))
        kinds = draw(st.lists(st.sampled_from(["local", "global"]), min_size=1, max_size=min(layers, 6)))
        assume("local" in kinds)
        pattern = tuple(kinds)
    return ModelSpec(
        id="made-up",
        name="Made-up model",
        layers=layers,
        hidden_size=draw(st.integers(64, max_hidden)),
        attention_heads=kv_heads * draw(st.integers(1, 16)),
        kv_heads=kv_heads,
        head_dim=draw(st.sampled_from([64, 128, 256])),
        ffn_size=draw(st.integers(64, max_ffn)),
        vocab_size=draw(st.integers(1000, 256000)),
        tied_embeddings=draw(st.booleans()),
        source="test",
        moe=experts,
        sliding_window=window,
        layer_pattern=pattern,
    )
