"""The chapter's quiz: five kinds of question on one user's cache read, each drawn afresh and
answered by the package (``roofline.quiz`` explains templates, draws and grading)."""

from roofline import Hardware, Workload, builtin_specs
from roofline.prefixpage import cache_read
from roofline.quiz import Quiz, Slip, Solution, Step, Template, words

SPECS = builtin_specs()
GPUS = ("h100-sxm", "h200", "a100-80gb", "l40s")
#: Models whose cache grows in step with the context (no sliding window caps it).
MODELS = ("llama-3.1-8b", "llama-3.1-70b", "llama-3.2-1b")
CONTEXTS = (1024, 4096, 16384, 65536)
BITS = "you counted bits where the cache is counted in bytes (8 bits a byte)."


def _read(p: dict, context: int):
    return cache_read(Hardware(SPECS.gpu(p["gpu"])), Workload(SPECS.model(p["model"]), context=context))


def cache_size(p: dict) -> Solution:
    read = _read(p, p["context"])
    answer = read.bytes_moved / 1e9
    per_token = read.bytes_moved / p["context"] / 1e3
    steps = (
        Step("Cache per token (keys and values, every layer)", per_token, "kB"),
        Step("Times the context", answer, "GB"),
    )
    return Solution(answer, steps, (Slip("bits", answer * 8, BITS),), words(p, SPECS))


def read_time(p: dict) -> Solution:
    read = _read(p, p["context"])
    answer = read.seconds * 1e3
    steps = (Step("Cache read", read.bytes_moved / 1e9, "GB"), Step("Read time = bytes ÷ bandwidth", answer, "ms"))
    return Solution(answer, steps, (Slip("bits", answer * 8, BITS),), words(p, SPECS))


def batch_read(p: dict) -> Solution:
    read = _read(p, p["context"])
    one = read.seconds * 1e3
    answer = one * p["batch"]
    steps = (
        Step("One user's cache read", one, "ms"),
        Step("Times the users: each step reads every cache", answer, "ms"),
    )
    slip = Slip("per-user", one, "you timed one user's cache; a step reads every user's cache.")
    return Solution(answer, steps, (slip, Slip("bits", answer * 8, BITS)), words(p, SPECS))


def memory_share(p: dict) -> Solution:
    read = _read(p, p["context"])
    memory = Hardware(SPECS.gpu(p["gpu"])).addressable_memory_bytes
    answer = 100 * read.bytes_moved / memory
    steps = (
        Step("Cache", read.bytes_moved / 1e9, "GB"),
        Step("Memory the driver reports", memory / 1e9, "GB"),
        Step("Share = cache ÷ memory", answer, "%"),
    )
    return Solution(answer, steps, (Slip("bits", answer * 8, BITS),), words(p, SPECS))


def context_for(p: dict) -> Solution:
    per_token_s = _read(p, 1).seconds
    answer = p["ms"] * 1e-3 / per_token_s
    steps = (
        Step("Read time a token of context adds", per_token_s * 1e6, "µs"),
        Step("Context = the time ÷ that", answer, "tokens"),
    )
    return Solution(answer, steps, (Slip("bits", answer / 8, BITS),), words(p, SPECS))


QUIZ = Quiz(
    "prefix-caching",
    [
        Template(
            "cache-size",
            "How large is one user's {context}-token cache of {model}?",
            {"model": MODELS, "gpu": GPUS, "context": CONTEXTS},
            cache_size,
            "GB",
        ),
        Template(
            "read-time",
            "How long does a decode step on one {gpu} spend reading one user's {context}-token cache of {model}?",
            {"model": MODELS, "gpu": GPUS, "context": CONTEXTS},
            read_time,
            "ms",
        ),
        Template(
            "batch-read",
            "How long does a step on one {gpu} spend reading {batch} users' {context}-token caches of {model}?",
            {"model": MODELS, "gpu": GPUS, "context": CONTEXTS, "batch": (4, 8, 16, 32)},
            batch_read,
            "ms",
        ),
        Template(
            "memory-share",
            "What share of one {gpu}'s driver-reported memory does one {context}-token cache of {model} fill?",
            {"model": MODELS, "gpu": GPUS, "context": CONTEXTS},
            memory_share,
            "%",
        ),
        Template(
            "context-for",
            "At what context does reading one user's cache of {model} on one {gpu} take {ms} ms a step?",
            {"model": MODELS, "gpu": GPUS, "ms": (0.1, 0.5, 1, 2)},
            context_for,
            "tokens",
        ),
    ],
)
view = QUIZ.view
