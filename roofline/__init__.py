"""roofline: how fast a GPU can run an LLM, from spec sheets and model configs.

Standard library only, so the same code runs in CPython and, in the reader's
browser, in Pyodide.

Layout, lowest layer first. A module imports only from modules above it:

- ``errors``       SpecError, the one error for bad input, and "did you mean" hints.
- ``parsing``      numbers as a person types them: ASCII digits, one rule for the CLI.
- ``precisions``   number formats: bytes per value with their scales and zero points
                   (ScaleLayout, effective_bits), and the math each feeds (weight-only, W8A8, W4A4).
- ``kvformats``    KV-cache formats: bytes per value plus their scales' share (KvFormat).
- ``formatting``   how numbers print (decimal SI units), for tables and reports.
- ``memorykinds``  which memory a figure is (nameplate, driver-reported, usable, KV pool,
                   weights + KV pool): one name and one value each, for every page.
- ``specs``        frozen, validated records: GpuSpec, ModelSpec, MoeSpec, MlaSpec.
                   A feature a new architecture needs (a bias, a norm) is a field here.
- ``loader``       TOML spec files (``data/*.toml``) -> SpecSet, with located errors; draft-only
                   entries (a head such as EAGLE-3, ``draft_for``) kept apart from the models.
- ``forms``        a calculator's declared inputs, rules and outputs (Form, Field, Rule, Output),
                   checked alike in CPython and, in the reader's browser, in Pyodide; GPU and
                   model menus from a SpecSet, which also take the reader's own entry.
- ``hfconfig``     a Hugging Face ``config.json`` -> ModelSpec, one reader per supported
                   ``architectures`` value. A new model family goes here.
- ``ownspecs``     what ``--model``/``--gpu`` name: an id, or the path of the reader's own
                   config.json or GPU file (read and added to the SpecSet); a model as a
                   spec-file entry (``roofline model import``).
- ``architecture`` what a model implies: parameters, KV bytes per token, FLOPs per token.
                   A new per-model formula goes here.
- ``version``      the package's version (a calibration file names the one it was fitted for).
- ``parallelism``  splitting a model over GPUs: usable tensor-parallel degrees (whole heads per
                   GPU), pipeline stages, the bubble, a pipeline's latency and interval, the best degree.
- ``performance``  the roofline itself: Hardware, Workload, decode step, prefill,
                   memory, crossover, tensor-parallel all-reduces and KV copies, the
                   cost of one serving iteration, and CostModel (ceiling or expected).
                   A new per-deployment formula goes here; ``timed`` times any pass.
- ``calibration``  the expected-mode costs fitted to published runs (``data/calibration.toml``)
                   and their band.
- ``rule``         the seed's rule of thumb by name: every weight byte per step, 2·N FLOPs
                   per token at the 16-bit peak, crossover = peak ÷ bandwidth · bytes ÷ 2.
- ``explain``      why the ceiling differs from the rule, one cause at a time, in words.
- ``kvcache``      the KV-cache chapter's answers, from architecture and performance:
                   cache by attention type, users that fit, the read cost, work saved,
                   paging, prefix sharing, swap against recompute.
- ``quantization`` the quantization chapter's answers: which math a format runs on which GPU
                   (its stated fallback), the 16/q_eff ceiling, the critical batch F_math·b/(2·B_mem),
                   the KV slope and break-even context, users by format, dequantization cost.
- ``deployment``   the parallelism chapter's answers: a split of tensor-parallel groups and
                   pipeline stages (Split), each stage's pass and the hops, a pipeline's
                   latency and interval, memory per GPU, the best split and TP degree.
- ``moelayout``    the mixture-of-experts chapter's answers: tensor- and expert-parallel layouts
                   of a GPU count side by side (each the package's own step) or why one cannot
                   serve, the batch where EP overtakes TP, a batched prefill on EP.
- ``estimate``     one call combining them into an Estimate (what the CLI prints).
- ``fit``          why an estimate does not fit in memory, and changes checked to make it fit.
- ``measured``     published measurements (``data/measurements.toml``) beside their ceilings.
- ``sweep``        grids of estimates as rows, Markdown and CSV (tables, figures, bench).
- ``speculative``  speculative decoding: tokens per verification step τ(α, γ), the
                   round's cost from performance's decode pass (``Rounds``: one deployment's
                   rounds at any batch, for curves and searches), the batch-aware
                   speedup, the break-even batch, α solved from a measured speedup.
- ``spectree``     tree verification: a round whose drafter grows a tree (depth, top-k, N
                   tokens verified per user); the pass checks B·N tokens, so the break-even
                   batch scales with τ / N, not τ / (γ+1).
- ``specsampling`` acceptance under sampling: α = Σ min(p, q) = 1 − TV(p, q), the
                   rejection-sampling rule's output distribution (the target's p), softmax
                   at a temperature.
- ``acceptance``   published acceptance (``data/acceptance.toml``): τ or α by method,
                   model and task, read with the spec loader's guarantees.
- ``prefixcache``  what a prefix-cache hit saves (prefill FLOPs and seconds), the memory cached
                   prefixes take from the running batch, the LRU hit rate of G prefix groups,
                   and the LRU cache the simulator keeps.
- ``disagg``       disaggregated prefill and decode: the KV transfer over the GPU's cited links
                   beside its prefill, the rate-matched prefill:decode ratio, goodput estimates.
- ``splitchoice``  chapter 8's verdict "split prefill and decode, keep one pool, or neither meets
                   the targets" from ``disagg``'s closed forms and a prefill's stall inside a decode
                   iteration; the tokens of a prefix a block-hash cache reuses (full blocks only).
- ``serving``      a deterministic discrete-event simulator of a server: open or
                   closed-loop traffic, static / continuous / chunked batching, paged
                   KV blocks with preemption or reservation, an optional prefix cache;
                   TTFT, TPOT, ITL, throughput, goodput. Times from performance.IterationCosts.
- ``fleet``        replicas and a warm-up window around ``serving``.
- ``disaggserving`` ``serving``'s runs as a prefill pool and a decode pool, the KV transfer
                   between them (``simulate --disaggregate P:D``).
- ``specserving``  the serving simulator with speculative decoding: continuous batching whose
                   decode iterations verify γ+1 tokens per request and emit a random accepted
                   run, drawn from each request's own hash stream of the seed, draft steps charged
                   (``simulate --speculate-*``).
- ``benchmarks``   published serving runs (a CSV) beside their ceiling and the simulator's
                   expected figure: what ``scripts/fit_expected.py`` fits on.
- ``quiz``         graded questions with fresh numbers: templates a chapter declares (its
                   ``quiz.py``), seeded draws, strict reading of a typed answer, known slips.
- ``report``       human-readable text for one estimate, one simulation or one speculation.
- ``cli``          the ``roofline`` command; the only module that prints or exits.

A new chapter's formulas go in a module of their own here, ``roofline/<topic>.py``, placed
in this list by what it imports (as ``kvcache`` and ``serving`` are): the chapter's page,
Run cells and calculators all import it, and the reader's browser has this package and
nothing else. The browser imports every module of the package before the first Run
(``PRE_IMPORT`` in ``docs/javascripts/runtime/boot.mjs``), a new one included.

Quick start::

    >>> from roofline import estimate
    >>> round(estimate("h100-sxm", "llama-3.1-8b").decode_tokens_per_s_per_user)
    223
    >>> round(estimate("h100-sxm", "llama-3.1-8b").rule.decode_tokens_per_s_per_user)
    209
"""

from .architecture import (
    active_parameters,
    kv_cache_bytes,
    kv_cache_bytes_per_token,
    total_parameters,
    weight_bytes,
)
from .calibration import Calibration, cost_model, load_calibration
from .errors import SpecError
from .estimate import Estimate, Expected, estimate, evaluate
from .explain import decode_steps, explain_decode, explain_prefill, prefill_steps
from .fit import Shortfall, memory_shortfall
from .kvcache import (
    AttentionCache,
    GenerationWork,
    PagingUse,
    StepSplit,
    SwapCost,
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
    swap_cost,
    swap_or_recompute,
    users_that_fit,
    with_kv_heads,
)
from .kvformats import KV_FORMATS, KvFormat, kv_bytes_per_value
from .loader import SpecSet, builtin_specs, load_specs, parse_specs, read_spec_file
from .performance import (
    CEILING,
    CostModel,
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
    kv_copies,
    math_precision,
    memory_use,
    prefill_after_cached,
    prefill_pass,
    tensor_parallel_degrees,
    timed,
)
from .precisions import BYTES_PER_VALUE, FORMATS, PRECISIONS, NumberFormat, bytes_per_value
from .rule import (
    RuleOfThumb,
    rule_crossover_batch,
    rule_decode_tokens_per_s_per_user,
    rule_of_thumb,
    rule_prefill_seconds,
)
from .serving import Lengths, ServingConfig, SimulationResult, parse_lengths, simulate, simulate_expected
from .specs import GpuSpec, InterconnectSpec, MlaSpec, ModelSpec, MoeSpec
from .speculative import Round, Speculation, break_even_batch, speculate, speculation_round, tokens_per_step

#: The rule-of-thumb functions under the names the package used before the rule had its own module.
simple_crossover_batch = rule_crossover_batch
simple_prefill_seconds = rule_prefill_seconds

__all__ = [
    "BYTES_PER_VALUE",
    "CEILING",
    "FORMATS",
    "KV_FORMATS",
    "PRECISIONS",
    "AttentionCache",
    "Calibration",
    "CostModel",
    "Estimate",
    "Expected",
    "GenerationWork",
    "GpuSpec",
    "Hardware",
    "InterconnectSpec",
    "IterationCosts",
    "KvFormat",
    "Lengths",
    "MemoryUse",
    "MlaSpec",
    "ModelSpec",
    "MoeSpec",
    "NumberFormat",
    "PagingUse",
    "Pass",
    "Round",
    "RuleOfThumb",
    "ServingConfig",
    "Shortfall",
    "SimulationResult",
    "SpecError",
    "SpecSet",
    "Speculation",
    "StepSplit",
    "SwapCost",
    "SwapOrRecompute",
    "Workload",
    "active_parameters",
    "attention_cache",
    "break_even_batch",
    "builtin_specs",
    "bytes_per_value",
    "cost_model",
    "crossover_batch",
    "decode_pass",
    "decode_step",
    "decode_steps",
    "estimate",
    "evaluate",
    "explain_decode",
    "explain_prefill",
    "generation_work",
    "gpus_to_fit",
    "iteration_costs",
    "kv_bytes_per_value",
    "kv_cache_bytes",
    "kv_cache_bytes_per_token",
    "kv_copies",
    "kv_equals_weights_context",
    "kv_read_asymptote",
    "load_calibration",
    "load_specs",
    "lognormal_lengths",
    "math_precision",
    "memory_shortfall",
    "memory_use",
    "paging_use",
    "parse_lengths",
    "parse_specs",
    "prefill_after_cached",
    "prefill_pass",
    "prefill_steps",
    "prefix_sharing_savings",
    "read_spec_file",
    "recompute_wins_between",
    "rule_crossover_batch",
    "rule_decode_tokens_per_s_per_user",
    "rule_of_thumb",
    "rule_prefill_seconds",
    "simple_crossover_batch",
    "simple_prefill_seconds",
    "simulate",
    "simulate_expected",
    "speculate",
    "speculation_round",
    "step_split",
    "swap_cost",
    "swap_or_recompute",
    "tensor_parallel_degrees",
    "timed",
    "tokens_per_step",
    "total_parameters",
    "users_that_fit",
    "weight_bytes",
    "with_kv_heads",
]
