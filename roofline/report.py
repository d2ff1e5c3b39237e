"""Readable, aligned text reports: one estimate (``roofline estimate``) and one simulation (``roofline simulate``)."""

from __future__ import annotations

from . import formatting as fmt
from .estimate import Estimate
from .performance import Hardware, Workload
from .serving import BLOCK_TOKENS, PERCENTILES, SimulationResult


def _rows(estimate: Estimate) -> list[tuple[str, str]]:
    workload, memory = estimate.workload, estimate.memory
    decode, prefill = estimate.decode, estimate.prefill
    if memory.max_batch is None:
        most_users = "no limit (nothing cached at context 0)"
    elif memory.max_batch == 0:
        most_users = "none: the weights alone do not fit"
    else:
        most_users = f"{memory.max_batch:,} at {workload.context:,} tokens of context"
    rows = [
        ("weights", f"{fmt.gigabytes(memory.weights_bytes)} ({workload.weight_precision})"),
        ("KV cache per token", f"{fmt.bytes_size(workload.kv_bytes_per_token)} ({workload.kv_precision})"),
        ("KV cache, all users", fmt.gigabytes(memory.kv_bytes)),
        ("memory in use", f"{fmt.gigabytes(memory.used_bytes)} of {fmt.gigabytes(memory.usable_bytes)} usable"),
        ("fits", "yes" if memory.fits else "NO: does not fit; add GPUs or quantize"),
        ("most users that fit", most_users),
        ("decode, per user", f"{fmt.rate(estimate.decode_tokens_per_s_per_user)} tokens/s"),
        ("decode, all users", f"{fmt.rate(estimate.decode_tokens_per_s_total)} tokens/s"),
        (
            "decode step",
            f"{fmt.milliseconds(decode.seconds)}, {decode.bound}-bound"
            f" (memory {fmt.milliseconds(decode.memory_s)}, compute {fmt.milliseconds(decode.compute_s)})",
        ),
    ]
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
    rows.append(("rule of thumb", f"{fmt.users(estimate.simple_crossover_batch)} users (no KV cache)"))
    return rows


def text_report(estimate: Estimate) -> str:
    """A heading naming model, GPUs and precisions, then one labelled line per figure."""
    hardware, workload = estimate.hardware, estimate.workload
    heading = (
        f"{workload.model.name} on {hardware.count} × {hardware.gpu.name}"
        f" ({fmt.gigabytes(hardware.gpu.memory_bytes, 0)}), {hardware.compute_precision} math;"
        f" {workload.batch:,} user{'s' if workload.batch != 1 else ''},"
        f" {workload.context:,} tokens of context"
    )
    rows = _rows(estimate)
    width = max(len(label) for label, _ in rows)
    return "\n".join([heading, *(f"  {label:<{width}}  {value}" for label, value in rows)]) + "\n"


def simulation_report(result: SimulationResult, hardware: Hardware, workload: Workload) -> str:
    """What ``roofline simulate`` prints: the setup, then one labelled line per metric."""
    config = result.config
    heading = (
        f"{workload.model.name} on {hardware.count} × {hardware.gpu.name}, {workload.weight_precision} weights,"
        f" {workload.kv_precision} KV cache; {config.policy} batching, max batch {config.max_batch}"
        + (f", token budget {config.token_budget:,}" if config.policy == "chunked" else "")
        + f"\n{config.requests:,} requests at {config.rate:g}/s (seed {config.seed}),"
        f" prompt {config.prompt} and output {config.output} tokens;"
        f" KV cache {result.kv_blocks:,} blocks of {BLOCK_TOKENS} tokens"
    )

    def spread(values: dict[int, float | None]) -> str:
        if values[PERCENTILES[0]] is None:
            return "none"
        return "  ".join(f"p{p} {fmt.milliseconds(value)}" for p, value in values.items() if value is not None)

    def target(seconds: float) -> str:
        return fmt.milliseconds(seconds) if seconds < 1 else f"{seconds:g} s"

    rejected = (
        (f"{result.rejected:,} rejected: longer than the whole KV cache, {result.kv_blocks * BLOCK_TOKENS:,} tokens")
        if result.rejected
        else "none rejected"
    )
    latency = "none" if result.latency_mean_s is None else f"{result.latency_mean_s:,.3f} s mean"
    rows = [
        ("completed", f"{result.completed:,} of {result.requests:,} ({rejected})"),
        (
            "throughput",
            f"{fmt.rate(result.throughput_tokens_per_s)} output tokens/s,"
            f" {result.throughput_requests_per_s:,.2f} requests/s",
        ),
        ("time to first token", spread(result.ttft_s)),
        ("time per output token", spread(result.tpot_s)),
        ("latency", latency),
        (
            "queueing",
            "none"
            if result.queue_wait_mean_s is None
            else f"{fmt.milliseconds(result.queue_wait_mean_s)} mean wait for a batch slot and KV blocks",
        ),
        ("requests in flight", f"{result.mean_in_flight:,.2f} (time-weighted mean)"),
        (
            "goodput",
            f"{result.goodput_requests_per_s:,.2f} requests/s within TTFT ≤ {target(config.ttft_slo_s)}"
            f" and TPOT ≤ {target(config.tpot_slo_s)}",
        ),
        ("GPU busy", f"{result.busy_fraction:.1%} of {result.duration_s:,.1f} s ({result.iterations:,} iterations)"),
    ]
    width = max(len(label) for label, _ in rows)
    return "\n".join([heading, *(f"  {label:<{width}}  {value}" for label, value in rows)]) + "\n"
