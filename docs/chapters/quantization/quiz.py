"""Chapter 4's quiz: the 16 / b_eff speedup and the real one, the critical batch of a weight-only
format, the batch from which it stops helping, the KV slope, and users by format, each drawn
afresh and answered by ``roofline.quantization`` (``roofline.quiz`` explains templates and grading)."""

from __future__ import annotations

from roofline import Hardware, Workload, builtin_specs, kv_cache_bytes_per_token, memory_use
from roofline.precisions import bytes_per_value, number_format
from roofline.quantization import (
    critical_batch_for,
    decode_speedup_ceiling,
    kv_slope_s_per_token,
    math_for,
    quantized_hardware,
    stops_helping_batch,
    users_by_format,
    weight_only_speedup_ceiling,
)
from roofline.quiz import Quiz, Slip, Solution, Step, Template, words

SPECS = builtin_specs()
GPUS = ("h100-sxm", "h200", "b200", "a100-80gb", "mi300x", "l40s")
MODELS = ("llama-3.1-8b", "llama-3.1-70b", "mistral-7b", "llama-2-7b", "llama-2-13b")
#: Formats whose matmuls run at 16 bits (W4A16, W8A16) on every GPU here.
WEIGHT_ONLY = ("int4", "int4-awq", "int4-g32", "int8", "mxfp4")
FORMATS = (*WEIGHT_ONLY, "fp8", "nvfp4")
CONTEXTS = (0, 2048, 8192, 32768)


def bits_ceiling(p: dict) -> Solution:
    bits = number_format(p["format"]).bits_per_weight
    answer = weight_only_speedup_ceiling(p["format"])
    slips = [Slip("inverted", 1 / answer, "you divided the other way: the speedup is 16 bits over the format's bits.")]
    value_bits = number_format(p["format"]).value_bits
    if bits > value_bits * 1.05:
        slips.append(
            Slip("scales", 16 / value_bits, "you left out the scales: each group's scale adds bits to every weight.")
        )
    return Solution(
        answer,
        (
            Step(f"Bits a weight at {p['format']}, scales and zero points included", bits, "bits"),
            Step("Speedup ceiling = 16 ÷ bits a weight", answer, "×"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def real_speedup(p: dict) -> Solution | None:
    model = SPECS.model(p["model"])
    if p["context"] > model.max_context:
        return None
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    workload = Workload(model, weight_precision=p["format"], context=p["context"])
    if not memory_use(hardware, workload).fits or not memory_use(hardware, Workload(model, context=p["context"])).fits:
        return None
    answer = decode_speedup_ceiling(hardware, workload)
    naive = weight_only_speedup_ceiling(p["format"])
    slips = []
    if abs(naive - answer) > 0.05 * answer:
        slips.append(
            Slip(
                "sixteen-over-bits",
                naive,
                "that is 16 ÷ bits for the weights alone; the 16-bit output head, the embedding and the KV cache"
                " do not shrink.",
            )
        )
    return Solution(
        answer,
        (
            Step("16 ÷ bits a weight, the weights' own ratio", naive, "×"),
            Step("Step time in bf16 ÷ step time in the format, every byte counted", answer, "×"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def critical(p: dict) -> Solution:
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    answer = critical_batch_for(hardware, p["format"])
    resolved = quantized_hardware(hardware, p["format"])
    per = bytes_per_value(p["format"])
    two = "you left out the 2: each weight read feeds 2 FLOPs per user."
    bf16 = critical_batch_for(hardware, "bf16")
    bf16_words = "that is bf16's critical batch; the format reads fewer bytes at the same math."
    if abs(bf16 - 2 * answer) <= 0.05 * answer:  # 8-bit weights at bf16 math: both slips give twice B*
        slips = [Slip("two", answer * 2, f"{two[:-1]}, or {bf16_words}")]
    else:
        slips = [Slip("two", answer * 2, two)]
        if abs(bf16 - answer) > 0.05 * answer:
            slips.append(Slip("bf16", bf16, bf16_words))
    return Solution(
        answer,
        (
            Step(
                f"Math: {math_for(SPECS.gpu(p['gpu']), p['format']).line}", resolved.peak_flops_per_s / 1e12, "TFLOP/s"
            ),
            Step(f"Bytes a weight at {p['format']}", per, "B"),
            Step("Bandwidth", resolved.bandwidth_bytes_per_s / 1e12, "TB/s"),
            Step("B* = peak × bytes a weight ÷ (2 × bandwidth)", answer, "users"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def stops_helping(p: dict) -> Solution | None:
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    workload = Workload(SPECS.model(p["model"]), weight_precision=p["format"])
    batch = stops_helping_batch(hardware, workload)
    if batch is None:
        return None
    own = critical_batch_for(hardware, p["format"])
    return Solution(
        float(batch),
        (
            Step(f"Where {p['format']} turns compute-bound (its own B*)", own, "users"),
            Step(
                "bf16's B*, where the bf16 model turns compute-bound too", critical_batch_for(hardware, "bf16"), "users"
            ),
            Step("First batch at which the format's step is no faster than bf16's", float(batch), "users"),
        ),
        (
            Slip(
                "own-critical",
                own,
                "that is where the format turns compute-bound; it keeps helping until bf16 turns compute-bound too.",
            ),
        ),
        words(p, SPECS),
    )


def kv_slope(p: dict) -> Solution | None:
    model = SPECS.model(p["model"])
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    workload = Workload(model, kv_precision=p["kv"], context=p["context"])
    if p["context"] > model.max_context:
        return None
    answer = kv_slope_s_per_token(hardware, workload) * 1e9
    per_token = kv_cache_bytes_per_token(model, p["kv"])
    return Solution(
        answer,
        (
            Step(f"KV bytes a token at {p['kv']}", per_token / 1e3, "kB"),
            Step("Bandwidth", hardware.bandwidth_bytes_per_s / 1e12, "TB/s"),
            Step("Slope = KV bytes a token ÷ bandwidth (the step is memory-bound)", answer, "ns"),
        ),
        (
            Slip("bits", answer * 8, "you counted the cache in bits, not bytes."),
            Slip("k-and-v", answer / 2, "you counted only keys or only values; the cache holds both."),
        ),
        words(p, SPECS),
    )


def users(p: dict) -> Solution | None:
    model = SPECS.model(p["model"])
    if p["context"] > model.max_context or p["context"] == 0:
        return None
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    counts = users_by_format(hardware, Workload(model, context=p["context"]), ("bf16", p["format"]))
    answer, bf16 = counts[p["format"]], counts["bf16"]
    if not answer or answer < 10:
        return None
    slips = []
    if bf16 and abs(bf16 - answer) > 0.05 * answer:
        slips.append(
            Slip("bf16", float(bf16), "that is with bf16 weights; the smaller weights leave room for more caches.")
        )
    return Solution(
        float(answer),
        (
            Step("Users at bf16 weights", float(bf16 or 0), "users"),
            Step(
                f"Users at {p['format']} weights: the same caches in the memory the smaller weights leave",
                float(answer),
                "users",
            ),
        ),
        tuple(slips),
        words(p, SPECS),
    )


QUIZ = Quiz(
    "quantization",
    [
        Template(
            "bits-ceiling",
            "A batch-1 decode step reads only weights. How much faster can {format} weights make it than bf16,"
            " counting the weights' bits alone (16 ÷ b_eff)?",
            {"format": FORMATS},
            bits_ceiling,
            "×",
        ),
        Template(
            "real-speedup",
            "{model} on one {gpu}, one user at {context} tokens of context: how many times faster is the decode"
            " ceiling with {format} weights than with bf16?",
            {"gpu": GPUS, "model": MODELS, "format": WEIGHT_ONLY, "context": CONTEXTS},
            real_speedup,
            "×",
        ),
        Template(
            "critical-batch",
            "On one {gpu}, at what batch does a matmul over {format} weights turn compute-bound (B*), at the math"
            " the format runs there?",
            {"gpu": GPUS, "format": FORMATS},
            critical,
            "users",
        ),
        Template(
            "stops-helping",
            "{model} on one {gpu}, empty context: from what batch do {format} weights decode no faster than bf16?",
            {"gpu": GPUS, "model": ("llama-3.1-8b", "mistral-7b", "llama-2-7b"), "format": WEIGHT_ONLY},
            stops_helping,
            "users",
        ),
        Template(
            "kv-slope",
            "{model} on one {gpu}, one user at {context} tokens, cache in {kv}: how much does one more token of"
            " context add to each decode step?",
            {"gpu": GPUS, "model": MODELS, "kv": ("bf16", "fp8", "int8"), "context": (1024, 4096, 16384)},
            kv_slope,
            "ns",
        ),
        Template(
            "users-by-format",
            "{model} on one {gpu} with {format} weights and a bf16 cache: how many users with {context} tokens of"
            " context each fit?",
            {"gpu": GPUS, "model": MODELS, "format": WEIGHT_ONLY, "context": (2048, 8192, 32768)},
            users,
            "users",
        ),
    ],
)
view = QUIZ.view
