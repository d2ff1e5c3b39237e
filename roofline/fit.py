"""Why a deployment does not fit in memory, by how much, and which changes would make it fit.

The CLI's report and the page's calculator both explain a "does not fit" with
``memory_shortfall``, so the two cannot tell different stories. Three things
can overflow the usable memory ``U`` (see ``performance.memory_use``):

- the weights alone, ``W > U``;
- one user's KV cache beside them, ``context * KV bytes per token > U - W``;
- the batch's caches together, ``batch * context * KV bytes per token > U - W``.

``U - W`` is the KV pool, and the cache counts its copies over the GPUs
(``performance.kv_copies``).

Every remedy offered is checked by recomputing the memory with that one change
(or solved for exactly, as the longest context), so every piece of advice works.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from . import formatting as fmt
from .estimate import Estimate
from .performance import Hardware, Workload, gpus_to_fit, memory_use
from .precisions import bytes_per_value

#: Narrower formats tried, widest first, when fewer bytes per value might make it fit.
_NARROWER = ("fp8", "int4")


@dataclass(frozen=True)
class Shortfall:
    """What does not fit (with its bytes and the bytes available) and the changes that fix it."""

    #: "weights", "one user's KV cache" or "the KV cache of every user".
    what: str
    needed_bytes: float
    available_bytes: float
    #: One sentence naming the numbers.
    problem: str
    #: Changes, each checked to fit on its own, as short imperative phrases.
    remedies: tuple[str, ...]

    def sentence(self) -> str:
        """The problem, then the remedies: ``"... To fit: A; or B."``"""
        if not self.remedies:
            return self.problem
        return f"{self.problem} To fit: {'; or '.join(self.remedies)}."


def _fits(hardware: Hardware, workload: Workload) -> bool:
    return memory_use(hardware, workload).fits


def _gpus(count: int) -> str:
    return f"{count:,} GPU{'s' if count != 1 else ''}"


def memory_shortfall(estimate: Estimate) -> Shortfall | None:
    """None when the deployment fits; else what overflows, by how much, and what would fit.

    Remedies, in the order a reader would try them: fewer users, a shorter
    context, an 8-bit KV cache, fewer bytes per weight, more GPUs of this kind.
    """
    hardware, workload, memory = estimate.hardware, estimate.workload, estimate.memory
    if memory.fits:
        return None
    weights, usable = memory.weights_bytes, memory.usable_bytes
    free = usable - weights
    copies = estimate.kv_copies
    per_user = copies * workload.context * workload.kv_bytes_per_token
    on = f"{fmt.gigabytes(usable)} usable on {_gpus(hardware.count)}"
    if weights > usable:
        shortfall = ("weights", weights, usable)
        problem = f"The weights alone need {fmt.gigabytes(weights)} at {workload.weight_precision}, more than the {on}."
    elif per_user > free:
        shortfall = ("one user's KV cache", per_user, free)
        problem = (
            f"The weights ({fmt.gigabytes(weights)}) fit, but one user's KV cache at {workload.context:,} tokens"
            f" needs {fmt.gigabytes(per_user)}, more than the {fmt.gigabytes(free)} left beside them ({on})."
        )
    else:
        shortfall = ("the KV cache of every user", memory.kv_bytes, free)
        problem = (
            f"The weights fit, but {workload.batch:,} users at {workload.context:,} tokens need"
            f" {fmt.gigabytes(memory.kv_bytes)} of KV cache, more than the {fmt.gigabytes(free)} left beside"
            f" the weights ({on}); at most {memory.max_batch or 0:,} fit."
        )
    return Shortfall(*shortfall, problem=problem, remedies=tuple(_remedies(hardware, workload, free, copies)))


def _remedies(hardware: Hardware, workload: Workload, free: float, copies: float) -> list[str]:
    remedies = []
    per_token = copies * workload.kv_bytes_per_token  # every copy over the GPUs takes memory
    if free > 0 and workload.context:
        users = math.floor(free / (workload.context * per_token))
        if 1 <= users < workload.batch:
            remedies.append(f"serve at most {users:,} users at this context")
        longest = math.floor(free / (workload.batch * per_token))
        if longest >= 1:
            remedies.append(f"shorten the context to {longest:,} tokens or fewer")
    for precision in _NARROWER:
        if workload.context and bytes_per_value(precision) < bytes_per_value(workload.kv_precision):
            if _fits(hardware, replace(workload, kv_precision=precision)):
                remedies.append(f"cache keys and values in {precision} ({bytes_per_value(precision):g} byte per value)")
                break
    for precision in _NARROWER:
        if bytes_per_value(precision) < bytes_per_value(workload.weight_precision):
            if _fits(hardware, replace(workload, weight_precision=precision)):
                remedies.append(f"store the weights in {precision}")
                break
    needed = gpus_to_fit(hardware, workload)
    if needed > hardware.count:
        remedies.append(f"use {_gpus(needed)} of this kind")
    return remedies
