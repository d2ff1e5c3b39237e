"""Should a workload's prefill and decode run on separate GPUs? Chapter 8's verdict, from closed forms.

Built on ``roofline.disagg`` (the KV transfer, the pools' rates, the TTFT-limited prefill rate, the
ITL-limited decode batch) and ``performance.IterationCosts`` (an iteration that holds a prefill
beside running decodes), at the hardware's costs (the ceiling's by default).

Public API
    ``full_block_tokens(prefix_tokens, block_tokens=16)``
        The tokens of a shared prefix a block-hash cache reuses: only full blocks are cached (vLLM's
        automatic prefix caching), so ``floor(prefix / block) * block``.
    ``prefill_stall(hardware, workload, prompt, decodes, decode_context)`` -> ``Stall``
        One iteration of a shared (aggregated) server that prefills a ``prompt``-token prompt beside
        ``decodes`` running requests at ``decode_context`` tokens, against those decodes alone:
        ``IterationCosts.prefill(prompt, 0, decodes, decodes * decode_context)`` and ``decode_pass``; every
        running user waits the whole iteration for its next token.
    ``choose(hardware, workload, prompt, output, rate, ttft_slo_s, itl_slo_s, link, max_batch)``
        -> ``Choice``: the verdict for one pool of instances like ``hardware`` per phase.
        Decode batch ``B`` = the largest whose step at the mean context meets the ITL target
        (``disagg.itl_limited_batch``). Pools for ``rate`` requests/s:
        ``N_P = ceil(rate / R_TTFT)`` prefill instances, ``R_TTFT`` the most requests one takes with
        its mean TTFT (prefill + queue + transfer) within the target (``disagg.ttft_limited_rate``),
        and ``N_D = ceil(rate / R_D)`` decode instances at batch ``B`` (``disagg.pool_rates``).
        The verdict, in order: no batch meets the ITL target -> ``"neither"``; a prefill plus its
        transfer already misses the TTFT target -> ``"neither"``; the stall of one prefill inside a
        decode iteration of ``B`` users is within the ITL target -> ``"keep"`` (one pool meets both
        targets without paying a transfer or stranding a second pool); else ``"split"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .disagg import KvTransfer, itl_limited_batch, kv_transfer, pool_rates, ttft_limited_rate
from .errors import SpecError
from .performance import Hardware, Workload, decode_pass, iteration_costs
from .prefixcache import BLOCK_TOKENS


def full_block_tokens(prefix_tokens: int, block_tokens: int = BLOCK_TOKENS) -> int:
    """``floor(prefix / block) * block``: the part of a shared prefix held in full blocks."""
    for name, value in (("prefix_tokens", prefix_tokens), ("block_tokens", block_tokens)):
        if isinstance(value, bool) or not isinstance(value, int) or value < (0 if name == "prefix_tokens" else 1):
            raise SpecError(f"must be a whole number (at least 1 for a block), got {value!r}", field=name)
    return prefix_tokens // block_tokens * block_tokens


@dataclass(frozen=True)
class Stall:
    """A prefill inside a decode iteration, against the decodes alone."""

    iteration_s: float
    decode_s: float

    @property
    def ratio(self) -> float:
        """How many times its usual gap each running user waits: ``iteration / decode step``."""
        return self.iteration_s / self.decode_s


def prefill_stall(hardware: Hardware, workload: Workload, prompt: int, decodes: int, decode_context: int) -> Stall:
    """The iteration a ``prompt``-token prefill shares with ``decodes`` running requests (module docstring)."""
    if isinstance(decodes, bool) or not isinstance(decodes, int) or decodes < 1:
        raise SpecError(f"must be a whole number of at least 1, got {decodes!r}", field="decodes")
    # IterationCosts takes the decodes' contexts summed: each of them reads its own cache.
    summed = decodes * decode_context
    together = iteration_costs(hardware, workload).prefill(prompt, 0, decodes=decodes, decode_context=summed)
    alone = decode_pass(hardware, replace(workload, batch=decodes, context=decode_context, prompt=0), decodes)
    return Stall(together.seconds, alone.seconds)


@dataclass(frozen=True)
class Choice:
    """The verdict and the figures behind it."""

    verdict: str  # "split", "keep" or "neither"
    reason: str
    transfer: KvTransfer
    decode_batch: int
    stall: Stall | None
    prefill_instances: int | None
    decode_instances: int | None
    prefill_gpus_per_decode_gpu: float | None


def choose(
    hardware: Hardware,
    workload: Workload,
    prompt: int,
    output: int,
    rate: float,
    ttft_slo_s: float,
    itl_slo_s: float,
    link: str = "network",
    max_batch: int = 256,
) -> Choice:
    """Split prefill and decode, keep one pool, or neither meets the targets (module docstring)."""
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= 1e6:
        raise SpecError(f"must be above 0 and at most 1,000,000 requests/s, got {rate!r}", field="rate")
    transfer = kv_transfer(hardware, workload, prompt, link)
    batch = itl_limited_batch(hardware, workload, prompt, output, itl_slo_s, max_batch)
    if batch == 0:
        reason = "no decode batch, not even one user, meets the time-between-tokens target on this hardware"
        return Choice("neither", reason, transfer, 0, None, None, None, None)
    stall = prefill_stall(hardware, workload, prompt, batch, prompt + output // 2)
    prefill_rate = ttft_limited_rate(transfer.prefill_s, ttft_slo_s, transfer.seconds)
    if prefill_rate == 0:
        reason = "one prefill plus its KV transfer already takes longer than the time-to-first-token target"
        return Choice("neither", reason, transfer, batch, stall, None, None, None)
    rates = pool_rates(hardware, hardware, workload, prompt, output, batch)
    prefill_instances = math.ceil(rate / prefill_rate)
    decode_instances = math.ceil(rate / rates.decode_requests_per_s)
    ratio = rates.prefill_gpus_per_decode_gpu
    if stall.iteration_s <= itl_slo_s:
        reason = (
            "a prefill inside a decode iteration stays within the time-between-tokens target, so one pool meets "
            "both targets without a transfer or a second pool to keep busy"
        )
        return Choice("keep", reason, transfer, batch, stall, prefill_instances, decode_instances, ratio)
    reason = (
        f"a prefill inside a decode iteration makes every running user wait {stall.ratio:.1f} times its usual gap, "
        "past the time-between-tokens target; separate pools meet both targets"
    )
    return Choice("split", reason, transfer, batch, stall, prefill_instances, decode_instances, ratio)
