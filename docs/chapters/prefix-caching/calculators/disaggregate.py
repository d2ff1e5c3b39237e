"""The calculator "Should I disaggregate?" (``<!-- roofline:calculator disaggregate -->``), chapter 8.

A workload (model, GPUs per instance, prompt and output lengths, request rate) and its two
targets (time to first token, time between tokens): the decode batch that meets the second, what
one prefill does to a decode iteration of that batch on a shared server, the KV transfer a split
pays beside the prefill it follows, the pools a split needs, and the verdict with its reason
(``roofline.splitchoice.choose``, on ``roofline.disagg``). Every figure is the ceiling's: the
datasheet's bandwidth and peak, the links' nameplate, no setup latency on the transfer.
"""

from __future__ import annotations

from typing import Any

from roofline import Hardware, SpecError, Workload, builtin_specs
from roofline import formatting as fmt
from roofline.disagg import LINKS, link_name
from roofline.forms import Field, Form, Output
from roofline.splitchoice import choose

NOT_APPLICABLE = "—"
_SPECS = builtin_specs()
LINK_NAMES = {
    "nvlink": "NVLink, within one node",
    "network": "The network between nodes (a NIC per GPU)",
    "pcie": "Through host memory (PCIe)",
}
VERDICTS = {
    "split": "Disaggregate: separate prefill and decode pools",
    "keep": "Keep one pool: disaggregation would lose here",
    "neither": "Neither layout meets these targets",
}

FORM = Form(
    title="Should I disaggregate this workload?",
    legend="Model, GPUs, traffic and targets",
    fields=[
        Field.model("model", "Model", _SPECS, default="llama-3.1-70b"),
        Field.gpu("gpu", "GPU", _SPECS, default="h100-sxm"),
        Field.number("gpus", "GPUs per instance (tensor parallel)", low=1, high=8, default=4),
        Field.number("prompt", "Prompt (tokens)", low=1, high=131072, default=4096),
        Field.number("output", "Output (tokens)", low=2, high=32768, default=256),
        Field.number("rate", "Requests per second", low=0.1, high=1000, step=0.1, default=10),
        Field.number("ttft_slo", "Time-to-first-token target (s)", low=0.01, high=60, step=0.01, default=1),
        Field.number("itl_slo", "Time-between-tokens target (s)", low=0.005, high=1, step=0.005, default=0.05),
        Field.choice("link", "KV link between the pools", [(key, LINK_NAMES[key]) for key in LINKS], default="network"),
    ],
    outputs=[
        Output.text("batch", "Decode batch within the time-between-tokens target"),
        Output.text("stall", "One prefill inside that decode iteration (shared server)"),
        Output.text("transfer", "KV transfer a split pays, beside the prefill"),
        Output.bar("transfer_bar", "Transfer as a share of the prefill", share="transfer_share"),
        Output.text("pools", "Pools for this rate (instances)"),
        Output.text("ratio", "Prefill GPUs per decode GPU (rate-matched)"),
    ],
)
#: The inputs' defaults (the form's), for tests and the benchmark.
DEFAULTS: dict[str, Any] = FORM.defaults
#: The benchmark's inputs (scripts/bench_browser.py times each one's input-to-numbers in the page):
#: short to long prompts, light to heavy load, models and GPUs a reader would try, each differing from the last.
BENCH_INPUTS = [
    {"model": model, "gpu": gpu, "prompt": prompt, "rate": rate}
    for model, gpu in (("llama-3.1-70b", "h100-sxm"), ("llama-3.1-8b", "h200"), ("mixtral-8x7b", "b200"))
    for prompt in (100, 4096, 32768)
    for rate in (1, 25)
]
BENCH_TRIGGER = "rate"


def _refused(params: dict[str, Any], explain: str) -> dict[str, Any]:
    verdict = "This workload cannot be priced on that hardware"
    return {
        "params": params,
        "fits": False,
        "verdict": verdict,
        "summary": f"{verdict}. {explain}",
        "batch": NOT_APPLICABLE,
        "stall": NOT_APPLICABLE,
        "transfer": NOT_APPLICABLE,
        "transfer_bar": NOT_APPLICABLE,
        "transfer_share": 0.0,
        "pools": NOT_APPLICABLE,
        "ratio": NOT_APPLICABLE,
        "explain": explain,
    }


@FORM.view
def view(
    model: str,
    gpu: str,
    gpus: int,
    prompt: int,
    output: int,
    rate: float,
    ttft_slo: float,
    itl_slo: float,
    link: str,
) -> dict[str, Any]:
    """The verdict and the figures behind it, at the ceiling's costs."""
    params = dict(
        model=model, gpu=gpu, gpus=gpus, prompt=prompt, output=output, rate=rate, ttft_slo=ttft_slo,
        itl_slo=itl_slo, link=link,
    )  # fmt: skip
    specs = FORM.specs()  # the built-in specs, with the reader's own GPU or model when one is chosen
    spec = specs.gpu(gpu)
    try:
        hardware = Hardware(spec, gpus)
        choice = choose(hardware, Workload(specs.model(model)), prompt, output, rate, ttft_slo, itl_slo, link)
    except SpecError as error:
        return _refused(params, str(error))
    moved = choice.transfer
    share = moved.transfer_to_prefill
    answer: dict[str, Any] = {
        "params": params,
        "fits": choice.verdict != "neither",
        "verdict": VERDICTS[choice.verdict],
        "batch": f"{choice.decode_batch:,} users" if choice.decode_batch else "none",
        "transfer": (
            f"{fmt.milliseconds(moved.seconds)} for {fmt.gigabytes(moved.bytes, 2)} over {link_name(spec, link)},"
            f" beside a {fmt.duration(moved.prefill_s)} prefill"
        ),
        "transfer_bar": f"{share:.1%}",
        "transfer_share": min(1.0, share),
        "stall": NOT_APPLICABLE,
        "pools": NOT_APPLICABLE,
        "ratio": NOT_APPLICABLE,
        "explain": f"{choice.reason[0].upper()}{choice.reason[1:]}.",
    }
    if choice.stall is not None:
        stall = choice.stall
        answer["stall"] = (
            f"{fmt.milliseconds(stall.iteration_s)} instead of {fmt.milliseconds(stall.decode_s)}"
            f" ({stall.ratio:.1f}× the gap)"
        )
    if choice.prefill_instances is not None:
        each = f"{gpus} GPU{'s' if gpus > 1 else ''} each"
        pools = f"{choice.prefill_instances:,} prefill + {choice.decode_instances:,} decode, {each}"
        answer["pools"] = pools if choice.verdict == "split" else f"if split: {pools}"
        answer["ratio"] = f"{choice.prefill_gpus_per_decode_gpu:.2f}"
    answer["summary"] = f"{answer['verdict']}. {answer['explain']}"
    return answer
