"""The calculator "Deploy it" (``<!-- roofline:calculator deploy -->``), chapter 6.

A model on some GPUs, split by tensor parallelism, by pipeline stages or both: decode
per user and in total, the prefill, memory per GPU, the share of a token spent talking,
and the best split of the same GPUs, each as the ceiling (an upper bound) and the
expected figure (a calibrated prediction with its band) side by side. Every number comes
from ``roofline.deployment`` at the two cost models; a split the model or the links
cannot take is refused with the package's one line, every figure a dash.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from roofline import Hardware, SpecError, Workload, builtin_specs, load_calibration
from roofline import formatting as fmt
from roofline.calibration import UNFITTED_FLAG, GroundedCosts, expected_costs
from roofline.deployment import PARALLEL, Deployment, best_split, deploy, domain_note, split_for
from roofline.forms import Field, Form, Output
from roofline.precisions import PRECISIONS

NOT_APPLICABLE = "—"
# Read once, as the module is imported: the worker imports it once per page, where the files never
# change, and a site build imports it afresh (sitegen.pages). Reading them again on every input
# cost more than the answer itself: 1.0-1.5 ms of Python in Pyodide against 0.2-0.5 ms.
_SPECS = builtin_specs()
_CALIBRATION = load_calibration()
SPLIT_NAMES = {
    "tp": "Tensor parallel: every layer over all GPUs",
    "pp": "Pipeline: one GPU per stage",
    "tpxpp": "Both: pipeline stages of tensor-parallel groups",
}
#: All-reduce latencies the reader may pick: the ceiling's (the smallest measured on the GPU's
#: links), a named preset of the GPU's spec, or the fitted one of the expected figure.
LATENCIES = {
    "smallest": "Smallest measured (the ceiling's)",
    "custom_oneshot": "One-shot custom kernel",
    "vllm_custom": "vLLM custom all-reduce",
    "nccl": "NCCL",
}

FORM = Form(
    title="Deploy it: split a model over GPUs",
    legend="Model, GPUs and split",
    fields=[
        Field.model("model", "Model", _SPECS, default="llama-3.1-70b"),
        Field.gpu("gpu", "GPU", _SPECS, default="h100-sxm"),
        Field.choice("split", "Split", [(key, SPLIT_NAMES[key]) for key in PARALLEL], default="tp", wide=True),
        Field.number("gpus", "GPUs", low=1, high=64, default=8),
        Field.number("pp_stages", "Pipeline stages (both)", low=1, high=64, default=2),
        Field.number("microbatches", "Micro-batches (pipeline)", low=1, high=64, default=4),
        Field.choice("weights", "Weight precision", [(p, p) for p in PRECISIONS], default="fp8"),
        Field.number("batch", "Users (batch)", low=1, high=4096, default=16),
        Field.number("context", "Context per user (tokens)", low=0, high=131072, default=2048),
        Field.number("prompt", "Prompt to prefill (tokens)", low=0, high=32768, default=1024),
        Field.choice("latency", "All-reduce latency", list(LATENCIES.items()), default="smallest", wide=True),
    ],
    outputs=[
        Output.text("per_user", "Tokens/s for each user: ceiling · expected (band)"),
        Output.text("total", "Tokens/s for all users: ceiling · expected (band)"),
        Output.text("prefill", "Time to first token: ceiling · expected (band)"),
        Output.text("memory", "Memory per GPU: weights · KV cache of the pool"),
        Output.stack("step", "Ceiling's token: weights and cache · all-reduces and hops", parts="step_parts"),
        Output.bar("talk", "Share of a token spent talking (ceiling)", share="talk_share"),
        Output.text("best", "Fastest split of these GPUs for one user (ceiling)"),
    ],
)
#: The inputs' defaults (the form's), for tests and the benchmark.
DEFAULTS: dict[str, Any] = FORM.defaults


def _refused(params: dict[str, Any], verdict: str, explain: str) -> dict[str, Any]:
    return {
        "params": params,
        "fits": False,
        "verdict": verdict,
        "summary": f"{verdict}. {explain}",
        "per_user": NOT_APPLICABLE,
        "total": NOT_APPLICABLE,
        "prefill": NOT_APPLICABLE,
        "memory": NOT_APPLICABLE,
        "step": NOT_APPLICABLE,
        "step_parts": [],
        "talk": NOT_APPLICABLE,
        "talk_share": 0.0,
        "best": NOT_APPLICABLE,
        "explain": explain,
    }


def _band(low: float, high: float, rate: bool) -> str:
    if rate:
        return f"{fmt.rate(low)}–{fmt.rate(high)}"
    return f"{fmt.duration(low)}–{fmt.duration(high)}"


@FORM.view
def view(
    model: str,
    gpu: str,
    split: str,
    gpus: int,
    pp_stages: int,
    microbatches: int,
    weights: str,
    batch: int,
    context: int,
    prompt: int,
    latency: str,
) -> dict[str, Any]:
    """The deployment at the ceiling and at the expected costs, and the best split of the same GPUs."""
    params = dict(
        model=model,
        gpu=gpu,
        split=split,
        gpus=gpus,
        pp_stages=pp_stages,
        microbatches=microbatches,
        weights=weights,
        batch=batch,
        context=context,
        prompt=prompt,
        latency=latency,
    )
    specs = FORM.specs()  # the built-in specs, with the reader's own GPU or model when one is chosen
    spec = specs.gpu(gpu)
    kv = "fp8" if weights in ("fp8", "fp8-block") else "bf16"
    try:
        preset = None
        if latency != "smallest":
            if spec.interconnect is None:
                raise SpecError(
                    f"{spec.name} has no interconnect in its spec, so no all-reduce latency",
                    field="latency",
                    hint="choose the smallest measured",
                )
            preset = latency
        # A preset, like the ceiling's smallest, is charged at each group's GPU count (it grows with it).
        hardware = Hardware(spec, 1, compute_precision="auto", allreduce_preset=preset)
        workload = Workload(specs.model(model), weights, kv, batch, context, prompt)
        chosen = split_for(split, gpus, pp_stages if split == "tpxpp" else None, microbatches)
        ceiling = deploy(hardware, workload, chosen)
        # The costs and the band together, at the split's GPU count (its links): widened where unfitted.
        ground = expected_costs(hardware, workload, _CALIBRATION, gpus=chosen.gpus)
        expected = deploy(replace(hardware, costs=ground.costs), workload, chosen)
        best = best_split(hardware, workload, gpus, microbatches)
    except SpecError as error:
        return _refused(params, f"{specs.model(model).name} cannot be deployed that way", str(error))
    answer = _answer(params, ceiling, expected, best, ground, workload, spec.name)
    # A group past one NVLink domain is allowed (deployment.check_split, the rule chapter 1 uses too), and said.
    wide = domain_note(hardware, chosen.tp)
    if wide:
        answer["explain"] = f"{wide}. {answer['explain']}"
    return answer


def _answer(
    params, ceiling: Deployment, expected: Deployment, best, ground: GroundedCosts, workload, gpu_name
) -> dict[str, Any]:
    step, step_x = ceiling.step, expected.step
    calibration = ground.calibration  # its band is the widened one where the fit has no rows
    itl_low, itl_high = calibration.band_for("itl_mean_s", step_x.interval_s)
    tput_low, tput_high = calibration.band_for("throughput_tokens_per_s", step_x.tokens_per_s_total)
    per_user = (
        f"{fmt.rate(step.tokens_per_s_per_user)} · {fmt.rate(step_x.tokens_per_s_per_user)}"
        f" ({_band(1 / itl_high, 1 / itl_low, True)})"
    )
    total = (
        f"{fmt.rate(step.tokens_per_s_total)} · {fmt.rate(step_x.tokens_per_s_total)}"
        f" ({_band(tput_low, tput_high, True)})"
    )
    if ceiling.prefill_s:
        ttft_low, ttft_high = calibration.band_for("ttft_mean_s", expected.prefill_s)
        band = _band(ttft_low, ttft_high, False)
        prefill = f"{fmt.duration(ceiling.prefill_s)} · {fmt.duration(expected.prefill_s)} ({band})"
    else:
        prefill = "no prompt"
    memory = ceiling.memory
    mem = (
        f"{fmt.gigabytes(memory.weights_bytes)} · {fmt.gigabytes(memory.kv_bytes, 2)}"
        f" of {fmt.gigabytes(memory.pool_bytes)}"
    )
    lap = step.latency_s
    talk = step.communication_s
    split = ceiling.split
    fits = ceiling.fits
    label = split.label
    if best is None:
        best_text = "none of the splits of these GPUs holds this batch"
    else:
        best_text = f"{best.split.label}: {fmt.rate(best.step.tokens_per_s_per_user)} tokens/s each"
    if fits:
        verdict = (
            f"{label}: {fmt.rate(step.tokens_per_s_per_user)} tokens/s per user at most,"
            f" {fmt.rate(step_x.tokens_per_s_per_user)} expected"
        )
    else:
        verdict = f"{label} does not hold {params['batch']:,} users at {params['context']:,} tokens"
    users = "any number of" if memory.max_batch is None else f"{memory.max_batch:,}"
    explain = (
        f"{label} on {split.gpus:,} {gpu_name}s"
        + (f", {split.microbatches} micro-batches of {step.microbatch:,} users" if split.pp > 1 else "")
        + f". The ceiling (datasheet bandwidth and peak, nameplate links, the chosen all-reduce latency) is an upper"
        f" bound: one user's token takes at least {fmt.duration(step.interval_s)}, of which"
        f" {fmt.duration(talk)} is talk ({step.split.tp}-GPU all-reduces"
        + (f" and {split.pp - 1} hop{'s' if split.pp > 2 else ''} between stages" if split.pp > 1 else "")
        + f"). The expected figure, {fmt.duration(step_x.interval_s)}, uses the costs fitted to published runs,"
        f" and the band is where 80% of those runs fell around it"
        + (f" ({ground.flag})" if ground.widened else "")
        + f". Each GPU of the busiest stage holds"
        f" {fmt.gigabytes(memory.weights_bytes)} of weights; its cache pool holds {users} users at this context."
        + ("" if fits else " Use more GPUs, a smaller context or batch, or fewer bytes per weight.")
    )
    reads = max(lap - talk, 0.0)
    return {
        "params": params,
        "fits": fits,
        "verdict": verdict,
        "summary": f"{verdict}. {best_text}.",
        "per_user": per_user,
        "total": f"{total}, {UNFITTED_FLAG}" if ground.widened else total,
        "prefill": prefill,
        "memory": mem,
        "step": f"{reads * 1e3:,.2f} · {talk * 1e3:,.2f} ms",
        "step_parts": [
            {"label": "weights and cache", "share": reads / lap if lap else 0.0},
            {"label": "all-reduces and hops", "share": talk / lap if lap else 0.0},
        ],
        "talk": f"{ceiling.communication_share:.0%}",
        "talk_share": ceiling.communication_share,
        "best": best_text,
        "explain": explain,
    }
