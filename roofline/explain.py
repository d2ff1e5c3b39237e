"""Why the ceiling differs from the rule of thumb, one cause at a time, in words.

Each explanation starts from the rule and applies the engine's accounting one
piece at a time, printing the figure after each, so the last figure is the
ceiling itself: "the rule gives 209; an engine reads one row of the embedding,
so 223, and this user's context brings it to 216". The calculator and the
chapter print these sentences; ``Step`` keeps the numbers for anyone who wants
them apart from the words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import architecture as arch
from . import formatting as fmt
from .performance import (
    Hardware,
    Workload,
    allreduces_per_pass,
    decode_step,
    kv_copies,
    math_precision,
    prefill_pass,
    resolved,
)
from .precisions import AUTO, embedding_bytes_per_value, head_bytes_per_value, number_format
from .rule import rule_prefill_seconds, rule_weight_bytes
from .specs import ModelSpec


@dataclass(frozen=True)
class Step:
    """One cause and the figure once it is counted (tokens/s for decode, seconds for prefill)."""

    reason: str
    value: float


def decode_steps(hardware: Hardware, workload: Workload) -> tuple[Step, ...]:
    """From the rule's decode speed per user (weights only) to the ceiling's, cause by cause.

    Bytes per step, in order: every weight at its nominal width (the rule);
    block scales; the output head and embedding a quantized checkpoint keeps at 16 bits; one
    embedding row per user instead of the untied table; only
    the experts the batch touches; the users' KV cache (with its copies over the
    GPUs). Then, if the math takes longer than the reads, the compute time; then
    the all-reduces of several GPUs. Speed per user = bandwidth / bytes.
    """
    model, fmt_ = workload.model, number_format(workload.weight_precision)
    bandwidth = hardware.bandwidth_bytes_per_s
    users = workload.batch
    weights = rule_weight_bytes(workload)
    steps = [Step("the rule gives", bandwidth / weights)]
    if fmt_.bits_per_weight != fmt_.value_bits:
        weights = arch.total_parameters(model) * fmt_.bytes_per_weight
        steps.append(
            Step(
                f"{fmt_.name} stores block scales ({fmt_.bits_per_weight:g} bits a weight, not {fmt_.value_bits:g}),"
                " so",
                bandwidth / weights,
            )
        )
    head_size = head_bytes_per_value(fmt_.name)
    table_size = embedding_bytes_per_value(fmt_.name)
    if head_size != fmt_.bytes_per_weight or table_size != fmt_.bytes_per_weight:
        weights = arch.weight_bytes(model, fmt_.name)
        kept = "the output head and the embedding" if head_size != fmt_.bytes_per_weight else "the embedding"
        steps.append(Step(f"{fmt_.name} checkpoints keep {kept} at 16 bits, so", bandwidth / weights))
    if not model.tied_embeddings:
        lookup = arch.lookup_only_parameters(model)
        weights += (min(users, model.vocab_size) * model.hidden_size - lookup) * table_size
        rows = "one row" if users == 1 else f"{users:,} rows"
        steps.append(Step(f"an engine reads {rows} of the embedding, not the whole table, so", bandwidth / weights))
    if model.moe is not None:
        weights = arch.weights_read_bytes(model, users, fmt_.name)
        touched = arch.expected_distinct_experts(model.moe.experts, model.moe.experts_per_token, users)
        steps.append(
            Step(
                f"a mixture of experts reads only the experts its tokens pick"
                f" ({touched:,.1f} of {model.moe.experts} a layer), so",
                bandwidth / weights,
            )
        )
    step = decode_step(hardware, workload)
    if workload.context:
        whose, verb = ("this user's context", "brings") if users == 1 else (f"the {users:,} users' contexts", "bring")
        copies = kv_copies(hardware, model)
        if copies != 1:
            whose += f", each cached token held {copies:g} times over the GPUs,"
        steps.append(Step(f"{whose} {verb} it to", 1.0 / step.memory_s))
    if step.bound == "compute":
        math = resolved(hardware, workload).compute_precision
        steps.append(Step(f"at {users:,} users the {math} math takes longer than the reads, so", 1.0 / step.compute_s))
    if step.communication_s:
        steps.append(Step(_allreduces(hardware, model, step.communication_s), 1.0 / step.seconds))
    return tuple(steps)


def _allreduces(hardware: Hardware, model: ModelSpec, seconds: float) -> str:
    """The all-reduce step's words: how many, over what, and what they add."""
    count = allreduces_per_pass(hardware, model)
    return f"{count:,} all-reduces between the {hardware.count:,} GPUs add {fmt.milliseconds(seconds)}, so"


def prefill_steps(hardware: Hardware, workload: Workload) -> tuple[Step, ...]:
    """From the rule's prefill time (``2 * N * P`` at the 16-bit peak) to the ceiling's, cause by cause.

    In order: the output head for the last prompt token only and no FLOPs for
    lookups; the math the format runs at; causal attention; the floor of one
    read of the weights when that is slower than the math; and the all-reduces
    of several GPUs. Empty for P = 0.
    """
    model, prompt = workload.model, workload.prompt
    if prompt == 0:
        return ()
    steps = [Step("the rule gives", rule_prefill_seconds(hardware, workload))]
    sixteen = hardware.sixteen_bit_peak_flops_per_s
    body = arch.prefill_flops(model, prompt) - arch.prefill_attention_flops(model, prompt)
    steps.append(
        Step("the output head runs for the last prompt token only and lookups cost no math, so", body / sixteen)
    )
    engine = resolved(hardware, workload)
    if engine.peak_flops_per_s != sixteen:
        chosen = "fixed" if hardware.compute_precision != AUTO else "chosen for the weights"
        steps.append(
            Step(f"{engine.compute_precision} math ({chosen}) changes the peak, so", body / engine.peak_flops_per_s)
        )
    ceiling = prefill_pass(hardware, workload)
    steps.append(Step(f"causal attention over {prompt:,} tokens brings it to", ceiling.compute_s))
    if ceiling.bound == "memory":
        steps.append(Step("the pass cannot beat one read of the weights, so", ceiling.memory_s))
    if ceiling.communication_s:
        steps.append(Step(_allreduces(hardware, model, ceiling.communication_s), ceiling.seconds))
    return tuple(steps)


def _same(a: float, b: float) -> bool:
    # A step that changes nothing (every expert read anyway) differs only by float rounding.
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b))


def _distinct_digits(values: list[float], show: Callable[[float, int], str], most: int = 4) -> int:
    """The fewest extra decimals (0 to ``most``) at which no two neighbouring figures that differ
    print the same, so a sentence never reads "the rule gives 4; ... so 4"."""
    for extra in range(most + 1):
        shown = [show(value, extra) for value in values]
        if all(a != b or _same(x, y) for a, b, x, y in zip(shown, shown[1:], values, values[1:], strict=False)):
            return extra
    return most


def _sentence(steps: tuple[Step, ...], show: Callable[[float, int], str]) -> str:
    if not steps:
        return ""
    extra = _distinct_digits([step.value for step in steps], show)
    parts = [f"{step.reason} {show(step.value, extra)}" for step in steps]
    if len(parts) == 1:
        return parts[0]
    later = parts[1:]
    tail = later[0] if len(later) == 1 else ", ".join(later[:-1]) + ", and " + later[-1]
    return f"{parts[0]}; {tail}"


def _tokens_per_s(value: float, extra: int) -> str:
    # Whole tokens/s, as everywhere else, unless rounding would hide a step.
    return fmt.rate(value) if extra == 0 else f"{value:,.{extra}f}"


def _milliseconds(seconds: float, extra: int) -> str:
    # fmt.milliseconds (one decimal, three under 1 ms), with more decimals only when a step needs them.
    if extra == 0:
        return fmt.milliseconds(seconds)
    decimals = (1 if seconds * 1e3 >= 1 else 3) + extra
    return f"{seconds * 1e3:,.{decimals}f} ms"


def explain_decode(hardware: Hardware, workload: Workload) -> str:
    """The decode steps as one sentence, speeds as whole tokens/s per user (more digits where
    whole numbers would print two different figures alike)."""
    return _sentence(decode_steps(hardware, workload), _tokens_per_s)


def explain_prefill(hardware: Hardware, workload: Workload) -> str:
    """The prefill steps as one sentence, times in milliseconds ("" for an empty prompt), with
    more digits where the usual ones would print two different times alike."""
    return _sentence(prefill_steps(hardware, workload), _milliseconds)


def math_choice(hardware: Hardware, workload: Workload) -> str:
    """Which math the ceilings used and why, in words: ``"fp8 (auto: W8A8 for fp8 weights)"``."""
    if hardware.compute_precision != AUTO:
        return f"{hardware.compute_precision} (set by the caller)"
    math = math_precision(hardware.gpu, workload.weight_precision)
    if math == workload.weight_precision:
        kind = f"W8A8 for {math} weights" if math == "fp8" else f"the weights' own {math}"
    elif math == "fp4":
        kind = f"W4A4 for {workload.weight_precision} weights on fp4 tensor cores"
    else:
        kind = f"weight-only {workload.weight_precision}, multiplied at 16 bits"
    return f"{math} (auto: {kind})"
