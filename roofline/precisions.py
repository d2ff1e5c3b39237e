"""Number formats: how many bits a stored weight really takes, and which math it feeds.

A format has two sizes. ``value_bits`` is the width its name promises (4 for
int4); ``bits_per_weight`` adds what a real checkpoint stores beside the values,
such as one 16-bit scale per group of 128 weights (4 + 16/128 = 4.125). The
rule of thumb uses the first, the ceilings the second.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import unknown_name


@dataclass(frozen=True)
class NumberFormat:
    """One way of storing numbers, with its cited layout."""

    name: str
    #: Bits of one value, as the name says (int4 -> 4).
    value_bits: float
    #: Bits one weight costs in memory, block scales and zero points included.
    bits_per_weight: float
    #: What is stored beside the values, in words.
    layout: str
    #: Where the layout is defined (URL).
    source: str

    @property
    def bytes_per_weight(self) -> float:
        """``bits per weight / 8``: what the ceilings charge for reading one weight."""
        return self.bits_per_weight / 8

    @property
    def value_bytes(self) -> float:
        """``value bits / 8``: what the rule of thumb charges (scales left out)."""
        return self.value_bits / 8


def _scaled(value_bits: int, group: int, extra_bits_per_group: int) -> float:
    """``value bits + extra bits per group / group size``: the effective bits per weight."""
    return value_bits + extra_bits_per_group / group


FORMATS: dict[str, NumberFormat] = {
    fmt.name: fmt
    for fmt in (
        NumberFormat("fp32", 32, 32, "plain IEEE single precision", "https://en.wikipedia.org/wiki/IEEE_754"),
        NumberFormat("bf16", 16, 16, "plain bfloat16", "https://cloud.google.com/tpu/docs/bfloat16"),
        NumberFormat("fp16", 16, 16, "plain IEEE half precision", "https://en.wikipedia.org/wiki/IEEE_754"),
        NumberFormat(
            "fp8",
            8,
            8,
            "E4M3 values with one fp32 scale per tensor (or per output channel): under 0.01 bits a weight, not counted",
            "https://docs.vllm.ai/en/latest/features/quantization/fp8.html",
        ),
        NumberFormat(
            "int8",
            8,
            8,
            "int8 values with one 16-bit scale per output channel (a row of 4,096 or more weights):"
            " under 0.004 bits a weight, not counted",
            "https://github.com/pytorch-labs/gpt-fast/blob/main/quantize.py (WeightOnlyInt8QuantHandler)",
        ),
        NumberFormat(
            "int4",
            4,
            _scaled(4, 128, 16),
            "int4 values in groups of 128, one 16-bit scale per group (symmetric GPTQ as the Marlin kernel"
            " reads it): 4 + 16/128 = 4.125 bits",
            "https://github.com/IST-DASLab/marlin (README: 4-bit weights, groupsize 128, fp16 scales)",
        ),
        NumberFormat(
            "int4-g32",
            4,
            _scaled(4, 32, 32),
            "int4 values in groups of 32, a 16-bit scale and a 16-bit zero point per group:"
            " 4 + 32/32 = 5 bits, 25% over 4",
            "https://github.com/pytorch-labs/gpt-fast/blob/main/quantize.py (WeightOnlyInt4QuantHandler,"
            " groupsize 32, bf16 scales_and_zeros)",
        ),
        NumberFormat(
            "nvfp4",
            4,
            _scaled(4, 16, 8),
            "E2M1 values in blocks of 16, one E4M3 (8-bit) scale per block, plus one fp32 scale per tensor:"
            " 4 + 8/16 = 4.5 bits, 12.5% over 4",
            "https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/",
        ),
        NumberFormat(
            "mxfp4",
            4,
            _scaled(4, 32, 8),
            "E2M1 values in blocks of 32, one E8M0 (8-bit power of two) scale per block: 4 + 8/32 = 4.25 bits",
            "https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf",
        ),
        NumberFormat(
            "fp4",
            4,
            4,
            "bare E2M1 values with no scales: the 4-bit math precision of Blackwell GPUs; as a weight format it is"
            " only a lower bound (checkpoints use nvfp4 or mxfp4)",
            "https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf",
        ),
    )
}

#: Bytes one weight takes in memory, scales included, by format name.
BYTES_PER_VALUE: dict[str, float] = {name: fmt.bytes_per_weight for name, fmt in FORMATS.items()}

PRECISIONS: tuple[str, ...] = tuple(FORMATS)

#: ``--compute-precision auto``: pick the math from the weight format (see performance.math_precision).
AUTO = "auto"
DEFAULT_COMPUTE_PRECISION = AUTO

#: Math precisions counted as 16-bit, in the order a GPU's table is searched.
SIXTEEN_BIT = ("bf16", "fp16")


def number_format(precision: str) -> NumberFormat:
    """The format called ``precision``; an unknown name raises SpecError with the close match."""
    try:
        return FORMATS[precision]
    except KeyError:
        raise unknown_name("precision", precision, PRECISIONS) from None


def bytes_per_value(precision: str) -> float:
    """Bytes one weight occupies at ``precision``, scales included (bf16 -> 2, int4 -> 0.515625)."""
    try:
        return BYTES_PER_VALUE[precision]  # a plain lookup: the sweep asks this a hundred thousand times
    except KeyError:
        raise unknown_name("precision", precision, PRECISIONS) from None


def value_bytes(precision: str) -> float:
    """Bytes of the bare value, as the format's name says (int4 -> 0.5): the rule of thumb's size."""
    return number_format(precision).value_bytes


def check_precision(precision: str) -> str:
    """Return ``precision`` if it is known, else raise SpecError with the close match."""
    number_format(precision)
    return precision
