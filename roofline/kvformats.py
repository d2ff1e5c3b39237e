"""How the KV cache stores one value: its bytes, plus the scales its quantization keeps.

A quantized cache keeps, beside the low-bit values, a scale (and sometimes a
zero point) shared by a group of values. Spread over its group, that costs

    effective bytes per value = b + scale bytes / group size

so a 4-bit format is not half a byte: with one 16-bit scale and one 16-bit
zero point per 64 values it is 0.5 + 4/64 = 0.5625 bytes. A format with one
scale per whole tensor (per layer, for K or for V) pays a few bytes per
layer, not per token, and counts as ``b`` alone.

This table is separate from ``precisions`` (weights and math) on purpose:
the same name can mean a different layout for a cache than for weights.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import SpecError, unknown_name


@dataclass(frozen=True)
class KvFormat:
    """One way to store the cache: ``value_bytes`` per value, plus ``scale_bytes``
    shared by every ``group_size`` values (``group_size`` 0: one scale per tensor)."""

    name: str
    value_bytes: float
    scale_bytes: float
    group_size: int
    description: str
    source: str

    def __post_init__(self) -> None:
        if not self.value_bytes > 0:
            raise SpecError(f"must be positive, got {self.value_bytes!r}", field="value_bytes")
        for name in ("scale_bytes", "group_size"):
            if getattr(self, name) < 0:
                raise SpecError(f"must not be negative, got {getattr(self, name)!r}", field=name)

    @property
    def effective_bytes(self) -> float:
        """Bytes per cached value, scales included, b_kv in the site's notation:
        ``value bytes + scale bytes / g``, i.e. ``(q + (q_s + q_z) / g) / 8`` for q-bit values with
        a q_s-bit scale and a q_z-bit zero point (in ``scale_bytes``) per group of g."""
        if self.group_size == 0:
            return self.value_bytes
        return self.value_bytes + self.scale_bytes / self.group_size

    @property
    def scale_overhead(self) -> float:
        """Scales as a share of the values they scale: ``(scale bytes / group size) / b``."""
        return self.effective_bytes / self.value_bytes - 1.0


_FORMATS = (
    KvFormat("fp32", 4.0, 0.0, 0, "32-bit float, no scales: a reference point", "IEEE 754 single precision"),
    KvFormat(
        "bf16",
        2.0,
        0.0,
        0,
        "16-bit brain float, no scales: the usual cache",
        "the model's own activation type; no quantization",
    ),
    KvFormat("fp16", 2.0, 0.0, 0, "16-bit IEEE float, no scales", "the model's own activation type; no quantization"),
    KvFormat(
        "fp8",
        1.0,
        4.0,
        0,
        "FP8 E4M3 with one fp32 scale per K or V tensor of a layer",
        "vLLM, Quantized KV Cache (per-tensor scales, kv_cache_dtype='fp8'):"
        " https://docs.vllm.ai/en/latest/features/quantization/quantized_kvcache/",
    ),
    KvFormat(
        "int8",
        1.0,
        4.0,
        0,
        "INT8 with one fp32 scale per K or V tensor of a layer",
        "TensorRT-LLM INT8 KV cache, a per-tensor kv_cache_scaling_factor from calibration:"
        " https://nvidia.github.io/TensorRT-LLM/features/quantization.html",
    ),
    KvFormat(
        "int4",
        0.5,
        4.0,
        64,
        "INT4 in groups of 64, each with a 16-bit scale and a 16-bit zero point",
        "Hugging Face transformers QuantizedCache (quanto backend: nbits=4, q_group_size=64,"
        " affine scale and zero point in the 16-bit compute type):"
        " https://huggingface.co/docs/transformers/kv_cache",
    ),
    KvFormat(
        "nvfp4",
        0.5,
        1.0,
        16,
        "FP4 E2M1 in blocks of 16, each with an FP8 E4M3 scale (plus one fp32 scale per tensor)",
        "TensorRT-LLM NVFP4 KV cache (Blackwell) and the NVFP4 format, 16-value blocks with UE4M3 scales:"
        " https://nvidia.github.io/TensorRT-LLM/features/quantization.html",
    ),
)

#: Every KV-cache format, by name.
KV_FORMATS: dict[str, KvFormat] = {kv_format.name: kv_format for kv_format in _FORMATS}

KV_FORMAT_NAMES: tuple[str, ...] = tuple(KV_FORMATS)


def kv_format(name: str) -> KvFormat:
    """The KV format called ``name``; an unknown name raises SpecError with the close match."""
    try:
        return KV_FORMATS[name]
    except KeyError:
        raise unknown_name("KV precision", name, KV_FORMAT_NAMES) from None


def kv_bytes_per_value(name: str) -> float:
    """Effective bytes of one cached value in format ``name``, scales included (int4 -> 0.5625)."""
    return kv_format(name).effective_bytes
