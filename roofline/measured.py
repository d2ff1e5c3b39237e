"""Published measurements beside the ceilings: what real servers reach, and how far below.

``data/measurements.toml`` holds the measurements, each with its hardware,
software, workload and source. ``compare`` computes the ceiling for the same
hardware and workload and the ratio measured ÷ ceiling (for a time, ceiling ÷
measured), so every ratio reads the same way: 1.0 is the ceiling reached.
``well_tuned_decode_range`` turns the single-GPU decode ratios into the range
the calculator quotes as "expected on a well-tuned stack".
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from . import architecture as arch
from .errors import SpecError, did_you_mean
from .loader import SpecSet, load_specs
from .performance import (
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

MEASUREMENTS_FILE = "roofline/data/measurements.toml"

#: Metric -> (kind of comparison, whether larger is better).
METRICS: dict[str, bool] = {
    "decode_tokens_per_s_per_user": True,
    "inter_token_latency_s": False,
    "time_to_first_token_s": False,
    "output_tokens_per_s_total": True,
    "hbm_bandwidth_bytes_per_s": True,
    "gemm_flops_per_s": True,
}
_MICROBENCHMARKS = ("hbm_bandwidth_bytes_per_s", "gemm_flops_per_s")
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
_ID_PATTERN = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_DATE_PATTERN = re.compile(r"^(\d{4}-\d{2}-\d{2}|undated)$")

#: The chart's groups, in the order a reader meets them.
KINDS = (
    "single-GPU decode",
    "multi-GPU decode",
    "prefill (time to first token)",
    "maximum throughput",
    "HBM bandwidth",
    "GEMM rate",
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

    @property
    def kind(self) -> str:
        """The group the chart puts it in (one of ``KINDS``)."""
        if self.metric in ("decode_tokens_per_s_per_user", "inter_token_latency_s"):
            return "single-GPU decode" if self.gpus == 1 else "multi-GPU decode"
        return {
            "time_to_first_token_s": "prefill (time to first token)",
            "output_tokens_per_s_total": "maximum throughput",
            "hbm_bandwidth_bytes_per_s": "HBM bandwidth",
            "gemm_flops_per_s": "GEMM rate",
        }[self.metric]

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


def _whole(entry: str, key: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(f"must be a whole number of at least {minimum}, got {value!r}", entry, key)
    return value


def _text(entry: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(f"must be non-empty text, got {value!r}", entry, key)
    return value


def _measurement(entry: str, table: Mapping[str, Any], specs: SpecSet) -> Measurement:
    metric = table.get("metric")
    if metric not in METRICS:
        hint = did_you_mean(str(metric), METRICS) or "one of " + ", ".join(METRICS)
        raise _fail(f"unknown metric {metric!r}", entry, "metric", hint)
    needed = _COMMON_KEYS + (() if metric in _MICROBENCHMARKS else _MODEL_KEYS)
    allowed = (*_COMMON_KEYS, *_MODEL_KEYS, "note")
    for key in table:
        if key not in allowed:
            raise _fail("unknown key", entry, key, did_you_mean(key, allowed) or "allowed: " + ", ".join(allowed))
    for key in needed:
        if key not in table:
            raise _fail("is missing", entry, key)
    values: dict[str, Any] = {key: table[key] for key in table}
    for key in ("hardware", "software", "software_version", "section", "source", "date"):
        _text(entry, key, values[key])
    if "note" in values:
        _text(entry, "note", values["note"])
    if not re.match(r"^https?://\S+$", values["source"]):
        raise _fail(f"must be an http(s) URL, got {values['source']!r}", entry, "source")
    if not _DATE_PATTERN.match(values["date"]):
        raise _fail(f"must be YYYY-MM-DD or 'undated', got {values['date']!r}", entry, "date")
    if not isinstance(values["speculative"], bool):
        raise _fail(f"must be true or false, got {values['speculative']!r}", entry, "speculative")
    value = values["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise _fail(f"must be a positive number, got {value!r}", entry, "value")
    values["value"] = float(value)
    _whole(entry, "gpus", values["gpus"], 1)
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
            _whole(entry, "batch", values["batch"], 1)
        _whole(entry, "input_tokens", values["input_tokens"], 0)
        _whole(entry, "output_tokens", values["output_tokens"], 1)
    return Measurement(id=entry, **values)


def _lookup(entry: str, key: str, value: Any, check) -> None:
    try:
        check(value)
    except SpecError as error:
        raise _fail(error.message, entry, key, error.hint) from None


def parse_measurements(
    text: str, specs: SpecSet | None = None, label: str = MEASUREMENTS_FILE
) -> tuple[Measurement, ...]:
    """Parse a measurements file's TOML ``text`` (``label`` names it in errors); the first bad
    entry raises a one-line SpecError naming file, entry and field."""
    specs = specs or load_specs()
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SpecError(f"TOML syntax error: {error}", file=label) from None
    for key in document:
        if key != "measurement":
            raise SpecError(f"unknown table [{key}]", file=label, hint="the file holds [measurement.ID]")
    found = []
    for entry, table in document.get("measurement", {}).items():
        try:
            if not _ID_PATTERN.match(entry):
                raise _fail("bad id: use lower-case letters, digits, '.', '-' and '_'", entry)
            if not isinstance(table, dict):
                raise _fail("must be a table", entry)
            found.append(_measurement(entry, table, specs))
        except SpecError as error:
            raise error.located(file=label) from None
    return tuple(found)


def load_measurements(path: str | Path | None = None, specs: SpecSet | None = None) -> tuple[Measurement, ...]:
    """The built-in measurements (or those in ``path``), validated against the spec files."""
    location = Path(path) if path is not None else resources.files("roofline") / "data" / "measurements.toml"
    label = str(path) if path is not None else MEASUREMENTS_FILE
    try:
        text = location.read_text(encoding="utf-8")
    except OSError as error:
        raise SpecError(f"cannot read: {error}", file=label) from None
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
        raise SpecError(f"{model.id} leaves no room for a cache on {hardware.count} {hardware.gpu.id}")
    cached = Workload(model, workload.weight_precision, workload.kv_precision, context=math.ceil(mean_context))
    memory_bound = users / decode_pass(hardware, cached, users).seconds
    return min(math_bound, memory_bound)


def _users(count: int) -> str:
    return f"{count:,} user" if count == 1 else f"{count:,} users"


def compare(measurement: Measurement, specs: SpecSet | None = None) -> Comparison:
    """The ceiling for ``measurement``'s hardware and workload, and the ratio to it."""
    specs = specs or load_specs()
    m = measurement
    hardware = Hardware(specs.gpu(m.gpu), m.gpus, m.compute_precision)
    if m.metric == "hbm_bandwidth_bytes_per_s":
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
