"""Fit the expected-mode costs to published serving runs; write roofline/data/calibration.toml.

Reads data/serving-measurements.csv. Every run with ``split = fit`` is simulated under its own
conditions (``roofline.benchmarks.predict``) at candidate costs, and the costs are moved until
the squared logs of measured ÷ expected, each kind of figure weighted alike, are as small as
they get (Levenberg-Marquardt on the logs of the parameters, a forward-difference Jacobian,
a fixed start: the same inputs give the same file). The parameters:

- one bandwidth efficiency; one link efficiency for NVLink (4 and 5), and one for each other kind
  of link (``calibration.link_kind``: PCIe, Infinity Fabric) that multi-GPU fit runs crossed; a
  kind no fit run crossed (NVLink 3: no multi-GPU A100 row is in the fit) gets none, and
  predictions over it are flagged and widened (``Calibration.for_ground``);
- one compute efficiency per GPU and math precision the fit runs use (others take the
  geometric mean of these), a GPU whose spec names another ``same_compute_as`` (the same die,
  the same tensor cores: the H200 and the H100) counted as that one, so their runs fit one
  share and the file lists it under both;
- one overhead per layer of every iteration; for each harness the fit runs were measured
  through (the rows' ``harness``: ``roofline.harness``), one per token sampled and, for a
  server or HTTP harness, one per request on its way to the scheduler
  (``CostModel.request_overhead_s``; an offline loop or a static session has no request path, 0),
  and for a static session (``harness.SERIAL_CONTEXT_HARNESSES``) the share κ of a context pass's
  shorter side, reads or math, that does not overlap the longer
  (``CostModel.context_serial_share``). A harness with no fit rows borrows a fitted one's host
  costs (``STAND_INS``; never κ), and the file says which;
- the latency of one all-reduce over G GPUs, a fixed start plus a hop for each of a ring's
  2(G-1) steps (``CostModel.allreduce_latency``).

Last, with all of those held, the dequantization overhead δ of a weight-only (W4A16) kernel
(``performance.CostModel.dequant_overhead``) is fitted on data/dequant-measurements.csv: vLLM
PR #2566's runs of one AWQ model, each input length run twice by the same engine, once with
the fused dequantizing GEMM at every size and once widening the weights to fp16 from a
threshold. The fit matches the ratio of each pair's throughputs (widened ÷ fused), which
cancels whatever else the engine of January 2024 costs, on the ``split = fit`` pairs (the long
prompts, where prefill dominates), by golden-section search on δ; the ``split = check`` pairs
are held out, and the file records each pair's measured and expected ratio and each run's
measured ÷ expected throughput. The switch from which the expected costs widen the weights
is vLLM's, 256 tokens, read in its source (``DEQUANT_SWITCH_TOKENS``), not fitted.

Then every ``split = check`` run, held out, is predicted with the fitted costs, and the file
records, per kind of figure (throughput, TTFT, ITL), the median, p10 and p90 of measured ÷
expected on the fit runs and on the held-out runs, and how many measured values each band
holds. A held-out row whose source reports it as an engine's defect (its ``reported_defect``
column: the source's sentence and why it applies) is left out of the held-out figures the goals
are read on, ``held_out_rows_summary``, and counted in a second set beside them,
``held_out_rows_with_reported_defects_summary``, so both are printed. The band is
cross-validated: an 80% band (``conformal_bounds``: the ranks split-conformal prediction takes,
about one rank outside p10 and p90) of the fit runs' measured ÷ expected, each run predicted by
the fit without its benchmark (the rows one simulation predicts, left out together;
``Problem.left_out_residuals``). The fit's own residuals are narrower than what
runs it never saw scatter by (on the rows of December 2026: TTFT p10-p90 0.88-1.18 in-sample,
0.85-1.29 left out, 0.85-1.58 held out, 0.85-2.81 with the rows reported as defects), so a band
from them held too few of the held-out values.
Two more bands are cross-validated by refitting (``cross_validated``): without every fit run of
one engine release, and without every fit run on one GPU. They are written beside the band
(``band_leave_one_release_out``, ``band_leave_one_gpu_out``) for predictions off the fit's
ground (``Calibration.for_ground``), and the band's coverage each way, in sample and on the
held-out runs, is printed and recorded (``[fit.coverage]``, ``Validation``), with the held-out
throughput per GPU and the count of rows beating a ceiling by more than 2%. Each leave-one-out
coverage is also read nested (``Validation._nested_band``): against the band the file of a fit
without the run's group would carry, every band in it ranked over the other groups' runs only.
data/serving-expected.csv gets every fit and check run's ceiling and expected figure, which
the measured page shows.

Speed: each distinct simulation runs once per point (``Simulator``: a benchmark's TTFT, ITL
and throughput rows share one), a Jacobian column simulates only the runs its parameter moves
(``depends``), and the simulations are spread over the available processors (``--jobs``);
none of this changes a digit of what is written.

    python scripts/fit_expected.py          # refit and write the files (only those that changed)
    python scripts/fit_expected.py --check  # refit and compare: exit 1 when a file differs
    python scripts/fit_expected.py --jobs 1 # in this process only

A failure (a bad row, a run the simulator refuses, a fit that does not converge) prints one
line and exits 1, leaving both files as they were, byte for byte.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import multiprocessing
import os
import re
import statistics
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType

from roofline import benchmarks
from roofline.calibration import (
    BAND_METRICS,
    CALIBRATION_FILE,
    link_kind,
    link_share,
    measured_link_share,
    parse_calibration,
)
from roofline.errors import SpecError
from roofline.harness import HARNESSES, NO_REQUEST_PATH, SERIAL_CONTEXT_HARNESSES
from roofline.loader import load_specs
from roofline.performance import CostModel, math_precision
from roofline.version import VERSION

ROOT = Path(__file__).resolve().parents[1]

ROWS = ROOT / "data" / "serving-measurements.csv"
DEQUANT_ROWS = ROOT / "data" / "dequant-measurements.csv"
#: vLLM's AWQ method widens the weights and runs a plain fp16 matmul from this many tokens in a pass
#: (``FP16_MATMUL_HEURISTIC_CONDITION = x.shape[:-1].numel() >= 256``):
#: https://github.com/vllm-project/vllm/blob/main/vllm/model_executor/layers/quantization/awq.py
DEQUANT_SWITCH_TOKENS = 256
#: The range δ is searched in, and the golden-section steps (each shrinks it by 0.618).
DEQUANT_BOUNDS = (0.0, 20.0)
DEQUANT_STEPS = 48
OUTPUT = ROOT / CALIBRATION_FILE
PREDICTIONS = ROOT / "data" / "serving-expected.csv"
#: Where the fit starts (the same start every time), and how far it may go.
#: (Round numbers near the last fit's values: a start far from them costs iterations, each a
#: few hundred simulations; the fit moves from here wherever the rows take it.)
START = {
    "bandwidth": 0.75,
    "link": 0.9,
    "compute": 0.5,
    "layer_overhead_s": 4e-5,
    "token_overhead_s": 1e-5,
    "request_overhead_s": 8e-3,
    "allreduce_latency_s": 3e-5,
    "allreduce_hop_s": 4e-7,
}
LOG_BOUNDS = {
    "bandwidth": (math.log(0.2), 0.0),
    "link": (math.log(0.05), 0.0),
    "compute": (math.log(0.05), 0.0),
    "layer_overhead_s": (math.log(1e-7), math.log(2e-3)),
    "token_overhead_s": (math.log(1e-9), math.log(1e-3)),
    "request_overhead_s": (math.log(1e-6), math.log(0.1)),
    "allreduce_latency_s": (math.log(1e-7), math.log(2e-4)),
    "allreduce_hop_s": (math.log(1e-8), math.log(2e-5)),
}
#: The range κ (``CostModel.context_serial_share``) is searched in: from reads and math overlapped
#: fully to not at all (one waits for the other); and the golden-section steps.
SERIAL_BOUNDS = (0.0, 1.0)
SERIAL_STEPS = 40
ITERATIONS = 12
#: The fit stops once an iteration lowers the sum of squares by less than this share of it. The
#: sum is rough at about this level (each run's simulation moves in whole iterations, so damped
#: steps near the minimum land 0.1-1% above or below it at random), and a change of 0.1% in the
#: sum moves no figure the file prints by more than its last digits.
TOLERANCE = 1e-3
STEP = 0.02  # forward-difference step, in log units


@dataclass(frozen=True)
class Parameter:
    name: str  # "bandwidth", "compute:<gpu>:<math>", "layer_overhead_s", "allreduce_latency_s", ...

    @property
    def family(self) -> str:
        return self.name.split(":")[0]


def _compute_id(gpu: str, specs=None) -> str:
    """The id ``gpu``'s compute shares are fitted under (``GpuSpec.compute_efficiency_id``)."""
    return (specs or _WORKER_SPECS or load_specs()).gpu(gpu).compute_efficiency_id


#: Harness -> the harnesses whose host costs it borrows, in order, when no fit row was measured
#: through it (an offline loop has no request path: its request overhead is 0, never borrowed).
STAND_INS = {
    "http": ("server", "offline", "session"),
    "server": ("http", "offline", "session"),
    "offline": ("session", "server", "http"),
    "session": ("offline", "server", "http"),
}


def stand_in(values: dict[str, float], harness: str) -> str | None:
    """The harness whose fitted host costs ``harness`` uses: itself when fitted (its token overhead
    is among ``values``), else the first fitted one of ``STAND_INS``; None when none is."""
    for name in (harness, *STAND_INS[harness]):
        if f"token_overhead_s:{name}" in values:
            return name
    return None


def host_costs(values: dict[str, float], harness: str) -> tuple[float, float]:
    """(request overhead, token overhead) of ``harness`` at ``values``: its own, or its stand-in's
    (``stand_in``). Offline: no request path, so 0 a request; an online harness whose stand-in is
    offline gets the same 0 (nothing measured says more)."""
    source = stand_in(values, harness)
    if source is None:
        raise SpecError(f"no harness has fit rows, so {harness} has no host costs", file=str(ROWS))
    request = 0.0 if harness in NO_REQUEST_PATH else values.get(f"request_overhead_s:{source}", 0.0)
    return request, values[f"token_overhead_s:{source}"]


#: A fitted κ's key among the parameter values: this prefix and the harness's name.
SERIAL_KEY = "context_serial_share:"


def context_serial_share(values: dict[str, float], harness: str) -> float:
    """κ of ``harness`` at ``values`` (``CostModel.context_serial_share``): fitted for a harness
    of ``SERIAL_CONTEXT_HARNESSES`` with fit rows, else 0 (its context passes overlap fully)."""
    return values.get(SERIAL_KEY + harness, 0.0) if harness in SERIAL_CONTEXT_HARNESSES else 0.0


def _link_kind(gpu: str, specs=None) -> str | None:
    """``calibration.link_kind`` of ``gpu``'s spec: "nvlink", "pcie", ..."""
    return link_kind((specs or _WORKER_SPECS or load_specs()).gpu(gpu))


def _link_share(values: dict[str, float], gpu: str, specs=None) -> float:
    """The link share ``gpu``'s all-reduces reach (``calibration.link_share``): its link kind's
    fitted one (``link:<kind>``), else the one its spec measured, else NVLink's (``link``)."""
    fitted = {key.split(":")[1]: value for key, value in values.items() if key.startswith("link:")}
    return link_share((specs or _WORKER_SPECS or load_specs()).gpu(gpu), values["link"], fitted)


def _cost_model(values: dict[str, float], gpu: str, specs=None, harness: str = "offline") -> CostModel:
    shares_of = _compute_id(gpu, specs)
    request, token = host_costs(values, harness)
    compute = {key.split(":")[2]: value for key, value in values.items() if key.startswith(f"compute:{shares_of}:")}
    shares = [value for key, value in values.items() if key.startswith("compute:")]
    return CostModel(
        name="expected",
        bandwidth_efficiency=values["bandwidth"],
        link_efficiency=_link_share(values, gpu, specs),
        compute_efficiency=compute,
        default_compute_efficiency=_geometric_mean(shares),
        layer_overhead_s=values["layer_overhead_s"],
        token_overhead_s=token,
        request_overhead_s=request,
        context_serial_share=context_serial_share(values, harness),
        allreduce_latency_s=values["allreduce_latency_s"],
        allreduce_hop_s=values["allreduce_hop_s"],
    )


def _geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


# -- simulating many runs at once ------------------------------------------------------------------

#: The specs a worker process simulates with (loaded once per process, ``_start_worker``).
_WORKER_SPECS = None


def _start_worker() -> None:
    global _WORKER_SPECS
    if _WORKER_SPECS is None:
        _WORKER_SPECS = load_specs()


def _simulate_task(task) -> dict[str, float] | str:
    """One simulation, in a worker: ``(run, parameter values, dequantization or None)`` -> the
    run's figures (``benchmarks.simulated_figures``), or the one-line message of its SpecError
    (an exception crossing processes would lose its file, entry and field)."""
    run, values, dequant = task
    costs = _cost_model(values, run.gpu, harness=run.harness)
    if dequant is not None:
        costs = _with_dequant(costs, *dequant)
    try:
        return benchmarks.simulated_figures(run, costs, _WORKER_SPECS)
    except SpecError as error:
        return str(error)


class Simulator:
    """Runs the fit's simulations, each distinct one once (``benchmarks.simulation_key``: a
    benchmark's TTFT, ITL and throughput rows share one), spread over ``jobs`` processes.

    Every simulation is deterministic, so the figures do not depend on ``jobs`` or on the
    order the processes finish in; the refit is the same file with one process or many."""

    def __init__(self, specs, jobs: int = 1) -> None:
        global _WORKER_SPECS
        _WORKER_SPECS = specs
        self.specs = specs
        self.jobs = jobs
        self._pool = None
        self._keys: dict[str, tuple] = {}
        #: (simulation key, parameter values, dequantization) -> figures, for points asked twice
        #: (the fit's last point, then its summary).
        self._seen: dict[tuple, dict[str, float]] = {}

    def __enter__(self) -> Simulator:
        return self

    def __exit__(self, *_) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool = None

    def key(self, run) -> tuple:
        if run.id not in self._keys:
            self._keys[run.id] = benchmarks.simulation_key(run)
        return self._keys[run.id]

    def figures(self, tasks: list) -> list[dict[str, float]]:
        """``_simulate_task`` of each task, in order; SpecError on the first that fails."""
        if self.jobs > 1 and len(tasks) > 1:
            if self._pool is None:
                context = multiprocessing.get_context(
                    "fork" if "fork" in multiprocessing.get_all_start_methods() else None
                )
                self._pool = context.Pool(self.jobs, initializer=_start_worker)
            results = self._pool.map(_simulate_task, tasks, chunksize=1)
        else:
            results = [_simulate_task(task) for task in tasks]
        for result in results:
            if isinstance(result, str):
                raise SpecError(result)
        return results

    def predict(self, runs, values, dequant=None) -> list[float]:
        """The expected figure of each run at the parameter ``values`` (and, for the dequantization
        pairs, ``dequant = (delta, switch)``)."""
        point = (tuple(sorted(values.items())), dequant)
        unique: dict[tuple, object] = {}
        for run in runs:
            if (self.key(run), point) not in self._seen:
                unique.setdefault(self.key(run), run)
        keys = list(unique)
        for key, found in zip(keys, self.figures([(unique[key], values, dequant) for key in keys]), strict=True):
            self._seen[key, point] = found
        return [benchmarks.figure(run, self._seen[self.key(run), point]) for run in runs]


def _residuals(runs, values, simulator: Simulator) -> list[float]:
    """log(measured / expected) for each run."""
    return [math.log(run.measured_over(e)) for run, e in zip(runs, simulator.predict(runs, values), strict=True)]


def depends(parameter: str, run, specs, own_links: frozenset = frozenset()) -> bool:
    """Whether ``run``'s expected figure moves with ``parameter`` at all; the fit's Jacobian has
    an exact 0 wherever it does not, so those runs are not simulated again. Bandwidth and the
    overheads time every run; the links and the all-reduce latency only runs whose layers are
    split over several GPUs (``performance.allreduces_per_pass``); a compute share only the runs
    on its GPU at its math (``performance.math_precision``)."""
    family = parameter.split(":")[0]
    if family in ("token_overhead_s", "request_overhead_s"):
        return run.harness == parameter.split(":")[1]
    if family == "link":
        # A kind of link with a share of its own (``own_links``) moves only with it; NVLink's moves the
        # rest, but for a kind whose spec measured its share (``calibration.measured_link_share``).
        kind = _link_kind(run.gpu, specs)
        mine = parameter.split(":")[1] if ":" in parameter else None
        if mine:
            moves = kind == mine
        else:
            borrows = kind in (None, "nvlink") or measured_link_share((specs or load_specs()).gpu(run.gpu)) is None
            moves = kind not in own_links and borrows
        return run.gpus > 1 and not run.attention_dp and moves
    if family in ("allreduce_latency_s", "allreduce_hop_s"):
        return run.gpus > 1 and not run.attention_dp
    if family == "compute":
        _, gpu, precision = parameter.split(":")
        shares_of = _compute_id(run.gpu, specs)
        return shares_of == gpu and math_precision(specs.gpu(run.gpu), run.weight_precision) == precision
    return True


def _weights(runs) -> list[float]:
    counts = {kind: sum(1 for run in runs if run.kind == kind) for kind in benchmarks.KINDS}
    return [1.0 / math.sqrt(counts[run.kind]) for run in runs]


def _solve(matrix: list[list[float]], vector: list[float], smallest_pivot: float = 1e-300) -> list[float]:
    """Gaussian elimination with partial pivoting (the normal equations are small); SpecError
    when a pivot falls below ``smallest_pivot`` (the matrix is singular, or as good as)."""
    n = len(vector)
    a = [[*row, vector[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        if abs(a[col][col]) < smallest_pivot:
            raise SpecError("the fit's normal equations are singular: a parameter has no effect on any run")
        for r in range(col + 1, n):
            factor = a[r][col] / a[col][col]
            for c in range(col, n + 1):
                a[r][c] -= factor * a[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (a[r][n] - sum(a[r][c] * x[c] for c in range(r + 1, n))) / a[r][r]
    return x


class Problem:
    """The least-squares problem: the fit runs, the parameters (each on a log scale), each run's
    weight, and which runs each parameter moves (``depends``)."""

    def __init__(self, runs, specs, simulator: Simulator, start=None, held=None) -> None:
        """``start``: parameter values to start from (else ``START``); ``held``: values of the
        parameters no run in ``runs`` moves (a refit without some runs), held where they are."""
        names = ["bandwidth", "link", "layer_overhead_s", "allreduce_latency_s", "allreduce_hop_s"]
        # A kind of link other than NVLink that multi-GPU runs crossed gets a share of its own.
        own_links = frozenset(
            kind
            for run in runs
            if run.gpus > 1 and not run.attention_dp
            for kind in [_link_kind(run.gpu, specs)]
            if kind not in (None, "nvlink")
        )
        names += [f"link:{kind}" for kind in sorted(own_links)]
        for harness in sorted({run.harness for run in runs}):
            names.append(f"token_overhead_s:{harness}")
            if harness not in NO_REQUEST_PATH:  # requests tokenized in the process: 0, not fitted
                names.append(f"request_overhead_s:{harness}")
        pairs = sorted(
            {(_compute_id(run.gpu, specs), math_precision(specs.gpu(run.gpu), run.weight_precision)) for run in runs}
        )
        names += [f"compute:{gpu}:{precision}" for gpu, precision in pairs]
        # A parameter no run moves would make the normal equations singular: held instead.
        names = [name for name in names if any(depends(name, run, specs, own_links) for run in runs)]
        self.start = start or {}
        self.held = {key: value for key, value in (held or {}).items() if key not in names}
        self.runs = runs
        self.params = [Parameter(name) for name in names]
        self.weights = _weights(runs)
        self.moved = [[depends(p.name, run, specs, own_links) for run in runs] for p in self.params]
        self.simulator = simulator

    def values_of(self, point: list[float]) -> dict[str, float]:
        return {**self.held, **{p.name: math.exp(v) for p, v in zip(self.params, point, strict=True)}}

    def clamp(self, point: list[float]) -> list[float]:
        return [
            min(max(v, LOG_BOUNDS[p.family][0]), LOG_BOUNDS[p.family][1])
            for p, v in zip(self.params, point, strict=True)
        ]

    def at_bound(self, point: list[float]) -> list[bool]:
        return [v in LOG_BOUNDS[p.family] for p, v in zip(self.params, point, strict=True)]

    def cost(self, point: list[float]) -> tuple[list[float], float]:
        """The weighted residuals at ``point`` and the sum of their squares."""
        residuals = _residuals(self.runs, self.values_of(point), self.simulator)
        r = [w * e for w, e in zip(self.weights, residuals, strict=True)]
        return r, sum(e * e for e in r)

    def jacobian(self, x: list[float], r: list[float]) -> list[list[float]]:
        """One column per parameter: the forward difference of the weighted residuals ``r`` at
        ``x``. A column simulates only the runs its parameter moves; the others' residuals stay
        where they are, exactly, so their entries are 0."""
        columns = []
        for i, param in enumerate(self.params):
            probe = x[:]
            probe[i] += STEP if x[i] + STEP <= LOG_BOUNDS[param.family][1] else -STEP
            moved = self.moved[i]
            chosen = [run for run, m in zip(self.runs, moved, strict=True) if m]
            again = iter(_residuals(chosen, self.values_of(probe), self.simulator))
            shifted = [w * next(again) if m else a for w, m, a in zip(self.weights, moved, r, strict=True)]
            columns.append([(b - a) / (probe[i] - x[i]) for a, b in zip(r, shifted, strict=True)])
        return columns

    def fit(self) -> tuple[list[float], int, list[list[float]]]:
        """The fitted point (log parameters), the iterations taken (Levenberg-Marquardt), and the
        Jacobian of the last iteration (at the fitted point, or one step before it that lowered
        the sum of squares by less than ``TOLERANCE``)."""
        x = self.clamp([math.log(self.start.get(p.name, START[p.family])) for p in self.params])
        r, total = self.cost(x)
        damping = 1e-2
        for iteration in range(1, ITERATIONS + 1):
            columns = self.jacobian(x, r)
            jtj = [[sum(ci[k] * cj[k] for k in range(len(r))) for cj in columns] for ci in columns]
            jtr = [sum(ci[k] * r[k] for k in range(len(r))) for ci in columns]
            improved = False
            for _ in range(8):
                system = [
                    [jtj[i][j] + (damping * jtj[i][i] if i == j else 0.0) for j in range(len(x))] for i in range(len(x))
                ]
                step = _solve(system, [-g for g in jtr])
                candidate = self.clamp([a + b for a, b in zip(x, step, strict=True)])
                r_new, total_new = self.cost(candidate)
                if total_new < total:
                    improved = total - total_new > TOLERANCE * total
                    x, r, total = candidate, r_new, total_new
                    damping = max(damping / 3, 1e-6)
                    break
                damping *= 4
            if not improved:
                return x, iteration, columns
        return x, ITERATIONS, columns

    def left_out_residuals(self, x: list[float], columns: list[list[float]]) -> list[float]:
        """log(measured ÷ expected) of each fit run as predicted by the fit without its benchmark run:
        every row of one simulated run (``benchmarks.simulation_key``: its TTFT, ITL and throughput,
        which share conditions and a measurement) is left out together.

        For least squares linearized at ``x`` (``columns``, the fit's last Jacobian J of the weighted
        residuals e, over the parameters not held at a bound, hat matrix H = J (J^T J)^-1 J^T), leaving out a group G
        gives exactly e_(-G) = (I - H_GG)^-1 e_G (the grouped form of the PRESS residual
        e_i / (1 - h_ii)), so no refit is needed. Divided by each run's weight, these are the
        band's residuals: a run the other runs predict badly widens it, as a held-out run would."""
        r, _ = self.cost(x)
        free = [not held for held in self.at_bound(x)]
        columns = [column for column, keep in zip(columns, free, strict=True) if keep]
        size = len(columns)
        gram = [[sum(a * b for a, b in zip(ci, cj, strict=True)) for cj in columns] for ci in columns]
        inverse_columns = [_solve(gram, [1.0 if i == j else 0.0 for i in range(size)]) for j in range(size)]
        rows = [[column[k] for column in columns] for k in range(len(r))]
        # (J^T J)^-1 J_k^T for each run k: the parameters' response to run k's residual.
        response = [[sum(inverse_columns[j][i] * row[j] for j in range(size)) for i in range(size)] for row in rows]
        groups: dict[tuple, list[int]] = {}
        for k, run in enumerate(self.runs):
            groups.setdefault(self.simulator.key(run), []).append(k)
        left_out = [0.0] * len(r)
        for members in groups.values():
            system = [
                [
                    (1.0 if a == b else 0.0) - sum(x * y for x, y in zip(rows[a], response[b], strict=True))
                    for b in members
                ]
                for a in members
            ]
            try:
                solved = _solve(system, [r[k] for k in members], smallest_pivot=1e-9)
            except SpecError:
                names = ", ".join(self.runs[k].id for k in members)
                raise SpecError(f"run {names} alone fixes a parameter, so it cannot be left out") from None
            for k, value in zip(members, solved, strict=True):
                left_out[k] = value / self.weights[k]
        return left_out


def serial_runs(runs) -> list:
    """The runs κ is fitted on: times to first token measured through a harness of
    ``SERIAL_CONTEXT_HARNESSES``, each a context pass of one prompt, whose time κ moves most."""
    return [run for run in runs if run.harness in SERIAL_CONTEXT_HARNESSES and run.kind == "ttft"]


def golden_section(cost, low: float, high: float, steps: int) -> float:
    """The point of ``[low, high]`` where ``cost`` (one minimum there) is least, after ``steps``
    golden-section steps, each shrinking the interval by 0.618."""
    golden = (math.sqrt(5) - 1) / 2
    a, b = high - golden * (high - low), low + golden * (high - low)
    cost_a, cost_b = cost(a), cost(b)
    for _ in range(steps):
        if cost_a <= cost_b:
            high, b, cost_b = b, a, cost_a
            a = high - golden * (high - low)
            cost_a = cost(a)
        else:
            low, a, cost_a = a, b, cost_b
            b = low + golden * (high - low)
            cost_b = cost(b)
    return (low + high) / 2


def fit_serial(runs, values: dict[str, float], simulator: Simulator) -> dict[str, float]:
    """κ of each harness of ``SERIAL_CONTEXT_HARNESSES`` that ``runs`` (``serial_runs``) were
    measured through, every other cost held at ``values``: the κ minimizing the squared logs of
    measured ÷ expected (golden-section search: the expected time grows with κ). A harness with
    no such run gets no κ here (``context_serial_share`` reads 0)."""
    fitted = {}
    for harness in sorted({run.harness for run in runs}):
        own = [run for run in runs if run.harness == harness]

        def cost(share: float, own=own, harness=harness) -> float:
            return sum(e * e for e in _residuals(own, {**values, SERIAL_KEY + harness: share}, simulator))

        fitted[SERIAL_KEY + harness] = golden_section(cost, *SERIAL_BOUNDS, SERIAL_STEPS)
    return fitted


def _two_stages(runs, specs, simulator: Simulator, start=None, held=None):
    """The joint fit on ``runs`` but ``serial_runs`` (``Problem``, every κ at 0), then κ on those
    alone with the rest held (``fit_serial``): (the joint problem, its point, iterations, last
    Jacobian, and every value). ``start`` and ``held`` as for ``Problem``; a κ in ``held`` is kept
    only where no serial run of its harness is in ``runs``."""
    serial = serial_runs(runs)
    serial_ids = {run.id for run in serial}
    held = held or {}
    kept = {key: value for key, value in held.items() if key.startswith(SERIAL_KEY)}
    joint_held = {key: value for key, value in held.items() if key not in kept}
    problem = Problem([run for run in runs if run.id not in serial_ids], specs, simulator, start, joint_held)
    x, iterations, columns = problem.fit()
    shared = problem.values_of(x)
    values = {**shared, **kept, **fit_serial(serial, shared, simulator)}
    return problem, x, iterations, columns, values


def fit(runs, specs, simulator: Simulator) -> tuple[dict[str, float], int, list[float]]:
    """The fitted parameters, the iterations taken, and each run's left-out residual.

    Two stages (``_two_stages``), as δ is fitted after the rest: the costs every run shares are
    fitted jointly on the runs but ``serial_runs``, then κ on those alone with the rest held,
    so that one harness's partial overlap does not move the hardware's shares. Left out: the
    joint runs' by ``Problem.left_out_residuals`` (at κ = 0, which moves a static batch's
    throughput by well under 1%), each serial run's by fitting κ again without it."""
    problem, x, iterations, columns, values = _two_stages(runs, specs, simulator)
    left_out = dict(zip((run.id for run in problem.runs), problem.left_out_residuals(x, columns), strict=True))
    serial = serial_runs(runs)
    for run in serial:
        others = [other for other in serial if simulator.key(other) != simulator.key(run)]
        refit = {**values, **fit_serial(others, values, simulator)}
        left_out[run.id] = _residuals([run], refit, simulator)[0]
    return values, iterations, [left_out[run.id] for run in runs]


#: How the fit runs are grouped for the two cross-validations: every row of one engine release
#: (the ``engine`` label: "TensorRT-LLM 0.17", "TensorRT-LLM 0.14 + Triton") or of one GPU id.
CV_GROUPS = {
    "band_leave_one_release_out": ("release", lambda run: run.engine),
    "band_leave_one_gpu_out": ("GPU", lambda run: run.gpu),
}


def cross_validated(runs, specs, simulator: Simulator, values: dict[str, float], group_of) -> list[float]:
    """measured ÷ expected of each fit run, predicted by a refit on the other groups' runs alone
    (``group_of(run)``: its release or its GPU).

    The refit starts at ``values`` (the full fit) and refits every parameter the remaining runs
    move. A compute share no remaining run moves is dropped, so the left-out runs get the default
    share (the geometric mean of the others), as a GPU the fit never saw does. The other
    parameters no remaining run moves (links, all-reduce latency, a harness's host costs when
    its only release is left out) are held at the full fit's values: they are the host's and
    the links', not the left-out group's hardware, but a reader should know the check borrows them."""
    # A left-out GPU's compute share and its own kind of link are not borrowed from the full fit.
    held = {key: value for key, value in values.items() if not key.startswith(("compute:", "link:"))}
    groups: dict[str, list] = {}
    for run in runs:
        groups.setdefault(group_of(run), []).append(run)
    ratios: dict[str, float] = {}
    for key in sorted(groups):
        rest = [run for run in runs if group_of(run) != key]
        refit = _two_stages(rest, specs, simulator, start=values, held=held)[4]
        for run, figure in zip(groups[key], simulator.predict(groups[key], refit), strict=True):
            ratios[run.id] = run.measured_over(figure)
    return [ratios[run.id] for run in runs]


def kernel_switch(run) -> int | None:
    """The tokens from which ``run``'s engine widened the weights, from its ``engine`` column:
    "... fused at every size" -> None, "... widened from N tokens" -> N."""
    widened = re.search(r"widened from (\d+) tokens", run.engine)
    if widened:
        return int(widened.group(1))
    if "fused at every size" in run.engine:
        return None
    raise SpecError(
        "must say 'fused at every size' or 'widened from N tokens'",
        file=str(DEQUANT_ROWS),
        entry=run.id,
        field="engine",
    )


def dequant_pairs(runs) -> dict[str, list[tuple]]:
    """Split -> the (fused, widened) pairs of runs that differ only in the kernel path."""
    groups: dict[tuple, dict[str, object]] = {}
    for run in runs:
        key = (run.split, run.gpu, run.gpus, run.model, run.weight_precision, run.input_tokens, run.output_tokens)
        path = "fused" if kernel_switch(run) is None else "widened"
        if path in groups.setdefault(key, {}):
            raise SpecError(f"a second {path} run of the same conditions", file=str(DEQUANT_ROWS), entry=run.id)
        groups[key][path] = run
    pairs: dict[str, list[tuple]] = {"fit": [], "check": []}
    for key, pair in groups.items():
        if set(pair) != {"fused", "widened"}:
            lone = next(iter(pair.values()))
            raise SpecError("has no run of the other kernel path to pair with", file=str(DEQUANT_ROWS), entry=lone.id)
        if key[0] in pairs:
            pairs[key[0]].append((pair["fused"], pair["widened"]))
    return pairs


def _with_dequant(costs: CostModel, delta: float, switch: int | None) -> CostModel:
    return replace(costs, dequant_overhead=delta, dequant_switch_tokens=switch)


def predicted_pairs(pairs, values, delta: float, simulator: Simulator) -> list[tuple[float, float]]:
    """The expected throughputs of each (fused, widened) pair at δ, each run at its own kernel path."""
    runs = [run for pair in pairs for run in pair]
    tasks = [(run, values, (delta, kernel_switch(run))) for run in runs]
    figures = [benchmarks.figure(run, found) for run, found in zip(runs, simulator.figures(tasks), strict=True)]
    return list(zip(figures[::2], figures[1::2], strict=True))


def _pair_residual(pair, expected: tuple[float, float]) -> float:
    """log(measured ÷ expected) of the pair's ratio, widened ÷ fused."""
    fused, widened = expected
    return math.log(pair[1].value / pair[0].value) - math.log(widened / fused)


def fit_dequant(pairs, values, simulator: Simulator) -> float:
    """δ minimizing the squared log residuals of the pairs' ratios (golden-section search: the
    expected ratio grows with δ, so the sum has one minimum in the bounds)."""
    if not pairs:
        raise SpecError("no fused and widened pair has split = fit", file=str(DEQUANT_ROWS))

    def cost(delta: float) -> float:
        expected = predicted_pairs(pairs, values, delta, simulator)
        return sum(_pair_residual(pair, e) ** 2 for pair, e in zip(pairs, expected, strict=True))

    return golden_section(cost, *DEQUANT_BOUNDS, DEQUANT_STEPS)


def dequant_lines(pairs, values, delta: float, simulator: Simulator) -> list[str]:
    """The file's [fit.dequant] table: the rows, the method, and for every pair its measured and
    expected ratio and each run's measured ÷ expected throughput."""
    lines = [
        "[fit.dequant]",
        'rows = "data/dequant-measurements.csv"',
        f'rows_sha256 = "{_digest(DEQUANT_ROWS)}"',
        'method = "golden-section search on delta, the other costs held; residual log(measured / expected) of'
        " each pair's throughput ratio, widened / fused\"",
        f"fit_pairs = {len(pairs['fit'])}",
        f"held_out_pairs = {len(pairs['check'])}",
        "",
    ]
    for split in ("fit", "check"):
        for pair, expected in zip(pairs[split], predicted_pairs(pairs[split], values, delta, simulator), strict=True):
            fused, widened = pair
            lines += [
                f'[fit.dequant.{split}."{fused.input_tokens}-tokens"]',
                f'runs = ["{fused.id}", "{widened.id}"]',
                f"measured_ratio = {_number(widened.value / fused.value)}",
                f"expected_ratio = {_number(expected[1] / expected[0])}",
                f"fused_measured_over_expected = {_number(fused.value / expected[0])}",
                f"widened_measured_over_expected = {_number(widened.value / expected[1])}",
                "",
            ]
    return lines


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _summary(runs, ratios, band) -> dict[str, dict[str, float]]:
    """Per kind: count, median, p10, p90 of measured ÷ expected, and the share the band holds."""
    out = {}
    for kind in benchmarks.KINDS:
        chosen = [ratio for run, ratio in zip(runs, ratios, strict=True) if run.kind == kind]
        if not chosen:
            continue
        low, high = band[kind]
        out[kind] = {
            "runs": len(chosen),
            "median": statistics.median(chosen),
            "p10": _percentile(chosen, 0.1),
            "p90": _percentile(chosen, 0.9),
            "in_band": sum(1 for value in chosen if low <= value <= high) / len(chosen),
        }
    return out


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _specs_digest() -> str:
    """Of the two spec files the fit read, together (a spec edit changes every prediction)."""
    data = ROOT / "roofline" / "data"
    return hashlib.sha256((data / "gpus.toml").read_bytes() + (data / "models.toml").read_bytes()).hexdigest()


def _tp_order(values, simulator: Simulator) -> dict[str, float]:
    """Expected output tokens/s per GPU, Llama 3.1 70B fp8 on H100s at 128/2048 with every
    request at once, at TP 2, 4 and 8, scheduled as the TensorRT-LLM runs are (the issue's
    ordering check; measured 3,085, 2,878 and 2,133)."""
    runs = [
        benchmarks.ServingRun(
            id=f"tp{gpus}",
            split="check",
            engine="TensorRT-LLM",
            gpu="h100-sxm",
            gpus=gpus,
            model="llama-3.1-70b",
            weight_precision="fp8",
            kv_precision="fp8",
            attention_dp=False,
            input_tokens=128,
            output_tokens=2048,
            load="rate=inf",
            requests=3000,
            metric="throughput_tokens_per_s",
            value=1.0,
            source="",
            note="",
        )
        for gpus in (2, 4, 8)
    ]
    expected = simulator.predict(runs, values)
    return {run.id: figure / run.gpus for run, figure in zip(runs, expected, strict=True)}


#: Link shares at which the file also records the fit's weighted sum of squares, the other costs
#: held: the profile that shows how firmly the rows fix the share (``link_lines``).
LINK_PROFILE = (0.8, 0.9, 0.95)


def link_lines(runs, values, simulator: Simulator) -> list[str]:
    """The file's [fit.link_efficiency_profile]: the weighted sum of squares of the fit runs at each
    share in ``LINK_PROFILE`` and at the fitted one, the other costs held, and what bounds the share.

    The share is of a ring all-reduce at the links' nameplate, ``2 (G-1)/G * S / W``, one direction
    (NVLink 4: 450 GB/s). NCCL's maintainer puts the ring at about 370 GB/s of bus bandwidth on
    H100s (0.82 of it) and NVLink SHARP's in-switch all-reduce, NCCL's default there, at about
    480 GB/s on 8 GPUs, 1.07 times the ring formula at nameplate
    (https://github.com/NVIDIA/nccl-tests/issues/212). A share is kept at most 1 all the same
    (``CostModel``): past it the ceiling's own accounting would be beaten, and the profile shows
    whether the rows ask for more."""
    weights = _weights(runs)
    fitted = values["link"]
    points = sorted({*LINK_PROFILE, fitted})
    lines = ["[fit.link_efficiency_profile]"]
    lines.append(
        'note = "weighted sum of squares of the fit runs at each link share, the other costs held; the share is'
        " of a ring all-reduce at the links' nameplate, one direction, and is bounded by 1. NCCL's maintainer:"
        " a ring reaches about 370 GB/s of bus bandwidth on H100s (0.82 of NVLink 4's 450), NVLink SHARP,"
        " NCCL's default all-reduce there, about 480 (1.07), https://github.com/NVIDIA/nccl-tests/issues/212\""
    )
    entries = []
    for share in points:
        residuals = _residuals(runs, {**values, "link": share}, simulator)
        total = sum((w * e) ** 2 for w, e in zip(weights, residuals, strict=True))
        entries.append(f'"{_number(share)}" = {_number(total)}')
    lines.append(f"sum_of_squares = {{ {', '.join(entries)} }}")
    return [*lines, ""]


def _number(value: float) -> str:
    return repr(float(f"{value:.6g}"))


#: The share of measurements each band may leave out on each side: an 80% band.
BAND_TAIL = 0.1
#: Fewest ratios whose conformal ranks bound a band with ``BAND_TAIL`` (9 for 80%): with fewer, a rank
#: falls outside the list (``conformal_bounds``).
MIN_BAND_RUNS = math.ceil(1 / BAND_TAIL - 1)


def conformal_bounds(ratios: list[float], tail: float = BAND_TAIL) -> tuple[float, float]:
    """The band split-conformal prediction gives ``n`` out-of-sample ratios for a new one: the
    ``floor(tail * (n + 1))``-th and the ``ceil((1 - tail) * (n + 1))``-th smallest (1-based).

    A new measurement exchangeable with the ``n`` falls below the first with probability at most
    ``tail``, and above the second with probability at most ``tail`` (Lei, G'Sell, Rinaldo,
    Tibshirani and Wasserman, "Distribution-Free Predictive Inference for Regression", JASA 2018,
    section 2.2), so the band holds it with probability at least ``1 - 2 tail``. The plain p10 and
    p90 sit about one rank inside these: on 24 TTFT rows they interpolate between the 3rd and 4th
    smallest and between the 21st and 22nd, these are the 2nd and 23rd; a p10-p90 band held 78% of
    the held-out rows of December 2026, these bounds 81%.
    The ratios here are left out by benchmark or by refit, not split off once, as the jackknife+
    (Barber, Candès, Ramdas and Tibshirani, Annals of Statistics 2021) uses them; the 80% is its
    aim, not a guarantee. Raises SpecError with fewer than ``1 / tail - 1`` ratios (9 for 80%),
    where a rank falls outside the list and the band would be unbounded."""
    ordered = sorted(ratios)
    count = len(ordered)
    low_rank, high_rank = math.floor(tail * (count + 1)), math.ceil((1 - tail) * (count + 1))
    if low_rank < 1 or high_rank > count:  # fewer than MIN_BAND_RUNS for the default tail
        raise SpecError(
            f"{count} fit run{'' if count == 1 else 's'} of one kind bound no {1 - 2 * tail:.0%} band:"
            f" it takes at least {math.ceil(1 / tail - 1)}",
            file=str(ROWS),
            hint="add fit rows of that kind (split = fit)",
        )
    return ordered[low_rank - 1], ordered[high_rank - 1]


def _band(runs, ratios) -> dict[str, tuple[float, float]]:
    """Kind -> the conformal bounds (``conformal_bounds``) of ``ratios`` over the runs of that kind."""
    out = {}
    for kind in benchmarks.KINDS:
        chosen = [ratio for run, ratio in zip(runs, ratios, strict=True) if run.kind == kind]
        if not chosen:
            raise SpecError(f"no run of kind {kind} has split = fit, so it has no band", file=str(ROWS))
        out[kind] = conformal_bounds(chosen)
    return out


def render(
    values,
    iterations,
    fit_runs,
    check_runs,
    fit_ratios,
    check_ratios,
    band,
    simulator,
    pairs,
    delta,
    specs,
    validation=None,
) -> str:
    """The calibration file's text. ``validation``: ``Validation`` of the cross-validations and the
    held-out rows on their ground (``None``: the first rendering, which that is computed from)."""
    shares = [value for key, value in values.items() if key.startswith("compute:")]
    metric_kind = {
        "throughput_tokens_per_s": "throughput",
        "ttft_mean_s": "ttft",
        "itl_mean_s": "itl",
        "tpot_mean_s": "itl",
    }
    lines = [
        "# Expected-mode costs for roofline. WRITTEN BY scripts/fit_expected.py: do not edit by hand.",
        "# Refit with `python scripts/fit_expected.py`; `--check` says whether this file is current.",
        "# See roofline/calibration.py for what each value means.",
        "",
        "[fit]",
        f'package_version = "{VERSION}"',
        'script = "scripts/fit_expected.py"',
        'rows = "data/serving-measurements.csv"',
        f'rows_sha256 = "{_digest(ROWS)}"',
        f'specs_sha256 = "{_specs_digest()}"',
        f"fit_rows = {len(fit_runs)}",
        f"held_out_rows = {sum(run.counted for run in check_runs)}",
        f"held_out_reported_defect_rows = {sum(not run.counted for run in check_runs)}",
        f"iterations = {iterations}",
        'method = "Levenberg-Marquardt on log parameters; residual log(measured / expected), each kind weighted'
        " 1/sqrt(its runs); every run simulated with roofline.benchmarks.predict (at most"
        f' {benchmarks.SIMULATED_REQUESTS:,} requests)"',
        f"band = \"an {1 - 2 * BAND_TAIL:.0%} band, per kind: of the n fit rows' measured / expected, each with its"
        " benchmark run left out of the fit (its rows together) by the linearized fit's hat matrix, e_(-G) ="
        f" (I - H_GG)^-1 e_G, the floor({BAND_TAIL:g} (n + 1))-th and ceil({1 - BAND_TAIL:g} (n + 1))-th smallest"
        ' (split-conformal ranks, Lei et al. 2018)"',
        'cross_validation = "band_leave_one_release_out and band_leave_one_gpu_out: the same ranks, per kind, of the'
        " fit rows' measured / expected, each predicted by a refit without every row of its engine release (its GPU);"
        " a left-out GPU's compute share is the default, and parameters no remaining row moves (links, all-reduce"
        " latency, a harness's host costs and its context_serial_share) are held at the full fit's\"",
        f"context_serial_rows = {len(serial_runs(fit_runs))}",
        'context_serial = "each [harness] context_serial_share, after the rest and with the rest held: golden-section'
        " search on kappa in [0, 1] over that harness's fit TTFT rows (a context pass takes max(memory, compute) +"
        ' kappa * min(memory, compute)); each left out by fitting kappa again without it"',
        "",
    ]
    if validation is not None:
        lines += validation.lines(band)
    counted = [(run, ratio) for run, ratio in zip(check_runs, check_ratios, strict=True) if run.counted]
    summaries = [
        ("fit_rows", fit_runs, fit_ratios),
        ("held_out_rows", [run for run, _ in counted], [ratio for _, ratio in counted]),
        # Every held-out row, those whose source reports them as an engine's defect included: printed
        # beside the figures the goals are read on, so a reader sees what the flag leaves out.
        ("held_out_rows_with_reported_defects", check_runs, check_ratios),
    ]
    for label, runs, ratios in summaries:
        for kind, stats in _summary(runs, ratios, band).items():
            lines.append(f"[fit.{label}_summary.{kind}]")
            lines.append(f"runs = {stats['runs']}")
            for key in ("median", "p10", "p90", "in_band"):
                lines.append(f"{key} = {_number(stats[key])}")
            lines.append("")
    lines.append("[fit.tp_order_tokens_per_s_per_gpu]")
    lines.append(
        'case = "Llama 3.1 70B fp8 on H100s, 128 in / 2048 out, every request at once, TensorRT-LLM scheduling"'
    )
    for key, value in _tp_order(values, simulator).items():
        lines.append(f"{key} = {_number(value)}")
    lines += ["", *link_lines(fit_runs, values, simulator)]
    lines += dequant_lines(pairs, values, delta, simulator)
    lines += [
        "[costs]",
        f"bandwidth_efficiency = {_number(values['bandwidth'])}",
        f"link_efficiency = {_number(values['link'])}",
        f"link_efficiency_by_kind = {{ {_link_shares(values)} }}",
        f"default_compute_efficiency = {_number(_geometric_mean(shares))}",
        f"layer_overhead_s = {_number(values['layer_overhead_s'])}",
        f"allreduce_latency_s = {_number(values['allreduce_latency_s'])}",
        f"allreduce_hop_s = {_number(values['allreduce_hop_s'])}",
        f"dequant_overhead = {_number(delta)}",
        f"dequant_switch_tokens = {DEQUANT_SWITCH_TOKENS}",
        "",
        "[costs.compute_efficiency]",
    ]
    fitted: dict[str, list[str]] = {}
    for key, value in sorted(values.items()):
        if key.startswith("compute:"):
            _, gpu, precision = key.split(":")
            fitted.setdefault(gpu, []).append(f"{precision} = {_number(value)}")
    # A chip that shares a fitted chip's compute (``same_compute_as``) is listed with those shares,
    # so that the file says what every chip gets.
    for gpu in sorted(specs.gpus):
        entries = fitted.get(specs.gpu(gpu).compute_efficiency_id)
        if entries:
            lines.append(f'"{gpu}" = {{ {", ".join(entries)} }}')
    lines.append("")
    lines += harness_lines(fit_runs, values)
    engines = sorted({run.engine_id for run in fit_runs})
    lines += ["[engines]", f"fitted = [{', '.join(f'{e!r}'.replace(chr(39), chr(34)) for e in engines)}]", ""]
    bands = {"band": band}
    # The first rendering has no cross-validation yet: the in-sample band stands in, never written.
    bands.update({name: band for name in CV_GROUPS} if validation is None else validation.bands)
    for name, table in bands.items():
        lines.append(f"[{name}]")
        for metric in BAND_METRICS:
            low, high = table[metric_kind[metric]]
            lines.append(f"{metric} = [{_number(low)}, {_number(high)}]")
        lines.append("")
    return "\n".join(lines[:-1]) + "\n"


def _link_shares(values) -> str:
    """``pcie = 0.4``: each kind of link with a fitted share of its own, for the file's inline table."""
    links = sorted((key.split(":")[1], value) for key, value in values.items() if key.startswith("link:"))
    return ", ".join(f"{kind} = {_number(value)}" for kind, value in links)


def harness_lines(fit_runs, values) -> list[str]:
    """The file's ``[harness.<name>]`` tables: each harness's host costs, its fit rows, and for one
    without rows the harness whose costs it borrows (``stand_in``)."""
    lines = []
    for harness in HARNESSES:
        rows = sum(1 for run in fit_runs if run.harness == harness)
        request, token = host_costs(values, harness)
        lines += [
            f"[harness.{harness}]",
            f"request_overhead_s = {_number(request)}",
            f"token_overhead_s = {_number(token)}",
            f"fit_rows = {rows}",
        ]
        if harness in SERIAL_CONTEXT_HARNESSES:
            lines.append(f"context_serial_share = {_number(context_serial_share(values, harness))}")
        if not rows:
            lines.append(f'stand_in = "{stand_in(values, harness)}"')
        lines.append("")
    return lines


def predictions_text(runs, expected: dict[str, float], specs) -> str:
    """One line per fit and check run: its ceiling and its expected figure, for the measured page."""
    lines = [
        "# WRITTEN BY scripts/fit_expected.py: do not edit by hand. Each fit and check run of",
        "# data/serving-measurements.csv, its ceiling (roofline.benchmarks.ceiling) and its expected",
        "# figure at the costs in roofline/data/calibration.toml (roofline.benchmarks.predict).",
        "id,ceiling,expected",
    ]
    for run in runs:
        lines.append(f"{run.id},{_number(benchmarks.ceiling(run, specs))},{_number(expected[run.id])}")
    return "\n".join(lines) + "\n"


def build(jobs: int | None = None) -> dict[Path, str]:
    """Refit from the rows; return each output file's text (raises SpecError on any failure).
    ``jobs``: processes to simulate in (``default_jobs`` when None); the files do not depend on it."""
    return build_and_validate(jobs)[0]


def build_and_validate(jobs: int | None = None) -> tuple[dict[Path, str], Validation]:
    """``build``'s files, and the ``Validation`` whose coverage they record (``main`` prints it)."""
    jobs = default_jobs() if jobs is None else jobs
    specs = load_specs()
    runs = benchmarks.load_serving_runs(ROWS)
    fit_runs = [run for run in runs if run.split == "fit"]
    check_runs = [run for run in runs if run.split == "check"]
    if not fit_runs:
        raise SpecError("no run has split = fit", file=str(ROWS))
    pairs = dequant_pairs(benchmarks.load_serving_runs(DEQUANT_ROWS))
    with Simulator(specs, jobs) as simulator:
        values, iterations, left_out = fit(fit_runs, specs, simulator)
        band = _band(fit_runs, [math.exp(e) for e in left_out])
        fit_ratios = [math.exp(e) for e in _residuals(fit_runs, values, simulator)]
        check_ratios = [math.exp(e) for e in _residuals(check_runs, values, simulator)]
        delta = fit_dequant(pairs["fit"], values, simulator)
        cv = {
            name: cross_validated(fit_runs, specs, simulator, values, group) for name, (_, group) in CV_GROUPS.items()
        }
        left_out_ratios = [math.exp(e) for e in left_out]
        validation = Validation({name: _band(fit_runs, ratios) for name, ratios in cv.items()})
        arguments = (values, iterations, fit_runs, check_runs, fit_ratios, check_ratios, band, simulator, pairs, delta)
        # The held-out rows' bands on their ground come from the file itself (Calibration.for_ground):
        # rendered once without them, read back, then rendered with them.
        first = parse_calibration(render(*arguments, specs, validation), "the refit")
        validation.measure(first, specs, fit_runs, fit_ratios, left_out_ratios, cv, check_runs, check_ratios)
        text = render(*arguments, specs, validation)
    parse_calibration(text, "the refit")  # what is written must load
    modelled = fit_runs + check_runs
    expected = {run.id: run.value / ratio for run, ratio in zip(modelled, fit_ratios + check_ratios, strict=True)}
    return {OUTPUT: text, PREDICTIONS: predictions_text(modelled, expected, specs)}, validation


def _inside_by_group(triples, group_of) -> dict[str, tuple[int, int]]:
    """``(run, ratio, (low, high))`` triples counted by ``group_of(run)``: (inside the band, runs)."""
    counts: dict[str, tuple[int, int]] = {}
    for run, ratio, (low, high) in triples:
        inside, total = counts.get(group_of(run), (0, 0))
        counts[group_of(run)] = (inside + (low <= ratio <= high), total + 1)
    return counts


def _share_inside(pairs) -> float:
    """The share of ``(ratio, (low, high))`` pairs whose ratio lies in its band."""
    return sum(1 for ratio, (low, high) in pairs if low <= ratio <= high) / len(pairs)


class Validation:
    """What the file says about its band beyond the fit: the cross-validated bands, and the share of
    measured values each band holds (``measure``), which ``scripts/fit_expected.py`` also prints."""

    def __init__(self, bands: dict[str, dict[str, tuple[float, float]]]) -> None:
        self.bands = bands
        #: Label -> kind ("all" too) -> share inside the band; filled by ``measure``.
        self.coverage: dict[str, dict[str, float]] = {}
        #: GPU label -> the held-out throughputs' median, p10, p90 and share inside their band.
        self.by_gpu: dict[str, dict[str, float]] = {}
        #: Cross-validation name -> left-out group -> (fit runs inside the file's band, fit runs), printed
        #: by ``report`` (not written): which group's runs a leave-one-out coverage misses.
        self.by_group: dict[str, dict[str, tuple[int, int]]] = {}
        self.beating_ceiling: list[str] = []
        #: Nested coverage label -> fit runs left without a band (``_nested_band`` gave None).
        self.unbanded: dict[str, int] = {}
        #: Nested coverage label -> left-out group -> (runs inside their nested band, runs with one).
        self.nested_by_group: dict[str, dict[str, tuple[int, int]]] = {}

    def measure(self, calibration, specs, fit_runs, fit_ratios, left_out, cv, check_runs, check_ratios) -> None:
        """Coverage of the band: on the fit rows in sample, left out by benchmark, by release and by
        GPU (each against the file's band, ``[band]``); the rows left out by release and by GPU also
        against the band the refit would give them (``_on_ground``: ``_left_out_band``) and against the
        band a fit without their group would give them (``_nested``: ``_nested_band``; where it has
        none, the run is counted in ``unbanded`` and the set has no "all" share, only its kinds'); and
        on the held-out rows, each against the band of its own ground (``Calibration.for_ground``:
        widened where its GPU, engine or harness is unfitted) and against ``[band]`` alone."""
        fixed = {kind: calibration.band[benchmarks.BAND_METRIC[kind]] for kind in benchmarks.KINDS}
        counted = [(run, ratio) for run, ratio in zip(check_runs, check_ratios, strict=True) if run.counted]
        ground = [(run, ratio, self._ground_band(calibration, specs, run)) for run, ratio in counted]
        sets = {
            "in_sample": [(run, ratio, fixed[run.kind]) for run, ratio in zip(fit_runs, fit_ratios, strict=True)],
            "left_out_benchmark": [
                (run, ratio, fixed[run.kind]) for run, ratio in zip(fit_runs, left_out, strict=True)
            ],
            **{
                name.removeprefix("band_"): [
                    (run, ratio, fixed[run.kind]) for run, ratio in zip(fit_runs, cv[name], strict=True)
                ]
                for name in CV_GROUPS
            },
            **{
                name.removeprefix("band_") + "_on_ground": [
                    (run, ratio, self._left_out_band(calibration, specs, fit_runs, run, group_of))
                    for run, ratio in zip(fit_runs, cv[name], strict=True)
                ]
                for name, (_, group_of) in CV_GROUPS.items()
            },
            "held_out_fixed_band": [(run, ratio, fixed[run.kind]) for run, ratio in counted],
            "held_out_on_ground": ground,
        }
        for name, (_, group_of) in CV_GROUPS.items():
            nested = [
                (run, ratio, self._nested_band(calibration, specs, fit_runs, run, group_of, left_out, cv))
                for run, ratio in zip(fit_runs, cv[name], strict=True)
            ]
            label = name.removeprefix("band_") + "_nested"
            sets[label] = [triple for triple in nested if triple[2] is not None]
            self.unbanded[label] = sum(1 for triple in nested if triple[2] is None)
            self.nested_by_group[label] = _inside_by_group(sets[label], group_of)
        for label, triples in sets.items():
            # A set that leaves runs without a band has no share of all kinds: its kinds' shares say
            # what it covers, and ``unbanded`` what it does not.
            whole = triples and not self.unbanded.get(label)
            shares = {"all": _share_inside([(ratio, band) for _, ratio, band in triples])} if whole else {}
            for kind in benchmarks.KINDS:
                chosen = [(ratio, band) for run, ratio, band in triples if run.kind == kind]
                if chosen:
                    shares[kind] = _share_inside(chosen)
            self.coverage[label] = shares
        for name, (_, group_of) in CV_GROUPS.items():
            triples = [(run, ratio, fixed[run.kind]) for run, ratio in zip(fit_runs, cv[name], strict=True)]
            self.by_group[name] = _inside_by_group(triples, group_of)
        families: dict[str, list] = {}
        for run, ratio, band in ground:
            if run.kind == "throughput":
                families.setdefault(f"{run.gpu} x{'1' if run.gpus == 1 else '2+'}", []).append((ratio, band))
        for label, pairs in sorted(families.items()):
            ratios = [ratio for ratio, _ in pairs]
            self.by_gpu[label] = {
                "runs": len(pairs),
                "median": statistics.median(ratios),
                "p10": _percentile(ratios, 0.1),
                "p90": _percentile(ratios, 0.9),
                "in_band": _share_inside(pairs),
            }
        self.beating_ceiling = [
            run.id
            for run in [*fit_runs, *(run for run, _ in counted)]
            if run.ratio(benchmarks.ceiling(run, specs)) > 1 + CEILING_TOLERANCE
        ]

    @staticmethod
    def _ground_band(calibration, specs, run) -> tuple[float, float]:
        return benchmarks.grounded(run, calibration, specs).band[benchmarks.BAND_METRIC[run.kind]]

    @classmethod
    def _nested_band(cls, calibration, specs, fit_runs, run, group_of, left_out, cv) -> tuple[float, float] | None:
        """The band ``run`` would get from the file a fit without its group (``group_of``) would write,
        none of it ranked over the group's own runs: ``_left_out_band``'s widening, with the fit band
        ranked over the other groups' runs left out by benchmark (``left_out``) and each out-of-ground
        band over the other groups' runs left out by its cross-validation (``cv``). None where the other
        groups hold fewer than ``MIN_BAND_RUNS`` runs of its kind: a fit without the group could not rank a
        band of that kind (``conformal_bounds`` refuses one). What it still borrows: the other groups'
        ratios come from fits that had this group's rows."""
        metric = benchmarks.BAND_METRIC[run.kind]
        others = [i for i, other in enumerate(fit_runs) if other.kind == run.kind and group_of(other) != group_of(run)]
        if len(others) < MIN_BAND_RUNS:
            return None
        reduced = replace(
            calibration,
            band=MappingProxyType({metric: conformal_bounds([left_out[i] for i in others])}),
            out_of_ground_bands=MappingProxyType(
                {name: {metric: conformal_bounds([ratios[i] for i in others])} for name, ratios in cv.items()}
            ),
        )
        return cls._left_out_band(reduced, specs, fit_runs, run, group_of)

    @staticmethod
    def _left_out_band(calibration, specs, fit_runs, run, group_of) -> tuple[float, float]:
        """The band ``run`` would get from a fit without its group (``group_of``): the file's, widened
        as ``Calibration.for_ground`` widens it for a GPU, math, kind of link or harness that none of
        the remaining runs has (the refit predicting it knows them no better)."""
        rest = [other for other in fit_runs if group_of(other) != group_of(run)]
        kept = {specs.gpu(other.gpu).compute_efficiency_id for other in rest}
        maths = {
            (specs.gpu(o.gpu).compute_efficiency_id, math_precision(specs.gpu(o.gpu), o.weight_precision)) for o in rest
        }
        compute = {
            gpu: {m: share for m, share in shares.items() if (specs.gpu(gpu).compute_efficiency_id, m) in maths}
            for gpu, shares in calibration.compute_efficiency.items()
            if specs.gpu(gpu).compute_efficiency_id in kept
        }
        links = {_link_kind(o.gpu, specs) for o in rest if o.gpus > 1 and not o.attention_dp}
        by_kind = {kind: share for kind, share in calibration.link_efficiency_by_kind.items() if kind in links}
        harnesses = {o.harness for o in rest}
        costs = {
            name: h if name in harnesses else replace(h, fit_rows=0, stand_in=next(iter(sorted(harnesses))))
            for name, h in calibration.harnesses.items()
        }
        reduced = replace(
            calibration,
            compute_efficiency={gpu: shares for gpu, shares in compute.items() if shares},
            link_efficiency_by_kind=by_kind,
            harnesses=costs,
            fitted_engines=tuple(sorted({o.engine_id for o in rest})),
        )
        return benchmarks.grounded(run, reduced, specs).band[benchmarks.BAND_METRIC[run.kind]]

    def lines(self, band) -> list[str]:
        """The file's ``[fit.coverage]``, ``[fit.held_out_by_gpu]`` and ceiling count (nothing before
        ``measure``)."""
        if not self.coverage:
            return []
        lines = [
            "[fit.coverage]",
            'note = "share of measured values inside the band: the fit rows in sample, predicted without their'
            " benchmark, without their release, without their GPU (against the file's band; the _on_ground rows"
            " against the band the refit would give them, widened where the remaining rows have no share for their"
            " GPU, math, links or harness; the _nested rows against the band a file fitted without their group would"
            " give them, every band in it ranked over the other groups' runs, where those hold enough runs of their"
            " kind: [fit.coverage_runs_without_a_band] counts the others); the held-out rows against the file's band"
            ' and against the band of their ground (widened where their GPU, engine or harness is unfitted)"',
        ]
        for label, shares in self.coverage.items():
            entries = ", ".join(f"{kind} = {_number(share)}" for kind, share in shares.items())
            lines.append(f"{label} = {{ {entries} }}")
        lines.append("")
        lines.append("[fit.coverage_runs_without_a_band]")
        lines += [f"{label} = {count}" for label, count in self.unbanded.items()]
        lines.append("")
        for label, stats in self.by_gpu.items():
            lines.append(f'[fit.held_out_throughput_by_gpu."{label}"]')
            lines.append(f"runs = {stats['runs']}")
            lines += [f"{key} = {_number(stats[key])}" for key in ("median", "p10", "p90", "in_band")]
            lines.append("")
        lines.append("[fit.ceiling]")
        lines.append(f"tolerance = {CEILING_TOLERANCE}")
        lines.append(f"rows_beating_it = {len(self.beating_ceiling)}")
        lines.append("")
        return lines

    def report(self) -> str:
        """The coverage table ``main`` prints."""
        kinds = ("all", *benchmarks.KINDS)
        out = [f"{'band coverage':<34}" + "".join(f"{kind:>12}" for kind in kinds)]
        for label, shares in self.coverage.items():
            cells = "".join(f"{shares[k]:>12.0%}" if k in shares else f"{'-':>12}" for k in kinds)
            out.append(f"{label:<34}{cells}")
        for label, count in self.unbanded.items():
            out.append(f"{label}: {count} fit runs without a band (too few runs of their kind outside their group)")
        grouped = [
            (f"{name.removeprefix('band_')}: fit runs inside the file's band", counts)
            for name, counts in self.by_group.items()
        ]
        grouped += [
            (f"{label}: fit runs inside the band a fit without their group gives", counts)
            for label, counts in self.nested_by_group.items()
        ]
        for title, counts in grouped:
            out.append(f"{title}, by the group left out")
            for group, (inside, total) in sorted(counts.items(), key=lambda item: item[1][0] - item[1][1]):
                out.append(f"  {group[:60]:<62}{inside:>4} of {total}")
        out.append("held-out throughput by GPU: median (p10-p90), inside the band of its ground")
        for label, stats in self.by_gpu.items():
            out.append(
                f"  {label:<18}{stats['median']:.2f} ({stats['p10']:.2f}-{stats['p90']:.2f}),"
                f" {stats['in_band']:.0%} of {stats['runs']}"
            )
        out.append(f"rows beating a ceiling by more than {CEILING_TOLERANCE:.0%}: {len(self.beating_ceiling)}")
        return "\n".join(out) + "\n"


#: How far a measured figure may pass its ceiling before the row counts as beating it (the goal's 2%).
CEILING_TOLERANCE = 0.02


def default_jobs() -> int:
    """The processors this process may run on (the simulations are independent)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def write_atomically(path: Path, text: str) -> None:
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="refit and compare with the files; write nothing")
    parser.add_argument(
        "--jobs", type=int, default=None, help="processes to simulate in (default: the processors available)"
    )
    args = parser.parse_args(argv)
    if args.jobs is not None and args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    try:
        texts, validation = build_and_validate(args.jobs)
    except (SpecError, ArithmeticError, ValueError) as error:
        kept = ", ".join(str(path.relative_to(ROOT)) for path in (OUTPUT, PREDICTIONS))
        sys.stderr.write(f"fit_expected: error: {error} ({kept} left unchanged)\n")
        return 1
    sys.stdout.write(validation.report())
    changed = [path for path, text in texts.items() if not path.exists() or path.read_text(encoding="utf-8") != text]
    if args.check:
        if changed:
            names = ", ".join(str(path.relative_to(ROOT)) for path in changed)
            sys.stderr.write(f"fit_expected: {names} differ from a refit; run scripts/fit_expected.py\n")
            return 1
        sys.stdout.write("calibration and predictions: current\n")
        return 0
    for path in changed:  # every text is built before any is written
        write_atomically(path, texts[path])
    sys.stdout.write(f"{len(changed)} written, {len(texts) - len(changed)} unchanged\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
