"""The calculator "Which format on my GPU" (``<!-- roofline:calculator which_format -->``), chapter 4.

For one GPU, model, batch, context and prompt: every compared weight format's decode speed per
user and prefill time, each as the *ceiling* (datasheet bandwidth and peak, nothing added) and,
beside it, the *expected* range (the calibrated costs of ``roofline.calibration``, a weight-only
format's dequantization included, and the band of their fit); the users that fit; the critical
batch ``F * b_w / (2 W)``; and the math the format runs on that GPU, with the fallback said in
words. Every number comes from ``roofline``; this module chooses what to show. Its chart is a
plain Vega-Lite dict (no Altair in the page).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from roofline import Hardware, Workload, builtin_specs
from roofline import formatting as fmt
from roofline.calibration import UNFITTED_FLAG, Calibration, expected_costs, load_calibration
from roofline.forms import Field, Form, Output
from roofline.performance import decode_step, prefill_pass, resolved
from roofline.precisions import number_format
from roofline.quantization import FormatAnswer, compare_formats

#: The formats compared, one of each kind: 16-bit, W8A8 fp8, W8A8 int8, W4A16 AWQ, W4A4 NVFP4.
FORMATS = ("bf16", "fp8", "int8-sq", "int4-awq", "nvfp4")
KINDS = {"bf16": "16-bit", "fp8": "W8A8", "int8-sq": "W8A8", "int4-awq": "W4A16", "nvfp4": "W4A4"}
_SPECS = builtin_specs()
#: Read once: reading the packaged file through importlib.resources costs more in the browser
#: than the view's arithmetic.
_CALIBRATION = load_calibration()

FORM = Form(
    title="Which format on my GPU",
    legend="Deployment",
    fields=[
        Field.gpu("gpu", "GPU", _SPECS, default="h100-sxm"),
        Field.model("model", "Model", _SPECS, default="llama-3.1-8b"),
        Field.number("batch", "Users decoding together", low=1, high=4096, default=16),
        Field.number("context", "Context per user (tokens)", low=0, high=131072, default=4096),
        Field.number("prompt", "Prompt to prefill (tokens)", low=0, high=131072, default=2000),
    ],
    outputs=[
        *(Output.text(name.replace("-", "_"), f"{name} ({KINDS[name]}), decode tok/s per user") for name in FORMATS),
        Output.text("users", "Users that fit at this context"),
        Output.text("critical", "Critical batch, F·b/(2W)"),
        Output.vega(
            "chart",
            "Decode tokens/s for each user, by format: bars are the ceilings, dark lines the expected range."
            " Computed by the roofline package in your browser.",
        ),
    ],
)
#: The inputs' defaults (the form's), for tests and the benchmark.
DEFAULTS: dict[str, Any] = FORM.defaults


def _range(low: float, high: float, unit: str) -> str:
    return f"{fmt.rate(low)}–{fmt.rate(high)}{unit}"


def _expected(
    hardware: Hardware, workload: Workload, calibration: Calibration, ceiling: FormatAnswer
) -> dict[str, tuple[float, float]]:
    """The expected band of decode tokens/s per user and of prefill seconds: the decode step and
    the prefill at the fitted costs (a weight-only format's dequantization included), each with
    the band of its kind (``Calibration.decode_rate_band``, ``band_for``), and nothing the page
    does not show."""
    engine = resolved(hardware, workload)
    # The costs and the band for this GPU's math together: widened where the fit has no rows for it.
    ground = expected_costs(engine, workload, calibration)
    calibration = ground.calibration
    fitted = replace(engine, costs=ground.costs)
    # Each band no better than the ceiling's own figure beside it (``ceiling``), which no engine can beat.
    rate = 1.0 / decode_step(fitted, workload).seconds
    found: dict[str, Any] = {"decode": calibration.decode_rate_band(rate, ceiling.decode_tokens_per_s_per_user)}
    if ground.widened:
        found["unfitted"] = ground.calibration.unfitted  # why this format's band is wider (said on the page)
    if workload.prompt:
        prefill_s = prefill_pass(fitted, workload).seconds
        found["prefill"] = calibration.band_for("ttft_mean_s", prefill_s, ceiling.prefill_s)
    return found


def _headline(answer: FormatAnswer, expected: dict[str, tuple[float, float]]) -> str:
    """One format's decode speed per user: the ceiling, then the expected range beside it."""
    if not answer.fits:
        return "does not fit"
    low, high = expected["decode"]
    return f"{fmt.rate(answer.decode_tokens_per_s_per_user)} ceiling · {_range(low, high, '')} expected"


def _line(answer: FormatAnswer, expected: dict[str, tuple[float, float]], prompt: int) -> str:
    """One format, in words: math, decode and prefill (ceiling, then expected), users, critical batch."""
    declared = number_format(answer.weight_precision)
    weight_only = not answer.math.native and declared.math != "unquantized"
    math = f"{answer.math.precision} math" + (", weight-only" if weight_only else "")
    if declared.native_math is not None and not answer.math.native:
        # The package's fallback sentence, without its leading precision and closing "(fp8 math: where)".
        math = answer.math.line.split(": ", 1)[1].rsplit(" (", 1)[0]
    if not answer.fits:
        if answer.users_that_fit:
            room = f"only {answer.users_that_fit:,} users fit at this context"
        else:
            room = "the weights leave no room for a cache on one GPU"
        return f"{answer.weight_precision}: {math}, {answer.bits_per_weight:.4g} bits a weight; does not fit: {room}."
    decode = (
        f"decode ceiling {fmt.rate(answer.decode_tokens_per_s_per_user)} tok/s per user,"
        f" expected {_range(*expected['decode'], ' tok/s')}"
    )
    if prompt and "prefill" in expected:
        low, high = expected["prefill"]
        prefill = (
            f"prefill ceiling {fmt.milliseconds(answer.prefill_s)},"
            f" expected {fmt.milliseconds(low).removesuffix(' ms')}–{fmt.milliseconds(high)}"
        )
    else:
        prefill = "no prompt to prefill"
    users = "any number of users fit" if answer.users_that_fit is None else f"{answer.users_that_fit:,} users fit"
    return (
        f"{answer.weight_precision}: {math}; {decode}; {prefill}; {users}; critical batch {answer.critical_batch:,.0f}."
    )


def _chart(answers: tuple[FormatAnswer, ...], bands: dict[str, dict[str, tuple[float, float]]]) -> dict[str, Any]:
    bars = [
        {"format": a.weight_precision, "ceiling": round(a.decode_tokens_per_s_per_user, 1)} for a in answers if a.fits
    ]
    ranges = [
        {"format": name, "low": round(band["decode"][0], 1), "high": round(band["decode"][1], 1)}
        for name, band in bands.items()
    ]
    y = {"field": "format", "type": "nominal", "sort": list(FORMATS), "title": None}
    x_title = "decode tokens/s per user"
    layers: list[dict[str, Any]] = []
    if bars:
        layers.append(
            {
                "data": {"values": bars},
                "mark": {"type": "bar", "color": "#9ecae9"},
                "encoding": {
                    "y": y,
                    "x": {"field": "ceiling", "type": "quantitative", "title": x_title},
                    "tooltip": [
                        {"field": "format", "type": "nominal"},
                        {"field": "ceiling", "type": "quantitative", "title": "ceiling", "format": ",.0f"},
                    ],
                },
            }
        )
        layers.append(
            {
                "data": {"values": ranges},
                "mark": {"type": "rule", "strokeWidth": 6, "color": "#1f4e79"},
                "encoding": {
                    "y": y,
                    "x": {"field": "low", "type": "quantitative", "title": x_title},
                    "x2": {"field": "high"},
                    "tooltip": [
                        {"field": "format", "type": "nominal"},
                        {"field": "low", "type": "quantitative", "title": "expected, low", "format": ",.0f"},
                        {"field": "high", "type": "quantitative", "title": "expected, high", "format": ",.0f"},
                    ],
                },
            }
        )
        description = (
            "Decode tokens/s per user for each format that fits: bars are ceilings, dark lines the expected range."
        )
    else:
        layers.append(
            {
                "data": {"values": [{"note": "no format fits on one GPU"}]},
                "mark": {"type": "text", "fontSize": 13},
                "encoding": {"text": {"field": "note"}},
            }
        )
        description = "No format fits on one GPU, so there is nothing to plot."
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
        "description": description,
        "height": 240,
        "layer": layers,
    }


def _dequant_words(calibration, gpu) -> str:
    """What the expected range charges a weight-only format for widening its weights on ``gpu``: δ
    and the switch where they were measured (vLLM's legacy awq_gemm on an A100), nothing elsewhere."""
    if calibration.dequant_measured_on(gpu):
        return (
            f", with a weight-only format's quantized matmuls taking {1 + calibration.dequant_overhead:.2f} times"
            f" their math time (δ = {calibration.dequant_overhead:.2f}, vLLM's legacy awq_gemm on this GPU) and,"
            f" from {calibration.dequant_switch_tokens} tokens in a pass, its weights widened to 16 bits first."
        )
    return (
        f"; a weight-only format pays no dequantization there: δ = {calibration.dequant_overhead:.2f} was"
        " measured on vLLM's legacy awq_gemm on an A100 only, and this GPU runs Marlin or Machete, unmeasured."
    )


@FORM.view
def view(gpu: str, model: str, batch: int, context: int, prompt: int) -> dict[str, Any]:
    """Everything the calculator shows for one set of inputs; the form has checked them."""
    specs = FORM.specs()  # the built-in specs, with the reader's own GPU or model when one is chosen
    hardware = Hardware(specs.gpu(gpu))
    calibration = _CALIBRATION
    model_spec = specs.model(model)
    workload = Workload(model_spec, batch=batch, context=context, prompt=prompt)
    answers = compare_formats(hardware, workload, FORMATS)
    bands = {
        a.weight_precision: _expected(hardware, replace(workload, weight_precision=a.weight_precision), calibration, a)
        for a in answers
        if a.fits
    }
    fitting = [a for a in answers if a.fits]
    fastest = max(fitting, key=lambda a: a.decode_tokens_per_s_per_user, default=None)
    beyond = model_spec.past_max_context(context, "A context")
    warning = f"{beyond}. " if beyond else ""
    if fastest is None:
        verdict = f"{warning}No format fits: {batch:,} users of {model_spec.name} at {context:,} tokens"
        verdict += f" need more than one {hardware.gpu.name}."
    else:
        low, high = bands[fastest.weight_precision]["decode"]
        verdict = (
            f"{warning}Fastest decode: {fastest.weight_precision}, {fmt.rate(fastest.decode_tokens_per_s_per_user)}"
            f" tok/s per user on the ceiling, {_range(low, high, '')} expected."
        )
    details = " ".join(_line(a, bands.get(a.weight_precision, {}), prompt) for a in answers)
    widened = [name for name, band in bands.items() if band.get("unfitted")]
    reasons = dict.fromkeys(reason for band in bands.values() for reason in band.get("unfitted", ()))
    if widened:
        details += f" Expected band of {', '.join(widened)}: {UNFITTED_FLAG} ({'; '.join(reasons)})."
    answer: dict[str, Any] = {
        "fits": fastest is not None,
        "verdict": verdict,
        "summary": verdict,
        "explain": (
            "Ceilings take the datasheet's bandwidth and peak, reached in full, and no dequantization cost;"
            " the expected range is the calibrated costs of a tuned engine and the band of their fit"
            + _dequant_words(calibration, hardware.gpu)
            + f" {details}"
        ),
        "chart": _chart(answers, bands),
    }
    answer["users"] = " · ".join(
        f"{a.weight_precision} {'any' if a.users_that_fit is None else f'{a.users_that_fit:,}'}" for a in answers
    )
    answer["critical"] = " · ".join(f"{a.weight_precision} {a.critical_batch:,.0f}" for a in answers)
    for a in answers:
        answer[a.weight_precision.replace("-", "_")] = _headline(a, bands.get(a.weight_precision, {}))
    return answer
