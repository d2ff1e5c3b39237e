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
whole model on one stage's ``tp`` GPUs (the stages' times add up to at least that).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .deployment import Split
from .performance import CEILING, Hardware, Workload, decode_step, prefill_after_cached, prefill_pass

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
    if prefix_tokens:
        whole = prefix_tokens // 16 * 16
        ttft = min(
            prefill_after_cached(ceiling, replace(workload, batch=1, context=0, prompt=p - hit), hit).seconds
            for p in {prompt_tokens, max(prompt_tokens, whole + 1)}
            for hit in (min(whole, (p - 1) // 16 * 16),)
        )
    else:
        ttft = prefill_pass(ceiling, replace(workload, batch=1, context=0, prompt=prompt_tokens)).seconds
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
    return {
        **best_case_times(hardware, workload, prompt_tokens, split, prefix_tokens),
        "accounting": {"ttft": ttft, "itl": ITL_ACCOUNTING, "tpot": ITL_ACCOUNTING},
        "times_under_load": SCHEDULED_NOTE,
    }
