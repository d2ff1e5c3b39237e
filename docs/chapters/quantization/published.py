"""Published figures chapter 4 quotes that are not single runs of one deployment: speedup ratios,
fitted lines and engines' switch points. Each was read at its source (the URL beside it).

The chapter's single runs (TinyChat, gpt-fast) are in ``measurements.toml`` beside this module,
where ``roofline.measured`` checks each against its ceiling.
"""

from __future__ import annotations

from dataclasses import dataclass

TRT_BLOG = "https://github.com/NVIDIA/TensorRT-LLM/blob/main/docs/source/blogs/quantization-in-TRT-LLM.md"
VLLM_FP8_KV = "https://github.com/vllm-project/vllm-project.github.io/blob/main/_posts/2026-04-22-fp8-kvcache.md"
VLLM_AWQ = (
    "https://github.com/vllm-project/vllm/blob/92d756e9ccd74c7772d5d9936ac5631b811a961f/vllm/model_executor/layers/"
    "quantization/awq.py"
)
AUTOAWQ_GEMM = "https://github.com/casper-hansen/AutoAWQ/blob/main/awq/modules/linear/gemm.py"


@dataclass(frozen=True)
class SpeedupRatio:
    """A published "format X is N times faster than 16-bit" at one batch and one request shape."""

    source_name: str
    gpu: str
    model: str
    weight_precision: str
    baseline: str
    batch: int
    input_tokens: int
    output_tokens: int
    speedup: float
    source: str


#: TensorRT-LLM's quantization blog, "Performance" table: LLaMA-v2-7B on one H100 80GB,
#: input 1,024, output 128, TP 1, FP8 and INT8 SmoothQuant against FP16.
TRT_SPEEDUPS = (
    SpeedupRatio("TensorRT-LLM", "h100-sxm", "llama-2-7b", "fp8", "fp16", 1, 1024, 128, 1.51, TRT_BLOG),
    SpeedupRatio("TensorRT-LLM", "h100-sxm", "llama-2-7b", "fp8", "fp16", 8, 1024, 128, 1.40, TRT_BLOG),
    SpeedupRatio("TensorRT-LLM", "h100-sxm", "llama-2-7b", "int8-sq", "fp16", 1, 1024, 128, 1.47, TRT_BLOG),
    SpeedupRatio("TensorRT-LLM", "h100-sxm", "llama-2-7b", "int8-sq", "fp16", 8, 1024, 128, 1.32, TRT_BLOG),
)


@dataclass(frozen=True)
class LatencyLine:
    """``ITL = intercept + slope * input length``, fitted by an engine's authors to runs at concurrency 1."""

    kv_precision: str
    intercept_s: float
    slope_s_per_token: float


#: vLLM's FP8 KV-cache post, "Single Request Benchmarking": Llama-3.1-8B, one H100, FlashAttention-3,
#: vLLM v0.19.1, concurrency 1, 128 output tokens, inputs 256 to 125k. Slopes are printed in ms per token.
VLLM_LINES = (
    LatencyLine("bf16", 6.44e-3, 4.37e-5 * 1e-3),
    LatencyLine("fp8", 6.58e-3, 2.37e-5 * 1e-3),
)
#: The same post's Table 3: the break-even context it computed from its unrounded fits (v0.19.1).
VLLM_BREAK_EVEN = 7010
#: Its Table 4: 150 requests at concurrency 8, ~20k input and ~2k output tokens, output tokens/s.
VLLM_LOAD_TPS = {"bf16": 450.3, "fp8": 517.5}

#: Tokens in a pass from which an engine stops using its fused W4A16 kernel and instead widens
#: the weights to fp16 and runs a plain fp16 matmul: vLLM's AWQ method
#: (``x.shape[:-1].numel() >= 256``) and AutoAWQ's ``WQLinear_GEMM`` (``x.shape[0] * x.shape[1] >= 1024``).
SWITCH_TOKENS = {"vLLM": (256, VLLM_AWQ), "AutoAWQ": (1024, AUTOAWQ_GEMM)}


#: vLLM's fp8-KV throughput run (Table 4): 8 concurrent users with about 20,000 input tokens
#: and 2,000 output tokens each (±15%), so a context of at most about 22,000 tokens a user.
VLLM_LOAD_SHAPE = (8, 22_000)
#: The same run's median inter-token latency, bf16 then fp8 cache (Table 4: 15.18 and 12.93 ms).
VLLM_LOAD_ITL_S = (15.18e-3, 12.93e-3)
#: TensorRT-LLM's blog on a capacity-bound fp8 cache: "2-3x larger batch size on H100 machine for
#: models like GPT-J which further brings about 1.5x performance benefit" (read at 65b31db).
TRT_FP8_KV_BATCH = (2, 3)
TRT_FP8_KV_GAIN = 1.5
#: The vLLM fp8-cache post's 128k needle-in-a-haystack scores on Hopper: bf16, fp8 before and after
#: the two-level accumulation fix (flash-attention#104).
VLLM_NIAH_128K = {"bf16": 0.91, "fp8 before": 0.13, "fp8 after": 0.89}
