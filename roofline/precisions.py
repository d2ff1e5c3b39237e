"""Number formats: how many bytes one value takes, and which ones exist."""

from __future__ import annotations

from .errors import unknown_name

#: Bytes per stored value. A 4-bit value takes half a byte; block scales of
#: formats such as fp4 or GPTQ int4 add a few percent and are left out.
BYTES_PER_VALUE: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "fp4": 0.5,
}

PRECISIONS: tuple[str, ...] = tuple(BYTES_PER_VALUE)

#: Weight-only quantization still multiplies in 16-bit, so this is the math
#: precision unless the caller picks another (for example fp8 math).
DEFAULT_COMPUTE_PRECISION = "bf16"


def bytes_per_value(precision: str) -> float:
    """Bytes one value occupies at ``precision`` (for example bf16 -> 2, int4 -> 0.5)."""
    try:
        return BYTES_PER_VALUE[precision]
    except KeyError:
        raise unknown_name("precision", precision, PRECISIONS) from None


def check_precision(precision: str) -> str:
    """Return ``precision`` if it is known, else raise SpecError with the close match."""
    bytes_per_value(precision)
    return precision
