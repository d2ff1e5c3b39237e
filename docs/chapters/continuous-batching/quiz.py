"""Chapter 3's quiz: the tokens a paged KV cache holds, one iteration's time (decodes alone and
with a prompt riding along), goodput under a latency target and throughput under load, each
drawn afresh and answered by ``roofline.serving`` and the ``IterationCosts`` its simulator times
iterations with (``roofline.quiz`` explains templates and grading)."""

from __future__ import annotations

from roofline import Hardware, ServingConfig, Workload, builtin_specs, memory_use, simulate
from roofline.performance import iteration_costs
from roofline.quiz import Quiz, Slip, Solution, Step, Template, words
from roofline.serving import BLOCK_TOKENS, Lengths, kv_blocks_available

SPECS = builtin_specs()
GPUS = ("h100-sxm", "h200", "b200", "a100-80gb", "mi300x")
#: Models whose every layer is global (the simulator does not model sliding windows).
MODELS = ("llama-3.1-8b", "mistral-7b", "llama-2-7b", "llama-2-13b", "llama-3.2-1b")
#: 60 requests: one run costs about 20 ms in CPython, so a new question stays within 100 ms in the
#: browser's slower Python, and the tightest targets already turn some of them away.
PROMPT, OUTPUT, REQUESTS = Lengths(512, 2048), Lengths(64, 512), 60


def cache_tokens(p: dict) -> Solution | None:
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    model = SPECS.model(p["model"])
    workload = Workload(model, kv_precision=p["kv"])
    blocks = kv_blocks_available(hardware, workload)
    answer = float(blocks * BLOCK_TOKENS)
    pool = memory_use(hardware, Workload(model, kv_precision=p["kv"], context=BLOCK_TOKENS)).pool_bytes
    per_token = workload.kv_bytes_per_token
    no_weights = hardware.kv_pool_bytes(0.0) // (BLOCK_TOKENS * per_token) * BLOCK_TOKENS
    slips = [Slip("bits", answer / 8, "you counted the cache in bits, not bytes.")]
    if no_weights > 1.05 * answer:
        slips.append(Slip("weights", float(no_weights), "you forgot the weights: the pool is what they leave."))
    return Solution(
        answer,
        (
            Step("KV pool: 95% of the memory the weights leave", pool / 1e9, "GB"),
            Step(f"One {BLOCK_TOKENS}-token block", BLOCK_TOKENS * per_token / 1e6, "MB"),
            Step("Whole blocks in the pool", float(blocks), "blocks"),
            Step(f"Tokens = blocks × {BLOCK_TOKENS}", answer, "tokens"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def decode_iteration(p: dict) -> Solution | None:
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    workload = Workload(SPECS.model(p["model"]), batch=p["batch"], context=p["context"])
    if not memory_use(hardware, workload).fits:
        return None
    costs = iteration_costs(hardware, workload)
    step = costs.iteration(p["batch"], p["batch"] * p["context"])
    answer = step.seconds * 1e3
    weights_only = max(costs.weights_bytes(p["batch"]) / costs.bandwidth_bytes_per_s, step.compute_s) * 1e3
    slips = []
    if weights_only < answer * 0.95:
        slips.append(Slip("kv", weights_only, "you left out the caches: each decode reads its user's whole context."))
    return Solution(
        answer,
        (
            Step("Weights read once for the iteration", costs.weights_bytes(p["batch"]) / 1e9, "GB"),
            Step(
                f"Caches of {p['batch']:,} users at {p['context']:,} tokens",
                (step.bytes_moved - costs.weights_bytes(p["batch"])) / 1e9,
                "GB",
            ),
            Step("Iteration = the longer of read time and math time", answer, "ms"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def mixed_iteration(p: dict) -> Solution | None:
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    workload = Workload(SPECS.model(p["model"]), batch=p["batch"], context=2048)
    if not memory_use(hardware, workload).fits:
        return None
    costs = iteration_costs(hardware, workload)
    mixed = costs.prefill(p["prompt"], decodes=p["batch"], decode_context=p["batch"] * 2048)
    alone = costs.iteration(p["batch"], p["batch"] * 2048)
    answer = mixed.seconds * 1e3
    slips = []
    if alone.seconds * 1e3 < answer * 0.95:
        slips.append(
            Slip(
                "decodes-only",
                alone.seconds * 1e3,
                "that is the decodes alone; the newcomer's prompt rides in the same iteration.",
            )
        )
    return Solution(
        answer,
        (
            Step(f"Decodes alone: {p['batch']:,} users", alone.seconds * 1e3, "ms"),
            Step(
                f"Tokens in the iteration: {p['batch']:,} decodes + {p['prompt']:,} prompt tokens",
                float(p["batch"] + p["prompt"]),
                "tokens",
            ),
            Step("Math of all those tokens (usually the longer)", mixed.compute_s * 1e3, "ms"),
            Step("Iteration = the longer of read and math", answer, "ms"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def _run(p: dict):
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    workload = Workload(SPECS.model(p["model"]))
    config = ServingConfig(
        rate=float(p["rate"]),
        requests=REQUESTS,
        prompt=PROMPT,
        output=OUTPUT,
        max_batch=64,
        ttft_slo_s=p.get("ttft", 1.0),
        tpot_slo_s=p.get("tpot", 0.05),
    )
    return simulate(hardware, workload, config)


def goodput(p: dict) -> Solution | None:
    result = _run(p)
    answer = result.goodput_requests_per_s
    if not answer > 0:  # every request missed a target: draw again
        return None
    slips = []
    if result.slo_attainment < 0.95:
        slips.append(
            Slip(
                "throughput",
                result.throughput_requests_per_s,
                "that is every completed request; goodput counts only those within both targets.",
            )
        )
    return Solution(
        answer,
        (
            Step("Completed requests a second", result.throughput_requests_per_s, "requests/s"),
            Step("Share within both targets", result.slo_attainment * 100, "%"),
            Step("Goodput = completed a second × that share", answer, "requests/s"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def throughput(p: dict) -> Solution | None:
    result = _run(p)
    answer = result.throughput_tokens_per_s
    offered = p["rate"] * (OUTPUT.low + OUTPUT.high) / 2
    slips = []
    if offered > answer * 1.05:
        slips.append(
            Slip(
                "offered", offered, "that is what arrives; past its capacity the server finishes fewer tokens a second."
            )
        )
    return Solution(
        answer,
        (
            Step("Tokens asked for a second: rate × mean output", offered, "tokens/s"),
            Step("GPU busy share in the run", result.busy_fraction * 100, "%"),
            Step("Output tokens a second the server delivers (simulated)", answer, "tokens/s"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


QUIZ = Quiz(
    "continuous-batching",
    [
        Template(
            "cache-tokens",
            "{model} (bf16 weights) on one {gpu} with a {kv} cache in 16-token blocks: how many tokens of cache fit,"
            " the pool being 95% of the memory the weights leave?",
            {"gpu": GPUS, "model": MODELS, "kv": ("bf16", "fp8")},
            cache_tokens,
            "tokens",
        ),
        Template(
            "decode-iteration",
            "{model} on one {gpu}: an iteration of {batch} decodes, each user at {context} tokens of context. How"
            " long does it take at the ceiling?",
            {"gpu": GPUS, "model": MODELS, "batch": (16, 32, 64, 128), "context": (1024, 4096, 8192)},
            decode_iteration,
            "ms",
        ),
        Template(
            "mixed-iteration",
            "{model} on one {gpu}: continuous batching puts a newcomer's {prompt}-token prompt in the same iteration"
            " as {batch} decodes at 2,048 tokens each. How long does that iteration take at the ceiling?",
            {"gpu": GPUS, "model": MODELS, "batch": (8, 32, 64), "prompt": (512, 1024, 2048, 4096)},
            mixed_iteration,
            "ms",
        ),
        Template(
            "goodput",
            "{model} on one {gpu}, continuous batching (max batch 64), 60 requests at {rate} a second, prompts of"
            " 512 to 2,048 tokens and outputs of 64 to 512: what is the goodput with targets TTFT ≤ {ttft} s and"
            " TPOT ≤ {tpot} s (simulated, seed 0)?",
            {"gpu": GPUS, "model": MODELS, "rate": (20, 40, 80), "ttft": (0.5, 1.0), "tpot": (0.01, 0.02, 0.03)},
            goodput,
            "requests/s",
        ),
        Template(
            "throughput",
            "{model} on one {gpu}, continuous batching (max batch 64), 60 requests at {rate} a second, prompts of"
            " 512 to 2,048 tokens and outputs of 64 to 512: how many output tokens a second does it deliver"
            " (simulated, seed 0)?",
            {"gpu": GPUS, "model": MODELS, "rate": (10, 20, 40, 80)},
            throughput,
            "tokens/s",
        ),
    ],
)
view = QUIZ.view
