"""Disaggregated serving in the serving simulator: a prefill pool, a decode pool, the KV transfer.

``simulate_disaggregated(hardware, workload, config, pools, link="auto")`` serves the stream
``serving`` would draw (the same arrivals and lengths, ``fleet``'s draw) on ``pools.prefill``
prefill instances and ``pools.decode`` decode instances, each ``hardware`` (``--gpus`` GPUs
splitting every layer). Nothing new is scheduled here: each instance is one ``serving._Run``, the
scheduler and cost model of every other run, fed its share of the requests.

Prefill pool
    Request i goes to prefill instance ``i mod P`` (round-robin, as ``fleet`` splits replicas),
    which runs it as a request with one output token: its prompt is prefilled, batched and queued
    like any other prefill under ``config.policy``, and that iteration's end is the request's first
    token (TTFT counts from the send, as everywhere). Its KV blocks are freed then.
KV transfer
    The prompt's cache, ``P * KV bytes per token``, then crosses ``link`` (``disagg.kv_transfer``:
    ``latency + bytes / (G * link bytes/s * link efficiency)``, each of the instance's G GPUs sending
    its shard over its own link). ``auto`` takes the scale-up link (NVLink) when every GPU of both
    pools fits one scale-up domain, else the scale-out network (an InfiniBand or RoCE NIC per GPU).
    The transfer occupies neither pool's GPUs, so other requests compute while one request's cache
    moves (as TensorRT-LLM overlaps "KV cache transmission with computation for multiple independent
    requests", its disaggregated-serving blog, "Overlap Optimization"); it is not overlapped with its
    own prefill layer by layer (the request waits for all of it), and nothing else slows it (no
    contention between transfers).
Decode pool
    The requests reach the decode pool when their transfer ends, and are dealt round-robin in that
    order to the D decode instances. Each joins its instance's batch as a decoding request holding
    its P prompt tokens (``_Run``'s path for a request swapped back in, with no copy charged: the
    transfer is), once its blocks are free, and decodes its other ``output - 1`` tokens there.
    Its first inter-token gap runs from its first token to its second, so it holds the transfer
    and the wait for a decode slot. A one-token output ends at the prefill and never moves.

``max_rate_within_slo(hardware, workload, config, pools=None, attainment=0.9)`` is DistServe's goodput
of a deployment: the highest Poisson rate at which at least ``attainment`` of the completed requests
meet both ``config.ttft_slo_s`` and ``config.tpot_slo_s`` ("maximum request rate per second when at
least 90% of requests has both TTFT < 200ms and TPOT < 50ms", the DistServe blog's definition),
found by bisection on a log scale between ``low`` and ``high`` (``steps`` halvings of the ratio), for
the two pools or, with ``pools=None``, one colocated instance (or ``replicas`` of it).

Metrics: TTFT, TPOT, latency and goodput over every request as ``serving`` defines them; ITL over the
decode pool's gaps. The JSON adds ``kv_transfer_s_mean`` and ``disaggregation``: the pools (instances,
GPUs, busy share, mean batch; TTFT for the prefill pool, ITL and TPOT for the decode pool), the link,
the transfer's mean and largest time and mean bytes, and goodput per GPU. Closed loops, static
batches, swapping, prefix caching, replicas, warm-up and pipeline splits are refused in one line.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field, replace
from typing import Any

from .disagg import LINKS, link_bytes_per_s, link_name
from .errors import SpecError, shown
from .fleet import FleetResult, _Share, run_totals, simulate_fleet
from .parsing import parse_whole
from .performance import Hardware, Workload
from .serving import (
    PERCENTILES,
    Lengths,
    ServingConfig,
    _Gaps,
    _Run,
    blocks_for,
    draw_traffic,
    finished_run,
    request_figures,
    sent_times,
)

#: ``--kv-link``'s choices: the links of ``disagg.LINKS``, or auto.
KV_LINK_CHOICES = ("auto", *LINKS)


@dataclass(frozen=True)
class Pools:
    """``prefill`` prefill instances and ``decode`` decode instances (``--disaggregate P:D``)."""

    prefill: int
    decode: int

    def __post_init__(self) -> None:
        for name, count in (("P", self.prefill), ("D", self.decode)):
            if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_INSTANCES:
                raise SpecError(
                    f"{name} must be a whole number from 1 to {MAX_INSTANCES:,}, got {self.label}",
                    field="disaggregate",
                    hint="write P:D, prefill instances : decode instances, both at least 1, e.g. 2:1",
                )

    @property
    def label(self) -> str:
        """``"P:D"``."""
        return f"{self.prefill}:{self.decode}"

    @property
    def instances(self) -> int:
        """Instances in both pools: ``P + D``."""
        return self.prefill + self.decode


#: Most instances in one pool.
MAX_INSTANCES = 1024


def parse_pools(text: str) -> Pools:
    """``"P:D"`` as Pools; SpecError naming ``disaggregate`` and the fix otherwise."""
    parts = str(text).split(":")
    if len(parts) != 2:
        raise SpecError(
            f"must be P:D, got {shown(text)}",
            field="disaggregate",
            hint="write prefill instances : decode instances, e.g. 2:1",
        )
    try:
        prefill, decode = (parse_whole(part, (-MAX_INSTANCES, 10 * MAX_INSTANCES)) for part in parts)
    except SpecError as error:
        raise SpecError(error.message, field="disaggregate", hint="write P:D with whole numbers, e.g. 2:1") from None
    return Pools(prefill, decode)


def kv_link(hardware: Hardware, pools: Pools, link: str = "auto") -> str:
    """The link the KV cache crosses: ``link``, or for ``auto`` the scale-up link when every GPU of
    both pools fits one scale-up domain, else the scale-out network."""
    if link != "auto":
        link_bytes_per_s(hardware.gpu, link)  # refuses a link the spec lacks
        return link
    domain = hardware.gpu.interconnect.domain_gpus if hardware.gpu.interconnect else 1
    return "nvlink" if pools.instances * hardware.count <= domain else "network"


def check_disaggregated(config: ServingConfig) -> None:
    """Refuse what the two pools do not simulate, one line each naming the fix."""
    refusals = (
        (config.concurrency is not None, "concurrency", "a closed loop", "use --rate"),
        (config.policy == "static", "policy", "static batches", "use --policy continuous or chunked"),
        (config.preemption == "swap", "preemption", "swapping", "use --preemption recompute"),
        (config.prefix_caching, "prefix_tokens", "prefix caching", "leave out the prefix options"),
    )
    for refused, name, what, fix in refusals:
        if refused:
            raise SpecError(f"{what} is not simulated with --disaggregate yet", field=name, hint=fix)


class _DecodeShare(_Run):
    """One decode instance: its requests arrive already prefilled, with their first token."""

    def __init__(self, costs: Any, config: ServingConfig, capacity: int, request_overhead_s: float, share: Any):
        super().__init__(costs, config, capacity, request_overhead_s)
        arrivals, prompts, outputs, firsts = share
        self.overhead = 0.0  # the arrivals are the transfers' ends, the times the prefill pool's
        self.arrival = array("d", arrivals)
        self.prompt, self.output = list(prompts), list(outputs)
        self.blocks = [blocks_for(p + o) for p, o in zip(self.prompt, self.output, strict=True)]
        for index, (prompt, first) in enumerate(zip(prompts, firsts, strict=True)):
            self.generated[index] = 1
            self.first[index] = first
            self.last_token[index] = first
            self.resume[index] = ("decode", prompt, prompt)  # joins as a decoder holding its prompt
        self.measured = self.gaps

    def copy_blocks(self, tokens: int) -> None:
        """The cache arrives over the KV link, already timed: nothing is copied over the host link."""


#: How requests reach the instances of a disaggregated run (its JSON's ``fleet.split``): not one
#: replica each, as ``fleet``'s round-robin over copies would read, but both pools in turn.
POOL_SPLIT = (
    "prefill then decode: request i to prefill instance i mod P, then, once its KV cache has crossed,"
    " round-robin to the D decode instances in the order the transfers end (replicas counts both pools' instances)"
)


@dataclass(frozen=True)
class DisaggregatedResult(FleetResult):
    """A run on a prefill pool and a decode pool: ``FleetResult``'s figures over every request
    (``replicas`` counts the instances of both pools) and the pools' own in ``disaggregation``."""

    disaggregation: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, *, trace: bool = False) -> dict[str, Any]:
        """``FleetResult.to_dict`` plus ``kv_transfer_s_mean`` and ``disaggregation``."""
        result = super().to_dict(trace=trace)
        pools = dict(self.disaggregation)
        gpus = pools["gpus"]
        pools["goodput_requests_per_s_per_gpu"] = self.goodput_requests_per_s / gpus
        pools["throughput_tokens_per_s_per_gpu"] = self.throughput_tokens_per_s / gpus
        result["kv_transfer_s_mean"] = pools["kv_transfer_s_mean"]
        result["disaggregation"] = pools
        return result


def simulate_disaggregated(
    hardware: Hardware, workload: Workload, config: ServingConfig, pools: Pools, link: str = "auto"
) -> DisaggregatedResult:
    """Serve ``config.requests`` requests on the two pools (module docstring)."""
    if not isinstance(pools, Pools):
        raise SpecError("must be Pools (see parse_pools)", field="disaggregate")
    check_disaggregated(config)
    link = kv_link(hardware, pools, link)
    total = config.requests
    sends, prompts, outputs = draw_traffic(config, total)
    # The prefill pool: P runs of one-token requests, split round-robin.
    prefill_runs = []
    for k in range(pools.prefill):
        mine = range(k, total, pools.prefill)
        share_config = replace(config, requests=len(mine), output=Lengths(1, 1), trace_requests=0)
        share = ([sends[i] for i in mine], [prompts[i] for i in mine], [1] * len(mine), 0, None)
        prefill_runs.append(finished_run(hardware, workload, share_config, None, _factory(_Share, share)))
    columns = {name: array("d", [math.nan]) * total for name in ("sent", "admitted", "first", "finish")}
    for k, run in enumerate(prefill_runs):
        sent = sent_times(run)
        for local, index in enumerate(range(k, total, pools.prefill)):
            columns["sent"][index] = sent[local]
            columns["admitted"][index] = run.admitted[local]
            columns["first"][index] = run.first[local]
            if outputs[index] == 1:
                columns["finish"][index] = run.finish[local]
    # The transfer: each prompt's cache over the link, spread over the instance's GPUs.
    per_gpu = link_bytes_per_s(hardware.gpu, link) * hardware.costs.link_efficiency
    bytes_per_token = workload.kv_bytes_per_token
    moving = [i for i in range(total) if outputs[i] > 1 and not math.isnan(columns["first"][i])]
    transfer = {i: prompts[i] * bytes_per_token / (hardware.count * per_gpu) for i in moving}
    moving.sort(key=lambda i: (columns["first"][i] + transfer[i], i))
    # The decode pool: D runs of requests that arrive prefilled, dealt round-robin as they arrive.
    decode_runs, dealt = [], []
    for k in range(pools.decode):
        mine = moving[k :: pools.decode]
        dealt.append(mine)
        if not mine:
            continue
        share_config = replace(config, requests=len(mine), trace_requests=0)
        share = (
            [columns["first"][i] + transfer[i] for i in mine],
            [prompts[i] for i in mine],
            [outputs[i] for i in mine],
            [columns["first"][i] for i in mine],
        )
        run = finished_run(hardware, workload, share_config, None, _factory(_DecodeShare, share))
        decode_runs.append(run)
        for local, index in enumerate(mine):
            columns["finish"][index] = run.finish[local]
    return _result(config, hardware, pools, link, per_gpu, prefill_runs, decode_runs, columns, outputs, transfer)


def _factory(kind: Any, share: Any) -> Any:
    def build(*args: Any) -> _Run:
        return kind(*args, share)

    return build


def _pool_use(runs: list[_Run], duration: float) -> dict[str, float]:
    """A pool's busy share (its mean instance's) and mean batch over the run."""
    count = len(runs)
    return {
        "busy_fraction": math.fsum(run.busy for run in runs) / (count * duration) if count and duration else 0.0,
        "mean_batch": math.fsum(run.batch_seconds for run in runs) / duration if duration else 0.0,
        "iterations": sum(run.iterations for run in runs),
    }


def _result(
    config: ServingConfig,
    hardware: Hardware,
    pools: Pools,
    link: str,
    per_gpu: float,
    prefill_runs: list[_Run],
    decode_runs: list[_Run],
    columns: dict[str, array],
    outputs: list[int],
    transfer: dict[int, float],
) -> DisaggregatedResult:
    figures = request_figures(
        config, columns["sent"], columns["admitted"], columns["first"], columns["finish"], outputs
    )
    gaps = _Gaps.joined(run.gaps for run in decode_runs)
    runs = [*prefill_runs, *decode_runs]
    run_duration = max([0.0, *(run.now for run in runs), *(f for f in columns["finish"] if not math.isnan(f))])
    itl = gaps.percentiles() if gaps.count() else dict.fromkeys(PERCENTILES)
    times = list(transfer.values())
    moved_bytes = [seconds * hardware.count * per_gpu for seconds in times]
    decode_waits = [
        run.admitted[local] - run.arrival[local]
        for run in decode_runs
        for local in range(len(run.prompt))
        if not math.isnan(run.admitted[local])
    ]
    disaggregation = {
        "pools": pools.label,
        "gpus_per_instance": hardware.count,
        "gpus": pools.instances * hardware.count,
        "link": link,
        "link_name": link_name(hardware.gpu, link),
        "link_bytes_per_s": hardware.count * per_gpu,
        "kv_transfers": len(times),
        "kv_transfer_s_mean": math.fsum(times) / len(times) if times else None,
        "kv_transfer_s_max": max(times, default=None),
        "kv_transfer_bytes_mean": math.fsum(moved_bytes) / len(moved_bytes) if moved_bytes else None,
        "prefill_pool": {
            "instances": pools.prefill,
            "gpus": pools.prefill * hardware.count,
            "ttft_mean_s": figures["ttft_mean_s"],
            **{f"ttft_p{p}_s": figures["ttft_s"][p] for p in PERCENTILES},
            **_pool_use(prefill_runs, run_duration),
        },
        "decode_pool": {
            "instances": pools.decode,
            "gpus": pools.decode * hardware.count,
            "itl_mean_s": gaps.mean(),
            **{f"itl_p{p}_s": itl[p] for p in PERCENTILES},
            "tpot_mean_s": figures["tpot_mean_s"],
            **{f"tpot_p{p}_s": figures["tpot_s"][p] for p in PERCENTILES},
            "queue_wait_mean_s": math.fsum(decode_waits) / len(decode_waits) if decode_waits else None,
            "preemptions": sum(run.preemptions for run in decode_runs),
            **_pool_use(decode_runs, run_duration),
        },
    }
    return DisaggregatedResult(
        config=config,
        requests=config.requests,
        rejected=config.requests - figures["completed"],
        **run_totals(runs),
        kv_blocks=prefill_runs[0].capacity,
        trace=(),
        itl_s=itl,
        itl_mean_s=gaps.mean(),
        swapped_bytes=0.0,
        itl_count=gaps.count(),
        replicas=pools.instances,
        split=POOL_SPLIT,
        warmup=0,
        window_start_s=0.0,
        run_duration_s=run_duration,
        disaggregation=disaggregation,
        **figures,
    )


def max_rate_within_slo(
    hardware: Hardware,
    workload: Workload,
    config: ServingConfig,
    pools: Pools | None = None,
    *,
    replicas: int = 1,
    attainment: float = 0.9,
    low: float = 0.1,
    high: float = 1000.0,
    steps: int = 14,
) -> float:
    """The highest rate (requests/s, whole deployment) at which ``attainment`` of the requests meet
    both SLOs, between ``low`` and ``high`` (module docstring); ``low`` when even that misses."""
    if not 0 < attainment <= 1:
        raise SpecError(f"must be above 0 and at most 1, got {attainment!r}", field="attainment")
    if not 0 < low < high:
        raise SpecError(f"must satisfy 0 < low < high, got {low!r} and {high!r}", field="rate")
    for _ in range(steps):
        rate = math.sqrt(low * high)
        trial = replace(config, rate=rate, concurrency=None)
        if pools is None:
            run = simulate_fleet(hardware, workload, trial, replicas=replicas)
        else:
            run = simulate_disaggregated(hardware, workload, trial, pools)
        met = run.slo_attainment is not None and run.slo_attainment >= attainment
        low, high = (rate, high) if met else (low, rate)
    return low
