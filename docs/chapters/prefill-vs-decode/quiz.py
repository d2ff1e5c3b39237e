"""Chapter 1's quiz: decode ceiling, batch throughput, time per token, prefill time, weight
memory and the critical batch, each drawn afresh and answered by the package
(``roofline.quiz`` explains templates, draws and grading)."""

from __future__ import annotations

from roofline import Hardware, Workload, builtin_specs, decode_step, memory_use
from roofline.architecture import active_parameters, total_parameters, weight_bytes
from roofline.performance import prefill_pass, resolved
from roofline.precisions import bytes_per_value
from roofline.quantization import critical_batch_for
from roofline.quiz import Quiz, Slip, Solution, Step, Template, words

SPECS = builtin_specs()
GPUS = ("h100-sxm", "h200", "b200", "a100-80gb", "mi300x")
MODELS = ("llama-3.1-8b", "mistral-7b", "gemma-2-9b", "llama-3.1-70b", "mixtral-8x7b")
#: Models whose cache at long context is a visible share of a step's read (so forgetting it shows).
LONG_MODELS = ("llama-3.1-8b", "mistral-7b", "llama-3.1-70b", "mixtral-8x7b")
PRECISIONS = ("bf16", "fp8", "int4")
CONTEXTS = (2048, 4096, 8192, 16384, 32768)
BATCHES = (8, 16, 32, 64, 128)
PROMPTS = (512, 1000, 2000, 4000, 8000)


def _decode(p: dict, batch: int) -> tuple[Hardware, Workload, object] | None:
    """The decode step of ``p``'s deployment, or None where the model and cache do not fit."""
    model = SPECS.model(p["model"])
    context = p.get("context", 0)
    if context > model.max_context:  # a context the model does not serve: draw again
        return None
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    workload = Workload(model, weight_precision=p.get("precision", "bf16"), batch=batch, context=context)
    if not memory_use(hardware, workload).fits:
        return None
    return hardware, workload, decode_step(hardware, workload)


def _kv_read(hardware: Hardware, workload: Workload) -> float:
    """The bytes of cache one decode step reads for the whole batch (``Workload.kv_bytes_for``)."""
    return workload.kv_bytes_for(workload.batch)


def decode_ceiling(p: dict) -> Solution | None:
    found = _decode(p, 1)
    if not found:
        return None
    hardware, workload, step = found
    bandwidth = resolved(hardware, workload).bandwidth_bytes_per_s
    kv = _kv_read(hardware, workload)
    answer = 1 / step.seconds
    no_kv = 1 / max((step.bytes_moved - kv) / bandwidth, step.compute_s)
    bits = 1 / max((8 * (step.bytes_moved - kv) + kv) / bandwidth, step.compute_s)
    return Solution(
        answer,
        (
            Step("Bytes one step reads (the weights, plus the cache of the context)", step.bytes_moved / 1e9, "GB"),
            Step("of which the KV cache", kv / 1e9, "GB"),
            Step("Read time = bytes ÷ bandwidth", step.memory_s * 1e3, "ms"),
            Step("Math time = FLOPs ÷ peak (smaller: decode is memory-bound)", step.compute_s * 1e3, "ms"),
            Step("Tokens/s = 1 ÷ step time", answer, "tokens/s"),
        ),
        (
            Slip("kv", no_kv, "you left out the KV cache: each step also reads the whole context's cache."),
            Slip("bits", bits, "you counted bits per weight where the read is in bytes (8 bits a byte)."),
        ),
        words(p, SPECS),
    )


def batch_throughput(p: dict) -> Solution | None:
    found = _decode(p, p["batch"])
    if not found:
        return None
    step = found[2]
    answer = p["batch"] / step.seconds
    per_user = 1 / step.seconds
    return Solution(
        answer,
        (
            Step(
                f"One step for all {p['batch']:,} users (reads the weights once, every cache)", step.seconds * 1e3, "ms"
            ),
            Step("Each user gets one token a step: tokens/s per user = 1 ÷ step", per_user, "tokens/s"),
            Step(f"All users: {p['batch']:,} × per user", answer, "tokens/s"),
        ),
        (Slip("per-user", per_user, "that is one user's rate; the question asks for all users together."),),
        words(p, SPECS),
    )


def time_per_token(p: dict) -> Solution | None:
    found = _decode(p, p["batch"])
    if not found:
        return None
    hardware, workload, step = found
    bandwidth = resolved(hardware, workload).bandwidth_bytes_per_s
    kv = _kv_read(hardware, workload)
    answer = step.seconds * 1e3
    no_kv = max((step.bytes_moved - kv) / bandwidth, step.compute_s) * 1e3
    return Solution(
        answer,
        (
            Step("Weights read once a step", (step.bytes_moved - kv) / 1e9, "GB"),
            Step(f"Caches of {p['batch']:,} users × {p['context']} tokens", kv / 1e9, "GB"),
            Step("Read time = (weights + caches) ÷ bandwidth", step.memory_s * 1e3, "ms"),
            Step("Math time", step.compute_s * 1e3, "ms"),
            Step("Time per output token = the longer of the two", answer, "ms"),
        ),
        (
            Slip(
                "kv",
                no_kv,
                "you left out the KV cache: every user's cache is read each step, and at this batch it is large.",
            ),
        ),
        words(p, SPECS),
    )


def prefill_time(p: dict) -> Solution | None:
    model = SPECS.model(p["model"])
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    workload = Workload(model, weight_precision=p["precision"], prompt=p["prompt"])
    if not memory_use(hardware, workload).fits:
        return None
    prefill = prefill_pass(hardware, workload)
    peak = resolved(hardware, workload).peak_flops_per_s
    answer = prefill.seconds * 1e3
    slips = [Slip("per-token", answer / p["prompt"], "that is per prompt token; the prefill runs the whole prompt.")]
    if prefill.memory_s < prefill.compute_s * 0.9:
        slips.append(
            Slip("read", prefill.memory_s * 1e3, "you timed the weight read; a prompt this long is compute-bound.")
        )
    return Solution(
        answer,
        (
            Step(
                f"FLOPs for {p['prompt']:,} tokens (2 per parameter per token, plus attention)",
                prefill.flops / 1e12,
                "TFLOP",
            ),
            Step(f"Peak math at {p['precision']}", peak / 1e12, "TFLOP/s"),
            Step("Math time = FLOPs ÷ peak", prefill.compute_s * 1e3, "ms"),
            Step("Read time = bytes ÷ bandwidth", prefill.memory_s * 1e3, "ms"),
            Step("Prefill = the longer of the two", answer, "ms"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def weight_memory(p: dict) -> Solution:
    model = SPECS.model(p["model"])
    answer = weight_bytes(model, p["precision"]) / 1e9
    per = bytes_per_value(p["precision"])
    slips = [Slip("bits", answer * 8, "you used bits per weight; memory is counted in bytes (8 bits a byte).")]
    if p["precision"] != "bf16":
        slips.append(
            Slip(
                "bf16", weight_bytes(model, "bf16") / 1e9, "that is the 16-bit size; the question's format is smaller."
            )
        )
    if active_parameters(model) < total_parameters(model) * 0.9:
        slips.append(
            Slip(
                "active",
                answer * active_parameters(model) / total_parameters(model),
                "you used the active parameters; memory must hold every expert, so count the total.",
            )
        )
    return Solution(
        answer,
        (
            Step("Parameters", total_parameters(model) / 1e9, "billion"),
            Step(f"Bytes per weight at {p['precision']} (scales included)", per, "B"),
            Step("Weights = parameters × bytes per weight (scales by group)", answer, "GB"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def critical_batch(p: dict) -> Solution:
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    answer = critical_batch_for(hardware, p["precision"])
    workload = Workload(SPECS.model("llama-3.1-8b"), weight_precision=p["precision"])
    math = resolved(hardware, workload)
    per = bytes_per_value(p["precision"])
    return Solution(
        answer,
        (
            Step("Peak math at this format's math", math.peak_flops_per_s / 1e12, "TFLOP/s"),
            Step("Bandwidth", math.bandwidth_bytes_per_s / 1e12, "TB/s"),
            Step("Bytes per weight", per, "B"),
            Step("B* = peak × bytes per weight ÷ (2 × bandwidth)", answer, "users"),
        ),
        (
            Slip(
                "two",
                answer * 2,
                "you left out the 2: each weight read feeds 2 FLOPs (a multiply and an add) per user.",
            ),
            Slip("bits", answer * 8, "you used bits per weight where the bandwidth is in bytes."),
        ),
        words(p, SPECS),
    )


QUIZ = Quiz(
    "prefill-vs-decode",
    [
        Template(
            "decode-ceiling",
            "{model} with {precision} weights on one {gpu}, serving one user with {context} tokens of context:"
            " what is the decode ceiling, in tokens per second?",
            {"gpu": GPUS, "model": LONG_MODELS, "precision": PRECISIONS, "context": (32768, 65536)},
            decode_ceiling,
            "tokens/s",
        ),
        Template(
            "batch-throughput",
            "{model} with {precision} weights on one {gpu} decodes for {batch} users at {context} tokens of context"
            " each. What is the ceiling on all users' tokens per second together?",
            {"gpu": GPUS, "model": MODELS, "precision": PRECISIONS, "batch": BATCHES, "context": CONTEXTS},
            batch_throughput,
            "tokens/s",
        ),
        Template(
            "time-per-token",
            "{model} with {precision} weights on one {gpu}: {batch} users, each with {context} tokens of context."
            " How long does one decode step take at the ceiling?",
            {"gpu": GPUS, "model": MODELS, "precision": PRECISIONS, "batch": BATCHES[2:], "context": CONTEXTS[2:]},
            time_per_token,
            "ms",
        ),
        Template(
            "prefill-time",
            "{model} with {precision} weights on one {gpu}: how long does the prefill of one {prompt}-token prompt"
            " take at the ceiling?",
            {"gpu": GPUS, "model": MODELS, "precision": PRECISIONS, "prompt": PROMPTS},
            prefill_time,
            "ms",
        ),
        Template(
            "weight-memory",
            "How much memory do the weights of {model} take in {precision}?",
            {"model": (*MODELS, "llama-3.1-405b", "deepseek-v3"), "precision": PRECISIONS},
            weight_memory,
            "GB",
        ),
        Template(
            "critical-batch",
            "On one {gpu} with {precision} weights, at what batch does a matmul that reads each weight once turn"
            " compute-bound (the critical batch B*)?",
            {"gpu": GPUS, "precision": PRECISIONS},
            critical_batch,
            "users",
        ),
    ],
)
view = QUIZ.view
