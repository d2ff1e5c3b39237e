"""The highest Poisson request rate that meets p99 latency targets: MLPerf Inference's Server scenario.

MLPerf's Server scenario sends requests as a Poisson process and reports the highest rate at which the
99th percentile of time to first token and of time per output token stay within the benchmark's targets.
``search_rate`` finds that rate for the seeded simulator:

1. A saturating run (every request at time 0) gives the capacity C, completed requests per second: above
   it a queue grows without end, so the search looks no higher. (The command line runs it without the
   warm-up, whose requests would otherwise be served but not counted.)
2. The lowest rate tried is ``C / LOW_DIVISOR``, where requests seldom meet. If the targets fail even
   there, no rate meets them (the work of one request alone is too slow) and the search stops with one
   line naming the target that failed and the fix.
3. The rate C itself is tried. If it meets both targets, C is the answer, flagged ``capped_at_capacity``:
   the targets do not bind over this many requests, though a longer run at C may build a queue (MLPerf
   asks for runs of at least ten minutes for that reason).
4. Otherwise bisection between the highest rate that met both and the lowest that failed, at their
   arithmetic middle, until ``tries`` runs have been made (the saturating run counts).

A rate meets the targets when ``ttft_p99_s <= ttft_slo`` and ``tpot_p99_s <= tpot_slo`` over the measured
requests (TPOT: each request's mean gap, as MLPerf computes it, ranked over requests). Every run uses the
same seed, so every rate sends the same requests with the same exponential gaps scaled by ``1 / rate``:
the runs differ only in the rate (common random numbers), and the search is deterministic. The answer is
a rate the last bisection step proved; the next rate tried above it failed, and the target that failed
there is the one that binds.

At the ceiling's costs the found rate is what this scheduler reaches with every iteration at its upper
bound; another scheduler may do better (see ``load_bounds``), so it is reported as depending on the
scheduler, as times under load are.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import formatting as fmt
from .errors import SpecError
from .serving import SimulationResult

#: Most and fewest runs one search may make (the saturating run included).
TRIES_RANGE = (3, 40)
DEFAULT_TRIES = 10
#: The lowest rate tried is the capacity divided by this.
LOW_DIVISOR = 100.0


@dataclass(frozen=True)
class Trial:
    """One run of the search: its rate (``math.inf`` for the saturating run) and p99 figures."""

    rate: float
    ttft_p99_s: float | None
    tpot_p99_s: float | None
    meets: bool
    #: The targets this run missed: a subset of ("ttft", "tpot").
    missed: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """One entry of ``rate_search.tried``: the rate (None for the saturating run) and its p99s."""
        return {
            "rate": None if math.isinf(self.rate) else self.rate,
            "ttft_p99_s": self.ttft_p99_s,
            "tpot_p99_s": self.tpot_p99_s,
            "meets": self.meets,
            "missed": list(self.missed),
        }


@dataclass(frozen=True)
class RateSearch:
    """What ``search_rate`` found: the rate, its run, and every run it made, in order."""

    rate: float
    result: SimulationResult
    capacity_requests_per_s: float
    trials: tuple[Trial, ...]
    #: The targets the lowest failing rate above the answer missed (empty: the answer is the capacity).
    binds: tuple[str, ...]
    ttft_slo_s: float
    tpot_slo_s: float

    def to_dict(self) -> dict[str, Any]:
        """What ``simulate --search-rate --json`` gives under ``rate_search``."""
        return {
            "rate_found": self.rate,
            "capacity_requests_per_s": self.capacity_requests_per_s,
            "ttft_p99_slo_s": self.ttft_slo_s,
            "tpot_p99_slo_s": self.tpot_slo_s,
            "binds": list(self.binds) or None,
            "capped_at_capacity": not self.binds,
            "runs": len(self.trials),
            "tried": [trial.to_dict() for trial in self.trials],
        }


def judge(rate: float, result: SimulationResult, ttft_slo_s: float, tpot_slo_s: float) -> Trial:
    """A run against the targets: a p99 that is missing (no request finished, or none with two tokens
    for TPOT) counts as met only for TPOT, whose targets one-token outputs cannot miss."""
    ttft, tpot = result.ttft_s.get(99), result.tpot_s.get(99)
    missed = []
    if ttft is None or ttft > ttft_slo_s:
        missed.append("ttft")
    if tpot is not None and tpot > tpot_slo_s:
        missed.append("tpot")
    return Trial(rate, ttft, tpot, not missed, tuple(missed))


def search_rate(
    run: Callable[[float], SimulationResult],
    ttft_slo_s: float,
    tpot_slo_s: float,
    tries: int = DEFAULT_TRIES,
    costs: str = "ceiling",
) -> RateSearch:
    """The highest rate ``run(rate)`` meets both p99 targets at, by the steps of the module docstring.
    ``run(math.inf)`` is the saturating run. ``costs`` names the costs in the error for targets no rate
    meets. Raises SpecError (field ``ttft_slo`` or ``tpot_slo``) when even the lowest rate misses."""
    if isinstance(tries, bool) or not isinstance(tries, int) or not TRIES_RANGE[0] <= tries <= TRIES_RANGE[1]:
        raise SpecError(
            f"must be a whole number from {TRIES_RANGE[0]} to {TRIES_RANGE[1]}, got {tries!r}",
            field="search_tries",
            hint="give how many runs the search may make, e.g. --search-tries 10",
        )
    saturated = run(math.inf)
    trials = [judge(math.inf, saturated, ttft_slo_s, tpot_slo_s)]
    capacity = saturated.throughput_requests_per_s
    if not capacity > 0:
        raise SpecError(
            "no request completed even with every request sent at once",
            field="search_rate",
            hint="every request is longer than the KV cache: use shorter requests or more GPUs",
        )
    low_rate = capacity / LOW_DIVISOR
    best_result = run(low_rate)
    low = judge(low_rate, best_result, ttft_slo_s, tpot_slo_s)
    trials.append(low)
    if not low.meets:
        raise _unmet(low, ttft_slo_s, tpot_slo_s, costs)
    best = low_rate
    high = judge(capacity, top := run(capacity), ttft_slo_s, tpot_slo_s)
    trials.append(high)
    if high.meets:
        return RateSearch(capacity, top, capacity, tuple(trials), (), ttft_slo_s, tpot_slo_s)
    failed, failed_trial = capacity, high
    while len(trials) < tries:
        middle = (best + failed) / 2
        result = run(middle)
        trial = judge(middle, result, ttft_slo_s, tpot_slo_s)
        trials.append(trial)
        if trial.meets:
            best, best_result = middle, result
        else:
            failed, failed_trial = middle, trial
    return RateSearch(best, best_result, capacity, tuple(trials), failed_trial.missed, ttft_slo_s, tpot_slo_s)


def _unmet(trial: Trial, ttft_slo_s: float, tpot_slo_s: float, costs: str) -> SpecError:
    """The one line for targets no rate meets: which p99 missed, by how much, and the way out."""
    parts = []
    if "ttft" in trial.missed:
        shown = "no request finished" if trial.ttft_p99_s is None else f"p99 TTFT {trial.ttft_p99_s:.4g} s"
        parts.append(f"{shown} > {ttft_slo_s:g} s")
    if "tpot" in trial.missed:
        parts.append(f"p99 TPOT {trial.tpot_p99_s:.4g} s > {tpot_slo_s:g} s")
    field = "ttft_slo" if "ttft" in trial.missed else "tpot_slo"
    return SpecError(
        f"cannot be met even at the lowest rate tried, {trial.rate:.4g} requests/s ({costs} costs):"
        f" {' and '.join(parts)}",
        field=field,
        hint="loosen the target, or shorten the prompts and outputs, or add GPUs (--gpus) to speed each request",
    )


def _rate(rate: float) -> str:
    return "inf" if math.isinf(rate) else f"{rate:,.3g}" if rate < 10 else f"{rate:,.1f}"


def _missed(binds: tuple[str, ...]) -> str:
    return " and ".join({"ttft": "p99 TTFT", "tpot": "p99 TPOT"}[name] for name in binds)


def rate_search_lines(searches: dict[str, RateSearch]) -> str:
    """The report's block for ``simulate --search-rate``: the ceiling's search (its run is the report
    above), every rate it tried, which target binds, and the expected costs' answer where searched."""
    if not searches:
        return ""
    search = searches["ceiling"]
    lines = [
        "",
        f"Rate search (MLPerf Server): the highest Poisson rate with p99 TTFT ≤ {fmt.duration(search.ttft_slo_s)}"
        f" and p99 TPOT ≤ {fmt.duration(search.tpot_slo_s)}, {len(search.trials)} runs, the same seed each",
    ]
    binds = (
        f"{_missed(search.binds)} binds"
        if search.binds
        else "neither target binds up to the capacity; more --requests show whether a queue builds there"
    )
    lines.append(f"  {'found':<17}  {_rate(search.rate)} requests/s ({binds}); the report above is its run")
    capacity = _rate(search.capacity_requests_per_s)
    lines.append(f"  {'capacity':<17}  {capacity} requests/s with every request sent at once")
    lines.append(f"  {'tried':<17}  {'rate/s':>9}  {'p99 TTFT':>10}  {'p99 TPOT':>10}  meets")
    for trial in search.trials:
        ttft = "none" if trial.ttft_p99_s is None else fmt.duration(trial.ttft_p99_s)
        tpot = "none" if trial.tpot_p99_s is None else fmt.duration(trial.tpot_p99_s)
        verdict = "yes" if trial.meets else f"no ({_missed(trial.missed)})"
        lines.append(f"  {'':<17}  {_rate(trial.rate):>9}  {ttft:>10}  {tpot:>10}  {verdict}")
    lines.append(
        f"  {'scheduler':<17}  depends on the scheduler: every iteration at the ceiling's costs under this"
        " run's scheduler, which another schedule can beat"
    )
    if "expected" in searches:
        other = searches["expected"]
        binds = f"{_missed(other.binds)} binds" if other.binds else "neither target binds"
        lines.append(
            f"  {'expected costs':<17}  {_rate(other.rate)} requests/s ({binds}; capacity"
            f" {_rate(other.capacity_requests_per_s)}/s, {len(other.trials)} runs)"
        )
    return "\n".join(lines) + "\n"
