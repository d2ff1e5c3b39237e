"""Frozen, validated records for accelerators and model architectures.

Each field carries its kind in ``metadata`` (a count, a physical quantity in SI
units, text, a flag); ``__post_init__`` checks every field against its kind, so
a record that exists is a valid record, whoever built it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from .errors import SpecError, unknown_name
from .precisions import PRECISIONS


def _count(minimum: int = 1) -> Any:
    return field(metadata={"kind": "count", "minimum": minimum})


def _quantity() -> Any:
    return field(metadata={"kind": "quantity"})


def _text() -> Any:
    return field(metadata={"kind": "text"})


def _flag() -> Any:
    return field(metadata={"kind": "flag"})


def _check_field(name: str, kind: str, value: Any, minimum: int = 1) -> None:
    """Raise SpecError (naming ``name``) unless ``value`` is a valid ``kind``."""
    if kind == "count":
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpecError(f"must be a whole number, got {value!r}", field=name)
        if value < minimum:
            raise SpecError(f"must be at least {minimum}, got {value}", field=name)
    elif kind == "quantity":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecError(f"must be a number, got {value!r}", field=name)
        if not math.isfinite(value):
            raise SpecError(f"must be a finite number, got {value}", field=name)
        if value <= 0:
            raise SpecError(f"must be positive, got {value}", field=name)
    elif kind == "text":
        if not isinstance(value, str) or not value.strip():
            raise SpecError(f"must be non-empty text, got {value!r}", field=name)
    elif kind == "flag":
        if not isinstance(value, bool):
            raise SpecError(f"must be true or false, got {value!r}", field=name)


def _validate(record: Any) -> None:
    for spec_field in fields(record):
        kind = spec_field.metadata.get("kind")
        if kind:
            minimum = spec_field.metadata.get("minimum", 1)
            _check_field(spec_field.name, kind, getattr(record, spec_field.name), minimum)


@dataclass(frozen=True)
class GpuSpec:
    """One accelerator: memory, HBM bandwidth and dense peak math rate per precision."""

    id: str = _text()
    name: str = _text()
    memory_bytes: float = _quantity()
    bandwidth_bytes_per_s: float = _quantity()
    #: Dense (not 2:4 sparse) peak operations per second, by math precision.
    dense_flops_per_s: Mapping[str, float]
    source: str = _text()
    #: What the memory figure means: nameplate against what software can address (optional).
    memory_note: str = ""

    def __post_init__(self) -> None:
        _validate(self)
        if not isinstance(self.memory_note, str):
            raise SpecError(f"must be text, got {self.memory_note!r}", field="memory_note")
        if not self.dense_flops_per_s:
            raise SpecError("needs at least one precision", field="dense_flops_per_s")
        for precision, value in self.dense_flops_per_s.items():
            if precision not in PRECISIONS:
                raise unknown_name("precision", precision, PRECISIONS).located(field=f"dense_flops_per_s.{precision}")
            _check_field(f"dense_flops_per_s.{precision}", "quantity", value)
        object.__setattr__(self, "dense_flops_per_s", MappingProxyType(dict(self.dense_flops_per_s)))

    def peak_flops_per_s(self, precision: str) -> float:
        """Dense peak FLOP/s of one chip for math at ``precision``."""
        try:
            return self.dense_flops_per_s[precision]
        except KeyError:
            have = ", ".join(self.dense_flops_per_s)
            raise SpecError(
                f"{self.id} has no {precision} math",
                hint=f"it has {have}; pick one with --compute-precision",
            ) from None


@dataclass(frozen=True)
class MoeSpec:
    """Mixture of experts: each token goes to ``experts_per_token`` of ``experts`` routed experts.

    Shared experts see every token. The first ``dense_layers`` layers use the
    model's plain FFN of ``ffn_size`` instead of experts.
    """

    experts: int = _count()
    experts_per_token: int = _count()
    expert_ffn_size: int = _count()
    shared_experts: int = _count(minimum=0)
    dense_layers: int = _count(minimum=0)

    def __post_init__(self) -> None:
        _validate(self)
        if self.experts_per_token > self.experts:
            raise SpecError(
                f"must not exceed experts ({self.experts}), got {self.experts_per_token}",
                field="experts_per_token",
            )


@dataclass(frozen=True)
class MlaSpec:
    """Multi-head latent attention (DeepSeek-V2/V3): keys and values are cached as a
    compressed latent of ``kv_lora_rank`` plus one shared RoPE key of ``qk_rope_head_dim``."""

    kv_lora_rank: int = _count()
    q_lora_rank: int = _count()
    qk_nope_head_dim: int = _count()
    qk_rope_head_dim: int = _count()
    v_head_dim: int = _count()

    def __post_init__(self) -> None:
        _validate(self)


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer, defined by its architecture as in its config.json.

    ``kv_heads`` and ``head_dim`` describe grouped-query attention; a model with
    ``mla`` set caches a latent instead and leaves them at 0 (not applicable).
    """

    id: str = _text()
    name: str = _text()
    layers: int = _count()
    hidden_size: int = _count()
    attention_heads: int = _count()
    kv_heads: int = _count(minimum=0)
    head_dim: int = _count(minimum=0)
    ffn_size: int = _count()
    vocab_size: int = _count()
    tied_embeddings: bool = _flag()
    source: str = _text()
    moe: MoeSpec | None = None
    mla: MlaSpec | None = None

    def __post_init__(self) -> None:
        _validate(self)
        if self.mla is None:
            for name in ("kv_heads", "head_dim"):
                if getattr(self, name) < 1:
                    raise SpecError("must be at least 1 (or describe the model's [mla])", field=name)
            if self.attention_heads % self.kv_heads:
                raise SpecError(
                    f"attention_heads ({self.attention_heads}) must be a multiple of it, got {self.kv_heads}",
                    field="kv_heads",
                )
        if self.moe is not None and self.moe.dense_layers > self.layers:
            raise SpecError(
                f"must not exceed layers ({self.layers}), got {self.moe.dense_layers}",
                field="moe.dense_layers",
            )
