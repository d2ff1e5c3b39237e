"""The ``roofline`` command. Bad input ends with one line on stderr and exit status 2.

roofline estimate --gpu h100-sxm --model llama-3.1-8b [--json]
roofline list gpus|models|precisions|kv-precisions
roofline validate FILE...
roofline table [--gpu ID] [--model ID ...] [--precisions P,P] [--format markdown|csv|text]
roofline simulate --gpu ID --model ID [--policy static|continuous|chunked] [--admission paged|reserve]
                  [--rate R|inf | --concurrency N] ... [--json]

Exit status: 0 done; 1 the output could not be written (a full disk, a closed
pipe), said in one line; 2 bad input; 130 interrupted (Ctrl-C), silently.
Every number printed is finite, and ``--json`` is strict JSON (no NaN, no Infinity).
"""

from __future__ import annotations

import argparse
import errno
import json
import math
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from . import architecture as arch
from . import formatting as fmt
from .calibration import COSTS, load_calibration
from .errors import SpecError, did_you_mean, one_line, shown
from .estimate import estimate
from .kvformats import KV_FORMAT_NAMES, KV_FORMATS
from .loader import SpecSet, load_specs, read_spec_file
from .measured import load_measurements
from .performance import DEFAULT_USABLE_FRACTION, Hardware, Workload
from .precisions import AUTO, DEFAULT_COMPUTE_PRECISION, FORMATS, PRECISIONS
from .report import simulation_report, text_report
from .serving import (
    ADMISSIONS,
    CONCURRENCY_RANGE,
    MAX_BATCH_RANGE,
    MAX_REQUESTS,
    POLICIES,
    PREEMPTIONS,
    RATE_RANGE,
    SEED_RANGE,
    SLO_RANGE_S,
    TOKEN_BUDGET_RANGE,
    ServingConfig,
    parse_lengths,
    simulate,
    simulate_expected,
)
from .sweep import Table, decode_prefill_rows, decode_prefill_table

EXIT_OUTPUT_FAILED = 1
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

#: Why writing stdout can fail: a closed pipe, a full disk or quota, a dead device.
_WRITE_FAILURES = {
    getattr(errno, name) for name in ("EPIPE", "ENOSPC", "EDQUOT", "EFBIG", "EIO") if hasattr(errno, name)
}
#: ASCII digits only (``int()`` would also take "١٢"), with ``_`` or ``,`` between groups.
_WHOLE_NUMBER = re.compile(r"[+-]?[0-9][0-9_,]*")
#: A decimal number in ASCII (``float()`` would also take "１０"): digits with ``_`` or ``,``
#: only between two of them, an optional fraction and exponent.
_DECIMAL = re.compile(r"[+-]?(?:[0-9](?:[_,]?[0-9])*(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: How ``--rate`` asks for every request at once (a benchmark's "request rate inf").
_EVERY_AT_ONCE = ("inf", "infinity")


class _Parser(argparse.ArgumentParser):
    """argparse, but an error is one line (no usage block) so scripts and readers see only the cause."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, one_line(f"{self.prog}: error: {message} (see {self.prog} --help)") + "\n")


def _span(bounds: tuple[int, int]) -> str:
    return f"{bounds[0]:,} to {bounds[1]:,}"


def _whole_number(bounds: tuple[int, int]) -> Callable[[str], int]:
    """A parser for a whole number within ``bounds``, written with ASCII digits (``1_000`` and ``1,000`` too)."""
    minimum, maximum = bounds

    def parse(text: str) -> int:
        written = text.strip()
        if not _WHOLE_NUMBER.fullmatch(written):
            raise argparse.ArgumentTypeError(f"must be a whole number, got {shown(text)}")
        digits = written.replace("_", "").replace(",", "")
        # Measured before int(): a 5,000-digit number is refused, never converted.
        if len(digits.lstrip("+-").lstrip("0")) > len(str(maximum)):
            if digits.startswith("-"):
                raise argparse.ArgumentTypeError(f"must be at least {minimum:,}, got {shown(text)}")
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}, got a {len(digits):,}-digit number")
        value = int(digits)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum:,}, got {value:,}")
        if value > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:,}, got {value:,}")
        return value

    return parse


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


def _fraction(text: str) -> float:
    low, high = USABLE_FRACTION_RANGE
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {shown(text)}") from None
    if not low <= value <= high:  # NaN fails this too
        raise argparse.ArgumentTypeError(f"must be between {low:g} and {high:g}, got {shown(text)}")
    return value


def _number_in(bounds: tuple[float, float], *, infinite: bool = False) -> Callable[[str], float]:
    """A parser for a finite number within ``bounds`` (a rate, a latency target), written in
    ASCII; with ``infinite``, ``inf`` too."""
    low, high = bounds

    def parse(text: str) -> float:
        written = text.strip()
        if infinite and written.lower() in _EVERY_AT_ONCE:
            return math.inf
        if not _DECIMAL.fullmatch(written):
            words = " or inf (every request at time 0)" if infinite else ""
            raise argparse.ArgumentTypeError(f"must be a number{words}, got {shown(text)}")
        value = float(written.replace("_", "").replace(",", ""))
        if not low <= value <= high:  # overflow to inf fails this too
            raise argparse.ArgumentTypeError(f"must be between {low:g} and {high:g}, got {shown(text)}")
        return value

    return parse


def _lengths(option: str) -> Callable[[str], object]:
    def parse(text: str) -> object:
        try:
            return parse_lengths(text, option)
        except SpecError as error:
            raise argparse.ArgumentTypeError(f"{error.message}" + (f" ({error.hint})" if error.hint else "")) from None

    return parse


def _add_specs_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--specs",
        nargs="+",
        default=[],
        metavar="FILE",
        help="extra TOML spec files; their entries add to or replace the built-in ones",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser for every subcommand."""
    parser = _Parser(prog="roofline", description="Roofline estimates of LLM inference from GPU and model specs.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = commands.add_parser("estimate", help="decode speed, prefill time and memory for one deployment")
    run.add_argument("--gpu", required=True, help="GPU id (see: roofline list gpus)")
    run.add_argument("--model", required=True, help="model id (see: roofline list models)")
    run.add_argument("--precision", type=_precision, default="bf16", help="weight precision (default bf16)")
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
        "--attention-dp",
        action="store_true",
        help="data-parallel attention: each GPU keeps its own users' cache (a latent MLA cache is"
        " otherwise held whole by every GPU)",
    )
    run.add_argument(
        "--allreduce-latency",
        type=_number_in(ALLREDUCE_LATENCY_RANGE),
        default=None,
        metavar="S",
        help="fixed seconds per all-reduce whatever the GPU count, overriding the GPU spec's measured presets",
    )
    run.add_argument(
        "--allreduce-preset",
        default=None,
        metavar="NAME",
        help="charge each all-reduce the GPU spec's preset NAME at this GPU count (nccl, vllm_custom,"
        " custom_oneshot) instead of the smallest",
    )
    run.add_argument(
        "--costs",
        choices=COSTS,
        default="ceiling",
        help="ceiling: the upper bound (default); expected: also the calibrated prediction and its band",
    )
    run.add_argument(
        "--shared-prefix",
        type=_whole_number(CONTEXT_RANGE),
        default=0,
        metavar="T",
        help=f"first T tokens of every context are shared, stored and read once, {_span(CONTEXT_RANGE)} (default 0)",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    _add_specs_option(run)

    listing = commands.add_parser("list", help="list known GPUs, models or precisions")
    listing.add_argument("what", choices=("gpus", "models", "precisions", "kv-precisions"))
    _add_specs_option(listing)

    validate = commands.add_parser("validate", help="check spec files and report the first error in each")
    validate.add_argument("files", nargs="+", metavar="FILE")

    table = commands.add_parser("table", help="models × weight precisions: decode tokens/s and prefill ms")
    table.add_argument("--gpu", default="h100-sxm", help="GPU id (default h100-sxm)")
    table.add_argument("--model", action="append", dest="models", metavar="ID", help="a model id; repeat for more")
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
    return parser


def _add_simulate_parser(commands: argparse._SubParsersAction) -> None:
    defaults = ServingConfig()
    run = commands.add_parser(
        "simulate",
        help="serve a stream of requests and report latency and throughput",
        description="Serve a stream of requests on one model replica in a deterministic discrete-event"
        " simulation whose iterations take their roofline time (roofline/serving.py explains the model).",
    )
    run.add_argument("--gpu", required=True, help="GPU id (see: roofline list gpus)")
    run.add_argument("--model", required=True, help="model id (see: roofline list models)")
    run.add_argument(
        "--gpus",
        type=_whole_number(GPUS_RANGE),
        default=1,
        help=f"GPUs, {_span(GPUS_RANGE)}, splitting every layer and paying its all-reduces (default 1)",
    )
    run.add_argument("--precision", type=_precision, default="bf16", help="weight precision (default bf16)")
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
    run.add_argument("--policy", choices=POLICIES, default=defaults.policy, help="scheduler (default %(default)s)")
    run.add_argument(
        "--admission",
        choices=ADMISSIONS,
        default=defaults.admission,
        help="KV memory: paged allocates 16-token blocks as tokens are written and preempts when none is"
        " free (vLLM); reserve holds prompt + true output length up front (the vLLM paper's Orca oracle)"
        " (default %(default)s)",
    )
    run.add_argument(
        "--preemption",
        choices=PREEMPTIONS,
        default=defaults.preemption,
        help="paged only: recompute frees a preempted request's blocks and prefills its prompt and tokens"
        " again; swap copies them to host memory and back over the GPU's host link (default %(default)s)",
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
        "--prompt",
        type=_lengths("--prompt"),
        default=defaults.prompt,
        help="prompt tokens, N or uniform LO:HI (default %(default)s)",
    )
    run.add_argument(
        "--output",
        type=_lengths("--output"),
        default=defaults.output,
        help="output tokens, N or uniform LO:HI (default %(default)s)",
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
        default=defaults.token_budget,
        help="most tokens per iteration, vLLM's max_num_batched_tokens; chunked only (default %(default)s)",
    )
    run.add_argument(
        "--ttft-slo",
        type=_number_in(SLO_RANGE_S),
        default=defaults.ttft_slo_s,
        help="time-to-first-token target for goodput, s (default %(default)g)",
    )
    run.add_argument(
        "--tpot-slo",
        type=_number_in(SLO_RANGE_S),
        default=defaults.tpot_slo_s,
        help="time-per-output-token target for goodput, s (default %(default)g)",
    )
    run.add_argument(
        "--seed",
        type=_whole_number(SEED_RANGE),
        default=defaults.seed,
        help="seed of the arrivals and lengths (default %(default)s)",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    _add_specs_option(run)


def _precision_hint(error: SpecError) -> SpecError:
    """A GPU without the asked math precision: say which option picks another."""
    if error.field != "dense_flops_per_s":
        return error
    return SpecError(error.message, hint=f"{error.hint}; pick one with --compute-precision")


def _run_estimate(args: argparse.Namespace, specs: SpecSet) -> str:
    _check_id("--gpu", specs.gpu, args.gpu)
    _check_id("--model", specs.model, args.model)
    if args.allreduce_preset is not None and args.allreduce_latency is not None:
        raise SpecError(
            "--allreduce-preset: cannot be combined with --allreduce-latency",
            hint="a preset is a measured latency that grows with the GPU count; --allreduce-latency fixes one;"
            " give one of the two",
        )
    try:
        result = estimate(
            args.gpu,
            args.model,
            precision=args.precision,
            kv_precision=args.kv_precision,
            compute_precision=args.compute_precision,
            gpus=args.gpus,
            batch=args.batch,
            context=args.context,
            prompt=args.prompt,
            shared_prefix=args.shared_prefix,
            usable_fraction=args.usable_fraction,
            attention_dp=args.attention_dp,
            allreduce_latency_s=args.allreduce_latency,
            allreduce_preset=args.allreduce_preset,
            costs=args.costs,
            specs=specs,
        )
    except SpecError as error:
        raise _precision_hint(error) from None
    figures = result.to_dict()
    _check_finite(figures)
    if args.json:
        return json.dumps(figures, indent=2, allow_nan=False) + "\n"
    return text_report(result)


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
            )
            for model in specs.models.values()
        ]
        return Table(("id", "name", "parameters", "active", "KV per token (bf16)"), tuple(rows)).text()
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
        except SpecError as error:
            sys.stderr.write(f"roofline validate: error: {error}\n")
            status = EXIT_BAD_INPUT
            continue
        sys.stdout.write(one_line(f"{path}: ok ({len(found.gpus)} GPUs, {len(found.models)} models)") + "\n")
    return status


def _run_table(args: argparse.Namespace, specs: SpecSet) -> str:
    _check_id("--gpu", specs.gpu, args.gpu)
    models = list(dict.fromkeys(args.models)) if args.models else None  # a repeated --model gives one row
    for model_id in models or ():
        _check_id("--model", specs.model, model_id)
    rows = decode_prefill_rows(specs, args.gpu, models, precisions=args.precisions, prompt=args.prompt)
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
    "usable_fraction": "--usable-fraction",
}


def _run_simulate(args: argparse.Namespace, specs: SpecSet) -> str:
    _check_id("--gpu", specs.gpu, args.gpu)
    _check_id("--model", specs.model, args.model)
    if args.concurrency is not None and args.rate is not None:
        raise SpecError(
            "--concurrency: cannot be combined with --rate",
            hint="a closed loop of N clients sets its own arrivals; give one of the two",
        )
    # A bad calibration file names itself and its field, not a simulate option: loaded outside the try.
    calibration = load_calibration() if args.costs == "expected" else None
    try:
        hardware = Hardware(specs.gpu(args.gpu), args.gpus, args.compute_precision, args.usable_fraction)
        workload = Workload(specs.model(args.model), args.precision, args.kv_precision)
        config = ServingConfig(
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
        )
        result = simulate(hardware, workload, config)
        expected = None if calibration is None else simulate_expected(hardware, workload, config, calibration)
    except SpecError as error:
        error = _precision_hint(error)
        if error.field is None:
            raise error from None
        option = _SIMULATE_OPTIONS.get(error.field, "--" + error.field.replace("_", "-"))
        raise SpecError(f"{option}: {error.message}", hint=error.hint) from None
    figures = result.to_dict()
    if expected is not None and calibration is not None:
        expected_figures = expected.to_dict()
        figures.update(costs="expected", expected=expected_figures, band=calibration.bands(expected_figures))
    _check_finite(figures)
    if args.json:
        return json.dumps(figures, indent=2, allow_nan=False) + "\n"
    return simulation_report(result, hardware, workload, expected, calibration)


def _run(args: argparse.Namespace) -> int:
    try:
        if args.command == "validate":
            return _run_validate(args.files)
        specs = load_specs(args.specs)
        if args.command == "estimate":
            output = _run_estimate(args, specs)
        elif args.command == "list":
            output = _run_list(args.what, specs)
        elif args.command == "simulate":
            output = _run_simulate(args, specs)
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
    try:
        args = build_parser().parse_args(argv)
        status = _run(args)
        sys.stdout.flush()
        return status
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


if __name__ == "__main__":
    sys.exit(main())
