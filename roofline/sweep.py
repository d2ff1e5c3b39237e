"""Grids of estimates, and the tables made from them (Markdown or CSV).

The chapter's H100 table, the CLI's ``roofline table`` and the Press Run program
all come from ``decode_prefill_table``, so they cannot disagree. Which precisions
and prompt length a table shows is the caller's choice: the package names none.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from . import formatting as fmt
from .estimate import Estimate, evaluate
from .loader import SpecSet
from .performance import Hardware, Workload, gpus_to_fit


@dataclass(frozen=True)
class Table:
    """Rows of already formatted cells under a header."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def markdown(self) -> str:
        """A GitHub-flavoured Markdown table; numeric columns are right-aligned.

        A ``|`` in a cell (a model named "A | B") is written ``\\|``, so it stays in its column.
        """
        numeric = [all(_looks_numeric(row[i]) for row in self.rows) for i in range(len(self.header))]
        lines = ["| " + " | ".join(_cell(cell) for cell in self.header) + " |"]
        lines.append("|" + "|".join("---:" if right else "---" for right in numeric) + "|")
        lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in self.rows]
        return "\n".join(lines) + "\n"

    def csv(self) -> str:
        """Comma-separated values with a header line; a text cell a spreadsheet would run as a
        formula (``=``, ``@``, ``+``, ``-``, a tab or a carriage return first) starts with ``'``."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([_inert(cell) for cell in self.header])
        writer.writerows([_inert(cell) for cell in row] for row in self.rows)
        return out.getvalue()

    def text(self) -> str:
        """Aligned plain-text columns, for a terminal or the Run cell."""
        widths = [max(len(cell) for cell in column) for column in zip(self.header, *self.rows, strict=True)]
        numeric = [all(_looks_numeric(row[i]) for row in self.rows) for i in range(len(self.header))]

        def line(cells: Sequence[str]) -> str:
            return "  ".join(
                cell.rjust(width) if right else cell.ljust(width)
                for cell, width, right in zip(cells, widths, numeric, strict=True)
            ).rstrip()

        return "\n".join([line(self.header), *(line(row) for row in self.rows)]) + "\n"


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|")


#: What makes Excel, LibreOffice and Google Sheets read a cell as a formula (OWASP's CSV injection list).
_FORMULA_STARTS = ("=", "@", "+", "-", "\t", "\r")


def _inert(cell: str) -> str:
    """``cell`` as a spreadsheet shows it and never runs: a leading ``'`` before a formula's first
    character (a model's name from a config.json, ``@SUM(1+9)*cmd|x!A0``); numbers stay numbers."""
    return "'" + cell if cell.startswith(_FORMULA_STARTS) and not _looks_numeric(cell) else cell


def _looks_numeric(cell: str) -> bool:
    return cell.replace(",", "").replace(".", "").replace(" GB", "").replace(" ms", "").isdigit()


@dataclass(frozen=True)
class DecodePrefillRow:
    """One model at one weight precision, on as many GPUs as it needs."""

    estimate: Estimate
    gpus: int


def decode_prefill_rows(
    specs: SpecSet,
    gpu_id: str,
    model_ids: Iterable[str] | None = None,
    *,
    precisions: Iterable[str],
    prompt: int,
) -> Iterator[DecodePrefillRow]:
    """Each model (all of ``specs``' if ``model_ids`` is None) × weight precision on the fewest
    ``gpu_id`` GPUs that hold its weights, with decode for one user and prefill of a
    ``prompt``-token prompt. A pair that needs more than one GPU of a chip without an
    interconnect in its spec is left out (``performance.require_links``): nothing could charge
    its all-reduces; ``needs_links`` counts them."""
    gpu = specs.gpu(gpu_id)
    models = [specs.model(model_id) for model_id in model_ids] if model_ids else list(specs.models.values())
    for model in models:
        for precision in precisions:
            workload = Workload(model, weight_precision=precision, prompt=prompt)
            count = gpus_to_fit(Hardware(gpu), workload)
            if count > 1 and gpu.interconnect is None:
                continue
            yield DecodePrefillRow(evaluate(Hardware(gpu, count), workload), count)


def decode_prefill_table(rows: Iterable[DecodePrefillRow]) -> Table:
    """Model, weight precision, weights, GPUs, decode tokens/s for one user, prefill ms."""
    cells = []
    prompt = 0
    for row in rows:
        prompt = row.estimate.workload.prompt
        estimate = row.estimate
        cells.append(
            (
                estimate.workload.model.name,
                estimate.workload.weight_precision,
                fmt.gigabytes(estimate.memory.weights_bytes),
                str(row.gpus),
                fmt.rate(estimate.decode_tokens_per_s_per_user),
                fmt.milliseconds(estimate.prefill.seconds).removesuffix(" ms"),
            )
        )
    # Short headers: the text form must fit the Run cell's output box without scrolling.
    header = ("Model", "Weights", "Size", "GPUs", "Decode tok/s", f"Prefill ms ({prompt:,} tok)")
    return Table(header, tuple(cells))
