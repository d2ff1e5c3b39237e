"""Acceptance under sampling: why a draft token is accepted with probability 1 − TV(p, q).

Speculative sampling (Leviathan, Kalman and Matias, ICML 2023, §2.3; Chen et al. 2023) keeps
the target's distribution exactly. At one position the draft samples x from its distribution
q; the target, whose distribution there is p, keeps x with probability ``min(1, p(x) / q(x))``;
on a rejection it samples instead from the residual ``r = max(0, p − q) / Σ max(0, p − q)``.

- Acceptance: ``α = Σ_x q(x) min(1, p(x)/q(x)) = Σ_x min(p(x), q(x)) = 1 − TV(p, q)``, with
  ``TV(p, q) = ½ Σ_x |p(x) − q(x)|`` the total-variation distance.
- Losslessness: the token emitted is x with probability ``min(p(x), q(x)) + (1 − α) r(x)``,
  and ``(1 − α) r(x) = max(0, p(x) − q(x))``, so the sum is ``p(x)``: the target's own
  distribution, whatever q is (``output_distribution`` computes it).
- Temperature T: each model samples from ``softmax(logits / T)``. Greedy decoding (T → 0)
  keeps only each model's top token, so α is 1 where the two agree on it and 0 where they do
  not. As T rises, both distributions spread over more tokens and their differences in the
  tail count too, so where the top tokens agree α falls with T.

These are the formulas, on distributions the caller gives; a chapter's worked example picks
a small vocabulary to show them. No engine's numbers are implied.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .errors import SpecError, shown

#: Tolerance on a distribution's sum: a probability vector typed to a few digits still passes.
_SUM_TOLERANCE = 1e-6


def _distribution(values: Sequence[float], field: str) -> list[float]:
    """``values`` as a list of probabilities summing to 1; a SpecError naming ``field`` otherwise."""
    probabilities = [float(v) for v in values] if isinstance(values, (list, tuple)) else None
    if not probabilities or any(not math.isfinite(p) or p < 0 for p in probabilities):
        raise SpecError(f"must be a non-empty list of probabilities, got {shown(values)}", field=field)
    if abs(math.fsum(probabilities) - 1) > _SUM_TOLERANCE:
        raise SpecError(f"must sum to 1, sums to {math.fsum(probabilities):.6g}", field=field)
    return probabilities


def softmax(logits: Sequence[float], temperature: float) -> list[float]:
    """``softmax(logits / T)``; at ``temperature`` 0 all the mass on the largest logit (greedy),
    split evenly among ties."""
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature >= 0:
        raise SpecError(f"must be 0 or more, got {shown(temperature)}", field="temperature")
    values = [float(v) for v in logits]
    if not values or any(not math.isfinite(v) for v in values):
        raise SpecError(f"must be a non-empty list of finite numbers, got {shown(logits)}", field="logits")
    top = max(values)
    if temperature == 0:
        winners = [v == top for v in values]
        return [1 / sum(winners) if w else 0.0 for w in winners]
    weights = [math.exp((v - top) / temperature) for v in values]  # shifted by the max: no overflow
    total = math.fsum(weights)
    return [w / total for w in weights]


def total_variation(p: Sequence[float], q: Sequence[float]) -> float:
    """``TV(p, q) = ½ Σ |p(x) − q(x)|``, over one vocabulary."""
    p, q = _distribution(p, "p"), _distribution(q, "q")
    if len(p) != len(q):
        raise SpecError(f"has {len(q)} tokens, p has {len(p)}", field="q", hint="both must cover one vocabulary")
    return 0.5 * math.fsum(abs(a - b) for a, b in zip(p, q, strict=True))


def acceptance_rate(p: Sequence[float], q: Sequence[float]) -> float:
    """``α = Σ_x q(x) min(1, p(x)/q(x))``, the chance the target keeps the draft's token: equal to
    ``Σ min(p, q)`` and to ``1 − TV(p, q)`` (the sum is what is computed, from its definition)."""
    p, q = _distribution(p, "p"), _distribution(q, "q")
    total_variation(p, q)  # the same vocabulary, or a clear error
    return math.fsum(b * min(1.0, a / b) for a, b in zip(p, q, strict=True) if b > 0)


def output_distribution(p: Sequence[float], q: Sequence[float]) -> list[float]:
    """The distribution of the token one position emits under speculative sampling:
    ``q(x) min(1, p(x)/q(x))`` (accepted) plus ``(1 − α) r(x)`` (rejected, then drawn from the
    residual ``r``). It equals ``p``: the proof of losslessness, computed."""
    p, q = _distribution(p, "p"), _distribution(q, "q")
    alpha = acceptance_rate(p, q)
    excess = [max(0.0, a - b) for a, b in zip(p, q, strict=True)]
    mass = math.fsum(excess)
    residual = [e / mass for e in excess] if mass > 0 else [0.0] * len(p)
    return [
        b * min(1.0, a / b) + (1 - alpha) * r if b > 0 else (1 - alpha) * r
        for a, b, r in zip(p, q, residual, strict=True)
    ]


def acceptance_at_temperature(
    target_logits: Sequence[float], draft_logits: Sequence[float], temperature: float
) -> float:
    """α when both models sample at ``temperature`` from their logits over one vocabulary."""
    return acceptance_rate(softmax(target_logits, temperature), softmax(draft_logits, temperature))
