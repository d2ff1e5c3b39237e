"""What the site is computed from: the spec files on disk and the published measurements.

The specs are read from ``roofline/data/*.toml`` under the root being built
(a repository copy in tests), with ``roofline.builtin_specs(data_dir)``, which
re-reads the files on every call: ``mkdocs serve`` regenerates in one
long-lived process, and an edited spec file must show up on the next rebuild.
Errors keep the package's own one-line SpecError text.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from roofline import GpuSpec, ModelSpec, SpecError, SpecSet, builtin_specs
from roofline.errors import shown
from roofline.loader import BUILTIN_FILES

#: Measured figures the prose compares with the ceilings; see the file's header.
MEASURED_FILE = Path(__file__).with_name("measured.toml")


def data_files(root: Path) -> list[Path]:
    """The spec files the generator reads (and the dev server watches), in load order."""
    return [root / "roofline" / "data" / name for name in BUILTIN_FILES]


def read_specs(root: Path) -> SpecSet:
    """The spec files under ``root``, read afresh; a bad file raises the package's SpecError."""
    return builtin_specs(root / "roofline" / "data")


@dataclass(frozen=True)
class Measured:
    """One published measurement: what was measured, the figure(s), and where it was published."""

    key: str
    values: dict[str, float]
    source: str


def read_measured(path: Path = MEASURED_FILE) -> dict[str, Measured]:
    """The measurements in ``measured.toml``, by key; each needs a ``source`` and finite positive figures.

    A bad file is a SpecError naming the file, the entry and the field, like a bad spec.
    """
    label = f"scripts/sitegen/{path.name}"
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        raise SpecError(f"cannot read: {str(error).splitlines()[0][:200]}", file=label) from None
    found = {}
    for key, table in document.items():
        if not isinstance(table, dict):
            raise SpecError("must be a table [KEY] of figures and a source", file=label, entry=f"[{key}]")
        source = table.get("source")
        if not isinstance(source, str) or not source.strip():
            raise SpecError("missing field", file=label, entry=f"[{key}]", field="source")
        values = {}
        for name, value in table.items():
            if name == "source":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1e18:
                raise SpecError(
                    f"must be a positive number below 1e18, got {shown(value)}",
                    file=label,
                    entry=f"[{key}]",
                    field=name,
                )
            values[name] = float(value)
        found[key] = Measured(key, values, source)
    return found


@dataclass(frozen=True)
class Context:
    """Everything one generator run computes from."""

    specs: SpecSet
    measured: dict[str, Measured]


@dataclass(frozen=True)
class Focus:
    """What a page's worked examples and charts are drawn for: a GPU, two models, precisions and a prompt.

    Each page module makes its own (see ``sitegen/pages/``); nothing here names a chapter's choice.
    """

    specs: SpecSet
    gpu: GpuSpec
    small: ModelSpec
    large: ModelSpec
    precisions: tuple[str, ...]
    prompt: int


def load_context(root: Path) -> Context:
    """Specs from ``root`` plus the measurements; raises SpecError on any bad input."""
    return Context(read_specs(root), read_measured())
