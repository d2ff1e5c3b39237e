"""Request lengths from a trace: pairs of prompt and output tokens, drawn whole.

A trace is a CSV file with a header naming ``prompt_tokens`` and ``output_tokens`` (other columns are
ignored; lines starting with ``#`` are comments, and the package's own traces cite their source there).
Each row is one request's pair. ``simulate --trace NAME|FILE`` draws request i's pair as row
``floor(u * n)`` of the n rows, with ``u`` the next draw of the run's ``random.Random(seed)``, in the
place where a uniform prompt and output are drawn otherwise (gap, then lengths, per request): so the same
seed gives the same pairs under every traffic shape and scheduler, and a pair keeps its own output (a long
prompt in a conversation trace tends to come with a short answer; drawing each side apart would lose that).

The package ships one trace, ``azure-conv-2023``: 485 pairs, every 40th request of the Azure LLM
inference trace 2023's conversation file (``roofline/data/traces/azure-conv-2023.csv`` says where it comes
from and how it was cut). Nothing is downloaded: a trace of one's own is a file on disk.

Refused, each in one line naming the file, the line and the fix: a file that is not a regular UTF-8 file
of at most ``MAX_TRACE_BYTES``, a header without the two columns, a row that is not two whole numbers, a
length below 1 or above ``serving.MAX_LENGTH_TOKENS``, a trace with no rows, and (``check_context``) a
request whose prompt plus output is past the model's ``max_context``, which no engine would serve.
"""

from __future__ import annotations

import csv
import io
import math
import os
import random
import stat
from dataclasses import dataclass
from importlib import resources
from typing import Any

from .errors import SpecError, shown
from .parsing import WHOLE, parse_whole, whole_shown

#: The traces the package ships, by name, and their files under ``roofline/data/traces``.
BUILTIN_TRACES = {"azure-conv-2023": "azure-conv-2023.csv"}
#: Largest trace file read (about 400,000 rows of two numbers): beyond it a file is more likely a
#: mistake (a raw log with the prompts' text) than a length table.
MAX_TRACE_BYTES = 8_000_000
#: Longest prompt or output one row may give (``serving.MAX_LENGTH_TOKENS``, repeated here to keep
#: this module free of the simulator; a test checks they agree).
MAX_ROW_TOKENS = 10_000_000
COLUMNS = ("prompt_tokens", "output_tokens")
_FIX = "a trace is a CSV with a header 'prompt_tokens,output_tokens' and one request's two whole numbers a line"


@dataclass(frozen=True)
class LengthTrace:
    """The rows of one trace: ``prompts[i]`` and ``outputs[i]`` are request i's lengths, in tokens."""

    #: A built-in trace's name, or the path of the file as given.
    name: str
    prompts: tuple[int, ...]
    outputs: tuple[int, ...]
    #: Where the rows come from: the file's ``# source:`` comment, else its path.
    source: str

    def draw(self, rng: random.Random) -> tuple[int, int]:
        """One request's pair: row ``floor(u * n)`` for ``u`` uniform on [0, 1) (one draw)."""
        row = int(rng.random() * len(self.prompts))
        return self.prompts[row], self.outputs[row]

    @property
    def longest_request(self) -> int:
        """The most tokens one request holds, prompt plus output, over the rows."""
        return max(p + o for p, o in zip(self.prompts, self.outputs, strict=True))

    def facts(self) -> dict[str, Any]:
        """What ``simulate --json`` gives under ``trace``: the name, the source, the rows and the
        lengths' means and ranges (each row equally likely, so these are the draws' own)."""
        rows = len(self.prompts)
        return {
            "name": self.name,
            "source": self.source,
            "rows": rows,
            "prompt_mean": math.fsum(self.prompts) / rows,
            "output_mean": math.fsum(self.outputs) / rows,
            "prompt_range": [min(self.prompts), max(self.prompts)],
            "output_range": [min(self.outputs), max(self.outputs)],
        }

    def __str__(self) -> str:
        rows = len(self.prompts)
        return f"trace {self.name} ({rows:,} pair{'' if rows == 1 else 's'})"


def load_trace(name_or_path: str) -> LengthTrace:
    """A built-in trace by name, else the file at that path (see the module docstring)."""
    if name_or_path in BUILTIN_TRACES:
        location = resources.files("roofline") / "data" / "traces" / BUILTIN_TRACES[name_or_path]
        return parse_trace(location.read_text(encoding="utf-8"), name_or_path)
    if os.sep not in name_or_path and "." not in name_or_path and not os.path.exists(name_or_path):
        # A bare word is a name: say which names there are rather than "no such file".
        raise SpecError(
            f"unknown trace {shown(name_or_path)}",
            hint=f"give a built-in trace ({', '.join(sorted(BUILTIN_TRACES))}) or the path of a CSV file",
        )
    return parse_trace(_read_text(name_or_path), name_or_path)


def _read_text(path: str) -> str:
    """The UTF-8 text of a regular file of at most ``MAX_TRACE_BYTES`` (a FIFO or /dev/zero is refused
    before it is read, by the open handle's own mode)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        raise SpecError("no such file", file=path, hint="give a built-in trace name or a CSV file's path") from None
    except (OSError, ValueError) as error:
        raise SpecError(f"cannot open: {getattr(error, 'strerror', None) or error}", file=path) from None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise SpecError("is not a regular file", file=path, hint=_FIX)
        data = os.read(descriptor, MAX_TRACE_BYTES + 1)
        while len(data) <= MAX_TRACE_BYTES and (chunk := os.read(descriptor, MAX_TRACE_BYTES + 1 - len(data))):
            data += chunk
    except OSError as error:
        raise SpecError(f"cannot read: {error.strerror or error}", file=path) from None
    finally:
        os.close(descriptor)
    if len(data) > MAX_TRACE_BYTES:
        raise SpecError(
            f"is larger than {MAX_TRACE_BYTES / 1e6:g} MB, too large for a length trace",
            file=path,
            hint="keep two columns, prompt_tokens and output_tokens, or a sample of the rows",
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SpecError(f"is not UTF-8 text (byte offset {error.start:,})", file=path, hint=_FIX) from None


def parse_trace(text: str, label: str) -> LengthTrace:
    """The rows of a trace's text; ``label`` names it in the result and in every error."""
    lines = text.splitlines()
    numbered = [(number, line) for number, line in enumerate(lines, 1) if line.strip() and not line.startswith("#")]
    source = next((line[len("# source:") :].strip() for line in lines if line.startswith("# source:")), label)
    if not numbered:
        raise SpecError("holds no header and no rows", file=label, hint=_FIX)
    header_line, header = numbered[0]
    names = [name.strip() for name in next(csv.reader(io.StringIO(header)))]
    missing = [column for column in COLUMNS if column not in names]
    if missing:
        raise SpecError(
            f"line {header_line}: the header has no {' and no '.join(missing)} column, got {shown(header)}",
            file=label,
            hint=_FIX,
        )
    at = [names.index(column) for column in COLUMNS]
    prompts, outputs = [], []
    for number, line in numbered[1:]:
        cells = next(csv.reader(io.StringIO(line)))
        if len(cells) != len(names):
            raise SpecError(
                f"line {number}: {len(cells)} values under a header of {len(names)}, got {shown(line)}",
                file=label,
                hint=_FIX,
            )
        pair = []
        for column, index in zip(COLUMNS, at, strict=True):
            cell = cells[index].strip()
            if not WHOLE.fullmatch(cell):
                raise SpecError(
                    f"line {number}: {column} must be a whole number of tokens, got {shown(cells[index])}",
                    file=label,
                    hint=_FIX,
                )
            try:
                value = parse_whole(cell, (1, MAX_ROW_TOKENS))
            except SpecError:
                # A whole number out of range, however many digits: say the range, not the syntax.
                got = whole_shown(cell, (1, MAX_ROW_TOKENS))
                raise SpecError(
                    f"line {number}: {column} must be from 1 to {MAX_ROW_TOKENS:,} tokens, got {got}",
                    file=label,
                    hint="drop the rows of failed or empty requests; every request has a prompt and an output",
                ) from None
            pair.append(value)
        prompts.append(pair[0])
        outputs.append(pair[1])
    if not prompts:
        raise SpecError(f"has a header on line {header_line} but no rows", file=label, hint=_FIX)
    return LengthTrace(label, tuple(prompts), tuple(outputs), source)


def check_context(trace: LengthTrace, max_context: int | None, model_name: str) -> None:
    """Refuse a trace with a request longer than the model serves: prompt plus output past
    ``max_context`` (an engine refuses such a request, so no run of it is a real deployment)."""
    if max_context is None:
        return
    over = [i for i, (p, o) in enumerate(zip(trace.prompts, trace.outputs, strict=True)) if p + o > max_context]
    if over:
        first = over[0]
        verb = "is" if len(over) == 1 else "are"
        raise SpecError(
            f"{len(over):,} of its {len(trace.prompts):,} requests {verb} longer than {model_name}'s limit of"
            f" {max_context:,} tokens (max_context), the first {trace.prompts[first]:,} + {trace.outputs[first]:,}",
            file=trace.name,
            hint="use a model with a longer context, or a copy of the trace without those rows",
        )
