"""Why a deployment does not fit in memory, by how much, and which changes would make it fit.

The CLI's report and the page's calculator both explain a "does not fit" with
``memory_shortfall``, so the two cannot tell different stories. Three things
can overflow the usable memory ``U`` (see ``performance.memory_use``):

- the weights alone, ``W > U``;
- one user's KV cache beside them, ``shared + private > U - W``;
- the batch's caches together, ``shared + batch * private > U - W``

where, as ``performance.memory_use`` counts them, a shared prefix is held once for
the batch, a local layer holds at most its window, ``U - W`` is the KV pool, and the
cache counts its copies over the GPUs (``performance.kv_copies``). Every remedy is
found with that same function: the users are its largest batch (the report's "most
users that fit"), the context the longest that fits (searched, since windows and a
prefix make the cache grow unevenly), and the rest checked by recomputing the memory
with that one change, so every piece of advice works and none contradicts the report.
"""

from __future__ import annotations

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
    one_user = estimate.kv_copies * workload.kv_bytes_for(1)  # every copy over the GPUs takes memory
    on = f"{fmt.gigabytes(usable)} usable on {_gpus(hardware.count)}"
    if weights > usable:
        shortfall = ("weights", weights, usable)
        problem = f"The weights alone need {fmt.gigabytes(weights)} at {workload.weight_precision}, more than the {on}."
    elif one_user > free:
        shortfall = ("one user's KV cache", one_user, free)
        problem = (
            f"The weights ({fmt.gigabytes(weights)}) fit, but one user's KV cache at {workload.context:,} tokens"
            f" needs {fmt.gigabytes(one_user)}, more than the {fmt.gigabytes(free)} left beside them ({on})."
        )
    else:
        shortfall = ("the KV cache of every user", memory.kv_bytes, free)
        problem = (
            f"The weights fit, but {workload.batch:,} users at {workload.context:,} tokens need"
            f" {fmt.gigabytes(memory.kv_bytes)} of KV cache, more than the {fmt.gigabytes(free)} left beside"
            f" the weights ({on}); at most {memory.max_batch or 0:,} fit."
        )
    return Shortfall(*shortfall, problem=problem, remedies=tuple(_remedies(hardware, workload, memory.max_batch)))


def _with_context(workload: Workload, context: int) -> Workload:
    """``workload`` at ``context`` tokens, its shared prefix cut to fit inside them."""
    return replace(workload, context=context, shared_prefix=min(workload.shared_prefix, context))


def longest_context(hardware: Hardware, workload: Workload) -> int | None:
    """The longest context, below ``workload.context``, at which the batch fits; None if not even 1 token does.

    The memory used never falls as the context grows (a local layer's cache stops at its
    window, a global one's keeps growing, the shared prefix is held once), so a bisection
    over ``memory_use`` finds it exactly. A shared prefix longer than the answer is cut to it.
    """
    low, high = 1, workload.context - 1
    if high < low or not _fits(hardware, _with_context(workload, low)):
        return None
    while low < high:  # low fits; the answer is in [low, high]
        middle = (low + high + 1) // 2
        if _fits(hardware, _with_context(workload, middle)):
            low = middle
        else:
            high = middle - 1
    return low


def _remedies(hardware: Hardware, workload: Workload, max_batch: int | None) -> list[str]:
    remedies = []
    if max_batch and max_batch < workload.batch:
        remedies.append(f"serve at most {max_batch:,} user{'s' if max_batch != 1 else ''} at this context")
    longest = longest_context(hardware, workload) if workload.context else None
    if longest is not None:
        cut = " (and the shared prefix with it)" if longest < workload.shared_prefix else ""
        remedies.append(f"shorten the context to {longest:,} tokens or fewer{cut}")
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
    # Past the largest tensor-parallel degree gpus_to_fit counts pipeline stages, which an
    # estimate at that many GPUs (all tensor-parallel, KV heads copied) may not fit: offered
    # only when it does, as every remedy here.
    needed = gpus_to_fit(hardware, workload)
    if needed > hardware.count and _fits(replace(hardware, count=needed), workload):
        remedies.append(f"use {_gpus(needed)} of this kind")
    return remedies
