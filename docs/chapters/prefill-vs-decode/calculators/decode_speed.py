"""The calculator "How fast can a GPU generate tokens?" (``<!-- roofline:calculator decode_speed -->``).

A calculator is this kind of module and nothing else: ``FORM`` declares its
inputs and outputs (``roofline.forms``), and ``view(**inputs)``, decorated with
``@FORM.view``, computes what it shows. ``view`` runs in two places: at site build
time in CPython (``hooks/runtime.py`` writes its answer for the defaults into the
page, so the calculator reads correctly at first paint), and in the reader's
browser in Pyodide, on every input. The form checks every input before the view
sees it, here and in the page alike. Every number comes from the package; this
module only chooses what to show and puts it in words.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from roofline import Hardware, Workload, builtin_specs, decode_step, evaluate, memory_use
from roofline import formatting as fmt
from roofline.calibration import load_calibration
from roofline.deployment import domain_note
from roofline.fit import memory_shortfall
from roofline.forms import Field, Form, Output
from roofline.memorykinds import BUDGET, NAMEPLATE, labelled
from roofline.performance import gpu_count_problem
from roofline.precisions import PRECISIONS
from roofline.sweep import gpus_to_fit

#: Users at which the chart samples decode speed: 1, 2, 4 … 4096.
CHART_USERS = tuple(2**power for power in range(13))

NOT_APPLICABLE = "—"
_SPECS = builtin_specs()

FORM = Form(
    title="How fast can a GPU generate tokens?",
    legend="Deployment",
    fields=[
        Field.gpu("gpu", "GPU", _SPECS, default="h100-sxm"),
        Field.model("model", "Model", _SPECS, default="llama-3.1-8b"),
        Field.choice("precision", "Weight precision", [(p, p) for p in PRECISIONS], default="bf16"),
        Field.number("gpus", "GPUs", low=1, high=64, default=1),
        Field.number("users", "Users", low=1, high=4096, default=1),
        Field.number("context", "Context (tokens)", low=0, high=131072, default=4096),
    ],
    outputs=[
        Output.text("per_user", "Tokens/s for each user (ceiling)"),
        Output.text("expected", "Tokens/s for each user (expected, with band)"),
        Output.text("total", "Tokens/s for all users"),
        Output.text("weights", "Weights"),
        Output.text("hardware", "GPUs"),
        Output.bar("memory", "Memory in use", share="memory_share"),
        Output.text("bound", "Decode is"),
        Output.vega(
            "chart",
            "Decode tokens/s for each user and for all users together, as more users share each step"
            " (both axes logarithmic). Computed by the roofline package in your browser.",
        ),
    ],
)
#: The inputs' defaults (the form's), for tests and the benchmark.
DEFAULTS: dict[str, Any] = FORM.defaults


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


def _expected(result: Any) -> tuple[str, str]:
    """One user's expected decode tokens/s with its band, and the sentence on what that means.

    The expected figure is the same step at the costs fitted to published serving runs
    (``roofline.calibration``), the band the fit's 80% band of the time between tokens.
    """
    if not result.memory.fits:
        return NOT_APPLICABLE, ""
    rate, low, high = result.expected.per_user_band()
    shown = fmt.banded(fmt.rate(rate), fmt.rate(low), fmt.rate(high))
    return (
        f"{shown} tokens/s",
        f" Expected: {shown} tokens/s per user. {fmt.EXPECTED_MEANS}",
    )


def chart_points(result: Any) -> list[dict[str, Any]]:
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
    return points


def _chart(result: Any) -> dict[str, Any]:
    """The chart as a Vega-Lite spec (plain dicts, data inline): tokens/s for each user and for all
    users against users, both axes logarithmic, the chosen number of users marked, the range
    memory cannot hold shaded and the crossover ruled."""
    users, top = result.workload.batch, CHART_USERS[-1]
    rows = [
        {"users": point["users"], "series": series, "tokens_per_s": point[key]}
        for point in chart_points(result)
        if point["fits"]
        for key, series in (("total", "all users"), ("per_user", "each user"))
    ]
    series = ["all users", "each user"]
    x = {
        "field": "users",
        "type": "quantitative",
        "title": "users sharing each decode step",
        "scale": {"type": "log", "base": 2, "domain": [1, top]},
        "axis": {"values": [4**power for power in range(7)], "format": ",d"},
    }
    y = {
        "field": "tokens_per_s",
        "type": "quantitative",
        "title": "tokens/s",
        "scale": {"type": "log"},
        "axis": {"format": "~s"},
    }
    color = {"field": "series", "type": "nominal", "sort": series, "title": None, "legend": {"orient": "top-left"}}
    tooltip = [
        {"field": "series", "type": "nominal", "title": "tokens/s for"},
        {"field": "users", "type": "quantitative", "title": "users", "format": ","},
        {"field": "tokens_per_s", "type": "quantitative", "title": "tokens/s", "format": ",.0f"},
    ]
    dash = {"field": "series", "type": "nominal", "sort": series, "legend": None}
    layers: list[dict[str, Any]] = []
    limit = result.memory.max_batch
    if limit is not None and limit < top:
        full = {"values": [{"from": max(limit, 1), "to": top, "note": "memory full"}]}
        shade = {"x": dict(x, field="from"), "x2": {"field": "to"}}
        layers.append({"data": full, "mark": {"type": "rect", "color": "#888888", "opacity": 0.15}, "encoding": shade})
        note = {
            "x": {"field": "to", "type": "quantitative", "scale": x["scale"]},
            "y": {"value": 12},
            "text": {"field": "note"},
        }
        layers.append(
            {"data": full, "mark": {"type": "text", "align": "right", "dx": -6, "color": "#888888"}, "encoding": note}
        )
    crossover = result.crossover_batch
    if crossover is not None and crossover <= top:
        turn = {"values": [{"users": crossover, "note": "compute-bound →"}]}
        layers.append(
            {"data": turn, "mark": {"type": "rule", "strokeDash": [4, 4], "color": "#888888"}, "encoding": {"x": x}}
        )
        note = {"x": x, "y": {"value": 200}, "text": {"field": "note"}}
        layers.append(
            {"data": turn, "mark": {"type": "text", "align": "right", "dx": -4, "color": "#888888"}, "encoding": note}
        )
    if rows:
        lines = {"x": x, "y": y, "color": color, "strokeDash": dash, "tooltip": tooltip}
        layers.append({"data": {"values": rows}, "mark": {"type": "line"}, "encoding": lines})
        here = [row for row in rows if row["users"] == users]
        dots = {"x": x, "y": y, "color": color, "tooltip": tooltip}
        layers.append(
            {"data": {"values": here}, "mark": {"type": "point", "filled": True, "size": 70}, "encoding": dots}
        )
        description = (
            "Decode tokens/s against users. Each user's tokens/s falls and the total rises as more users share"
            f" a step; the dots mark {users:,} users."
        )
    else:
        nothing = {"values": [{"users": 64, "note": "does not fit at any number of users"}]}
        note = {"x": x, "y": {"value": 110}, "text": {"field": "note"}}
        layers.append({"data": nothing, "mark": {"type": "text", "fontSize": 13}, "encoding": note})
        description = "Decode tokens/s against users. Nothing fits in memory, so there is nothing to plot."
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
        "description": description,
        "height": 240,
        "layer": layers,
    }


def _refused(params: dict[str, Any], verdict: str, why: str) -> dict[str, Any]:
    """The answer for inputs no engine runs: every figure a dash, the reason in words, an empty chart."""
    note = {"values": [{"users": 64, "note": "no chart: " + verdict.lower()}]}
    chart = {
        "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
        "description": f"Decode tokens/s against users. {verdict}, so there is nothing to plot.",
        "height": 240,
        "layer": [
            {
                "data": note,
                "mark": {"type": "text", "fontSize": 13},
                "encoding": {
                    "x": {
                        "field": "users",
                        "type": "quantitative",
                        "scale": {"type": "log", "base": 2, "domain": [1, CHART_USERS[-1]]},
                    },
                    "y": {"value": 110},
                    "text": {"field": "note"},
                },
            }
        ],
    }
    dash = NOT_APPLICABLE
    return {
        "params": params,
        "fits": False,
        "verdict": verdict,
        "summary": f"{verdict}. {why}.",
        "per_user": dash,
        "total": dash,
        "weights": dash,
        "hardware": dash,
        "memory": dash,
        "memory_share": 0.0,
        "bound": dash,
        "gpus_needed": 0,
        "expected": dash,
        "explain": f"{why}. Choose one of those counts.",
        "chart": chart,
    }


@FORM.view
def view(gpu: str, model: str, precision: str, gpus: int, users: int, context: int) -> dict[str, Any]:
    """Everything the calculator shows for one set of inputs, as text ready to display, and its chart.

    The form has checked every input (``@FORM.view``); an unknown id raises SpecError.
    """
    specs = FORM.specs()
    gpu_spec, model_spec = specs.gpu(gpu), specs.model(model)
    params = dict(gpu=gpu, model=model, precision=precision, gpus=gpus, users=users, context=context)
    layout = gpu_count_problem(model_spec, gpus)
    if layout:
        return _refused(params, f"{model_spec.name} does not split over {_plural(gpus, 'GPU')}", layout)
    # Past the model's limit the arithmetic still runs, but no engine serves such a context: say so first.
    beyond = model_spec.past_max_context(context, "A context")
    warning = f"{beyond}. " if beyond else ""
    hardware = Hardware(gpu_spec, gpus)
    # The same words as chapter 6's calculator for a group past one NVLink domain (deployment's one rule).
    wide = domain_note(hardware, gpus)
    warning += f"{wide}. " if wide else ""
    workload = Workload(model_spec, precision, batch=users, context=context)
    result = evaluate(hardware, workload, load_calibration())
    memory = result.memory
    fits = memory.fits
    needed = gpus_to_fit(hardware, workload)
    expected, expected_note = _expected(result)
    per_user = fmt.rate(result.decode_tokens_per_s_per_user) if fits else NOT_APPLICABLE
    total = fmt.rate(result.decode_tokens_per_s_total) if fits else NOT_APPLICABLE
    used = f"{fmt.gigabytes(memory.used_bytes)} of {labelled(BUDGET, memory.usable_bytes)}"
    bound = f"{result.decode.bound}-bound" if fits else NOT_APPLICABLE
    return {
        "params": params,
        "fits": fits,
        "verdict": ("Fits in memory" if fits else "Does not fit")
        + (f", past {model_spec.name}'s limit" if beyond else ""),
        "summary": warning
        + (f"{per_user} tokens/s per user, {total} in all, {bound}." if fits else f"Does not fit: {used}."),
        "per_user": per_user,
        "total": total,
        "weights": fmt.gigabytes(memory.weights_bytes),
        "hardware": f"{gpus} GPU{'s' if gpus != 1 else ''} of {labelled(NAMEPLATE, gpu_spec.memory_bytes, 0)}",
        "memory": used,
        "memory_share": memory.used_bytes / memory.usable_bytes,
        "bound": bound,
        "gpus_needed": needed,
        "expected": expected,
        "explain": warning
        + (
            f"{_rule_sentence(result)} {_explain_fits(result)}{expected_note}"
            if fits
            else _explain_does_not_fit(result)
        ),
        "chart": _chart(result),
    }
