"""Number formats: how many bits a stored weight really takes, and which math it feeds.

A format has two sizes. ``value_bits`` is the width its name promises (4 for
int4); ``bits_per_weight`` adds what a real checkpoint stores beside the values,
such as one 16-bit scale per group of 128 weights (4 + 16/128 = 4.125). The
rule of thumb uses the first, the ceilings the second.

A format also says which math it feeds. A *weight-only* format (W4A16, W8A16)
is widened back to 16 bits inside the kernel and multiplies at the 16-bit peak;
a W8A8 or W4A4 format casts the activations down too and multiplies at its own
peak, but only on a GPU that has that math (``native_math``). Elsewhere an
engine runs it weight-only at 16 bits, as vLLM runs fp8 checkpoints on Ampere
(``roofline.quantization.math_for`` states which, in words).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import SpecError, unknown_name


@dataclass(frozen=True)
class ScaleLayout:
    """What a quantized checkpoint stores beside its values: one scale, and for an
    asymmetric format one zero point, shared by every ``group`` weights.

    ``group`` counts weights, whatever their shape: 128 for "groups of 128 along
    the input dimension", 16,384 for a 128 × 128 block. A group must hold at
    least one weight; one scale per output row is a group of the row's length.
    """

    #: Weights that share one scale.
    group: int
    #: Bits of one scale (16 for an fp16 scale, 8 for E4M3 or E8M0, 32 for fp32).
    scale_bits: float
    #: Bits of one zero point (0 for a symmetric format; AWQ packs 4-bit zeros).
    zero_bits: float = 0
    #: How a group is laid out, in words ("128 along the input dimension", "a 128 × 128 block").
    shape: str = ""

    def __post_init__(self) -> None:
        group = self.group
        if isinstance(group, bool) or not isinstance(group, int):
            raise SpecError(f"must be a whole number of weights, got {group!r}", field="group size")
        if group < 1:
            raise SpecError(
                f"must be at least 1, got {group}",
                field="group size",
                hint="a group is the weights sharing one scale: 128 for int4 g128, 4096 for one scale per row of 4,096",
            )
        for name in ("scale_bits", "zero_bits"):
            bits = getattr(self, name)
            if isinstance(bits, bool) or not isinstance(bits, (int, float)) or not math.isfinite(bits) or bits < 0:
                raise SpecError(f"must be a number of bits, 0 or more, got {bits!r}", field=name)

    @property
    def overhead_bits(self) -> float:
        """Bits of scales and zero points per weight: ``(scale bits + zero bits) / group``."""
        return (self.scale_bits + self.zero_bits) / self.group


def effective_bits(value_bits: float, scales: ScaleLayout | None) -> float:
    """Bits one weight costs in memory: ``b_eff = b + (s + z) / g``.

    ``b`` value bits, ``s`` bits of one scale, ``z`` bits of one zero point, ``g``
    weights per group. int4 g128 with fp16 scales: 4 + 16/128 = 4.125; AWQ adds a
    4-bit zero point per group: 4 + 20/128 = 4.15625; NVFP4: 4 + 8/16 = 4.5;
    MXFP4: 4 + 8/32 = 4.25. ``None`` (scales too sparse to count) gives ``b``.

    A layout whose scales cost more bits than the values they scale (a 16-bit scale
    for every 2 int4 weights) is refused: it stores more than it saves.
    """
    if scales is None:
        return float(value_bits)
    overhead = scales.overhead_bits
    if overhead > value_bits:
        raise SpecError(
            f"{scales.scale_bits + scales.zero_bits:g} bits of scale and zero point per {scales.group:,} weights"
            f" is {overhead:g} bits a weight, more than the {value_bits:g}-bit values they scale",
            field="scale layout",
            hint="use a larger group: int4 formats share one scale among 32 to 128 weights",
        )
    return value_bits + overhead


@dataclass(frozen=True)
class NumberFormat:
    """One way of storing numbers, with its cited layout and the math it feeds."""

    name: str
    #: Bits of one value, as the name says (int4 -> 4).
    value_bits: float
    #: Bits one weight costs in memory, block scales and zero points included.
    bits_per_weight: float
    #: What is stored beside the values, in words.
    layout: str
    #: Where the layout is defined (URL).
    source: str
    #: What the format does to a matrix multiply, in the names engines use:
    #: "unquantized", "weight-only" (W4A16 / W8A16), "W8A8" or "W4A4".
    math: str = "weight-only"
    #: The math precision it multiplies in on a GPU that has it (fp8 for W8A8 fp8, fp4
    #: for NVFP4); None: it always multiplies at 16 bits.
    native_math: str | None = None
    #: Which GPUs have that math, in words ("NVIDIA Blackwell"), and where that is stated.
    native_on: str = ""
    native_source: str = ""
    #: Its scales and zero points, when they are counted in ``bits_per_weight``.
    scales: ScaleLayout | None = None
    #: The precision a checkpoint in this format stores its output head at, and its input
    #: embedding table: None for the format's own. Quantizers leave both at 16 bits unless
    #: they say otherwise (vLLM FP8 "all Linear modules (except for the final lm_head)"; AWQ
    #: and GPTQ quantize the linear layers inside the decoder blocks only); gpt-fast's
    #: handlers quantize every ``nn.Linear``, the head included, and no embedding.
    head: str | None = "bf16"
    embedding: str | None = "bf16"
    #: Where ``head`` and ``embedding`` are stated.
    tables_source: str = (
        "vLLM FP8 W8A8 docs: all Linear modules except the final lm_head,"
        " https://docs.vllm.ai/en/latest/features/quantization/fp8.html; llm-awq real_quantize_model_weight"
        " walks get_blocks(model) only"
    )

    def __post_init__(self) -> None:
        if self.scales is not None and self.bits_per_weight != effective_bits(self.value_bits, self.scales):
            raise SpecError(
                f"{self.bits_per_weight:g} bits a weight, but its scale layout gives"
                f" {effective_bits(self.value_bits, self.scales):g}",
                entry=self.name,
                field="bits_per_weight",
            )

    @property
    def bytes_per_weight(self) -> float:
        """``bits per weight / 8``: what the ceilings charge for reading one weight."""
        return self.bits_per_weight / 8

    @property
    def value_bytes(self) -> float:
        """``value bits / 8``: what the rule of thumb charges (scales left out)."""
        return self.value_bits / 8


def _grouped(name: str, value_bits: int, scales: ScaleLayout, layout: str, source: str, **math: str) -> NumberFormat:
    """A format whose scales are counted: ``bits_per_weight = effective_bits(value_bits, scales)``."""
    return NumberFormat(name, value_bits, effective_bits(value_bits, scales), layout, source, scales=scales, **math)


#: Which GPUs have each native math, in words, then where that is stated. The package itself
#: decides by the GPU's spec: a GPU has a math when gpus.toml lists its peak.
_FP8_GPUS = dict(
    native_on="NVIDIA Ada Lovelace, Hopper and Blackwell; AMD MI300X",
    native_source="vLLM, FP8 W8A8: fp8 math needs compute capability 8.9 or more; Ampere and older run fp8"
    " checkpoints weight-only (W8A16, FP8 Marlin): https://docs.vllm.ai/en/latest/features/quantization/fp8.html",
)
_FP4_GPUS = dict(
    native_on="NVIDIA Blackwell",
    native_source="NVIDIA, Introducing NVFP4: fifth-generation Blackwell tensor cores; Hopper, Ada and Ampere have"
    " no fp4 math: https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/",
)
_INT8_GPUS = dict(
    native_on="NVIDIA Ampere, Ada, Hopper and Blackwell; Google TPU v5e",
    native_source="int8 tensor-core peaks in each datasheet (A100 624 TOPS, A10 250); TensorRT-LLM runs SmoothQuant"
    " W8A8 on them: https://github.com/NVIDIA/TensorRT-LLM/blob/2ee99e8abf59022addc0f6f48b9f5909a708b389/docs/"
    "source/blogs/quantization-in-TRT-LLM.md",
)

#: gpt-fast's weight-only handlers replace every ``torch.nn.Linear`` (the output head, ``output``,
#: included) and leave ``nn.Embedding`` alone.
_GPT_FAST_TABLES = dict(
    head=None,
    tables_source="gpt-fast quantize.py, WeightOnlyInt8QuantHandler.create_quantized_state_dict: every"
    " torch.nn.Linear in named_modules(), the output head included; the embedding is an nn.Embedding, left"
    " in bf16: https://github.com/pytorch-labs/gpt-fast/blob/main/quantize.py",
)

FORMATS: dict[str, NumberFormat] = {
    fmt.name: fmt
    for fmt in (
        NumberFormat(
            "fp32",
            32,
            32,
            "plain IEEE single precision",
            "https://en.wikipedia.org/wiki/IEEE_754",
            math="unquantized",
            native_math="fp32",
            native_on="GPUs that list an fp32 peak",
            head=None,
            embedding=None,
        ),
        NumberFormat(
            "bf16",
            16,
            16,
            "plain bfloat16",
            "https://cloud.google.com/tpu/docs/bfloat16",
            math="unquantized",
            head=None,
            embedding=None,
        ),
        NumberFormat(
            "fp16",
            16,
            16,
            "plain IEEE half precision",
            "https://en.wikipedia.org/wiki/IEEE_754",
            math="unquantized",
            head=None,
            embedding=None,
        ),
        NumberFormat(
            "fp8",
            8,
            8,
            "E4M3 values with one fp32 scale per tensor (or per output channel): under 0.01 bits a weight, not counted",
            "https://docs.vllm.ai/en/latest/features/quantization/fp8.html",
            math="W8A8",
            native_math="fp8",
            **_FP8_GPUS,
        ),
        _grouped(
            "fp8-block",
            8,
            ScaleLayout(128 * 128, 32, shape="a 128 × 128 block"),
            "E4M3 values with one fp32 scale per 128 × 128 block of weights (DeepSeek-V3's checkpoints;"
            " activations get one scale per token per 128 channels at run time): 8 + 32/16,384 = 8.002 bits",
            "https://github.com/deepseek-ai/DeepSeek-V3/blob/0b39205aed0d4b1f9a2798e8551e4059c8f94b0c/README_WEIGHTS.md"
            " (FP8 Weight Documentation: e4m3, weight_block_size [128, 128], float32 weight_scale_inv per block)",
            math="W8A8",
            native_math="fp8",
            **_FP8_GPUS,
        ),
        NumberFormat(
            "int8",
            8,
            8,
            "int8 values with one 16-bit scale per output channel (a row of 4,096 or more weights):"
            " under 0.004 bits a weight, not counted",
            "https://github.com/pytorch-labs/gpt-fast/blob/main/quantize.py (WeightOnlyInt8QuantHandler)",
            **_GPT_FAST_TABLES,
        ),
        NumberFormat(
            "int8-sq",
            8,
            8,
            "SmoothQuant W8A8: int8 weights with one scale per output channel, int8 activations with one scale"
            " per token: under 0.01 bits a weight, not counted",
            "https://github.com/NVIDIA/TensorRT-LLM/blob/2ee99e8abf59022addc0f6f48b9f5909a708b389/docs/source/blogs/"
            "quantization-in-TRT-LLM.md (Int8 SQ (W8A8))",
            math="W8A8",
            native_math="int8",
            **_INT8_GPUS,
        ),
        _grouped(
            "int4",
            4,
            ScaleLayout(128, 16, shape="128 along the input dimension"),
            "int4 values in groups of 128, one 16-bit scale per group (symmetric GPTQ as the Marlin kernel"
            " reads it): 4 + 16/128 = 4.125 bits",
            "https://github.com/IST-DASLab/marlin (README: 4-bit weights, groupsize 128, fp16 scales)",
        ),
        _grouped(
            "int4-awq",
            4,
            ScaleLayout(128, 16, 4, shape="128 along the input dimension"),
            "AWQ int4 values in groups of 128, one fp16 scale and one 4-bit zero point per group (zero points"
            " packed eight to an int32): 4 + (16 + 4)/128 = 4.15625 bits",
            "https://github.com/casper-hansen/AutoAWQ/blob/030fe2a15b959425d278de8121f03ed895e3b10c/awq/modules/linear/"
            "gemm.py (WQLinear_GEMM: qzeros int32 [in/group, out/8], scales float16 [in/group, out])",
        ),
        _grouped(
            "int4-g32",
            4,
            ScaleLayout(32, 16, 16, shape="32 along the input dimension"),
            "int4 values in groups of 32, a 16-bit scale and a 16-bit zero point per group:"
            " 4 + 32/32 = 5 bits, 25% over 4",
            "https://github.com/pytorch-labs/gpt-fast/blob/main/quantize.py (WeightOnlyInt4QuantHandler,"
            " groupsize 32, bf16 scales_and_zeros)",
            **_GPT_FAST_TABLES,
        ),
        _grouped(
            "nvfp4",
            4,
            ScaleLayout(16, 8, shape="16 along the input dimension"),
            "E2M1 values in blocks of 16, one E4M3 (8-bit) scale per block, plus one fp32 scale per tensor:"
            " 4 + 8/16 = 4.5 bits, 12.5% over 4",
            "https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/",
            math="W4A4",
            native_math="fp4",
            **_FP4_GPUS,
        ),
        _grouped(
            "mxfp4",
            4,
            ScaleLayout(32, 8, shape="32 along the input dimension"),
            "E2M1 values in blocks of 32, one E8M0 (8-bit power of two) scale per block: 4 + 8/32 = 4.25 bits;"
            " the checkpoints served in this format (gpt-oss) keep bf16 activations, so it runs W4A16 by default"
            " (--compute-precision fp8 or fp4 for a checkpoint whose activations are MXFP8 or MXFP4)",
            "https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf; vLLM"
            " get_mxfp4_backend picks FlashInfer MXFP4 x BF16 on SM 10.0 unless VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8"
            " is set: https://github.com/vllm-project/vllm/blob/afdb4a4ff429377d0fcfac3752e814ffc36ea41d/vllm/"
            "model_executor/layers/quantization/mxfp4.py",
        ),
        NumberFormat(
            "fp4",
            4,
            4,
            "bare E2M1 values with no scales: the 4-bit math precision of Blackwell GPUs; as a weight format it is"
            " only a lower bound (checkpoints use nvfp4 or mxfp4), so the head and"
            " embedding are counted at 4 bits too",
            "https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf",
            math="W4A4",
            native_math="fp4",
            **_FP4_GPUS,
            head=None,
            embedding=None,
            tables_source="a lower bound: every weight at 4 bits, as no checkpoint stores it",
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


def head_bytes_per_value(precision: str) -> float:
    """Bytes one output-head weight takes in a checkpoint whose blocks are at ``precision``:
    2 for every quantized format but gpt-fast's (which quantize the head too), the format's own
    width for bf16, fp16 and fp32."""
    fmt = number_format(precision)
    return fmt.bytes_per_weight if fmt.head is None else BYTES_PER_VALUE[fmt.head]


def embedding_bytes_per_value(precision: str) -> float:
    """Bytes one input-embedding weight takes in a checkpoint whose blocks are at ``precision``:
    2 for every quantized format (no quantizer here touches the lookup table), the format's own
    width for bf16, fp16 and fp32."""
    fmt = number_format(precision)
    return fmt.bytes_per_weight if fmt.embedding is None else BYTES_PER_VALUE[fmt.embedding]


def value_bytes(precision: str) -> float:
    """Bytes of the bare value, as the format's name says (int4 -> 0.5): the rule of thumb's size."""
    return number_format(precision).value_bytes


def native_math(precision: str) -> str | None:
    """The math precision ``precision`` multiplies in on a GPU that has it, or None for 16-bit.

    fp8 and fp8-block -> fp8 (W8A8), int8-sq -> int8, nvfp4 and fp4 -> fp4 (W4A4),
    fp32 -> fp32; every weight-only and 16-bit format -> None. On a GPU without that
    math the format is run weight-only at 16 bits (see ``roofline.quantization.math_for``).
    """
    return number_format(precision).native_math


def check_precision(precision: str) -> str:
    """Return ``precision`` if it is known, else raise SpecError with the close match."""
    number_format(precision)
    return precision
