"""Chapter 7's quiz: experts touched, tokens per expert, the batch for a compute-bound expert, the
all-to-all's bytes and what a decode step reads, each drawn afresh and answered by ``roofline.moe``,
``roofline.architecture`` and ``roofline.quantization`` (``roofline.quiz`` explains templates and grading)."""

from __future__ import annotations

from roofline import Hardware, builtin_specs, moe
from roofline import architecture as arch
from roofline.quantization import critical_batch_for
from roofline.quiz import Quiz, Slip, Solution, Step, Template, words

SPECS = builtin_specs()
GPUS = ("h100-sxm", "h200", "b200", "a100-80gb", "mi300x")
#: The chapter's mixtures of experts, each with its checkpoint's weight format.
MODELS = ("mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-120b", "deepseek-v3")
FORMATS = {"mixtral-8x7b": "bf16", "qwen3-30b-a3b": "bf16", "gpt-oss-120b": "mxfp4", "deepseek-v3": "fp8"}
BATCHES = (2, 4, 8, 16, 32, 64, 128, 256)


def _differs(slip: float, answer: float) -> bool:
    """A slip worth naming lands outside the grading tolerance of the answer."""
    return abs(slip - answer) > 0.05 * abs(answer)


def touched(p: dict) -> Solution:
    spec = SPECS.model(p["model"]).moe
    e, k, b = spec.experts, spec.experts_per_token, p["batch"]
    answer = moe.routed_experts_touched(e, k, b)
    unused = (1 - k / e) ** b
    slips = []
    if _differs(min(b * k, e), answer):
        slips.append(
            Slip("no-overlap", float(min(b * k, e)), "tokens share experts: count each expert once, not once a token.")
        )
    if _differs(float(k), answer):
        slips.append(Slip("one-token", float(k), "that is one token's experts; the batch touches more between them."))
    return Solution(
        answer,
        (
            Step(f"Chance a given expert is unused by all {b} tokens: (1 − {k}/{e})^{b}", unused * 100, "%"),
            Step(f"Experts touched = {e} × (1 − that)", answer, "×"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def per_expert(p: dict) -> Solution:
    spec = SPECS.model(p["model"]).moe
    answer = moe.tokens_per_expert(p["batch"], spec.experts_per_token, spec.experts)
    slips = []
    plain = p["batch"] / spec.experts
    if _differs(plain, answer):
        slips.append(Slip("no-k", plain, f"each token goes to {spec.experts_per_token} experts, not one."))
    return Solution(
        answer,
        (
            Step(
                f"Expert copies in the step: {p['batch']} tokens × {spec.experts_per_token}",
                p["batch"] * 1.0 * spec.experts_per_token,
                "tokens",
            ),
            Step(f"Spread over {spec.experts} experts", answer, "tokens"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def expert_critical(p: dict) -> Solution:
    model = SPECS.model(p["model"])
    precision = FORMATS[p["model"]]
    dense = critical_batch_for(Hardware(SPECS.gpu(p["gpu"])), precision)
    ratio = model.moe.experts / model.moe.experts_per_token
    answer = moe.expert_critical_batch(dense, model.moe.experts, model.moe.experts_per_token)
    slips = []
    if _differs(dense, answer):
        why = "that is a dense matmul's critical batch; each expert gets only E_tok/E of the tokens."
        slips.append(Slip("dense", dense, why))
    return Solution(
        answer,
        (
            Step(f"Dense critical batch at {precision} on this GPU", dense, "users"),
            Step(f"Times E ÷ E_tok = {ratio:g}", answer, "users"),
        ),
        tuple(slips),
        {**words(p, SPECS), "precision": precision},
    )


def alltoall(p: dict) -> Solution:
    model = SPECS.model(p["model"])
    k, d = model.moe.experts_per_token, model.hidden_size
    answer = moe.alltoall_bytes_per_token(d, k, "fp8", "bf16") / 1e3
    out = k * d * moe.ALLTOALL_BYTES_PER_VALUE["fp8"] / 1e3
    slips = [Slip("one-way", out, "that is the dispatch alone; the combine brings the outputs back in bf16.")]
    both16 = moe.alltoall_bytes_per_token(d, k, "bf16", "bf16") / 1e3
    if _differs(both16, answer):
        slips.append(Slip("bf16", both16, "the dispatch goes in fp8, one byte a value plus a scale per 128."))
    return Solution(
        answer,
        (
            Step(f"Dispatch: {k} copies × {d:,} values × (1 + 4/128) bytes", out, "kB"),
            Step(f"Combine: {k} × {d:,} × 2 bytes", answer - out, "kB"),
            Step("Both", answer, "kB"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def step_read(p: dict) -> Solution:
    model = SPECS.model(p["model"])
    precision = FORMATS[p["model"]]
    answer = arch.weights_read_bytes(model, p["batch"], precision) / 1e9
    held = arch.weight_bytes(model, precision) / 1e9
    one = arch.weights_read_bytes(model, 1, precision) / 1e9
    slips = []
    if _differs(held, answer):
        slips.append(Slip("all", held, "a step reads only the experts its tokens chose, not every expert."))
    if _differs(one, answer):
        slips.append(Slip("active", one, "that is one user's read; the batch's tokens choose more experts."))
    spec = model.moe
    return Solution(
        answer,
        (
            Step(
                "Routed experts touched a layer",
                moe.routed_experts_touched(spec.experts, spec.experts_per_token, p["batch"]),
                "×",
            ),
            Step("Weights read: everything else plus those experts", answer, "GB"),
        ),
        tuple(slips),
        {**words(p, SPECS), "precision": precision},
    )


QUIZ = Quiz(
    "mixture-of-experts",
    [
        Template(
            "experts-touched",
            "{model}, {batch} users in a decode step, uniform routing: how many routed experts does one layer"
            " touch on average?",
            {"model": MODELS, "batch": BATCHES},
            touched,
            "×",
        ),
        Template(
            "tokens-per-expert",
            "{model}, {batch} users in a decode step: how many tokens does the mean routed expert multiply?",
            {"model": MODELS, "batch": BATCHES},
            per_expert,
            "tokens",
        ),
        Template(
            "expert-critical-batch",
            "{model} in {precision} on {gpu}: from how many users does the mean routed expert's matmul turn"
            " compute-bound?",
            {"model": MODELS, "gpu": GPUS},
            expert_critical,
            "users",
        ),
        Template(
            "alltoall-bytes",
            "{model} with expert parallelism, fp8 dispatch and bf16 combine: how many bytes does one token send"
            " through one MoE layer, out and back?",
            {"model": MODELS},
            alltoall,
            "kB",
        ),
        Template(
            "step-read",
            "{model} in {precision}: how many GB of weights does one decode step read for {batch} users?",
            {"model": MODELS, "batch": BATCHES},
            step_read,
            "GB",
        ),
    ],
)
view = QUIZ.view
