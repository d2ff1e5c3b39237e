"""Speculative decoding: how many tokens one verification step yields, and what a round costs.

A cheap drafter proposes γ tokens; the target model checks all of them, plus the
position after them, in one pass. Each draft token is accepted with probability α
(independently, as Leviathan et al. assume), so a round yields the accepted run and
one token from the target: at least 1, at most γ+1.

Symbols: α acceptance rate of one draft token, γ draft tokens per round, τ expected
tokens per round, B users decoding together, c context (tokens cached per user),
t(n) the package's decode pass of n tokens (``performance.decode_pass``), t_d the
draft's own step, ĉ = t_d(B) / t(B) the draft cost.

- Tokens per round (Leviathan, Kalman and Matias, ICML 2023, eq. 1):
  ``τ(α, γ) = (1 - α^(γ+1)) / (1 - α)``, and ``γ + 1`` at α = 1.
- A round at batch B: γ draft steps and one verification pass of ``B * (γ+1)``
  tokens, in which each user's cache is read once (its γ+1 queries share it):
  ``round(B) = t_verify(B) + γ * t_d(B)``.
- Speedup over plain decoding at the same batch:
  ``S(B) = τ * t(B) / round(B)``. At B = 1 with the pass memory-bound,
  ``t_verify ≈ t(1)`` and this is Leviathan's ``τ / (1 + γ ĉ)``.
- Tokens/s per user: ``τ / round(B)`` with speculation, ``1 / t(B)`` without.
- A draft head with a fusion layer (EAGLE-3's ``fc`` over the target's hidden states) runs
  it on the round's first draft step only, where the target's states come in; the later
  steps feed the head's own output back. So ``γ * t_d(B)`` is ``t_d(B) + (γ-1) * t_d'(B)``,
  t_d' the step without the fusion layer, and ``t_d`` below is the mean of the γ steps.

The times come from ``performance.decode_pass``, so they follow whatever the
``Hardware`` says: the ceiling by default, an expected cost model where one is set.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from .errors import SpecError, shown
from .performance import Hardware, IterationCosts, Pass, Workload, decode_pass, resolved
from .specs import ModelSpec

#: Draft tokens per round the package accepts. Engines use far fewer (SGLang's default
#: ``speculative_num_steps`` is 5; vLLM's ``num_speculative_tokens`` is usually 2 to 5):
#: past a few dozen, τ is within a hair of its limit 1 / (1 - α) for any α below 0.95.
GAMMA_RANGE = (1, 64)
#: Batches searched for the break-even point: the command line's batch range.
MAX_BREAK_EVEN_BATCH = 1_000_000
#: Bisection steps: each halves the interval, so 100 leave it far below a float's resolution.
_BISECTION_STEPS = 100


def check_alpha(alpha: object, field: str = "alpha") -> float:
    """``alpha`` as a float if it is a probability (0 to 1, inclusive); else a SpecError naming ``field``."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:  # NaN fails too
        raise SpecError(
            f"must be between 0 and 1, got {shown(alpha)}",
            field=field,
            hint="the acceptance rate is the probability that one draft token is accepted",
        )
    return float(alpha)


def check_gamma(gamma: object, field: str = "gamma") -> int:
    """``gamma`` if it is a whole number in ``GAMMA_RANGE``; else a SpecError naming ``field``."""
    low, high = GAMMA_RANGE
    if isinstance(gamma, bool) or not isinstance(gamma, int) or not low <= gamma <= high:
        raise SpecError(
            f"must be a whole number from {low} to {high}, got {shown(gamma)}",
            field=field,
            hint="γ is how many tokens the drafter proposes per round; engines use 2 to 8",
        )
    return gamma


def tokens_per_step(alpha: float, gamma: int) -> float:
    """Expected tokens one verification step yields: ``τ = (1 - α^(γ+1)) / (1 - α)``, ``γ + 1`` at α = 1.

    The accepted run is capped geometric: draft token i survives with probability α^i,
    and the target adds one token after the run, so ``τ = 1 + α + α² + … + α^γ``. The
    sum is what is computed: near α = 1 the closed form loses digits to cancellation.
    """
    alpha = check_alpha(alpha)
    gamma = check_gamma(gamma)
    return math.fsum(alpha**k for k in range(gamma + 1))


def _bisect(
    increasing: Callable[[float], float], target: float, low: float, high: float, tolerance: float = 0.0
) -> float:
    """The x in [low, high] where the increasing function reaches ``target`` (bisection), to
    within ``tolerance * high``, or to a float's resolution when ``tolerance`` is 0."""
    for _ in range(_BISECTION_STEPS):
        middle = (low + high) / 2
        if middle in (low, high) or high - low <= tolerance * high:
            break
        if increasing(middle) < target:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def alpha_for_tokens_per_step(tokens: float, gamma: int) -> float:
    """The acceptance rate α whose ``τ(α, γ)`` is ``tokens`` (bisection: τ rises with α).

    ``tokens`` must lie between 1 (nothing accepted) and γ+1 (everything accepted).
    """
    gamma = check_gamma(gamma)
    if isinstance(tokens, bool) or not isinstance(tokens, (int, float)) or not 1 <= tokens <= gamma + 1:
        raise SpecError(
            f"must be between 1 and γ+1 = {gamma + 1}, got {shown(tokens)}",
            field="tokens_per_step",
            hint="a round yields at least the target's own token and at most every draft token plus it",
        )
    return _bisect(lambda alpha: tokens_per_step(alpha, gamma), tokens, 0.0, 1.0)


# -- What a round costs ------------------------------------------------------------


def verification_pass(
    hardware: Hardware, workload: Workload, batch: float, tokens_per_user: int, users: Pass | None = None
) -> Pass:
    """The target's pass over ``tokens_per_user`` new tokens for each of ``batch`` users.

    It is ``decode_pass`` of ``n = batch * tokens_per_user`` tokens (weights touched by n
    tokens, n tokens' layer math, n tokens' all-reduces), except that each user's cache is
    read once: a user's tokens are queries against the same keys and values, and
    attention kernels load them once for all of them. Each query still does its own
    attention math over the context. So, from three decode passes:

    bytes = ``bytes(n tokens, empty context) + cache bytes of B users``;
    FLOPs = ``FLOPs(n tokens, empty context) + tokens_per_user * attention FLOPs of B users``;
    the times scale with them at the rates the empty pass was timed at. With an empty
    context this is exactly ``decode_pass(hardware, workload, n)``. ``users``, when given, is
    ``decode_pass(hardware, workload, batch)`` already computed (a round's plain step is that pass).
    """
    if isinstance(tokens_per_user, bool) or not isinstance(tokens_per_user, int) or tokens_per_user < 1:
        raise SpecError(f"must be a whole number of at least 1, got {shown(tokens_per_user)}", field="tokens_per_user")
    return _verification(hardware, workload, _emptied(workload), batch, tokens_per_user, users)


def _emptied(workload: Workload) -> Workload | None:
    """``workload`` with nothing cached (what ``_verification`` prices every token's pass at), or
    None when its context is empty already."""
    return replace(workload, context=0, shared_prefix=0) if workload.context else None


def _verification(
    hardware: Hardware,
    workload: Workload,
    empty: Workload | None,
    batch: float,
    tokens_per_user: int,
    users: Pass | None,
) -> Pass:
    """``verification_pass``, given ``_emptied(workload)``: a curve over many batches builds it once."""
    tokens = batch * tokens_per_user
    if empty is None:
        return decode_pass(hardware, workload, tokens)
    return _cache_read_once(
        decode_pass(hardware, empty, tokens),
        users if users is not None else decode_pass(hardware, workload, batch),
        decode_pass(hardware, empty, batch),
        tokens_per_user,
    )


def _cache_read_once(bare: Pass, users: Pass, users_bare: Pass, tokens_per_user: int) -> Pass:
    """``bare`` (every token's pass at an empty context) plus the users' cache read once and their
    attention math ``tokens_per_user`` times: the difference between ``users`` (one token each, with
    their caches) and ``users_bare`` (the same without). The times scale with bytes and FLOPs at
    the rates ``bare`` was timed at, so whatever the hardware's costs are, they carry over."""
    bytes_moved = bare.bytes_moved + (users.bytes_moved - users_bare.bytes_moved)
    flops = bare.flops + tokens_per_user * (users.flops - users_bare.flops)
    # Built directly, not with dataclasses.replace: a curve of rounds builds thousands of these.
    return Pass(
        bytes_moved,
        flops,
        bare.memory_s * bytes_moved / bare.bytes_moved,
        bare.compute_s * flops / bare.flops,
        bare.communication_s,
        bare.overhead_s,
    )


def head_mismatch(target: ModelSpec, draft: ModelSpec) -> str | None:
    """Why a draft-only entry (``draft_for``) cannot draft for ``target``, in words, or None.

    A head such as EAGLE-3 reads its target's hidden states and embedding, so it drafts for
    the model it was trained on and nothing else: another target, or one whose vocabulary or
    width differs from what the head was built for, is refused even with a draft cost given.
    """
    if draft.draft_for is None:
        return None
    if draft.draft_for != target.id:
        return f"{draft.name} drafts for {draft.draft_for} only, not {target.id}: it reads its target's hidden states"
    if draft.vocab_size != target.vocab_size:
        return (
            f"{draft.name} was built for a vocabulary of {draft.vocab_size:,} tokens, and {target.name}'s"
            f" has {target.vocab_size:,}: a head must share its target's tokenizer"
        )
    if draft.shares_target_embedding and draft.hidden_size != target.hidden_size:
        return (
            f"{draft.name} reads {target.name}'s embedding as {draft.hidden_size:,} values a token,"
            f" and {target.name}'s hidden size is {target.hidden_size:,}"
        )
    return None


def check_draft(target: ModelSpec, draft: ModelSpec, cost_given: bool, option: str = "--draft-cost") -> tuple[str, ...]:
    """The notes to state beside a pairing of ``draft`` with ``target``; SpecError when it cannot draft.

    A head made for another target is refused (``head_mismatch``); a draft model with another
    vocabulary is refused unless its cost is given (``cost_given``), when it is a note instead.
    """
    refusal = head_mismatch(target, draft)
    if refusal:
        raise SpecError(refusal, field="draft", hint=f"use it with --model {draft.draft_for}, or pick another draft")
    mismatch = vocabulary_mismatch(target, draft)
    if mismatch and not cost_given:
        raise SpecError(mismatch, field="draft", hint=f"pick a draft of the same family, or give {option}")
    return (f"{mismatch}; the draft cost given is used as it is",) if mismatch else ()


def without_fusion(model: ModelSpec) -> ModelSpec:
    """``model`` without its fusion layer: a draft head's step after the round's first (see the
    module docstring). The model itself when it has none."""
    return replace(model, fusion_input_size=0) if model.fusion_input_size else model


def vocabulary_mismatch(target: ModelSpec, draft: ModelSpec) -> str | None:
    """Why ``draft`` cannot draft for ``target``, in words, or None when their vocabularies match.

    A draft proposes token ids the target then scores, so both must use one tokenizer;
    a different vocabulary size is the sign that they do not. That is how serving engines
    verify (vLLM compares ids); Hugging Face Transformers' Universal Assisted Generation
    re-encodes a draft's text with the target's tokenizer instead, a cost this package
    does not price, so it refuses the pairing as the engines do.
    """
    if draft.vocab_size == target.vocab_size:
        return None
    return (
        f"{draft.name}'s vocabulary ({draft.vocab_size:,} tokens) is not {target.name}'s"
        f" ({target.vocab_size:,}): a draft must share the target's tokenizer to be verified by token id"
    )


@dataclass(frozen=True)
class Round:
    """One round of speculative decoding at ``batch`` users: what it costs, beside plain decoding.

    ``baseline`` is the plain decode step t(B); ``verification`` the target's pass over
    B·(γ+1) tokens; ``draft_step_s`` one draft step t_d(B), taken γ times (for a head with a
    fusion layer, the mean of its γ steps, the first of which runs the fusion).
    """

    gamma: int
    batch: float
    baseline: Pass
    verification: Pass
    draft_step_s: float
    #: Where the draft's cost comes from: a draft model's id, or "given" for a fixed ratio.
    drafter: str
    #: Facts worth saying beside the figures (a vocabulary that differs, stated because a cost was given).
    notes: tuple[str, ...] = ()

    @property
    def draft_cost(self) -> float:
        """The draft's step over the target's: ``ĉ = t_d(B) / t(B)``."""
        return self.draft_step_s / self.baseline.seconds

    @property
    def seconds(self) -> float:
        """The round's time: ``t_verify(B) + γ * t_d(B)``."""
        return self.verification.seconds + self.gamma * self.draft_step_s

    def tokens_per_step(self, alpha: float) -> float:
        """``τ(α, γ)`` for this round's γ."""
        return tokens_per_step(alpha, self.gamma)

    def speedup(self, alpha: float) -> float:
        """Tokens/s with speculation over tokens/s without, at the same batch: ``τ * t(B) / round(B)``."""
        return self.tokens_per_step(alpha) * self.baseline.seconds / self.seconds

    def tokens_per_s_per_user(self, alpha: float) -> float:
        """Each user's tokens/s with speculation: ``τ / round(B)``."""
        return self.tokens_per_step(alpha) / self.seconds

    @property
    def baseline_tokens_per_s_per_user(self) -> float:
        """Each user's tokens/s without speculation: ``1 / t(B)``."""
        return 1.0 / self.baseline.seconds

    def alpha_for_speedup(self, speedup: float) -> float:
        """The acceptance rate at which this round gives ``speedup`` (bisection: S rises with α).

        A speedup outside what α from 0 to 1 can give is a SpecError naming the reachable range.
        """
        if isinstance(speedup, bool) or not isinstance(speedup, (int, float)) or not math.isfinite(speedup):
            raise SpecError(f"must be a number, got {shown(speedup)}", field="speedup")
        if speedup <= 0:
            raise SpecError(f"must be above 0, got {speedup:g}", field="speedup")
        limit = self.gamma + 1
        if speedup > limit:
            raise SpecError(
                f"{speedup:g}× is above γ+1 = {limit}, the most tokens a round of γ = {self.gamma} can yield",
                field="speedup",
                hint="raise --gamma, or check that the speedup is per user at one batch size",
            )
        lowest, highest = self.speedup(0.0), self.speedup(1.0)
        if speedup > highest:
            raise SpecError(
                f"{speedup:g}× is out of reach: with γ = {self.gamma} and a draft cost of {self.draft_cost:.3g},"
                f" even every draft token accepted gives {highest:.3g}×",
                field="speedup",
                hint="a lower draft cost or a larger γ reaches further",
            )
        if speedup < lowest:
            raise SpecError(
                f"{speedup:g}× is below what a round gives with nothing accepted ({lowest:.3g}×)",
                field="speedup",
                hint="a measured slowdown this deep includes costs the model leaves out",
            )
        return _bisect(self.speedup, speedup, 0.0, 1.0)


class Rounds:
    """Rounds of ``gamma`` draft steps and one verification for one deployment and drafter, at any
    batch: ``at(batch)`` is ``speculation_round`` at that batch.

    A curve over many batches (a chart, the break-even search) asks for dozens of rounds that
    differ only in the batch, so what does not depend on it is done once here: the checks, the
    resolved math precision, the workload with an empty cache, the draft's workload. Each
    batch's round is kept, so asking twice costs nothing (the break-even search's doubling
    meets the batches a chart has priced). One ``Rounds`` serves one question; it is not shared.

    Raises SpecError for a bad ``gamma`` or ``draft_cost``, for a draft model with another
    vocabulary than the target's when no ``draft_cost`` is given (with one, it is a note), and
    for a draft head made for another target, given a cost or not (``check_draft``).
    """

    def __init__(
        self,
        hardware: Hardware,
        workload: Workload,
        gamma: int,
        *,
        draft: ModelSpec | None = None,
        draft_cost: float | None = None,
    ) -> None:
        self.gamma = check_gamma(gamma)
        self.workload = workload
        self.notes: tuple[str, ...] = ()
        if draft is not None:
            self.notes = check_draft(workload.model, draft, draft_cost is not None, "its cost")
        if draft_cost is not None and (
            isinstance(draft_cost, bool) or not isinstance(draft_cost, (int, float)) or not 0 <= draft_cost <= 10
        ):
            raise SpecError(
                f"must be between 0 and 10, got {shown(draft_cost)}",
                field="draft_cost",
                hint="the draft's step over the target's: 0 for a free draft, about 0.1 for a model a tenth the size",
            )
        # Resolved once: every pass would otherwise resolve an "auto" math precision again.
        self.hardware = resolved(hardware, workload)
        self.draft_cost = draft_cost
        self.empty = _emptied(workload)
        #: The draft's own decode step, at the target's precisions and context (None: no draft model to time).
        self.drafting = (
            Workload(draft, workload.weight_precision, workload.kv_precision, context=workload.context)
            if draft is not None and draft_cost is None
            else None
        )
        #: A head's steps after the first, without its fusion layer (None: every step is alike).
        self.later_drafting = (
            replace(self.drafting, model=without_fusion(self.drafting.model))
            if self.drafting is not None and self.drafting.model.fusion_input_size
            else None
        )
        self.drafter = "given" if draft_cost is not None else draft.id if draft is not None else "free"
        self._rounds: dict[float, Round] = {}

    def at(self, batch: float | None = None) -> Round:
        """The round at ``batch`` users (``workload.batch`` by default)."""
        batch = self.workload.batch if batch is None else batch
        known = self._rounds.get(batch)
        if known is not None:
            return known
        if isinstance(batch, bool) or not isinstance(batch, (int, float)) or not 1 <= batch <= MAX_BREAK_EVEN_BATCH:
            raise SpecError(f"must be from 1 to {MAX_BREAK_EVEN_BATCH:,}, got {shown(batch)}", field="batch")
        hardware, workload = self.hardware, self.workload
        baseline = decode_pass(hardware, workload, batch)
        verification = _verification(hardware, workload, self.empty, batch, self.gamma + 1, baseline)
        if self.draft_cost is not None:
            draft_step_s = self.draft_cost * baseline.seconds
        elif self.drafting is not None:
            draft_step_s = decode_pass(hardware, self.drafting, batch).seconds
            if self.later_drafting is not None:
                later_s = decode_pass(hardware, self.later_drafting, batch).seconds
                draft_step_s = (draft_step_s + (self.gamma - 1) * later_s) / self.gamma
        else:
            draft_step_s = 0.0
        round_ = Round(self.gamma, batch, baseline, verification, draft_step_s, self.drafter, self.notes)
        self._rounds[batch] = round_
        return round_

    def break_even(self, alpha: float) -> float | None:
        """``break_even_batch`` for these rounds."""
        alpha = check_alpha(alpha)
        tokens = tokens_per_step(alpha, self.gamma)

        def gain(batch: float) -> float:
            """``τ t(B) - round(B)``: above 0 exactly where the speedup ``τ t(B) / round(B)`` is above 1,
            and piecewise linear in B on a dense model (each pass is the larger of two lines)."""
            round_ = self.at(batch)
            return tokens * round_.baseline.seconds - round_.seconds

        return gain_falls_to_zero(gain)


def gain_falls_to_zero(gain: Callable[[float], float]) -> float | None:
    """The batch at which a speculative round's ``gain(B)`` (``τ t(B) - round(B)``, above 0 while
    speculating pays) falls to 0: 1.0 if it never pays, None if it still pays at
    ``MAX_BREAK_EVEN_BATCH``. The bracket doubles from 1, then ``_falling_root`` narrows it."""
    if gain(1) <= 0:
        return 1.0
    low, high = 1.0, 2.0
    while gain(high) > 0:
        if high >= MAX_BREAK_EVEN_BATCH:
            return None
        low, high = high, min(2 * high, MAX_BREAK_EVEN_BATCH)
    # A ten-thousandth of the batch is far finer than any reader needs (the page shows whole users).
    return _falling_root(gain, low, high, tolerance=1e-4)


def _falling_root(falling: Callable[[float], float], low: float, high: float, tolerance: float) -> float:
    """Where ``falling`` crosses 0 between ``low`` (where it is above 0) and ``high`` (where it is
    not), to within ``tolerance * high``: the middle of the last bracket.

    Each step evaluates the secant's crossing (regula falsi, with the Illinois rule: when the
    secant moves the same end twice running, the other end's value is halved, so a curved
    function cannot pin that end), then a point half the tolerance past it, toward the root:
    when the secant landed that close, the two close the bracket. A round's gain is piecewise
    linear in the batch on a dense model, so once the bracket spans one piece the secant lands
    on the crossing: over the built-in deployments a search takes 2 to 4 evaluations past its
    two ends, 14 at most, where bisection takes about fourteen every time; the calculator
    searches on every keystroke.
    """
    f_low, f_high = falling(low), falling(high)
    nudge = tolerance * high / 2
    moved = 0  # which end the last secant point replaced: +1 low, -1 high
    for _ in range(_BISECTION_STEPS):
        if high - low <= tolerance * high:
            break
        middle = high - f_high * (high - low) / (f_high - f_low)
        if not low < middle < high:  # the ends' values rounded to one another
            middle = (low + high) / 2
        value = falling(middle)
        if value > 0:
            low, f_low, probe = middle, value, middle + nudge
            if moved == 1:
                f_high /= 2
            moved = 1
        else:
            high, f_high, probe = middle, value, middle - nudge
            if moved == -1:
                f_low /= 2
            moved = -1
        if low < probe < high and high - low > tolerance * high:
            value = falling(probe)
            if value > 0:
                low, f_low = probe, value
            else:
                high, f_high = probe, value
    return (low + high) / 2


def speculation_round(
    hardware: Hardware,
    workload: Workload,
    gamma: int,
    batch: float | None = None,
    *,
    draft: ModelSpec | None = None,
    draft_cost: float | None = None,
) -> Round:
    """A round of ``gamma`` draft steps and one verification, at ``batch`` users (``workload.batch``
    by default), with ``workload.context`` tokens cached per user (``Rounds(...).at(batch)``).

    The draft's step is ``draft_cost * t(B)`` when ``draft_cost`` is given, else the
    ``draft`` model's own decode step on the same GPUs, at the target's precisions and
    context; with neither, the draft is free (ĉ = 0), as prompt lookup nearly is. A draft
    model with another vocabulary is a SpecError, or, when ``draft_cost`` is given, a note; a
    draft head made for another target is a SpecError either way.
    """
    return Rounds(hardware, workload, gamma, draft=draft, draft_cost=draft_cost).at(batch)


# -- One round as a server runs it (the serving simulator's pieces) -----------------------


def verification_iteration(costs: IterationCosts, users: int, context: float, tokens_per_user: int) -> Pass:
    """A serving iteration that verifies ``tokens_per_user`` tokens for each of ``users`` decoding
    requests whose caches hold ``context`` tokens in all, on ``IterationCosts.iteration``'s
    accounting (the simulator's), with each request's cache read once, as in
    ``verification_pass``: the weights and layer math of ``users * tokens_per_user`` tokens, the
    cache of ``users``, and ``tokens_per_user`` queries' attention over it."""
    bare = costs.iteration(users * tokens_per_user, 0)
    if not context:
        return bare
    return _cache_read_once(bare, costs.iteration(users, context), costs.iteration(users, 0), tokens_per_user)


# -- How it moves with the batch and with γ -----------------------------------------


def break_even_batch(
    hardware: Hardware,
    workload: Workload,
    alpha: float,
    gamma: int,
    *,
    draft: ModelSpec | None = None,
    draft_cost: float | None = None,
) -> float | None:
    """The batch at which the speedup falls to 1, on a real batch axis; None if it never does.

    Speculation wins while verifying B·(γ+1) tokens costs little more than decoding B,
    that is while the pass stays memory-bound; once the math dominates, a round costs
    about γ+1 steps and yields τ < γ+1 tokens. The batch is found by doubling from 1
    until ``S(B) <= 1``, then by bisection between the last two batches. Returns 1.0
    when speculation does not pay even for one user, and None when the speedup stays
    above 1 up to ``MAX_BREAK_EVEN_BATCH`` users (a long context can keep the
    verification memory-bound: each user's cache is read once however many tokens it
    verifies).
    """
    alpha = check_alpha(alpha)
    return Rounds(hardware, workload, gamma, draft=draft, draft_cost=draft_cost).break_even(alpha)


def best_gamma(
    hardware: Hardware,
    workload: Workload,
    alpha: float,
    batch: float | None = None,
    *,
    draft: ModelSpec | None = None,
    draft_cost: float | None = None,
    gammas: range = range(1, 17),
) -> tuple[int, float]:
    """The γ among ``gammas`` with the highest speedup at this α and batch, and that speedup.

    A longer draft adds a token only when every earlier one was accepted (α^γ), while
    its cost grows by a draft step and γ+1 more tokens to verify, so the best γ
    rises with α and falls as the draft's cost or the batch grows.
    """
    alpha = check_alpha(alpha)
    best = None
    for gamma in gammas:
        round_ = speculation_round(hardware, workload, gamma, batch, draft=draft, draft_cost=draft_cost)
        speedup = round_.speedup(alpha)
        if best is None or speedup > best[1]:
            best = (gamma, speedup)
    if best is None:
        raise SpecError("needs at least one γ to try", field="gammas")
    return best


# -- One answer, as the command line reports it ---------------------------------------


@dataclass(frozen=True)
class Speculation:
    """Speculative decoding for one deployment: the round, the acceptance rate, the break-even batch."""

    hardware: Hardware
    workload: Workload
    round: Round
    alpha: float
    #: The speedup α was solved from, or None when α was given.
    measured_speedup: float | None
    break_even_batch: float | None

    @property
    def tokens_per_step(self) -> float:
        """``τ(α, γ)``."""
        return self.round.tokens_per_step(self.alpha)

    @property
    def speedup(self) -> float:
        """The batch-aware speedup ``τ * t(B) / round(B)``."""
        return self.round.speedup(self.alpha)

    def to_dict(self) -> dict[str, object]:
        """Every figure in base SI units, keys as ``roofline speculate --json`` prints them."""
        round_ = self.round
        return {
            "gpu": self.hardware.gpu.id,
            "gpus": self.hardware.count,
            "model": self.workload.model.id,
            "precision": self.workload.weight_precision,
            "batch": round_.batch,
            "context": self.workload.context,
            "gamma": round_.gamma,
            "alpha": self.alpha,
            "alpha_from": "given" if self.measured_speedup is None else "speedup",
            "measured_speedup": self.measured_speedup,
            "drafter": round_.drafter,
            "tokens_per_step": self.tokens_per_step,
            "speedup": self.speedup,
            "draft_cost": round_.draft_cost,
            "break_even_batch": self.break_even_batch,
            "tokens_per_s_per_user": round_.tokens_per_s_per_user(self.alpha),
            "baseline_tokens_per_s_per_user": round_.baseline_tokens_per_s_per_user,
            "round_s": round_.seconds,
            "verification_s": round_.verification.seconds,
            "verification_bound": round_.verification.bound,
            "draft_step_s": round_.draft_step_s,
            "baseline_step_s": round_.baseline.seconds,
            "notes": list(round_.notes),
        }


def speculate(
    hardware: Hardware,
    workload: Workload,
    gamma: int,
    *,
    alpha: float | None = None,
    speedup: float | None = None,
    draft: ModelSpec | None = None,
    draft_cost: float | None = None,
) -> Speculation:
    """Speculative decoding of ``workload`` (its batch and context) on ``hardware``: give the
    acceptance rate ``alpha``, or a measured ``speedup`` to solve it from (exactly one)."""
    if (alpha is None) == (speedup is None):
        raise SpecError("give the acceptance rate or a measured speedup, not both or neither", field="alpha")
    round_ = speculation_round(hardware, workload, gamma, draft=draft, draft_cost=draft_cost)
    alpha = check_alpha(alpha) if alpha is not None else round_.alpha_for_speedup(speedup)
    even = break_even_batch(hardware, workload, alpha, gamma, draft=draft, draft_cost=draft_cost)
    return Speculation(hardware, workload, round_, alpha, speedup, even)
