"""roofline: how fast a GPU can run an LLM, from spec sheets and model configs.

Standard library only, so the same code runs in CPython and, in the reader's
browser, in Pyodide.

Layout, lowest layer first. A module imports only from modules above it:

- ``errors``       SpecError, the one error for bad input, and "did you mean" hints.
- ``precisions``   number formats and their bytes per value.
- ``kvformats``    KV-cache formats: bytes per value plus their scales' share (KvFormat).
- ``formatting``   how numbers print (decimal SI units), for tables and reports.
- ``specs``        frozen, validated records: GpuSpec, ModelSpec, MoeSpec, MlaSpec.
- ``loader``       TOML spec files (``data/*.toml``) -> SpecSet, with located errors.
- ``architecture`` what a model implies: parameters, KV bytes per token, FLOPs per token.
                   A new per-model formula goes here.
- ``performance``  the roofline itself: Hardware, Workload, decode step, prefill,
                   memory, crossover. A new per-deployment formula goes here.
- ``kvcache``      the KV-cache chapter's answers, from architecture and performance:
                   cache by attention type, users that fit, the read cost, work saved,
                   paging, prefix sharing, swap against recompute.
- ``estimate``     one call combining them into an Estimate (what the CLI prints).
- ``sweep``        grids of estimates as rows, Markdown and CSV (tables, figures, bench).
- ``report``       human-readable text for one estimate.
- ``cli``          the ``roofline`` command; the only module that prints or exits.

Quick start::

    >>> from roofline import estimate
    >>> round(estimate("h100-sxm", "llama-3.1-8b").decode_tokens_per_s_per_user)
    209
"""

from .architecture import (
    active_parameters,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    total_parameters,
    weight_bytes,
)
from .errors import SpecError
from .estimate import Estimate, estimate, evaluate
from .kvcache import (
    AttentionCache,
    GenerationWork,
    PagingUse,
    StepSplit,
    SwapOrRecompute,
    attention_cache,
    generation_work,
    kv_equals_weights_context,
    kv_read_asymptote,
    lognormal_lengths,
    paging_use,
    prefix_sharing_savings,
    recompute_wins_between,
    step_split,
    swap_or_recompute,
    users_that_fit,
)
from .kvformats import KV_FORMATS, KvFormat, kv_bytes_per_value
from .loader import SpecSet, builtin_specs, load_specs, parse_specs, read_spec_file
from .performance import (
    Hardware,
    MemoryUse,
    Pass,
    Workload,
    crossover_batch,
    decode_pass,
    decode_step,
    gpus_to_fit,
    memory_use,
    prefill_pass,
    simple_crossover_batch,
    simple_prefill_seconds,
)
from .precisions import BYTES_PER_VALUE, PRECISIONS, bytes_per_value
from .specs import GpuSpec, MlaSpec, ModelSpec, MoeSpec

__all__ = [
    "BYTES_PER_VALUE",
    "KV_FORMATS",
    "PRECISIONS",
    "AttentionCache",
    "Estimate",
    "GenerationWork",
    "GpuSpec",
    "Hardware",
    "KvFormat",
    "MemoryUse",
    "MlaSpec",
    "ModelSpec",
    "MoeSpec",
    "PagingUse",
    "Pass",
    "SpecError",
    "SpecSet",
    "StepSplit",
    "SwapOrRecompute",
    "Workload",
    "active_parameters",
    "attention_cache",
    "builtin_specs",
    "bytes_per_value",
    "crossover_batch",
    "decode_pass",
    "decode_step",
    "estimate",
    "evaluate",
    "generation_work",
    "gpus_to_fit",
    "kv_bytes_per_value",
    "kv_cache_bytes",
    "kv_cache_bytes_per_token",
    "kv_equals_weights_context",
    "kv_read_asymptote",
    "load_specs",
    "lognormal_lengths",
    "memory_use",
    "paging_use",
    "parse_specs",
    "prefill_pass",
    "prefix_sharing_savings",
    "read_spec_file",
    "recompute_wins_between",
    "simple_crossover_batch",
    "simple_prefill_seconds",
    "step_split",
    "swap_or_recompute",
    "total_parameters",
    "users_that_fit",
    "weight_bytes",
]
