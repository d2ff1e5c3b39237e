"""roofline: how fast a GPU can run an LLM, from spec sheets and model configs.

Standard library only, so the same code runs in CPython and, in the reader's
browser, in Pyodide.

Layout, lowest layer first. A module imports only from modules above it:

- ``errors``       SpecError, the one error for bad input, and "did you mean" hints.
- ``precisions``   number formats and their bytes per value.
- ``formatting``   how numbers print (decimal SI units), for tables and reports.
- ``specs``        frozen, validated records: GpuSpec, ModelSpec, MoeSpec, MlaSpec.
- ``loader``       TOML spec files (``data/*.toml``) -> SpecSet, with located errors.
- ``architecture`` what a model implies: parameters, KV bytes per token, FLOPs per token.
                   A new per-model formula goes here.
- ``performance``  the roofline itself: Hardware, Workload, decode step, prefill,
                   memory, crossover, the cost of one serving iteration.
                   A new per-deployment formula goes here.
- ``estimate``     one call combining them into an Estimate (what the CLI prints).
- ``sweep``        grids of estimates as rows, Markdown and CSV (tables, figures, bench).
- ``serving``      a deterministic discrete-event simulator of a server: Poisson
                   arrivals, static / continuous / chunked batching, paged KV
                   admission; TTFT, TPOT, throughput, goodput. Times from performance.
- ``report``       human-readable text for one estimate or one simulation.
- ``cli``          the ``roofline`` command; the only module that prints or exits.

Quick start::

    >>> from roofline import estimate
    >>> round(estimate("h100-sxm", "llama-3.1-8b").decode_tokens_per_s_per_user)
    209
"""

from .architecture import (
    active_parameters,
    kv_cache_bytes_per_token,
    total_parameters,
    weight_bytes,
)
from .errors import SpecError
from .estimate import Estimate, estimate, evaluate
from .loader import SpecSet, builtin_specs, load_specs, parse_specs, read_spec_file
from .performance import (
    Hardware,
    IterationCosts,
    MemoryUse,
    Pass,
    Workload,
    crossover_batch,
    decode_pass,
    decode_step,
    gpus_to_fit,
    iteration_costs,
    memory_use,
    prefill_pass,
    simple_crossover_batch,
    simple_prefill_seconds,
)
from .precisions import BYTES_PER_VALUE, PRECISIONS, bytes_per_value
from .serving import Lengths, ServingConfig, SimulationResult, parse_lengths, simulate
from .specs import GpuSpec, MlaSpec, ModelSpec, MoeSpec

__all__ = [
    "BYTES_PER_VALUE",
    "PRECISIONS",
    "Estimate",
    "GpuSpec",
    "Hardware",
    "IterationCosts",
    "Lengths",
    "MemoryUse",
    "MlaSpec",
    "ModelSpec",
    "MoeSpec",
    "Pass",
    "ServingConfig",
    "SimulationResult",
    "SpecError",
    "SpecSet",
    "Workload",
    "active_parameters",
    "builtin_specs",
    "bytes_per_value",
    "crossover_batch",
    "decode_pass",
    "decode_step",
    "estimate",
    "evaluate",
    "gpus_to_fit",
    "iteration_costs",
    "kv_cache_bytes_per_token",
    "load_specs",
    "memory_use",
    "parse_lengths",
    "parse_specs",
    "prefill_pass",
    "read_spec_file",
    "simple_crossover_batch",
    "simple_prefill_seconds",
    "simulate",
    "total_parameters",
    "weight_bytes",
]
