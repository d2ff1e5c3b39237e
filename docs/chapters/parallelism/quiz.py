"""Chapter 6's quiz: an all-reduce's message and its time, a decode step's communication, the
pipeline bubble, the best tensor-parallel degree and the KV room more GPUs give, each drawn
afresh and answered by ``roofline.performance``, ``roofline.parallelism`` and
``roofline.deployment`` (``roofline.quiz`` explains templates and grading)."""

from __future__ import annotations

from roofline import Hardware, Workload, builtin_specs
from roofline.architecture import weight_bytes
from roofline.deployment import best_tp_degree
from roofline.parallelism import kv_room_ratio, pipeline_bubble_fraction, usable_tp_degrees
from roofline.performance import allreduce_bytes, allreduces_per_pass, communication_s, decode_step
from roofline.quiz import Quiz, Slip, Solution, Step, Template, words

SPECS = builtin_specs()
GPUS = ("h100-sxm", "h200", "b200", "a100-80gb", "mi300x")
MODELS = ("llama-3.1-8b", "llama-3.1-70b", "mistral-7b", "llama-2-13b", "mixtral-8x7b")
DEGREES = (2, 4, 8)
TOKENS = (16, 64, 256, 2048, 8192)


def message(p: dict) -> Solution:
    model = SPECS.model(p["model"])
    answer = allreduce_bytes(model, p["tokens"]) / 1e3
    return Solution(
        answer,
        (
            Step(
                f"Activations of {p['tokens']:,} tokens: tokens × hidden size {model.hidden_size:,}",
                p["tokens"] * model.hidden_size,
                "values",
            ),
            Step("Message = values × 2 bytes (bf16 activations)", answer, "kB"),
        ),
        (
            Slip("bytes", answer / 2, "you counted values, not bytes: each bf16 activation is 2 bytes."),
            Slip("bits", answer * 8, "you counted bits; the message is measured in bytes."),
        ),
        words(p, SPECS),
    )


def allreduce_time(p: dict) -> Solution:
    model = SPECS.model(p["model"])
    hardware = Hardware(SPECS.gpu(p["gpu"]), p["gpus"])
    size = allreduce_bytes(model, p["tokens"])
    answer = hardware.allreduce_s(size) * 1e6
    latency = hardware.allreduce_latency * 1e6
    link = hardware.link_bytes_per_s
    g = p["gpus"]
    slips = []
    no_latency = answer - latency
    if no_latency < answer * 0.95 and no_latency > 0:
        slips.append(
            Slip("latency", no_latency, "you left out the fixed latency every all-reduce pays, however small.")
        )
    plain = latency + size / link * 1e6
    if abs(plain - answer) > 0.05 * answer:
        slips.append(Slip("ring", plain, "you sent the message once; a ring all-reduce moves 2(G−1)/G of it per GPU."))
    return Solution(
        answer,
        (
            Step("Message", size / 1e3, "kB"),
            Step(f"Latency at {g} GPUs", latency, "µs"),
            Step(f"Transfer = 2 × ({g} − 1) ÷ {g} × message ÷ {link / 1e9:,.0f} GB/s", (answer - latency), "µs"),
            Step("All-reduce = latency + transfer", answer, "µs"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def step_communication(p: dict) -> Solution | None:
    model = SPECS.model(p["model"])
    hardware = Hardware(SPECS.gpu(p["gpu"]), p["gpus"])
    if p["gpus"] not in usable_tp_degrees(model, limit=8):
        return None
    count = allreduces_per_pass(hardware, model)
    one = hardware.allreduce_s(allreduce_bytes(model, p["batch"]))
    answer = communication_s(hardware, model, p["batch"]) * 1e3
    return Solution(
        answer,
        (
            Step(f"All-reduces a step: 2 a layer × {model.layers} layers", float(count), "all-reduces"),
            Step(f"One all-reduce of {p['batch']:,} tokens' activations", one * 1e6, "µs"),
            Step("Communication = all-reduces × one", answer, "ms"),
        ),
        (
            Slip(
                "one-a-layer", answer / 2, "you counted one all-reduce a layer; attention and the MLP each end in one."
            ),
            Slip("one", one * 1e3, "that is one all-reduce; every layer pays two, every step."),
        ),
        words(p, SPECS),
    )


def bubble(p: dict) -> Solution:
    stages, micro = p["stages"], p["micro"]
    answer = pipeline_bubble_fraction(stages, micro) * 100
    slips = []
    naive = (stages - 1) / micro * 100
    if abs(naive - answer) > 0.05 * answer:
        slips.append(
            Slip("over-m", naive, "you divided by the micro-batches alone; the pass lasts m + p − 1 stage-times.")
        )
    return Solution(
        answer,
        (
            Step(
                f"Stage-times the pass takes: m + p − 1 = {micro} + {stages} − 1",
                float(micro + stages - 1),
                "stage-times",
            ),
            Step("Stage-times each stage idles: p − 1", float(stages - 1), "stage-times"),
            Step("Bubble = (p − 1) ÷ (m + p − 1)", answer, "%"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def best_degree(p: dict) -> Solution | None:
    model = SPECS.model(p["model"])
    if p["context"] > model.max_context:
        return None
    hardware = Hardware(SPECS.gpu(p["gpu"]), 8)
    workload = Workload(model, batch=p["batch"], context=p["context"])
    best = best_tp_degree(hardware, workload)
    if best is None:
        return None
    degrees = usable_tp_degrees(model, limit=8)
    most = max(degrees)
    slips = []
    if most != best:
        slips.append(
            Slip(
                "most",
                float(most),
                "more GPUs is not always faster: past this degree the all-reduces cost more than the read saves.",
            )
        )
    times = {d: decode_step(Hardware(SPECS.gpu(p["gpu"]), d), workload).seconds for d in degrees}
    return Solution(
        float(best),
        (
            *(Step(f"Decode step on {d} GPU{'s' if d > 1 else ''}", s * 1e3, "ms") for d, s in times.items()),
            Step("Fastest degree that holds the weights and the batch", float(best), "GPUs"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def kv_room(p: dict) -> Solution | None:
    model = SPECS.model(p["model"])
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    usable = hardware.usable_memory_bytes
    weights = weight_bytes(model, "bf16")
    if weights >= usable * 0.9:
        return None
    answer = kv_room_ratio(p["gpus"], usable, weights)
    slips = []
    if abs(answer - p["gpus"]) > 0.05 * answer:
        slips.append(
            Slip(
                "g",
                float(p["gpus"]),
                "the weights are stored once, so each added GPU brings all its memory for the cache:"
                " more than G times.",
            )
        )
    return Solution(
        answer,
        (
            Step("Usable memory a GPU", usable / 1e9, "GB"),
            Step("Weights (bf16)", weights / 1e9, "GB"),
            Step(f"Room = ({p['gpus']} × usable − weights) ÷ (usable − weights)", answer, "×"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


QUIZ = Quiz(
    "parallelism",
    [
        Template(
            "message",
            "{model} split over several GPUs: how large is one all-reduce's message for {tokens} tokens (bf16"
            " activations)?",
            {"model": MODELS, "tokens": TOKENS},
            message,
            "kB",
        ),
        Template(
            "allreduce-time",
            "{model} on {gpus} × {gpu}: how long does one all-reduce of {tokens} tokens' activations take, at the"
            " ceiling's latency and link?",
            {"gpu": GPUS, "model": MODELS, "gpus": DEGREES, "tokens": TOKENS},
            allreduce_time,
            "µs",
        ),
        Template(
            "step-communication",
            "{model} split over {gpus} × {gpu} with tensor parallelism, {batch} users: how long does one decode"
            " step spend in all-reduces?",
            {"gpu": GPUS, "model": MODELS, "gpus": DEGREES, "batch": (1, 16, 64, 256)},
            step_communication,
            "ms",
        ),
        Template(
            "bubble",
            "A pipeline of {stages} stages runs {micro} micro-batches through once and drains. What share of the"
            " stages' time is idle (the bubble)?",
            {"stages": (2, 4, 8), "micro": (1, 2, 4, 8, 16, 32)},
            bubble,
            "%",
        ),
        Template(
            "best-tp-degree",
            "{model} on up to 8 × {gpu}, {batch} users at {context} tokens: which tensor-parallel degree gives the"
            " fastest decode step at the ceiling?",
            {"gpu": GPUS, "model": MODELS, "batch": (1, 8, 64), "context": (1024, 8192)},
            best_degree,
            "GPUs",
        ),
        Template(
            "kv-room",
            "{model} (bf16) on {gpus} × {gpu} instead of one: how many times more KV cache fits?",
            {"gpu": GPUS, "model": MODELS, "gpus": DEGREES},
            kv_room,
            "×",
        ),
    ],
)
view = QUIZ.view
