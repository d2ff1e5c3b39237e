"""Data-parallel replicas and a warm-up window around ``serving.simulate``.

Replicas
    ``replicas = R`` serves the stream on R independent copies of the deployment (MLPerf's
    "TP2x4" is R = 4 copies of a two-GPU tensor-parallel group), each with its own GPUs and KV
    cache. The stream is drawn once, exactly as one replica draws it (gap, prompt, output per
    request, from ``random.Random(seed)``), and split **round-robin**: request i goes to replica
    ``i mod R``. In an open loop replica k gets the arrivals ``k, k + R, k + 2R, ...`` at their
    drawn times; in a closed loop the clients are split the same way (client j is pinned to
    replica ``j mod R``, so each replica has ``ceil`` or ``floor(N / R)`` clients) and replica k
    serves the requests ``k, k + R, ...`` in the order its clients send them. No replica sees
    another, so each is one ``serving`` run on its share.

    Totals are summed over the replicas: throughput = sum of every replica's measured output
    tokens / D, where D runs from time 0 (or the warm-up window's start) to the last measured
    finish anywhere; requests per second and goodput likewise; preemptions, recomputed tokens,
    swapped bytes and iterations are sums. Latency figures (TTFT, TPOT, latency, queue wait:
    means and nearest-rank percentiles) rank every request of every replica together, and ITL
    every gap of every replica. Over the whole run (time 0 to the last finish, T): GPU busy =
    sum of busy times / (R * T), the mean replica's share, and the mean batch = sum of the
    replicas' running-requests-seconds / T, the fleet's.

Warm-up
    ``warmup = W`` sends W requests before the measured ones and leaves them out of every
    figure, as AIPerf's ``--warmup-request-count`` does (the measured requests are the next
    ``requests``; W = 0, the default, measures every request, as before). The stream is the
    same draw, W + requests long; the warm-up requests are its first W, so under R replicas
    replica k's first ``ceil((W - k) / R)``. The measured window runs from the first measured
    request's send to the last measured finish, and the rates (throughput, goodput, requests
    in flight) are over it. ITL ranks only the gaps of measured requests: each replica counts
    them as it records every gap (``_Warm``), since a run's gaps are held as runs of iterations
    shared by every decoding request. GPU busy, the mean batch and the iteration, preemption and
    swap counts stay the whole run's, warm-up included (the report says so).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from .deployment import Split
from .errors import SpecError
from .performance import Hardware, Workload
from .serving import (
    MAX_REQUESTS,
    PERCENTILES,
    ServingConfig,
    SimulationResult,
    _clipped,
    _Gaps,
    _Run,
    blocks_for,
    draw_traffic,
    finished_run,
    prefix_counts,
    prefix_groups_drawn,
    record_run,
    request_figures,
    sent_times,
    simulate,
)

#: Most replicas one run may have (every MLPerf system and more; each replica is one run).
MAX_REPLICAS = 1024
#: The JSON's and report's word for how requests are split.
SPLIT_RULE = "round-robin"


def check_fleet(config: ServingConfig, replicas: int, warmup: int) -> None:
    """Refuse a fleet that cannot be served: one line naming the field and the fix."""
    if isinstance(replicas, bool) or not isinstance(replicas, int) or not 1 <= replicas <= MAX_REPLICAS:
        raise SpecError(
            f"must be a whole number from 1 to {MAX_REPLICAS:,}, got {replicas!r}",
            field="replicas",
            hint="give the number of independent copies of the deployment, e.g. --replicas 4",
        )
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise SpecError(
            f"must be a whole number of requests, 0 or more, got {warmup!r}",
            field="warmup",
            hint="give how many requests to send before the measured ones, e.g. --warmup 100 (0: none)",
        )
    if warmup + config.requests > MAX_REQUESTS:
        raise SpecError(
            f"the warm-up and the measured requests must total at most {MAX_REQUESTS:,},"
            f" got {warmup:,} + {config.requests:,}",
            field="warmup",
            hint="send fewer warm-up or measured requests",
        )
    if warmup + config.requests < replicas:
        raise SpecError(
            f"{replicas:,} replicas need at least one request each, got {warmup + config.requests:,} in all",
            field="replicas",
            hint="send at least as many requests as replicas, or use fewer replicas",
        )
    if config.concurrency is not None and config.concurrency < replicas:
        raise SpecError(
            f"{replicas:,} replicas need at least one client each, got {config.concurrency:,}",
            field="replicas",
            hint="raise --concurrency to at least the replica count, or use fewer replicas",
        )


@dataclass(frozen=True)
class FleetResult(SimulationResult):
    """A ``SimulationResult`` over the measured requests of every replica, with the whole run's facts.

    ``duration_s`` is the measured window (the rates use it); ``run_duration_s`` is time 0 to the
    last finish, over which ``busy_fraction`` and ``mean_batch`` are the whole run's."""

    replicas: int = 1
    warmup: int = 0
    window_start_s: float = 0.0
    run_duration_s: float = 0.0
    #: How requests reach the replicas, as the JSON's ``fleet.split`` says it.
    split: str = SPLIT_RULE

    @property
    def busy_fraction(self) -> float:
        """The mean replica's share of the whole run spent in iterations."""
        return self.busy_s / (self.replicas * self.run_duration_s) if self.run_duration_s > 0 else 0.0

    @property
    def mean_batch(self) -> float:
        """Requests running, summed over the replicas, time-weighted over the whole run."""
        return self.batch_seconds / self.run_duration_s if self.run_duration_s > 0 else 0.0

    def to_dict(self, *, trace: bool = False) -> dict[str, Any]:
        """``SimulationResult.to_dict`` plus ``fleet``: the replicas, the split rule and the warm-up window."""
        result = super().to_dict(trace=trace)
        result["fleet"] = fleet_facts(self)
        return result


def fleet_facts(result: SimulationResult) -> dict[str, Any]:
    """What the JSON's ``fleet`` holds: replicas and how requests are split, the warm-up left out,
    the measured window and the whole run's duration (a plain run: 1 replica, no warm-up)."""
    fleet = result if isinstance(result, FleetResult) else None
    return {
        "replicas": fleet.replicas if fleet else 1,
        "split": fleet.split if fleet else SPLIT_RULE,
        "warmup_requests": fleet.warmup if fleet else 0,
        "measured_requests": result.requests,
        "window_start_s": fleet.window_start_s if fleet else 0.0,
        "window_end_s": (fleet.window_start_s if fleet else 0.0) + result.duration_s,
        "run_duration_s": fleet.run_duration_s if fleet else result.duration_s,
    }


class _Share(_Run):
    """One replica's run over the requests the fleet gives it, not its own draw."""

    def __init__(self, costs: Any, config: ServingConfig, capacity: int, request_overhead_s: float, share: Any) -> None:
        super().__init__(costs, config, capacity, request_overhead_s)
        arrivals, prompts, outputs, self.warm, groups = share
        self.prompt, self.output = list(prompts), list(outputs)
        if self.prefix is not None:  # the fleet's draw of prefix groups, not this share's own
            self.group = list(groups)
        self.blocks = [blocks_for(p + o) for p, o in zip(self.prompt, self.output, strict=True)]
        if config.concurrency is None:  # open loop: the fleet's arrival times (a closed loop sets its own)
            self.arrival = array("d", (sent + request_overhead_s for sent in arrivals))
        self.measured = self.gaps


class _Warm(_Share):
    """A share whose first ``warm`` requests are warm-up: beside every gap it records, it counts
    the gaps of measured requests alone in ``measured`` (the same runs, fewer requests each)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.measured = _Gaps()
        self.warm_left = self.warm  # warm-up requests not yet finished

    def warm_among(self, indices: Any) -> int:
        return sum(index < self.warm for index in indices) if self.warm_left else 0

    def complete(self, index: int, held_tokens: int) -> None:
        if index < self.warm:
            self.warm_left -= 1
        super().complete(index, held_tokens)

    def record_decodes(self, pieces: list, start_s: float, steps: int, swapped_in: list[int]) -> None:
        # As _Run.record_decodes, for the measured decoders only (it pops last_token, so first).
        if self.base:
            measured = len(self.base) - self.warm_among(self.base)
            resumed = [self.last_token[index] for index in swapped_in if index >= self.warm]
            record_run(self.measured, pieces, start_s, steps, self.swap_s, measured - len(resumed), measured, resumed)
        super().record_decodes(pieces, start_s, steps, swapped_in)

    def prefilled(self, index: int, target: int, step: int) -> None:
        if self.generated[index] and index >= self.warm:  # a resumed request's gap spans its preemption
            self.measured.add(self.now - self.last_token[index], 0.0, 0, 1, 1)
        super().prefilled(index, target, step)

    def static_batch(self, members: list[int]) -> None:
        super().static_batch(members)
        # As _Run.static_batch's gaps, for the measured slots only: step i gives a token to every
        # slot whose request wants more than i + 1 tokens.
        longest_prompt = max(self.prompt[index] for index in members)
        steps = max(self.output[index] for index in members) - 1
        pieces = self.series(steps, len(members), len(members) * (longest_prompt + 1)) if steps else []
        own = sorted(self.output[index] - 1 for index in members if index >= self.warm)
        alive, done = len(own), 0
        for own_steps in own:
            for first, slope, low, high in _clipped(pieces, done, own_steps):
                self.measured.add(first, slope, low, high, alive)
            done = max(done, own_steps)
            alive -= 1


def simulate_fleet(
    hardware: Hardware,
    workload: Workload,
    config: ServingConfig,
    split: Split | None = None,
    *,
    replicas: int = 1,
    warmup: int = 0,
) -> SimulationResult:
    """``config.requests`` measured requests after ``warmup`` warm-up ones, on ``replicas``
    copies of the deployment (see the module docstring). One replica and no warm-up is
    ``serving.simulate`` itself, figure for figure."""
    check_fleet(config, replicas, warmup)
    if replicas == 1 and warmup == 0:
        return simulate(hardware, workload, config, split)
    total = warmup + config.requests
    sends, prompts, outputs = draw_traffic(config, total)
    groups = prefix_groups_drawn(config, total) if config.prefix_caching else None
    runs = []
    for k in range(replicas):
        mine = range(k, total, replicas)
        clients = None if config.concurrency is None else len(range(k, config.concurrency, replicas))
        share_config = replace(config, requests=len(mine), concurrency=clients, trace_requests=0)
        warm = len(range(k, warmup, replicas))
        share = (
            [sends[i] for i in mine],
            [prompts[i] for i in mine],
            [outputs[i] for i in mine],
            warm,
            [groups[i] for i in mine] if groups else None,
        )
        kind = _Warm if warm else _Share

        def factory(*args: Any, kind: Any = kind, share: Any = share) -> _Run:
            return kind(*args, share)

        runs.append(finished_run(hardware, workload, share_config, split, factory))
    return _combine(config, runs, replicas, warmup)


def run_totals(runs: Sequence[Any]) -> dict[str, float | int]:
    """What several instances' runs did together, as a result's fields: the GPU-busy seconds and
    the batch-seconds (exact sums, ``math.fsum``), the iterations, preemptions and recomputed tokens."""
    return {
        "busy_s": math.fsum(run.busy for run in runs),
        "iterations": sum(run.iterations for run in runs),
        "preemptions": sum(run.preemptions for run in runs),
        "recomputed_tokens": sum(run.recomputed_tokens for run in runs),
        "batch_seconds": math.fsum(run.batch_seconds for run in runs),
    }


def _combine(config: ServingConfig, runs: Sequence[Any], replicas: int, warmup: int) -> FleetResult:
    """The replicas' measured requests as one result, in the stream's order (request i is replica
    ``i mod R``'s number ``i // R``), and their measured gaps as one tally."""
    total = warmup + config.requests
    columns: dict[str, array] = {name: array("d", bytes(8 * total)) for name in ("sent", "admitted", "first", "finish")}
    output = [0] * total
    for k, run in enumerate(runs):
        sent = sent_times(run)
        for local, index in enumerate(range(k, total, replicas)):
            columns["sent"][index] = sent[local]
            columns["admitted"][index] = run.admitted[local]
            columns["first"][index] = run.first[local]
            columns["finish"][index] = run.finish[local]
            output[index] = run.output[local]
    measured = slice(warmup, total)
    figures = request_figures(
        config, *(columns[name][measured] for name in ("sent", "admitted", "first", "finish")), output[measured]
    )
    start = min(columns["sent"][measured]) if warmup else 0.0
    gaps = _Gaps.joined(run.measured for run in runs)
    run_duration = max((run.now for run in runs), default=0.0)
    run_duration = max([run_duration, *(f for f in columns["finish"] if not math.isnan(f))])
    figures["duration_s"] = max(0.0, figures["duration_s"] - start)
    return FleetResult(
        config=config,
        requests=config.requests,
        rejected=config.requests - figures["completed"],
        **run_totals(runs),
        kv_blocks=runs[0].capacity,
        trace=(),
        itl_s=gaps.percentiles() if gaps.count() else dict.fromkeys(PERCENTILES),
        itl_mean_s=gaps.mean(),
        swapped_bytes=math.fsum(run.swapped_bytes for run in runs),
        itl_count=gaps.count(),
        **prefix_counts(runs),
        replicas=replicas,
        warmup=warmup,
        window_start_s=start,
        run_duration_s=run_duration,
        **figures,
    )


def replicated(figures: dict[str, Any], replicas: int) -> dict[str, Any]:
    """``estimate --replicas N``: N independent copies of the estimated deployment, each serving its
    batch; no traffic passes between copies, so per-user figures stay and the totals are N times
    one copy's (the expected figure and its band too, where given)."""
    total = {
        "count": replicas,
        "gpus": replicas * figures["gpus"],
        "users": replicas * figures["batch"],
        "decode_tokens_per_s_total": replicas * figures["decode_tokens_per_s_total"],
    }
    expected, band = figures.get("expected"), (figures.get("band") or {}).get("throughput_tokens_per_s")
    if expected is not None and band is not None:
        total["expected_decode_tokens_per_s_total"] = replicas * expected["decode_tokens_per_s_total"]
        total["expected_band"] = [replicas * band[0], replicas * band[1]]
    return total


def replicas_lines(total: dict[str, Any] | None, width: int = 19) -> str:
    """The report's line for ``replicated``'s totals (nothing for one copy), its label ``width`` wide."""
    if total is None:
        return ""
    line = (
        f"  {'replicas':<{width}}  {total['count']:,} independent copies of the above: {total['users']:,} users on"
        f" {total['gpus']:,} GPUs, {total['decode_tokens_per_s_total']:,.0f} tokens/s decode in all"
    )
    if "expected_decode_tokens_per_s_total" in total:
        low, high = total["expected_band"]
        line += f" (expected {total['expected_decode_tokens_per_s_total']:,.0f}, band {low:,.0f} to {high:,.0f})"
    return line + "\n"
