"""Tree verification: what a round costs when the drafter proposes a tree of candidates.

EAGLE-2, Medusa and SGLang's EAGLE worker do not draft one chain of γ tokens: they grow a
tree. Each of ``depth`` draft steps expands the ``topk`` best candidates of every live branch;
the engine then keeps the ``verified`` most likely nodes (SGLang's ``--speculative-num-steps``,
``--speculative-eagle-topk`` and ``--speculative-num-draft-tokens``) and the target checks all
of them in one pass, each node attending only to its own ancestors (a tree attention mask).
The accepted path is the longest root-to-leaf run the target agrees with, plus its own token.

Symbols: B users, d draft depth, k branches kept per step, N tokens the target verifies per
user (the tree's nodes, the last real token included, as SGLang counts them; a chain of γ has
N = γ+1), τ the measured tokens per round, t(n) the decode pass of n tokens, B* the critical
batch (where a plain decode step turns compute-bound).

- The verification pass is a pass over ``B * N`` tokens, each user's cache read once:
  ``t_verify(B) = t(B·N)`` at an empty context. Its cost follows N, not the depth d: a wide
  tree of depth 3 costs more to verify than a chain of 7.
- Drafting: d steps of the drafter; the first at B tokens, each later one at ``B * k``
  (every kept branch is extended): ``drafting(B) = t_d(B) + (d - 1) * t_d(B·k)``.
- Speedup ``S(B) = τ * t(B) / (t_verify(B) + drafting(B))``; break-even where S = 1.
- Past the critical batch a pass costs in proportion to its tokens, so a free draft breaks
  even near ``B_even ≈ τ / N * B*``: the break-even batch scales with 1 / N, and a tree that
  buys a higher τ with many more verified tokens gives the gain back sooner as load rises.

τ is an input here, not a formula: a tree's accepted length depends on how the drafter's
candidates overlap the target's choices, which only a measurement gives.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .errors import SpecError, shown
from .performance import Hardware, Pass, Workload, decode_pass, resolved
from .specs import ModelSpec
from .speculative import MAX_BREAK_EVEN_BATCH, _emptied, _verification, check_draft, gain_falls_to_zero, without_fusion

#: Largest tree the package prices: SGLang's own examples verify up to 64 tokens per request.
MAX_VERIFIED = 1024


@dataclass(frozen=True)
class TreeShape:
    """A draft tree: ``depth`` draft steps, ``topk`` branches kept per step, ``verified`` tokens
    checked per user (the root, the last real token, included: a chain of γ is
    ``TreeShape(γ, 1, γ + 1)``)."""

    depth: int
    topk: int
    verified: int

    def __post_init__(self) -> None:
        for field in ("depth", "topk", "verified"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_VERIFIED:
                raise SpecError(f"must be a whole number from 1 to {MAX_VERIFIED}, got {shown(value)}", field=field)
        # The tree holds at most the root plus every node the steps grew: 1 + k + k² … capped by k per step.
        most = 1 + self.topk + (self.depth - 1) * self.topk * self.topk
        if self.verified > most:
            raise SpecError(
                f"{self.verified} tokens cannot come from {self.depth} steps of top-{self.topk}: at most {most}",
                field="verified",
                hint="lower the tokens verified, or raise the depth or the branching",
            )

    @property
    def is_chain(self) -> bool:
        """One candidate per step: the chain of ``depth`` guesses a plain draft model proposes."""
        return self.topk == 1 and self.verified == self.depth + 1

    @property
    def most_tokens(self) -> int:
        """The most tokens one round can yield: every step's guess on one path accepted, plus the target's."""
        return self.depth + 1


@dataclass(frozen=True)
class TreeRound:
    """One round with a draft tree at ``batch`` users: the plain step, the verification of
    ``batch * shape.verified`` tokens and the drafting, in seconds."""

    shape: TreeShape
    batch: float
    baseline: Pass
    verification: Pass
    drafting_s: float

    @property
    def seconds(self) -> float:
        """``t_verify(B) + drafting(B)``."""
        return self.verification.seconds + self.drafting_s

    def speedup(self, tau: float) -> float:
        """``τ * t(B) / round(B)`` for a measured ``tau`` (tokens per round)."""
        return _checked_tau(tau, self.shape) * self.baseline.seconds / self.seconds


def _checked_tau(tau: object, shape: TreeShape) -> float:
    """``tau`` if a round of ``shape`` can yield it on average (1 to depth + 1); else a SpecError."""
    if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not 1 <= tau <= shape.most_tokens:
        raise SpecError(
            f"must be between 1 and depth + 1 = {shape.most_tokens}, got {shown(tau)}",
            field="tokens_per_step",
            hint="a round yields its target's own token and at most one accepted guess per draft step",
        )
    return float(tau)


class TreeRounds:
    """Rounds with one tree shape and drafter for one deployment, at any batch (``at``)."""

    def __init__(
        self, hardware: Hardware, workload: Workload, shape: TreeShape, *, draft: ModelSpec | None = None
    ) -> None:
        if draft is not None:
            check_draft(workload.model, draft, False, "its cost")
        self.hardware = resolved(hardware, workload)
        self.workload = workload
        self.shape = shape
        self.empty = _emptied(workload)
        self.drafting = (
            Workload(draft, workload.weight_precision, workload.kv_precision, context=workload.context)
            if draft is not None
            else None
        )
        # A head's later steps skip its fusion layer (speculative.Rounds does the same for a chain).
        self.later = (
            replace(self.drafting, model=without_fusion(self.drafting.model))
            if self.drafting is not None and self.drafting.model.fusion_input_size
            else self.drafting
        )

    def at(self, batch: float) -> TreeRound:
        """The round at ``batch`` users."""
        if isinstance(batch, bool) or not isinstance(batch, (int, float)) or not 1 <= batch <= MAX_BREAK_EVEN_BATCH:
            raise SpecError(f"must be from 1 to {MAX_BREAK_EVEN_BATCH:,}, got {shown(batch)}", field="batch")
        baseline = decode_pass(self.hardware, self.workload, batch)
        verification = _verification(self.hardware, self.workload, self.empty, batch, self.shape.verified, baseline)
        drafting = 0.0
        if self.drafting is not None and self.later is not None:
            drafting = decode_pass(self.hardware, self.drafting, batch).seconds
            drafting += (self.shape.depth - 1) * decode_pass(self.hardware, self.later, batch * self.shape.topk).seconds
        return TreeRound(self.shape, batch, baseline, verification, drafting)

    def break_even(self, tau: float) -> float | None:
        """The batch where the speedup at ``tau`` falls to 1 (1.0 if it never pays, None past the range)."""
        tau = _checked_tau(tau, self.shape)

        def gain(batch: float) -> float:
            round_ = self.at(batch)
            return tau * round_.baseline.seconds - round_.seconds

        return gain_falls_to_zero(gain)


def tree_break_even(
    hardware: Hardware, workload: Workload, shape: TreeShape, tau: float, *, draft: ModelSpec | None = None
) -> float | None:
    """``TreeRounds(...).break_even(tau)``: the batch at which a round of ``shape`` yielding ``tau``
    tokens stops paying."""
    return TreeRounds(hardware, workload, shape, draft=draft).break_even(tau)
