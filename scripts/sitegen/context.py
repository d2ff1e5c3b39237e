"""What the site is computed from: the spec files on disk.

The specs are read from ``roofline/data/*.toml`` under the root being built
(a repository copy in tests), with ``roofline.builtin_specs(data_dir)``, which
re-reads the files on every call: ``mkdocs serve`` regenerates in one
long-lived process, and an edited spec file must show up on the next rebuild.
Errors keep the package's own one-line SpecError text. The published measurements
are the package's too (``roofline/data/measurements.toml``, read by
``roofline.measured``), so pages import them from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from roofline import SpecSet, builtin_specs
from roofline.loader import BUILTIN_FILES


def data_files(root: Path) -> list[Path]:
    """The spec files the generator reads (and the dev server watches), in load order."""
    return [root / "roofline" / "data" / name for name in BUILTIN_FILES]


def read_specs(root: Path) -> SpecSet:
    """The spec files under ``root``, read afresh; a bad file raises the package's SpecError."""
    return builtin_specs(root / "roofline" / "data")


@dataclass(frozen=True)
class Context:
    """Everything one generator run computes from."""

    specs: SpecSet


def load_context(root: Path) -> Context:
    """The specs under ``root``; raises SpecError on any bad input."""
    return Context(read_specs(root))
