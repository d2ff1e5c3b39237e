"""Chapter 5's quiz: tokens a round yields (τ), a round's time, the speedup at a batch, each
user's tokens/s, the break-even batch and α from a measured speedup, each drawn afresh and
answered by ``roofline.speculative`` (``roofline.quiz`` explains templates and grading)."""

from __future__ import annotations

from roofline import Hardware, Workload, builtin_specs, memory_use
from roofline.quiz import Quiz, Slip, Solution, Step, Template, words
from roofline.speculative import Rounds, alpha_for_tokens_per_step, tokens_per_step

SPECS = builtin_specs()
GPUS = ("h100-sxm", "h200", "b200", "mi300x")
MODELS = ("llama-3.1-8b", "llama-3.1-70b", "mistral-7b")
ALPHAS = (0.5, 0.6, 0.7, 0.8, 0.9)
GAMMAS = (2, 3, 4, 5, 6)
COSTS = (0.05, 0.1, 0.2)
BATCHES = (4, 16, 32, 64)


def _rounds(p: dict) -> Rounds | None:
    """The deployment's rounds with a draft costing ``cost`` of a target step, or None if it does not fit."""
    hardware = Hardware(SPECS.gpu(p["gpu"]))
    workload = Workload(SPECS.model(p["model"]), batch=p.get("batch", 1), context=2048)
    if not memory_use(hardware, workload).fits:
        return None
    return Rounds(hardware, workload, p["gamma"], draft_cost=p["cost"])


def tau(p: dict) -> Solution:
    alpha, gamma = p["alpha"], p["gamma"]
    answer = tokens_per_step(alpha, gamma)
    slips = [Slip("target-token", answer - 1, "you left out the target's own token, which every round adds.")]
    linear = 1 + alpha * gamma
    if abs(linear - answer) > 0.05 * answer:
        slips.append(
            Slip("linear", linear, "you took α × γ drafts as accepted; a draft counts only if every one before it was.")
        )
    return Solution(
        answer,
        (
            Step(
                f"Draft token i survives with probability α^i: 1 + {alpha:g} + … + {alpha:g}^{gamma}", answer, "tokens"
            ),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def round_time(p: dict) -> Solution | None:
    rounds = _rounds(p)
    if rounds is None:
        return None
    round_ = rounds.at()
    answer = round_.seconds * 1e3
    return Solution(
        answer,
        (
            Step(
                f"Verification: the target's pass over {p['gamma'] + 1} tokens a user",
                round_.verification.seconds * 1e3,
                "ms",
            ),
            Step(
                f"Draft steps: {p['gamma']} × {p['cost']:g} × a plain step",
                p["gamma"] * round_.draft_step_s * 1e3,
                "ms",
            ),
            Step("Round = verification + draft steps", answer, "ms"),
        ),
        (
            Slip(
                "no-draft",
                round_.verification.seconds * 1e3,
                "you left out the γ draft steps the round also waits for.",
            ),
        ),
        words(p, SPECS),
    )


def speedup(p: dict) -> Solution | None:
    rounds = _rounds(p)
    if rounds is None:
        return None
    round_ = rounds.at()
    answer = round_.speedup(p["alpha"])
    tokens = round_.tokens_per_step(p["alpha"])
    slips = []
    if abs(tokens - answer) > 0.05 * answer:
        slips.append(
            Slip("tau", tokens, "that is τ alone; a round takes longer than a plain step, so divide by its cost.")
        )
    return Solution(
        answer,
        (
            Step("τ, tokens a round yields", tokens, "tokens"),
            Step("Plain decode step", round_.baseline.seconds * 1e3, "ms"),
            Step("Round (verification + draft steps)", round_.seconds * 1e3, "ms"),
            Step("Speedup = τ × plain step ÷ round", answer, "×"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def per_user_rate(p: dict) -> Solution | None:
    rounds = _rounds(p)
    if rounds is None:
        return None
    round_ = rounds.at()
    answer = round_.tokens_per_s_per_user(p["alpha"])
    return Solution(
        answer,
        (
            Step("τ, tokens a round yields each user", round_.tokens_per_step(p["alpha"]), "tokens"),
            Step("Round", round_.seconds * 1e3, "ms"),
            Step("Each user's tokens/s = τ ÷ round", answer, "tokens/s"),
        ),
        (Slip("total", answer * p["batch"], "that is every user together; the question asks for one user."),),
        words(p, SPECS),
    )


def break_even(p: dict) -> Solution | None:
    rounds = _rounds(p)
    if rounds is None:
        return None
    batch = rounds.break_even(p["alpha"])
    if batch is None or batch < 2:
        return None
    free = Rounds(rounds.hardware, rounds.workload, p["gamma"], draft_cost=0.0).break_even(p["alpha"])
    slips = []
    if free is not None and abs(free - batch) > 0.05 * batch:
        slips.append(
            Slip("free-draft", free, "you left out the draft's cost; it makes speculation stop paying sooner.")
        )
    return Solution(
        batch,
        (
            Step("τ, tokens a round yields", rounds.at(1).tokens_per_step(p["alpha"]), "tokens"),
            Step("Batch where τ × plain step = round (the speedup falls to 1)", batch, "users"),
        ),
        tuple(slips),
        words(p, SPECS),
    )


def alpha_from_speedup(p: dict) -> Solution | None:
    rounds = _rounds(p)
    if rounds is None:
        return None
    round_ = rounds.at()
    measured = round_.speedup(p["alpha"])  # a speedup a round of this deployment can give
    measured = round(measured, 2)
    if not round_.speedup(0.0) < measured < round_.speedup(1.0):
        return None
    answer = round_.alpha_for_speedup(measured) * 100
    slips = []
    if 1 <= measured <= p["gamma"] + 1:
        naive = alpha_for_tokens_per_step(measured, p["gamma"]) * 100
        if abs(naive - answer) > 0.05 * answer:
            slips.append(
                Slip("tau", naive, "you set τ to the speedup; the round's cost makes the speedup less than τ.")
            )
    filled = words(p, SPECS)
    filled["speedup"] = f"{measured:.2f}"
    return Solution(
        answer,
        (
            Step("Plain step", round_.baseline.seconds * 1e3, "ms"),
            Step("Round", round_.seconds * 1e3, "ms"),
            Step(
                "τ needed = speedup × round ÷ plain step", measured * round_.seconds / round_.baseline.seconds, "tokens"
            ),
            Step("α that gives that τ (solved)", answer, "%"),
        ),
        tuple(slips),
        filled,
    )


QUIZ = Quiz(
    "speculative-decoding",
    [
        Template(
            "tau",
            "Each draft token is accepted with probability α = {alpha}, and a round drafts γ = {gamma}. How many"
            " tokens does one verification yield on average (τ)?",
            {"alpha": ALPHAS, "gamma": GAMMAS},
            tau,
            "tokens",
        ),
        Template(
            "round-time",
            "{model} on one {gpu}, {batch} users at 2,048 tokens: a round drafts γ = {gamma} tokens with a drafter"
            " costing {cost} of a target step. How long does one round take at the ceiling?",
            {"gpu": GPUS, "model": MODELS, "batch": BATCHES, "gamma": GAMMAS, "cost": COSTS},
            round_time,
            "ms",
        ),
        Template(
            "speedup",
            "{model} on one {gpu}, {batch} users at 2,048 tokens, γ = {gamma}, α = {alpha}, a drafter costing {cost}"
            " of a target step: how many times faster than plain decoding is speculation, at the ceiling?",
            {"gpu": GPUS, "model": MODELS, "batch": BATCHES, "gamma": GAMMAS, "alpha": ALPHAS, "cost": COSTS},
            speedup,
            "×",
        ),
        Template(
            "per-user-rate",
            "{model} on one {gpu}, {batch} users at 2,048 tokens, γ = {gamma}, α = {alpha}, a drafter costing {cost}"
            " of a target step: how many tokens per second does each user get, at the ceiling?",
            {"gpu": GPUS, "model": MODELS, "batch": BATCHES, "gamma": GAMMAS, "alpha": ALPHAS, "cost": COSTS},
            per_user_rate,
            "tokens/s",
        ),
        Template(
            "break-even",
            "{model} on one {gpu} at 2,048 tokens, γ = {gamma}, α = {alpha}, a drafter costing {cost} of a target"
            " step: from what batch does speculation stop paying, at the ceiling?",
            {"gpu": GPUS, "model": MODELS, "gamma": GAMMAS, "alpha": ALPHAS, "cost": COSTS},
            break_even,
            "users",
        ),
        Template(
            "alpha-from-speedup",
            "{model} on one {gpu}, one user at 2,048 tokens, γ = {gamma}, a drafter costing {cost} of a target step:"
            " speculation measures {speedup}× faster. What acceptance rate α does that imply, at the ceiling?",
            {"gpu": GPUS, "model": MODELS, "gamma": GAMMAS, "alpha": ALPHAS, "cost": COSTS},
            alpha_from_speedup,
            "%",
        ),
    ],
)
view = QUIZ.view
