"""The GEMM kernel vLLM selects for each weight format and GPU, read from ``kernels.toml``.

Each ``[[path]]`` entry names a format of the package, the compute capabilities it covers
(``min_sm`` to ``max_sm``, ``major * 10 + minor``; ``max_sm = 0`` for no upper bound), the
kernel, the math the kernel runs (W4A16, W8A16, W8A8, W4A8 or W4A4: what the activations are
cast to, which the format's name does not fix) and the vLLM source file at a pinned commit.
``load_paths`` refuses a malformed entry with one line naming the file, the entry and the field.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from roofline import SpecError
from roofline.precisions import PRECISIONS

KERNELS = Path(__file__).resolve().parent / "kernels.toml"

#: The math names a path may give, and the bits each multiplies its (weights, activations) at.
MATHS = {"W4A16": (4, 16), "W8A16": (8, 16), "W8A8": (8, 8), "W4A8": (4, 8), "W4A4": (4, 4)}
_TEXT_FIELDS = ("format", "checkpoint", "gpus", "kernel", "math", "note", "source")


@dataclass(frozen=True)
class KernelPath:
    """One format's kernel on one range of GPUs, as vLLM's source chooses it."""

    format: str
    checkpoint: str
    gpus: str
    min_sm: int
    max_sm: int
    kernel: str
    math: str
    note: str
    source: str

    def covers(self, sm: int) -> bool:
        """Whether a GPU of compute capability ``sm`` (90 for an H100) takes this path."""
        return self.min_sm <= sm and (self.max_sm == 0 or sm <= self.max_sm)

    @property
    def activation_bits(self) -> int:
        """Bits the activations are multiplied at: 16 for W4A16, 4 for W4A4."""
        return MATHS[self.math][1]


def _entry(raw: object, index: int, file: str) -> KernelPath:
    label = f"path {index + 1}"
    if not isinstance(raw, dict):
        raise SpecError("must be a table of fields", file=file, entry=label)
    fields = {}
    for name in _TEXT_FIELDS:
        value = raw.get(name)
        if not isinstance(value, str) or not value.strip():
            raise SpecError(f"must be a non-empty string, got {value!r}", file=file, entry=label, field=name)
        fields[name] = value
    label = f"path {index + 1} ({fields['format']}, {fields['gpus']})"
    if fields["format"] not in PRECISIONS:
        raise SpecError(
            f"unknown format {fields['format']!r}",
            file=file,
            entry=label,
            field="format",
            hint="use one of `roofline list precisions`",
        )
    if fields["math"] not in MATHS:
        raise SpecError(
            f"unknown math {fields['math']!r}",
            file=file,
            entry=label,
            field="math",
            hint=f"use one of {', '.join(MATHS)}",
        )
    for name in ("min_sm", "max_sm"):
        value = raw.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SpecError(
                f"must be a compute capability such as 90 (9.0), got {value!r}", file=file, entry=label, field=name
            )
    if raw["max_sm"] and raw["max_sm"] < raw["min_sm"]:
        raise SpecError(
            f"{raw['max_sm']} is below min_sm {raw['min_sm']}",
            file=file,
            entry=label,
            field="max_sm",
            hint="0 means no upper bound",
        )
    if "github.com/" in fields["source"] and "/blob/main/" in fields["source"]:
        raise SpecError(
            "cites a moving branch", file=file, entry=label, field="source", hint="pin the file at a commit"
        )
    return KernelPath(min_sm=raw["min_sm"], max_sm=raw["max_sm"], **fields)


def load_paths(path: Path = KERNELS) -> tuple[KernelPath, ...]:
    """Every ``[[path]]`` of ``path``, checked; a bad one raises SpecError naming file, entry, field."""
    with path.open("rb") as handle:
        try:
            data = tomllib.load(handle)
        except tomllib.TOMLDecodeError as error:
            raise SpecError(f"is not valid TOML: {error}", file=path.name) from None
    entries = data.get("path")
    if not isinstance(entries, list) or not entries:
        raise SpecError("has no [[path]] entries", file=path.name)
    return tuple(_entry(raw, index, path.name) for index, raw in enumerate(entries))


def paths_for(paths: tuple[KernelPath, ...], weight_precision: str, sm: int) -> tuple[KernelPath, ...]:
    """The paths of ``weight_precision`` on a GPU of compute capability ``sm``."""
    return tuple(p for p in paths if p.format == weight_precision and p.covers(sm))
