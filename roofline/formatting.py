"""How numbers are printed: decimal SI units (1 GB = 1e9 bytes), as spec sheets use."""

from __future__ import annotations


def gigabytes(value_bytes: float, digits: int = 1) -> str:
    """``16060522496`` -> ``"16.1 GB"`` (decimal gigabytes, as on datasheets)."""
    return f"{value_bytes / 1e9:,.{digits}f} GB"


def bytes_size(value_bytes: float) -> str:
    """A byte count in the largest decimal unit that keeps it at or above 1: ``131072`` -> ``"131.1 kB"``."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value_bytes >= scale:
            return f"{value_bytes / scale:,.1f} {unit}"
    return f"{value_bytes:,.0f} B"


def milliseconds(seconds: float) -> str:
    """``0.0335`` -> ``"33.5 ms"``; under a millisecond keeps three decimals."""
    ms = seconds * 1e3
    return f"{ms:,.1f} ms" if ms >= 1 or ms == 0 else f"{ms:.3f} ms"


def duration(seconds: float) -> str:
    """A latency as people say it: milliseconds under a second (``0.0335`` -> ``"33.5 ms"``),
    seconds from one on (``9.3731`` -> ``"9.37 s"``)."""
    return milliseconds(seconds) if seconds < 1 else f"{seconds:,.2f} s"


def rate(per_second: float) -> str:
    """Tokens per second, whole numbers with thousands separators from 10 up (``208.6`` -> ``"209"``),
    two significant digits below (``4.18`` -> ``"4.2"``, ``0.154`` -> ``"0.15"``), so a slow rate is
    never printed as 0."""
    if per_second == 0 or abs(per_second) >= 9.5:
        return f"{per_second:,.0f}"
    return f"{per_second:.2g}"


def banded(expected: str, low: str, high: str) -> str:
    """An expected figure and its band, already formatted: ``"150 (band 120–180)"``."""
    return f"{expected} (band {low}–{high})"


#: What "expected" means, in one sentence every calculator that shows a band puts beside it.
EXPECTED_MEANS = (
    "The ceiling is a bound no published run beats; the expected figure is a prediction, the same model"
    " with bandwidth and compute efficiencies and overheads fitted to published serving runs, and its band"
    " is built to hold at least 80% of runs like them (see Measured vs ceiling)."
)


def users(batch: float | None) -> str:
    """A crossover batch as readers say it: ``295.3`` -> ``"295"``, None -> ``"never"``."""
    return "never" if batch is None else f"{batch:,.0f}"


def parameters(count: float) -> str:
    """``8030261248`` -> ``"8.03B"``; three significant digits, as model cards print."""
    return f"{count / 1e9:.3g}B" if count < 1e11 else f"{count / 1e9:,.0f}B"


def microseconds(seconds: float) -> str:
    """``3.7e-6`` -> ``"3.7 µs"``; an all-reduce's latency as measurements print it."""
    return f"{seconds * 1e6:,.3g} µs"
