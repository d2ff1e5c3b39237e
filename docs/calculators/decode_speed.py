"""The calculator "How fast can a GPU generate tokens?" (``<!-- roofline:calculator decode_speed -->``).

A calculator is this kind of module and nothing else: ``form()`` declares its
inputs and outputs, and ``view(**inputs)`` computes what it shows. ``view``
runs in two places: at site build time in CPython (``hooks/runtime.py`` writes
its answer for the defaults into the page, so the calculator reads correctly at
first paint), and in the reader's browser in Pyodide, on every input. Every
number comes from the package; this module only chooses what to show and puts
it in words. The page's generic script validates inputs against the form and
renders; it computes nothing.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from typing import Any

from roofline import Hardware, SpecError, Workload, builtin_specs, decode_step, evaluate, memory_use
from roofline import formatting as fmt
from roofline.fit import memory_shortfall
from roofline.measured import ExpectedRange, well_tuned_decode_range
from roofline.precisions import PRECISIONS
from roofline.sweep import gpus_to_fit

DEFAULTS: dict[str, Any] = {
    "gpu": "h100-sxm",
    "model": "llama-3.1-8b",
    "precision": "bf16",
    "gpus": 1,
    "users": 1,
    "context": 4096,
}
#: Inclusive bounds of the whole-number inputs; the page enforces the same ones.
LIMITS = {"gpus": (1, 64), "users": (1, 4096), "context": (0, 131072)}
#: Users at which the chart samples decode speed: 1, 2, 4 … 4096.
CHART_USERS = tuple(2**power for power in range(13))

NOT_APPLICABLE = "—"


def form() -> dict[str, Any]:
    """The declared form: each input with its label, choices or bounds, and default; each output's label.

    ``view`` answers every output by name, plus ``verdict``, ``explain`` and ``summary``
    (what a screen reader hears), ``fits`` (False marks the answer as a warning),
    ``memory_share`` for the bar and ``chart`` for the chart.
    """
    specs = builtin_specs()

    def whole(name: str, label: str) -> dict[str, Any]:
        low, high = LIMITS[name]
        return {"name": name, "label": label, "min": low, "max": high, "default": DEFAULTS[name]}

    gpus = [[gpu.id, f"{gpu.name} ({fmt.gigabytes(gpu.memory_bytes, 0)})"] for gpu in specs.gpus.values()]
    return {
        "title": "How fast can a GPU generate tokens?",
        "legend": "Deployment",
        "fields": [
            {"name": "gpu", "label": "GPU", "choices": gpus, "default": DEFAULTS["gpu"], "wide": True},
            {
                "name": "model",
                "label": "Model",
                "choices": [[model.id, model.name] for model in specs.models.values()],
                "default": DEFAULTS["model"],
                "wide": True,
            },
            {
                "name": "precision",
                "label": "Weight precision",
                "choices": [[precision, precision] for precision in PRECISIONS],
                "default": DEFAULTS["precision"],
            },
            whole("gpus", "GPUs"),
            whole("users", "Users"),
            whole("context", "Context (tokens)"),
        ],
        "outputs": [
            {"name": "per_user", "label": "Tokens/s for each user (ceiling)"},
            {"name": "expected", "label": "Expected on a well-tuned stack"},
            {"name": "total", "label": "Tokens/s for all users"},
            {"name": "weights", "label": "Weights"},
            {"name": "hardware", "label": "GPUs"},
            {"name": "memory", "label": "Memory in use", "bar": "memory_share"},
            {"name": "bound", "label": "Decode is"},
        ],
        "chart": {
            "caption": "Decode tokens/s for each user and for all users together, as more users share each step"
            " (both axes logarithmic). Computed by the roofline package in your browser."
        },
    }


def _bandwidth(bytes_per_s: float) -> str:
    return f"{bytes_per_s / 1e12:,.2f} TB/s"


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


def _explain_fits(result: Any) -> str:
    """Why the speed is what it is: which of memory and math sets the step time."""
    hardware, workload, decode, memory = result.hardware, result.workload, result.decode, result.memory
    users = _plural(workload.batch, "user")
    # The step reads what the engine reads: one embedding row per user and only the experts picked,
    # so less than the weights stored in memory.
    weights_read = decode.bytes_moved - memory.kv_bytes
    if fmt.gigabytes(weights_read) == fmt.gigabytes(memory.weights_bytes):
        reads = f"{fmt.gigabytes(weights_read)} of weights"
    else:
        reads = f"{fmt.gigabytes(weights_read)} of the {fmt.gigabytes(memory.weights_bytes)} of weights"
    if memory.kv_bytes:
        reads += f" and {fmt.gigabytes(memory.kv_bytes)} of KV cache"
    link = _bandwidth(hardware.bandwidth_bytes_per_s)
    if hardware.count > 1:
        link += f" ({hardware.count} GPUs together)"
    step = (
        f"Each decode step reads {reads} at {link}, which takes {fmt.milliseconds(decode.memory_s)}; "
        f"the math for {users} takes {fmt.milliseconds(decode.compute_s)}."
    )
    if decode.communication_s:
        step += f" The ceiling charges the GPUs' exchanges as {result.accounting['communication']}."
    per_user = fmt.rate(result.decode_tokens_per_s_per_user)
    if decode.bound == "memory":
        verdict = f" Decode is memory-bound: the GPU waits on memory, and each user gets {per_user} tokens/s" + (
            f", {fmt.rate(result.decode_tokens_per_s_total)} in all." if workload.batch > 1 else "."
        )
    else:
        verdict = (
            f" Decode is compute-bound: the math now takes longer than reading memory, so each extra user"
            f" slows everyone down; each gets {per_user} tokens/s, {fmt.rate(result.decode_tokens_per_s_total)}"
            " in all."
        )
    crossover = result.crossover_batch
    if crossover is None:
        outlook = (
            f" At {workload.context:,} tokens of context, each user's KV cache takes longer to read than"
            " its math takes to do, so decode stays memory-bound however many users share a step."
        )
    elif decode.bound == "memory":
        outlook = (
            f" More users share each read of the weights almost for free, until about {fmt.users(crossover)}"
            " users, where the math catches up."
        )
    else:
        outlook = f" The turn came at about {fmt.users(crossover)} users."
    if memory.max_batch:
        outlook += f" Memory holds at most {_plural(memory.max_batch, 'user')} at this context."
    return step + verdict + outlook


def _explain_does_not_fit(result: Any) -> str:
    """What does not fit, by how much, and the changes that would make it fit (each checked)."""
    shortfall = memory_shortfall(result)
    return f"Does not fit. {shortfall.sentence() if shortfall else ''}".rstrip()


def _rule_sentence(result: Any) -> str:
    """The rule of thumb's speed and, cause by cause, how the engine's accounting reaches the ceiling."""
    steps = result.decode_vs_rule.removeprefix("the rule gives")
    return f"The rule of thumb gives{steps} tokens/s per user, the ceiling."


@cache
def _well_tuned() -> ExpectedRange:
    # Computed once per session: the measurements and their ceilings do not change between inputs.
    return well_tuned_decode_range()


def _expected(result: Any) -> tuple[str, str]:
    """The "expected on a well-tuned stack" range for one user on one GPU, and the note on what it rests on.

    The range is the ceiling times the lowest and highest share of their ceilings
    that published single-GPU, single-user decode runs reached; for more GPUs or
    users those runs say nothing, so the calculator shows none.
    """
    hardware, workload = result.hardware, result.workload
    if not result.memory.fits:
        return NOT_APPLICABLE, ""
    if hardware.count != 1 or workload.batch != 1:
        return NOT_APPLICABLE, (
            " No expected range here: the published measurements behind it are one user on one GPU;"
            " see Measured vs ceiling for multi-GPU and batched runs."
        )
    expected = _well_tuned()
    per_user = result.decode_tokens_per_s_per_user
    low, high = fmt.rate(expected.low * per_user), fmt.rate(expected.high * per_user)
    return (
        f"{low}–{high} tokens/s per user",
        f" Expected on a well-tuned stack: {low}–{high} tokens/s. The range rests on {expected.note}",
    )


def _chart(result: Any) -> dict[str, Any]:
    """Per-user and total tokens/s at 1 … 4096 users (and at the chosen number), marking what fits.

    Each point is ``result`` with another batch. The crossover does not depend on
    the batch, so the points reuse ``result``'s instead of solving for it 14 times
    (for DeepSeek-V3 that solve is most of the cost).
    """
    hardware, workload = result.hardware, result.workload
    points = []
    for batch in sorted({*CHART_USERS, workload.batch}):
        at_batch = replace(workload, batch=batch)
        point = replace(
            result, workload=at_batch, decode=decode_step(hardware, at_batch), memory=memory_use(hardware, at_batch)
        )
        points.append(
            {
                "users": batch,
                "per_user": point.decode_tokens_per_s_per_user,
                "total": point.decode_tokens_per_s_total,
                "fits": point.memory.fits,
            }
        )
    return {"points": points, "users": workload.batch, "crossover": result.crossover_batch}


def view(gpu: str, model: str, precision: str, gpus: int, users: int, context: int) -> dict[str, Any]:
    """Everything the calculator shows for one set of inputs, as text ready to display plus chart data.

    Raises SpecError for an unknown id or an out-of-range number.
    """
    for name, value in (("gpus", gpus), ("users", users), ("context", context)):
        low, high = LIMITS[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise SpecError(f"must be a whole number from {low:,} to {high:,}, got {value!r}", field=name)
    specs = builtin_specs()
    gpu_spec, model_spec = specs.gpu(gpu), specs.model(model)
    hardware = Hardware(gpu_spec, gpus)
    workload = Workload(model_spec, precision, batch=users, context=context)
    result = evaluate(hardware, workload)
    memory = result.memory
    fits = memory.fits
    needed = gpus_to_fit(hardware, workload)
    expected, expected_note = _expected(result)
    chart = _chart(result)
    chart["max_users"] = memory.max_batch
    per_user = fmt.rate(result.decode_tokens_per_s_per_user) if fits else NOT_APPLICABLE
    total = fmt.rate(result.decode_tokens_per_s_total) if fits else NOT_APPLICABLE
    used = f"{fmt.gigabytes(memory.used_bytes)} of {fmt.gigabytes(memory.usable_bytes)} usable"
    bound = f"{result.decode.bound}-bound" if fits else NOT_APPLICABLE
    return {
        "params": dict(gpu=gpu, model=model, precision=precision, gpus=gpus, users=users, context=context),
        "fits": fits,
        "verdict": "Fits in memory" if fits else "Does not fit",
        "summary": f"{per_user} tokens/s per user, {total} in all, {bound}." if fits else f"Does not fit: {used}.",
        "per_user": per_user,
        "total": total,
        "weights": fmt.gigabytes(memory.weights_bytes),
        "hardware": f"{gpus} × {fmt.gigabytes(gpu_spec.memory_bytes, 0)} GPU{'s' if gpus != 1 else ''}",
        "memory": used,
        "memory_share": memory.used_bytes / memory.usable_bytes,
        "bound": bound,
        "gpus_needed": needed,
        "expected": expected,
        "explain": (
            f"{_rule_sentence(result)} {_explain_fits(result)}{expected_note}"
            if fits
            else _explain_does_not_fit(result)
        ),
        "chart": chart,
    }
