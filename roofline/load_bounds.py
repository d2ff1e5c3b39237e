"""Best-case bounds on the time metrics of a run under load, whatever the scheduler.

A simulation at the ceiling's costs (``serving.simulate``) times every iteration at its upper
bound, but its TTFT and ITL under load are still one scheduler's result: a chunked token budget,
an admission rule and how the load starts (every closed-loop client sending at time 0, say) all
move them, and a real engine with other choices can beat them. So they are not ceilings. The
bounds here are, because no schedule can do better:

TTFT
    A request's first token needs its whole prompt prefilled. Whatever else an iteration holds
    only adds bytes and FLOPs, and cutting the prompt into chunks reads the weights again for
    every chunk, so the fastest schedule is prefill-first with an unlimited token budget: the
    prompt alone, on every GPU at the datasheet's bandwidth and peak, starting the moment the
    request arrives, with no queue and no host overhead:
    ``TTFT >= performance.prefill_pass(P).seconds`` for the shortest prompt P the run draws.

ITL
    Each token after the first needs one decode pass over every layer with the request's cache,
    at least P tokens long. A batch of more users only adds reads, so
    ``ITL >= performance.decode_step(batch 1, context P).seconds``; TPOT, the mean of a
    request's gaps, has the same bound. Speculative decoding emits several tokens a pass and is
    not bounded this way (its runs are flagged, not compared).

With a prefix cache of a shared prefix of N tokens, the fastest first token skips the cached part:
a hit skips ``h(P) = 16 * min(floor(N / 16), floor((P - 1) / 16))`` tokens of a P-token prompt (the
prefix's whole blocks, short of the last prompt token; ``serving``'s rule), and the prefill of the
other ``P - h(P)`` after the ``h(P)`` cached (``performance.prefill_after_cached``) grows with both.
Over the prompts the run can draw (P at least the shortest, P_min) both are smallest at P_min or,
where the cap on the last token lifts, at ``16 floor(N / 16) + 1``: the bound is the faster of the two.
A miss prefills more than a hit of the same prompt, so it needs no candidate of its own.

On a pipeline split every token passes every stage in turn, so the bounds are those of the
whole model on one stage's ``tp`` GPUs (the stages' times add up to at least that). With M
micro-batches an iteration's prompt tokens are shared among them (``deployment.PipelineCosts``)
and the micro-batches run through the stages at once, so the prompt's last token waits only for
its own micro-batch's ``floor(P / M)`` or more tokens to pass every stage: the TTFT bound is that
many tokens' prefill (0 where M > P).

Throughput, open loop
    At a finite Poisson rate the arrivals are fixed by the seed, whatever the server does, and no
    request can finish before it is sent plus its best-case first token and ``O - 1`` best-case
    gaps. So the measured window lasts at least ``max_i(s_i + TTFT_min + (O_i - 1) ITL_min) - w``
    (``s_i`` request i's send, ``w`` the window's start) and throughput is at most the window's
    output tokens over that. Below saturation this is about the offered load, which no band of a
    faster server may promise to pass. A closed loop sends when a reply returns, so a faster
    server sends sooner and there is no such bound; every request sent at once (rate inf) gives
    one too loose to say anything, so neither is given one.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from .deployment import Split
from .performance import CEILING, Hardware, Workload, decode_step, prefill_after_cached, prefill_pass
from .serving import ServingConfig, draw_traffic

#: The accounting each bound uses, named in the report and the JSON.
TTFT_ACCOUNTING = (
    "prefill-first, unlimited token budget: each prompt prefilled alone the moment it arrives,"
    " all GPUs at the datasheet's bandwidth and peak, no queue, no host overhead"
)
ITL_ACCOUNTING = (
    "one decode pass per token for a batch of one at the prompt's length, all GPUs at the datasheet's"
    " bandwidth and peak, no host overhead"
)
#: What the simulated times under load are, beside the bounds.
SCHEDULED_NOTE = (
    "depends on the scheduler: this run's scheduler and load start at the ceiling's costs, which another"
    " schedule can beat; the best-case bounds cannot be beaten"
)


def best_case_times(
    hardware: Hardware, workload: Workload, prompt_tokens: int, split: Split | None = None, prefix_tokens: int = 0
) -> dict[str, float]:
    """Lower bounds on TTFT, ITL and TPOT (seconds) of a request whose prompt has at least
    ``prompt_tokens`` tokens and starts with a shared prefix of ``prefix_tokens`` that a prefix cache
    may hold (0: none), under any scheduler and any load (see the module docstring)."""
    gpus = hardware.count if split is None else split.tp
    ceiling = replace(hardware, count=gpus, costs=CEILING)
    shares = split.microbatches if split is not None and split.pp > 1 else 1

    def alone(tokens: int, cached: int | None = None) -> float:
        # A micro-batch's share of the tokens to prefill, through every stage (0 tokens: no time);
        # with ``cached`` (a prefix hit, 0 included) after that many cached tokens.
        share = tokens // shares
        if share == 0:
            return 0.0
        pass_workload = replace(workload, batch=1, context=0, prompt=share)
        if cached is None:
            return prefill_pass(ceiling, pass_workload).seconds
        return prefill_after_cached(ceiling, pass_workload, cached).seconds

    if prefix_tokens:
        whole = prefix_tokens // 16 * 16
        ttft = min(
            alone(p - hit, hit)
            for p in {prompt_tokens, max(prompt_tokens, whole + 1)}
            for hit in (min(whole, (p - 1) // 16 * 16),)
        )
    else:
        ttft = alone(prompt_tokens)
    step = decode_step(ceiling, replace(workload, batch=1, context=prompt_tokens, prompt=0)).seconds
    return {"ttft_mean_s": ttft, "itl_mean_s": step, "tpot_mean_s": step}


def bounds_report(
    hardware: Hardware, workload: Workload, prompt_tokens: int, split: Split | None = None, prefix_tokens: int = 0
) -> dict[str, Any]:
    """The bounds as ``simulate --json`` gives them under ``best_case``: each figure, and the
    accounting each uses, beside a note that the simulated times under load are scheduled ones."""
    ttft = TTFT_ACCOUNTING
    if prefix_tokens:
        ttft = ttft.replace("each prompt prefilled alone", "each prompt's uncached tokens prefilled alone after a hit")
    if split is not None and split.pp > 1 and split.microbatches > 1:
        ttft += (
            f"; on {split.microbatches} micro-batches, which pass the stages at once, only one micro-batch's"
            " share of those tokens (a floor of 1/M of them) must pass every stage"
        )
    return {
        **best_case_times(hardware, workload, prompt_tokens, split, prefix_tokens),
        "accounting": {"ttft": ttft, "itl": ITL_ACCOUNTING, "tpot": ITL_ACCOUNTING},
        "times_under_load": SCHEDULED_NOTE,
    }


#: The accounting of the throughput bound, and why a run has none.
THROUGHPUT_ACCOUNTING = (
    "open loop: each request's arrival fixed by the seed, served the moment it is sent at the best-case"
    " TTFT and ITL above; the last to finish sets the measured window's shortest length"
)
NO_THROUGHPUT_BOUND = (
    "none: a closed loop (or every request sent at once) sends as fast as the server replies, so its"
    " arrivals are not fixed"
)
REJECTED_NO_BOUND = (
    "none: some requests never fit in the KV cache and were turned away, so the measured tokens and the"
    " window's end are not the whole stream's"
)


def throughput_bound(
    config: ServingConfig, ttft_s: float, itl_s: float, warmup: int = 0, completed_all: bool = True
) -> float | None:
    """The highest output tokens/s any server could measure on ``config``'s open-loop stream of
    ``warmup`` + ``config.requests`` requests, the last ``config.requests`` measured (see the module
    docstring): ``sum(O_i) / (max_i(s_i + ttft_s + (O_i - 1) itl_s) - w)`` over the measured ones.
    None for a closed loop or rate inf, and where some request was rejected (``completed_all``
    False: its tokens and its finish would not count, so the sum over all would not bound)."""
    if not _open_loop(config) or not completed_all or config.requests < 1:
        return None
    total = warmup + config.requests
    sends, _, outputs = draw_traffic(config, total)
    start = min(sends[warmup:]) if warmup else 0.0
    latest = max(sends[i] + ttft_s + (outputs[i] - 1) * itl_s for i in range(warmup, total))
    tokens = sum(outputs[warmup:])
    return tokens / (latest - start) if latest > start else None


def _open_loop(config: ServingConfig) -> bool:
    """Whether ``config`` sends at times its seed fixes: a Poisson stream at a finite rate."""
    return config.concurrency is None and not math.isinf(config.rate)


def with_throughput_bound(
    bounds: dict[str, Any], config: ServingConfig, warmup: int = 0, runs: tuple[Any, ...] = ()
) -> dict[str, Any]:
    """``bounds`` (best-case times, their accounting) with ``throughput_tokens_per_s`` from
    ``throughput_bound`` at its TTFT and ITL (an ITL of 0 where it has none: a speculative run may
    emit several tokens a pass) and that bound's accounting, or None and why there is none. ``runs``
    are the results measured on this stream (a None is skipped): one that turned a request away
    leaves no bound."""
    completed_all = all(run is None or run.rejected == 0 for run in runs)
    value = throughput_bound(config, bounds["ttft_mean_s"], bounds.get("itl_mean_s", 0.0), warmup, completed_all)
    rule = THROUGHPUT_ACCOUNTING
    if "itl_mean_s" not in bounds:
        rule = rule.replace("TTFT and ITL above", "TTFT above, every later token at once (no gap bound)")
    if value is None:
        rule = REJECTED_NO_BOUND if _open_loop(config) and not completed_all else NO_THROUGHPUT_BOUND
    accounting = {**bounds.get("accounting", {}), "throughput": rule}
    return {**bounds, "throughput_tokens_per_s": value, "accounting": accounting}
