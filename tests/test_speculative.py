"""Speculative decoding's formulas: τ, the round's cost from the package's own decode pass,
the batch-aware speedup, the break-even batch and the acceptance rate solved back.

Hand-worked values say where they come from. Tolerances: 1e-9 where the value is a
closed form of the same floats; 1e-5 where the only difference is an effect too small
to name (γ extra embedding rows read in a 16 GB pass).
"""

from __future__ import annotations

import math

import pytest

from roofline import Hardware, SpecError, Workload, builtin_specs, crossover_batch, decode_pass, iteration_costs
from roofline import architecture as arch
from roofline.speculative import (
    GAMMA_RANGE,
    Rounds,
    _falling_root,
    alpha_for_tokens_per_step,
    best_gamma,
    break_even_batch,
    check_alpha,
    check_gamma,
    speculate,
    speculation_round,
    tokens_per_step,
    verification_iteration,
    verification_pass,
    vocabulary_mismatch,
)

SPECS = builtin_specs()
H100 = Hardware(SPECS.gpu("h100-sxm"))
LLAMA_8B = SPECS.model("llama-3.1-8b")
LLAMA_70B = SPECS.model("llama-3.1-70b")
EMPTY = Workload(LLAMA_8B)


# -- τ ------------------------------------------------------------------------------


def test_tokens_per_step_worked_by_hand() -> None:
    # 1 + 0.8 + 0.64 + 0.512 + 0.4096: the strong interview answer's "3.36 at α = 0.8, γ = 4".
    assert tokens_per_step(0.8, 4) == pytest.approx(3.3616, rel=1e-12)
    assert tokens_per_step(0.5, 1) == pytest.approx(1.5)
    assert tokens_per_step(0.0, 7) == 1.0  # nothing accepted: the target's own token
    assert tokens_per_step(1.0, 7) == 8.0  # everything accepted, plus the bonus token


@pytest.mark.parametrize("alpha", [0.01, 0.3, 0.6, 0.85, 0.99, 0.999999])
@pytest.mark.parametrize("gamma", [1, 2, 5, 16, 64])
def test_tokens_per_step_is_the_closed_form(alpha: float, gamma: int) -> None:
    closed = (1 - alpha ** (gamma + 1)) / (1 - alpha)
    assert tokens_per_step(alpha, gamma) == pytest.approx(closed, rel=1e-6 if alpha > 0.999 else 1e-12)
    assert 1 <= tokens_per_step(alpha, gamma) <= gamma + 1


@pytest.mark.parametrize("tau,gamma", [(1.0, 4), (3.3616, 4), (5.0, 4), (1.89, 2), (2.08, 4), (8.9, 63)])
def test_alpha_solved_from_tau_gives_tau_back(tau: float, gamma: int) -> None:
    assert tokens_per_step(alpha_for_tokens_per_step(tau, gamma), gamma) == pytest.approx(tau, rel=1e-9)


def test_alpha_for_published_accept_length() -> None:
    # vLLM PR #16035: EAGLE-1 at k = 2 accepted 1.89 tokens per step: 1 + α + α² = 1.89.
    assert alpha_for_tokens_per_step(1.89, 2) == pytest.approx((-1 + math.sqrt(1 + 4 * 0.89)) / 2, rel=1e-9)


@pytest.mark.parametrize("bad", [-0.01, 1.01, float("nan"), float("inf"), True, "0.5", None])
def test_alpha_outside_zero_to_one_is_one_line(bad: object) -> None:
    with pytest.raises(SpecError, match=r"field 'alpha': must be between 0 and 1") as error:
        check_alpha(bad)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("bad", [0, 65, -1, 2.0, True, "4"])
def test_gamma_of_zero_or_above_64_is_one_line(bad: object) -> None:
    assert GAMMA_RANGE == (1, 64)
    with pytest.raises(SpecError, match=r"field 'gamma': must be a whole number from 1 to 64"):
        check_gamma(bad)


def test_tau_outside_one_to_gamma_plus_one_cannot_be_solved() -> None:
    with pytest.raises(SpecError, match="between 1 and γ\\+1 = 5"):
        alpha_for_tokens_per_step(5.5, 4)
    with pytest.raises(SpecError, match="between 1 and γ\\+1 = 3"):
        alpha_for_tokens_per_step(0.9, 2)


# -- The verification pass ----------------------------------------------------------


def test_verification_at_empty_context_is_the_decode_pass_of_every_token() -> None:
    assert verification_pass(H100, EMPTY, 8, 5) == decode_pass(H100, EMPTY, 40)


def test_verification_reads_each_users_cache_once_and_attends_from_every_token() -> None:
    batch, per_user, context = 16, 5, 4096
    workload = Workload(LLAMA_8B, context=context)
    checked = verification_pass(H100, workload, batch, per_user)
    tokens = batch * per_user
    weights = arch.parameters_read(LLAMA_8B, tokens) * 2
    cache = batch * arch.kv_cache_bytes(LLAMA_8B, context)
    assert checked.bytes_moved == pytest.approx(weights + cache, rel=1e-12)
    assert checked.flops == pytest.approx(tokens * arch.decode_flops_per_token(LLAMA_8B, context), rel=1e-12)
    assert checked.memory_s == pytest.approx((weights + cache) / H100.bandwidth_bytes_per_s, rel=1e-12)
    # The plain decode pass of the same 80 tokens would read 80 caches, not 16.
    assert decode_pass(H100, workload, tokens).bytes_moved > checked.bytes_moved + 60 * arch.kv_cache_bytes(
        LLAMA_8B, context
    )


# -- The speedup --------------------------------------------------------------------


@pytest.mark.parametrize("alpha,gamma", [(0.8, 4), (0.6, 4), (0.9, 8), (0.5, 1)])
def test_batch_one_with_a_free_draft_gives_tau(alpha: float, gamma: int) -> None:
    """Issue 20's goal: at batch 1 with a free draft the speedup equals τ. The pass of γ+1
    tokens is memory-bound like the pass of one, and reads γ more embedding rows (8 kB each
    against 16 GB of weights): the only difference, under 1e-5."""
    round_ = speculation_round(H100, EMPTY, gamma, 1)
    assert round_.speedup(alpha) == pytest.approx(tokens_per_step(alpha, gamma), rel=1e-5)


def test_batch_one_is_leviathans_walltime_improvement() -> None:
    """Leviathan et al. Theorem 3.8: τ / (γc + 1), with c the draft's step over the target's."""
    round_ = speculation_round(H100, EMPTY, 4, 1, draft_cost=0.1)
    assert round_.speedup(0.7) == pytest.approx(tokens_per_step(0.7, 4) / (4 * 0.1 + 1), rel=1e-5)


def test_draft_models_own_step_sets_its_cost() -> None:
    hardware = Hardware(SPECS.gpu("h100-sxm"), 4)
    workload = Workload(LLAMA_70B, context=1024)
    round_ = speculation_round(hardware, workload, 4, 8, draft=LLAMA_8B)
    own = decode_pass(hardware, Workload(LLAMA_8B, context=1024), 8).seconds
    assert round_.draft_step_s == own
    assert round_.draft_cost == pytest.approx(own / decode_pass(hardware, workload, 8).seconds)
    assert round_.drafter == "llama-3.1-8b"
    assert round_.seconds == pytest.approx(round_.verification.seconds + 4 * own)


def test_speedup_fades_then_reverses_as_the_batch_grows() -> None:
    speedups = [speculation_round(H100, EMPTY, 4, batch).speedup(0.8) for batch in (1, 32, 64, 128, 256, 512)]
    assert speedups == sorted(speedups, reverse=True)
    assert speedups[0] > 3.3 and speedups[-1] < 1


def test_break_even_is_tau_times_the_critical_batch_over_gamma_plus_one() -> None:
    """With an empty context and a free draft, the speedup falls to 1 where the verification pass
    of B(γ+1) tokens is compute-bound and plain decoding of B is still memory-bound:
    τ·t(B) = t(B(γ+1)) gives B = τ·n*/(γ+1), n* the critical batch (research brief, B-F4).
    The untied embedding's extra rows move it by under 0.1%."""
    critical = crossover_batch(H100, EMPTY)
    assert critical == pytest.approx(295, abs=1)
    expected = tokens_per_step(0.8, 4) * critical / 5
    assert break_even_batch(H100, EMPTY, 0.8, 4) == pytest.approx(expected, rel=1e-3)
    assert break_even_batch(H100, EMPTY, 0.8, 4) == pytest.approx(199, abs=1)


def test_at_long_context_speculation_never_breaks_even() -> None:
    """At 4,096 tokens a user's cache read (537 MB) outlasts the math of verifying 5 tokens,
    so the verification stays memory-bound, costs about one step, and the speedup stays τ."""
    workload = Workload(LLAMA_8B, context=4096)
    assert break_even_batch(H100, workload, 0.8, 4) is None
    assert speculation_round(H100, workload, 4, 100_000).speedup(0.8) == pytest.approx(3.36, abs=0.01)


def _bisected_break_even(rounds: Rounds, alpha: float) -> float | None:
    """The break-even batch by plain bisection on the speedup, as the package searched before its
    secant search: the yardstick the faster search must agree with."""
    if rounds.at(1).speedup(alpha) <= 1:
        return 1.0
    low, high = 1.0, 2.0
    while rounds.at(high).speedup(alpha) > 1:
        if high >= 1_000_000:
            return None
        low, high = high, min(2 * high, 1_000_000)
    while high - low > 1e-6 * high:
        middle = (low + high) / 2
        low, high = (middle, high) if rounds.at(middle).speedup(alpha) > 1 else (low, middle)
    return (low + high) / 2


@pytest.mark.parametrize(
    ("gpu", "gpus", "model", "context", "alpha", "gamma", "drafter"),
    [
        ("h100-sxm", 1, "llama-3.1-8b", 0, 0.8, 4, {}),
        ("h100-sxm", 1, "llama-3.1-8b", 0, 0.5, 1, {}),  # the crossing sits on a kink of the gain
        ("h100-sxm", 1, "llama-3.1-8b", 512, 0.7, 6, {"draft": "llama-3.2-1b"}),
        ("a100-80gb", 4, "llama-3.1-70b", 1024, 0.9, 8, {"draft_cost": 0.05}),
        ("mi300x", 1, "mixtral-8x7b", 0, 0.8, 4, {"draft_cost": 0.1}),  # experts touched: a curved gain
        ("h200", 8, "deepseek-v3", 256, 0.6, 2, {}),
        ("l40s", 1, "llama-2-7b", 0, 0.95, 16, {"draft_cost": 0.02}),
    ],
)
def test_break_even_search_agrees_with_bisection(gpu, gpus, model, context, alpha, gamma, drafter) -> None:
    if "draft" in drafter:
        drafter = {"draft": SPECS.model(drafter["draft"])}
    workload = Workload(SPECS.model(model), context=context)
    found = break_even_batch(Hardware(SPECS.gpu(gpu), gpus), workload, alpha, gamma, **drafter)
    bisected = _bisected_break_even(Rounds(Hardware(SPECS.gpu(gpu), gpus), workload, gamma, **drafter), alpha)
    assert found is not None and bisected is not None
    assert found == pytest.approx(bisected, rel=1e-4)
    rounds = Rounds(Hardware(SPECS.gpu(gpu), gpus), workload, gamma, **drafter)
    assert rounds.at(found * (1 - 1e-3)).speedup(alpha) > 1 > rounds.at(found * (1 + 1e-3)).speedup(alpha)


@pytest.mark.parametrize(
    "falling",
    [
        lambda x: 3.0 - x,  # a line: the first secant lands on the root
        lambda x: min(10.0 - 2 * x, 7.0 - x),  # a kink at 3, the root at 5
        lambda x: max(3.0 - x, 0.2 * (3.0 - x)),  # a kink at the root
        lambda x: 1.0 / x - 1 / 3,  # convex: regula falsi alone would pin one end
        lambda x: 9.0 - x * x,  # concave
        lambda x: 1.0 if x < 3 else -1.0,  # a step: every secant point is the middle or worse
    ],
)
def test_falling_root_finds_the_crossing_within_the_tolerance(falling) -> None:
    calls = []

    def counted(x: float) -> float:
        calls.append(x)
        return falling(x)

    root = _falling_root(counted, 1.0, 8.0, tolerance=1e-4)
    assert falling(root - 1e-4 * 8) > 0 >= falling(root + 1e-4 * 8)
    assert len(calls) < 100


def test_rounds_at_a_batch_are_speculation_round_there_and_kept() -> None:
    workload = Workload(LLAMA_8B, context=2048)
    rounds = Rounds(H100, workload, 4, draft=SPECS.model("llama-3.2-1b"))
    for batch in (1, 3, 64, 1000.5):
        assert rounds.at(batch) == speculation_round(H100, workload, 4, batch, draft=SPECS.model("llama-3.2-1b"))
        assert rounds.at(batch) is rounds.at(batch)
    assert rounds.at() == rounds.at(workload.batch)
    with pytest.raises(SpecError, match="from 1 to 1,000,000") as caught:
        rounds.at(0)
    assert caught.value.field == "batch"


def test_when_speculation_never_pays_the_break_even_is_one_user() -> None:
    assert break_even_batch(H100, EMPTY, 0.0, 4, draft_cost=0.5) == 1.0


def test_best_gamma_rises_with_alpha_and_falls_with_batch_and_draft_cost() -> None:
    low, _ = best_gamma(H100, EMPTY, 0.6, 1, draft_cost=0.05)
    high, _ = best_gamma(H100, EMPTY, 0.9, 1, draft_cost=0.05)
    costly, _ = best_gamma(H100, EMPTY, 0.9, 1, draft_cost=0.3)
    crowded, _ = best_gamma(H100, EMPTY, 0.9, 128, draft_cost=0.05)
    assert low < high
    assert costly < high
    assert crowded < high


# -- α from a measured speedup, and bad input -----------------------------------------


@pytest.mark.parametrize("alpha", [0.05, 0.5, 0.8, 0.99])
def test_alpha_solved_from_a_speedup_gives_the_speedup_back(alpha: float) -> None:
    round_ = speculation_round(H100, Workload(LLAMA_8B, context=2048), 4, 32, draft_cost=0.1)
    assert round_.alpha_for_speedup(round_.speedup(alpha)) == pytest.approx(alpha, rel=1e-9)


def test_a_speedup_above_gamma_plus_one_is_one_line() -> None:
    round_ = speculation_round(H100, EMPTY, 4, 1)
    with pytest.raises(SpecError, match=r"field 'speedup': 6× is above γ\+1 = 5") as error:
        round_.alpha_for_speedup(6)
    assert "\n" not in str(error.value)


def test_an_unreachable_speedup_says_what_can_be_reached() -> None:
    round_ = speculation_round(H100, EMPTY, 4, 1, draft_cost=0.1)
    with pytest.raises(SpecError, match=r"4.9× is out of reach: .* even every draft token accepted gives 3.57×"):
        round_.alpha_for_speedup(4.9)
    with pytest.raises(SpecError, match=r"below what a round gives with nothing accepted \(0.714×\)"):
        round_.alpha_for_speedup(0.5)


def test_a_draft_with_another_vocabulary_is_an_error_unless_its_cost_is_given() -> None:
    mistral = SPECS.model("mistral-7b")
    assert vocabulary_mismatch(LLAMA_8B, LLAMA_70B) is None
    with pytest.raises(SpecError, match=r"field 'draft': Mistral 7B v0.2's vocabulary \(32,000 tokens\)"):
        speculation_round(H100, EMPTY, 4, 1, draft=mistral)
    stated = speculation_round(H100, EMPTY, 4, 1, draft=mistral, draft_cost=0.1)
    assert stated.draft_cost == pytest.approx(0.1)
    assert stated.notes and "is not Llama 3.1 8B's (128,256)" in stated.notes[0]


@pytest.mark.parametrize("bad", [-0.1, 10.5, float("nan"), True])
def test_bad_draft_cost_is_one_line(bad: object) -> None:
    with pytest.raises(SpecError, match=r"field 'draft_cost': must be between 0 and 10"):
        speculation_round(H100, EMPTY, 4, 1, draft_cost=bad)


def test_speculate_reports_the_issues_json_keys() -> None:
    result = speculate(H100, Workload(LLAMA_8B, batch=8, context=1024), 4, alpha=0.7, draft_cost=0.05)
    figures = result.to_dict()
    for key in (
        "tokens_per_step",
        "speedup",
        "draft_cost",
        "break_even_batch",
        "tokens_per_s_per_user",
        "baseline_tokens_per_s_per_user",
        "alpha",
    ):
        assert key in figures
    assert figures["tokens_per_s_per_user"] == pytest.approx(
        figures["speedup"] * figures["baseline_tokens_per_s_per_user"], rel=1e-12
    )
    solved = speculate(H100, Workload(LLAMA_8B, batch=8, context=1024), 4, speedup=result.speedup, draft_cost=0.05)
    assert solved.alpha == pytest.approx(0.7, rel=1e-9)
    assert solved.to_dict()["alpha_from"] == "speedup"
    with pytest.raises(SpecError, match="not both or neither"):
        speculate(H100, EMPTY, 4)


# -- The simulator's pieces ------------------------------------------------------------


def test_verification_iteration_matches_the_verification_pass() -> None:
    workload = Workload(LLAMA_8B, context=1000)
    costs = iteration_costs(H100, workload)
    assert verification_iteration(costs, 16, 0, 5).seconds == pytest.approx(
        verification_pass(H100, Workload(LLAMA_8B), 16, 5).seconds, rel=1e-12
    )
    served = verification_iteration(costs, 16, 16 * 1000, 5)
    priced = verification_pass(H100, workload, 16, 5)
    assert served.bytes_moved == pytest.approx(priced.bytes_moved, rel=1e-12)
    assert served.seconds == pytest.approx(priced.seconds, rel=1e-9)
