"""Chapter 3, "Continuous Batching": every number its prose quotes, its self-check and its three figures.

The page is ``index.md`` beside this module; its Run cell shows
``programs/serving_policies.py``, its calculator is ``calculators/serving.py`` and
its chart builders are in ``charts.py``. Every number comes from
``roofline.serving.simulate`` (and, for single iterations, the same
``IterationCosts`` the simulator times its iterations with); the chapter's own
choices of traffic are the constants below.
"""

from __future__ import annotations

from dataclasses import dataclass

from roofline import Hardware, ServingConfig, SimulationResult, Workload, decode_step, memory_use, simulate
from roofline import formatting as fmt
from roofline.performance import IterationCosts, iteration_costs
from roofline.serving import DEFAULT_TPOT_SLO_S, DEFAULT_TTFT_SLO_S, Lengths, blocks_for, kv_blocks_available
from sitegen import escape
from sitegen.context import Context
from sitegen.page import PageContent

from . import charts

GPU = "h100-sxm"
MODEL = "llama-3.1-8b"
PRECISION = "bf16"


@dataclass(frozen=True)
class Traffic:
    """One stream of requests the chapter replays under several policies."""

    rate: float
    requests: int
    prompt: Lengths
    output: Lengths

    def config(self, policy: str, **changes: object) -> ServingConfig:
        return ServingConfig(
            policy=policy, rate=self.rate, requests=self.requests, prompt=self.prompt, output=self.output, **changes
        )


#: Static against continuous: prompts and outputs of varied length, a rate static cannot keep up with.
COMPARE = Traffic(rate=16, requests=1000, prompt=Lengths(128, 1024), output=Lengths(32, 512))
#: Requests drawn in the timelines figure.
TIMELINE_REQUESTS = 12
#: The rates of the throughput-latency figure, each with this many requests.
SWEEP_RATES = (4, 8, 16, 24, 32, 40, 48)
SWEEP_REQUESTS = 300
#: Long prompts among short ones: the prefill stall, and the chunked scheduler's budget.
LONG_PROMPTS = Traffic(rate=4, requests=400, prompt=Lengths(256, 8192), output=Lengths(64, 512))
CHUNK_BUDGET = 512
BUDGETS = (128, 256, 512, 1024, 2048, 4096, 8192)
#: The stall example: one long prompt arriving while a batch of users streams.
STALL_PROMPT = 8192
STALL_USERS = 32
STALL_CONTEXT = 1024
#: A time-between-tokens target from which the chapter picks a budget.
TBT_TARGET_S = 0.015
#: Context per request in the admission example.
ADMIT_CONTEXT = 4096
#: The low-rate run that checks TPOT against chapter 1's batch-1 decode step.
QUIET = Traffic(rate=0.05, requests=50, prompt=Lengths(512, 512), output=Lengths(256, 256))


def duration(seconds: float | None) -> str:
    """A latency as the page prints it (``roofline.formatting.duration``); — where there is no sample."""
    return "—" if seconds is None else fmt.duration(seconds)


def prefill_s(costs: IterationCosts, prompt: int) -> float:
    """One whole prompt alone in an iteration: ``prompt`` new tokens, ``prompt(prompt+1)/2`` pairs."""
    return costs.iteration(0, 0, prompt, 0, prompt * (prompt + 1) / 2, 1).seconds


def decode_s(costs: IterationCosts, users: int, context: int) -> float:
    """One decode step of ``users`` users with ``context`` tokens cached each."""
    return costs.iteration(users, users * context).seconds


def chunk_iteration_s(costs: IterationCosts, budget: int) -> float:
    """The slowest iteration a budget allows in the stall example: the batch's decodes plus
    the stall prompt's last chunk (``budget - users`` new tokens after all the others cached)."""
    chunk = budget - STALL_USERS
    cached = STALL_PROMPT - chunk
    pairs = chunk * cached + chunk * (chunk + 1) / 2
    return costs.iteration(STALL_USERS, STALL_USERS * STALL_CONTEXT, chunk, cached, pairs, 1).seconds


def budget_for(costs: IterationCosts, target_s: float) -> int | None:
    """The largest budget in ``BUDGETS`` whose slowest iteration fits within ``target_s``."""
    fitting = [budget for budget in BUDGETS if budget > STALL_USERS and chunk_iteration_s(costs, budget) <= target_s]
    return max(fitting) if fitting else None


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

    # Static against continuous on the same traffic.
    # Every request traced, so Little's law can use the arrivals this run actually drew.
    compare = {
        policy: run(COMPARE, policy, trace_requests=COMPARE.requests) for policy in ("static", "continuous", "chunked")
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
    content.figure(
        "serving-timelines",
        charts.timelines({"static": static, "continuous": continuous}, TIMELINE_REQUESTS),
        f"The first {TIMELINE_REQUESTS} of {COMPARE.requests:,} requests at {COMPARE.rate:g} per second on"
        f" {escape.text(gpu.name)}, {escape.text(model.name)}. Static: a request waits for the whole batch"
        " ahead of it, and a short one pads until the longest ends. Continuous: each starts at the next"
        " iteration and leaves when done.",
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

    # Admission by memory: the simulator's blocks against chapter 2's users-that-fit.
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

    # The prefill stall: one long prompt against one decode step of a streaming batch.
    stall_prefill, stall_decode = prefill_s(costs, STALL_PROMPT), decode_s(costs, STALL_USERS, STALL_CONTEXT)
    put("stall_prompt", fmt.rate(STALL_PROMPT))
    put("stall_users", fmt.rate(STALL_USERS))
    put("stall_context", fmt.rate(STALL_CONTEXT))
    put("stall_prefill_ms", duration(stall_prefill))
    put("stall_decode_ms", duration(stall_decode))
    put("stall_steps", f"{stall_prefill / stall_decode:.0f}")
    put("chunk_iteration_ms", duration(chunk_iteration_s(costs, CHUNK_BUDGET)))
    put("tbt_target", f"{TBT_TARGET_S * 1e3:g} ms")
    chosen = budget_for(costs, TBT_TARGET_S)
    put("tbt_budget", fmt.rate(chosen) if chosen else "none")
    put("tbt_budget_iteration", duration(chunk_iteration_s(costs, chosen)) if chosen else "—")
    bigger = BUDGETS[BUDGETS.index(chosen) + 1] if chosen and chosen != BUDGETS[-1] else None
    put("tbt_next_budget", fmt.rate(bigger) if bigger else "none")
    put("tbt_next_iteration", duration(chunk_iteration_s(costs, bigger)) if bigger else "—")

    # Chunked prefill on long prompts.
    long_continuous = run(LONG_PROMPTS, "continuous")
    long_chunked = run(LONG_PROMPTS, "chunked", token_budget=CHUNK_BUDGET)
    put("chunk_rate", f"{LONG_PROMPTS.rate:g}")
    put("chunk_requests", fmt.rate(LONG_PROMPTS.requests))
    put("chunk_prompt_lo", fmt.rate(LONG_PROMPTS.prompt.low))
    put("chunk_prompt_hi", fmt.rate(LONG_PROMPTS.prompt.high))
    put("chunk_output_lo", fmt.rate(LONG_PROMPTS.output.low))
    put("chunk_output_hi", fmt.rate(LONG_PROMPTS.output.high))
    put("chunk_budget", fmt.rate(CHUNK_BUDGET))
    put("chunk_continuous_tpot", duration(long_continuous.tpot_s[99]))
    put("chunk_chunked_tpot", duration(long_chunked.tpot_s[99]))
    put("chunk_continuous_ttft", duration(long_continuous.ttft_s[99]))
    put("chunk_chunked_ttft", duration(long_chunked.ttft_s[99]))
    tpot_cut = 1 - (long_chunked.tpot_s[99] or 0.0) / (long_continuous.tpot_s[99] or 1.0)
    put("chunk_tpot_cut", f"{tpot_cut:.0%}")
    budget_runs = [(budget, run(LONG_PROMPTS, "chunked", token_budget=budget)) for budget in BUDGETS]
    put("budget_low", fmt.rate(BUDGETS[0]))
    put("budget_high", fmt.rate(BUDGETS[-1]))
    put("budget_low_tpot", duration(budget_runs[0][1].tpot_s[99]))
    put("budget_high_tpot", duration(budget_runs[-1][1].tpot_s[99]))
    put("budget_low_ttft", duration(budget_runs[0][1].ttft_s[99]))
    put("budget_high_ttft", duration(budget_runs[-1][1].ttft_s[99]))
    content.figure(
        "serving-budget",
        charts.budget_sweep(budget_runs),
        f"{LONG_PROMPTS.requests} requests at {LONG_PROMPTS.rate:g} per second, prompts of"
        f" {LONG_PROMPTS.prompt.low:,} to {LONG_PROMPTS.prompt.high:,} tokens, under chunked prefill with each"
        " token budget (log scale). Smaller budgets lower p99 TPOT; past a point they raise TTFT.",
    )

    # Goodput as the rate rises.
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
    put("sweep_last_rate", f"{SWEEP_RATES[-1]:g}")
    put("sweep_requests", fmt.rate(SWEEP_REQUESTS))
    traffic = (
        f"{SWEEP_REQUESTS} requests per point, rates {SWEEP_RATES[0]} to {SWEEP_RATES[-1]} per second, the traffic"
        " of the static-against-continuous run."
    )
    content.figure("serving-throughput-latency", charts.throughput_latency(sweep), traffic)
    content.figure(
        "serving-goodput",
        charts.goodput(sweep),
        f"{traffic} Goodput targets: TTFT within {DEFAULT_TTFT_SLO_S:g} s, TPOT within"
        f" {DEFAULT_TPOT_SLO_S * 1e3:g} ms.",
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
