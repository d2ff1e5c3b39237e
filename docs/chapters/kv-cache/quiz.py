"""Chapter 2's quiz: KV bytes per token and per user, users that fit, the context at which the
cache reads as much as the weights, the cache's read time and its share of a step, each drawn
afresh and answered by the package (``roofline.quiz`` explains templates, draws and grading)."""

from __future__ import annotations

import math

from roofline import Hardware, Workload, builtin_specs, kv_cache_bytes, kv_cache_bytes_per_token, memory_use
from roofline.architecture import weight_bytes
from roofline.kvcache import full_mha_kv_bytes_per_token, kv_equals_weights_context, step_split, users_that_fit
from roofline.kvformats import kv_bytes_per_value
from roofline.quiz import Quiz, Slip, Solution, Step, Template, words

SPECS = builtin_specs()
GPUS = ("h100-sxm", "h200", "b200", "a100-80gb", "mi300x", "l40s")
#: Models whose cache is 2 × layers × KV heads × head size a token at every context (no windows, no latent).
MODELS = ("llama-3.1-8b", "llama-3.1-70b", "llama-2-7b", "llama-2-13b", "mistral-7b", "mixtral-8x7b", "llama-3.2-1b")
KV_PRECISIONS = ("bf16", "fp8", "int8")
CONTEXTS = (1024, 2048, 4096, 8192, 16384, 32768)
BATCHES = (4, 8, 16, 32, 64)


def _serves(p: dict) -> bool:
    return p.get("context", 0) <= SPECS.model(p["model"]).max_context


def kv_per_token(p: dict) -> Solution:
    model = SPECS.model(p["model"])
    answer = kv_cache_bytes_per_token(model, p["kv"]) / 1e3
    size = kv_bytes_per_value(p["kv"])
    slips = [Slip("k-and-v", answer / 2, "you counted only the keys or only the values: the cache holds both (the 2).")]
    full = full_mha_kv_bytes_per_token(model, p["kv"]) / 1e3
    query_heads = "you used the query heads; the cache keeps only the KV heads (GQA)."
    bits = "you used bits per value; the cache is counted in bytes."
    if model.attention_heads == 8 * model.kv_heads:  # both slips give 8 times the answer
        slips.append(Slip("bits", answer * 8, f"{bits[:-1]}, or {query_heads}"))
    else:
        slips.append(Slip("bits", answer * 8, bits))
        if model.kv_heads != model.attention_heads:
            slips.append(Slip("query-heads", full, query_heads))
    return Solution(
        answer,
        (
            Step(
                f"2 (K and V) × {model.layers} layers × {model.kv_heads} KV heads × {model.head_dim} values a head",
                2 * model.layers * model.kv_heads * model.head_dim,
                "values",
            ),
            Step(f"Bytes per value at {p['kv']}", size, "B"),
            Step("KV bytes per token = values × bytes per value", answer, "kB"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def kv_per_user(p: dict) -> Solution | None:
    if not _serves(p):
        return None
    model = SPECS.model(p["model"])
    answer = kv_cache_bytes(model, p["context"], p["kv"]) / 1e9
    per_token = kv_cache_bytes_per_token(model, p["kv"])
    return Solution(
        answer,
        (
            Step("KV bytes per token", per_token / 1e3, "kB"),
            Step(f"One user's cache = {p['context']:,} tokens × bytes per token", answer, "GB"),
        ),
        (
            Slip("k-and-v", answer / 2, "you counted only the keys or only the values: the cache holds both."),
            Slip("bits", answer * 8, "you used bits per value; the cache is counted in bytes."),
        ),
        words(p, SPECS),
    )


def users_fit(p: dict) -> Solution | None:
    if not _serves(p):
        return None
    model = SPECS.model(p["model"])
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    workload = Workload(model, context=p["context"])
    users = users_that_fit(hardware, workload)
    if not users or users < 10:  # the weights leave (almost) no room: draw again
        return None
    weights = weight_bytes(model, "bf16")
    pool = hardware.kv_pool_bytes(weights)
    per_user = workload.kv_bytes_per_user
    no_weights = math.floor(hardware.kv_pool_bytes(0.0) / per_user)
    slips = [Slip("bits", float(math.floor(pool / (8 * per_user))), "you counted the cache in bits, not bytes.")]
    if no_weights > 1.05 * users:  # only where the weights are a visible share of memory (a 1B model's are not)
        slips.append(Slip("weights", float(no_weights), "you forgot the weights: they take memory before any cache."))
    return Solution(
        float(users),
        (
            Step("Memory the driver reports, less the workspace", hardware.usable_memory_bytes / 1e9, "GB"),
            Step("Weights (bf16)", weights / 1e9, "GB"),
            Step(f"KV pool = {hardware.usable_fraction:.0%} of what the weights leave", pool / 1e9, "GB"),
            Step(f"One user's cache at {p['context']:,} tokens", per_user / 1e9, "GB"),
            Step("Users = pool ÷ one user's cache, rounded down", float(users), "users"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def kv_equals_weights(p: dict) -> Solution | None:
    model = SPECS.model(p["model"])
    workload = Workload(model, batch=p["batch"])
    context = kv_equals_weights_context(workload)
    if context is None:
        return None
    split = step_split(Hardware(SPECS.gpu("h100-sxm")), workload)
    return Solution(
        context,
        (
            Step("Weight bytes one step reads (bf16)", split.weights_bytes / 1e9, "GB"),
            Step(
                f"Cache bytes a token of context adds for {p['batch']:,} users",
                p["batch"] * model_kv(model) / 1e3,
                "kB",
            ),
            Step("Context = weight bytes ÷ (users × KV bytes per token)", context, "tokens"),
        ),
        (Slip("per-user", context * p["batch"], "that is for one user; with the whole batch the cache grows faster."),),
        words(p, SPECS),
    )


def model_kv(model) -> float:
    """KV bytes per token at bf16, the cache these questions assume."""
    return kv_cache_bytes_per_token(model, "bf16")


def kv_read_time(p: dict) -> Solution | None:
    if not _serves(p):
        return None
    model = SPECS.model(p["model"])
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    workload = Workload(model, batch=p["batch"], context=p["context"])
    if not memory_use(hardware, workload).fits:
        return None
    split = step_split(hardware, workload)
    answer = split.kv_s * 1e3
    return Solution(
        answer,
        (
            Step(f"Cache read each step: {p['batch']:,} users × one user's cache", split.kv_bytes / 1e9, "GB"),
            Step("Bandwidth", split.bandwidth_bytes_per_s / 1e12, "TB/s"),
            Step("Read time = cache bytes ÷ bandwidth", answer, "ms"),
        ),
        (
            Slip("per-user", answer / p["batch"], "that is one user's cache; a step reads every user's."),
            Slip("bits", answer * 8, "you counted the cache in bits, not bytes."),
        ),
        words(p, SPECS),
    )


def kv_share(p: dict) -> Solution | None:
    if not _serves(p):
        return None
    model = SPECS.model(p["model"])
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    workload = Workload(model, batch=p["batch"], context=p["context"])
    if not memory_use(hardware, workload).fits:
        return None
    split = step_split(hardware, workload)
    answer = split.kv_share * 100
    slips = []
    ratio = split.kv_bytes / split.weights_bytes * 100
    if abs(ratio - answer) > 0.05 * answer:
        slips.append(Slip("ratio", ratio, "you divided the cache by the weights; the share divides by both together."))
    return Solution(
        answer,
        (
            Step("Weights read", split.weights_bytes / 1e9, "GB"),
            Step(f"Caches of {p['batch']:,} users", split.kv_bytes / 1e9, "GB"),
            Step("Cache share = cache ÷ (weights + cache)", answer, "%"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


QUIZ = Quiz(
    "kv-cache",
    [
        Template(
            "kv-per-token",
            "How many bytes of KV cache does one token add to {model} with its cache in {kv}?",
            {"model": MODELS, "kv": KV_PRECISIONS},
            kv_per_token,
            "kB",
        ),
        Template(
            "kv-per-user",
            "How large is one user's KV cache in {model} at {context} tokens of context, with its cache in {kv}?",
            {"model": MODELS, "context": CONTEXTS, "kv": KV_PRECISIONS},
            kv_per_user,
            "GB",
        ),
        Template(
            "users-that-fit",
            "{model} (bf16 weights and cache) on one {gpu}: how many users with {context} tokens of context each"
            " fit, with the KV cache getting 95% of the memory the weights leave?",
            {"gpu": GPUS, "model": MODELS, "context": CONTEXTS},
            users_fit,
            "users",
        ),
        Template(
            "kv-equals-weights",
            "{model}, bf16, {batch} users: at what context does one decode step read as many bytes of cache as of"
            " weights?",
            {"model": MODELS, "batch": BATCHES},
            kv_equals_weights,
            "tokens",
        ),
        Template(
            "kv-read-time",
            "{model} (bf16) on one {gpu} with {batch} users at {context} tokens each: how long does one decode"
            " step spend reading the KV cache?",
            {"gpu": GPUS, "model": MODELS, "batch": BATCHES, "context": CONTEXTS},
            kv_read_time,
            "ms",
        ),
        Template(
            "kv-share",
            "{model} (bf16) with {batch} users at {context} tokens each: what share of a decode step's reads is"
            " the KV cache?",
            {"gpu": ("h100-sxm", "h200", "mi300x"), "model": MODELS, "batch": BATCHES, "context": CONTEXTS},
            kv_share,
            "%",
        ),
    ],
)
view = QUIZ.view
