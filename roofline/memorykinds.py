"""Which memory a figure is: one name and one value for each kind a page may show.

A GPU's memory appears as several numbers, and a bare "80 GB" or "85 GB usable" does not say
which. One H100 SXM, for example:

- ``nameplate``: what it is sold as, the datasheet's ``memory_bytes`` (80 GB);
- ``driver-reported``: what the driver reports, ``addressable_bytes`` (81,559 MiB, 85.5 GB);
- ``usable``: driver-reported less the engine's workspace, what weights and cache may share,
  ``Hardware.usable_memory_bytes`` (85.0 GB);
- ``KV pool``: the share ``u`` of what the weights leave that the engine gives the cache,
  ``u * (usable - weights)`` (``Hardware.kv_pool_bytes``);
- ``weights + KV pool``: the most that weights and cache may fill, so the figure a batch is
  measured against (``MemoryUse.usable_bytes``; 81.6 GB for Llama 3.1 8B in bf16).

Every page, calculator and report names each figure with ``labelled``, so one H100 never
appears as "85.0 GB usable" on one page and "81.6 GB usable" on another (issue 40).
"""

from __future__ import annotations

from . import formatting as fmt
from .errors import SpecError

NAMEPLATE = "nameplate"
DRIVER = "driver-reported"
USABLE = "usable"
POOL = "KV pool"
BUDGET = "weights + KV pool"
#: Every kind, in the order a reader meets them (largest to smallest but the nameplate).
KINDS = (NAMEPLATE, DRIVER, USABLE, BUDGET, POOL)


def memory_of(hardware, kind: str, weights_bytes: float = 0.0) -> float:
    """Bytes of memory of ``kind`` on all of ``hardware``'s GPUs (``weights_bytes`` sizes the pool):

    nameplate = GPUs * memory_bytes; driver-reported = GPUs * addressable_bytes;
    usable = GPUs * (addressable - workspace); KV pool = u * (usable - weights), 0 when the
    weights fill it; weights + KV pool = weights + that pool (usable when the weights overflow)."""
    if kind == NAMEPLATE:
        return hardware.memory_bytes
    if kind == DRIVER:
        return hardware.addressable_memory_bytes
    if kind == USABLE:
        return hardware.usable_memory_bytes
    pool = hardware.kv_pool_bytes(weights_bytes)
    if kind == POOL:
        return pool
    if kind == BUDGET:
        return weights_bytes + pool if pool > 0 else hardware.usable_memory_bytes
    raise SpecError(f"unknown memory kind {kind!r}", field="kind", hint="choose one of " + ", ".join(KINDS))


def labelled(kind: str, value_bytes: float, digits: int = 1) -> str:
    """``value_bytes`` as gigabytes followed by the name of its kind: ``"85.0 GB usable"``."""
    if kind not in KINDS:
        raise SpecError(f"unknown memory kind {kind!r}", field="kind", hint="choose one of " + ", ".join(KINDS))
    return f"{fmt.gigabytes(value_bytes, digits)} {kind}"
