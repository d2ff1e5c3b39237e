"""The ``roofline`` command. Bad input ends with one line on stderr and exit status 2.

roofline estimate --gpu h100-sxm --model llama-3.1-8b [--json]
roofline list gpus|models|precisions
roofline validate FILE...
roofline table [--gpu ID] [--model ID ...] [--precisions P,P] [--format markdown|csv|text]
roofline simulate --gpu ID --model ID [--policy static|continuous|chunked] [--rate R] ... [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from . import architecture as arch
from . import formatting as fmt
from .errors import SpecError, did_you_mean
from .estimate import estimate
from .loader import SpecSet, load_specs, read_spec_file
from .performance import Hardware, Workload
from .precisions import BYTES_PER_VALUE, DEFAULT_COMPUTE_PRECISION, PRECISIONS
from .report import simulation_report, text_report
from .serving import POLICIES, ServingConfig, parse_lengths, simulate
from .sweep import CHAPTER_PRECISIONS, CHAPTER_PROMPT_TOKENS, Table, decode_prefill_rows, decode_prefill_table

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but an error is one line (no usage block) so scripts and readers see only the cause."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _whole_number(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.replace("_", "").replace(",", ""))
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a whole number, got '{text}'") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def _precision(text: str) -> str:
    if text not in PRECISIONS:
        hint = did_you_mean(text, PRECISIONS) or "choose one of " + ", ".join(PRECISIONS)
        raise argparse.ArgumentTypeError(f"unknown precision '{text}' ({hint})")
    return text


def _precision_list(text: str) -> tuple[str, ...]:
    return tuple(_precision(part.strip()) for part in text.split(",") if part.strip())


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got '{text}'") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be above 0 and at most 1, got {text}")
    return value


def _positive_number(text: str) -> float:
    try:
        value = float(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got '{text}'") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return value


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
    run.add_argument("--kv-precision", type=_precision, default="bf16", help="KV-cache precision (default bf16)")
    run.add_argument(
        "--compute-precision",
        type=_precision,
        default=DEFAULT_COMPUTE_PRECISION,
        help="math precision that sets the peak FLOP/s (default bf16: weight-only quantization)",
    )
    run.add_argument("--gpus", type=_whole_number(1), default=1, help="GPUs, ideal tensor parallelism (default 1)")
    run.add_argument("--batch", type=_whole_number(1), default=1, help="users decoding together (default 1)")
    run.add_argument("--context", type=_whole_number(0), default=0, help="tokens cached per user (default 0)")
    run.add_argument("--prompt", type=_whole_number(0), default=0, help="prompt tokens to prefill (default 0)")
    run.add_argument("--usable-fraction", type=_fraction, default=0.9, help="share of memory usable (default 0.9)")
    run.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    _add_specs_option(run)

    listing = commands.add_parser("list", help="list known GPUs, models or precisions")
    listing.add_argument("what", choices=("gpus", "models", "precisions"))
    _add_specs_option(listing)

    validate = commands.add_parser("validate", help="check spec files and report the first error in each")
    validate.add_argument("files", nargs="+", metavar="FILE")

    table = commands.add_parser("table", help="models × weight precisions: decode tokens/s and prefill ms")
    table.add_argument("--gpu", default="h100-sxm", help="GPU id (default h100-sxm)")
    table.add_argument("--model", action="append", dest="models", metavar="ID", help="a model id; repeat for more")
    table.add_argument(
        "--precisions",
        type=_precision_list,
        default=CHAPTER_PRECISIONS,
        help="comma-separated weight precisions (default bf16,fp8,int4)",
    )
    table.add_argument("--prompt", type=_whole_number(1), default=CHAPTER_PROMPT_TOKENS, help="prompt tokens")
    table.add_argument("--format", choices=("markdown", "csv", "text"), default="markdown")
    _add_specs_option(table)
    _add_simulate_parser(commands)
    return parser


def _add_simulate_parser(commands: argparse._SubParsersAction) -> None:
    defaults = ServingConfig()
    run = commands.add_parser("simulate", help="serve a stream of requests and report latency and throughput")
    run.add_argument("--gpu", required=True, help="GPU id (see: roofline list gpus)")
    run.add_argument("--model", required=True, help="model id (see: roofline list models)")
    run.add_argument("--gpus", type=_whole_number(1), default=1, help="GPUs, ideal tensor parallelism (default 1)")
    run.add_argument("--precision", type=_precision, default="bf16", help="weight precision (default bf16)")
    run.add_argument("--kv-precision", type=_precision, default="bf16", help="KV-cache precision (default bf16)")
    run.add_argument("--policy", choices=POLICIES, default=defaults.policy, help="scheduler (default %(default)s)")
    run.add_argument(
        "--rate", type=_positive_number, default=defaults.rate, help="Poisson arrivals per second (default %(default)g)"
    )
    run.add_argument(
        "--requests", type=_whole_number(1), default=defaults.requests, help="requests to serve (default %(default)s)"
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
        type=_whole_number(1),
        default=defaults.max_batch,
        help="most requests running at once (default %(default)s)",
    )
    run.add_argument(
        "--token-budget",
        type=_whole_number(1),
        default=defaults.token_budget,
        help="most tokens per iteration, chunked only (default %(default)s)",
    )
    run.add_argument(
        "--ttft-slo",
        type=_positive_number,
        default=defaults.ttft_slo_s,
        help="time-to-first-token target for goodput, s (default %(default)g)",
    )
    run.add_argument(
        "--tpot-slo",
        type=_positive_number,
        default=defaults.tpot_slo_s,
        help="time-per-output-token target for goodput, s (default %(default)g)",
    )
    run.add_argument(
        "--seed",
        type=_whole_number(0),
        default=defaults.seed,
        help="seed of the arrivals and lengths (default %(default)s)",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    _add_specs_option(run)


def _run_estimate(args: argparse.Namespace, specs: SpecSet) -> str:
    _check_id("--gpu", specs.gpu, args.gpu)
    _check_id("--model", specs.model, args.model)
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
        usable_fraction=args.usable_fraction,
        specs=specs,
    )
    if args.json:
        return json.dumps(result.to_dict(), indent=2) + "\n"
    return text_report(result)


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
    rows = [(name, f"{size:g}") for name, size in BYTES_PER_VALUE.items()]
    return Table(("precision", "bytes per value"), tuple(rows)).text()


def _run_validate(files: Sequence[str]) -> int:
    """Check each file on its own: "ok" lines go to stdout, one error line per bad file to stderr."""
    status = 0
    for path in files:
        try:
            found = read_spec_file(path)
        except SpecError as error:
            sys.stderr.write(f"roofline validate: error: {error}\n")
            status = EXIT_BAD_INPUT
            continue
        sys.stdout.write(f"{path}: ok ({len(found.gpus)} GPUs, {len(found.models)} models)\n")
    return status


def _run_table(args: argparse.Namespace, specs: SpecSet) -> str:
    _check_id("--gpu", specs.gpu, args.gpu)
    for model_id in args.models or ():
        _check_id("--model", specs.model, model_id)
    rows = decode_prefill_rows(specs, args.gpu, args.models, args.precisions, args.prompt)
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
}


def _run_simulate(args: argparse.Namespace, specs: SpecSet) -> str:
    _check_id("--gpu", specs.gpu, args.gpu)
    _check_id("--model", specs.model, args.model)
    hardware = Hardware(specs.gpu(args.gpu), args.gpus)
    workload = Workload(specs.model(args.model), args.precision, args.kv_precision)
    try:
        config = ServingConfig(
            policy=args.policy,
            rate=args.rate,
            requests=args.requests,
            prompt=args.prompt,
            output=args.output,
            max_batch=args.max_batch,
            token_budget=args.token_budget,
            ttft_slo_s=args.ttft_slo,
            tpot_slo_s=args.tpot_slo,
            seed=args.seed,
        )
        result = simulate(hardware, workload, config)
    except SpecError as error:
        option = _SIMULATE_OPTIONS.get(error.field or "", "--" + (error.field or "").replace("_", "-"))
        raise SpecError(f"{option}: {error.message}", hint=error.hint) from None
    if args.json:
        return json.dumps(result.to_dict(), indent=2) + "\n"
    return simulation_report(result, hardware, workload)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0, or 2 for bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
