"""Published serving runs (a throughput, a mean TTFT or ITL under a stated load) beside the
ceiling and the simulator's expected figure for the same conditions.

A run is one row of a CSV file (``data/serving-measurements.csv`` in the repository, read by
``scripts/fit_expected.py`` and the measured page): the engine, GPU, model, precisions,
lengths (and how far the source says they vary, ``length_spread``), the load (``rate=inf``,
``rate=2``, ``concurrency=8``, ``static=768``), the metric and
its value in SI units, its source, and its ``split``: ``fit`` rows calibrate the expected
costs, ``check`` rows are held out to test them, ``out`` rows are kept with the reason they
cannot be modelled. A row whose ``reported_defect`` holds its source's own sentence reporting
the figure as an engine's defect (an open bug report of that figure being slow; only a held-out
``check`` row may carry one) is predicted and shown like any other, but is not ``counted`` in
the held-out statistics the goals are read on (they are printed with it too): a prediction of
what the hardware allows should not bend to a bug, and a reader must still see what was left
out.

- ``ceiling``: an upper bound on what the run could have reached (``measured.max_output_throughput``
  for a throughput; one prompt's prefill alone for a time to first token; one batch-1
  decode step for the gap between tokens). A row's ``ratio`` is measured ÷ ceiling for a
  rate and ceiling ÷ measured for a time, so no real run exceeds 1.
- ``predict``: the simulator's figure for the run's conditions at a cost model
  (``performance.CostModel``), the way the fit and ``simulate --costs expected`` compute it.
- ``expectation``: a run's expected figure with the band the fit's residuals put round it,
  and measured ÷ expected; ``expect_measurement`` does the same for a measurement of
  ``data/measurements.toml`` (none for the kernel benchmarks, HBM bandwidth and GEMM rate,
  which no serving run calibrates).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, replace
from pathlib import Path

from .calibration import Calibration, expected_costs, within_ceiling
from .errors import SpecError
from .harness import ENGINES, HARNESSES, engine_of, harness_choices
from .load_bounds import ITL_ACCOUNTING, TTFT_ACCOUNTING, best_case_times
from .loader import SpecSet, load_specs
from .measured import SPLIT_METRICS, Measurement, max_output_throughput
from .performance import CEILING, CostModel, Hardware, Workload, decode_step, math_precision, prefill_pass
from .serving import Lengths, ServingConfig, simulate

_ENGINE_LABELS = ", ".join(ENGINES.values())
#: Metric -> (kind of figure, whether larger is better).
METRICS: dict[str, tuple[str, bool]] = {
    "throughput_tokens_per_s": ("throughput", True),
    "ttft_mean_s": ("ttft", False),
    "ttft_p50_s": ("ttft", False),
    "itl_mean_s": ("itl", False),
    "itl_p50_s": ("itl", False),
    "iteration_s": ("iteration", False),
}
#: The kinds the goals and the band are reported for, in the order a reader meets them.
KINDS = ("throughput", "ttft", "itl")
SPLITS = ("fit", "check", "out")
_COLUMNS = (
    "id",
    "split",
    "engine",
    "gpu",
    "gpus",
    "model",
    "weight_precision",
    "kv_precision",
    "attention_dp",
    "input_tokens",
    "output_tokens",
    "length_spread",
    "load",
    "requests",
    "metric",
    "value",
    "source",
    "note",
    "reported_defect",
    "harness",
)
#: The scheduler the simulator stands in for an in-flight-batching engine with: a token
#: budget per iteration (TensorRT-LLM's max_num_tokens default) and a batch cap well above
#: what memory allows, so the KV pool, not the cap, sets the batch.
ENGINE_TOKEN_BUDGET = 8192
#: The largest ``length_spread`` a row may give (±90%: every length stays at least a tenth of its mean).
MAX_LENGTH_SPREAD = 0.9
ENGINE_MAX_BATCH = 2048
#: Most requests simulated for one row: past a thousand the throughput and the means are
#: the steady state's (the fit and the check use the same cap, so they agree).
SIMULATED_REQUESTS = 1000


@dataclass(frozen=True)
class ServingRun:
    """One published serving figure and the conditions it was measured under."""

    id: str
    split: str
    engine: str
    gpu: str
    gpus: int
    model: str
    weight_precision: str
    kv_precision: str
    attention_dp: bool
    input_tokens: int
    output_tokens: int
    #: ``rate=inf``, ``rate=R``, ``concurrency=N`` or ``static=B``.
    load: str
    requests: int
    metric: str
    value: float
    source: str
    note: str
    #: The source's own sentence reporting this figure as an engine defect, or "" (see the
    #: module docstring): a reported row stays out of the fit and the band's statistics.
    reported_defect: str = ""
    #: How far the source says each request's prompt and output lengths vary about
    #: ``input_tokens`` and ``output_tokens``, as a share (0.15: ±15%); 0 when it states none.
    #: The simulator draws each length uniformly in that range (``scenario``): with every
    #: length the same, closed-loop clients finish together and send together, each round's
    #: prompts queued behind one another, which varied lengths undo.
    length_spread: float = 0.0
    #: What the measurement includes besides the GPU (``roofline.harness.HARNESSES``): "offline",
    #: "server" or "http", read in the row's source; "" only on an ``out`` row.
    harness: str = "offline"

    @property
    def engine_id(self) -> str | None:
        """The engine (``roofline.harness.engine_of``) of the row's ``engine`` label."""
        return engine_of(self.engine)

    @property
    def counted(self) -> bool:
        """Whether the fit and the band's statistics and goals count this run (not a reported defect)."""
        return not self.reported_defect

    @property
    def kind(self) -> str:
        """ "throughput", "ttft" or "itl" (see ``METRICS``)."""
        return METRICS[self.metric][0]

    def ratio(self, figure: float) -> float:
        """``figure`` measured against: measured ÷ figure for a rate, figure ÷ measured for a time."""
        return self.value / figure if METRICS[self.metric][1] else figure / self.value

    def measured_over(self, figure: float) -> float:
        """measured ÷ figure, whatever the metric: the fit's residual."""
        return self.value / figure


def _whole(text: str, name: str, label: str, row_id: str, minimum: int = 0) -> int:
    try:
        value = int(text)
    except ValueError:
        raise SpecError(f"must be a whole number, got {text!r}", file=label, entry=row_id, field=name) from None
    if value < minimum:
        raise SpecError(f"must be at least {minimum}, got {value}", file=label, entry=row_id, field=name)
    return value


def _reported_defect(row: dict[str, str], label: str) -> str:
    """The row's ``reported_defect``: empty, or the source's sentence in curly quotes (“...”, which a
    CSV field holds without escaping) followed by why it applies to this row, on a held-out
    (``check``) row only."""
    text = (row["reported_defect"] or "").strip()
    if not text:
        return ""
    if row["split"] != "check":
        raise SpecError(
            f"only a check row may be flagged, and this one is {row['split']!r}: the fit is made on runs of"
            " engines working as meant, and an out row is not modelled",
            file=label,
            entry=row["id"],
            field="reported_defect",
            hint="make the row a check row, or leave the field empty",
        )
    if not text.startswith("“") or "”" not in text:
        raise SpecError(
            "must quote the source's sentence that reports the defect, in curly quotes (“...”), then say"
            f" why it applies to this row; got {text[:60]!r}",
            file=label,
            entry=row["id"],
            field="reported_defect",
        )
    return text


def _spread(row: dict[str, str], label: str) -> float:
    """The row's ``length_spread``: empty for none, else a share from 0 to 0.9."""
    text = row["length_spread"]
    if not text:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= MAX_LENGTH_SPREAD:
        raise SpecError(
            f"must be empty or a share from 0 to {MAX_LENGTH_SPREAD}, got {text!r}",
            file=label,
            entry=row["id"],
            field="length_spread",
            hint="write ±15% as 0.15",
        )
    return value


def _harness(row: dict[str, str], label: str) -> str:
    """The row's ``harness``: one of ``HARNESSES`` (empty only on an ``out`` row, never modelled)."""
    text = (row["harness"] or "").strip()
    if text in HARNESSES or (not text and row["split"] == "out"):
        return text
    raise SpecError(
        f"must be one of {', '.join(HARNESSES)}, got {text!r}",
        file=label,
        entry=row["id"],
        field="harness",
        hint=f"read in the row's source what the figure includes: {harness_choices()}",
    )


def parse_serving_runs(text: str, label: str = "data/serving-measurements.csv") -> tuple[ServingRun, ...]:
    """The runs in a CSV's ``text`` (lines starting with ``#`` are comments); the first bad
    row raises one SpecError naming the file, the row and the column."""
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    if tuple(reader.fieldnames or ()) != _COLUMNS:
        raise SpecError(f"the header must be {','.join(_COLUMNS)}", file=label)
    runs = []
    seen = set()
    for row in reader:
        row_id = row["id"]
        if not row_id or row_id in seen:
            raise SpecError("every row needs an id of its own", file=label, entry=row_id or "(empty)")
        seen.add(row_id)
        if row["split"] not in SPLITS:
            raise SpecError(f"must be one of {', '.join(SPLITS)}", file=label, entry=row_id, field="split")
        if row["metric"] not in METRICS:
            raise SpecError(f"unknown metric {row['metric']!r}", file=label, entry=row_id, field="metric")
        try:
            value = float(row["value"])
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise SpecError(f"must be a positive number, got {row['value']!r}", file=label, entry=row_id, field="value")
        kind, _, amount = row["load"].partition("=")
        if row["split"] != "out" and (kind not in ("rate", "concurrency", "static") or not amount):
            raise SpecError(
                f"must be rate=R, rate=inf, concurrency=N or static=B, got {row['load']!r}",
                file=label,
                entry=row_id,
                field="load",
            )
        runs.append(
            ServingRun(
                id=row_id,
                split=row["split"],
                engine=row["engine"],
                gpu=row["gpu"],
                gpus=_whole(row["gpus"], "gpus", label, row_id, 1),
                model=row["model"],
                weight_precision=row["weight_precision"],
                kv_precision=row["kv_precision"],
                attention_dp=row["attention_dp"] == "yes",
                input_tokens=_whole(row["input_tokens"], "input_tokens", label, row_id),
                output_tokens=_whole(row["output_tokens"], "output_tokens", label, row_id),
                load=row["load"],
                requests=_whole(row["requests"], "requests", label, row_id, 0 if row["split"] == "out" else 1),
                metric=row["metric"],
                value=value,
                source=row["source"],
                note=row["note"],
                reported_defect=_reported_defect(row, label),
                length_spread=_spread(row, label),
                harness=_harness(row, label),
            )
        )
    return tuple(runs)


def load_serving_runs(path: str | Path) -> tuple[ServingRun, ...]:
    """The runs in the CSV file at ``path``."""
    label = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SpecError(f"cannot read: {getattr(error, 'strerror', None) or error}", file=label) from None
    return parse_serving_runs(text, label)


def deployment(run: ServingRun, specs: SpecSet, costs: CostModel = CEILING) -> tuple[Hardware, Workload]:
    """The run's GPUs (at ``costs``) and model at its precisions."""
    hardware = Hardware(specs.gpu(run.gpu), run.gpus, attention_dp=run.attention_dp, costs=costs)
    return hardware, Workload(specs.model(run.model), run.weight_precision, run.kv_precision)


def ceiling(run: ServingRun, specs: SpecSet | None = None) -> float:
    """An upper bound on the run's figure (a lower bound for a time); see the module docstring."""
    specs = specs or load_specs()
    hardware, workload = deployment(run, specs)
    kind = run.kind
    if kind == "throughput":
        return max_output_throughput(hardware, workload, run.input_tokens, run.output_tokens)
    if kind in ("ttft", "itl"):
        # Any scheduler's best (load_bounds) at the run's stated prompt length.
        bounds = best_case_times(hardware, workload, run.input_tokens)
        return bounds["ttft_mean_s" if kind == "ttft" else "itl_mean_s"]
    raise SpecError(f"no ceiling for {run.metric}", entry=run.id, field="metric")


def ceiling_accounting(run: ServingRun) -> str:
    """Which accounting ``ceiling`` uses for the run's metric, as a report names it."""
    kind = run.kind
    if kind == "throughput":
        return "max_output_throughput: the largest batch memory holds, every pass at the datasheet's figures"
    if kind == "ttft":
        return TTFT_ACCOUNTING
    if kind == "itl":
        return ITL_ACCOUNTING
    raise SpecError(f"no ceiling for {run.metric}", entry=run.id, field="metric")


def admission(run: ServingRun) -> str:
    """How the run's engine admits requests: TensorRT-LLM (and NIM, built on it) schedules with
    GUARANTEED_NO_EVICT by default, admitting a request only when its whole prompt and output
    fit ("reserve"); vLLM allocates blocks as tokens are written and preempts ("paged")."""
    engine = run.engine.lower()
    return "reserve" if engine.startswith(("tensorrt-llm", "nim")) else "paged"


def spread_lengths(tokens: int, spread: float) -> Lengths:
    """``tokens`` ± ``spread`` of it, rounded, at least 1 (fixed when ``spread`` is 0)."""
    return Lengths(max(1, round(tokens * (1 - spread))), round(tokens * (1 + spread)))


def scenario(run: ServingRun) -> ServingConfig:
    """The simulator's traffic for the run: its lengths and load, the engine's scheduler."""
    kind, _, amount = run.load.partition("=")
    lengths = {
        "prompt": spread_lengths(run.input_tokens, run.length_spread),
        "output": spread_lengths(run.output_tokens, run.length_spread),
        "admission": admission(run),
    }
    requests = min(run.requests, SIMULATED_REQUESTS)
    if kind == "static":
        batch = int(amount)
        return ServingConfig(policy="static", rate=math.inf, requests=batch, max_batch=batch, **lengths)
    chunked = {"policy": "chunked", "max_batch": ENGINE_MAX_BATCH, "token_budget": ENGINE_TOKEN_BUDGET}
    if kind == "concurrency":
        clients = int(amount)
        return ServingConfig(concurrency=clients, requests=max(requests, clients), **chunked, **lengths)
    rate = math.inf if amount == "inf" else float(amount)
    return ServingConfig(rate=rate, requests=requests, **chunked, **lengths)


def simulation_key(run: ServingRun) -> tuple:
    """What ``predict`` simulates for ``run``, its costs aside: runs with equal keys get the same
    simulation (a benchmark's throughput, TTFT and ITL are three rows of one run), so a caller
    predicting many runs simulates each key once (``simulated_figures``, then ``figure``)."""
    key = (run.gpu, run.gpus, run.attention_dp, run.model, run.weight_precision, run.kv_precision, scenario(run))
    return (*key, run.harness)  # the harness's host costs differ, so its runs are simulated apart


def simulated_figures(run: ServingRun, costs: CostModel, specs: SpecSet | None = None) -> dict[str, float]:
    """Every figure a row may report (``METRICS``) of the simulation of ``run``'s conditions under
    ``costs``; a figure the simulation has no number for is left out."""
    specs = specs or load_specs()
    hardware, workload = deployment(run, specs, costs)
    figures = simulate(hardware, workload, scenario(run)).to_dict()
    return {metric: float(figures[metric]) for metric in METRICS if isinstance(figures.get(metric), (int, float))}


def figure(run: ServingRun, figures: dict[str, float]) -> float:
    """``run``'s metric out of ``simulated_figures``; SpecError when the simulation gives none."""
    value = figures.get(run.metric)
    if value is None or not value > 0:
        raise SpecError(f"the simulation gives no {run.metric} ({value!r})", entry=run.id, field="metric")
    return value


def predict(run: ServingRun, costs: CostModel, specs: SpecSet | None = None) -> float:
    """The simulator's figure for the run's metric under ``costs``."""
    return figure(run, simulated_figures(run, costs, specs))


#: Kind of figure -> the calibration band's metric name.
BAND_METRIC = {"throughput": "throughput_tokens_per_s", "ttft": "ttft_mean_s", "itl": "itl_mean_s"}


@dataclass(frozen=True)
class Expectation:
    """A measured figure beside its expected value and band, all in the measured figure's unit.

    ``kind`` is "throughput", "ttft" or "itl" (a decode rate per user counts as its time
    between tokens). ``measured_over_expected`` is the fit's residual for the kind's figure:
    measured ÷ expected of a throughput or of a time, so 1 is the prediction met and the band
    is ``[low, high]`` of it.
    """

    kind: str
    measured: float
    expected: float
    low: float
    high: float
    measured_over_expected: float

    @property
    def in_band(self) -> bool:
        """Whether the measured figure lies inside the band."""
        return self.low <= self.measured <= self.high


def expectation_of(
    kind: str,
    measured: float,
    expected: float,
    calibration: Calibration,
    rate_of_time: bool = False,
    ceiling: float | None = None,
) -> Expectation:
    """``measured`` beside ``expected`` and the kind's band. With ``rate_of_time`` the figures
    are the reciprocal of the kind's time (decode tokens/s of one user, 1 / the gap between
    tokens): a time in ``[low e, high e]`` is a rate in ``[r / high, r / low]``. With the
    figure's ``ceiling`` (in its unit) the band stops there (``calibration.within_ceiling``): a
    band widened for an unfitted ground would otherwise promise a time no run can reach."""
    low, high = calibration.band[BAND_METRIC[kind]]
    if rate_of_time:
        band = within_ceiling("throughput_tokens_per_s", (expected / high, expected / low), ceiling)
        return Expectation(kind, measured, expected, *band, expected / measured)
    band = within_ceiling(BAND_METRIC[kind], (expected * low, expected * high), ceiling)
    return Expectation(kind, measured, expected, *band, measured / expected)


def grounded(run: ServingRun, calibration: Calibration, specs: SpecSet | None = None) -> Calibration:
    """``calibration`` on the run's ground (``Calibration.for_ground``): its GPU and math, engine and
    harness, the band widened where the fit has no rows for them."""
    specs = specs or load_specs()
    engine = run.engine_id
    if engine is None:
        raise SpecError(
            "names no engine roofline knows",
            entry=run.id,
            field="engine",
            hint=f"start it with one of {_ENGINE_LABELS}",
        )
    gpu = specs.gpu(run.gpu)
    math = math_precision(gpu, run.weight_precision)
    return calibration.for_ground(gpu, engine, run.harness or "offline", math, 1 if run.attention_dp else run.gpus)


def expectation(
    run: ServingRun,
    expected: float,
    calibration: Calibration,
    specs: SpecSet | None = None,
    ceiling_figure: float | None = None,
) -> Expectation:
    """A serving run's measured figure beside its ``expected`` one (``predict``) and the band of its
    ground (``grounded``), held within ``ceiling_figure`` (``ceiling``) where it is given."""
    return expectation_of(run.kind, run.value, expected, grounded(run, calibration, specs), ceiling=ceiling_figure)


def expect_measurement(
    measurement: Measurement, calibration: Calibration, specs: SpecSet | None = None
) -> Expectation | None:
    """The expected figure and band for a measurement of ``data/measurements.toml``, at the
    fitted costs of its GPU: a decode step for a decode rate or a gap between tokens, the
    prompt's prefill plus the fitted host time per request for a time to first token, and for a
    server kept full the simulator with every request at once (``SIMULATED_REQUESTS``, scheduled
    as the engine does), as the fit predicts its runs. None for the kernel benchmarks (HBM
    bandwidth, GEMM rate, an all-reduce's latency) and for a split's speedup, which have no band
    (``measured.compare`` at the fitted costs gives their expected figure)."""
    specs = specs or load_specs()
    m = measurement
    if not m.model or m.metric in SPLIT_METRICS:
        return None
    workload = Workload(specs.model(m.model), m.weight_precision, m.kv_precision, m.batch or 1, m.mean_context)
    hardware = Hardware(specs.gpu(m.gpu), m.gpus, m.compute_precision)
    # Costs and band from one grounding: a measurement on a GPU or math the fit has no rows for
    # is set beside the widened band (calibration.expected_costs), not the fitted GPUs' one.
    ground = expected_costs(hardware, workload, calibration)
    costs, banded = ground.costs, ground.calibration
    # Each band stops at its figure's ceiling: the same pass at the datasheet's figures.
    top = replace(hardware, costs=CEILING)
    hardware = replace(hardware, costs=costs)
    if m.metric == "decode_tokens_per_s_per_user":
        rate, most = (1.0 / decode_step(h, workload).seconds for h in (hardware, top))
        return expectation_of("itl", m.value, rate, banded, True, ceiling=most)
    if m.metric == "inter_token_latency_s":
        step, least = (decode_step(h, workload).seconds for h in (hardware, top))
        return expectation_of("itl", m.value, step, banded, ceiling=least)
    if m.metric == "time_to_first_token_s":
        prompt = replace(workload, prompt=m.input_tokens)
        prefill, least = (prefill_pass(h, prompt).seconds for h in (hardware, top))
        return expectation_of("ttft", m.value, prefill + costs.request_overhead_s, banded, ceiling=least)
    run = ServingRun(
        id=m.id,
        split="check",
        engine=m.software,
        gpu=m.gpu,
        gpus=m.gpus,
        model=m.model,
        weight_precision=m.weight_precision,
        kv_precision=m.kv_precision,
        attention_dp=False,
        input_tokens=m.input_tokens,
        output_tokens=m.output_tokens,
        load="rate=inf",
        requests=SIMULATED_REQUESTS,
        metric="throughput_tokens_per_s",
        value=m.value,
        source=m.source,
        note="",
    )
    return expectation(run, predict(run, costs, specs), calibration, specs, ceiling(run, specs))


def parse_predictions(text: str, label: str = "data/serving-expected.csv") -> dict[str, tuple[float, float]]:
    """Run id -> (ceiling, expected) from ``scripts/fit_expected.py``'s predictions file."""
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    if tuple(reader.fieldnames or ()) != ("id", "ceiling", "expected"):
        raise SpecError("the header must be id,ceiling,expected", file=label, hint="rerun scripts/fit_expected.py")
    out = {}
    for row in reader:
        try:
            figures = (float(row["ceiling"]), float(row["expected"]))
        except (TypeError, ValueError):
            raise SpecError(
                "needs two numbers", file=label, entry=row["id"], hint="rerun scripts/fit_expected.py"
            ) from None
        if not all(math.isfinite(x) and x > 0 for x in figures):
            raise SpecError("must be positive", file=label, entry=row["id"], hint="rerun scripts/fit_expected.py")
        out[row["id"]] = figures
    return out
