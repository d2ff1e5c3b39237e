"""One user's KV cache as a decode step reads it: the formulas of "Prefix Caching and Disaggregated Serving"."""

from __future__ import annotations

from .architecture import kv_cache_bytes
from .performance import Hardware, Pass, Workload, timed


def cache_read(hardware: Hardware, workload: Workload) -> Pass:
    """A decode step's read of one user's KV cache at the workload's context, timed by the
    roofline rule (``timed``: bytes ÷ bandwidth, as the read does no math)."""
    cache = kv_cache_bytes(workload.model, workload.context, workload.kv_precision)
    return timed(hardware, cache, 0.0)
