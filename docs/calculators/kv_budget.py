"""The calculator "KV budget" (``<!-- roofline:calculator kv_budget -->``), chapter 2.

``form()`` declares the inputs and outputs, ``view(**inputs)`` computes what
they show, at build time in CPython (the first paint) and in the reader's
browser in Pyodide. Every number comes from the package: users that fit from
``roofline.users_that_fit``, the memory from ``memory_use``, the step from
``decode_step`` and its split from ``step_split``, all at the number of users
that fit. This module only chooses what to show and puts it in words.
"""

from __future__ import annotations

from typing import Any

from roofline import Hardware, SpecError, Workload, builtin_specs, decode_step, memory_use, step_split, users_that_fit
from roofline import formatting as fmt
from roofline.kvformats import KV_FORMAT_NAMES, kv_format
from roofline.performance import gpus_to_fit
from roofline.precisions import PRECISIONS

DEFAULTS: dict[str, Any] = {
    "model": "llama-3.1-8b",
    "gpu": "h100-sxm",
    "gpus": 1,
    "weights": "bf16",
    "kv": "bf16",
    "context": 8192,
    "prefix": 0,
}
#: Inclusive bounds of the whole-number inputs; the page enforces the same ones.
LIMITS = {"gpus": (1, 64), "context": (1, 1_048_576), "prefix": (0, 1_048_576)}

NOT_APPLICABLE = "—"


def form() -> dict[str, Any]:
    """The declared form. ``view`` answers every output by name, plus ``verdict``, ``explain``,
    ``summary``, ``fits``, and the stacks ``memory_parts`` and ``step_parts``."""
    specs = builtin_specs()

    def whole(name: str, label: str) -> dict[str, Any]:
        low, high = LIMITS[name]
        return {"name": name, "label": label, "min": low, "max": high, "default": DEFAULTS[name]}

    def choice(name: str, label: str, choices: list[list[str]], wide: bool = False) -> dict[str, Any]:
        return {"name": name, "label": label, "choices": choices, "default": DEFAULTS[name], "wide": wide}

    kv_choices = [[name, f"{name}, {kv_format(name).effective_bytes:g} B"] for name in KV_FORMAT_NAMES]
    return {
        "title": "KV budget: how many users fit, and how fast they go",
        "legend": "Deployment",
        "fields": [
            choice("model", "Model", [[model.id, model.name] for model in specs.models.values()], wide=True),
            choice(
                "gpu",
                "GPU",
                [[gpu.id, f"{gpu.name} ({fmt.gigabytes(gpu.memory_bytes, 0)})"] for gpu in specs.gpus.values()],
                wide=True,
            ),
            whole("gpus", "GPUs"),
            choice("weights", "Weight precision", [[p, p] for p in PRECISIONS]),
            choice("kv", "KV precision", kv_choices),
            whole("context", "Context per user (tokens)"),
            whole("prefix", "Shared prefix (tokens)"),
        ],
        "outputs": [
            {"name": "users", "label": "Users that fit"},
            {"name": "per_user", "label": "Tokens/s for each user"},
            {"name": "total", "label": "Tokens/s for all users"},
            {"name": "kv_per_user", "label": "KV cache per user"},
            {"name": "memory", "label": "Memory: weights · KV · headroom", "stack": "memory_parts"},
            {"name": "step", "label": "Decode step: weights read · KV read", "stack": "step_parts"},
        ],
    }


def _check(gpus: int, context: int, prefix: int) -> None:
    for name, value in (("gpus", gpus), ("context", context), ("prefix", prefix)):
        low, high = LIMITS[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise SpecError(f"must be a whole number from {low:,} to {high:,}, got {value!r}", field=name)


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


def _empty(params: dict[str, Any], verdict: str, explain: str, memory: str, parts: list[dict[str, Any]]) -> dict:
    """The answer when no user can be served: every rate a dash, the memory as far as it is known."""
    return {
        "params": params,
        "fits": False,
        "verdict": verdict,
        "summary": f"{verdict}. {explain}",
        "users": "0",
        "max_users": 0,
        "per_user": NOT_APPLICABLE,
        "total": NOT_APPLICABLE,
        "kv_per_user": NOT_APPLICABLE,
        "memory": memory,
        "memory_parts": parts,
        "step": NOT_APPLICABLE,
        "step_parts": [],
        "explain": explain,
    }


def view(model: str, gpu: str, gpus: int, weights: str, kv: str, context: int, prefix: int) -> dict[str, Any]:
    """Users that fit, the memory split, per-user and total tokens/s, and the step's split, for one deployment.

    Raises SpecError for an unknown id or precision, or an out-of-range number.
    """
    _check(gpus, context, prefix)
    params = dict(model=model, gpu=gpu, gpus=gpus, weights=weights, kv=kv, context=context, prefix=prefix)
    specs = builtin_specs()
    hardware = Hardware(specs.gpu(gpu), gpus)
    total_bytes = hardware.addressable_memory_bytes  # what the driver reports, as engines see it
    if prefix >= context:
        return _empty(
            params,
            "Shared prefix too long",
            f"The shared prefix ({prefix:,} tokens) must be shorter than each user's context ({context:,} tokens):"
            " it is the first part of that context, and each user needs some tokens of its own.",
            NOT_APPLICABLE,
            [],
        )
    workload = Workload(specs.model(model), weights, kv, context=context, shared_prefix=prefix)
    users = users_that_fit(hardware, workload) or 0
    if users == 0:
        memory = memory_use(hardware, workload)
        needed = gpus_to_fit(hardware, workload)
        held = memory.weights_bytes + workload.kv_bytes_shared
        return _empty(
            params,
            "Not one user fits",
            f"{workload.model.name} at {weights} needs {fmt.gigabytes(memory.weights_bytes)} for its weights"
            + (f" and {fmt.gigabytes(workload.kv_bytes_shared)} for the shared prefix" if prefix else "")
            + f", and each user {fmt.gigabytes(workload.kv_bytes_private)} of cache, but {_plural(gpus, 'GPU')}"
            f" leave{'s' if gpus == 1 else ''} {fmt.gigabytes(memory.usable_bytes)} usable"
            f" ({hardware.usable_fraction:.0%} of memory). It needs at least {needed:,} of these GPUs,"
            " or fewer bytes per weight or per cached value.",
            f"{fmt.gigabytes(held)} needed of {fmt.gigabytes(memory.usable_bytes)} usable",
            [{"label": "weights", "share": min(1.0, held / total_bytes)}],
        )
    full = Workload(workload.model, weights, kv, batch=users, context=context, shared_prefix=prefix)
    memory = memory_use(hardware, full)
    step = decode_step(hardware, full)
    split = step_split(hardware, full)
    headroom = total_bytes - memory.used_bytes
    per_user, total = fmt.rate(1 / step.seconds), fmt.rate(users / step.seconds)
    shared = f", {fmt.gigabytes(workload.kv_bytes_shared)} of it shared once" if prefix else ""
    explain = (
        f"The weights take {fmt.gigabytes(memory.weights_bytes)} of the {fmt.gigabytes(memory.usable_bytes)}"
        f" usable ({hardware.usable_fraction:.0%} of {fmt.gigabytes(total_bytes)}). Each user's cache at"
        f" {context:,} tokens is {fmt.gigabytes(workload.kv_bytes_private, 2)} of its own{shared}, so"
        f" {_plural(users, 'user')} fit, leaving {fmt.gigabytes(headroom)} as headroom. Each decode step reads"
        f" the weights in {fmt.milliseconds(split.weights_s)} and every user's cache in"
        f" {fmt.milliseconds(split.kv_s)} ({split.kv_share:.0%} of the reads). Decode is {step.bound}-bound:"
        f" each user gets {per_user} tokens/s, {total} in all."
    )
    return {
        "params": params,
        "fits": True,
        "verdict": f"{_plural(users, 'user')} fit",
        "summary": f"{_plural(users, 'user')} fit; {per_user} tokens/s each, {total} in all.",
        "users": f"{users:,}",
        "max_users": users,
        "per_user": per_user,
        "total": total,
        "kv_per_user": fmt.gigabytes(workload.kv_bytes_private, 2),
        "memory": f"{memory.weights_bytes / 1e9:,.1f} · {memory.kv_bytes / 1e9:,.1f} · {headroom / 1e9:,.1f} GB",
        "memory_parts": [
            {"label": "weights", "share": memory.weights_bytes / total_bytes},
            {"label": "KV cache", "share": memory.kv_bytes / total_bytes},
            {"label": "headroom", "share": headroom / total_bytes},
        ],
        "step": f"{split.weights_s * 1e3:,.1f} · {split.kv_s * 1e3:,.1f} ms",
        "step_parts": [
            {"label": "weights read", "share": 1 - split.kv_share},
            {"label": "KV read", "share": split.kv_share},
        ],
        "explain": explain,
    }
