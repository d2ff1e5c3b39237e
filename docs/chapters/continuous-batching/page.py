"""Chapter 3, "Continuous Batching": every number its prose quotes, its self-check and its figures.

The page is ``index.md`` beside this module; its Run cell shows
``programs/serving_policies.py``, its calculator is ``calculators/serving.py`` and
its chart builders are in ``charts.py``. Every number comes from
``roofline.serving.simulate`` (and, for single iterations, the same
``IterationCosts`` the simulator times its iterations with); the chapter's own
choices of traffic are the constants below. Every run states its max batch (vLLM's
``max_num_seqs``). A figure that moves with the random draw of arrivals and lengths
is quoted over ``SEEDS`` (median and range) or for seed 0 alone, and the prose says which.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from dataclasses import dataclass

from roofline import Hardware, ServingConfig, SimulationResult, Workload, decode_step, memory_use, simulate
from roofline import formatting as fmt
from roofline.performance import IterationCosts, iteration_costs
from roofline.serving import (
    BLOCK_TOKENS,
    DEFAULT_TPOT_SLO_S,
    DEFAULT_TTFT_SLO_S,
    Lengths,
    blocks_for,
    kv_blocks_available,
)
from sitegen import escape
from sitegen.context import Context
from sitegen.page import PageContent

from . import charts

GPU = "h100-sxm"
MODEL = "llama-3.1-8b"
PRECISION = "bf16"
#: The max batch (vLLM's max_num_seqs) of every run unless one says otherwise.
MAX_BATCH = 64
#: Seeds of the random draw over which a seed-dependent figure is quoted (median and range).
SEEDS = (0, 1, 2, 3, 4)


@dataclass(frozen=True)
class Traffic:
    """One stream of requests the chapter replays under several policies."""

    rate: float
    requests: int
    prompt: Lengths
    output: Lengths
    max_batch: int = MAX_BATCH

    def config(self, policy: str, **changes: object) -> ServingConfig:
        settings: dict[str, object] = {
            "policy": policy,
            "rate": self.rate,
            "requests": self.requests,
            "prompt": self.prompt,
            "output": self.output,
            "max_batch": self.max_batch,
        }
        settings.update(changes)
        return ServingConfig(**settings)


#: Static against continuous: prompts and outputs of varied length, a rate static cannot keep up with.
COMPARE = Traffic(rate=16, requests=1000, prompt=Lengths(128, 1024), output=Lengths(32, 512))
#: Requests drawn in the timelines figure.
TIMELINE_REQUESTS = 12
#: Closed loops of this many clients, on the comparison's lengths.
CLIENTS = (16, 32, 64, 128)
#: The rates of the throughput-latency and goodput figures, each with this many requests.
SWEEP_RATES = (4, 8, 16, 24, 32, 40, 48)
SWEEP_REQUESTS = 300
#: DistServe's SLO attainment goal: goodput is the highest rate at which this share meets both targets.
ATTAINMENT_GOAL = 0.9
#: The goodput-against-max-batch figure: one offered rate, these max batches, these many requests.
BATCH_RATE = 48
MAX_BATCHES = (16, 32, 64, 128, 256, 512)
BATCH_REQUESTS = 1000
#: Long prompts among short ones: the prefill stall, and the chunked scheduler's budget.
LONG_PROMPTS = Traffic(rate=4, requests=400, prompt=Lengths(256, 8192), output=Lengths(64, 512))
CHUNK_BUDGET = 512
BUDGETS = (128, 256, 512, 1024, 2048, 4096, 8192)
#: The stall example: one long prompt arriving while a batch of users streams.
STALL_PROMPT = 8192
STALL_USERS = 32
STALL_CONTEXT = 1024
#: The piggybacking example: one prefill chunk riding with the stall example's decodes.
PIGGYBACK_CHUNK = CHUNK_BUDGET - STALL_USERS
#: A time-between-tokens target from which the chapter picks a budget.
TBT_TARGET_S = 0.015
#: Context per request in the reservation example.
ADMIT_CONTEXT = 4096
#: Paged against reserved admission where memory binds: a 70B model in fp8 on one GPU,
#: short prompts and outputs of widely varied length (like the vLLM paper's ShareGPT mix),
#: every request at time 0 so the server runs saturated, and a max batch memory reaches first.
MEMORY_MODEL = "llama-3.1-70b"
MEMORY_PRECISION = "fp8"
MEMORY = Traffic(rate=math.inf, requests=500, prompt=Lengths(4, 256), output=Lengths(16, 1024), max_batch=256)
#: The low-rate run that checks TPOT against chapter 1's batch-1 decode step.
QUIET = Traffic(rate=0.05, requests=50, prompt=Lengths(512, 512), output=Lengths(256, 256))


@dataclass(frozen=True)
class Spread:
    """One figure over several seeds: its median and its range."""

    values: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    def words(self, show: Callable[[float], str]) -> str:
        """``"4.9 (3.7 to 5.9 over 5 seeds)"``: the median, then the range, each as ``show`` prints it
        (``"8.9 ms on all 5 seeds"`` when the range prints as one value)."""
        if show(self.low) == show(self.high):
            return f"{show(self.median)} on all {len(self.values)} seeds"
        return f"{show(self.median)} ({show(self.low)} to {show(self.high)} over {len(self.values)} seeds)"

    def spread(self, show: Callable[[float], str]) -> str:
        """``"a median of 4.9, from 3.7 to 5.9, over 5 seeds"``, for a place already in parentheses."""
        median, low, high = show(self.median), show(self.low), show(self.high)
        return f"a median of {median}, from {low} to {high}, over {len(self.values)} seeds"

    def range(self, show: Callable[[float], str]) -> str:
        """``"from 3.7 to 5.9"``: the lowest and the highest."""
        return f"from {show(self.low)} to {show(self.high)}"


#: The serving calculator's "Load this section's example" (``<!-- roofline:calculator serving example=compare -->``):
#: the comparison's continuous run, so the widget shows the figures the prose quotes for it (seed 0,
#: ``COMPARE.requests`` requests, as the calculator runs). The build checks these against the form's fields.
EXAMPLES: dict[str, dict[str, object]] = {
    "compare": {
        "gpu": GPU,
        "gpus": "1",
        "precision": PRECISION,
        "model": MODEL,
        "policy": "continuous",
        "admission": "paged",
        "rate": int(COMPARE.rate),
        "max_batch": COMPARE.max_batch,
        "prompt_low": COMPARE.prompt.low,
        "prompt_high": COMPARE.prompt.high,
        "output_low": COMPARE.output.low,
        "output_high": COMPARE.output.high,
        "token_budget": CHUNK_BUDGET,
    },
}


def duration(seconds: float | None) -> str:
    """A latency as the page prints it (``roofline.formatting.duration``); — where there is no sample."""
    return "—" if seconds is None else fmt.duration(seconds)


def milliseconds(seconds: float) -> str:
    """A signed change in milliseconds, ``+52.8 ms`` or ``−5.6 ms`` (a true minus sign)."""
    return f"{seconds * 1e3:+,.1f} ms".replace("-", "−")


def prefill_s(costs: IterationCosts, prompt: int) -> float:
    """One whole prompt alone in an iteration: ``prompt`` new tokens, ``prompt(prompt+1)/2`` pairs."""
    return costs.prefill(prompt).seconds


def decode_s(costs: IterationCosts, users: int, context: int) -> float:
    """One decode step of ``users`` users with ``context`` tokens cached each."""
    return costs.iteration(users, users * context).seconds


def mixed_s(costs: IterationCosts, prompt: int) -> float:
    """The stall example's decodes and a whole ``prompt`` in one iteration, as continuous batching runs them."""
    return costs.prefill(prompt, decodes=STALL_USERS, decode_context=STALL_USERS * STALL_CONTEXT).seconds


def chunk_alone_s(costs: IterationCosts, chunk: int) -> float:
    """A prompt's first ``chunk`` tokens in an iteration of their own (the prompt goes on)."""
    return costs.prefill(chunk, finishes=False).seconds


def piggyback_s(costs: IterationCosts, chunk: int) -> float:
    """The stall example's decodes with a prompt's first ``chunk`` tokens riding in the same iteration."""
    return costs.prefill(chunk, decodes=STALL_USERS, decode_context=STALL_USERS * STALL_CONTEXT, finishes=False).seconds


def chunk_iteration_s(costs: IterationCosts, budget: int) -> float:
    """The slowest iteration a budget allows in the stall example: the batch's decodes plus
    the stall prompt's last chunk (``budget - users`` new tokens after all the others cached)."""
    chunk = budget - STALL_USERS
    cached = STALL_PROMPT - chunk
    return costs.prefill(chunk, cached, decodes=STALL_USERS, decode_context=STALL_USERS * STALL_CONTEXT).seconds


def budget_for(costs: IterationCosts, target_s: float, candidates: tuple[int, ...] | None = None) -> int | None:
    """The largest budget whose slowest iteration fits within ``target_s``: among ``candidates``,
    or among every whole budget above the batch up to the whole prompt (by bisection: the
    slowest iteration grows with the budget)."""
    if candidates is not None:
        fitting = [b for b in candidates if b > STALL_USERS and chunk_iteration_s(costs, b) <= target_s]
        return max(fitting) if fitting else None
    low, high = STALL_USERS, STALL_USERS + STALL_PROMPT  # low fits (no chunk at all); find the last that does
    if chunk_iteration_s(costs, STALL_USERS + 1) > target_s:
        return None
    if chunk_iteration_s(costs, high) <= target_s:
        return high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if chunk_iteration_s(costs, middle) <= target_s else (low, middle)
    return low


def distserve_goodput(points: list[tuple[float, SimulationResult]]) -> float | None:
    """DistServe's goodput on a sweep: the highest rate whose run kept ``ATTAINMENT_GOAL`` of its
    requests within both targets, every lower rate having kept it too (None if the lowest did not)."""
    best = None
    for rate, result in points:
        if (result.slo_attainment or 0.0) < ATTAINMENT_GOAL:
            break
        best = rate
    return best


def build(ctx: Context) -> PageContent:
    content = PageContent()
    put = content.put
    gpu, model = ctx.specs.gpu(GPU), ctx.specs.model(MODEL)
    hardware, workload = Hardware(gpu), Workload(model, PRECISION)
    costs = iteration_costs(hardware, workload)

    def run(traffic: Traffic, policy: str, **changes: object) -> SimulationResult:
        return simulate(hardware, workload, traffic.config(policy, **changes))

    put("gpu_name", gpu.name)
    put("small_name", model.name)
    put("ttft_slo", f"{DEFAULT_TTFT_SLO_S:g} s")
    put("tpot_slo", f"{DEFAULT_TPOT_SLO_S * 1e3:g} ms")
    put("max_batch", fmt.rate(MAX_BATCH))
    put("seeds", fmt.rate(len(SEEDS)))

    # Static against continuous on the same traffic (seed 0).
    # Every request traced, so Little's law can use the arrivals this run actually drew.
    compare = {
        policy: run(COMPARE, policy, trace_requests=COMPARE.requests if policy == "continuous" else TIMELINE_REQUESTS)
        for policy in ("static", "continuous")
    }
    static, continuous = compare["static"], compare["continuous"]
    put("static_short", fmt.rate(COMPARE.output.low))
    put("static_long", fmt.rate(COMPARE.output.high))
    put("cmp_requests", fmt.rate(COMPARE.requests))
    put("cmp_rate", f"{COMPARE.rate:g}")
    put("cmp_prompt_lo", fmt.rate(COMPARE.prompt.low))
    put("cmp_prompt_hi", fmt.rate(COMPARE.prompt.high))
    put("cmp_output_lo", fmt.rate(COMPARE.output.low))
    put("cmp_output_hi", fmt.rate(COMPARE.output.high))
    put("cmp_static_tps", fmt.rate(static.throughput_tokens_per_s))
    put("cmp_continuous_tps", fmt.rate(continuous.throughput_tokens_per_s))
    put("cmp_static_rps", f"{static.throughput_requests_per_s:.1f}")
    put("cmp_continuous_rps", f"{continuous.throughput_requests_per_s:.1f}")
    put("cmp_static_ttft", duration(static.ttft_s[50]))
    put("cmp_continuous_ttft", duration(continuous.ttft_s[50]))
    put("cmp_static_tpot", duration(static.tpot_s[50]))
    put("cmp_continuous_tpot", duration(continuous.tpot_s[50]))
    put("cmp_static_goodput", f"{static.goodput_requests_per_s:.1f}")
    put("cmp_continuous_goodput", f"{continuous.goodput_requests_per_s:.1f}")
    # ITL against TPOT on the same run: the per-token tail that a per-request mean averages away.
    itl = continuous.itl_s or {}
    put("cmp_itl_p50", duration(itl[50]))
    put("cmp_itl_p99", duration(itl[99]))
    put("cmp_tpot_p99", duration(continuous.tpot_s[99]))
    put("cmp_latency_p50", duration(continuous.latency_s[50]))
    gaps_each = continuous.itl_count / continuous.completed
    put("cmp_gaps_each", f"{gaps_each:,.0f}")
    put("cmp_tail_gaps", f"{gaps_each / 100:.1f}")
    # Where memory does not bind: reserving every request's longest possible size for a full batch.
    put("cmp_reserve_most", fmt.rate(MAX_BATCH * blocks_for(COMPARE.prompt.high + COMPARE.output.high)))
    content.figure(
        "serving-timelines",
        charts.timelines({"static": static, "continuous": continuous}, TIMELINE_REQUESTS),
        f"The first {TIMELINE_REQUESTS} of {COMPARE.requests:,} requests at {COMPARE.rate:g} per second on"
        f" {escape.text(gpu.name)}, {escape.text(model.name)}, max batch {MAX_BATCH} (seed 0). Static: a request"
        " waits for the whole batch ahead of it, and a short one pads until the longest ends. Continuous: each"
        " starts at the next iteration and leaves when done.",
    )

    # Little's law, on the continuous run: with the nominal rate, and with the rate of the
    # arrivals the run drew (requests / last arrival), which is what the law is about.
    latency = continuous.latency_mean_s or 0.0
    predicted = COMPARE.rate * latency
    drawn_rate = COMPARE.requests / continuous.trace[-1].arrival_s
    put("little_latency", duration(latency))
    put("little_predicted", f"{predicted:.1f}")
    measured = continuous.mean_in_flight
    put("little_measured", f"{measured:.1f}")
    put("little_error", f"{abs(measured - predicted) / measured:.1%}")
    put("little_drawn_rate", f"{drawn_rate:.2f}")
    put("little_drawn_predicted", f"{drawn_rate * latency:.1f}")
    put("little_drawn_error", f"{abs(measured - drawn_rate * latency) / measured:.1%}")

    # Closed loops: N clients, each sending its next request when its last one ends.
    closed = {
        clients: simulate(hardware, workload, COMPARE.config("continuous", concurrency=clients)) for clients in CLIENTS
    }
    for clients, result in closed.items():
        put(f"closed_{clients}_rps", f"{result.throughput_requests_per_s:.1f}")
    put(f"closed_{MAX_BATCH}_ttft", duration(closed[MAX_BATCH].ttft_s[50]))
    put("closed_most_ttft", duration(closed[CLIENTS[-1]].ttft_s[50]))
    put("closed_most_rps", f"{closed[CLIENTS[-1]].throughput_requests_per_s:.1f}")
    put("closed_clients", ", ".join(fmt.rate(clients) for clients in CLIENTS[:-1]) + f" and {CLIENTS[-1]:,}")
    put("closed_most", fmt.rate(CLIENTS[-1]))
    saturated = closed[MAX_BATCH]
    put("closed_little_rps", f"{MAX_BATCH / (saturated.latency_mean_s or 1.0):.1f}")
    put("closed_max_batch_latency", duration(saturated.latency_mean_s))

    # Admission by memory, reserved: the simulator's blocks against chapter 2's users-that-fit.
    blocks = kv_blocks_available(hardware, workload)
    per_request = blocks_for(ADMIT_CONTEXT)
    put("admit_context", fmt.rate(ADMIT_CONTEXT))
    put("admit_blocks", fmt.rate(blocks))
    put("admit_blocks_each", fmt.rate(per_request))
    put("admit_users", fmt.rate(blocks // per_request))
    put(
        "admit_chapter2_users",
        fmt.rate(memory_use(hardware, Workload(model, PRECISION, context=ADMIT_CONTEXT)).max_batch),
    )
    put("block_tokens", fmt.rate(BLOCK_TOKENS))

    # Paged against reserved where memory binds: the 70B model in fp8, every request at time 0.
    big = Workload(ctx.specs.model(MEMORY_MODEL), MEMORY_PRECISION)
    big_blocks = kv_blocks_available(hardware, big)

    def memory_run(admission: str, seed: int) -> SimulationResult:
        config = MEMORY.config("continuous", admission=admission, seed=seed, record_blocks=seed == 0)
        return simulate(hardware, big, config)

    memory_runs = {seed: (memory_run("paged", seed), memory_run("reserve", seed)) for seed in SEEDS}
    paged0, reserved0 = memory_runs[0]
    put("mem_model", f"{big.model.name}")
    put("mem_precision", MEMORY_PRECISION)
    put("mem_blocks", fmt.rate(big_blocks))
    put("mem_tokens", fmt.rate(big_blocks * BLOCK_TOKENS))
    put("mem_requests", fmt.rate(MEMORY.requests))
    put("mem_max_batch", fmt.rate(MEMORY.max_batch))
    put("mem_prompt_lo", fmt.rate(MEMORY.prompt.low))
    put("mem_prompt_hi", fmt.rate(MEMORY.prompt.high))
    put("mem_output_lo", fmt.rate(MEMORY.output.low))
    put("mem_output_hi", fmt.rate(MEMORY.output.high))
    put("mem_reserve_each", fmt.rate(round(MEMORY.prompt.mean + MEMORY.output.mean)))
    ratio = Spread(tuple(p.throughput_tokens_per_s / r.throughput_tokens_per_s for p, r in memory_runs.values()))
    put("mem_ratio", ratio.words(lambda value: f"{value:.2f}×"))
    put("mem_paged_batch", Spread(tuple(p.mean_batch for p, _ in memory_runs.values())).words(lambda v: f"{v:.1f}"))
    put("mem_reserve_batch", Spread(tuple(r.mean_batch for _, r in memory_runs.values())).words(lambda v: f"{v:.1f}"))
    put(
        "mem_preemptions_each",
        Spread(tuple(p.preemptions / p.completed for p, _ in memory_runs.values())).words(lambda v: f"{v:.1f}"),
    )
    put("mem_paged0_tps", fmt.rate(paged0.throughput_tokens_per_s))
    put("mem_reserve0_tps", fmt.rate(reserved0.throughput_tokens_per_s))
    put("mem_paged0_preemptions", fmt.rate(paged0.preemptions))
    put("mem_paged0_recomputed", fmt.rate(paged0.recomputed_tokens))
    put("mem_paged0_itl_p99", duration((paged0.itl_s or {})[99]))
    put("mem_reserve0_itl_p99", duration((reserved0.itl_s or {})[99]))
    put("mem_paged0_itl_p50", duration((paged0.itl_s or {})[50]))
    put("mem_reserve0_itl_p50", duration((reserved0.itl_s or {})[50]))
    swapped = simulate(hardware, big, MEMORY.config("continuous", preemption="swap"))
    put("mem_swap0_tps", fmt.rate(swapped.throughput_tokens_per_s))
    put("mem_swap0_gb", f"{swapped.swapped_bytes / 1e9:,.0f} GB")
    put("mem_swap0_itl_p99", duration((swapped.itl_s or {})[99]))
    put("host_link", f"{(gpu.host_link_bytes_per_s or 0) / 1e9:g} GB/s")
    content.figure(
        "serving-kv-blocks",
        charts.kv_blocks({"paged": paged0, "reserve": reserved0}, big_blocks),
        f"{MEMORY.requests} requests at time 0 on {escape.text(big.model.name)} ({MEMORY_PRECISION}) and one"
        f" {escape.text(gpu.name)}, prompts of {MEMORY.prompt.low} to {MEMORY.prompt.high} tokens, outputs of"
        f" {MEMORY.output.low:,} to {MEMORY.output.high:,}, max batch {MEMORY.max_batch} (seed 0). Solid: blocks held;"
        " dashed: the tokens cached in them, in blocks. Reservation holds blocks its requests have not written yet;"
        " paging holds only what is written, so more requests run, and it preempts when the cache runs out.",
    )

    # The prefill stall: one long prompt in the same iteration as a streaming batch's decodes.
    stall_prefill, stall_decode = prefill_s(costs, STALL_PROMPT), decode_s(costs, STALL_USERS, STALL_CONTEXT)
    stall_mixed = mixed_s(costs, STALL_PROMPT)
    put("stall_prompt", fmt.rate(STALL_PROMPT))
    put("stall_users", fmt.rate(STALL_USERS))
    put("stall_context", fmt.rate(STALL_CONTEXT))
    put("stall_prefill_ms", duration(stall_prefill))
    put("stall_mixed_ms", duration(stall_mixed))
    put("stall_decode_ms", duration(stall_decode))
    put("stall_steps", f"{stall_mixed / stall_decode:.0f}")
    put("chunk_iteration_ms", duration(chunk_iteration_s(costs, CHUNK_BUDGET)))
    put("tbt_target", f"{TBT_TARGET_S * 1e3:g} ms")
    chosen = budget_for(costs, TBT_TARGET_S)
    put("tbt_budget", fmt.rate(chosen) if chosen else "none")
    # Three decimals: the chosen budget and the next one differ by a few microseconds.
    put("tbt_budget_iteration", f"{chunk_iteration_s(costs, chosen) * 1e3:.3f} ms" if chosen else "—")
    put("tbt_next_budget", fmt.rate(chosen + 1) if chosen else "none")
    put("tbt_next_iteration", f"{chunk_iteration_s(costs, chosen + 1) * 1e3:.3f} ms" if chosen else "—")
    put("tbt_power_budget", fmt.rate(budget_for(costs, TBT_TARGET_S, BUDGETS) or 0))

    # Piggybacking: a chunk riding with the decodes costs less than the two apart.
    alone, riding = chunk_alone_s(costs, PIGGYBACK_CHUNK), piggyback_s(costs, PIGGYBACK_CHUNK)
    put("pig_chunk", fmt.rate(PIGGYBACK_CHUNK))
    put("pig_alone_ms", duration(alone))
    put("pig_mixed_ms", duration(riding))
    put("pig_added_ms", duration(riding - stall_decode))
    put("pig_apart_ms", duration(alone + stall_decode))
    put("pig_saved_ms", duration(alone + stall_decode - riding))

    # Chunked prefill on long prompts: per seed, the two schedulers on the same draw.
    long_runs = {
        seed: (
            run(LONG_PROMPTS, "continuous", seed=seed),
            run(LONG_PROMPTS, "chunked", token_budget=CHUNK_BUDGET, seed=seed),
        )
        for seed in SEEDS
    }
    long_continuous, long_chunked = long_runs[0]
    put("chunk_rate", f"{LONG_PROMPTS.rate:g}")
    put("chunk_requests", fmt.rate(LONG_PROMPTS.requests))
    put("chunk_prompt_lo", fmt.rate(LONG_PROMPTS.prompt.low))
    put("chunk_prompt_hi", fmt.rate(LONG_PROMPTS.prompt.high))
    put("chunk_output_lo", fmt.rate(LONG_PROMPTS.output.low))
    put("chunk_output_hi", fmt.rate(LONG_PROMPTS.output.high))
    put("chunk_budget", fmt.rate(CHUNK_BUDGET))

    def spread(figure: Callable[[SimulationResult, SimulationResult], float]) -> Spread:
        return Spread(tuple(figure(c, k) for c, k in long_runs.values()))

    put("chunk_continuous_itl", spread(lambda c, k: (c.itl_s or {})[99]).words(duration))
    put("chunk_chunked_itl", spread(lambda c, k: (k.itl_s or {})[99]).words(duration))
    put("chunk_itl_ratio", spread(lambda c, k: (c.itl_s or {})[99] / (k.itl_s or {})[99]).words(lambda v: f"{v:.0f}"))
    put("chunk_continuous_tpot", spread(lambda c, k: c.tpot_s[99]).words(duration))
    put("chunk_chunked_tpot", spread(lambda c, k: k.tpot_s[99]).words(duration))
    put("chunk_itl_p50", spread(lambda c, k: (c.itl_s or {})[50]).words(duration))
    ttft_change = spread(lambda c, k: k.ttft_s[99] - c.ttft_s[99])
    put("chunk_ttft_change", ttft_change.spread(milliseconds))
    put("chunk_ttft_change_median", milliseconds(ttft_change.median))
    put("chunk_continuous_ttft", spread(lambda c, k: c.ttft_s[99]).range(duration))
    put("chunk0_continuous_itl", duration((long_continuous.itl_s or {})[99]))
    put("chunk0_continuous_tpot", duration(long_continuous.tpot_s[99]))
    put("chunk0_chunked_itl", duration((long_chunked.itl_s or {})[99]))
    budget_runs = [(budget, run(LONG_PROMPTS, "chunked", token_budget=budget)) for budget in BUDGETS]
    put("budget_low", fmt.rate(BUDGETS[0]))
    put("budget_high", fmt.rate(BUDGETS[-1]))
    put("budget_low_itl", duration((budget_runs[0][1].itl_s or {})[99]))
    put("budget_high_itl", duration((budget_runs[-1][1].itl_s or {})[99]))
    put("budget_low_ttft", duration(budget_runs[0][1].ttft_s[99]))
    put("budget_high_ttft", duration(budget_runs[-1][1].ttft_s[99]))
    content.figure(
        "serving-budget",
        charts.budget_sweep(budget_runs),
        f"{LONG_PROMPTS.requests} requests at {LONG_PROMPTS.rate:g} per second, prompts of"
        f" {LONG_PROMPTS.prompt.low:,} to {LONG_PROMPTS.prompt.high:,} tokens, max batch {MAX_BATCH}, under chunked"
        " prefill with each token budget (log scales; seed 0). Smaller budgets lower the p99 gap between tokens;"
        " past a point they raise the p99 time to first token.",
    )

    # Goodput as the rate rises, at max batch MAX_BATCH.
    sweep_traffic = {rate: Traffic(rate, SWEEP_REQUESTS, COMPARE.prompt, COMPARE.output) for rate in SWEEP_RATES}
    sweep = {
        policy: [(rate, run(traffic, policy)) for rate, traffic in sweep_traffic.items()]
        for policy in ("static", "continuous", "chunked")
    }
    for policy, points in sweep.items():
        best_rate, best = max(points, key=lambda point: point[1].goodput_requests_per_s)
        put(f"sweep_{policy}_best_goodput", f"{best.goodput_requests_per_s:.1f}")
        if policy != "static":  # the prose quotes only static's peak: it never keeps up
            put(f"sweep_{policy}_best_rate", f"{best_rate:g}")
            put(f"sweep_{policy}_last_goodput", f"{points[-1][1].goodput_requests_per_s:.1f}")
            found = distserve_goodput(points)
            rates = [rate for rate, _ in points]
            if found is None:
                words = f"below {rates[0]:g}"
            elif found == rates[-1]:
                words = f"at least {found:g}"
            else:
                words = f"between {found:g} and {rates[rates.index(found) + 1]:g}"
            put(f"sweep_{policy}_distserve", words)
    static_best = Spread(
        tuple(
            max(run(traffic, "static", seed=seed).goodput_requests_per_s for traffic in sweep_traffic.values())
            for seed in SEEDS
        )
    )
    put("sweep_static_best_seeds", static_best.spread(lambda v: f"{v:.1f}"))
    put("sweep_last_rate", f"{SWEEP_RATES[-1]:g}")
    put("sweep_first_rate", f"{SWEEP_RATES[0]:g}")
    put("sweep_requests", fmt.rate(SWEEP_REQUESTS))
    put("attainment_goal", f"{ATTAINMENT_GOAL:.0%}")
    traffic = (
        f"{SWEEP_REQUESTS} requests per point, rates {SWEEP_RATES[0]} to {SWEEP_RATES[-1]} per second, the traffic"
        f" of the static-against-continuous run, max batch {MAX_BATCH} (seed 0)."
    )
    content.figure("serving-throughput-latency", charts.throughput_latency(sweep), traffic)
    content.figure(
        "serving-goodput",
        charts.goodput(sweep),
        f"{traffic} Goodput targets: TTFT within {DEFAULT_TTFT_SLO_S:g} s, TPOT within"
        f" {DEFAULT_TPOT_SLO_S * 1e3:g} ms.",
    )

    # Goodput against the max batch, at one rate past what a max batch of 64 can hold.
    batch_traffic = Traffic(BATCH_RATE, BATCH_REQUESTS, COMPARE.prompt, COMPARE.output)
    by_batch = {
        policy: [
            (size, run(batch_traffic, policy, max_batch=size, token_budget=max(CHUNK_BUDGET, 2 * size)))
            for size in MAX_BATCHES
        ]
        for policy in ("continuous", "chunked")
    }
    put("batch_rate", f"{BATCH_RATE:g}")
    put("batch_requests", fmt.rate(BATCH_REQUESTS))
    for size, result in by_batch["continuous"]:
        put(f"batch_{size}_goodput", f"{result.goodput_requests_per_s:.1f}")
    largest = by_batch["continuous"][-1][1]
    put("batch_largest", fmt.rate(MAX_BATCHES[-1]))
    put("batch_largest_in_batch", f"{largest.mean_batch:.0f}")
    put("batch_largest_latency", duration(largest.latency_mean_s))
    put("batch_little", f"{BATCH_RATE * (largest.latency_mean_s or 0.0):.0f}")
    at_max = {
        seed: (run(batch_traffic, "continuous", seed=seed), run(batch_traffic, "chunked", seed=seed)) for seed in SEEDS
    }
    put(
        "batch_64_seeds",
        Spread(tuple(c.goodput_requests_per_s for c, _ in at_max.values())).spread(lambda v: f"{v:.1f}"),
    )
    gain = Spread(tuple(k.throughput_requests_per_s / c.throughput_requests_per_s for c, k in at_max.values()))
    put("batch_chunked_gain", gain.words(lambda v: f"{(v - 1) * 100:.0f}%"))
    put("batch_64_continuous_rps", f"{at_max[0][0].throughput_requests_per_s:.1f}")
    put("batch_64_chunked_rps", f"{at_max[0][1].throughput_requests_per_s:.1f}")
    content.figure(
        "serving-max-batch",
        charts.goodput_by_batch(by_batch),
        f"{BATCH_REQUESTS:,} requests at {BATCH_RATE} per second, the traffic of the static-against-continuous run,"
        f" under each max batch (seed 0; chunked prefill's budget {CHUNK_BUDGET} tokens or twice the max batch,"
        " whichever is larger). Goodput targets as above.",
    )

    # One package, one answer: at a low rate, TPOT is chapter 1's batch-1 decode step.
    quiet = run(QUIET, "continuous")
    chapter1 = decode_step(hardware, Workload(model, PRECISION, batch=1, context=QUIET.prompt.low)).seconds
    put("quiet_tpot", duration(quiet.tpot_s[50]))
    put("quiet_decode_step", duration(chapter1))
    put("quiet_ttft", duration(quiet.ttft_s[50]))
    put("quiet_prefill", duration(prefill_s(costs, QUIET.prompt.low)))
    put("quiet_prompt", fmt.rate(QUIET.prompt.low))
    put("quiet_rate", f"{QUIET.rate:g}")

    # The self-check's first question: Little's law at twice the comparison's rate.
    put("quiz_little_rate", f"{2 * COMPARE.rate:g}")
    put("quiz_little_in_flight", f"{2 * COMPARE.rate * latency:.1f}")
    return content
