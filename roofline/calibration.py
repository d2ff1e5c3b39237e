"""Expected-mode costs: what a serving engine reaches of the hardware, fitted to published runs.

The ceiling (``performance.CEILING``) is an upper bound; ``--costs expected`` is a
prediction. Its parameters live in ``data/calibration.toml``, written by
``scripts/fit_expected.py`` from published serving measurements and never edited by hand:

- ``bandwidth_efficiency``: the share of the HBM bandwidth a pass reaches;
- ``link_efficiency``: the share of the links' bandwidth an all-reduce reaches over NVLink, and
  ``link_efficiency_by_kind``: the share over another kind of link (``link_kind``: PCIe peer
  to peer, Infinity Fabric) where multi-GPU fit rows ran over it; any other kind (NVLink 3
  among them: no multi-GPU A100 row is in the fit) takes the share its spec measured
  (``measured_link_share``: a large all-reduce's bus bandwidth over the nameplate) where it
  gives one, else the NVLink share, and is flagged either way (``for_ground``);
- ``compute_efficiency.<gpu>.<math>``: the share of the dense peak a pass reaches, per chip
  and math precision (``default_compute_efficiency`` where the fit saw no run). A chip whose
  spec names another as ``same_compute_as`` (the same die, the same tensor cores) shares that
  chip's shares: the fit ties them, and the file lists them under both ids;
- ``layer_overhead_s``: fixed seconds per layer of every pass (kernel launches,
  synchronization);
- ``[harness.<name>]`` (``roofline.harness``): what the benchmark adds round the GPU, fitted
  apart from the hardware on the rows measured through that harness:
  ``token_overhead_s``, host seconds per token sampled (sampling, stop checks, the scheduler's
  bookkeeping), which grow with the batch; ``request_overhead_s``, host seconds per request
  between its being sent and its reaching the scheduler (the network or HTTP request,
  tokenizing, streaming the first token back): the serving simulator delays each request by
  it, so it is in every TTFT and latency, not in the GPU's time. An offline loop has no such
  path (0, not fitted); nor has a static session (``session``), whose table adds
  ``context_serial_share`` κ, the share of the shorter of a context pass's reads and math that
  does not overlap the longer (``performance.context_serial_s``; every other harness's is 0).
  A harness with no fit rows borrows a fitted one's costs (``stand_in``) and says so;
- ``allreduce_latency_s`` and ``allreduce_hop_s``: the latency of one tensor-parallel
  all-reduce over G GPUs, ``allreduce_latency_s + 2 (G-1) * allreduce_hop_s``, a fixed
  start plus one hop per step of a ring (NCCL's own latency model has this shape), so
  that more GPUs wait longer for each exchange, as every measurement shows;
- ``dequant_overhead`` δ and ``dequant_switch_tokens`` T_s: what a weight-only format
  (W4A16 int4 AWQ/GPTQ, int8 weight-only, fp8 without fp8 math) pays to widen its weights
  (``performance.CostModel``): below T_s tokens in a pass the fused kernel's linear math
  takes ``(1 + δ)`` times as long (charged per quantized weight per 16-token tile,
  ``performance.tiled_dequant_flops``); from T_s on the weights are widened first,
  ``weights * (b_w + 2) / bandwidth``, then multiplied at 16 bits. δ is fitted, after the
  rest and with the rest held, on vLLM PR #2566's runs of its fused AWQ kernel at every
  size (``data/dequant-measurements.csv``; the same PR's runs that switch are held out);
  T_s is vLLM's AWQ switch, 256 tokens, read in its source, not fitted.

δ and T_s describe one kernel on one chip: the legacy ``awq_gemm`` on an A100 80GB, which vLLM
runs only when a user forces ``--quantization awq``; from vLLM 0.5 an AWQ checkpoint on SM 7.5 or
newer runs ``awq_marlin`` and GPTQ W4A16 on Hopper runs Machete
(``docs/chapters/quantization/kernels.toml``). ``cost_model`` therefore charges them only on the
GPUs in ``DEQUANT_MEASURED_ON`` and charges no dequantization elsewhere, a stated gap rather than
a transplanted constant.

A pass then takes ``max(bytes / (e_bw * bandwidth), FLOPs / (e_c * peak)) + layers *
overhead + tokens sampled * token overhead + 2L * (latency(G) + 2 (G-1)/G * message /
(e_link * link))``, with each quantized weight's widening, δ times one 16-token tile's multiply-adds of it, added
once per tile in a fused weight-only pass. The file also holds the band:
for each kind of figure, an 80% band ``[low, high]`` of measured ÷ expected over the fit's n rows,
each predicted by the fit without its benchmark run (cross-validated: a benchmark's TTFT, ITL and
throughput rows are left out together): the ``floor(0.1 (n + 1))``-th and ``ceil(0.9 (n + 1))``-th
smallest, the ranks split-conformal prediction takes for 80% (about one rank outside p10 and p90;
``scripts/fit_expected.py``'s ``conformal_bounds``), so an expected value ``x`` comes with
``[low * x, high * x]``. In-sample residuals would give a band too narrow for runs the fit never
saw. Two wider bands are kept beside it: the same ranks with each engine release left out of the fit
(``band_leave_one_release_out``) and with each GPU left out (``band_leave_one_gpu_out``). A
prediction off the fit's ground (``for_ground``: a GPU or math with no fitted compute share, an
engine or harness with no fit rows) gets the wider of the bands that apply, and says why.

A file that is missing, malformed, or fitted for another version of the package is
refused with one line that names the fix.
"""

from __future__ import annotations

import functools
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from .errors import SpecError, did_you_mean
from .harness import (
    DEFAULT_ENGINE,
    DEFAULT_HARNESS,
    ENGINES,
    HARNESSES,
    SERIAL_CONTEXT_HARNESSES,
    check_engine,
    check_harness,
)
from .performance import CEILING, CostModel, Hardware, Workload, resolved
from .precisions import AUTO
from .specs import GpuSpec
from .version import VERSION

CALIBRATION_FILE = "roofline/data/calibration.toml"
#: How to make a good file again: every refusal names this.
REFIT = "refit it with `python scripts/fit_expected.py`, or use --costs ceiling"
#: The cost models a caller may ask for.
COSTS = ("ceiling", "expected")
#: The figures a band is given for, as JSON names them.
BAND_METRICS = ("throughput_tokens_per_s", "ttft_mean_s", "itl_mean_s", "tpot_mean_s")

#: The GPUs δ and the switch were measured on: vLLM PR #2566's runs of the legacy ``awq_gemm``
#: kernel, one A100 80GB (``data/dequant-measurements.csv``).
DEQUANT_MEASURED_ON = frozenset({"a100-80gb"})


#: The words of a ``scale_up`` that name a kind of link, in the order they are looked for.
LINK_WORDS = (
    # PCIe first: a PCIe card's spec says "(no NVLink)".
    ("pcie", "pcie"),
    ("infinity fabric", "infinity-fabric"),
    # NVLink 3 (the A100's, through NVSwitch or a two-card bridge) before NVLink: a ring all-reduce
    # reaches a smaller share of its nameplate than on NVLink 4 (a bus bandwidth of about 200 of
    # 300 GB/s each way on eight A100s, nccl-tests#149, against about 370 of 450 on H100s,
    # nccl-tests#212; the A100's source in gpus.toml), so it does not borrow the share fitted on
    # NVLink 4 unflagged.
    ("nvlink 3", "nvlink3"),
    ("nvlink", "nvlink"),
    ("ici", "ici"),
)


def link_kind(gpu: GpuSpec | None) -> str | None:
    """The kind of the links between ``gpu``s, read off its interconnect's ``scale_up``
    (``LINK_WORDS``): "nvlink" (NVLink 4 and 5, the share ``link_efficiency`` is fitted on),
    "nvlink3", "pcie", "infinity-fabric", "ici" or "other"; None for a GPU with no interconnect
    block."""
    if gpu is None or gpu.interconnect is None:
        return None
    text = gpu.interconnect.scale_up.lower()
    for word, kind in LINK_WORDS:
        if word in text:
            return kind
    return "other"


def link_share(gpu: GpuSpec | None, nvlink: float, fitted: Mapping[str, float]) -> float:
    """The share of ``gpu``'s link bandwidth an all-reduce reaches in expected mode: its kind of
    link's fitted share (``fitted``: kind -> share, NVLink 4 and 5's being ``nvlink``), else the
    share its spec measured (``measured_link_share``), else ``nvlink``. The fit prices its runs
    with this too (``scripts/fit_expected.py``), so a fitted file and its predictions agree."""
    kind = link_kind(gpu)
    if kind is None or kind == "nvlink":
        return nvlink
    if kind in fitted:
        return fitted[kind]
    measured = measured_link_share(gpu)
    return nvlink if measured is None else measured


def measured_link_share(gpu: GpuSpec | None) -> float | None:
    """The share of its links' nameplate a large all-reduce was measured to reach on ``gpu``'s
    fabric: ``interconnect.allreduce_bus_bytes_per_s / interconnect.link_bytes_per_s``, at most 1
    (a share the fit would bound there); None where its spec gives no such measurement.

    Expected mode uses it for a kind of link no multi-GPU fit row ran over: a measurement of the
    fabric itself transfers better than a share fitted on another fabric (nccl-tests: a ring
    reaches 0.67 of NVLink 3's nameplate on eight A100s, 0.82 of NVLink 4's on H100s)."""
    links = None if gpu is None else gpu.interconnect
    if links is None or links.allreduce_bus_bytes_per_s is None:
        return None
    return min(1.0, links.allreduce_bus_bytes_per_s / links.link_bytes_per_s)


#: The cross-validated bands kept beside ``[band]``, for predictions off the fit's ground.
OUT_OF_GROUND_BANDS = ("band_leave_one_release_out", "band_leave_one_gpu_out")


@dataclass(frozen=True)
class HarnessCosts:
    """One harness's host costs (``roofline.harness``) and whether rows measured through it fixed them."""

    request_overhead_s: float
    token_overhead_s: float
    #: Fit rows measured through this harness (0: not fitted).
    fit_rows: int
    #: The fitted harness whose costs an unfitted one borrows, or None when fitted.
    stand_in: str | None = None
    #: κ of a context pass (``performance.CostModel.context_serial_share``); 0 but for a harness
    #: of ``SERIAL_CONTEXT_HARNESSES``.
    context_serial_share: float = 0.0

    @property
    def fitted(self) -> bool:
        """Whether fit rows measured through this harness fixed its costs (no stand-in)."""
        return self.stand_in is None


@dataclass(frozen=True)
class Calibration:
    """The fitted expected-mode parameters, their band, and where they came from."""

    package_version: str
    bandwidth_efficiency: float
    #: The share of NVLink's bandwidth an all-reduce reaches.
    link_efficiency: float
    #: Link kind (``link_kind``) other than NVLink -> its fitted share.
    link_efficiency_by_kind: Mapping[str, float]
    #: GPU id -> math precision -> share of that peak reached.
    compute_efficiency: Mapping[str, Mapping[str, float]]
    default_compute_efficiency: float
    layer_overhead_s: float
    #: Harness name -> its host costs (``HarnessCosts``).
    harnesses: Mapping[str, HarnessCosts]
    allreduce_latency_s: float
    allreduce_hop_s: float
    #: δ: a fused weight-only GEMM's extra math per weight multiplied, a share of its multiply-add.
    dequant_overhead: float
    #: Tokens in a pass from which weight-only weights are widened first (None: never).
    dequant_switch_tokens: int | None
    #: Metric (``BAND_METRICS``) -> (low, high), the 80% band of measured ÷ expected over the fit's rows, each
    #: run predicted with its benchmark left out of the fit.
    band: Mapping[str, tuple[float, float]]
    #: The ``[fit]`` table: script, rows, method, and the residuals on fit and held-out rows.
    provenance: Mapping[str, Any]
    #: Engines the fit set has rows for (``[engines] fitted``).
    fitted_engines: tuple[str, ...] = (DEFAULT_ENGINE,)
    #: ``OUT_OF_GROUND_BANDS`` name -> metric -> (low, high).
    out_of_ground_bands: Mapping[str, Mapping[str, tuple[float, float]]] = field(default_factory=dict)
    #: The harness and engine the costs and band are for (``for_ground``).
    harness: str = DEFAULT_HARNESS
    engine: str = DEFAULT_ENGINE
    #: Why the band is wider than ``[band]`` (``for_ground``); empty on the fit's ground.
    unfitted: tuple[str, ...] = ()

    @property
    def host_costs(self) -> HarnessCosts:
        """The chosen harness's host costs."""
        return self.harnesses[self.harness]

    @property
    def token_overhead_s(self) -> float:
        """Host seconds per token sampled, the chosen harness's."""
        return self.host_costs.token_overhead_s

    @property
    def request_overhead_s(self) -> float:
        """Host seconds per request on its way to the scheduler, the chosen harness's."""
        return self.host_costs.request_overhead_s

    def for_ground(
        self,
        gpu: GpuSpec | str,
        engine: str = DEFAULT_ENGINE,
        harness: str = DEFAULT_HARNESS,
        math: str | None = None,
        gpus: int = 1,
    ) -> Calibration:
        """This calibration for a prediction on ``gpu`` (at ``math``, when given) run by ``engine``
        and measured through ``harness``: the harness's host costs, and the band widened where
        the fit has no rows for it, with one sentence for each reason (``unfitted``):

        - a GPU (or its math) without a fitted compute share takes ``default_compute_efficiency``
          and the leave-one-GPU-out band; so does a group of ``gpus`` joined by a kind of link
          without a fitted share (it takes NVLink's);
        - an engine or a harness without fit rows takes the common fit (a harness, its stand-in's
          host costs) and the leave-one-release-out band.

        Several reasons take the widest: the lowest low end and the highest high end of the bands that
        apply. Unknown names raise one SpecError naming the choices."""
        check_engine(engine)
        check_harness(harness)
        gpu_id = gpu if isinstance(gpu, str) else gpu.id
        shares = self.compute_shares(gpu)
        reasons: list[tuple[str, str]] = []
        if not shares or (math is not None and math not in shares):
            what = "compute share" if not shares else f"{math} compute share"
            reasons.append(
                (
                    "band_leave_one_gpu_out",
                    f"GPU {gpu_id}: {what} unfitted (no fit rows), the default"
                    f" {self.default_compute_efficiency:.0%} of the peak: band widened to the leave-one-GPU-out band",
                )
            )
        spec = _spec(gpu)
        kind = self.unfitted_link_kind(spec)
        if gpus > 1 and kind is not None:
            measured = measured_link_share(spec)
            share = (
                f"the share fitted on NVLink 4 and 5, {self.link_efficiency:.0%} of the bandwidth"
                if measured is None
                else f"the share a large all-reduce was measured to reach on them, {measured:.0%} of the bandwidth"
            )
            reasons.append(
                (
                    "band_leave_one_gpu_out",
                    f"GPU {gpu_id}: {kind} links unfitted (no multi-GPU fit rows over them), {share}: band widened"
                    " to the leave-one-GPU-out band",
                )
            )
        if engine not in self.fitted_engines:
            fitted = ", ".join(ENGINES[name] for name in self.fitted_engines)
            reasons.append(
                (
                    "band_leave_one_release_out",
                    f"engine {ENGINES[engine]}: unfitted (no fit rows), the common fit ({fitted}) is used:"
                    " band widened to the leave-one-release-out band",
                )
            )
        costs = self.harnesses[harness]
        if not costs.fitted:
            reasons.append(
                (
                    "band_leave_one_release_out",
                    f"harness {harness}: unfitted (no fit rows), the {costs.stand_in} harness's host costs are"
                    " used: band widened to the leave-one-release-out band",
                )
            )
        band = dict(self.band)
        for name, _ in reasons:
            wider = self.out_of_ground_bands.get(name, {})
            for metric, (low, high) in wider.items():
                band[metric] = (min(band[metric][0], low), max(band[metric][1], high))
        return replace(
            self,
            harness=harness,
            engine=engine,
            band=MappingProxyType(band),
            unfitted=tuple(sentence for _, sentence in reasons),
        )

    def ground_dict(self) -> dict[str, Any]:
        """The ``fit`` object of a JSON answer: the harness and engine, their host costs, and
        every reason the band is widened (``for_ground``)."""
        costs = self.host_costs
        return {
            "harness": self.harness,
            "harness_includes": HARNESSES[self.harness],
            "engine": self.engine,
            "request_overhead_s": costs.request_overhead_s,
            "token_overhead_s": costs.token_overhead_s,
            "context_serial_share": costs.context_serial_share,
            "harness_fitted": costs.fitted,
            "engine_fitted": self.engine in self.fitted_engines,
            "unfitted": list(self.unfitted),
            "band_widened": bool(self.unfitted),
        }

    def compute_shares(self, gpu: GpuSpec | str) -> Mapping[str, float]:
        """Math precision -> fitted share of the peak on ``gpu`` (a spec, or a built-in chip's id):
        its own, over those of the chip it names as ``same_compute_as``, so that a reader's own
        spec of a known die gets that die's shares."""
        if isinstance(gpu, str):
            return self.compute_efficiency.get(gpu, {})
        shared = self.compute_efficiency.get(gpu.compute_efficiency_id, {})
        return {**shared, **self.compute_efficiency.get(gpu.id, {})}

    def dequant_measured_on(self, gpu: GpuSpec | str) -> bool:
        """Whether δ and the switch describe ``gpu``: only the chip vLLM PR #2566 ran its legacy
        ``awq_gemm`` kernel on (``DEQUANT_MEASURED_ON``), or a spec naming that die as
        ``same_compute_as``."""
        if isinstance(gpu, str):
            return gpu in DEQUANT_MEASURED_ON
        return gpu.id in DEQUANT_MEASURED_ON or gpu.compute_efficiency_id in DEQUANT_MEASURED_ON

    def unfitted_link_kind(self, gpu: GpuSpec | None) -> str | None:
        """``gpu``'s kind of link (``link_kind``) where no multi-GPU fit row crossed one, so it has no
        fitted share (its figures take the measured one or NVLink's, flagged); else None."""
        kind = link_kind(gpu)
        return None if kind in (None, "nvlink", *self.link_efficiency_by_kind) else kind

    def link_share(self, gpu: GpuSpec | str) -> float:
        """The share of ``gpu``'s link bandwidth an all-reduce reaches (``link_share``)."""
        return link_share(_spec(gpu), self.link_efficiency, self.link_efficiency_by_kind)

    def cost_model(self, gpu: GpuSpec | str) -> CostModel:
        """The expected costs on ``gpu`` (a spec, or a built-in chip's id): its fitted compute
        shares (``compute_shares``), the shared rest. δ and the switch only on the chip they were
        measured on (``dequant_measured_on``): elsewhere vLLM runs W4A16 through Marlin or Machete,
        whose cost nobody here has measured, so the expected pass charges no dequantization.
        A caller that shows a band takes costs and band together from ``expected_costs`` instead:
        this calibration's band is the fitted GPUs' one unless ``for_ground`` widened it."""
        measured = self.dequant_measured_on(gpu)
        return CostModel(
            name="expected",
            bandwidth_efficiency=self.bandwidth_efficiency,
            link_efficiency=self.link_share(gpu),
            compute_efficiency=self.compute_shares(gpu),
            default_compute_efficiency=self.default_compute_efficiency,
            layer_overhead_s=self.layer_overhead_s,
            token_overhead_s=self.token_overhead_s,
            request_overhead_s=self.request_overhead_s,
            context_serial_share=self.host_costs.context_serial_share,
            allreduce_latency_s=self.allreduce_latency_s,
            allreduce_hop_s=self.allreduce_hop_s,
            dequant_overhead=self.dequant_overhead if measured else 0.0,
            dequant_switch_tokens=self.dequant_switch_tokens if measured else None,
        )

    def band_for(self, metric: str, expected: float, ceiling: float | None = None) -> tuple[float, float]:
        """``[low * expected, high * expected]``: the 80% band of the fit's measurements when
        each was predicted without it, held on the near side of ``ceiling`` (``within_ceiling``)."""
        low, high = self.band[metric]
        return within_ceiling(metric, (low * expected, high * expected), ceiling)

    def decode_rate_band(self, rate: float, ceiling: float | None = None) -> tuple[float, float]:
        """The band of a decode rate, tokens/s that are one over the time between tokens: a
        time in ``[low t, high t]`` is a rate in ``[rate / high, rate / low]``, no faster than
        the ceiling's rate ``ceiling`` where one is given."""
        low, high = self.band["itl_mean_s"]
        return within_ceiling("throughput_tokens_per_s", (rate / high, rate / low), ceiling)

    def bands(
        self, figures: Mapping[str, float | None], ceilings: Mapping[str, float | None] | None = None
    ) -> dict[str, list[float] | None]:
        """``[low, high]`` (``band_for``) for each metric of ``BAND_METRICS``, from ``figures``
        by their JSON names, each held within its figure in ``ceilings`` (the same names) where
        there is one; None where a figure is missing or None (no prompt, nothing completed)."""
        bounds = ceilings or {}
        return {
            metric: None
            if figures.get(metric) is None
            else list(self.band_for(metric, figures[metric], bounds.get(metric)))
            for metric in BAND_METRICS
        }


def within_ceiling(metric: str, band: tuple[float, float], ceiling: float | None) -> tuple[float, float]:
    """``band`` with neither end past ``ceiling``: a throughput no higher than it, a time no shorter.
    The ceiling is an upper bound no run can beat, so a band that reached past it would promise
    what cannot happen; the fit's band is a share of the expected figure, and where the expected
    figure sits near the ceiling (or a widened band is wide) its far end would cross it. None:
    nothing to hold it to."""
    if ceiling is None:
        return band
    low, high = band
    if metric == "throughput_tokens_per_s":
        return (min(low, ceiling), min(high, ceiling))
    return (max(low, ceiling), max(high, ceiling))


def _spec(gpu: GpuSpec | str) -> GpuSpec | None:
    """``gpu`` as a spec: a built-in chip's by its id; None for an id no built-in chip has."""
    if not isinstance(gpu, str):
        return gpu
    from .loader import load_specs  # here, not at the top: the loader imports this module's users

    try:
        return load_specs().gpu(gpu)
    except SpecError:
        return None


def _fail(message: str, label: str, field: str | None = None) -> SpecError:
    return SpecError(message, file=label, field=field, hint=REFIT)


def _share(value: Any, label: str, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise _fail(f"must be above 0 and at most 1, got {value!r}", label, field)
    return float(value)


def _seconds(value: Any, label: str, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise _fail(f"must be between 0 and 1 s, got {value!r}", label, field)
    return float(value)


def _table(document: Mapping[str, Any], key: str, label: str) -> Mapping[str, Any]:
    value = document.get(key)
    if not isinstance(value, dict):
        raise _fail("is missing" if value is None else f"must be a table, got {value!r}", label, key)
    return value


def parse_calibration(text: str, label: str = CALIBRATION_FILE) -> Calibration:
    """A calibration file's TOML ``text`` as a Calibration; the first problem raises one
    SpecError naming the file, the field and the way to a good file."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise _fail(f"TOML syntax error: {error}", label) from None
    tables = ("fit", "costs", "harness", "engines", "band", *OUT_OF_GROUND_BANDS)
    for key in document:
        if key not in tables:
            hint = did_you_mean(key, tables) or REFIT
            raise SpecError(f"unknown table [{key}]", file=label, hint=hint)
    fit = _table(document, "fit", label)
    version = fit.get("package_version")
    if not isinstance(version, str):
        raise _fail(f"must be the package version as text, got {version!r}", label, "fit.package_version")
    if version != VERSION:
        raise _fail(f"was fitted for roofline {version}, and this is roofline {VERSION}", label, "fit.package_version")
    costs = _table(document, "costs", label)
    known = ("bandwidth_efficiency", "link_efficiency", "link_efficiency_by_kind", "compute_efficiency")
    known += ("default_compute_efficiency",)
    known += ("layer_overhead_s", "allreduce_latency_s", "allreduce_hop_s")
    known += ("dequant_overhead", "dequant_switch_tokens")
    for key in costs:
        if key not in known:
            raise _fail("unknown key", label, f"costs.{key}")
    for key in known:
        if key not in costs:
            raise _fail("is missing", label, f"costs.{key}")
    per_gpu = costs["compute_efficiency"]
    if not isinstance(per_gpu, dict):
        raise _fail(f"must be a table of GPUs, got {per_gpu!r}", label, "costs.compute_efficiency")
    compute: dict[str, Mapping[str, float]] = {}
    for gpu, shares in per_gpu.items():
        if not isinstance(shares, dict):
            raise _fail(f"must be a table of math precisions, got {shares!r}", label, f"costs.compute_efficiency.{gpu}")
        compute[gpu] = MappingProxyType(
            {p: _share(v, label, f"costs.compute_efficiency.{gpu}.{p}") for p, v in shares.items()}
        )
    by_kind = costs["link_efficiency_by_kind"]
    if not isinstance(by_kind, dict):
        raise _fail(f"must be a table of link kinds, got {by_kind!r}", label, "costs.link_efficiency_by_kind")
    links = {kind: _share(v, label, f"costs.link_efficiency_by_kind.{kind}") for kind, v in by_kind.items()}
    delta = costs["dequant_overhead"]
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 <= delta <= 100:
        raise _fail(f"must be a number from 0 to 100, got {delta!r}", label, "costs.dequant_overhead")
    switch = costs["dequant_switch_tokens"]
    if isinstance(switch, bool) or not isinstance(switch, int) or switch < 0:
        raise _fail(
            f"must be a whole number of tokens (0: never), got {switch!r}", label, "costs.dequant_switch_tokens"
        )
    band = _band(document, "band", label)
    wider = {name: MappingProxyType(_band(document, name, label)) for name in OUT_OF_GROUND_BANDS}
    harnesses = _harnesses(_table(document, "harness", label), label)
    engines = _table(document, "engines", label).get("fitted")
    if not isinstance(engines, list) or not all(isinstance(e, str) and e in ENGINES for e in engines):
        raise _fail(f"must list engines among {', '.join(ENGINES)}, got {engines!r}", label, "engines.fitted")
    return Calibration(
        package_version=version,
        bandwidth_efficiency=_share(costs["bandwidth_efficiency"], label, "costs.bandwidth_efficiency"),
        link_efficiency=_share(costs["link_efficiency"], label, "costs.link_efficiency"),
        link_efficiency_by_kind=MappingProxyType(links),
        compute_efficiency=MappingProxyType(compute),
        default_compute_efficiency=_share(
            costs["default_compute_efficiency"], label, "costs.default_compute_efficiency"
        ),
        layer_overhead_s=_seconds(costs["layer_overhead_s"], label, "costs.layer_overhead_s"),
        harnesses=MappingProxyType(harnesses),
        allreduce_latency_s=_seconds(costs["allreduce_latency_s"], label, "costs.allreduce_latency_s"),
        allreduce_hop_s=_seconds(costs["allreduce_hop_s"], label, "costs.allreduce_hop_s"),
        dequant_overhead=float(delta),
        dequant_switch_tokens=switch or None,
        band=MappingProxyType(band),
        provenance=MappingProxyType(dict(fit)),
        fitted_engines=tuple(engines),
        out_of_ground_bands=MappingProxyType(wider),
    )


def _band(document: Mapping[str, Any], name: str, label: str) -> dict[str, tuple[float, float]]:
    """The table ``name`` of ``[low, high]`` pairs, one for each of ``BAND_METRICS``."""
    table = _table(document, name, label)
    band: dict[str, tuple[float, float]] = {}
    for metric in BAND_METRICS:
        pair = table.get(metric)
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in pair)
            or not 0 < pair[0] <= pair[1]
        ):
            raise _fail(f"must be [low, high] with 0 < low <= high, got {pair!r}", label, f"{name}.{metric}")
        band[metric] = (float(pair[0]), float(pair[1]))
    return band


def _harnesses(table: Mapping[str, Any], label: str) -> dict[str, HarnessCosts]:
    """``[harness.<name>]`` for every name of ``roofline.harness.HARNESSES``: its two host costs,
    its fit rows, for one without rows the fitted harness it borrows from, and for one of
    ``SERIAL_CONTEXT_HARNESSES`` its ``context_serial_share`` (required there, absent elsewhere)."""
    for name in table:
        if name not in HARNESSES:
            raise _fail(f"unknown harness (choose from {', '.join(HARNESSES)})", label, f"harness.{name}")
    out = {}
    for name in HARNESSES:
        entry = table.get(name)
        field = f"harness.{name}"
        if not isinstance(entry, dict):
            raise _fail("is missing" if entry is None else f"must be a table, got {entry!r}", label, field)
        rows = entry.get("fit_rows")
        if isinstance(rows, bool) or not isinstance(rows, int) or rows < 0:
            raise _fail(f"must be a whole number of rows, got {rows!r}", label, f"{field}.fit_rows")
        stand_in = entry.get("stand_in")
        if (rows == 0) != (stand_in is not None) or (stand_in is not None and stand_in not in HARNESSES):
            raise _fail(
                f"a harness without fit rows names a fitted harness as stand_in, and only it; got {stand_in!r}",
                label,
                f"{field}.stand_in",
            )
        serial = entry.get("context_serial_share")
        if name not in SERIAL_CONTEXT_HARNESSES and serial is not None:
            message = f"only {', '.join(sorted(SERIAL_CONTEXT_HARNESSES))} has a context_serial_share; delete it"
            raise _fail(message, label, f"{field}.context_serial_share")
        if name in SERIAL_CONTEXT_HARNESSES and (
            isinstance(serial, bool) or not isinstance(serial, (int, float)) or not 0 <= serial <= 1
        ):
            raise _fail(f"must be a number from 0 to 1, got {serial!r}", label, f"{field}.context_serial_share")
        out[name] = HarnessCosts(
            request_overhead_s=_seconds(entry.get("request_overhead_s"), label, f"{field}.request_overhead_s"),
            token_overhead_s=_seconds(entry.get("token_overhead_s"), label, f"{field}.token_overhead_s"),
            fit_rows=rows,
            stand_in=stand_in,
            context_serial_share=float(serial or 0.0),
        )
    return out


def load_calibration(path: str | Path | None = None) -> Calibration:
    """The built-in calibration (or the file at ``path``), validated."""
    if path is None:
        return _builtin()
    label = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _fail("no such file", label) from None
    except (OSError, UnicodeDecodeError) as error:
        raise _fail(f"cannot read: {getattr(error, 'strerror', None) or error}", label) from None
    return parse_calibration(text, label)


def _builtin() -> Calibration:
    location = resources.files("roofline") / "data" / "calibration.toml"
    try:
        text = location.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _fail("no such file", CALIBRATION_FILE) from None
    except (OSError, UnicodeDecodeError) as error:
        raise _fail(f"cannot read: {getattr(error, 'strerror', None) or error}", CALIBRATION_FILE) from None
    return _parsed(text)


@functools.lru_cache(maxsize=4)
def _parsed(text: str) -> Calibration:
    # Parsed once per distinct text: the calculator asks for it on every update.
    return parse_calibration(text)


def cost_model(costs: str, gpu: GpuSpec | str, calibration: Calibration | None = None) -> CostModel:
    """The cost model named ``costs`` ("ceiling" or "expected") for ``gpu`` (a spec, or a
    built-in chip's id: ``Calibration.cost_model``, at the calibration's harness)."""
    if costs == "ceiling":
        return CEILING
    if costs != "expected":
        hint = did_you_mean(str(costs), COSTS) or "choose ceiling or expected"
        raise SpecError(f"unknown cost model {costs!r}", field="costs", hint=hint)
    return (calibration or load_calibration()).cost_model(gpu)


#: What every expected figure's band carries where the fit has no rows for its ground.
UNFITTED_FLAG = "unfitted: band widened"


@dataclass(frozen=True)
class GroundedCosts:
    """The expected costs of one prediction with the band a caller must show beside them.

    ``calibration`` is ``Calibration.for_ground``'s: its band is already the widest that applies
    (leave-one-GPU-out or leave-one-release-out where the fit has no rows), so a caller that takes
    its band from here cannot show the narrow one on an unfitted GPU, math, link, engine or harness."""

    costs: CostModel
    calibration: Calibration

    @property
    def widened(self) -> bool:
        """Whether the fit has no rows for some part of this ground (the band is wider)."""
        return bool(self.calibration.unfitted)

    @property
    def flag(self) -> str:
        """``"unfitted: band widened (reason; reason)"`` where ``widened``, else ``""``: the text a
        page or report puts beside the band."""
        if not self.widened:
            return ""
        return f"{UNFITTED_FLAG} ({'; '.join(self.calibration.unfitted)})"

    def bands(
        self, figures: Mapping[str, float | None], ceilings: Mapping[str, float | None] | None = None
    ) -> dict[str, list[float] | None]:
        """``[low x, high x]`` for each banded figure, from the (possibly widened) band, held
        within ``ceilings`` (``Calibration.bands``)."""
        return self.calibration.bands(figures, ceilings)

    def decode_rate_band(self, rate: float, ceiling: float | None = None) -> tuple[float, float]:
        """A decode rate's band, ``[rate / high, rate / low]`` of the (possibly widened) ITL band,
        no faster than ``ceiling``."""
        return self.calibration.decode_rate_band(rate, ceiling)


def expected_costs(
    hardware: Hardware,
    workload: Workload | None = None,
    calibration: Calibration | None = None,
    *,
    engine: str | None = None,
    harness: str | None = None,
    gpus: int | None = None,
) -> GroundedCosts:
    """The expected costs for ``hardware`` (its GPU, its math resolved against ``workload``'s
    weights when given, its GPU count for the link) with the band to show: ``Calibration.for_ground``
    then ``Calibration.cost_model``, in one call that every expected figure goes through.
    ``engine`` and ``harness`` default to the calibration's own (the built-in one when None); ``gpus``
    to ``hardware.count`` (a pipeline's stages are counted by the caller)."""
    calibration = calibration or load_calibration()
    ground = resolved(hardware, workload) if workload is not None else hardware
    math = None if ground.compute_precision == AUTO else ground.compute_precision
    grounded = calibration.for_ground(
        hardware.gpu, engine or calibration.engine, harness or calibration.harness, math, gpus or hardware.count
    )
    return GroundedCosts(grounded.cost_model(hardware.gpu), grounded)
