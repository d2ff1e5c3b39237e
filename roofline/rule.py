"""The seed's rule of thumb, kept by name beside the engine's ceilings.

The rule is what chapter 1 teaches first, because it fits on a napkin:

- decode reads every weight byte, plus the KV cache, once per step;
- prefill costs ``2 * N`` FLOPs per prompt token at the 16-bit peak;
- decode turns compute-bound at ``peak / bandwidth * bytes per weight / 2`` users.

It counts the bytes a format's name promises (4 bits for int4, no scales), the
whole embedding table, every expert, and 16-bit math whatever the format. The
ceilings in ``performance`` count what an inference engine does instead;
``explain`` says, step by step, why the two differ.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import architecture as arch
from .performance import Hardware, Workload
from .precisions import value_bytes


def rule_weight_bytes(workload: Workload) -> float:
    """``total parameters * value bytes``: every weight at the width the format's name says."""
    return arch.total_parameters(workload.model) * value_bytes(workload.weight_precision)


def rule_decode_tokens_per_s_per_user(hardware: Hardware, workload: Workload) -> float:
    """``GPUs * bandwidth / (weights + batch * context * KV bytes per token)``.

    Each step reads every weight once and every user's cache, and yields one
    token per user. 8B at 16 bits on an H100: 3.35e12 / 16.06e9 = 208.6 tokens/s;
    with a 4,096-token context the cache adds 0.54 GB and it falls to 201.8.
    """
    cache = workload.batch * workload.context * workload.kv_bytes_per_token
    return hardware.bandwidth_bytes_per_s / (rule_weight_bytes(workload) + cache)


def rule_prefill_seconds(hardware: Hardware, workload: Workload) -> float:
    """``2 * active parameters * P / (GPUs * 16-bit peak)``: no attention, no memory term,
    no faster math for fp8. 8B, 2,000 tokens, one H100: 2 * 8.03e9 * 2000 / 989.4e12 = 32.5 ms."""
    flops = 2.0 * arch.active_parameters(workload.model) * workload.prompt
    return flops / hardware.sixteen_bit_peak_flops_per_s


def rule_crossover_batch(hardware: Hardware, weight_precision: str) -> float:
    """``16-bit peak / bandwidth * value bytes / 2``, for a dense model with no KV cache.

    Reading W weights of b bytes takes ``W*b / bandwidth``; the math for B users
    takes ``2*W*B / peak``. They are equal at ``B = peak / bandwidth * b / 2``:
    989.4e12 / 3.35e12 * 2 / 2 = 295 users for 16-bit weights on an H100.
    The GPU count cancels.
    """
    peak = hardware.sixteen_bit_peak_flops_per_s
    return peak / hardware.bandwidth_bytes_per_s * value_bytes(weight_precision) / 2


@dataclass(frozen=True)
class RuleOfThumb:
    """The rule's three figures for one hardware and workload."""

    decode_tokens_per_s_per_user: float
    prefill_s: float
    crossover_batch: float

    def to_dict(self) -> dict[str, float]:
        """The three figures under the names ``--json`` prints."""
        return {
            "decode_tokens_per_s_per_user": self.decode_tokens_per_s_per_user,
            "prefill_s": self.prefill_s,
            "crossover_batch": self.crossover_batch,
        }


def rule_of_thumb(hardware: Hardware, workload: Workload) -> RuleOfThumb:
    """The rule applied to ``workload`` on ``hardware`` (see the functions above)."""
    return RuleOfThumb(
        decode_tokens_per_s_per_user=rule_decode_tokens_per_s_per_user(hardware, workload),
        prefill_s=rule_prefill_seconds(hardware, workload),
        crossover_batch=rule_crossover_batch(hardware, workload.weight_precision),
    )
