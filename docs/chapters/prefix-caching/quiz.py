"""Chapter 8's quiz: six kinds of question on prefix-cache hits and the KV transfer of a split,
each drawn afresh and answered by the package (``roofline.quiz`` explains templates, draws and grading)."""

from roofline import Hardware, SpecError, Workload, builtin_specs
from roofline.disagg import kv_transfer
from roofline.prefixcache import BLOCK_TOKENS, cache_memory, cached_tokens, hit_saving
from roofline.quiz import Quiz, Slip, Solution, Step, Template, words
from roofline.splitchoice import full_block_tokens

SPECS = builtin_specs()
#: GPUs with an NVLink or network figure in their spec, so every link question has an answer.
GPUS = ("h100-sxm", "h200", "a100-80gb", "b200")
#: Models one GPU holds, for the single-GPU questions.
SMALL_MODELS = ("llama-3.1-8b", "llama-3.2-1b", "mistral-7b", "llama-2-7b")
#: Models for a prefill pool of several GPUs.
POOL_MODELS = ("llama-3.1-70b", "llama-3.1-8b", "mixtral-8x7b")
PROMPTS = (1024, 2048, 4096, 8192)
#: Shares of the prompt a cached prefix covers, in percent.
PERCENTS = (50, 75, 90)
BITS = "you counted bits where the cache is counted in bytes (8 bits a byte)."
PROPORTIONAL = (
    "you cut the prefill in proportion to the tokens cached; the new tokens still attend to the cached ones"
    " and the weights are still read once."
)


def _hardware(p: dict, gpus: int = 1) -> Hardware:
    return Hardware(SPECS.gpu(p["gpu"]), gpus)


def _apart(answer: float, slip: Slip) -> tuple[Slip, ...]:
    """The slip, where it lands clear of the answer: a short prompt can save about in proportion."""
    return (slip,) if abs(slip.value - answer) > 0.05 * abs(answer) else ()


def _moved(p: dict):
    """The drawn prompt's KV transfer from the drawn prefill instance, or None where the GPU lacks the link."""
    try:
        workload = Workload(SPECS.model(p["model"]))
        return kv_transfer(_hardware(p, p["gpus"]), workload, p["prompt"], LINK_WORDS[p["link"]])
    except SpecError:
        return None


def ttft_after_hit(p: dict) -> Solution:
    cached = cached_tokens(p["prompt"], p["percent"] / 100)
    hit = hit_saving(_hardware(p), Workload(SPECS.model(p["model"])), p["prompt"], cached)
    answer = hit.after_s * 1e3
    steps = (
        Step("Prefill of the whole prompt", hit.full_s * 1e3, "ms"),
        Step("Tokens found in the cache", cached, "tokens"),
        Step("Prefill of the rest, attending to the cached tokens", answer, "ms"),
    )
    slip = Slip("proportional", hit.full_s * 1e3 * (1 - cached / p["prompt"]), PROPORTIONAL)
    return Solution(answer, steps, _apart(answer, slip), words(p, SPECS))


def saved_share(p: dict) -> Solution:
    cached = cached_tokens(p["prompt"], p["percent"] / 100)
    hit = hit_saving(_hardware(p), Workload(SPECS.model(p["model"])), p["prompt"], cached)
    answer = 100 * hit.saved_fraction
    steps = (
        Step("Prefill of the whole prompt", hit.full_s * 1e3, "ms"),
        Step("Prefill left after the hit", hit.after_s * 1e3, "ms"),
        Step("Saved = 1 − left ÷ whole", answer, "%"),
    )
    slip = Slip("proportional", 100 * cached / p["prompt"], PROPORTIONAL)
    return Solution(answer, steps, _apart(answer, slip), words(p, SPECS))


def transfer(p: dict) -> Solution:
    moved = _moved(p)
    if moved is None:
        return None  # a GPU without that link in its spec: draw again
    answer = moved.seconds * 1e3
    per_gpu = moved.link_bytes_per_s / p["gpus"]
    steps = (
        Step("KV cache = prompt × KV bytes a token", moved.bytes / 1e9, "GB"),
        Step("Links: each GPU sends its shard over its own", moved.link_bytes_per_s / 1e9, "GB/s"),
        Step("Transfer = bytes ÷ (GPUs × link)", answer, "ms"),
    )
    one_link = Slip("one-link", moved.bytes / per_gpu * 1e3, "you sent the whole cache over one GPU's link.")
    # On eight GPUs one link's time is eight times the answer, as bits would be: keep the likelier slip.
    bits = () if p["gpus"] == 8 else (Slip("bits", answer * 8, BITS),)
    return Solution(answer, steps, (one_link, *bits), words(p, SPECS))


def prefix_memory(p: dict) -> Solution:
    workload = Workload(SPECS.model(p["model"]), context=4096)
    # The bytes do not depend on the GPU (one GPU holds one copy of each head); any GPU prices them.
    memory = cache_memory(Hardware(SPECS.gpu(GPUS[0])), workload, p["prefix"], p["groups"])
    answer = memory.prefix_bytes / 1e9
    steps = (
        Step("Blocks a prefix takes, 16 tokens each", -(-p["prefix"] // BLOCK_TOKENS), "blocks"),
        Step("One prefix", memory.prefix_bytes / p["groups"] / 1e6, "MB"),
        Step("Times the prefixes held", answer, "GB"),
    )
    one = Slip("one-prefix", answer / p["groups"], "you sized one prefix; the cache holds every group's.")
    return Solution(answer, steps, (one, Slip("bits", answer * 8, BITS)), words(p, SPECS))


def block_hit(p: dict) -> Solution:
    answer = full_block_tokens(p["prefix"], p["block"])
    steps = (
        Step("Full blocks in the prefix", p["prefix"] // p["block"], "blocks"),
        Step("Tokens reused = full blocks × block size", answer, "tokens"),
    )
    partial = "a block-hash cache keeps only full blocks; the last partial one is prefilled again."
    if answer == p["prefix"]:
        return None  # a prefix of whole blocks asks nothing: draw again
    return Solution(answer, steps, (Slip("whole-prefix", p["prefix"], partial),), words(p, SPECS))


def transfer_share(p: dict) -> Solution:
    moved = _moved(p)
    if moved is None:
        return None
    answer = 100 * moved.transfer_to_prefill
    steps = (
        Step("KV transfer", moved.seconds * 1e3, "ms"),
        Step("Prefill on the same GPUs", moved.prefill_s * 1e3, "ms"),
        Step("Share = transfer ÷ prefill", answer, "%"),
    )
    return Solution(answer, steps, (Slip("bits", answer * 8, BITS),), words(p, SPECS))


#: Links as the questions name them, and as ``disagg.LINKS`` spells them.
LINK_WORDS = {"NVLink": "nvlink", "network": "network"}

QUIZ = Quiz(
    "prefix-caching",
    [
        Template(
            "ttft-after-hit",
            "A {prompt}-token prompt of {model} on one {gpu}: {percent}% of it is a prefix the cache holds. What is the"
            " time to first token left (the ceiling)?",
            {"model": SMALL_MODELS, "gpu": GPUS, "prompt": PROMPTS, "percent": PERCENTS},
            ttft_after_hit,
            "ms",
        ),
        Template(
            "saved-share",
            "What share of the prefill time of a {prompt}-token prompt of {model} on one {gpu} does a cached prefix"
            " of {percent}% of its tokens save?",
            {"model": SMALL_MODELS, "gpu": GPUS, "prompt": PROMPTS, "percent": PERCENTS},
            saved_share,
            "%",
        ),
        Template(
            "kv-transfer",
            "How long does the KV cache of a {prompt}-token prompt of {model} take to leave a prefill instance of"
            " {gpus} {gpu} GPUs over the {link} link (ceiling, each GPU sending its own shard)?",
            {"model": POOL_MODELS, "gpu": GPUS, "prompt": PROMPTS, "gpus": (2, 4, 8), "link": tuple(LINK_WORDS)},
            transfer,
            "ms",
        ),
        Template(
            "transfer-share",
            "For {model} on prefill instances of {gpus} {gpu} GPUs, what share of a {prompt}-token prefill does its"
            " KV transfer over the {link} link take?",
            {"model": POOL_MODELS, "gpu": GPUS, "prompt": PROMPTS, "gpus": (2, 4, 8), "link": tuple(LINK_WORDS)},
            transfer_share,
            "%",
        ),
        Template(
            "prefix-memory",
            "A prefix cache holds {groups} different {prefix}-token prefixes of {model} in 16-token blocks, its KV"
            " cache in 16 bits. How much memory do they take?",
            {"model": SMALL_MODELS, "prefix": (500, 1000, 2000, 3000), "groups": (10, 20, 50)},
            prefix_memory,
            "GB",
        ),
        Template(
            "block-hit",
            "Requests share a {prefix}-token prefix. How many of its tokens does a block-hash prefix cache with"
            " {block}-token blocks reuse?",
            {"prefix": (100, 250, 500, 1000, 1500, 3000), "block": (16, 32, 64)},
            block_hit,
            "tokens",
            tolerance=0.001,  # a count of tokens, exact: 1,472 of 1,500 is wrong
        ),
    ],
)
view = QUIZ.view
