"""One call that answers everything about a deployment: the CLI, the site and the calculator use it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from . import architecture as arch
from .explain import explain_decode, explain_prefill, math_choice
from .loader import SpecSet, load_specs
from .performance import (
    DEFAULT_USABLE_FRACTION,
    Hardware,
    MemoryUse,
    Pass,
    Workload,
    crossover_batch,
    decode_step,
    memory_use,
    prefill_pass,
    resolved,
)
from .precisions import DEFAULT_COMPUTE_PRECISION, number_format
from .rule import RuleOfThumb, rule_crossover_batch, rule_of_thumb


@dataclass(frozen=True)
class Estimate:
    """Decode, prefill, memory and crossover for one hardware and workload, the rule of
    thumb's figures beside them, and why the two differ.

    ``hardware.compute_precision`` is the math the ceilings used ("auto" resolved);
    ``math`` says how it was chosen.
    """

    hardware: Hardware
    workload: Workload
    decode: Pass
    prefill: Pass
    memory: MemoryUse
    crossover_batch: float | None
    #: The math precision the caller asked for: ``"auto"`` or a precision.
    requested_compute_precision: str = DEFAULT_COMPUTE_PRECISION

    # The rule and the sentences are computed when asked for: a sweep of thousands of
    # estimates needs neither.

    @property
    def _requested_hardware(self) -> Hardware:
        return replace(self.hardware, compute_precision=self.requested_compute_precision)

    @property
    def rule(self) -> RuleOfThumb:
        """The seed's rule of thumb for the same inputs (see ``rule``)."""
        return rule_of_thumb(self.hardware, self.workload)

    @property
    def math(self) -> str:
        """Which math the ceilings used and how it was chosen, in words."""
        return math_choice(self._requested_hardware, self.workload)

    @property
    def decode_vs_rule(self) -> str:
        """Why the decode ceiling differs from the rule, one cause at a time."""
        return explain_decode(self._requested_hardware, self.workload)

    @property
    def prefill_vs_rule(self) -> str:
        """Why the prefill ceiling differs from the rule ("" for an empty prompt)."""
        return explain_prefill(self._requested_hardware, self.workload)

    @property
    def simple_crossover_batch(self) -> float:
        """The rule of thumb's crossover, ``16-bit peak / bandwidth * value bytes / 2``."""
        return rule_crossover_batch(self.hardware, self.workload.weight_precision)

    @property
    def decode_tokens_per_s_per_user(self) -> float:
        """Each user gets one token per step: ``1 / step time``."""
        return 1.0 / self.decode.seconds

    @property
    def decode_tokens_per_s_total(self) -> float:
        """All users together: ``batch / step time``."""
        return self.workload.batch / self.decode.seconds

    def to_dict(self) -> dict[str, Any]:
        """The estimate as plain JSON values, in SI units (bytes, seconds, tokens/s)."""
        model, hardware, workload = self.workload.model, self.hardware, self.workload
        return {
            "gpu": hardware.gpu.id,
            "model": model.id,
            "gpus": hardware.count,
            "weight_precision": workload.weight_precision,
            "kv_precision": workload.kv_precision,
            "compute_precision": hardware.compute_precision,
            "math": self.math,
            "weight_bits_per_weight": number_format(workload.weight_precision).bits_per_weight,
            "batch": workload.batch,
            "context": workload.context,
            "prompt": workload.prompt,
            "shared_prefix": workload.shared_prefix,
            "total_parameters": arch.total_parameters(model),
            "active_parameters": arch.active_parameters(model),
            "weights_bytes": self.memory.weights_bytes,
            "kv_bytes_per_token": workload.kv_bytes_per_token,
            "kv_bytes_per_user": workload.kv_bytes_per_user,
            "kv_bytes_shared": workload.kv_bytes_shared,
            "kv_bytes": self.memory.kv_bytes,
            "memory_used_bytes": self.memory.used_bytes,
            "memory_usable_bytes": self.memory.usable_bytes,
            "fits": self.memory.fits,
            "max_batch_that_fits": self.memory.max_batch,
            "decode_step_s": self.decode.seconds,
            "decode_memory_s": self.decode.memory_s,
            "decode_compute_s": self.decode.compute_s,
            "decode_tokens_per_s_per_user": self.decode_tokens_per_s_per_user,
            "decode_tokens_per_s_total": self.decode_tokens_per_s_total,
            "decode_bound": self.decode.bound,
            "prefill_s": self.prefill.seconds,
            "prefill_bound": self.prefill.bound if workload.prompt else None,
            "crossover_batch": self.crossover_batch,
            "simple_crossover_batch": self.simple_crossover_batch,
            "rule_of_thumb": self.rule.to_dict(),
            "decode_vs_rule": self.decode_vs_rule,
            "prefill_vs_rule": self.prefill_vs_rule or None,
        }


def evaluate(hardware: Hardware, workload: Workload) -> Estimate:
    """Every estimate for ``workload`` on ``hardware`` (see ``performance`` for the formulas,
    ``rule`` for the rule of thumb, ``explain`` for the sentences)."""
    engine = resolved(hardware, workload)  # resolve "auto" once, not in every pass
    return Estimate(
        hardware=engine,
        workload=workload,
        decode=decode_step(engine, workload),
        prefill=prefill_pass(engine, workload),
        memory=memory_use(engine, workload),
        crossover_batch=crossover_batch(engine, workload),
        requested_compute_precision=hardware.compute_precision,
    )


def estimate(
    gpu: str,
    model: str,
    *,
    precision: str = "bf16",
    kv_precision: str = "bf16",
    compute_precision: str = DEFAULT_COMPUTE_PRECISION,
    gpus: int = 1,
    batch: int = 1,
    context: int = 0,
    prompt: int = 0,
    shared_prefix: int = 0,
    usable_fraction: float = DEFAULT_USABLE_FRACTION,
    specs: SpecSet | None = None,
) -> Estimate:
    """Estimate by ids, as the CLI and the calculator ask: ``estimate("h100-sxm", "llama-3.1-8b")``.

    ``compute_precision="auto"`` (the default) lets the weights pick the math: fp8 runs
    W8A8 on a GPU with fp8 math, every other format multiplies at 16 bits.

    ``specs`` defaults to the built-in spec files. Bad ids or values raise SpecError.
    """
    specs = specs or load_specs()
    hardware = Hardware(specs.gpu(gpu), gpus, compute_precision, usable_fraction)
    workload = Workload(specs.model(model), precision, kv_precision, batch, context, prompt, shared_prefix)
    return evaluate(hardware, workload)
