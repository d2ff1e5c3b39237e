"""The calculator "KV budget" (``<!-- roofline:calculator kv_budget -->``), chapter 2.

``FORM`` declares the inputs, the rule between them and the outputs
(``roofline.forms``); ``view(**inputs)`` computes what they show, at build time in
CPython (the first paint) and in the reader's browser in Pyodide. Every number
comes from the package: users that fit from
``roofline.users_that_fit``, the memory from ``memory_use``, the step from
``decode_step`` and its split from ``step_split``, all at the number of users
that fit. This module only chooses what to show and puts it in words.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from roofline import Hardware, Workload, builtin_specs, decode_step, memory_use, step_split, users_that_fit
from roofline import formatting as fmt
from roofline.calibration import UNFITTED_FLAG, expected_costs, load_calibration
from roofline.forms import Field, Form, Output, Rule
from roofline.kvformats import KV_FORMAT_NAMES, kv_format
from roofline.memorykinds import DRIVER, POOL, USABLE, labelled
from roofline.performance import gpu_count_problem, gpus_to_fit
from roofline.precisions import PRECISIONS

NOT_APPLICABLE = "—"
_SPECS = builtin_specs()

FORM = Form(
    title="KV budget: how many users fit, and how fast they go",
    legend="Deployment",
    fields=[
        Field.model("model", "Model", _SPECS, default="llama-3.1-8b"),
        Field.gpu("gpu", "GPU", _SPECS, default="h100-sxm"),
        Field.number("gpus", "GPUs", low=1, high=64, default=1),
        Field.choice("weights", "Weight precision", [(p, p) for p in PRECISIONS], default="bf16"),
        Field.choice(
            "kv",
            "KV precision",
            [(name, f"{name}, {kv_format(name).effective_bytes:g} B") for name in KV_FORMAT_NAMES],
            default="bf16",
        ),
        Field.number("context", "Context per user (tokens)", low=1, high=1_048_576, default=8192),
        Field.number("prefix", "Shared prefix (tokens)", low=0, high=1_048_576, default=0),
    ],
    outputs=[
        Output.text("users", "Users that fit"),
        Output.text("per_user", "Tokens/s for each user"),
        Output.text("total", "Tokens/s for all users"),
        Output.text("expected", "Tokens/s each, expected (with band)"),
        Output.text("kv_per_user", "KV cache per user"),
        Output.stack("memory", "Memory the driver reports: weights · KV · headroom", parts="memory_parts"),
        Output.stack("step", "Decode step: weights read · KV read", parts="step_parts"),
    ],
    rules=[
        Rule.at_most(
            "prefix",
            "context",
            "The shared prefix cannot be longer than each user's context: it is the first part of that context.",
        )
    ],
)
#: The inputs' defaults (the form's), for tests and the benchmark.
DEFAULTS: dict[str, Any] = FORM.defaults


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


def _size(value_bytes: float) -> str:
    """A cache size in GB with two decimals, or in smaller units when that would show 0.00 GB."""
    return fmt.gigabytes(value_bytes, 2) if value_bytes >= 5e6 or value_bytes == 0 else fmt.bytes_size(value_bytes)


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
        "expected": NOT_APPLICABLE,
        "kv_per_user": NOT_APPLICABLE,
        "memory": memory,
        "memory_parts": parts,
        "step": NOT_APPLICABLE,
        "step_parts": [],
        "explain": explain,
    }


def _unlimited(params: dict[str, Any], hardware: Hardware, workload: Workload, warning: str) -> dict[str, Any]:
    """The answer when every cached token is shared (the prefix is the whole context): the weights and
    one copy of the prefix fit, and each further user adds no cache, so no number of users is the
    limit; the rates are one user's."""
    memory = memory_use(hardware, workload)
    total_bytes = hardware.addressable_memory_bytes
    step = decode_step(hardware, workload)
    split = step_split(hardware, workload)
    headroom = total_bytes - memory.used_bytes
    per_user = fmt.rate(1 / step.seconds)
    verdict = "No limit: every cached token is shared"
    explain = (
        f"{warning}The shared prefix is each user's whole context, so the"
        f" {fmt.gigabytes(workload.kv_bytes_shared)} of cache is held once and no user holds any of its own:"
        f" memory sets no limit on users. One user gets {per_user} tokens/s;"
        " more users share each step's weight reads until decode turns compute-bound."
    )
    return {
        "params": params,
        "fits": True,
        "verdict": verdict,
        "summary": f"{verdict}; {per_user} tokens/s for one user.",
        "users": "no limit",
        "max_users": None,
        "per_user": per_user,
        "total": NOT_APPLICABLE,
        "expected": NOT_APPLICABLE,
        "kv_per_user": _size(0),
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


@FORM.view
def view(model: str, gpu: str, gpus: int, weights: str, kv: str, context: int, prefix: int) -> dict[str, Any]:
    """Users that fit, the memory split, per-user and total tokens/s, and the step's split, for one deployment.

    The form has checked every input, and that the prefix is no longer than the context. A prefix as
    long as the context leaves no user a cache of its own: no limit, as ``roofline estimate`` says.
    """
    params = dict(model=model, gpu=gpu, gpus=gpus, weights=weights, kv=kv, context=context, prefix=prefix)
    specs = FORM.specs()
    hardware = Hardware(specs.gpu(gpu), gpus)
    total_bytes = hardware.addressable_memory_bytes  # what the driver reports, as engines see it
    workload = Workload(specs.model(model), weights, kv, context=context, shared_prefix=prefix)
    layout = gpu_count_problem(workload.model, gpus)
    if layout:
        refused = _empty(
            params,
            f"{workload.model.name} does not split over {_plural(gpus, 'GPU')}",
            f"{layout}. Choose one of those counts.",
            NOT_APPLICABLE,
            [],
        )
        return {**refused, "users": NOT_APPLICABLE}
    # Past the model's limit the arithmetic still runs, but no engine serves such a context: say so first.
    beyond = workload.model.past_max_context(context, "A context")
    warning = f"{beyond}. " if beyond else ""
    users = users_that_fit(hardware, workload)
    if users is None:
        return _unlimited(params, hardware, workload, warning)
    if users == 0:
        memory = memory_use(hardware, workload)
        needed = gpus_to_fit(hardware, workload)
        held = memory.weights_bytes + workload.kv_bytes_shared
        return _empty(
            params,
            "Not one user fits",
            f"{warning}{workload.model.name} at {weights} needs {fmt.gigabytes(memory.weights_bytes)} for its weights"
            + (f" and {fmt.gigabytes(workload.kv_bytes_shared)} for the shared prefix" if prefix else "")
            + f", and each user {fmt.gigabytes(workload.kv_bytes_private)} of cache, but {_plural(gpus, 'GPU')}"
            f" leave{'s' if gpus == 1 else ''} {labelled(USABLE, hardware.usable_memory_bytes)} for weights and cache"
            f" (all they report but a small workspace). It needs at least {needed:,} of these GPUs,"
            " or fewer bytes per weight or per cached value.",
            f"{fmt.gigabytes(held)} needed of {labelled(USABLE, hardware.usable_memory_bytes)}",
            [{"label": "weights", "share": min(1.0, held / total_bytes)}],
        )
    full = Workload(workload.model, weights, kv, batch=users, context=context, shared_prefix=prefix)
    memory = memory_use(hardware, full)
    step = decode_step(hardware, full)
    split = step_split(hardware, full)
    # Headroom is everything the weights and caches leave: the reserve for activations and the runtime
    # (the workspace, and the share of what the weights leave that the cache does not get) and the
    # part of the cache's pool too small for one more user.
    headroom = total_bytes - memory.used_bytes
    reserve = total_bytes - memory.usable_bytes
    per_user, total = fmt.rate(1 / step.seconds), fmt.rate(users / step.seconds)
    # The costs and the band together (widened, and flagged, on a GPU or math the fit has no rows for).
    ground = expected_costs(hardware, full, load_calibration())
    expected_rate = 1 / decode_step(replace(hardware, costs=ground.costs), full).seconds
    # No faster than the ceiling's own rate, which no engine can beat.
    band = ground.decode_rate_band(expected_rate, 1 / step.seconds)
    expected = fmt.banded(fmt.rate(expected_rate), *map(fmt.rate, band))
    # The page says why where the band is wider than the fit's own (calibration.expected_costs).
    flagged = f" Expected band: {ground.flag}." if ground.widened else ""
    shared = f", {fmt.gigabytes(workload.kv_bytes_shared)} of it shared once" if prefix else ""
    explain = (
        f"{warning}The weights take {fmt.gigabytes(memory.weights_bytes)} of {labelled(DRIVER, total_bytes)},"
        f" and the cache gets {hardware.usable_fraction:.0%} of what they and the runtime's workspace"
        f" leave, a {labelled(POOL, memory.pool_bytes)}. Each user's cache at {_plural(context, 'token')} is"
        f" {_size(workload.kv_bytes_private)} of its own{shared}, so {_plural(users, 'user')} fit. That leaves"
        f" {_size(memory.usable_bytes - memory.used_bytes)} of the cache's share free, less than one"
        f" more user's cache; the headroom of {fmt.gigabytes(headroom)} is mostly the"
        f" {fmt.gigabytes(reserve)} reserved for activations and the runtime. Each decode step reads"
        f" the weights in {fmt.milliseconds(split.weights_s)} and every user's cache in"
        f" {fmt.milliseconds(split.kv_s)} ({split.kv_share:.0%} of the reads). Decode is {step.bound}-bound:"
        f" each user gets {per_user} tokens/s, {total} in all, at the ceiling; expected, {expected} tokens/s each."
        f"{flagged} {fmt.EXPECTED_MEANS}"
    )
    return {
        "params": params,
        "fits": True,
        "verdict": f"{_plural(users, 'user')} fit" + (f", past {workload.model.name}'s limit" if beyond else ""),
        "summary": f"{warning}{_plural(users, 'user')} fit; {per_user} tokens/s each, {total} in all.",
        "users": f"{users:,}",
        "max_users": users,
        "per_user": per_user,
        "total": total,
        "expected": f"{expected}, {UNFITTED_FLAG}" if ground.widened else expected,
        "kv_per_user": _size(workload.kv_bytes_private),
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
