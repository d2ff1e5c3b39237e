"""Readable, aligned text reports: one estimate (``roofline estimate``), one simulation
(``roofline simulate``, with its speculation when it speculates) and one speculative-decoding
answer (``roofline speculate``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from . import formatting as fmt
from .calibration import Calibration
from .deployment import Deployment, Split
from .estimate import Estimate
from .fit import memory_shortfall
from .fleet import fleet_facts
from .harness import ENGINES, HARNESSES, SERIAL_CONTEXT_HARNESSES
from .memorykinds import BUDGET, NAMEPLATE, POOL, USABLE, labelled
from .performance import CostModel, Hardware, Workload, dequantizes, memory_use, resolved
from .serving import BLOCK_TOKENS, SimulationResult
from .specserving import SpeculativeSimulation
from .speculative import Speculation


def _rows(estimate: Estimate) -> list[tuple[str, str]]:
    workload, memory = estimate.workload, estimate.memory
    decode, prefill = estimate.decode, estimate.prefill
    shortfall = memory_shortfall(estimate)
    if memory.max_batch is None:
        reason = "nothing cached at context 0" if workload.context == 0 else "every cached token is shared"
        most_users = f"no limit ({reason})"
    elif memory.weights_bytes + memory.shared_bytes > memory.usable_bytes:
        alone = "the weights and the shared prefix" if workload.shared_prefix else "the weights"
        most_users = f"none: {alone} alone do not fit"
    elif memory.max_batch == 0:
        most_users = f"none: one user's KV cache at {workload.context:,} tokens does not fit"
    else:
        most_users = f"{memory.max_batch:,} at {workload.context:,} tokens of context"
    shared = []
    if workload.shared_prefix:
        shared = [
            (
                "shared prefix",
                f"{workload.shared_prefix:,} tokens, {fmt.bytes_size(workload.kv_bytes_shared)} stored once"
                f" (each user adds {fmt.bytes_size(workload.kv_bytes_private)})",
            )
        ]
    rows = [
        ("weights", f"{fmt.gigabytes(memory.weights_bytes)} ({workload.weight_precision})"),
        ("KV cache per token", f"{fmt.bytes_size(workload.kv_bytes_per_token)} ({workload.kv_precision})"),
        *shared,
        ("KV cache, all users", fmt.gigabytes(memory.kv_bytes)),
        (
            "memory in use",
            f"{fmt.gigabytes(memory.used_bytes)} of {labelled(BUDGET, memory.usable_bytes)}"
            f" ({labelled(POOL, memory.pool_bytes)} of {labelled(USABLE, estimate.hardware.usable_memory_bytes)})",
        ),
        ("fits", "yes" if shortfall is None else f"NO: {shortfall.problem}"),
        ("most users that fit", most_users),
        ("decode, per user", f"{fmt.rate(estimate.decode_tokens_per_s_per_user)} tokens/s"),
        ("decode, all users", f"{fmt.rate(estimate.decode_tokens_per_s_total)} tokens/s"),
        (
            "decode step",
            f"{fmt.milliseconds(decode.seconds)}, {decode.bound}-bound"
            f" (memory {fmt.milliseconds(decode.memory_s)}, compute {fmt.milliseconds(decode.compute_s)})",
        ),
    ]
    if decode.communication_s:
        rows.append(
            (
                "all-reduces",
                f"{fmt.milliseconds(decode.communication_s)} a step: {estimate.allreduces_per_step:,} of"
                f" {fmt.bytes_size(estimate.allreduce_bytes)}, included in the step",
            )
        )
    if shortfall is not None and shortfall.remedies:
        rows.insert(5, ("to fit", "; or ".join(shortfall.remedies)))
    if workload.prompt:
        rows.append(
            (
                "prefill",
                f"{fmt.milliseconds(prefill.seconds)} for {workload.prompt:,} tokens, {prefill.bound}-bound",
            )
        )
    crossover = estimate.crossover_batch
    rows.append(
        (
            "compute-bound from",
            "never at this context" if crossover is None else f"{fmt.users(crossover)} users",
        )
    )
    rule = estimate.rule
    rows.append(("math", estimate.math))
    rows.append(
        (
            "rule of thumb",
            f"{fmt.rate(rule.decode_tokens_per_s_per_user)} tokens/s per user; compute-bound from"
            f" {fmt.users(rule.crossover_batch)} users (no KV cache)"
            + (f"; prefill {fmt.milliseconds(rule.prefill_s)}" if workload.prompt else ""),
        )
    )
    rows.append(("decode vs rule", estimate.decode_vs_rule))
    if workload.prompt:
        rows.append(("prefill vs rule", estimate.prefill_vs_rule))
    accounting = estimate.accounting
    rows.append(("ceiling's memory", accounting["memory"]))
    if estimate.kv_copies != 1 or (workload.model.mla is not None and estimate.hardware.count > 1):
        rows.append(("ceiling's KV cache", accounting["kv_cache"]))
    rows.append(("ceiling's links", accounting["communication"]))
    rows.append(("ceiling's costs", accounting["costs"]))
    if estimate.expected is not None:
        rows.extend(_expected_rows(estimate))
    return rows


def _expected_rows(estimate: Estimate) -> list[tuple[str, str]]:
    """The calibrated prediction, each figure with its band (the 80% band of the fit's left-out residuals)."""
    expected = estimate.expected
    assert expected is not None
    band = expected.band()
    low, high = band["throughput_tokens_per_s"]
    step_low, step_high = band["itl_mean_s"]
    rows = [
        (
            "expected decode",
            f"{fmt.rate(expected.throughput_tokens_per_s)} tokens/s all users (band {fmt.rate(low)} to"
            f" {fmt.rate(high)}); {fmt.milliseconds(expected.decode.seconds)} a step"
            f" (band {fmt.milliseconds(step_low)} to {fmt.milliseconds(step_high)})",
        )
    ]
    if estimate.workload.prompt:
        ttft_low, ttft_high = band["ttft_mean_s"]
        rows.append(
            (
                "expected prefill",
                f"{fmt.milliseconds(expected.prefill.seconds)}"
                f" (band {fmt.milliseconds(ttft_low)} to {fmt.milliseconds(ttft_high)})",
            )
        )
    rows.append(_expected_costs(expected.calibration, estimate.hardware, estimate.workload.weight_precision))
    return [*rows, *expected_ground_rows(expected.calibration)]


def expected_ground_rows(calibration: Calibration) -> list[tuple[str, str]]:
    """What the expected figures assume round the GPU: the harness (what the measurement includes)
    with its host costs, the engine, and one ``unfitted`` row for each reason the band is widened
    (``Calibration.for_ground``)."""
    costs = calibration.host_costs
    fitted = f"fitted on {costs.fit_rows} runs" if costs.fitted else f"no fit rows: the {costs.stand_in} harness's"
    engine = ENGINES[calibration.engine]
    rows = [
        (
            "expected harness",
            f"{calibration.harness}, {HARNESSES[calibration.harness]}: {fmt.milliseconds(costs.request_overhead_s)}"
            f" a request, {fmt.microseconds(costs.token_overhead_s)} a sampled token{_serial_words(calibration)}"
            f" ({fitted}); engine {engine}",
        )
    ]
    return rows + [("unfitted", sentence) for sentence in calibration.unfitted]


def _serial_words(calibration: Calibration) -> str:
    """``", a context pass + 0.8 x min(reads, math)"`` for a harness whose context passes overlap
    them only in part (``CostModel.context_serial_share``); nothing for the others."""
    if calibration.harness not in SERIAL_CONTEXT_HARNESSES:
        return ""
    share = calibration.host_costs.context_serial_share
    return f", a context pass + {share:.2f} x min(reads, math)"


def _allreduce_words(costs: CostModel, gpus: int) -> str:
    """``", 31 µs an all-reduce at 4 GPUs"`` (the fitted latency there); nothing for one GPU."""
    latency = costs.allreduce_latency(gpus)
    if gpus == 1 or latency is None:
        return ""
    return f", {fmt.microseconds(latency)} an all-reduce at {gpus:,} GPUs"


def _expected_costs(calibration: Calibration, hardware: Hardware, weight_precision: str = "bf16") -> tuple[str, str]:
    """The ``expected costs`` line: what the fit found for this GPU and math (``hardware`` resolved),
    and for weights the passes widen (``performance.dequantizes``) what dequantizing costs."""
    costs = calibration.cost_model(hardware.gpu)
    math = hardware.compute_precision
    fitted = calibration.provenance.get("fit_rows", "published")
    dequant = ""
    if not costs.dequantizes and calibration.dequant_overhead and dequantizes(hardware, weight_precision):
        # δ was measured on one kernel and chip; say so rather than carry it to another GPU.
        dequant = (
            f"; {weight_precision} is widened to {math} in the kernel at no charged cost: δ ="
            f" {calibration.dequant_overhead:.2f} was measured on vLLM's legacy awq_gemm on an A100 only,"
            " and this GPU runs Marlin or Machete, unmeasured here"
        )
    if costs.dequantizes and dequantizes(hardware, weight_precision):
        widened = costs.dequant_switch_tokens
        dequant = (
            f"; {weight_precision} is widened to {math} in the kernel: its matmuls take"
            f" {1 + costs.dequant_overhead:.2f}× their math time (δ = {costs.dequant_overhead:.2f},"
            " fitted on vLLM PR #2566's AWQ runs: the legacy awq_gemm kernel on this A100)"
            + (f", and from {widened:,} tokens a pass widens the weights first" if widened else "")
        )
    return (
        "expected costs",
        f"fitted on {fitted} published serving runs: {costs.bandwidth_efficiency:.0%} of the bandwidth,"
        f" {costs.compute_share(math):.0%} of the {math} peak, {fmt.milliseconds(costs.layer_overhead_s)}"
        f" a layer{_allreduce_words(costs, hardware.count)}{dequant}; the band is built to hold 80% of runs like them",
    )


def text_report(estimate: Estimate) -> str:
    """A heading naming model, GPUs and precisions, then one labelled line per figure."""
    hardware, workload = estimate.hardware, estimate.workload
    heading = (
        f"{workload.model.name} on {hardware.count:,} × {hardware.gpu.name}"
        f" ({labelled(NAMEPLATE, hardware.gpu.memory_bytes, 0)}), {hardware.compute_precision} math;"
        f" {workload.batch:,} user{'s' if workload.batch != 1 else ''},"
        f" {workload.context:,} tokens of context"
    )
    rows = _rows(estimate)
    width = max(len(label) for label, _ in rows)
    return "\n".join([heading, *(f"  {label:<{width}}  {value}" for label, value in rows)]) + "\n"


def _small(value: float, whole: str) -> str:
    """``whole`` (a rounded rendering) unless that would print a nonzero value as 0: then three significant digits."""
    return f"{value:.3g}" if 0 < value and float(whole.replace(",", "")) == 0 else whole


def _traffic(result: SimulationResult) -> str:
    config = result.config
    if config.concurrency is not None:
        return f"{config.requests:,} requests from {config.concurrency:,} clients in a closed loop"
    if config.rate == math.inf:
        return f"{config.requests:,} requests all at time 0"
    return f"{config.requests:,} requests at {config.rate:g}/s"


def _memory(result: SimulationResult) -> str:
    config = result.config
    cache = f"KV cache {result.kv_blocks:,} blocks of {BLOCK_TOKENS} tokens"
    if config.policy == "static":
        return f"{cache}, reserved for each padded batch"
    if config.admission == "reserve":
        return f"{cache}, reserved for prompt + output up front (the Orca-oracle baseline)"
    return f"{cache}, paged as tokens are written; preemption by {config.preemption}"


def _split_gpus(hardware: Hardware, split: Split) -> str:
    """``8 × H200 as PP8 (8 stages of 1 GPU)``."""
    return (
        f"{split.gpus:,} × {hardware.gpu.name} as {split.label}"
        f" ({split.pp:,} stages of {split.tp:,} GPU{'s' if split.tp > 1 else ''})"
    )


def _lengths(config: Any) -> str:
    """How the run's lengths are drawn: uniform ranges, or a trace's pairs with their ranges."""
    if config.trace is None:
        return f"prompt {config.prompt} and output {config.output} tokens"
    return f"lengths from {config.trace}: prompt {config.prompt} and output {config.output} tokens"


def simulation_report(
    result: SimulationResult,
    hardware: Hardware,
    workload: Workload,
    expected: SimulationResult | None = None,
    calibration: Calibration | None = None,
    split: Split | None = None,
    bounds: dict[str, Any] | None = None,
    band_bounds: dict[str, Any] | None = None,
) -> str:
    """What ``roofline simulate`` prints: the setup, then one labelled line per metric; with
    ``bounds`` (``load_bounds.bounds_report``), the best-case TTFT and ITL any scheduler could reach,
    and a line saying the simulated times under load depend on the scheduler; with
    ``expected`` (the same run at ``calibration``'s costs, ``serving.simulate_expected``), its
    throughput and mean times after them, each with its band, no time's band shorter than its
    bound in ``band_bounds`` (by default ``bounds``; a speculative run has a TTFT bound only). A
    ``split`` with pipeline stages is named after the GPUs."""
    config = result.config
    gpus = f"{hardware.count:,} × {hardware.gpu.name}"
    if split is not None:
        batches = split.microbatches
        gpus = f"{_split_gpus(hardware, split)} in {batches} micro-batch{'es' if batches != 1 else ''}"
    fleet = fleet_facts(result)
    pools = getattr(result, "disaggregation", None)
    if pools is not None:
        prefill, decode = pools["prefill_pool"]["instances"], pools["decode_pool"]["instances"]
        gpus = f"{prefill:,} prefill and {decode:,} decode instance{'s' if decode > 1 else ''} of {gpus} each"
        fleet = {**fleet, "replicas": 1}  # the pools' own rows say how requests are split
    elif fleet["replicas"] > 1:
        gpus = f"{fleet['replicas']:,} replicas of {gpus}"
    heading = (
        f"{workload.model.name} on {gpus}, {workload.weight_precision} weights,"
        f" {workload.kv_precision} KV cache; {config.policy} batching, max batch {config.max_batch}"
        + (f", token budget {config.token_budget:,}" if config.policy == "chunked" else "")
        + f"\n{_traffic(result)} (seed {config.seed}), {_lengths(config)}"
        + f"\n{_memory(result)}"
    )

    def spread(mean: float | None, values: dict[int, float | None]) -> str:
        if mean is None:
            return "none"
        return f"mean {fmt.duration(mean)}  " + "  ".join(
            f"p{p} {fmt.duration(value)}" for p, value in values.items() if value is not None
        )

    def target(seconds: float) -> str:
        return fmt.milliseconds(seconds) if seconds < 1 else f"{seconds:g} s"

    rejected = (
        (f"{result.rejected:,} rejected: longer than the whole KV cache, {result.kv_blocks * BLOCK_TOKENS:,} tokens")
        if result.rejected
        else "none rejected"
    )
    latency = "none" if result.latency_mean_s is None else f"{result.latency_mean_s:,.3f} s mean"
    if not result.preemptions:
        preempted = "none"
    elif config.preemption == "swap":
        preempted = f"{result.preemptions:,}, {fmt.bytes_size(result.swapped_bytes)} swapped over the host link"
    else:
        preempted = f"{result.preemptions:,}, {result.recomputed_tokens:,} tokens prefilled again"
    attainment = result.slo_attainment
    rows = [
        ("completed", f"{result.completed:,} of {result.requests:,} ({rejected})"),
        (
            "throughput",
            f"{_small(result.throughput_tokens_per_s, fmt.rate(result.throughput_tokens_per_s))} output tokens/s,"
            f" {_small(result.throughput_requests_per_s, f'{result.throughput_requests_per_s:,.2f}')} requests/s",
        ),
        ("time to first token", spread(result.ttft_mean_s, result.ttft_s)),
        ("time per output token", spread(result.tpot_mean_s, result.tpot_s) + " (each request's mean)"),
        ("inter-token latency", spread(result.itl_mean_s, result.itl_s or {}) + " (every gap)"),
        ("latency", latency),
        (
            "queueing",
            "none"
            if result.queue_wait_mean_s is None
            else f"{fmt.duration(result.queue_wait_mean_s)} mean wait for a batch slot and KV blocks",
        ),
        ("preemptions", preempted),
        (
            "requests in flight",
            f"{_small(result.mean_in_flight, f'{result.mean_in_flight:,.2f}')} (time-weighted mean),"
            f" {_small(result.mean_batch, f'{result.mean_batch:,.2f}')} of them running in the batch",
        ),
        (
            "goodput",
            f"{_small(result.goodput_requests_per_s, f'{result.goodput_requests_per_s:,.2f}')} requests/s within"
            f" TTFT ≤ {target(config.ttft_slo_s)} and TPOT ≤ {target(config.tpot_slo_s)}"
            + ("" if attainment is None else f" ({attainment:.1%} of those completed)"),
        ),
        (
            "GPU busy",
            f"{_small(100 * result.busy_fraction, f'{result.busy_fraction:.1%}'.rstrip('%'))}% of"
            f" {fleet['run_duration_s']:,.1f} s ({result.iterations:,} iterations)",
        ),
    ]
    rows.extend(_fleet_rows(fleet))
    rows.extend(_prefix_rows(result))
    if pools is not None:
        rows.extend(_pool_rows(pools, spread))
    if bounds is not None:
        rows.extend(_bound_rows(bounds))
    if expected is not None and calibration is not None:
        rows.append(("ceiling's costs", "the figures above: the datasheet's bandwidth and dense peak, nothing added"))
        engine = resolved(hardware, workload)
        held = bounds if band_bounds is None else band_bounds
        rows.extend(_expected_simulation_rows(expected, calibration, engine, workload.weight_precision, held))
    width = max(len(label) for label, _ in rows)
    return "\n".join([heading, *(f"  {label:<{width}}  {value}" for label, value in rows)]) + "\n"


def _fleet_rows(fleet: dict[str, Any]) -> list[tuple[str, str]]:
    """The replicas and the warm-up window (``fleet.fleet_facts``), when the run has either."""
    rows = []
    if fleet["replicas"] > 1:
        rows.append(
            (
                "replicas",
                f"{fleet['replicas']:,} independent copies, requests (and a closed loop's clients) split"
                f" {fleet['split']}; totals summed, percentiles over every request; KV cache per replica",
            )
        )
    if fleet["warmup_requests"]:
        rows.append(
            (
                "warm-up",
                f"the first {fleet['warmup_requests']:,} requests sent are left out of every figure above but GPU"
                f" busy, the batch, iterations and preemptions (the whole run's); measured from"
                f" {fleet['window_start_s']:,.2f} s to {fleet['window_end_s']:,.2f} s",
            )
        )
    return rows


def _prefix_rows(result: SimulationResult) -> list[tuple[str, str]]:
    """The prefix cache's line (``serving``'s "Prefix cache"), when the run has one."""
    if result.prefix_lookups is None:
        return []
    config = result.config
    rate = result.prefix_hit_rate
    hits = "no prefill started" if rate is None else f"{result.prefix_hits:,} of {result.prefix_lookups:,} prefills hit"
    if rate is not None:
        hits += f" ({rate:.1%})"
    saved = f"{result.prefill_tokens_saved:,} prompt tokens not prefilled"
    if result.prefix_token_hit_rate is not None:
        saved += (
            f"; {result.prefix_token_hit_rate:.1%} of the requests' prompt tokens were cached at their own"
            " lookup (recomputes left out: the share vLLM logs as its hit rate)"
        )
    return [
        (
            "prefix cache",
            f"{hits}, {saved}; {config.prefix_groups:,} prefix{'es' if config.prefix_groups > 1 else ''} of"
            f" {config.shared_prefix_tokens:,} tokens, {result.prefix_cache_blocks:,} KV blocks kept for them"
            f" ({config.prefix_cache_share:g} of the cache, LRU), {result.prefix_evictions:,} evicted",
        )
    ]


def _pool_rows(pools: dict[str, Any], spread: Callable[..., str]) -> list[tuple[str, str]]:
    """The two pools and the KV transfer between them (``disaggserving``)."""
    prefill, decode = pools["prefill_pool"], pools["decode_pool"]
    if pools["kv_transfers"]:
        transfer = (
            f"mean {fmt.duration(pools['kv_transfer_s_mean'])}, largest {fmt.duration(pools['kv_transfer_s_max'])},"
            f" {fmt.bytes_size(pools['kv_transfer_bytes_mean'])} a request over {pools['link_name']}"
            f" at {fmt.bytes_size(pools['link_bytes_per_s'])}/s an instance"
        )
    else:
        transfer = "none (no request went on to decode)"

    def ranked(pool: dict[str, Any], name: str) -> dict[int, float | None]:
        return {p: pool[f"{name}_p{p}_s"] for p in (50, 90, 99)}

    wait = decode["queue_wait_mean_s"]
    return [
        ("KV transfer", transfer),
        (
            "prefill pool",
            f"{prefill['gpus']:,} GPU{'s' if prefill['gpus'] > 1 else ''}, {prefill['busy_fraction']:.1%} busy;"
            f" TTFT {spread(prefill['ttft_mean_s'], ranked(prefill, 'ttft'))}",
        ),
        (
            "decode pool",
            f"{decode['gpus']:,} GPU{'s' if decode['gpus'] > 1 else ''}, {decode['busy_fraction']:.1%} busy;"
            f" ITL {spread(decode['itl_mean_s'], ranked(decode, 'itl'))}"
            + ("" if wait is None else f"; {fmt.duration(wait)} mean wait for a decode slot"),
        ),
    ]


def _bound_rows(bounds: dict[str, Any]) -> list[tuple[str, str]]:
    """The best-case bounds on the times (``load_bounds``), each with the accounting it uses."""
    accounting = bounds["accounting"]
    rows = [
        ("times under load", bounds["times_under_load"]),
        ("TTFT bound", f"≥ {fmt.duration(bounds['ttft_mean_s'])} ({accounting['ttft']})"),
        ("ITL/TPOT bound", f"≥ {fmt.duration(bounds['itl_mean_s'])} ({accounting['itl']})"),
    ]
    if "throughput" in accounting:
        most = bounds["throughput_tokens_per_s"]
        shown = accounting["throughput"]
        if most is not None:
            shown = f"≤ {fmt.rate(most)} output tokens/s ({shown})"
        rows.append(("throughput bound", shown))
    return rows


def _expected_simulation_rows(
    expected: SimulationResult,
    calibration: Calibration,
    hardware: Hardware,
    weight_precision: str = "bf16",
    bounds: dict[str, Any] | None = None,
) -> list[tuple[str, str]]:
    """The run at the expected costs: throughput and the mean times, each with its band, the
    times' no shorter than the best-case ``bounds`` where there are some (``Calibration.bands``)."""
    bands = calibration.bands(expected.to_dict(), bounds)

    def banded(metric: str, show: Callable[[float], str], before: str = "", after: str = "") -> str:
        value, band = getattr(expected, metric), bands[metric]
        if value is None or band is None:
            return "none"
        return f"{before}{show(value)}{after} (band {show(band[0])} to {show(band[1])})"

    rows = [
        ("expected throughput", banded("throughput_tokens_per_s", fmt.rate, after=" output tokens/s")),
        ("expected TTFT", banded("ttft_mean_s", fmt.duration, before="mean ")),
        ("expected TPOT", banded("tpot_mean_s", fmt.duration, before="mean ")),
        ("expected ITL", banded("itl_mean_s", fmt.duration, before="mean ")),
    ]
    return [*rows, _expected_costs(calibration, hardware, weight_precision), *expected_ground_rows(calibration)]


def speculation_report(result: Speculation) -> str:
    """What ``roofline speculate`` prints: the deployment and the round, then one labelled line per figure."""
    hardware, workload, round_ = result.hardware, result.workload, result.round
    drafter = {"free": "free (cost 0)", "given": f"cost {round_.draft_cost:.3g} of a target step, as given"}.get(
        round_.drafter, f"{round_.drafter}'s own decode step"
    )
    alpha = (
        f"α = {result.alpha:.3g}, given"
        if result.measured_speedup is None
        else f"α = {result.alpha:.3g}, solved from a measured speedup of {result.measured_speedup:g}×"
    )
    heading = (
        f"{workload.model.name} on {hardware.count:,} × {hardware.gpu.name}, {workload.weight_precision} weights;"
        f" {fmt.users(round_.batch)} user{'s' if round_.batch != 1 else ''},"
        f" {workload.context:,} tokens of context\n"
        f"speculation: γ = {round_.gamma} draft tokens per round, {alpha}; draft: {drafter}"
    )
    even = result.break_even_batch
    if even is None:
        break_even = (
            "never: at this context each user's cache read, which verifying γ+1 tokens does not repeat,"
            " outweighs the extra math"
        )
    elif even <= 1:
        break_even = "already at 1 user: a round costs more than the tokens it brings"
    else:
        break_even = f"{fmt.users(even)} users: beyond, a round costs more than the tokens it brings"
    most = memory_use(hardware, workload).max_batch
    if most is not None and (even is None or even > most):
        break_even += f" ({most:,} users fit at {workload.context:,} tokens of context)"
    verified = round_.gamma + 1
    drafting = (
        f" + {round_.gamma} draft steps of {fmt.milliseconds(round_.draft_step_s)}" if round_.draft_step_s else ""
    )
    rows = [
        ("tokens per step", f"{result.tokens_per_step:.3f} (τ = (1 − α^{verified}) / (1 − α))"),
        ("draft cost", f"{round_.draft_cost:.3g} of a target step"),
        (
            "round",
            f"{fmt.milliseconds(round_.seconds)}: verifying {verified} tokens per user"
            f" {fmt.milliseconds(round_.verification.seconds)} ({round_.verification.bound}-bound){drafting}",
        ),
        ("plain decode step", f"{fmt.milliseconds(round_.baseline.seconds)} ({round_.baseline.bound}-bound)"),
        ("speedup", f"{result.speedup:.2f}× over plain decoding at the same batch"),
        (
            "tokens/s per user",
            f"{fmt.rate(round_.tokens_per_s_per_user(result.alpha))} with speculation,"
            f" {fmt.rate(round_.baseline_tokens_per_s_per_user)} without (both ceilings)",
        ),
        ("break-even batch", break_even),
        *(("note", note) for note in round_.notes),
    ]
    width = max(len(label) for label, _ in rows)
    return "\n".join([heading, *(f"  {label:<{width}}  {value}" for label, value in rows)]) + "\n"


def speculation_lines(run: SpeculativeSimulation, expected: SpeculativeSimulation | None = None) -> str:
    """What ``roofline simulate --speculate-*`` adds after the simulation's report: the drafting,
    the rounds and the tokens each emitted against τ, and the rule the run followed; with
    ``expected`` (the same run at the fitted costs), its rounds too, and what its band rests on."""
    drafting = run.drafting
    if drafting is None:
        return ""
    if drafting.draft_cost is not None:
        drafter = f"a draft cost of {drafting.draft_cost:g} of the target's plain step"
    elif drafting.draft is not None:
        drafter = f"{drafting.draft.name}'s own decode step"
    else:
        drafter = "a free draft"

    def emitted(run: SpeculativeSimulation) -> tuple[str, str]:
        measured = run.tokens_per_round
        return (
            f"{run.rounds:,} verifications, {run.emitted_tokens:,} tokens emitted",
            "none" if measured is None else f"{measured:.3f} drawn (τ = {drafting.tokens_per_round:.3f} expected)",
        )

    rounds, per_round = emitted(run)
    rows = [("rounds", rounds), ("tokens per round", per_round)]
    if expected is not None:
        rounds, per_round = emitted(expected)
        rows += [
            ("expected rounds", f"{rounds}, {per_round}"),
            (
                "expected band",
                "fitted to published runs without speculation: it covers what the passes cost, not α",
            ),
        ]
    rows += [("note", note) for note in run.notes]
    width = max(len(label) for label, _ in rows)
    heading = (
        f"Speculation: γ = {drafting.gamma}, α = {drafting.alpha:g}, drafting at {drafter}"
        " (ceiling costs); blocks reserved for each request's prompt and output"
    )
    return "\n".join(["", heading, *(f"  {label:<{width}}  {value}" for label, value in rows)]) + "\n"


def _hops(count: int) -> str:
    return f"{count} hop" if count == 1 else f"{count} hops"


def _split_links(hardware: Hardware, step) -> str:
    """The links a split talks over, as the tensor-parallel report's ``ceiling's links`` line names
    them: the fabric, one direction of it, the domain, and what each hop between stages costs."""
    link = hardware.gpu.interconnect
    if link is None:  # one GPU only: deploy refuses more without links
        return "none in its spec: one GPU only"
    hop = f"; each hop {fmt.microseconds(step.hop_s)}" if step.split.pp > 1 else ""
    return (
        f"{link.scale_up}, {fmt.gigabytes(link.link_bytes_per_s, 0)}/s each way,"
        f" {link.domain_gpus:,} GPUs a domain{hop}"
    )


def deployment_report(
    hardware: Hardware,
    workload: Workload,
    result: Deployment,
    expected: Deployment | None = None,
    band: dict[str, list[float] | None] | None = None,
    calibration: Calibration | None = None,
) -> str:
    """A split deployment (``roofline estimate --parallel pp|tpxpp``): a heading, then one line per
    figure of the ceiling, then the expected figures when ``expected`` (the same split at the fitted
    costs) is given, each with its ``band`` (``Calibration.bands``), and what the fit rests on when
    ``calibration`` (the grounded one) is given, as the tensor-parallel report shows them."""
    split, step, memory = result.split, result.step, result.memory
    heading = (
        f"{workload.model.name} on {_split_gpus(hardware, split)};"
        f" {workload.batch:,} user{'s' if workload.batch != 1 else ''} in {split.microbatches} micro-batch"
        f"{'es' if split.microbatches != 1 else ''}, {workload.context:,} tokens of context"
    )
    rows = [
        ("one user's token", f"{fmt.milliseconds(step.latency_s)}: every stage in turn, and {_hops(split.pp - 1)}"),
        (
            "between a user's tokens",
            f"{fmt.milliseconds(step.interval_s)} (the lap, or the slowest stage serving every micro-batch)",
        ),
        ("decode, per user", f"{fmt.rate(step.tokens_per_s_per_user)} tokens/s"),
        ("decode, all users", f"{fmt.rate(step.tokens_per_s_total)} tokens/s"),
        ("bubble (a pass that drains)", f"{step.bubble:.0%}: (p - 1) / (m + p - 1)"),
        (
            "talk per token",
            f"{fmt.milliseconds(step.communication_s)}, {result.communication_share:.0%} of it"
            + (f"; {_hops(step.hops_across)} cross nodes" if step.hops_across else ""),
        ),
        ("ceiling's links", _split_links(hardware, step)),
        ("prefill", fmt.milliseconds(result.prefill_s) if workload.prompt else "no prompt"),
        (
            "memory per GPU",
            f"{fmt.gigabytes(memory.weights_bytes)} weights + {fmt.gigabytes(memory.kv_bytes, 2)} cache,"
            f" {labelled(POOL, memory.pool_bytes)}" + ("" if result.fits else ": does not fit"),
        ),
    ]
    if expected is not None:
        fitted = expected.step
        band = band or {}

        def banded(text: str, metric: str, show) -> str:
            bounds = band.get(metric)
            return f"{text} (band {show(bounds[0])} to {show(bounds[1])})" if bounds else text

        rows.append(
            (
                "expected",
                banded(f"{fmt.milliseconds(fitted.interval_s)} between a user's tokens", "itl_mean_s", fmt.milliseconds)
                + f", {fmt.rate(fitted.tokens_per_s_per_user)} tokens/s per user, "
                + banded(f"{fmt.rate(fitted.tokens_per_s_total)} in all", "throughput_tokens_per_s", fmt.rate)
                + " (the ceiling's lines above are upper bounds)",
            )
        )
        if workload.prompt:
            rows.append(
                ("expected prefill", banded(fmt.milliseconds(expected.prefill_s), "ttft_mean_s", fmt.milliseconds))
            )
        if calibration is not None:
            rows.append(_expected_costs(calibration, resolved(hardware, workload), workload.weight_precision))
            rows.extend(expected_ground_rows(calibration))
    width = max(len(label) for label, _ in rows)
    return "\n".join([heading, *(f"  {label:<{width}}  {value}" for label, value in rows)]) + "\n"
