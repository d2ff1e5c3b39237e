"""The ``roofline`` command. Bad input ends with one line on stderr and exit status 2.

roofline estimate --gpu h100-sxm --model llama-3.1-8b [--json]
roofline list gpus|models|precisions|kv-precisions
roofline validate FILE...
roofline table [--gpu ID] [--model ID ...] [--precisions P,P] [--format markdown|csv|text]
roofline simulate --gpu ID --model ID [--policy static|continuous|chunked] [--admission paged|reserve]
                  [--rate R|inf | --concurrency N] ... [--json]
roofline speculate --gpu ID --model ID --gamma K (--alpha A | --speedup S) [--draft MODEL] [--draft-cost C] ... [--json]
roofline model import CONFIG.json [--id ID] [--name NAME] [--source URL] [-o FILE]

Wherever a command takes ``--model``, it takes the path of a Hugging Face
config.json too, and ``--gpu`` the path of a GPU file (TOML or JSON): see
``ownspecs``. Nothing is fetched from the network.

Exit status: 0 done; 1 the output could not be written (a full disk, a closed
pipe), said in one line; 2 bad input, or input that needs more memory than the
process gets (MemoryError), said in one line; 130 interrupted (Ctrl-C), silently.
Every number printed is finite, and ``--json`` is strict JSON (no NaN, no Infinity).
"""

from __future__ import annotations

import argparse
import errno
import functools
import json
import math
import os
import re
import sys
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from . import architecture as arch
from . import formatting as fmt
from .calibration import COSTS, Calibration, GroundedCosts, expected_costs, load_calibration
from .deployment import (
    PARALLEL,
    Deployment,
    Split,
    best_tp_degree,
    deploy,
    deployment_dict,
    hops_across_nodes,
    split_for,
)
from .disaggserving import KV_LINK_CHOICES, parse_pools, simulate_disaggregated
from .epdeploy import (
    EXPERT_PARALLEL,
    ExpertLayout,
    check_layout,
    ep_band,
    expected_dict,
    expert_costs,
    expert_dict,
    expert_report,
    expert_simulation_lines,
    expert_step,
    simulated_expert_figures,
    widened,
)
from .errors import SHOWN_LENGTH, SpecError, did_you_mean, one_line, shortened, shown
from .estimate import Estimate, estimate
from .explain import math_choice
from .fleet import MAX_REPLICAS, fleet_facts, replicas_lines, replicated, simulate_fleet
from .harness import DEFAULT_ENGINE, DEFAULT_HARNESS, ENGINES, HARNESSES, harness_choices
from .hfconfig import FAMILIES, read_config
from .kvformats import KV_FORMAT_NAMES, KV_FORMATS
from .load_bounds import (
    SCHEDULED_NOTE,
    TTFT_ACCOUNTING,
    best_case_times,
    bounds_report,
    with_throughput_bound,
)
from .loader import SpecSet, builtin_specs, check_id, check_same_compute, load_specs, read_spec_file
from .measured import load_measurements
from .moe import (
    ALLTOALL_BYTES_PER_VALUE,
    DEFAULT_COMBINE_PRECISION,
    DEFAULT_DISPATCH_PRECISION,
    DEFAULT_EXPERT_IMBALANCE,
)
from .ownspecs import config_path, model_entry_toml, resolve_gpu, resolve_model
from .parallelism import pipeline_bubble_fraction
from .parsing import parse_real, parse_whole
from .performance import DEFAULT_USABLE_FRACTION, Hardware, Workload, gpu_count_problem, kv_copies
from .precisions import AUTO, DEFAULT_COMPUTE_PRECISION, FORMATS, PRECISIONS, number_format
from .quantization import critical_batch_for
from .ratesearch import DEFAULT_TRIES, TRIES_RANGE, rate_search_lines, search_rate
from .report import deployment_report, simulation_report, speculation_lines, speculation_report, text_report
from .serving import (
    ADMISSIONS,
    CONCURRENCY_RANGE,
    MAX_BATCH_RANGE,
    MAX_LENGTH_TOKENS,
    MAX_REQUESTS,
    POLICIES,
    PREEMPTIONS,
    RATE_RANGE,
    SEED_RANGE,
    SLO_RANGE_S,
    TOKEN_BUDGET_RANGE,
    Lengths,
    ServingConfig,
    SimulationResult,
    finished_run,
    parse_lengths,
)
from .specs import SOURCE_LENGTH
from .specserving import Drafting, simulate_speculative
from .speculative import GAMMA_RANGE, speculate
from .sweep import Table, decode_prefill_rows, decode_prefill_table
from .traces import BUILTIN_TRACES, LengthTrace, check_context, load_trace

EXIT_OUTPUT_FAILED = 1
#: Weights' precision when neither --precision nor the model (a config's quantization) gives one.
DEFAULT_PRECISION = "bf16"
_PRECISION_HELP = (
    "weight precision (default: the model's published format, as a config.json's quantization_config"
    " states it, else bf16)"
)
EXIT_BAD_INPUT = 2
#: `roofline table`'s defaults: 16, 8 and 4-bit weights and a 2,000-token prompt (the first chapter's choice too).
TABLE_PRECISIONS = ("bf16", "fp8", "int4")
TABLE_PROMPT_TOKENS = 2000
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a Ctrl-C

# Physically sensible ranges of the numbers the command line takes, inclusive.
# With specs inside theirs (roofline/specs.py), every estimate inside these is
# a finite number, so nothing printed can be inf or NaN.
#: GPUs working together: 1 to the size of the largest clusters built.
GPUS_RANGE = (1, 100_000)
#: Users decoding in one batch.
BATCH_RANGE = (1, 1_000_000)
#: Tokens cached per user: up to 100 M, ten times the longest context window offered.
CONTEXT_RANGE = (0, 100_000_000)
#: Prompt tokens to prefill (``table`` needs at least 1).
PROMPT_RANGE = (0, 100_000_000)
TABLE_PROMPT_RANGE = (1, 100_000_000)
#: Share of what the weights leave that the KV cache gets: 1% to all of it.
USABLE_FRACTION_RANGE = (0.01, 1.0)
#: Fixed latency of one all-reduce, seconds: none to a second.
ALLREDUCE_LATENCY_RANGE = (0.0, 1.0)

GPU_HELP = "GPU id (see: roofline list gpus), or the path of a GPU file (TOML or JSON)"
MODEL_HELP = "model id (see: roofline list models), or the path of a Hugging Face config.json"

#: Why writing stdout can fail: a closed pipe, a full disk or quota, a dead device.
_WRITE_FAILURES = {
    getattr(errno, name) for name in ("EPIPE", "ENOSPC", "EDQUOT", "EFBIG", "EIO") if hasattr(errno, name)
}
#: How ``--rate`` asks for every request at once (a benchmark's "request rate inf").
_EVERY_AT_ONCE = ("inf", "infinity")
#: Longest argparse message echoed, and longest value quoted in it (``--policy`` with 100 kB of text).
_ARGPARSE_MESSAGE_LENGTH = 400
#: An option value that starts with "-" but is meant as a value: a negative number or range
#: (``--output -5:10``), so the parser says what is wrong with it, not "expected one argument".
_NEGATIVE_VALUE = re.compile(r"^-[0-9.][0-9.,_:eE+-]*$")


class _Parser(argparse.ArgumentParser):
    """argparse, but an error is one line (no usage block) so scripts and readers see only the cause,
    echoing no more of what was typed than a line holds, and a negative number is a value."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_VALUE  # argparse's own: -5 and -.5 only

    def error(self, message: str) -> NoReturn:
        # argparse quotes a bad choice with repr(); a 100 kB value is cut like any echoed input.
        message = re.sub(rf"'[^']{{{SHOWN_LENGTH},}}'", lambda quoted: shown(quoted.group(0)[1:-1]), message)
        message = shortened(message, _ARGPARSE_MESSAGE_LENGTH)
        self.exit(EXIT_BAD_INPUT, one_line(f"{self.prog}: error: {message} (see {self.prog} --help)") + "\n")


def _span(bounds: tuple[int, int]) -> str:
    return f"{bounds[0]:,} to {bounds[1]:,}"


def _argument(parse: Callable[[str], object]) -> Callable[[str], object]:
    """``parse`` for argparse: its SpecError becomes argparse's one-line error."""

    def checked(text: str) -> object:
        try:
            return parse(text)
        except SpecError as error:
            raise argparse.ArgumentTypeError(error.message + (f" ({error.hint})" if error.hint else "")) from None

    return checked


def _whole_number(bounds: tuple[int, int]) -> Callable[[str], int]:
    """A parser for a whole number within ``bounds``, written as ``parsing.parse_whole`` takes it."""
    return _argument(lambda text: parse_whole(text, bounds))


def _precision(text: str) -> str:
    if text not in PRECISIONS:
        hint = did_you_mean(text[:40], PRECISIONS) or "choose one of " + ", ".join(PRECISIONS)
        raise argparse.ArgumentTypeError(f"unknown precision {shown(text)} ({hint})")
    return text


def _compute_precision(text: str) -> str:
    return AUTO if text == AUTO else _precision(text)


def _kv_precision(text: str) -> str:
    if text not in KV_FORMAT_NAMES:
        hint = did_you_mean(text[:40], KV_FORMAT_NAMES) or "choose one of " + ", ".join(KV_FORMAT_NAMES)
        raise argparse.ArgumentTypeError(f"unknown precision {shown(text)} for the KV cache ({hint})")
    return text


def _precision_list(text: str) -> tuple[str, ...]:
    """``"bf16, int4"`` -> ``("bf16", "int4")``; repeats are dropped, and an empty list is an error."""
    chosen = tuple(dict.fromkeys(_precision(part.strip()) for part in text.split(",") if part.strip()))
    if not chosen:
        raise argparse.ArgumentTypeError(f"needs at least one precision, got {shown(text)} (for example bf16,fp8,int4)")
    return chosen


def _number_in(bounds: tuple[float, float], *, infinite: bool = False) -> Callable[[str], float]:
    """A parser for a finite number within ``bounds`` (a rate, a latency target, a share of memory),
    written as ``parsing.parse_real`` takes it; with ``infinite``, ``inf`` too (``--rate inf``)."""

    def parse(text: str) -> float:
        if infinite and text.strip().lower() in _EVERY_AT_ONCE:
            return math.inf
        try:
            return parse_real(text, bounds)
        except SpecError as error:
            if infinite and error.message.startswith("must be a number,"):
                words = error.message.replace("a number,", "a number or inf (every request at time 0),", 1)
                raise SpecError(words) from None
            raise

    return _argument(parse)


_fraction = _number_in(USABLE_FRACTION_RANGE)


def _lengths(option: str) -> Callable[[str], object]:
    return _argument(lambda text: parse_lengths(text, option))


def _add_specs_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--specs",
        nargs="+",
        default=[],
        metavar="FILE",
        help="extra TOML spec files; their entries add to or replace the built-in ones",
    )


def _add_split_options(parser: argparse.ArgumentParser) -> None:
    """How the GPUs split the model and what each all-reduce costs: estimate's and simulate's options alike."""
    parser.add_argument(
        "--parallel",
        choices=(*PARALLEL, *EXPERT_PARALLEL),
        default="tp",
        help="how the --gpus GPUs split the model: tp, every layer over all of them (default); pp, one GPU"
        " per pipeline stage; tpxpp, --pp-stages stages of tensor-parallel groups; ep, a mixture of experts'"
        " experts spread over the GPUs with data-parallel attention; tpxep, the same with attention"
        " tensor-parallel over groups of --tp GPUs",
    )
    parser.add_argument(
        "--dp-attention",
        "--attention-dp",
        dest="attention_dp",
        action="store_true",
        help="data-parallel attention: each GPU keeps its own users' cache (a latent MLA cache is"
        " otherwise held whole by every GPU); always so under --parallel ep",
    )
    parser.add_argument(
        "--pp-stages",
        type=_whole_number(GPUS_RANGE),
        default=None,
        metavar="N",
        help="pipeline stages for --parallel tpxpp (a divisor of --gpus, at most the model's layers)",
    )
    parser.add_argument(
        "--microbatches",
        type=_whole_number(BATCH_RANGE),
        default=None,
        metavar="M",
        help="groups of users in flight through a pipeline, --parallel pp or tpxpp only (default 1)",
    )
    parser.add_argument(
        "--allreduce-latency",
        type=_number_in(ALLREDUCE_LATENCY_RANGE),
        default=None,
        metavar="S",
        help="fixed seconds per all-reduce whatever the GPU count, overriding the GPU spec's measured presets",
    )
    parser.add_argument(
        "--allreduce-preset",
        default=None,
        metavar="NAME",
        help="charge each all-reduce the GPU spec's preset NAME at this GPU count (nccl, vllm_custom,"
        " custom_oneshot) instead of the smallest",
    )


def _add_expert_options(parser: argparse.ArgumentParser) -> None:
    """``--parallel ep|tpxep``'s options (``roofline.epdeploy``), estimate's and simulate's alike."""
    parser.add_argument(
        "--tp",
        type=_whole_number(GPUS_RANGE),
        default=None,
        metavar="N",
        help="GPUs each attention group splits attention over, --parallel tpxep only (a divisor of --gpus)",
    )
    parser.add_argument(
        "--ep",
        type=_whole_number(GPUS_RANGE),
        default=None,
        metavar="N",
        help="expert-parallel ranks for --parallel ep: a divisor of the model's routed experts (default --gpus)",
    )
    parser.add_argument(
        "--expert-imbalance",
        type=_number_in((0.0, 1e3)),
        default=None,
        metavar="F",
        help="busiest rank's routed tokens over the mean, 1 or more (default 1, uniform routing; TensorRT-LLM"
        " measured 2.564 on DeepSeek-R1 at EP32 without its load balancer, 1.109 with it)",
    )
    parser.add_argument(
        "--redundant-experts",
        type=_whole_number((0, 100_000)),
        default=None,
        metavar="R",
        help="extra expert slots holding copies of hot experts, so E + R must divide by --ep (default 0;"
        " DeepSeek serves 256 experts in 288 slots)",
    )
    parser.add_argument(
        "--dispatch-precision",
        choices=tuple(ALLTOALL_BYTES_PER_VALUE),
        default=None,
        help="precision of the all-to-all dispatch (default fp8 with its scales, DeepSeek's)",
    )
    parser.add_argument(
        "--combine-precision",
        choices=tuple(ALLTOALL_BYTES_PER_VALUE),
        default=None,
        help="precision of the all-to-all combine (default bf16, DeepSeek's)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = _Parser(prog="roofline", description="Roofline estimates of LLM inference from GPU and model specs.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser("estimate", help="decode speed, prefill time and memory for one deployment")
    run.add_argument("--gpu", required=True, help=GPU_HELP)
    run.add_argument("--model", required=True, help=MODEL_HELP)
    run.add_argument("--precision", type=_precision, help=_PRECISION_HELP)
    run.add_argument(
        "--kv-precision",
        type=_kv_precision,
        default="bf16",
        help="KV-cache format, scales counted (default bf16; see: roofline list kv-precisions)",
    )
    run.add_argument(
        "--compute-precision",
        type=_compute_precision,
        default=DEFAULT_COMPUTE_PRECISION,
        help="math precision that sets the peak FLOP/s (default auto: fp8 weights run fp8 math"
        " where the GPU has it, every other format is weight-only at 16 bits)",
    )
    run.add_argument(
        "--gpus",
        type=_whole_number(GPUS_RANGE),
        default=1,
        help=f"GPUs, splitting every layer and paying its all-reduces, {_span(GPUS_RANGE)} (default 1)",
    )
    run.add_argument(
        "--batch",
        type=_whole_number(BATCH_RANGE),
        default=1,
        help=f"users decoding together, {_span(BATCH_RANGE)} (default 1)",
    )
    run.add_argument(
        "--replicas",
        type=_whole_number((1, MAX_REPLICAS)),
        default=1,
        metavar="N",
        help=f"independent copies of the deployment, 1 to {MAX_REPLICAS:,}, each serving --batch users:"
        " the totals for all of them (default 1)",
    )
    run.add_argument(
        "--context",
        type=_whole_number(CONTEXT_RANGE),
        default=0,
        help=f"tokens cached per user, {_span(CONTEXT_RANGE)} (default 0)",
    )
    run.add_argument(
        "--prompt",
        type=_whole_number(PROMPT_RANGE),
        default=0,
        help=f"prompt tokens to prefill, {_span(PROMPT_RANGE)} (default 0)",
    )
    run.add_argument(
        "--usable-fraction",
        type=_fraction,
        default=DEFAULT_USABLE_FRACTION,
        help="share of the memory the weights and workspace leave that holds the KV cache, as TensorRT-LLM's"
        f" kv_cache_free_gpu_mem_fraction, {USABLE_FRACTION_RANGE[0]:g} to {USABLE_FRACTION_RANGE[1]:g}"
        f" (default {DEFAULT_USABLE_FRACTION:g})",
    )
    run.add_argument(
        "--costs",
        choices=COSTS,
        default="ceiling",
        help="ceiling: the upper bound (default); expected: also the calibrated prediction and its band",
    )
    _add_ground_options(run)
    _add_split_options(run)
    run.add_argument(
        "--shared-prefix",
        type=_whole_number(CONTEXT_RANGE),
        default=0,
        metavar="T",
        help=f"first T tokens of every context are shared, stored and read once, {_span(CONTEXT_RANGE)} (default 0)",
    )
    _add_expert_options(run)
    run.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    _add_specs_option(run)

    listing = commands.add_parser("list", help="list known GPUs, models or precisions")
    listing.add_argument("what", choices=("gpus", "models", "precisions", "kv-precisions"))
    _add_specs_option(listing)

    validate = commands.add_parser("validate", help="check spec files and report the first error in each")
    validate.add_argument("files", nargs="+", metavar="FILE")

    table = commands.add_parser("table", help="models × weight precisions: decode tokens/s and prefill ms")
    table.add_argument("--gpu", default="h100-sxm", help=f"{GPU_HELP} (default h100-sxm)")
    table.add_argument("--model", action="append", dest="models", metavar="ID", help=f"{MODEL_HELP}; repeat for more")
    table.add_argument(
        "--precisions",
        type=_precision_list,
        default=TABLE_PRECISIONS,
        help="comma-separated weight precisions (default bf16,fp8,int4)",
    )
    table.add_argument(
        "--prompt",
        type=_whole_number(TABLE_PROMPT_RANGE),
        default=TABLE_PROMPT_TOKENS,
        help=f"prompt tokens, {_span(TABLE_PROMPT_RANGE)} (default {TABLE_PROMPT_TOKENS:,})",
    )
    table.add_argument("--format", choices=("markdown", "csv", "text"), default="markdown")
    _add_specs_option(table)
    _add_simulate_parser(commands)
    _add_model_parser(commands)
    _add_speculate_parser(commands)
    return parser


def _add_model_parser(commands: argparse._SubParsersAction) -> None:
    model = commands.add_parser("model", help="your own model: a Hugging Face config.json as a spec entry")
    actions = model.add_subparsers(dest="action", required=True, parser_class=_Parser)
    read = actions.add_parser(
        "import",
        help="read a config.json and print (or write) a checked [model.ID] entry for --specs or roofline/data/",
        description="Supported architectures: " + ", ".join(FAMILIES),
    )
    read.add_argument("config", metavar="CONFIG", help="the path of a Hugging Face config.json")
    read.add_argument("--id", help="the entry's id (default: from the name)")
    read.add_argument("--name", help="how tables print the model (default: from the config or its folder)")
    read.add_argument("--source", metavar="URL", help="where the config comes from (default: its path)")
    read.add_argument("-o", "--output", metavar="FILE", help="write the entry to FILE, a new file (default: print)")


def _add_simulate_parser(commands: argparse._SubParsersAction) -> None:
    defaults = ServingConfig()
    run = commands.add_parser(
        "simulate",
        help="serve a stream of requests and report latency and throughput",
        description="Serve a stream of requests on one model replica in a deterministic discrete-event"
        " simulation whose iterations take their roofline time (roofline/serving.py explains the model).",
    )
    run.add_argument("--gpu", required=True, help=GPU_HELP)
    run.add_argument("--model", required=True, help=MODEL_HELP)
    run.add_argument(
        "--gpus",
        type=_whole_number(GPUS_RANGE),
        default=1,
        help=f"GPUs, {_span(GPUS_RANGE)}, splitting every layer and paying its all-reduces (default 1)",
    )
    _add_split_options(run)
    _add_expert_options(run)
    run.add_argument("--precision", type=_precision, help=_PRECISION_HELP)
    run.add_argument("--kv-precision", type=_kv_precision, default="bf16", help="KV-cache format (default bf16)")
    run.add_argument(
        "--compute-precision",
        type=_compute_precision,
        default=DEFAULT_COMPUTE_PRECISION,
        help="math precision that sets the peak FLOP/s, as for estimate (default auto)",
    )
    run.add_argument(
        "--usable-fraction",
        type=_fraction,
        default=DEFAULT_USABLE_FRACTION,
        help="share of the memory the weights and workspace leave that holds the KV cache, as for estimate,"
        f" {USABLE_FRACTION_RANGE[0]:g} to {USABLE_FRACTION_RANGE[1]:g} (default {DEFAULT_USABLE_FRACTION:g})",
    )
    run.add_argument(
        "--costs",
        choices=COSTS,
        default="ceiling",
        help="ceiling: every iteration at its upper bound (default); expected: also the same run at the"
        " calibrated costs, with its band",
    )
    _add_ground_options(run)
    run.add_argument("--policy", choices=POLICIES, default=defaults.policy, help="scheduler (default %(default)s)")
    run.add_argument(
        "--admission",
        choices=ADMISSIONS,
        default=None,
        help="KV memory: paged allocates 16-token blocks as tokens are written and preempts when none is"
        " free (vLLM); reserve holds prompt + true output length up front (the vLLM paper's Orca oracle)"
        f" (default {defaults.admission}; continuous and chunked only)",
    )
    run.add_argument(
        "--preemption",
        choices=PREEMPTIONS,
        default=None,
        help="paged only: recompute frees a preempted request's blocks and prefills its prompt and tokens"
        f" again; swap copies them to host memory and back over the GPU's host link (default {defaults.preemption})",
    )
    run.add_argument(
        "--rate",
        type=_number_in(RATE_RANGE, infinite=True),
        default=None,
        help=f"Poisson arrivals per second, {RATE_RANGE[0]:g} to {RATE_RANGE[1]:g}, or inf for every request at"
        f" time 0 (default {defaults.rate:g})",
    )
    run.add_argument(
        "--concurrency",
        type=_whole_number(CONCURRENCY_RANGE),
        default=None,
        metavar="N",
        help=f"closed loop instead of --rate: N clients, {_span(CONCURRENCY_RANGE)}, each sending its next"
        " request when its last one ends",
    )
    run.add_argument(
        "--requests",
        type=_whole_number((1, MAX_REQUESTS)),
        default=defaults.requests,
        help="requests to serve (default %(default)s)",
    )
    run.add_argument(
        "--warmup",
        type=_whole_number((0, MAX_REQUESTS)),
        default=0,
        metavar="N",
        help="requests sent before the --requests measured ones and left out of every figure, as AIPerf's"
        " --warmup-request-count (default 0: every request is measured)",
    )
    run.add_argument(
        "--replicas",
        type=_whole_number((1, MAX_REPLICAS)),
        default=1,
        metavar="N",
        help=f"independent copies of the deployment, 1 to {MAX_REPLICAS:,}, requests (and closed-loop clients)"
        " split round-robin; totals summed, percentiles over every request (default 1)",
    )
    run.add_argument(
        "--prompt",
        type=_lengths("--prompt"),
        default=None,
        help=f"prompt tokens, N or uniform LO:HI (default {defaults.prompt})",
    )
    run.add_argument(
        "--output",
        type=_lengths("--output"),
        default=None,
        help=f"output tokens, N or uniform LO:HI (default {defaults.output})",
    )
    run.add_argument(
        "--trace",
        metavar="NAME|FILE",
        help="draw each request's prompt and output as one pair from a trace instead of --prompt and --output:"
        f" a built-in one ({', '.join(sorted(BUILTIN_TRACES))}) or a CSV file with columns prompt_tokens and"
        " output_tokens",
    )
    run.add_argument(
        "--search-rate",
        action="store_true",
        help="find the highest Poisson rate whose p99 TTFT and p99 TPOT meet --ttft-slo and --tpot-slo"
        " (MLPerf's Server scenario) by bisection, and report the run at that rate",
    )
    run.add_argument(
        "--search-tries",
        type=_whole_number(TRIES_RANGE),
        default=None,
        metavar="N",
        help=f"runs the rate search may make, {_span(TRIES_RANGE)}, the saturating run included"
        f" (default {DEFAULT_TRIES})",
    )
    run.add_argument(
        "--max-batch",
        type=_whole_number(MAX_BATCH_RANGE),
        default=defaults.max_batch,
        help="most requests running at once, vLLM's max_num_seqs (default %(default)s)",
    )
    run.add_argument(
        "--token-budget",
        type=_whole_number(TOKEN_BUDGET_RANGE),
        default=None,
        help="most tokens per iteration, vLLM's max_num_batched_tokens; chunked only"
        f" (default {defaults.token_budget})",
    )
    run.add_argument(
        "--ttft-slo",
        type=_number_in(SLO_RANGE_S),
        default=defaults.ttft_slo_s,
        help="time-to-first-token target for goodput and for --search-rate's p99, s (default %(default)g)",
    )
    run.add_argument(
        "--tpot-slo",
        type=_number_in(SLO_RANGE_S),
        default=defaults.tpot_slo_s,
        help="time-per-output-token target for goodput and for --search-rate's p99, s (default %(default)g)",
    )
    run.add_argument(
        "--seed",
        type=_whole_number(SEED_RANGE),
        default=defaults.seed,
        help="seed of the arrivals and lengths (default %(default)s)",
    )
    prefix = run.add_argument_group(
        "prefix caching", "prompts that start with shared prefixes, and a cache of them (roofline/serving.py)"
    )
    prefix.add_argument(
        "--prefix-tokens",
        type=_whole_number((0, MAX_LENGTH_TOKENS)),
        default=0,
        metavar="N",
        help="every prompt starts with a shared prefix of N tokens, at most the shortest prompt (default 0: none)",
    )
    prefix.add_argument(
        "--prefix-share",
        type=_number_in((0.0, 1.0)),
        default=None,
        metavar="F",
        help="the shared prefix as a share of the shortest prompt, 0 to 1, instead of --prefix-tokens",
    )
    prefix.add_argument(
        "--prefix-groups",
        type=_whole_number((1, MAX_REQUESTS)),
        default=defaults.prefix_groups,
        metavar="G",
        help="distinct prefixes, each request's drawn uniformly (default %(default)s)",
    )
    prefix.add_argument(
        "--prefix-cache-share",
        type=_number_in((1e-6, 0.999999)),
        default=defaults.prefix_cache_share,
        metavar="F",
        help="share of the KV blocks the prefix cache keeps, LRU-evicted; the running batch gets the rest"
        " (default %(default)g)",
    )
    pools = run.add_argument_group(
        "disaggregated serving", "prefill and decode on separate pools, the KV cache sent between them"
    )
    pools.add_argument(
        "--disaggregate",
        type=_argument(parse_pools),
        default=None,
        metavar="P:D",
        help="P prefill instances and D decode instances of --gpus GPUs each (with --gpus 1, GPUs)",
    )
    pools.add_argument(
        "--kv-link",
        choices=KV_LINK_CHOICES,
        default=None,
        help="the link the KV cache crosses: nvlink (scale-up), network (InfiniBand or RoCE NIC), pcie"
        " (host link); auto: nvlink when every GPU fits one scale-up domain, else network (default auto)",
    )
    speculation = run.add_argument_group(
        "speculative decoding", "each decode iteration verifies K+1 tokens per request (continuous policy)"
    )
    speculation.add_argument(
        "--speculate-gamma",
        type=_whole_number(GAMMA_RANGE),
        metavar="K",
        help=f"draft tokens per round, {_span(GAMMA_RANGE)}; needs --speculate-alpha",
    )
    speculation.add_argument(
        "--speculate-alpha",
        type=_number_in((0.0, 1.0)),
        metavar="A",
        help="acceptance rate of one draft token, 0 to 1; needs --speculate-gamma",
    )
    speculation.add_argument(
        "--draft", metavar="MODEL", help="draft model id: its own decode step is charged (unless --draft-cost)"
    )
    speculation.add_argument(
        "--draft-cost",
        type=_number_in((0.0, 10.0)),
        metavar="C",
        help="draft step ÷ the target's plain step, 0 to 10, charged as given (default: --draft's step, else free)",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    _add_specs_option(run)


def _drafting(args: argparse.Namespace, specs: SpecSet) -> Drafting | None:
    """The simulate command's speculation options as a ``Drafting``, or None when it does not speculate."""
    speculating = args.speculate_gamma is not None or args.speculate_alpha is not None
    if not speculating:
        if args.draft is not None or args.draft_cost is not None:
            option = "--draft" if args.draft is not None else "--draft-cost"
            raise SpecError(f"{option}: only with --speculate-gamma and --speculate-alpha", hint="add both, or drop it")
        return None
    if args.speculate_gamma is None or args.speculate_alpha is None:
        missing = "--speculate-gamma" if args.speculate_gamma is None else "--speculate-alpha"
        raise SpecError(f"{missing}: needed with the other --speculate option", hint="give both γ and α")
    if args.policy != "continuous":
        raise SpecError(
            f"--policy: speculation is simulated under continuous batching only, got {args.policy}",
            hint="use --policy continuous",
        )
    draft = None
    if args.draft is not None:
        _check_id("--draft", specs.draft, args.draft)
        draft = specs.draft(args.draft)
    return Drafting(args.speculate_gamma, args.speculate_alpha, draft, args.draft_cost)


def _precision_hint(error: SpecError) -> SpecError:
    """A GPU without the asked math precision: say which option picks another."""
    if error.field != "dense_flops_per_s":
        return error
    return SpecError(error.message, hint=f"{error.hint}; pick one with --compute-precision")


def _check_split_options(args: argparse.Namespace) -> None:
    """The split and latency options that contradict each other, refused alike by estimate and simulate."""
    if args.allreduce_preset is not None and args.allreduce_latency is not None:
        raise SpecError(
            "--allreduce-preset: cannot be combined with --allreduce-latency",
            hint="a preset is a measured latency that grows with the GPU count; --allreduce-latency fixes one;"
            " give one of the two",
        )
    if args.parallel in ("tp", *EXPERT_PARALLEL) and args.pp_stages is not None:
        raise SpecError("--pp-stages splits a pipeline", hint="add --parallel tpxpp (or pp), or leave it out")
    if args.parallel in ("tp", *EXPERT_PARALLEL) and args.microbatches is not None:
        raise SpecError("--microbatches: groups of users go through a pipeline", hint=_PIPELINE_HINT)
    if args.microbatches is None:
        args.microbatches = 1
    if getattr(args, "attention_dp", False) and args.gpus == 1:
        raise SpecError(
            "--dp-attention: one GPU has no attention to split", hint="add --gpus N (2 or more), or leave it out"
        )
    if args.attention_dp and args.parallel == "tpxep":
        raise SpecError(
            "--dp-attention: --parallel tpxep splits attention over --tp GPUs",
            hint="use --parallel ep for data-parallel attention beside the experts, or leave it out",
        )


#: What an option that only a pipeline uses says (as --pp-stages does).
_PIPELINE_HINT = "add --parallel tpxpp (or pp), or leave it out"


def _check_scheduler_options(args: argparse.Namespace) -> None:
    """simulate's options that the chosen scheduler does not use, refused in one line as --pp-stages
    without a pipeline is (never ignored); then the defaults of those left out."""
    defaults = ServingConfig()
    speculating = args.speculate_gamma is not None or args.speculate_alpha is not None
    if args.token_budget is not None and args.policy != "chunked":
        raise SpecError(
            f"--token-budget: only chunked prefill has a token budget, got --policy {args.policy}",
            hint="add --policy chunked, or leave it out",
        )
    reserved = "static batching" if args.policy == "static" else "speculation" if speculating else None
    if args.admission is not None and reserved:
        raise SpecError(
            f"--admission: {reserved} always reserves each request's prompt and output", hint="leave it out"
        )
    if args.preemption is not None and (reserved or args.admission == "reserve"):
        raise SpecError(
            "--preemption: only paged admission preempts; reserved blocks are never taken back",
            hint="leave it out" + ("" if reserved else ", or use --admission paged"),
        )
    args.token_budget = defaults.token_budget if args.token_budget is None else args.token_budget
    args.admission = args.admission or defaults.admission
    args.preemption = args.preemption or defaults.preemption


def _tensor_parallel_notes(hardware: Hardware, model) -> tuple[str | None, str | None]:
    """Warnings for ``hardware.count`` GPUs splitting every layer: a count the heads do not
    divide (the figures split evenly anyway), and a count past one scale-up domain."""
    gpus = hardware.count
    layout = gpu_count_problem(model, gpus)
    link = hardware.gpu.interconnect
    beyond = link is not None and gpus > link.domain_gpus
    return (
        layout and f"--gpus {gpus:,}: {layout}; the figures split it evenly over {gpus:,} GPUs anyway",
        beyond
        and f"--gpus {gpus:,} is more than one {link.scale_up} domain of {link.domain_gpus:,}: every"
        f" all-reduce also crosses the scale-out network at {link.scale_out_bytes_per_s / 1e9:g} GB/s per GPU"
        f" (the ceiling charges {hardware.allreduce_wire[1]});"
        " engines split across nodes with --parallel tpxpp",
    )


def _spans_nodes_note(hardware: Hardware, split: Split, hops_across: int) -> str | None:
    """A warning for a pipeline whose stages fill more than one scale-up domain."""
    if split.gpus <= _domain(hardware):
        return None
    return (
        f"{split.label} spans {math.ceil(split.gpus / _domain(hardware)):,} nodes: {hops_across}"
        " of the hops between stages cross the scale-out network"
    )


def _add_ground_options(run: argparse.ArgumentParser) -> None:
    """``--harness`` and ``--engine``: what ``--costs expected`` predicts a measurement of."""
    run.add_argument(
        "--harness",
        choices=tuple(HARNESSES),
        default=DEFAULT_HARNESS,
        help=f"with --costs expected, what the measurement includes: {harness_choices()}; each has its own fitted"
        " host costs (default %(default)s)",
    )
    run.add_argument(
        "--engine",
        choices=tuple(ENGINES),
        default=DEFAULT_ENGINE,
        help="with --costs expected, the serving engine; one the fit has no runs of uses the common fit with"
        " a wider band, and says so (default %(default)s)",
    )


def _grounded(
    args: argparse.Namespace,
    hardware: Hardware,
    workload: Workload,
    calibration: Calibration | None = None,
    gpus: int | None = None,
) -> GroundedCosts:
    """The expected costs for ``hardware``'s GPU, math and GPU count under ``--harness`` and ``--engine``
    with the band to show (``calibration.expected_costs``: the band widened where the fit has no rows)."""
    return expected_costs(hardware, workload, calibration, engine=args.engine, harness=args.harness, gpus=gpus)


def _estimate(args: argparse.Namespace, specs: SpecSet, **layout: Any) -> Estimate:
    """``estimate`` with the options every layout reads from the command line (GPU, model,
    precisions, GPU count, batch, context, prompt, usable fraction), plus ``layout``'s own."""
    return estimate(
        args.gpu,
        args.model,
        precision=args.precision,
        kv_precision=args.kv_precision,
        compute_precision=args.compute_precision,
        gpus=args.gpus,
        batch=args.batch,
        context=args.context,
        prompt=args.prompt,
        usable_fraction=args.usable_fraction,
        specs=specs,
        **layout,
    )


def _run_estimate(args: argparse.Namespace, specs: SpecSet) -> str:
    _check_id("--gpu", specs.gpu, args.gpu)
    _check_id("--model", specs.model, args.model)
    _check_split_options(args)
    _check_expert_options(args)
    if args.parallel in EXPERT_PARALLEL:
        return _run_expert(args, specs)
    if args.parallel != "tp":
        return _run_split(args, specs)
    try:
        result = _estimate(
            args,
            specs,
            shared_prefix=args.shared_prefix,
            attention_dp=args.attention_dp,
            allreduce_latency_s=args.allreduce_latency,
            allreduce_preset=args.allreduce_preset,
            costs=args.costs,
            harness=args.harness,
            engine=args.engine,
        )
    except SpecError as error:
        raise _precision_hint(error) from None
    figures = result.to_dict()
    figures["pipeline_bubble_fraction"] = 0.0
    figures["best_tp_degree"] = best_tp_degree(result.hardware, result.workload)
    if args.replicas > 1:
        figures["replicas"] = replicated(figures, args.replicas)
    _check_finite(figures)
    model = specs.model(args.model)
    return _estimate_output(
        args,
        model,
        figures,
        lambda: text_report(result) + replicas_lines(figures.get("replicas")),
        *_tensor_parallel_notes(result.hardware, model),
    )


def _banded_figures(deployed: Deployment) -> dict[str, float | None]:
    """A pipeline deployment's figures by the band's names (``calibration.BAND_METRICS``): all
    users' tokens/s, the prefill as the time to the first token, the interval between tokens."""
    return {
        "throughput_tokens_per_s": deployed.step.tokens_per_s_total,
        "ttft_mean_s": deployed.prefill_s or None,
        "itl_mean_s": deployed.step.interval_s,
        "tpot_mean_s": deployed.step.interval_s,
    }


def _run_split(args: argparse.Namespace, specs: SpecSet) -> str:
    """``estimate --parallel pp|tpxpp``: the deployment's pipeline figures (``roofline.deployment``)
    at the ceiling's costs, and with ``--costs expected`` the same at the fitted costs with their band."""
    try:
        split = split_for(args.parallel, args.gpus, args.pp_stages, args.microbatches)
        hardware = Hardware(
            specs.gpu(args.gpu),
            1,
            args.compute_precision,
            args.usable_fraction,
            attention_dp=args.attention_dp,
            allreduce_latency_s=args.allreduce_latency,
            allreduce_preset=args.allreduce_preset,
        )
        workload = Workload(
            specs.model(args.model),
            args.precision,
            args.kv_precision,
            args.batch,
            args.context,
            args.prompt,
            args.shared_prefix,
        )
        result = deploy(hardware, workload, split)
        expected = None
        if args.costs == "expected":
            ground = _grounded(args, hardware, workload, gpus=split.gpus)
            calibration = ground.calibration
            expected = deploy(replace(hardware, costs=ground.costs), workload, split)
    except SpecError as error:
        raise _precision_hint(error) from None
    figures = {**deployment_dict(hardware, workload, result), **_tp_keys_for_split(hardware, workload, result)}
    figures["costs"] = args.costs
    if expected is not None:
        figures["expected"] = {
            "decode_step_s": expected.step.interval_s,
            "decode_latency_s": expected.step.latency_s,
            "decode_interval_s": expected.step.interval_s,
            "decode_tokens_per_s_per_user": expected.step.tokens_per_s_per_user,
            "decode_tokens_per_s_total": expected.step.tokens_per_s_total,
            "prefill_s": expected.prefill_s,
            "communication_s": expected.step.communication_s,
        }
        figures["band"] = calibration.bands(_banded_figures(expected), _banded_figures(result))
        figures["fit"] = calibration.ground_dict()
    figures["best_tp_degree"] = best_tp_degree(replace(hardware, count=min(args.gpus, _domain(hardware))), workload)
    if args.replicas > 1:
        figures["replicas"] = replicated(figures, args.replicas)
    _check_finite(figures)
    model = specs.model(args.model)
    return _estimate_output(
        args,
        model,
        figures,
        lambda: (
            deployment_report(
                hardware, workload, result, expected, figures.get("band"), calibration if expected is not None else None
            )
            + replicas_lines(figures.get("replicas"), 27)
        ),
        _spans_nodes_note(hardware, split, result.step.hops_across),
    )


_EXPERT_OPTIONS = ("ep", "expert_imbalance", "redundant_experts", "dispatch_precision", "combine_precision", "tp")
#: The option that sets each field ``epdeploy.check_layout`` may name.
_EXPERT_FIELDS = {
    "ep": "--ep",
    "expert_imbalance": "--expert-imbalance",
    "redundant_experts": "--redundant-experts",
    "parallel": "--parallel ep",
    "dispatch_precision": "--dispatch-precision",
    "combine_precision": "--combine-precision",
    "tp": "--tp",
}


def _check_expert_options(args: argparse.Namespace) -> None:
    """Expert-parallel options without ``--parallel ep|tpxep`` are refused, never ignored; with it,
    ``--ep`` must name every GPU, ``--tp`` belongs to tpxep alone, and the options the layout has
    no place for are refused."""
    if args.parallel not in EXPERT_PARALLEL:
        for name in _EXPERT_OPTIONS:
            if getattr(args, name) is not None:
                option = "--" + name.replace("_", "-")
                hint = "add --parallel tpxep, or leave it out" if name == "tp" else "add --parallel ep, or leave it out"
                raise SpecError(f"{option}: only an expert-parallel layout has it", hint=hint)
        return
    if args.ep is None:
        args.ep = args.gpus
    if args.ep != args.gpus:
        raise SpecError(
            f"--ep {args.ep:,}: with --parallel {args.parallel} every one of the --gpus {args.gpus:,} GPUs is one rank",
            hint=f"give --ep {args.gpus:,} (or leave it out), or --gpus {args.ep:,}",
        )
    if args.parallel == "tpxep" and args.tp is None:
        raise SpecError(
            "--parallel tpxep: needs --tp N, the GPUs each attention group splits attention over",
            hint="add --tp N (a divisor of --gpus), or use --parallel ep for data-parallel attention",
        )
    if args.parallel == "ep" and args.tp is not None:
        raise SpecError(
            f"--tp {args.tp:,}: --parallel ep keeps attention data-parallel, one GPU a group",
            hint="use --parallel tpxep to split attention over --tp GPUs, or leave --tp out",
        )
    if getattr(args, "shared_prefix", 0):
        raise SpecError("--shared-prefix: not part of the expert-parallel layout yet", hint="leave it out")
    if args.allreduce_latency is not None or args.allreduce_preset is not None:
        raise SpecError(
            "--allreduce-latency/--allreduce-preset: an expert-parallel step charges the ceiling's all-reduces",
            hint="leave them out",
        )


def _expert_layout(args: argparse.Namespace, model) -> ExpertLayout:
    """The layout ``--parallel ep|tpxep`` and its options describe, checked against ``model``
    (``epdeploy.check_layout``); a refusal names the option that set the field."""
    layout = ExpertLayout(
        args.ep,
        DEFAULT_EXPERT_IMBALANCE if args.expert_imbalance is None else args.expert_imbalance,
        args.dispatch_precision or DEFAULT_DISPATCH_PRECISION,
        args.combine_precision or DEFAULT_COMBINE_PRECISION,
        args.redundant_experts or 0,
        args.tp or 1,
    )
    try:
        check_layout(model, layout)
    except SpecError as error:
        option = _EXPERT_FIELDS.get(error.field or "", error.field)
        if error.field == "parallel":
            option = f"--parallel {args.parallel}"
        raise SpecError(f"{option}: {error.message}", hint=error.hint) from None
    return layout


def _run_expert(args: argparse.Namespace, specs: SpecSet) -> str:
    """``estimate --parallel ep|tpxep``: the tensor-parallel estimate's keys on the same GPUs, with
    the step, the prefill and the memory of the expert-parallel layout in place of its own
    (``roofline.epdeploy``); the TP-only comparisons (``TP_ONLY_KEYS``) left out. With
    ``--costs expected``, the same step at the fitted costs, its band widened (``ep_band``)."""
    model = specs.model(args.model)
    layout = _expert_layout(args, model)
    # A bad calibration file names itself and its field, not an estimate option: loaded outside the try.
    calibration = load_calibration() if args.costs == "expected" else None
    try:
        # Each GPU holds its own users' cache under data-parallel attention; tpxep's groups split theirs.
        result = _estimate(args, specs, attention_dp=args.gpus > 1 and layout.attention_tp == 1)
        step = expert_step(result.hardware, result.workload, layout)
        expected = None
        if calibration is not None:
            # Grounded first (an unfitted GPU's wider band), then widened for the experts (ep_band).
            ground = _grounded(args, result.hardware, result.workload, calibration)
            calibration = ground.calibration
            expected = expert_step(replace(result.hardware, costs=ground.costs), result.workload, layout)
    except SpecError as error:
        raise _precision_hint(error) from None
    figures = {key: value for key, value in result.to_dict().items() if key not in TP_ONLY_KEYS}
    figures.update(expert_dict(step))
    figures["costs"] = args.costs
    if expected is not None and calibration is not None:
        figures["expected"] = expected_dict(expected)
        figures.update(ep_band(calibration, expected_dict(expected), expected_dict(step)))
    figures["pipeline_bubble_fraction"] = 0.0
    figures["best_tp_degree"] = best_tp_degree(replace(result.hardware, attention_dp=False), result.workload)
    if args.replicas > 1:
        figures["replicas"] = replicated(figures, args.replicas)
    _check_finite(figures)
    return _estimate_output(
        args, model, figures, lambda: expert_report(figures) + replicas_lines(figures.get("replicas"), 24)
    )


#: Keys of ``estimate --json`` (tensor parallelism) that a pipeline's JSON leaves out: totals over
#: every GPU that differ stage by stage (a pipeline gives the busiest stage's per GPU instead:
#: weights_bytes_per_gpu, kv_bytes_per_gpu, kv_pool_bytes_per_gpu), and the comparisons with the
#: rule of thumb and the crossovers, which are worked out for one tensor-parallel group.
TP_ONLY_KEYS = frozenset(
    {
        "memory_used_bytes",
        "memory_usable_bytes",
        "kv_pool_bytes",
        "kv_bytes",
        "crossover_batch",
        "simple_crossover_batch",
        "kv_slope_s_per_token",
        "rule_of_thumb",
        "decode_vs_rule",
        "prefill_vs_rule",
        "prefill_bound",
        "accounting",
    }
)


def _tp_keys_for_split(hardware: Hardware, workload: Workload, result) -> dict[str, object]:
    """The keys ``estimate --json`` has for tensor parallelism, with their meaning on a pipeline,
    so that a script written for one layout reads the other (``TP_ONLY_KEYS`` are left out).
    ``decode_step_s`` is the seconds between one user's tokens (``decode_interval_s``), so
    ``1 / decode_step_s`` is tokens/s per user in every layout; ``decode_memory_s`` and
    ``decode_compute_s`` sum one micro-batch's pass over the stages."""
    split, step = result.split, result.step
    stage_group = replace(hardware, count=split.tp)
    model = workload.model
    memory_s = sum(stage.memory_s for stage in step.stages)
    compute_s = sum(stage.compute_s for stage in step.stages)
    return {
        "compute_precision": hardware.compute_precision,
        "math": math_choice(stage_group, workload),
        "weight_bits_per_weight": number_format(workload.weight_precision).bits_per_weight,
        "shared_prefix": workload.shared_prefix,
        "total_parameters": arch.total_parameters(model),
        "active_parameters": arch.active_parameters(model),
        "weights_bytes": arch.weight_bytes(model, workload.weight_precision),
        "kv_bytes_per_token": workload.kv_bytes_per_token,
        "kv_bytes_per_user": workload.kv_bytes_per_user,
        "kv_bytes_shared": workload.kv_bytes_shared,
        "memory_addressable_bytes": split.gpus * hardware.gpu.addressable_bytes,
        "workspace_bytes": split.gpus * hardware.workspace_bytes,
        "usable_fraction": hardware.usable_fraction,
        "attention_dp": hardware.attention_dp,
        "kv_copies": kv_copies(stage_group, model),
        "decode_step_s": step.interval_s,
        "decode_memory_s": memory_s,
        "decode_compute_s": compute_s,
        "decode_bound": "memory" if memory_s >= compute_s else "compute",
        "allreduce_latency_s": stage_group.allreduce_latency if split.tp > 1 else 0.0,
        "allreduce_accounting": stage_group.allreduce_wire[1] if split.tp > 1 else None,
        "critical_batch": critical_batch_for(stage_group, workload.weight_precision),
    }


def _domain(hardware: Hardware) -> int:
    """GPUs that share the scale-up fabric; a spec without an interconnect has no limit."""
    link = hardware.gpu.interconnect
    return GPUS_RANGE[1] if link is None else link.domain_gpus


def _estimate_output(
    args: argparse.Namespace, model: Any, figures: dict, text: Callable[[], str], *notes: str | None
) -> str:
    """What ``estimate`` prints in every layout: warnings on stderr for a context or prompt past the
    model's and for ``notes``, then the JSON of ``figures`` (with those warnings) or the report
    ``text()`` writes (only asked for without --json)."""
    warnings = _warn(
        "estimate",
        (model.past_max_context(args.context, "--context"), model.past_max_context(args.prompt, "--prompt"), *notes),
    )
    if args.json:
        return json.dumps({**figures, "warnings": warnings}, indent=2, allow_nan=False) + "\n"
    return text()


def _warn(command: str, notes: Iterable[str | None]) -> list[str]:
    """Write each note as a warning line on stderr (the run goes on) and return them, for --json."""
    lines = [note for note in notes if note]
    for line in lines:
        sys.stderr.write(one_line(f"roofline {command}: warning: {line}") + "\n")
    return lines


def _check_finite(figures: dict[str, object], prefix: str = "") -> None:
    """Refuse to print inf or NaN, nested objects included. Inside the documented ranges this
    never fires; it is the backstop that keeps ``--json`` valid JSON."""
    for key, value in figures.items():
        if isinstance(value, dict):
            _check_finite(value, f"{prefix}{key}.")
        elif isinstance(value, list):  # a band's [low, high]
            _check_finite({f"{key}[{index}]": item for index, item in enumerate(value)}, prefix)
        elif isinstance(value, float) and not math.isfinite(value):
            raise SpecError(
                f"the result '{prefix}{key}' is {value}, out of a float's range",
                hint="bring the inputs nearer real hardware and models",
            )


def _check_id(option: str, lookup: Callable[[str], object], value: str) -> None:
    try:
        lookup(value)
    except SpecError as error:
        raise SpecError(f"{option}: {error.message}", hint=error.hint) from None


def _run_list(what: str, specs: SpecSet) -> str:
    if what == "gpus":
        rows = [
            (
                gpu.id,
                gpu.name,
                fmt.gigabytes(gpu.memory_bytes, 0),
                f"{gpu.bandwidth_bytes_per_s / 1e12:.2f} TB/s",
                ", ".join(f"{p} {v / 1e12:,.0f}T" for p, v in gpu.dense_flops_per_s.items()),
            )
            for gpu in specs.gpus.values()
        ]
        return Table(("id", "name", "memory", "bandwidth", "dense peak FLOP/s"), tuple(rows)).text()
    if what == "models":
        rows = [
            (
                model.id,
                model.name,
                fmt.parameters(arch.total_parameters(model)),
                fmt.parameters(arch.active_parameters(model)),
                fmt.bytes_size(arch.kv_cache_bytes_per_token(model)),
                "—" if model.max_context is None else f"{model.max_context:,}",
            )
            for model in specs.models.values()
        ]
        header = ("id", "name", "parameters", "active", "KV per token (bf16)", "max context")
        text = Table(header, tuple(rows)).text()
        if not specs.drafts:
            return text
        heads = [
            (
                head.id,
                head.name,
                head.draft_for or "",
                fmt.parameters(arch.total_parameters(head)),
                fmt.bytes_size(arch.kv_cache_bytes_per_token(head)),
            )
            for head in specs.drafts.values()
        ]
        drafts = Table(("id", "name", "drafts for", "parameters", "KV per token (bf16)"), tuple(heads)).text()
        return f"{text}\n\nDrafts (speculate --draft, simulate --draft; not served on their own):\n{drafts}"
    if what == "kv-precisions":
        kv_rows = [(name, f"{kv.effective_bytes:g}", kv.description) for name, kv in KV_FORMATS.items()]
        return Table(("KV precision", "bytes per value", "layout"), tuple(kv_rows)).text()
    rows = [
        (name, f"{number.value_bits:g}", f"{number.bits_per_weight:g}", f"{number.bytes_per_weight:g}")
        for name, number in FORMATS.items()
    ]
    return Table(("precision", "value bits", "bits per weight", "bytes per weight"), tuple(rows)).text()


def _run_validate(files: Sequence[str]) -> int:
    """Check each file on its own: "ok" lines go to stdout, one error line per bad file to stderr."""
    status = 0
    for path in files:
        try:
            if Path(path).name == "measurements.toml":
                # A measurements file (roofline/data/measurements.toml's layout), checked against the built-in specs.
                measurements = load_measurements(path)
                sys.stdout.write(f"{path}: ok ({len(measurements)} measurements)\n")
                continue
            found = read_spec_file(path)
            # A GPU's same_compute_as may name a built-in chip, so the file is checked beside them.
            check_same_compute(builtin_specs().merged(found))
        except SpecError as error:
            sys.stderr.write(f"roofline validate: error: {error}\n")
            status = EXIT_BAD_INPUT
            continue
        count = len(found.drafts)
        drafts = f", {count} draft{'' if count == 1 else 's'}" if count else ""
        sys.stdout.write(one_line(f"{path}: ok ({len(found.gpus)} GPUs, {len(found.models)} models{drafts})") + "\n")
    return status


def _run_table(args: argparse.Namespace, specs: SpecSet) -> str:
    _check_id("--gpu", specs.gpu, args.gpu)
    models = list(dict.fromkeys(args.models)) if args.models else None  # a repeated --model gives one row
    for model_id in models or ():
        _check_id("--model", specs.model, model_id)
    rows = list(decode_prefill_rows(specs, args.gpu, models, precisions=args.precisions, prompt=args.prompt))
    shown_models = models if models is not None else list(specs.models)
    left_out = len(shown_models) * len(args.precisions) - len(rows)
    unlinked = left_out and (
        f"{left_out:,} model and format pair{'s' if left_out != 1 else ''} left out: each needs more than one"
        f" {args.gpu}, which has no interconnect in its spec to charge the all-reduces at"
    )
    _warn(
        "table",
        (*(specs.model(model_id).past_max_context(args.prompt, "--prompt") for model_id in shown_models), unlinked),
    )
    table = decode_prefill_table(rows)
    return {"markdown": table.markdown, "csv": table.csv, "text": table.text}[args.format]()


#: ServingConfig fields named as the options that set them, for error messages.
_SIMULATE_OPTIONS = {
    "rate": "--rate",
    "requests": "--requests",
    "prompt": "--prompt",
    "output": "--output",
    "max_batch": "--max-batch",
    "token_budget": "--token-budget",
    "ttft_slo_s": "--ttft-slo",
    "tpot_slo_s": "--tpot-slo",
    "seed": "--seed",
    "admission": "--admission",
    "preemption": "--preemption",
    "concurrency": "--concurrency",
    "warmup": "--warmup",
    "replicas": "--replicas",
    "usable_fraction": "--usable-fraction",
    "speculate_gamma": "--speculate-gamma",
    "speculate_alpha": "--speculate-alpha",
    "draft_cost": "--draft-cost",
    # A split's TP degree is --gpus over --pp-stages; its other values are options of their own.
    "tp": "the TP degree (--gpus ÷ --pp-stages)",
    "allreduce_latency_s": "--allreduce-latency",
}


def _run_simulate(args: argparse.Namespace, specs: SpecSet) -> str:
    _check_id("--gpu", specs.gpu, args.gpu)
    _check_id("--model", specs.model, args.model)
    if args.concurrency is not None and args.rate is not None:
        raise SpecError(
            "--concurrency: cannot be combined with --rate",
            hint="a closed loop of N clients sets its own arrivals; give one of the two",
        )
    _check_split_options(args)
    _check_expert_options(args)
    _check_scheduler_options(args)
    trace = args.length_trace = _check_length_options(args, specs)
    drafting = _drafting(args, specs)
    if drafting is not None and args.disaggregate is not None:
        raise SpecError(
            "--disaggregate: not simulated with speculation yet",
            hint="leave out --disaggregate or the --speculate options",
        )
    if drafting is not None and args.search_rate:
        raise SpecError(
            "--search-rate: not simulated with speculation yet",
            hint="leave out --search-rate or the --speculate options",
        )
    if drafting is not None and (args.replicas != 1 or args.warmup):
        raise SpecError(
            f"{'--replicas' if args.replicas != 1 else '--warmup'}: not simulated with speculation yet",
            hint="leave out --replicas and --warmup, or the --speculate options",
        )
    if drafting is None and args.parallel in EXPERT_PARALLEL:
        return _run_simulate_expert(args, specs)
    if drafting is not None:
        if args.parallel != "tp":
            raise SpecError(
                f"--parallel: speculation is simulated with tensor parallelism only, got {args.parallel}",
                hint="use --parallel tp, or leave out the --speculate options",
            )
        return _run_simulate_speculative(args, specs, drafting)
    # A bad calibration file names itself and its field, not a simulate option: loaded outside the try.
    calibration = load_calibration() if args.costs == "expected" else None
    try:
        # --parallel pp|tpxpp: the split's rules are roofline.deployment's, as for estimate --parallel.
        split = (
            None if args.parallel == "tp" else split_for(args.parallel, args.gpus, args.pp_stages, args.microbatches)
        )
        hardware = _simulate_hardware(args, specs, 1 if split else args.gpus)
        workload = Workload(specs.model(args.model), args.precision, args.kv_precision)
        config = _simulate_config(args)
        serve = _simulation(args, split)
        # --replicas and --warmup wrap the one-replica simulation (roofline/fleet.py); without them, the same run.
        fleet = {"replicas": args.replicas, "warmup": args.warmup}

        def at_rate(gpus: Hardware, rate: float) -> SimulationResult:
            # The saturating run measures capacity: every request counts there, warm-up or not.
            sizes = {**fleet, "warmup": 0} if math.isinf(rate) else fleet
            return simulate_fleet(gpus, workload, replace(config, rate=rate), split, **sizes)

        searches = {}
        if args.search_rate:
            if args.disaggregate is not None:
                raise SpecError(
                    "--search-rate: not searched with --disaggregate yet",
                    hint="leave out --search-rate, or --disaggregate",
                )
            # MLPerf's Server scenario: the highest Poisson rate meeting both p99 targets (roofline/ratesearch.py).
            tries = DEFAULT_TRIES if args.search_tries is None else args.search_tries
            search = functools.partial(search_rate, ttft_slo_s=config.ttft_slo_s, tpot_slo_s=config.tpot_slo_s)
            searches["ceiling"] = search(functools.partial(at_rate, hardware), tries=tries, costs="ceiling")
            config = replace(config, rate=searches["ceiling"].rate)
            result = searches["ceiling"].result
        else:
            result = serve(hardware, workload, config)
        expected = None
        if calibration is not None:
            ground = _grounded(args, hardware, workload)
            calibration = ground.calibration
            costs = replace(hardware, costs=ground.costs)
            expected = serve(costs, workload, config)
            if args.search_rate:
                searches["expected"] = search(functools.partial(at_rate, costs), tries=tries, costs="expected")
    except SpecError as error:
        raise _simulate_option_error(error) from None
    figures = result.to_dict()
    if split is not None:
        figures.update(
            parallel=split.label,
            tp=split.tp,
            pp_stages=split.pp,
            microbatches=split.microbatches,
            gpus=split.gpus,
            pipeline_bubble_fraction=pipeline_bubble_fraction(split.pp, split.microbatches),
        )
    # The simulated times under load are one scheduler's; the bounds beside them are any scheduler's best.
    bounds = bounds_report(hardware, workload, config.prompt.low, split, config.shared_prefix_tokens)
    bounds = with_throughput_bound(bounds, config, args.warmup, (result, expected))
    if expected is not None and calibration is not None:
        expected_figures = expected.to_dict()
        figures.update(
            costs="expected",
            expected=expected_figures,
            band=calibration.bands(expected_figures, bounds),
            fit=calibration.ground_dict(),
        )
    figures["best_case"] = bounds
    figures["fleet"] = fleet_facts(result)
    if trace is not None:
        figures["length_trace"] = trace.facts()
    if searches:
        figures["rate_search"] = {
            **searches["ceiling"].to_dict(),
            **({"expected": searches["expected"].to_dict()} if "expected" in searches else {}),
        }
    _check_finite(figures)
    longest = trace.longest_request if trace is not None else config.prompt.high + config.output.high
    model = workload.model
    notes = (
        _tensor_parallel_notes(hardware, model)
        if split is None
        else (_spans_nodes_note(hardware, split, hops_across_nodes(hardware, split)),)
    )
    warnings = _warn("simulate", (model.past_max_context(longest, "a request (prompt plus output)"), *notes))
    if args.json:
        return json.dumps({**figures, "warnings": warnings}, indent=2, allow_nan=False) + "\n"
    report = simulation_report(result, hardware, workload, expected, calibration, split, bounds)
    return report + rate_search_lines(searches)


def _check_length_options(args: argparse.Namespace, specs: SpecSet) -> LengthTrace | None:
    """``--trace`` (its pairs replace --prompt and --output, so those are refused beside it, never
    ignored) and ``--search-rate`` (a Poisson rate it chooses itself); then the lengths' defaults."""
    if args.search_rate and (args.rate is not None or args.concurrency is not None):
        given = "--rate" if args.rate is not None else "--concurrency"
        raise SpecError(
            f"{given}: cannot be combined with --search-rate, which chooses the Poisson rate itself",
            hint=f"leave out {given}, or --search-rate",
        )
    if args.search_tries is not None and not args.search_rate:
        raise SpecError(
            "--search-tries: only a rate search makes several runs", hint="add --search-rate, or leave it out"
        )
    defaults = ServingConfig()
    if args.trace is None:
        args.prompt = args.prompt or defaults.prompt
        args.output = args.output or defaults.output
        return None
    if args.prompt is not None or args.output is not None:
        given = "--prompt" if args.prompt is not None else "--output"
        raise SpecError(
            f"{given}: cannot be combined with --trace, whose rows give each request's prompt and output",
            hint=f"leave out {given}, or --trace",
        )
    try:
        trace = load_trace(args.trace)
        model = specs.model(args.model)
        check_context(trace, model.max_context, model.name)
    except SpecError as error:
        raise SpecError(f"--trace: {error}") from None
    # The pairs' ranges stand in for --prompt and --output: the bounds take the shortest prompt, the
    # reports and the warnings the longest request.
    args.prompt = Lengths(min(trace.prompts), max(trace.prompts))
    args.output = Lengths(min(trace.outputs), max(trace.outputs))
    return trace


def _run_simulate_expert(args: argparse.Namespace, specs: SpecSet) -> str:
    """``simulate --parallel ep|tpxep``: the one scheduler (``serving``), every iteration timed by
    ``epdeploy.ExpertCosts`` on the busiest GPU, the cache every attention group's blocks; with
    ``--costs expected`` the same run at the fitted costs, its band widened (``epdeploy.ep_band``).
    The JSON and the report carry the expert-parallel keys as means over the run's iterations."""
    not_yet = (
        (args.replicas != 1, "--replicas"),
        (args.warmup, "--warmup"),
        (args.disaggregate is not None, "--disaggregate"),
        (args.search_rate, "--search-rate"),
    )
    for given, option in not_yet:
        if given:
            raise SpecError(
                f"{option}: not simulated with --parallel {args.parallel} yet",
                hint="leave it out, or use --parallel tp",
            )
    model = specs.model(args.model)
    layout = _expert_layout(args, model)
    # A bad calibration file names itself and its field, not a simulate option: loaded outside the try.
    calibration = load_calibration() if args.costs == "expected" else None
    try:
        hardware = _simulate_hardware(args, specs, 1)
        workload = Workload(model, args.precision, args.kv_precision)
        config = _simulate_config(args)
        costs = expert_costs(hardware, workload, layout)
        run = finished_run(hardware, workload, config, costs=costs)
        result = run.result()
        expected = expected_run = None
        if calibration is not None:
            # Grounded at the layout's GPU count (an unfitted GPU or link widens it), then widened for the experts.
            ground = _grounded(args, replace(hardware, count=args.gpus), workload, calibration)
            calibration = ground.calibration
            fitted = replace(hardware, costs=ground.costs)
            fitted_costs = expert_costs(fitted, workload, layout)
            expected_run = finished_run(fitted, workload, config, costs=fitted_costs)
            expected = expected_run.result()
    except SpecError as error:
        raise _simulate_option_error(error) from None
    figures = result.to_dict()
    figures.update(simulated_expert_figures(costs, run.sizes), gpus=args.gpus, kv_blocks=costs.kv_blocks)
    figures["costs"] = args.costs
    # No schedule beats one request alone: its prompt as one iteration, then one decode at its length.
    prompt = config.prompt.low
    ttft = costs.prefill(prompt).seconds if prompt else 0.0
    step = costs.iteration(1, prompt).seconds
    alone = "alone on the expert-parallel layout at the ceiling's costs, its tokens spread over every GPU"
    best_case = {
        "ttft_mean_s": ttft,
        "itl_mean_s": step,
        "tpot_mean_s": step,
        "accounting": {
            "ttft": f"the shortest prompt prefilled {alone}",
            "itl": f"one decode step of one user at the prompt's length, {alone}",
            "tpot": f"one decode step of one user at the prompt's length, {alone}",
        },
        "times_under_load": SCHEDULED_NOTE,
    }
    best_case = with_throughput_bound(best_case, config, runs=(result, expected))
    if expected is not None and expected_run is not None and calibration is not None:
        expected_figures = expected.to_dict()
        expected_figures["expert_means"] = simulated_expert_figures(fitted_costs, expected_run.sizes)["expert_means"]
        figures["expected"] = expected_figures
        figures.update(ep_band(calibration, expected_figures, best_case))
    figures["best_case"] = best_case
    _check_finite(figures)
    longest = config.prompt.high + config.output.high
    warnings = _warn("simulate", (model.past_max_context(longest, "a request (prompt plus output)"),))
    if args.json:
        return json.dumps({**figures, "warnings": warnings}, indent=2, allow_nan=False) + "\n"
    # The report's band is the widened one the JSON gives; its GPU count is the layout's.
    shown = None if calibration is None else widened(calibration)
    report = simulation_report(
        result, replace(hardware, count=args.gpus), workload, expected, shown, bounds=figures["best_case"]
    )
    lines = expert_simulation_lines(figures)
    if expected is not None:
        lines += f"  expected band: {figures['band_basis']}\n"
    return report + lines


def _simulation(args: argparse.Namespace, split: Split | None) -> Callable[..., SimulationResult]:
    """How simulate serves the stream: on two pools (``--disaggregate``, roofline/disaggserving.py), or
    on ``--replicas`` copies after ``--warmup`` requests (roofline/fleet.py; one copy and no warm-up is
    the one-replica simulation itself)."""
    if args.disaggregate is None:
        if args.kv_link is not None:
            raise SpecError("--kv-link: only --disaggregate sends KV between pools", hint="add --disaggregate P:D")
        fleet = {"replicas": args.replicas, "warmup": args.warmup}
        return lambda hardware, workload, config: simulate_fleet(hardware, workload, config, split, **fleet)
    for refused, option, fix in (
        (args.replicas != 1, "--replicas", "--disaggregate P:D sets the instances; leave out --replicas"),
        (args.warmup != 0, "--warmup", "leave out --warmup"),
        (split is not None, "--parallel", "use --parallel tp (--gpus GPUs per instance)"),
    ):
        if refused:
            raise SpecError(f"{option}: not simulated with --disaggregate yet", hint=fix)
    pools, link = args.disaggregate, args.kv_link or "auto"
    return lambda hardware, workload, config: simulate_disaggregated(hardware, workload, config, pools, link)


def _simulate_hardware(args: argparse.Namespace, specs: SpecSet, count: int) -> Hardware:
    """The simulate command's GPUs: ``count`` of ``--gpu`` at its math, memory share and all-reduce latency."""
    return Hardware(
        specs.gpu(args.gpu),
        count,
        args.compute_precision,
        args.usable_fraction,
        attention_dp=args.attention_dp,
        allreduce_latency_s=args.allreduce_latency,
        allreduce_preset=args.allreduce_preset,
    )


def _simulate_option_error(error: SpecError) -> SpecError:
    """A SpecError from the simulation, led by the option that set the value (a spec file's stays its own)."""
    error = _precision_hint(error)
    if error.field is None or error.file is not None:
        return error
    option = _SIMULATE_OPTIONS.get(error.field, "--" + error.field.replace("_", "-"))
    return SpecError(f"{option}: {error.message}", hint=error.hint)


def _simulate_config(args: argparse.Namespace) -> ServingConfig:
    """The simulate command's traffic and scheduler options as a ServingConfig (which checks them)."""
    return ServingConfig(
        trace=args.length_trace,
        policy=args.policy,
        rate=ServingConfig.rate if args.rate is None else args.rate,
        requests=args.requests,
        prompt=args.prompt,
        output=args.output,
        max_batch=args.max_batch,
        token_budget=args.token_budget,
        ttft_slo_s=args.ttft_slo,
        tpot_slo_s=args.tpot_slo,
        seed=args.seed,
        admission=args.admission,
        preemption=args.preemption,
        concurrency=args.concurrency,
        prefix_tokens=args.prefix_tokens,
        prefix_share=args.prefix_share,
        prefix_groups=args.prefix_groups,
        prefix_cache_share=args.prefix_cache_share,
    )


def _run_simulate_speculative(args: argparse.Namespace, specs: SpecSet, drafting: Drafting) -> str:
    """``simulate`` with ``--speculate-*``: ``specserving.simulate_speculative`` at the ceiling's costs;
    with ``--costs expected`` also the same run at the fitted costs, whose throughput and mean times
    get the plain runs' band (``Calibration.bands``); the report says what the rounds emitted."""
    # A bad calibration file names itself and its field, not a simulate option: loaded outside the try.
    calibration = load_calibration() if args.costs == "expected" else None
    try:
        hardware = _simulate_hardware(args, specs, args.gpus)
        workload = Workload(specs.model(args.model), args.precision, args.kv_precision)
        config = _simulate_config(args)
        run = simulate_speculative(hardware, workload, config, drafting)
        expected = None
        if calibration is not None:
            ground = _grounded(args, hardware, workload)
            calibration = ground.calibration
            expected = simulate_speculative(replace(hardware, costs=ground.costs), workload, config, drafting)
    except SpecError as error:
        raise _simulate_option_error(error) from None
    figures = {**run.to_dict(), "costs": args.costs}
    # Speculation emits several tokens a pass, so only the first token keeps its best-case bound.
    ttft_bound = {
        "ttft_mean_s": best_case_times(hardware, workload, config.prompt.low)["ttft_mean_s"],
        "accounting": {"ttft": TTFT_ACCOUNTING},
        "times_under_load": SCHEDULED_NOTE,
    }
    runs = (run.result, None if expected is None else expected.result)
    ttft_bound = with_throughput_bound(ttft_bound, config, runs=runs)
    figures["best_case"] = ttft_bound
    if expected is not None and calibration is not None:
        expected_figures = expected.to_dict()
        figures.update(
            expected=expected_figures,
            band=calibration.bands(expected_figures, ttft_bound),
            fit=calibration.ground_dict(),
        )
    _check_finite(figures)
    trace = args.length_trace
    longest = trace.longest_request if trace is not None else args.prompt.high + args.output.high
    warnings = _warn("simulate", (workload.model.past_max_context(longest, "a request (prompt plus output)"),))
    if args.json:
        return json.dumps({**figures, "warnings": warnings}, indent=2, allow_nan=False) + "\n"
    report = simulation_report(
        run.result,
        hardware,
        workload,
        None if expected is None else expected.result,
        calibration,
        band_bounds=ttft_bound,
    )
    return report + speculation_lines(run, expected)


def _resolve_choices(args: argparse.Namespace, specs: SpecSet) -> SpecSet:
    """The one place where ``--gpu`` and ``--model`` values become ids, for every command that
    takes them: a path is read (a GPU file, a config.json) and its entry joins ``specs``.

    A command's ``--precision``, when not given, is the model's published weight format
    (``ModelSpec.weight_precision``: a config's quantization), else bf16. A given one wins, and
    then a config's quantization is not read (nor refused); ``table`` names its precisions."""
    if getattr(args, "gpu", None) is not None:
        specs, args.gpu = _resolved("--gpu", resolve_gpu, specs, args.gpu)
    given = getattr(args, "precision", None) is not None or args.command == "table"
    resolve = functools.partial(resolve_model, read_weights=not given)
    if getattr(args, "model", None) is not None:
        specs, args.model = _resolved("--model", resolve, specs, args.model)
    for index, value in enumerate(getattr(args, "models", None) or ()):
        specs, args.models[index] = _resolved("--model", resolve, specs, value)
    if hasattr(args, "precision") and args.precision is None:
        model = specs.models.get(args.model)
        args.precision = (model.weight_precision if model is not None else None) or DEFAULT_PRECISION
    return specs


def _resolved(
    option: str, resolve: Callable[[SpecSet, str], tuple[SpecSet, str]], specs: SpecSet, value: str
) -> tuple[SpecSet, str]:
    try:
        return resolve(specs, value)
    except SpecError as error:
        # The option leads the line; message and hint keep their own length limits, so a long
        # path does not cut the hint (the supported architectures) off the end.
        where = {"file": f"{option}: {error.file}"} if error.file else {}
        message = error.message if error.file else f"{option}: {error.message}"
        located = SpecError(message, entry=error.entry, field=error.field, hint=error.hint, **where)
        located.missing = error.missing
        raise located from None


def _check_source(source: str) -> None:
    """``--source`` is where the config comes from, an ``http://`` or ``https://`` URL: a
    ``javascript:`` or ``file:`` one would be written into the entry and shown as a link."""
    parts = urllib.parse.urlsplit(source) if source.isprintable() else None
    if parts is None or parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise SpecError(
            f"must be an http(s) URL, got {shown(source)}",
            field="source",
            hint="give the page the config comes from, e.g. https://huggingface.co/ORG/MODEL/blob/main/config.json",
        )
    if len(source) > SOURCE_LENGTH:
        raise SpecError(
            f"must be at most {SOURCE_LENGTH:,} characters, got {len(source):,}",
            field="source",
            hint="give the page's URL without its query",
        )


def _run_model_import(args: argparse.Namespace) -> str:
    """A config.json (or the folder holding one, as ``--model`` takes it) as a checked ``[model."ID"]``
    entry: printed, or written to a new file. A given ``--id`` must be an id (an empty one too), and
    ``--source`` an http(s) URL within the source's length, each refused in one line otherwise."""
    if args.id is not None:
        try:
            check_id(args.id)
        except SpecError as error:
            raise SpecError(f"--id: {error.message}", hint=error.hint) from None
    if args.source is not None:
        _check_source(args.source)
    model = read_config(config_path(args.config), model_id=args.id, name=args.name, source=args.source)
    header = f"# Written by `roofline model import` from {one_line(args.config)}; add it to a file for --specs\n"
    header += "# or to roofline/data/models.toml. Check the values against the model card.\n"
    text = header + model_entry_toml(model)
    if args.output is None:
        return text
    try:
        with open(args.output, "x", encoding="utf-8") as out:
            out.write(text)
    except FileExistsError:
        raise SpecError("exists already", file=args.output, hint="name a new file, or delete this one") from None
    except OSError as error:
        raise SpecError(f"cannot write: {error.strerror or error}", file=args.output) from None
    return (
        one_line(
            f'{args.output}: wrote [model."{model.id}"] {model.name}: {fmt.parameters(arch.total_parameters(model))}'
            f" parameters, {fmt.parameters(arch.active_parameters(model))} active,"
            f" KV cache {fmt.bytes_size(arch.kv_cache_bytes_per_token(model))} per token (bf16)"
        )
        + "\n"
    )


# -- roofline speculate ------------------------------------------------------------------


def _add_speculate_parser(commands: argparse._SubParsersAction) -> None:
    run = commands.add_parser(
        "speculate", help="speculative decoding: tokens per step, speedup and the batch where it stops paying"
    )
    run.add_argument("--gpu", required=True, help=GPU_HELP)
    run.add_argument("--model", required=True, help=f"target {MODEL_HELP}")
    run.add_argument("--gpus", type=_whole_number(GPUS_RANGE), default=1, help=f"GPUs, {_span(GPUS_RANGE)} (default 1)")
    run.add_argument("--precision", type=_precision, help=_PRECISION_HELP)
    run.add_argument(
        "--gamma",
        type=_whole_number(GAMMA_RANGE),
        required=True,
        metavar="K",
        help=f"draft tokens per round, {_span(GAMMA_RANGE)}",
    )
    given = run.add_mutually_exclusive_group(required=True)
    given.add_argument(
        "--alpha", type=_number_in((0.0, 1.0)), metavar="A", help="acceptance rate of one draft token, 0 to 1"
    )
    given.add_argument(
        "--speedup",
        type=_number_in((1e-6, 1e6)),
        metavar="S",
        help="a measured speedup to solve the acceptance rate from",
    )
    run.add_argument("--draft", metavar="MODEL", help="draft model id: its own decode step sets the draft cost")
    run.add_argument(
        "--draft-cost",
        type=_number_in((0.0, 10.0)),
        metavar="C",
        help="draft step ÷ target step, 0 to 10 (default: the --draft model's, else 0, a free draft)",
    )
    run.add_argument(
        "--batch", type=_whole_number(BATCH_RANGE), default=1, help=f"users decoding together, {_span(BATCH_RANGE)}"
    )
    run.add_argument(
        "--context",
        type=_whole_number(CONTEXT_RANGE),
        default=0,
        help=f"tokens cached per user, {_span(CONTEXT_RANGE)} (default 0)",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    _add_specs_option(run)


def _run_speculate(args: argparse.Namespace, specs: SpecSet) -> str:
    _check_id("--gpu", specs.gpu, args.gpu)
    _check_id("--model", specs.model, args.model)
    draft = None
    if args.draft is not None:
        _check_id("--draft", specs.draft, args.draft)
        draft = specs.draft(args.draft)
    hardware = Hardware(specs.gpu(args.gpu), args.gpus)
    workload = Workload(specs.model(args.model), args.precision, batch=args.batch, context=args.context)
    try:
        result = speculate(
            hardware,
            workload,
            args.gamma,
            alpha=args.alpha,
            speedup=args.speedup,
            draft=draft,
            draft_cost=args.draft_cost,
        )
    except SpecError as error:
        option = "--" + (error.field or "").replace("_", "-")
        raise SpecError(f"{option}: {error.message}", hint=error.hint) from None
    figures = result.to_dict()
    _check_finite(figures)
    if args.json:
        return json.dumps(figures, indent=2, allow_nan=False) + "\n"
    return speculation_report(result)


def _run(args: argparse.Namespace) -> int:
    try:
        if args.command == "validate":
            return _run_validate(args.files)
        if args.command == "model":
            output = _run_model_import(args)
            sys.stdout.write(output)
            return 0
        specs = _resolve_choices(args, load_specs(args.specs))
        if args.command == "estimate":
            output = _run_estimate(args, specs)
        elif args.command == "list":
            output = _run_list(args.what, specs)
        elif args.command == "simulate":
            output = _run_simulate(args, specs)
        elif args.command == "speculate":
            output = _run_speculate(args, specs)
        else:
            output = _run_table(args, specs)
    except SpecError as error:
        sys.stderr.write(f"roofline {args.command}: error: {error}\n")
        return EXIT_BAD_INPUT
    sys.stdout.write(output)
    return 0


def _stop_writing_stdout() -> None:
    """Point stdout at the null device, so the interpreter's last flush at exit cannot fail again."""
    try:
        sys.stdout.flush()
    except OSError:
        pass
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # no real descriptor (a test's capture, Pyodide)
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (see the module docstring)."""
    command = ""
    try:
        args = build_parser().parse_args(argv)
        command = f" {args.command}"
        status = _run(args)
        sys.stdout.flush()
        return status
    except MemoryError:
        pass  # said below: out of this clause, the traceback and the memory its frames hold are freed
    except KeyboardInterrupt:
        _stop_writing_stdout()
        return EXIT_INTERRUPTED
    except OSError as error:
        if error.errno not in _WRITE_FAILURES:
            raise
        # A closed pipe (| head) is the reader's choice; say nothing. A full disk is worth one line.
        if error.errno != errno.EPIPE:
            sys.stderr.write(f"roofline: error: cannot write the output: {os.strerror(error.errno)}\n")
        _stop_writing_stdout()
        return EXIT_OUTPUT_FAILED
    # Input within every documented range can still ask for more memory than this machine lends
    # (a --model config, a long simulation under `ulimit -v`): bad input for this machine, one line.
    sys.stderr.write(
        f"roofline{command}: error: out of memory: this input needs more memory than this machine gives the"
        " process (ask for less: fewer --requests or --models, shorter lengths, a smaller file)\n"
    )
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
