"""The calculator "How many GPUs, in what layout" (``<!-- roofline:calculator mixture_of_experts -->``), chapter 7.

A mixture of experts (or any model) on a GPU type, at a batch and a context: for each GPU count of
``roofline.moelayout.GPU_COUNTS``, tensor parallelism (TP-G) and expert parallelism with
data-parallel attention (EP-G), each with its decode ceiling in tokens/s for all users, or the one
line that says why it cannot serve (heads that do not split, experts that do not divide, a chip
without links, not enough memory). Every figure is ``roofline.moelayout``'s, at the ceiling's costs
(an upper bound: expert parallelism has no calibrated expected figure yet).
"""

from __future__ import annotations

from typing import Any

from roofline import Hardware, SpecError, Workload, builtin_specs
from roofline import formatting as fmt
from roofline.forms import Field, Form, Output
from roofline.moelayout import GPU_COUNTS, LayoutResult, fewest_gpus, layouts, most_per_gpu
from roofline.precisions import PRECISIONS

NOT_APPLICABLE = "—"
# Read once, as the module is imported: the worker imports it once per page.
_SPECS = builtin_specs()

FORM = Form(
    title="How many GPUs, in what layout?",
    legend="Model, GPU, batch and context",
    fields=[
        Field.model("model", "Model", _SPECS, default="deepseek-v3"),
        Field.gpu("gpu", "GPU", _SPECS, default="h100-sxm"),
        Field.choice("weights", "Weight precision", [(p, p) for p in PRECISIONS], default="fp8"),
        Field.number("batch", "Users (batch)", low=1, high=100_000, default=4096),
        Field.number("context", "Context per user (tokens)", low=0, high=131072, default=4096),
        Field.number("redundant", "Redundant expert slots (EP)", low=0, high=256, default=0),
    ],
    outputs=[
        Output.text("fewest", "Fewest GPUs that serve it"),
        Output.text("best", "Most tokens/s per GPU"),
        *(Output.text(f"g{gpus}", f"{gpus} GPU{'s' if gpus > 1 else ''}: TP · EP") for gpus in GPU_COUNTS),
    ],
)
#: The inputs' defaults (the form's), for tests and the benchmark.
DEFAULTS: dict[str, Any] = FORM.defaults
#: The benchmark's inputs (scripts/bench_browser.py times each one's input-to-numbers in the page):
#: models, GPUs, batches and contexts a reader would try, each differing from the last.
BENCH_INPUTS = [
    {"model": model, "gpu": gpu, "batch": batch, "context": context}
    for model, gpu in (("deepseek-v3", "h100-sxm"), ("qwen3-30b-a3b", "h200"), ("gpt-oss-120b", "b200"))
    for batch in (64, 1024, 8192)
    for context in (1024, 8192)
]
BENCH_TRIGGER = "batch"


def _cell(item: LayoutResult) -> str:
    """One layout in words: its ceiling when it serves, else why not."""
    if item.tokens_per_s is None:
        return f"{item.name}: {item.reason}"
    rate = f"{fmt.rate(item.tokens_per_s)} tokens/s"
    if item.fits:
        return f"{item.name} {rate} ({item.bound}-bound)"
    return f"{item.name} does not fit: {item.reason}"


def _pick(item: LayoutResult | None) -> str:
    if item is None:
        return "none of these layouts holds this batch at this context"
    per_gpu = item.tokens_per_s / item.gpus
    return f"{item.name}: {fmt.rate(item.tokens_per_s)} tokens/s, {fmt.rate(per_gpu)} a GPU (ceiling)"


@FORM.view
def view(model: str, gpu: str, weights: str, batch: int, context: int, redundant: int) -> dict[str, Any]:
    """TP-G and EP-G for each G of GPU_COUNTS at the ceiling, and the two layouts worth naming."""
    specs = FORM.specs()  # the built-in specs, and the reader's own GPU or model when the page sends one
    spec = specs.model(model)
    try:
        work = Workload(spec, weights, "bf16", batch, context)
    except SpecError as error:
        return {"fewest": error.message, "best": NOT_APPLICABLE, **{f"g{g}": NOT_APPLICABLE for g in GPU_COUNTS}}
    found = layouts(Hardware(specs.gpu(gpu)), work, GPU_COUNTS, redundant=redundant)
    answer = {"fewest": _pick(fewest_gpus(found)), "best": _pick(most_per_gpu(found))}
    for tp, ep in zip(found[0::2], found[1::2], strict=True):
        answer[f"g{tp.gpus}"] = f"{_cell(tp)} · {_cell(ep)}"
    return answer
