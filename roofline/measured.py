"""Published measurements beside the ceilings: what real servers reach, and how far below.

``data/measurements.toml`` holds the measurements, each with its hardware,
software, workload and source. ``compare`` computes the ceiling for the same
hardware and workload and the ratio measured ÷ ceiling (for a time, ceiling ÷
measured), so every ratio reads the same way: 1.0 is the ceiling reached.
``well_tuned_decode_range`` turns the single-GPU decode ratios into the range
the calculator quotes as "expected on a well-tuned stack".

Two kinds compare the parallelism chapter's figures with what was measured: an
all-reduce's latency (``allreduce_latency_s``), whose ceiling is the smallest fixed
latency the GPU's specs hold at that many GPUs, and one split's speed against
another's on the same GPUs (``split_speedup_per_user``, ``split_speedup_total``:
TP8's tokens/s ÷ PP8's, say), which ``roofline.deployment`` computes for both. A
ratio of two ceilings bounds nothing, so a split's speedup is compared with the
package's (measured ÷ the package's ratio) but not held under it (``BOUNDED``).
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from . import architecture as arch
from .deployment import deploy, memory_per_gpu, split_for
from .errors import SpecError, did_you_mean, shown
from .loader import SpecSet, _decode_toml, decode_spec_text, load_specs, read_spec_bytes
from .performance import (
    CEILING,
    CostModel,
    Hardware,
    Workload,
    allreduces_per_pass,
    communication_s,
    decode_pass,
    decode_step,
    kv_copies,
    memory_use,
    prefill_pass,
    resolved,
)
from .precisions import AUTO, check_precision
from .specs import _check_field

MEASUREMENTS_FILE = "roofline/data/measurements.toml"

#: Metric -> (kind of comparison, whether larger is better).
METRICS: dict[str, bool] = {
    "decode_tokens_per_s_per_user": True,
    "inter_token_latency_s": False,
    "time_to_first_token_s": False,
    "output_tokens_per_s_total": True,
    "hbm_bandwidth_bytes_per_s": True,
    "gemm_flops_per_s": True,
    "allreduce_latency_s": False,
    "split_speedup_per_user": True,
    "split_speedup_total": True,
}
_MICROBENCHMARKS = ("hbm_bandwidth_bytes_per_s", "gemm_flops_per_s", "allreduce_latency_s")
#: One split's figure ÷ another's on the same GPUs: decode tokens/s of one user, or output tokens/s
#: of all users together.
SPLIT_METRICS = ("split_speedup_per_user", "split_speedup_total")
#: The splits a speedup may compare: every layer over all the GPUs, or one GPU per pipeline stage.
SPLITS = ("tp", "pp")
#: Metrics whose ceiling is an upper bound, which no measurement without speculation may pass.
BOUNDED = tuple(metric for metric in METRICS if metric not in SPLIT_METRICS)
#: How far a split's measured speedup may sit from the package's, either way, before the entry is
#: taken for a slip (a ratio typed upside down, the wrong GPU count) rather than a result.
SPLIT_SPREAD = 10.0
_COMMON_KEYS = (
    "gpu",
    "gpus",
    "hardware",
    "software",
    "software_version",
    "compute_precision",
    "metric",
    "value",
    "source",
    "section",
    "date",
    "speculative",
)
_MODEL_KEYS = ("model", "weight_precision", "kv_precision", "batch", "input_tokens", "output_tokens")
_SPLIT_KEYS = ("split", "versus")
#: Optional keys: a note, and whether the lengths are the comparison's assumption (the source gives none).
_OPTIONAL_KEYS = ("note", "lengths_assumed")
#: Matched with ``fullmatch``, as spec ids are: ``$`` would also take an id ending in a newline.
_ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_DATE_PATTERN = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")  # ASCII digits: \\d takes any script's
_TEXT_KEYS = ("hardware", "software", "software_version", "section", "source", "date")
#: Keys that name something (a GPU, a model, a precision, a metric): text, checked before it is looked up.
_NAME_KEYS = ("gpu", "metric", "compute_precision", "model", "weight_precision", "kv_precision")

# The plausible ranges the file's header states, inclusive. They keep every ceiling a
# finite number and catch a slipped unit or an extra zero before it reaches a chart.
#: GPUs working together, as ``roofline estimate --gpus`` takes them.
GPUS_RANGE = (1, 100_000)
#: Concurrent users, as ``roofline estimate --batch`` takes them.
BATCH_RANGE = (1, 1_000_000)
#: Prompt and generated tokens, as ``roofline estimate --context`` takes them.
TOKENS_RANGE = (0, 100_000_000)
#: A measured figure in its metric's unit: a nanosecond to a zettaFLOP/s.
VALUE_RANGE = (1e-9, 1e21)
#: Longest text field, in characters (a spec file's source may be as long).
TEXT_LENGTH = 2000
#: Sources older than this are not about LLM inference.
FIRST_DATE = datetime.date(2000, 1, 1)
#: The most a speculative run may reach, as a multiple of its ceiling. Speculative decoding and
#: multi-token prediction accept a few tokens per weight read; ten times is far past any report.
SPECULATIVE_MAX_RATIO = 10.0
#: The least share of its ceiling a measurement may show: below a thousandth, a slipped unit
#: (milliseconds written as seconds, one GPU's figure as a cluster's) is likelier than a result.
MIN_RATIO = 1e-3

#: The chart's groups, in the order a reader meets them.
KINDS = (
    "single-GPU decode",
    "multi-GPU decode",
    "prefill (time to first token)",
    "maximum throughput",
    "HBM bandwidth",
    "GEMM rate",
    "all-reduce latency",
    "one split against another",
)


@dataclass(frozen=True)
class Measurement:
    """One published figure and the conditions it was measured under (see the file's header)."""

    id: str
    gpu: str
    gpus: int
    hardware: str
    software: str
    software_version: str
    compute_precision: str
    metric: str
    value: float
    source: str
    section: str
    date: str
    speculative: bool
    note: str = ""
    model: str = ""
    weight_precision: str = "bf16"
    kv_precision: str = "bf16"
    #: Concurrent users; None for a server kept full ("max").
    batch: int | None = 1
    input_tokens: int = 0
    output_tokens: int = 0
    #: The lengths are what the comparison assumes, the source giving none.
    lengths_assumed: bool = False
    #: For a split's speedup: the split measured faster or slower, and the one it is set against.
    split: str = ""
    versus: str = ""

    @property
    def kind(self) -> str:
        """The group the chart puts it in (one of ``KINDS``)."""
        if self.metric in ("decode_tokens_per_s_per_user", "inter_token_latency_s"):
            return "single-GPU decode" if self.gpus == 1 else "multi-GPU decode"
        if self.metric in SPLIT_METRICS:
            return "one split against another"
        return {
            "time_to_first_token_s": "prefill (time to first token)",
            "output_tokens_per_s_total": "maximum throughput",
            "hbm_bandwidth_bytes_per_s": "HBM bandwidth",
            "gemm_flops_per_s": "GEMM rate",
            "allreduce_latency_s": "all-reduce latency",
        }[self.metric]

    @property
    def bounded(self) -> bool:
        """Whether its ceiling is an upper bound (not a split's speedup, a ratio of two ceilings)."""
        return self.metric in BOUNDED

    @property
    def mean_context(self) -> int:
        """Tokens cached on average while the output is generated: ``input + output / 2``."""
        return self.input_tokens + self.output_tokens // 2


@dataclass(frozen=True)
class Comparison:
    """A measurement, its ceiling in the same unit, and how close it came."""

    measurement: Measurement
    ceiling: float
    #: Measured ÷ ceiling for rates, ceiling ÷ measured for times: 1.0 is the ceiling reached.
    ratio: float
    #: How the ceiling was computed, in words.
    accounting: str


def _fail(message: str, entry: str, field: str | None = None, hint: str | None = None) -> SpecError:
    # The file is named by parse_measurements, which knows it.
    return SpecError(message, entry=f'[measurement."{entry}"]', field=field, hint=hint)


def _checked(entry: str, key: str, kind: str, value: Any, bounds: tuple[float, float] = (1, 1)) -> None:
    """``value`` checked as the spec files check a field of ``kind`` (count, quantity, text, flag)."""
    try:
        _check_field(key, kind, value, *bounds)
    except SpecError as error:
        raise _fail(error.message, entry, key, error.hint) from None


def _date(entry: str, text: str) -> None:
    """``undated``, or a real calendar day from FIRST_DATE to today (a source is not from the future)."""
    if text == "undated":
        return
    try:
        day = datetime.date.fromisoformat(text) if _DATE_PATTERN.fullmatch(text) else None
    except ValueError:
        raise _fail(f"is not a day of the calendar, got {shown(text)}", entry, "date", "YYYY-MM-DD") from None
    if day is None:
        raise _fail(f"must be YYYY-MM-DD or 'undated', got {shown(text)}", entry, "date")
    if not FIRST_DATE <= day <= datetime.date.today():
        raise _fail(
            f"must be from {FIRST_DATE.isoformat()} to today, got {text}", entry, "date", "the source's own date"
        )


def _measurement(entry: str, table: Mapping[str, Any], specs: SpecSet) -> Measurement:
    metric = table.get("metric")
    if not isinstance(metric, str) or metric not in METRICS:
        hint = did_you_mean(metric, METRICS) if isinstance(metric, str) else None
        raise _fail(f"unknown metric {shown(metric)}", entry, "metric", hint or "one of " + ", ".join(METRICS))
    needed = _COMMON_KEYS + (() if metric in _MICROBENCHMARKS else _MODEL_KEYS)
    needed += _SPLIT_KEYS if metric in SPLIT_METRICS else ()
    allowed = (*_COMMON_KEYS, *_MODEL_KEYS, *_SPLIT_KEYS, *_OPTIONAL_KEYS)
    for key in table:
        if key not in allowed:
            raise _fail("unknown key", entry, key, did_you_mean(key, allowed) or "allowed: " + ", ".join(allowed))
        if key in _SPLIT_KEYS and metric not in SPLIT_METRICS:
            raise _fail(
                f"only a split's speedup names splits, not {metric}",
                entry,
                key,
                "use metric split_speedup_per_user or split_speedup_total, or leave it out",
            )
    for key in needed:
        if key not in table:
            raise _fail("is missing", entry, key)
    values: dict[str, Any] = {key: table[key] for key in table}
    # Every field's type and range first, so nothing below meets a list, a huge integer or a NaN.
    texts = (*_TEXT_KEYS, *(key for key in (*_NAME_KEYS, *_SPLIT_KEYS, "note") if key in values))
    for key in texts:
        _checked(entry, key, "text", values[key], (1, TEXT_LENGTH))
    if "lengths_assumed" in values:
        _checked(entry, "lengths_assumed", "flag", values["lengths_assumed"])
    if metric in SPLIT_METRICS:
        _split_names(entry, values["split"], values["versus"])
    if not re.fullmatch(r"https?://\S+", values["source"]):
        raise _fail(f"must be an http(s) URL, got {shown(values['source'])}", entry, "source")
    _date(entry, values["date"])
    _checked(entry, "speculative", "flag", values["speculative"])
    _checked(entry, "value", "quantity", values["value"], VALUE_RANGE)
    values["value"] = float(values["value"])
    _checked(entry, "gpus", "count", values["gpus"], GPUS_RANGE)
    _lookup(entry, "gpu", values["gpu"], specs.gpu)
    if values["compute_precision"] != AUTO:
        _lookup(entry, "compute_precision", values["compute_precision"], check_precision)
    if metric not in _MICROBENCHMARKS:
        _lookup(entry, "model", values["model"], specs.model)
        for key in ("weight_precision", "kv_precision"):
            _lookup(entry, key, values[key], check_precision)
        if values["batch"] == "max":
            values["batch"] = None
        else:
            _checked(entry, "batch", "count", values["batch"], BATCH_RANGE)
        _checked(entry, "input_tokens", "count", values["input_tokens"], TOKENS_RANGE)
        _checked(entry, "output_tokens", "count", values["output_tokens"], (1, TOKENS_RANGE[1]))
        if metric == "time_to_first_token_s" and values["input_tokens"] == 0:
            raise _fail(
                "must be at least 1 for a time to first token, got 0",
                entry,
                "input_tokens",
                "a first token follows the prefill of the prompt; give the prompt's length",
            )
    return Measurement(id=entry, **values)


def _split_names(entry: str, split: str, versus: str) -> None:
    """Both names are splits of ``SPLITS``, and not the same one."""
    for key, name in (("split", split), ("versus", versus)):
        if name not in SPLITS:
            hint = did_you_mean(name, SPLITS) or "one of " + ", ".join(SPLITS)
            raise _fail(f"unknown split {shown(name)}", entry, key, hint)
    if split == versus:
        raise _fail(f"compares {split} with itself", entry, "versus", "name the other split")


def _lookup(entry: str, key: str, value: Any, check) -> None:
    try:
        check(value)
    except SpecError as error:
        raise _fail(error.message, entry, key, error.hint) from None


def _check_ratio(measurement: Measurement, specs: SpecSet) -> None:
    """Refuse what the file's header rules out: a ratio that is not a finite number, a
    non-speculative run above its ceiling, a speculative one far above, or a figure so far
    below its ceiling that a unit must have slipped."""
    entry = measurement.id
    try:
        comparison = compare(measurement, specs)
    except SpecError as error:
        raise _fail(error.message, entry, error.field, error.hint) from None
    ratio = comparison.ratio
    if not measurement.bounded:
        if not math.isfinite(ratio) or not 1 / SPLIT_SPREAD <= ratio <= SPLIT_SPREAD:
            raise _fail(
                f"is {ratio:.3g} times the package's {comparison.ceiling:.3g} ({comparison.accounting})",
                entry,
                "value",
                f"a measured speedup more than {SPLIT_SPREAD:g} times off is likelier a slip:"
                " check which split is faster and the GPU count",
            )
        return
    ceiling = f"its ceiling ({comparison.ceiling:.4g}, {comparison.accounting})"
    most = SPECULATIVE_MAX_RATIO if measurement.speculative else 1.0
    if not math.isfinite(ratio) or ratio > most:
        shown_ratio = f"{ratio:,.3g}×" if math.isfinite(ratio) else "infinitely far"
        reason = f"is {shown_ratio} beyond {ceiling}"
        hint = (
            f"a speculative run may beat the ceiling, by at most {SPECULATIVE_MAX_RATIO:g}×; check the unit"
            if measurement.speculative
            else "only speculative runs may beat a ceiling: check the unit, the GPU count and the batch,"
            " or set speculative = true"
        )
        raise _fail(reason, entry, "value", hint)
    if ratio < MIN_RATIO:
        raise _fail(
            f"is {ratio:.3g} of {ceiling}, under a thousandth",
            entry,
            "value",
            "check the unit (seconds, not milliseconds) and the GPU count",
        )


def parse_measurements(
    text: str, specs: SpecSet | None = None, label: str = MEASUREMENTS_FILE
) -> tuple[Measurement, ...]:
    """Parse a measurements file's TOML ``text`` (``label`` names it in errors); the first bad
    entry raises a one-line SpecError naming file, entry and field.

    Each entry is checked against the rules of the file's header: types, ranges, real
    dates, and a ratio to its ceiling that the header allows (``_check_ratio``), so
    every measurement that loads has a finite ceiling and ratio to chart.
    """
    specs = specs or load_specs()
    document = _decode_toml(text, label)
    for key in document:
        if key != "measurement":
            raise SpecError(f"unknown table [{shown(key)}]", file=label, hint="the file holds [measurement.ID]")
    entries = document.get("measurement", {})
    if not isinstance(entries, dict):
        raise SpecError(f"must hold [measurement.ID] tables, got {shown(entries)}", file=label, field="measurement")
    found = []
    for entry, table in entries.items():
        try:
            if not _ID_PATTERN.fullmatch(entry):
                raise _fail("bad id: use 1 to 64 lower-case letters, digits, '.', '-' and '_'", entry)
            if not isinstance(table, dict):
                raise _fail(f"must be a table [measurement.ID], got {shown(table)}", entry)
            measurement = _measurement(entry, table, specs)
            _check_ratio(measurement, specs)
            found.append(measurement)
        except SpecError as error:
            raise error.located(file=label) from None
    return tuple(found)


def load_measurements(path: str | Path | None = None, specs: SpecSet | None = None) -> tuple[Measurement, ...]:
    """The built-in measurements (or those in ``path``), validated against the spec files.

    ``path`` is read as a spec file is (``loader.read_spec_bytes``): a regular UTF-8 file
    of at most 1 MB, opened without blocking, so a FIFO or ``/dev/zero`` is one line.
    """
    if path is None:
        location = resources.files("roofline") / "data" / "measurements.toml"
        if isinstance(location, Path):
            path, label = location, MEASUREMENTS_FILE
        else:  # a zipped install: read through importlib, as builtin_specs does
            try:
                return parse_measurements(decode_spec_text(location.read_bytes(), MEASUREMENTS_FILE), specs)
            except OSError as error:
                raise SpecError(f"cannot read: {error.strerror or error}", file=MEASUREMENTS_FILE) from None
    else:
        label = str(path)
    text = decode_spec_text(read_spec_bytes(path, label), label)
    return parse_measurements(text, specs, label)


def max_output_throughput(hardware: Hardware, workload: Workload, input_tokens: int, output_tokens: int) -> float:
    """Output tokens/s all users together of a server kept full of identical requests: the lesser of

    - the math: ``output / (request FLOPs / peak + request tokens * all-reduce bytes per token
      / link)``, a request costing its prefill plus ``output * decode FLOPs`` at the mean
      context ``input + output / 2``, and every one of its tokens crossing the layers'
      all-reduces (their latency left out, as if shared by an unbounded batch);
    - the memory: the most users whose mean cache fits in the KV pool,
      ``B = floor(pool / (copies * mean context * KV bytes))``, decoding together,
      ``B / decode step(B)`` (prefill time left out, the step's all-reduces counted).

    Either is an upper bound, so the lesser is too. ``workload.batch`` is ignored.
    """
    engine = resolved(hardware, workload)
    model = workload.model
    mean_context = input_tokens + output_tokens / 2
    request_flops = arch.prefill_flops(model, input_tokens) + output_tokens * arch.decode_flops_per_token(
        model, mean_context
    )
    per_token_link = communication_s(engine, model, 1) - allreduces_per_pass(engine, model) * engine.allreduce_latency
    request_s = request_flops / engine.effective_peak_flops_per_s + (input_tokens + output_tokens) * max(
        per_token_link, 0.0
    )
    math_bound = output_tokens / request_s
    fit = memory_use(hardware, Workload(model, workload.weight_precision, workload.kv_precision, context=1))
    copies = kv_copies(engine, model)
    users = math.floor(fit.pool_bytes / (copies * mean_context * workload.kv_bytes_per_token))
    if users < 1:
        raise SpecError(f"{model.id} leaves no room for a cache on {hardware.count:,} {hardware.gpu.id}")
    cached = Workload(model, workload.weight_precision, workload.kv_precision, context=math.ceil(mean_context))
    memory_bound = users / decode_pass(hardware, cached, users).seconds
    return min(math_bound, memory_bound)


def _microbatches(count: int) -> str:
    return f"{count:,} micro-batch" if count == 1 else f"{count:,} micro-batches"


def _users(count: int) -> str:
    return f"{count:,} user" if count == 1 else f"{count:,} users"


def split_speedup(measurement: Measurement, specs: SpecSet, costs: CostModel = CEILING) -> tuple[float, str]:
    """The package's figure for a split's speedup at ``costs``: ``split``'s decode tokens/s per
    user (or output tokens/s in total) ÷ ``versus``'s on the same ``gpus`` GPUs
    (``deployment.deploy``), a pipeline in as many micro-batches as stages (every stage busy, as
    vLLM and TensorRT-LLM schedule one), at the mean context; batch "max" is the largest batch
    both splits hold there. Returns the ratio and its accounting in words."""
    m = measurement
    hardware = Hardware(specs.gpu(m.gpu), 1, m.compute_precision, costs=costs)
    model = specs.model(m.model)
    splits = [split_for(name, m.gpus, None, m.gpus) for name in (m.split, m.versus)]
    batch = m.batch
    if batch is None:
        room = Workload(model, m.weight_precision, m.kv_precision, 1, m.mean_context)
        held = [memory_per_gpu(hardware, room, split).max_batch for split in splits]
        if any(users == 0 for users in held):
            raise SpecError(f"{model.id} leaves no room for a cache on {m.gpus:,} {m.gpu} split this way")
        batch = min((users for users in held if users is not None), default=1)
    work = Workload(model, m.weight_precision, m.kv_precision, batch, m.mean_context)
    results = [deploy(hardware, work, split) for split in splits]
    per_user = m.metric == "split_speedup_per_user"
    figures = [r.step.tokens_per_s_per_user if per_user else r.step.tokens_per_s_total for r in results]
    labels = [split.label for split in splits]
    what = "decode tokens/s per user" if per_user else "output tokens/s of all users"
    accounting = (
        f"{labels[0]}'s {what} ÷ {labels[1]}'s at {_users(batch)}"
        f"{' (the most both hold)' if m.batch is None else ''}, {m.mean_context:,} tokens cached,"
        f" a pipeline in {_microbatches(min(m.gpus, batch))}"
    )
    return figures[0] / figures[1], accounting


def compare(measurement: Measurement, specs: SpecSet | None = None, costs: CostModel = CEILING) -> Comparison:
    """The ceiling for ``measurement``'s hardware and workload, and the ratio to it; at other
    ``costs`` (a calibration's), the package's figure at those costs in the ceiling's place."""
    specs = specs or load_specs()
    m = measurement
    hardware = Hardware(specs.gpu(m.gpu), m.gpus, m.compute_precision, costs=costs)
    if m.metric in SPLIT_METRICS:
        ceiling, accounting = split_speedup(m, specs, costs)
    elif m.metric == "allreduce_latency_s":
        # The presets are latencies of small messages measured whole, so nothing is added for the bytes.
        ceiling = hardware.allreduce_latency
        accounting = f"the fixed latency of one all-reduce on {m.gpus:,} GPUs: {hardware.allreduce_latency_basis}"
    elif m.metric == "hbm_bandwidth_bytes_per_s":
        ceiling, accounting = hardware.bandwidth_bytes_per_s, "the datasheet's peak HBM bandwidth"
    elif m.metric == "gemm_flops_per_s":
        ceiling, accounting = hardware.peak_flops_per_s, f"the datasheet's dense {hardware.compute_precision} peak"
    else:
        workload = Workload(
            specs.model(m.model), m.weight_precision, m.kv_precision, m.batch or 1, m.mean_context, m.input_tokens
        )
        math_used = resolved(hardware, workload).compute_precision
        if m.metric == "decode_tokens_per_s_per_user":
            ceiling = 1.0 / decode_step(hardware, workload).seconds
            accounting = f"decode step at {_users(m.batch or 1)}, {m.mean_context:,} tokens cached, {math_used} math"
        elif m.metric == "inter_token_latency_s":
            ceiling = decode_step(hardware, workload).seconds
            accounting = f"decode step at {_users(m.batch or 1)}, {m.mean_context:,} tokens cached, {math_used} math"
        elif m.metric == "time_to_first_token_s":
            ceiling = prefill_pass(hardware, workload).seconds
            accounting = f"prefill of {m.input_tokens:,} tokens at {math_used} math"
        else:
            ceiling = max_output_throughput(hardware, workload, m.input_tokens, m.output_tokens)
            accounting = f"the lesser of {math_used} math on every token and a full memory of decoding users"
    ratio = m.value / ceiling if METRICS[m.metric] else ceiling / m.value
    return Comparison(m, ceiling, ratio, accounting)


def compare_all(measurements: tuple[Measurement, ...] | None = None, specs: SpecSet | None = None) -> list[Comparison]:
    """``compare`` for every measurement (the built-in ones by default)."""
    specs = specs or load_specs()
    measurements = measurements if measurements is not None else load_measurements(specs=specs)
    return [compare(m, specs) for m in measurements]


@dataclass(frozen=True)
class ExpectedRange:
    """Shares of the ceiling a well-tuned stack reaches, and what that rests on."""

    low: float
    high: float
    basis: tuple[str, ...]
    note: str


def well_tuned_decode_range(comparisons: list[Comparison] | None = None) -> ExpectedRange:
    """The lowest and highest ratio among single-GPU decode measurements without speculation.

    The calculator multiplies the decode ceiling by these to say what a
    well-tuned stack is expected to reach; ``note`` names what it rests on.
    """
    comparisons = comparisons if comparisons is not None else compare_all()
    chosen = [c for c in comparisons if c.measurement.kind == "single-GPU decode" and not c.measurement.speculative]
    if not chosen:
        raise SpecError("no single-GPU decode measurement to derive a range from")
    ratios = [c.ratio for c in chosen]
    engines = sorted({c.measurement.software for c in chosen})
    gpus = sorted({c.measurement.gpu for c in chosen})
    note = (
        f"{len(chosen)} published single-GPU decode measurements ({', '.join(engines)} on {', '.join(gpus)}),"
        f" one user each, reached {min(ratios):.0%} to {max(ratios):.0%} of their ceilings;"
        " other engines, GPUs and batch sizes may land outside this range."
    )
    return ExpectedRange(min(ratios), max(ratios), tuple(c.measurement.id for c in chosen), note)


def ratio_range_by_kind(comparisons: list[Comparison] | None = None) -> dict[str, tuple[float, float]]:
    """Lowest and highest ratio for each kind in ``KINDS`` that has measurements (speculative runs
    left out): the gap a page quotes beside, say, ideal multi-GPU scaling."""
    comparisons = comparisons if comparisons is not None else compare_all()
    ranges: dict[str, tuple[float, float]] = {}
    for kind in KINDS:
        ratios = [c.ratio for c in comparisons if c.measurement.kind == kind and not c.measurement.speculative]
        if ratios:
            ranges[kind] = (min(ratios), max(ratios))
    return ranges
