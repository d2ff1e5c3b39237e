"""Frozen, validated records for accelerators and model architectures.

Each field carries its kind in ``metadata`` (a count, a physical quantity in SI
units, text, a flag); ``__post_init__`` checks every field against its kind, so
a record that exists is a valid record, whoever built it.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from .errors import SpecError, did_you_mean, entry_label, shown, unknown_name
from .precisions import PRECISIONS, SIXTEEN_BIT

#: The kinds of attention layer a ``layer_pattern`` may name: a local layer sees
#: only the last ``sliding_window`` tokens, a global layer sees them all.
LAYER_KINDS = ("local", "global")


def _count(minimum: int = 1, maximum: int = 1_000_000, **default: int) -> Any:
    return field(metadata={"kind": "count", "minimum": minimum, "maximum": maximum}, **default)


def _quantity(minimum: float, maximum: float) -> Any:
    return field(metadata={"kind": "quantity", "minimum": minimum, "maximum": maximum})


def _text(maximum: int = 200) -> Any:
    return field(metadata={"kind": "text", "maximum": maximum})


def _flag(**default: bool) -> Any:
    return field(metadata={"kind": "flag"}, **default)


# Physically sensible ranges. They are wide enough for any real chip or model
# and narrow enough that no formula downstream overflows a float or divides by
# a subnormal: every estimate of specs inside them is a finite number. The data
# files' headers state the same ranges (a test keeps the two in step).
#: Memory of one chip: 100 MB (an SRAM inference chip) to 10 TB.
MEMORY_BYTES = (1e8, 1e13)
#: Memory bandwidth of one chip: 1 GB/s to 1 PB/s.
BANDWIDTH_BYTES_PER_S = (1e9, 1e15)
#: Dense peak math rate of one chip at one precision: 1 GFLOP/s to 1 EFLOP/s.
FLOPS_PER_S = (1e9, 1e18)
#: One direction of a chip's link to host memory: 100 MB/s to 10 TB/s.
HOST_LINK_BYTES_PER_S = (1e8, 1e13)
#: One direction of a chip's link to its peers (NVLink, Infinity Fabric, a NIC): 100 MB/s to 100 TB/s.
PEER_LINK_BYTES_PER_S = (1e8, 1e14)
#: The most a measured all-reduce bus bandwidth may be, in multiples of the links' one direction: a
#: reduction in the switch (NVLink SHARP) lets it pass the links (about 480 of 450 GB/s on H100s,
#: nccl-tests#212), and twice is past any published figure; more is a unit slip.
MAX_BUS_OVER_LINK = 2.0
#: Fixed latency of one small all-reduce: 100 ns to 1 s.
ALLREDUCE_LATENCY_S = (1e-7, 1.0)
#: GPU counts an all-reduce latency may be given at: 2 (the fewest that exchange) to 100,000.
ALLREDUCE_GPUS = (2, 100_000)
#: The driver reports at most the memory installed, which HBM sizes in binary units: up to
#: 2**30 / 1e9 = 1.074 times a nameplate given in decimal gigabytes. 1.1 leaves room for rounding.
ADDRESSABLE_OVER_NAMEPLATE = 1.1
#: Longest context a model may declare, in tokens (the command line's --context takes as many).
MAX_CONTEXT_TOKENS = 100_000_000
#: Longest name and source text, in characters.
NAME_LENGTH, SOURCE_LENGTH = 200, 2000


def _bad_characters(text: str) -> str | None:
    """The first control, format or line-separator character in ``text``, escaped; None if clean."""
    for char in text:
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            return char.encode("unicode_escape").decode("ascii")
    return None


def _plain(value: float | None) -> str:
    """A range bound as the data files write it: ``1e9``, ``1.5e12``."""
    return "" if value is None else f"{value:g}".replace("e+0", "e").replace("e+", "e")


def _check_field(name: str, kind: str, value: Any, minimum: float = 1, maximum: float | None = None) -> None:
    """Raise SpecError (naming ``name``) unless ``value`` is a valid ``kind`` within [minimum, maximum]."""
    if value is None:  # JSON's null: a value left empty, or a number past a float's range (1e400 reads as it)
        wanted = {"count": "a whole number", "quantity": "a number", "text": "a text", "flag": "true or false"}
        raise SpecError(
            "is null", field=name, hint=f"give it {wanted.get(kind, 'a value')}, or leave out an optional key"
        )
    if kind in ("count", "quantity"):
        if kind == "count" and (isinstance(value, bool) or not isinstance(value, int)):
            raise SpecError(f"must be a whole number, got {shown(value)}", field=name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SpecError(f"must be a number, got {shown(value)}", field=name)
        if isinstance(value, float) and not math.isfinite(value):
            raise SpecError(f"must be a finite number, got {value}", field=name)
        # Compared before any float arithmetic: a 400-digit integer is simply too large.
        if kind == "quantity" and value <= 0:
            raise SpecError(f"must be positive, got {shown(value)}", field=name)
        low, high = (_plain(minimum), _plain(maximum)) if kind == "quantity" else (f"{minimum:,}", f"{maximum or 0:,}")
        if value < minimum:
            raise SpecError(f"must be at least {low}, got {shown(value)}", field=name)
        if maximum is not None and value > maximum:
            raise SpecError(f"must be at most {high}, got {shown(value)}", field=name)
    elif kind == "text":
        if not isinstance(value, str) or not value.strip():
            raise SpecError(f"must be non-empty text, got {shown(value)}", field=name)
        bad = _bad_characters(value)
        if bad:
            raise SpecError(f"must be one line of printable text; it contains '{bad}'", field=name)
        if maximum is not None and len(value) > maximum:
            raise SpecError(f"must be at most {maximum:,} characters, got {len(value):,}", field=name)
    elif kind == "flag":
        if not isinstance(value, bool):
            raise SpecError(f"must be true or false, got {shown(value)}", field=name)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _pair(record: Any, figure: str, source: str, what: str) -> None:
    """Both of two optional fields, or neither: a figure is given with its source."""
    given = {name: getattr(record, name) is not None for name in (figure, source)}
    if any(given.values()) and not all(given.values()):
        missing = next(name for name, present in given.items() if not present)
        raise SpecError(f"is missing ({what} needs both a figure and its source)", field=missing)


def _validate(record: Any) -> None:
    for spec_field in fields(record):
        kind = spec_field.metadata.get("kind")
        if kind:
            meta = spec_field.metadata
            value = getattr(record, spec_field.name)
            _check_field(spec_field.name, kind, value, meta.get("minimum", 1), meta.get("maximum"))


#: The all-reduce algorithms a preset may name, and the latency steps each takes on G GPUs
#: (``allreduce_steps``) and the bytes each GPU sends per byte of message (``allreduce_bytes_factor``).
ALLREDUCE_ALGORITHMS = ("ring", "one_shot", "two_shot")


def allreduce_steps(algorithm: str, gpus: int) -> int:
    """Latency steps of one all-reduce over ``gpus`` GPUs, each paying one per-step latency:

    - ``ring``: ``2 (G - 1)``, a reduce-scatter and an all-gather round the ring, as NCCL's
      cost model counts them (``nsteps = 2*(nRanks-1)`` in src/graph/tuning.cc);
    - ``one_shot``: 1, every GPU reads all its peers' buffers at once and adds them;
    - ``two_shot``: 2, a reduce-scatter then an all-gather, each reading all peers at once.
    """
    if algorithm == "ring":
        return 2 * (gpus - 1)
    return 1 if algorithm == "one_shot" else 2


def allreduce_bytes_factor(algorithm: str, gpus: int) -> float:
    """Bytes each GPU moves over its link per byte of message, one direction:

    - ``ring`` and ``two_shot``: ``2 (G - 1) / G`` (each GPU sends and receives that share of
      the message, the nccl-tests bus-bandwidth factor);
    - ``one_shot``: ``G - 1``, every GPU reads the whole message from each of its peers.
    """
    if gpus <= 1:
        return 0.0
    return float(gpus - 1) if algorithm == "one_shot" else 2.0 * (gpus - 1) / gpus


@dataclass(frozen=True)
class AllReduceLatency:
    """The fixed latency of one small all-reduce as the GPU count G grows, named by the
    algorithm that runs it (``ALLREDUCE_ALGORITHMS``), in one of three shapes:

    - fitted, ``{ algorithm = "ring", base_s = B, step_s = P, measured = { 8 = S } }``:
      ``B + P * steps(G)`` (``allreduce_steps``), a fixed part every all-reduce pays whatever
      G (launch, synchronization, the kernel's own start: NCCL's ``baseLat``) plus a per-step
      latency (NCCL's ``hwLat``), the shape of NCCL's own cost model
      (``latency = baseLat + nsteps * hwLat``, src/graph/tuning.cc), with the measurements it
      was fitted to.
    - measured at given counts (``measured_s``, G -> seconds), used as they are: straight
      lines between them, the nearest measured value outside them.
    - a ring measured once (``ring_s`` at ``ring_gpus``, the older shape, still read): ``ring_s
      * (G - 1) / (ring_gpus - 1)``, a ring with no fixed part.

    ``at(G)`` is what a run that names this preset is charged: the measurement where there is
    one at G, else the fit. ``floor(G)`` is what the ceiling may use: only measurements, never
    an extrapolation (below).
    """

    name: str
    ring_s: float | None = None
    ring_gpus: int | None = None
    measured_s: Mapping[int, float] = field(default_factory=lambda: MappingProxyType({}))
    algorithm: str | None = None
    base_s: float | None = None
    step_s: float | None = None

    @property
    def shape(self) -> str:
        """``"fitted"``, ``"ring"`` (measured once, scaled) or ``"measured"``."""
        if self.base_s is not None:
            return "fitted"
        return "ring" if self.ring_s is not None else "measured"

    @property
    def kind(self) -> str:
        """The algorithm in words: ``"ring"``, ``"one-shot"``, or ``"algorithm not stated"``."""
        if self.algorithm is not None:
            return self.algorithm.replace("_", "-")
        return "ring" if self.ring_s is not None else "algorithm not stated"

    @property
    def measurements(self) -> Mapping[int, float]:
        """Every latency measured for this preset, by GPU count."""
        if self.ring_s is not None and self.ring_gpus is not None:
            return {self.ring_gpus: self.ring_s}
        return self.measured_s

    def fit(self, gpus: int) -> float | None:
        """``base_s + step_s * allreduce_steps(algorithm, G)``; None for a preset with no fit."""
        if self.base_s is None or self.step_s is None:
            return None
        return self.base_s + self.step_s * allreduce_steps(self.algorithm or "ring", gpus)

    def basis(self, gpus: int) -> str:
        """Where ``at(gpus)`` comes from, in words: ``"nccl (ring), as measured at 8 GPUs"``,
        ``"nccl (ring), fitted: 5.79 µs + 0.96 µs x 2 steps"``."""
        label = f"{self.name} ({self.kind})"
        if gpus in self.measurements:
            return f"{label}, as measured at {gpus:,} GPUs"
        if self.base_s is not None and self.step_s is not None:
            steps = allreduce_steps(self.algorithm or "ring", gpus)
            return (
                f"{label}, fitted: {self.base_s * 1e6:,.3g} µs + {self.step_s * 1e6:,.3g} µs x {steps:,} steps,"
                " no measurement at this count"
            )
        if self.ring_s is not None and self.ring_gpus is not None:
            return (
                f"{label}: {self.ring_s * 1e6:,.4g} µs measured on {self.ring_gpus:,} GPUs"
                f" x {gpus - 1}/{self.ring_gpus - 1}"
            )
        counts = sorted(self.measured_s)
        if counts[0] < gpus < counts[-1]:
            below = max(count for count in counts if count < gpus)
            above = min(count for count in counts if count > gpus)
            return f"{label}, between its measurements at {below:,} and {above:,} GPUs"
        nearest = counts[0] if gpus < counts[0] else counts[-1]
        return f"{label}, as measured at {nearest:,} GPUs, the nearest count measured"

    def at(self, gpus: int) -> float:
        """Seconds of fixed latency for one all-reduce over ``gpus`` GPUs (0 for one GPU): the
        measurement at ``gpus`` where there is one, else the fit (or the older shapes' rule)."""
        if gpus <= 1:
            return 0.0
        if gpus in self.measured_s:
            return self.measured_s[gpus]
        fitted = self.fit(gpus)
        if fitted is not None:
            return fitted
        if self.ring_s is not None and self.ring_gpus is not None:
            return self.ring_s * (gpus - 1) / (self.ring_gpus - 1)
        return _between(self.measured_s, gpus)

    def floor(self, gpus: int) -> float | None:
        """The latency a ceiling may charge at ``gpus`` GPUs, from measurements only: the value
        measured at ``gpus``, a straight line between measurements on either side, or, past the
        largest count measured, that count's value (a latency does not fall as GPUs are added,
        so it errs low, as a ceiling must). None below every count measured: anything there
        would be an extrapolation, which may fall below what any kernel achieves."""
        if gpus <= 1:
            return 0.0
        measured = self.measurements
        if not measured or gpus < min(measured):
            return None
        return _between(measured, gpus)

    def floor_basis(self, gpus: int) -> str:
        """Where ``floor(gpus)`` comes from, in words."""
        label = f"{self.name} ({self.kind})"
        measured = self.measurements
        counts = sorted(measured)
        if gpus in measured:
            return f"{label}, as measured at {gpus:,} GPUs"
        if counts[0] < gpus < counts[-1]:
            below = max(count for count in counts if count < gpus)
            above = min(count for count in counts if count > gpus)
            return f"{label}, between its measurements at {below:,} and {above:,} GPUs"
        return f"{label}, as measured at {counts[-1]:,} GPUs, the largest count measured below {gpus:,}"


def _between(measured: Mapping[int, float], gpus: int) -> float:
    """Straight lines between measured counts, the nearest measured value outside them."""
    counts = sorted(measured)
    if gpus <= counts[0]:
        return measured[counts[0]]
    if gpus >= counts[-1]:
        return measured[counts[-1]]
    below = max(count for count in counts if count <= gpus)
    above = min(count for count in counts if count >= gpus)
    if above == below:
        return measured[above]
    share = (gpus - below) / (above - below)
    return measured[below] + share * (measured[above] - measured[below])


def _gpu_count(label: str, key: Any, hint: str) -> int:
    """A GPU count an all-reduce was measured at, 2 to 100,000; SpecError naming ``label``."""
    text = str(key)
    if (
        isinstance(key, bool)
        or not re.fullmatch(r"[1-9][0-9]{0,5}", text)
        or not ALLREDUCE_GPUS[0] <= int(text) <= ALLREDUCE_GPUS[1]
    ):
        raise SpecError(
            f"must be a GPU count from 2 to {ALLREDUCE_GPUS[1]:,}, got {shown(key)}", field=label, hint=hint
        )
    return int(text)


_ALGORITHM_KEYS = ("algorithm", "base_s", "step_s", "measured")


def _algorithm_preset(name: str, table: Mapping[str, Any]) -> AllReduceLatency:
    """A preset that names its algorithm: ``{ algorithm = "ring", base_s = B, step_s = P,
    measured = { 8 = S } }``, the fit (both or neither of ``base_s`` and ``step_s``), the
    measurements, or both; SpecError naming the field."""
    label = f"allreduce_latency_s.{name}"
    shape = '{ algorithm = "ring", base_s = 5.8e-6, step_s = 0.96e-6, measured = { 8 = 19.19e-6 } }'
    for key in table:
        if key not in _ALGORITHM_KEYS:
            raise SpecError(
                f"a preset that names its algorithm has {', '.join(_ALGORITHM_KEYS)} only",
                field=f"{label}.{key}",
                hint=did_you_mean(str(key), _ALGORITHM_KEYS) or f"give {shape}",
            )
    algorithm = table["algorithm"]
    if algorithm not in ALLREDUCE_ALGORITHMS:
        raise SpecError(
            f"must be one of {', '.join(ALLREDUCE_ALGORITHMS)}, got {shown(algorithm)}",
            field=f"{label}.algorithm",
            hint=did_you_mean(str(algorithm), ALLREDUCE_ALGORITHMS) or "name the algorithm the kernel runs",
        )
    fit = [key for key in ("base_s", "step_s") if key in table]
    if len(fit) == 1:
        missing = "step_s" if fit == ["base_s"] else "base_s"
        raise SpecError("is missing (a fit needs base_s and step_s)", field=f"{label}.{missing}", hint=f"give {shape}")
    for key in fit:
        _check_field(f"{label}.{key}", "quantity", table[key], *ALLREDUCE_LATENCY_S)
    measured: dict[int, float] = {}
    raw = table.get("measured", {})
    if not isinstance(raw, Mapping):
        raise SpecError(f"must be a table of GPU count = seconds, got {shown(raw)}", field=f"{label}.measured")
    for key, seconds in raw.items():
        count = _gpu_count(f"{label}.measured.{key}", key, f"give {shape}")
        _check_field(f"{label}.measured.{key}", "quantity", seconds, *ALLREDUCE_LATENCY_S)
        measured[count] = float(seconds)
    if not fit and not measured:
        raise SpecError("has neither a fit (base_s and step_s) nor measurements", field=label, hint=f"give {shape}")
    return AllReduceLatency(
        name,
        measured_s=MappingProxyType(measured),
        algorithm=str(algorithm),
        base_s=float(table["base_s"]) if fit else None,
        step_s=float(table["step_s"]) if fit else None,
    )


def _allreduce_latency(name: str, table: Any) -> AllReduceLatency:
    """One preset of ``allreduce_latency_s`` from its TOML table; SpecError naming the field."""
    label = f"allreduce_latency_s.{name}"
    shapes = (
        '{ algorithm = "ring", base_s = B, step_s = P, measured = { 8 = S } } (B + P x the algorithm\'s steps),'
        " { ring_gpus = 8, ring_s = S } (a ring measured at 8 GPUs, scaled by (G-1)/7)"
        " or latencies measured by GPU count, { 2 = S, 4 = S, 8 = S }"
    )
    if not isinstance(table, Mapping) or not table:
        raise SpecError(
            f"must be a table, got {shown(table)}",
            field=label,
            hint=f"give {shapes}: a latency that does not grow with the GPU count is not what any source measures",
        )
    if "algorithm" in table:
        return _algorithm_preset(name, table)
    ring_keys = ("ring_gpus", "ring_s")
    if any(key in table for key in ring_keys):
        for key in table:
            if key not in ring_keys:
                raise SpecError(
                    "a ring preset has ring_gpus and ring_s only",
                    field=f"{label}.{key}",
                    hint=did_you_mean(str(key), ring_keys) or f"give {shapes}",
                )
        for key in ring_keys:
            if key not in table:
                raise SpecError("is missing", field=f"{label}.{key}", hint=f"give {shapes}")
        gpus = _gpu_count(f"{label}.ring_gpus", table["ring_gpus"], f"give {shapes}")
        _check_field(f"{label}.ring_s", "quantity", table["ring_s"], *ALLREDUCE_LATENCY_S)
        return AllReduceLatency(name, ring_s=float(table["ring_s"]), ring_gpus=gpus)
    measured = {}
    for key, seconds in table.items():
        hint = did_you_mean(str(key), ring_keys) or f"give {shapes}"
        count = _gpu_count(f"{label}.{key}", key, hint)
        _check_field(f"{label}.{key}", "quantity", seconds, *ALLREDUCE_LATENCY_S)
        measured[count] = float(seconds)
    return AllReduceLatency(name, measured_s=MappingProxyType(measured))


#: Fixed seconds an all-to-all preset may charge per dispatch or combine (0: none published).
ALLTOALL_LATENCY_S = (0.0, 1e-2)
_ALLTOALL_KEYS = ("nvlink_bytes_per_s", "rdma_bytes_per_s", "latency_s", "source")
_ALLTOALL_SHAPE = '{ nvlink_bytes_per_s = 158e9, rdma_bytes_per_s = 58e9, latency_s = 0, source = "https://..." }'


@dataclass(frozen=True)
class AllToAllPreset:
    """What one expert-parallel all-to-all kernel reaches per GPU, by link kind (either may be
    left out where its source measured only the other): ``t = latency_s
    + max(NVLink bytes / nvlink_bytes_per_s, RDMA bytes / rdma_bytes_per_s)`` for one dispatch
    or combine (``roofline.epdeploy.alltoall_s``); the two links run at once."""

    name: str
    #: None where the source measured the other link kind only.
    nvlink_bytes_per_s: float | None
    rdma_bytes_per_s: float | None
    latency_s: float
    source: str = ""


def _alltoall_preset(name: str, table: object) -> AllToAllPreset:
    """One ``alltoall`` preset from its table; SpecError naming ``alltoall.NAME.FIELD``."""
    label = f"alltoall.{name}"
    if not isinstance(table, Mapping):
        raise SpecError(f"must be a table, got {shown(table)}", field=label, hint=f"give {_ALLTOALL_SHAPE}")
    for key in table:
        if key not in _ALLTOALL_KEYS:
            raise SpecError(
                "unknown key",
                field=f"{label}.{key}",
                hint=did_you_mean(str(key), _ALLTOALL_KEYS) or "allowed: " + ", ".join(_ALLTOALL_KEYS),
            )
    for key in ("latency_s", "source"):
        if key not in table:
            raise SpecError("is missing", field=f"{label}.{key}", hint=f"give {_ALLTOALL_SHAPE}")
    links = [key for key in ("nvlink_bytes_per_s", "rdma_bytes_per_s") if key in table]
    if not links:
        raise SpecError(
            "gives no bandwidth", field=label, hint="give nvlink_bytes_per_s, rdma_bytes_per_s or both, as the source"
        )
    for key in links:
        _check_field(f"{label}.{key}", "quantity", table[key], *PEER_LINK_BYTES_PER_S)
    latency = table["latency_s"]
    if isinstance(latency, bool) or not isinstance(latency, (int, float)) or not 0 <= latency <= ALLTOALL_LATENCY_S[1]:
        raise SpecError(
            f"must be a number of seconds from 0 to {ALLTOALL_LATENCY_S[1]:g}, got {shown(latency)}",
            field=f"{label}.latency_s",
            hint="give the fixed time of one dispatch or combine, 0 where the source publishes none",
        )
    _check_field(f"{label}.source", "text", table["source"], 1, SOURCE_LENGTH)
    nvlink, rdma = table.get("nvlink_bytes_per_s"), table.get("rdma_bytes_per_s")
    return AllToAllPreset(
        name,
        None if nvlink is None else float(nvlink),
        None if rdma is None else float(rdma),
        float(table["latency_s"]),
        str(table["source"]),
    )


@dataclass(frozen=True)
class InterconnectSpec:
    """How one GPU talks to the others in a tensor-parallel group.

    ``link_bytes_per_s`` is what one GPU can send (and, at the same time, receive)
    over its scale-up links, one direction: NVLink 4 on an H100 is 18 links of 25 GB/s,
    450e9. Up to ``domain_gpus`` GPUs share that fabric; a group larger than the domain
    crosses the scale-out network at ``scale_out_bytes_per_s`` per GPU.
    ``allreduce_latency_s`` names measured latencies of one small all-reduce, each a
    function of the GPU count (``AllReduceLatency``): ``{nccl = {ring_gpus = 8, ring_s =
    19.19e-6}, custom_oneshot = {2 = 3.7e-6, 4 = 3.7e-6, 8 = 5.7e-6}}``; the ceiling takes
    the smallest at each count.
    ``allreduce_bus_bytes_per_s`` (optional) is a large all-reduce's measured bus bandwidth on
    this fabric (nccl-tests' ``busbw``: the bytes each GPU sends, 2(G-1)/G of the message, over
    the time). The ceiling never uses it (the nameplate bounds it); expected mode takes
    ``allreduce_bus_bytes_per_s / link_bytes_per_s`` as its link share where no serving row
    fitted a share for this kind of link (``Calibration.link_share``).
    """

    scale_up: str = _text(NAME_LENGTH)
    domain_gpus: int = _count(maximum=100_000)
    link_bytes_per_s: float = _quantity(*PEER_LINK_BYTES_PER_S)
    scale_out_bytes_per_s: float = _quantity(*PEER_LINK_BYTES_PER_S)
    allreduce_latency_s: Mapping[str, AllReduceLatency]
    source: str = _text(SOURCE_LENGTH)
    #: Expert-parallel all-to-all kernels by name (``AllToAllPreset``), optional: without one
    #: the ceiling times an all-to-all at the links' own bandwidths above.
    alltoall: Mapping[str, AllToAllPreset] | None = None
    #: A large all-reduce's measured bus bandwidth, optional (the class's docstring).
    allreduce_bus_bytes_per_s: float | None = None

    def __post_init__(self) -> None:
        _validate(self)
        if self.allreduce_bus_bytes_per_s is not None:
            bus, link = self.allreduce_bus_bytes_per_s, self.link_bytes_per_s
            _check_field("allreduce_bus_bytes_per_s", "quantity", bus, *PEER_LINK_BYTES_PER_S)
            if bus > MAX_BUS_OVER_LINK * link:
                raise SpecError(
                    f"is {bus / link:.3g} times link_bytes_per_s ({link / 1e9:g} GB/s);"
                    f" a measured bus bandwidth is at most {MAX_BUS_OVER_LINK:g} times the links' one direction",
                    field="allreduce_bus_bytes_per_s",
                    hint="give nccl-tests' busbw for a large all_reduce_perf message in bytes per second, 200 GB/s as"
                    " 200e9, and link_bytes_per_s as one direction of the links",
                )
        if self.alltoall is not None:
            if not isinstance(self.alltoall, Mapping) or not self.alltoall:
                raise SpecError(
                    f"must be a table of named presets, got {shown(self.alltoall)}",
                    field="alltoall",
                    hint=f"for example alltoall = {{ deepep_normal = {_ALLTOALL_SHAPE} }}",
                )
            presets = {}
            for name, table in self.alltoall.items():
                if not _PRESET.fullmatch(str(name)):
                    raise SpecError("bad preset name: use lower-case letters, digits and '_'", field=f"alltoall.{name}")
                presets[name] = table if isinstance(table, AllToAllPreset) else _alltoall_preset(name, table)
            object.__setattr__(self, "alltoall", MappingProxyType(presets))
        latencies = self.allreduce_latency_s
        if not isinstance(latencies, Mapping) or not latencies:
            got = "an empty table" if isinstance(latencies, Mapping) else shown(latencies)
            raise SpecError(
                f"must be a table of named latencies, got {got}",
                field="allreduce_latency_s",
                hint="for example allreduce_latency_s = { nccl = { ring_gpus = 8, ring_s = 19.19e-6 } }",
            )
        presets = {}
        for name, table in latencies.items():
            if not _PRESET.fullmatch(str(name)):
                raise SpecError(
                    "bad preset name: use lower-case letters, digits and '_'", field=f"allreduce_latency_s.{name}"
                )
            presets[name] = table if isinstance(table, AllReduceLatency) else _allreduce_latency(name, table)
        object.__setattr__(self, "allreduce_latency_s", MappingProxyType(presets))

    def best_allreduce(self, gpus: int) -> AllReduceLatency:
        """The preset the ceiling charges at ``gpus`` GPUs: the smallest *measured* latency
        (``AllReduceLatency.floor``, the first named on a tie); only where no preset was
        measured at or below ``gpus`` GPUs, the smallest fitted one (``at``)."""
        presets = self.allreduce_latency_s.values()
        measured = [preset for preset in presets if preset.floor(gpus) is not None]
        if measured:
            return min(measured, key=lambda preset: preset.floor(gpus) or 0.0)
        return min(presets, key=lambda preset: preset.at(gpus))

    def ceiling_latency(self, gpus: int) -> float:
        """Seconds the ceiling charges for one small all-reduce over ``gpus`` GPUs: the
        smallest measured latency there (``best_allreduce``), never an extrapolation unless
        nothing was measured at or below ``gpus``."""
        preset = self.best_allreduce(gpus)
        floor = preset.floor(gpus)
        return preset.at(gpus) if floor is None else floor

    def ceiling_basis(self, gpus: int) -> str:
        """Where ``ceiling_latency(gpus)`` comes from, in words."""
        preset = self.best_allreduce(gpus)
        if preset.floor(gpus) is None:
            return f"{preset.basis(gpus)} (nothing measured at or below {gpus:,} GPUs)"
        return preset.floor_basis(gpus)

    def alltoall_ceiling(self) -> AllToAllPreset:
        """The best figures any source gives these links, per link kind: the larger of the
        nameplate (``link_bytes_per_s``, ``scale_out_bytes_per_s``) and every preset's
        bandwidth, and the smallest preset latency (0 without presets). A preset may beat a
        nameplate when its source counts traffic to the sender's own GPU (DeepEP's RDMA
        figures above 50 GB/s do), so the larger is the bound."""
        presets = tuple((self.alltoall or {}).values())
        return AllToAllPreset(
            "ceiling",
            max([self.link_bytes_per_s, *(p.nvlink_bytes_per_s for p in presets if p.nvlink_bytes_per_s)]),
            max([self.scale_out_bytes_per_s, *(p.rdma_bytes_per_s for p in presets if p.rdma_bytes_per_s)]),
            min([p.latency_s for p in presets], default=0.0),
        )

    def preset(self, name: str) -> AllReduceLatency:
        """The preset called ``name``; SpecError naming the presets there are."""
        try:
            return self.allreduce_latency_s[name]
        except KeyError:
            raise unknown_name("all-reduce latency preset", name, self.allreduce_latency_s) from None

    def latency(self, name: str, gpus: int) -> float:
        """The latency of preset ``name`` at ``gpus`` GPUs."""
        return self.preset(name).at(gpus)


_PRESET = re.compile(r"[a-z0-9_]{1,40}")


@dataclass(frozen=True)
class GpuSpec:
    """One accelerator: memory, HBM bandwidth and dense peak math rate per precision."""

    id: str = _text()
    name: str = _text(NAME_LENGTH)
    memory_bytes: float = _quantity(*MEMORY_BYTES)
    bandwidth_bytes_per_s: float = _quantity(*BANDWIDTH_BYTES_PER_S)
    #: Dense (not 2:4 sparse) peak operations per second, by math precision.
    dense_flops_per_s: Mapping[str, float]
    source: str = _text(SOURCE_LENGTH)
    #: What the memory figure means: nameplate against what software can address (optional).
    memory_note: str = ""
    #: Memory the driver reports and software can allocate from (nvidia-smi's total), or
    #: None when no report was found: then the nameplate ``memory_bytes`` stands in for it.
    addressable_memory_bytes: float | None = None
    #: Where the driver's figure comes from; required with it.
    addressable_memory_source: str | None = None
    #: Bandwidth of one direction of the GPU's link to host memory (PCIe), or None
    #: when not given; swapping the KV cache out and back in moves bytes over it.
    host_link_bytes_per_s: float | None = None
    #: Where the host-link figure comes from; required with it.
    host_link_source: str | None = None
    #: The links to other GPUs, or None: then the chip runs on one GPU only (a multi-GPU
    #: estimate is refused, ``performance.require_links``). Every built-in chip has one.
    interconnect: InterconnectSpec | None = None
    #: The id of a chip whose tensor cores this one has (the same die at the same clocks, with
    #: other memory: the H200 is the H100's GH100 with HBM3e), or None. Expected mode gives it
    #: that chip's fitted compute shares (``compute_efficiency_id``), so runs on either one fit
    #: one share per math precision, and a chip with no fitted run of its own still gets one.
    same_compute_as: str | None = None
    #: Where the sameness is printed; required with it.
    same_compute_source: str | None = None

    def __post_init__(self) -> None:
        _validate(self)
        if self.memory_note != "":  # optional, but when given it is one printable line like a source
            _check_field("memory_note", "text", self.memory_note, 1, SOURCE_LENGTH)
        _pair(self, "host_link_bytes_per_s", "host_link_source", "the host link")
        if self.host_link_bytes_per_s is not None:
            _check_field("host_link_bytes_per_s", "quantity", self.host_link_bytes_per_s, *HOST_LINK_BYTES_PER_S)
            _check_field("host_link_source", "text", self.host_link_source, 1, SOURCE_LENGTH)
        _pair(self, "addressable_memory_bytes", "addressable_memory_source", "the driver's memory figure")
        if self.addressable_memory_bytes is not None:
            high = self.memory_bytes * ADDRESSABLE_OVER_NAMEPLATE if _finite(self.memory_bytes) else None
            _check_field("addressable_memory_bytes", "quantity", self.addressable_memory_bytes, MEMORY_BYTES[0], high)
            _check_field("addressable_memory_source", "text", self.addressable_memory_source, 1, SOURCE_LENGTH)
        _pair(self, "same_compute_as", "same_compute_source", "sharing another chip's compute")
        if self.same_compute_as is not None:
            if self.same_compute_as == self.id:
                raise SpecError(
                    "names the chip itself", field="same_compute_as", hint="name another chip's id, or remove the key"
                )
            _check_field("same_compute_source", "text", self.same_compute_source, 1, SOURCE_LENGTH)
        if self.interconnect is not None and not isinstance(self.interconnect, InterconnectSpec):
            raise SpecError(f"must be a table, got {shown(self.interconnect)}", field="interconnect")
        if not any(precision in self.dense_flops_per_s for precision in SIXTEEN_BIT):
            # Weight-only formats and the rule of thumb multiply at 16 bits; every real GPU lists it.
            raise SpecError(
                "needs a 16-bit peak (bf16 or fp16)",
                field="dense_flops_per_s",
                hint="add the chip's dense bf16 or fp16 figure from its datasheet",
            )
        for precision, value in self.dense_flops_per_s.items():
            if precision not in PRECISIONS:
                raise unknown_name("precision", precision, PRECISIONS).located(field=f"dense_flops_per_s.{precision}")
            _check_field(f"dense_flops_per_s.{precision}", "quantity", value, *FLOPS_PER_S)
        object.__setattr__(self, "dense_flops_per_s", MappingProxyType(dict(self.dense_flops_per_s)))

    def peak_flops_per_s(self, precision: str) -> float:
        """Dense peak FLOP/s of one chip for math at ``precision``."""
        try:
            return self.dense_flops_per_s[precision]
        except KeyError:
            have = ", ".join(self.dense_flops_per_s)
            # Located, so a build or a report can say which file and entry to fix.
            raise SpecError(
                f"{self.id} has no {precision} math",
                entry=entry_label("gpu", self.id),
                field="dense_flops_per_s",
                hint=f"it has {have}",
            ) from None

    @property
    def compute_efficiency_id(self) -> str:
        """The id expected mode's compute shares are fitted and looked up under: the chip named
        by ``same_compute_as``, else this chip's own."""
        return self.same_compute_as or self.id

    @property
    def addressable_bytes(self) -> float:
        """Memory software can allocate on one chip: the driver's figure, else the nameplate."""
        return self.memory_bytes if self.addressable_memory_bytes is None else self.addressable_memory_bytes

    def host_link(self) -> float:
        """One direction of the link to host memory, bytes/s; SpecError when the entry has none."""
        if self.host_link_bytes_per_s is None:
            raise SpecError(
                f"{self.id} has no host link bandwidth",
                field="host_link_bytes_per_s",
                hint="add host_link_bytes_per_s and host_link_source to its entry",
            )
        return self.host_link_bytes_per_s


@dataclass(frozen=True)
class MoeSpec:
    """Mixture of experts: each token goes to ``experts_per_token`` of ``experts`` routed experts.

    Shared experts see every token. ``dense_layers`` layers (the first ones in
    every supported model) use the model's plain FFN of ``ffn_size`` instead of
    experts. ``router_bias``: the router adds a bias per expert (gpt-oss;
    DeepSeek-V3's load-balancing correction). ``expert_bias``: every expert's
    projections carry biases (gpt-oss). ``node_limit``: the most nodes one token's
    experts may lie on (node-limited routing), 0 for none.
    """

    experts: int = _count(maximum=100_000)
    experts_per_token: int = _count(maximum=100_000)
    expert_ffn_size: int = _count(maximum=10_000_000)
    shared_experts: int = _count(minimum=0, maximum=1_000)
    dense_layers: int = _count(minimum=0, maximum=10_000)
    router_bias: bool = _flag(default=False)
    expert_bias: bool = _flag(default=False)
    #: Nodes one token's experts may span (node-limited routing: DeepSeek-V3's ``topk_group``, its
    #: experts in ``n_group`` groups, one a node in its deployment); 0: no limit.
    node_limit: int = _count(minimum=0, maximum=100_000, default=0)

    def __post_init__(self) -> None:
        _validate(self)
        if self.experts_per_token > self.experts:
            raise SpecError(
                f"must not exceed experts ({self.experts}), got {self.experts_per_token}",
                field="experts_per_token",
            )


@dataclass(frozen=True)
class MlaSpec:
    """Multi-head latent attention (DeepSeek-V2/V3): keys and values are cached as a
    compressed latent of ``kv_lora_rank`` plus one shared RoPE key of ``qk_rope_head_dim``.
    A ``q_lora_rank`` of 0 means queries are projected directly, not through a latent
    (DeepSeek-V2-Lite's ``q_lora_rank: null``)."""

    kv_lora_rank: int = _count()
    q_lora_rank: int = _count(minimum=0)
    qk_nope_head_dim: int = _count()
    qk_rope_head_dim: int = _count()
    v_head_dim: int = _count()

    def __post_init__(self) -> None:
        _validate(self)


@dataclass(frozen=True)
class ModelSpec:
    """A decoder-only transformer, defined by its architecture as in its config.json.

    ``kv_heads`` and ``head_dim`` describe grouped-query attention; a model with
    ``mla`` set caches a latent instead and leaves them at 0 (not applicable).
    A model with sliding-window layers sets ``sliding_window`` (tokens a local
    layer keeps) and ``layer_pattern``, the kinds of layer ("local" or "global")
    repeated from the first layer on; without them every layer is global.

    Small per-layer weights that some architectures add, all off by default:
    ``qkv_bias`` (biases on the query, key and value projections: Qwen2, gpt-oss),
    ``output_bias`` (on the attention output projection: gpt-oss), ``qk_norm``
    (an RMSNorm over each query and key head: Qwen3, Gemma 3) and
    ``norms_per_layer`` (2 in most models; Gemma 2 and 3 norm before and after
    both attention and MLP, 4).

    ``max_context`` is the longest sequence the model serves (its config's
    ``max_position_embeddings``), or None when not given.

    Widths that a draft head changes, all defaulting to a plain decoder's (EAGLE-3 sets each):
    ``head_vocab_size`` (the tokens the output head scores, its ``draft_vocab_size``; the
    vocabulary unless given), ``attention_input_size`` (the width the query, key and value
    projections read: EAGLE-3 concatenates the token's embedding with the fused hidden state,
    2 × hidden; the hidden size unless given), ``fusion_input_size`` (a bias-free layer that
    maps that many inputs to the hidden size before the layers: EAGLE-3's ``fc`` over three
    of the target's hidden states, 3 × hidden; 0, none, unless given) and
    ``shares_target_embedding`` (the input embedding is the target's own table, frozen and
    not stored with the head). ``draft_for`` names the model an entry drafts for: it makes
    the entry draft-only (``SpecSet.drafts``), usable as a draft for that target and no other.

    ``weight_precision`` is the format the published checkpoint stores its weights in (a
    config.json's ``quantization_config`` or ``torch_dtype``: ``fp8-block`` for DeepSeek-V3),
    the weight precision a command uses when none is given; None: bf16. A spec file may set it
    (``weight_precision = "fp8-block"``, as ``roofline model import`` writes it); the built-in
    data files leave it out, so their headers, hashed by the calibration, stay as they are.
    """

    id: str = _text()
    name: str = _text(NAME_LENGTH)
    layers: int = _count(maximum=10_000)
    hidden_size: int = _count()
    attention_heads: int = _count(maximum=100_000)
    kv_heads: int = _count(minimum=0, maximum=100_000)
    head_dim: int = _count(minimum=0, maximum=100_000)
    ffn_size: int = _count(maximum=10_000_000)
    vocab_size: int = _count(maximum=100_000_000)
    tied_embeddings: bool = _flag()
    source: str = _text(SOURCE_LENGTH)
    moe: MoeSpec | None = None
    mla: MlaSpec | None = None
    sliding_window: int = 0
    layer_pattern: tuple[str, ...] = ()
    qkv_bias: bool = _flag(default=False)
    output_bias: bool = _flag(default=False)
    qk_norm: bool = _flag(default=False)
    norms_per_layer: int = _count(minimum=0, maximum=16, default=2)
    max_context: int | None = None
    head_vocab_size: int | None = None
    attention_input_size: int | None = None
    fusion_input_size: int = _count(minimum=0, maximum=10_000_000, default=0)
    shares_target_embedding: bool = _flag(default=False)
    draft_for: str | None = None
    weight_precision: str | None = None

    def __post_init__(self) -> None:
        _validate(self)
        self._check_windows()
        self._check_draft_widths()
        if self.mla is not None:
            for name in ("qkv_bias", "output_bias", "qk_norm"):
                if getattr(self, name):
                    raise SpecError("does not apply to a model with [mla]", field=name, hint="remove this key")
        if self.weight_precision is not None and self.weight_precision not in PRECISIONS:
            raise SpecError(
                f"unknown precision {shown(self.weight_precision)}",
                field="weight_precision",
                hint=did_you_mean(str(self.weight_precision), PRECISIONS) or "see `roofline list precisions`",
            )
        if self.max_context is not None:  # optional; when given, tokens as --context takes them
            _check_field("max_context", "count", self.max_context, 1, MAX_CONTEXT_TOKENS)
        if self.mla is None:
            for name in ("kv_heads", "head_dim"):
                if getattr(self, name) < 1:
                    raise SpecError("must be at least 1 (or describe the model's [mla])", field=name)
            if self.attention_heads % self.kv_heads:
                raise SpecError(
                    f"attention_heads ({self.attention_heads}) must be a multiple of it, got {self.kv_heads}",
                    field="kv_heads",
                )
        if self.moe is not None and self.moe.dense_layers > self.layers:
            raise SpecError(
                f"must not exceed layers ({self.layers}), got {self.moe.dense_layers}",
                field="moe.dense_layers",
            )

    def _check_draft_widths(self) -> None:
        """The optional widths a draft head changes, and the pairs of fields that cannot go together."""
        if self.head_vocab_size is not None:
            vocab = self.vocab_size if _finite(self.vocab_size) else None
            _check_field("head_vocab_size", "count", self.head_vocab_size, 1, vocab)
            if self.tied_embeddings and self.head_vocab_size != self.vocab_size:
                raise SpecError(
                    "a head tied to the embedding scores the whole vocabulary",
                    field="head_vocab_size",
                    hint="remove head_vocab_size, or set tied_embeddings = false",
                )
        if self.attention_input_size is not None:
            _check_field("attention_input_size", "count", self.attention_input_size, 1, 10_000_000)
            if self.mla is not None:
                raise SpecError("does not apply to a model with [mla]", field="attention_input_size", hint="remove it")
        if self.draft_for is not None:
            _check_field("draft_for", "text", self.draft_for, 1, NAME_LENGTH)
            if self.draft_for == self.id:
                raise SpecError("names the entry itself", field="draft_for", hint="give the id of the target model")
        if self.shares_target_embedding:
            if self.draft_for is None:
                raise SpecError(
                    "only a draft can share its target's embedding",
                    field="shares_target_embedding",
                    hint='name the target with draft_for = "ID", or remove this key',
                )
            if self.tied_embeddings:
                raise SpecError(
                    "a head tied to the embedding cannot share the target's",
                    field="shares_target_embedding",
                    hint="set tied_embeddings = false: the head has an output head of its own",
                )

    @property
    def output_vocab_size(self) -> int:
        """Tokens the output head scores: ``head_vocab_size`` if given, else the vocabulary."""
        return self.vocab_size if self.head_vocab_size is None else self.head_vocab_size

    @property
    def attention_input_width(self) -> int:
        """The width the query, key and value projections read: ``attention_input_size`` or the hidden size."""
        return self.hidden_size if self.attention_input_size is None else self.attention_input_size

    def _check_windows(self) -> None:
        """Both window fields or neither; the pattern names known kinds and has a local layer."""
        pattern = self.layer_pattern
        if isinstance(pattern, list):
            pattern = tuple(pattern)
            object.__setattr__(self, "layer_pattern", pattern)
        if not isinstance(pattern, tuple):
            raise SpecError(f'must be a list such as ["local", "global"], got {pattern!r}', field="layer_pattern")
        if not self.sliding_window and not pattern:
            return
        if not pattern:
            raise SpecError(
                "a sliding_window needs a layer_pattern",
                field="layer_pattern",
                hint='say which layers are local, for example layer_pattern = ["local", "global"]',
            )
        if self.sliding_window == 0 and not isinstance(self.sliding_window, bool):
            raise SpecError(
                "a layer_pattern needs a sliding_window of at least 1 token",
                field="sliding_window",
                hint="copy sliding_window from the model's config.json",
            )
        _check_field("sliding_window", "count", self.sliding_window, 1, 100_000_000)  # tokens, as --context
        if len(pattern) > self.layers:  # before any entry is read: a pasted pattern may be long
            raise SpecError(
                f"has {len(pattern):,} entries, more than the {self.layers:,} layers", field="layer_pattern"
            )
        for kind in pattern:
            if kind not in LAYER_KINDS:
                hint = did_you_mean(str(kind), LAYER_KINDS) or "use " + " or ".join(f'"{k}"' for k in LAYER_KINDS)
                raise SpecError(f"unknown layer kind {shown(kind)}", field="layer_pattern", hint=hint)
        if "local" not in pattern:
            raise SpecError(
                "names no local layer, so the window would apply nowhere",
                field="layer_pattern",
                hint="remove sliding_window and layer_pattern, or mark the windowed layers local",
            )

    def past_max_context(self, tokens: int, what: str = "a context") -> str | None:
        """One sentence when ``tokens`` is longer than the model serves (``max_context``), else None.

        Past the limit the arithmetic still runs, but the model was not trained to attend
        that far and serving engines refuse the request (vLLM caps ``max_model_len`` there).
        """
        if self.max_context is None or tokens <= self.max_context:
            return None
        return (
            f"{what} of {tokens:,} tokens is past {self.name}'s limit of {self.max_context:,} (max_context):"
            " engines refuse longer sequences, so these figures describe no real deployment"
        )
