"""Published acceptance: how many tokens a verification step yields, by method, model and task.

``data/acceptance.toml`` holds one row per published figure: the drafting method,
the target model, the prompts, and either τ (the mean tokens per verification step,
which papers and engines call the acceptance length) or α with γ for a chain. Its
header documents every field. A row's τ over its measured speedup is what a round
cost in target steps (``cost_per_round``): the part of τ the drafting, the larger
verification and the engine's own overhead took back.

The file is read as the spec files are (``loader.read_spec_bytes``): a regular UTF-8
file of at most 1 MB, and each mistake is one line naming the file, the entry and
the field.
"""

from __future__ import annotations

import math
import re
import statistics
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .errors import SpecError, did_you_mean, entry_label, shown
from .loader import SpecSet, decode_spec_text, load_specs, read_spec_bytes
from .speculative import GAMMA_RANGE, alpha_for_tokens_per_step, check_alpha, tokens_per_step

ACCEPTANCE_FILE = "roofline/data/acceptance.toml"

#: What drafts, in the words the chapter uses.
DRAFTERS = {
    "draft-model": "a smaller model of the same family",
    "head": "heads on the target's own features (Medusa, EAGLE, Hydra)",
    "n-gram": "n-grams copied from the prompt and the output so far (prompt lookup)",
    "retrieval": "continuations looked up in a datastore or in earlier output",
    "lookahead": "n-grams the target itself produces by Jacobi iteration",
    "mtp": "the model's own multi-token-prediction module",
}
#: How tokens were picked; "not stated" where the source leaves it out.
DECODING = ("greedy", "sampled", "not stated")
_REQUIRED = (
    "method",
    "drafter",
    "target",
    "task",
    "tree",
    "decoding",
    "hardware",
    "source",
    "section",
    "date",
)
_OPTIONAL = ("tokens_per_step", "alpha", "gamma", "model", "speedup", "batch", "note")
_TEXT_KEYS = ("method", "target", "task", "hardware", "section", "source", "date", "note", "model")
_ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_DATE_PATTERN = re.compile(r"\d{4}-\d{2}-\d{2}|undated")
_URL_PATTERN = re.compile(r"https?://\S+")
#: Longest text value, in characters (a URL pinned to a commit fits easily).
_TEXT_LENGTH = 2000
#: Most tokens one step can yield in any published tree: EAGLE-3's deepest trees accept under 10.
_MAX_TOKENS_PER_STEP = 100
#: A measured speedup above this is a typo (the best published are near 6×).
_MAX_SPEEDUP = 100


@dataclass(frozen=True)
class Acceptance:
    """One published acceptance figure and the conditions it was measured under."""

    id: str
    method: str
    drafter: str
    target: str
    task: str
    tree: bool
    #: Concurrent requests; None where the source does not state it.
    batch: int | None
    decoding: str
    hardware: str
    source: str
    section: str
    date: str
    #: Mean tokens per verification step as published; None when the row gives α instead.
    published_tokens_per_step: float | None = None
    #: Acceptance rate of one draft token as published; None when the row gives τ instead.
    published_alpha: float | None = None
    #: Draft tokens per round of a chain; None for a tree or when the source does not fix it.
    gamma: int | None = None
    #: A models.toml id with the target's architecture, when there is one.
    model: str = ""
    #: Tokens/s with speculation over tokens/s without, measured in the same setup.
    speedup: float | None = None
    note: str = ""

    @property
    def tokens_per_step(self) -> float:
        """τ: as published, or ``τ(α, γ)`` from a published α."""
        if self.published_tokens_per_step is not None:
            return self.published_tokens_per_step
        assert self.published_alpha is not None and self.gamma is not None  # the loader guarantees one
        return tokens_per_step(self.published_alpha, self.gamma)

    @property
    def alpha(self) -> float | None:
        """α: as published, or solved from τ for a chain of known γ (``τ(α, γ) = τ``); None for a tree."""
        if self.published_alpha is not None:
            return self.published_alpha
        if self.gamma is None or self.tree:
            return None
        return alpha_for_tokens_per_step(self.tokens_per_step, self.gamma)

    @property
    def cost_per_round(self) -> float | None:
        """What a round cost, in plain decode steps: ``τ / measured speedup``; None without a speedup.

        With a free draft and a verification as cheap as one step it would be 1; the
        excess is drafting, the larger verification and the engine's overhead together.
        """
        return None if self.speedup is None else self.tokens_per_step / self.speedup


@dataclass(frozen=True)
class RoundCostLine:
    """A round's measured cost against its draft length: ``cost ≈ fixed + γ * per_draft_token``,
    in plain decode steps, fitted over chain rows of one method and setup."""

    fixed: float
    per_draft_token: float
    rows: tuple[str, ...]


def round_cost_line(rows: tuple[Acceptance, ...] | list[Acceptance]) -> RoundCostLine:
    """Least-squares line through the rows' ``cost_per_round`` against γ.

    For a chain measured at several γ on one setup, the slope is what one more draft
    step (and one more token to verify) costs, in target steps, and the intercept the
    verification pass plus the engine's fixed overhead per round.
    """
    chosen = [row for row in rows if row.gamma is not None and not row.tree and row.cost_per_round is not None]
    if len({row.gamma for row in chosen}) < 2:
        raise SpecError("needs chain rows with a speedup at two or more values of γ", field="rows")
    fit = statistics.linear_regression([row.gamma for row in chosen], [row.cost_per_round for row in chosen])
    return RoundCostLine(fit.intercept, fit.slope, tuple(row.id for row in chosen))


def held_out_speedups(rows: tuple[Acceptance, ...] | list[Acceptance]) -> dict[int, float]:
    """γ -> the speedup a round-cost line predicts for that γ when fitted without its row
    (leave-one-out): ``τ_γ / (fixed + per_draft_token · γ)``, the line fitted to the other rows.

    ``round_cost_line`` fitted to every row and then asked which γ is best ranks points it
    was fitted to, an in-sample check; this one predicts each point from the others only, so
    its misses say how well the line would place a γ it never saw. Needs three or more γ.
    """
    chosen = [row for row in rows if row.gamma is not None and not row.tree and row.cost_per_round is not None]
    if len({row.gamma for row in chosen}) < 3:
        raise SpecError("needs chain rows with a speedup at three or more values of γ", field="rows")
    predicted = {}
    for row in chosen:
        line = round_cost_line([other for other in chosen if other.gamma != row.gamma])
        predicted[row.gamma] = row.tokens_per_step / (line.fixed + line.per_draft_token * row.gamma)
    return predicted


def _fail(entry: str, message: str, field: str | None = None, hint: str | None = None) -> SpecError:
    return SpecError(message, entry=entry_label("acceptance", entry), field=field, hint=hint)


def _text(entry: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(entry, f"must be non-empty text, got {shown(value)}", key)
    if len(value) > _TEXT_LENGTH or not value.isprintable():
        raise _fail(entry, f"must be one line of at most {_TEXT_LENGTH:,} characters", key)
    return value


def _number(entry: str, key: str, value: Any, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _fail(entry, f"must be a number, got {shown(value)}", key)
    if not low <= value <= high:
        raise _fail(entry, f"must be between {low:g} and {high:g}, got {value:g}", key)
    return float(value)


def _whole(entry: str, key: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail(entry, f"must be a whole number from {low:,} to {high:,}, got {shown(value)}", key)
    return value


def _row(entry: str, table: Mapping[str, Any], specs: SpecSet) -> Acceptance:
    allowed = (*_REQUIRED, *_OPTIONAL)
    for key in table:
        if key not in allowed:
            raise _fail(entry, "unknown key", key, did_you_mean(key, allowed) or "allowed: " + ", ".join(allowed))
    for key in _REQUIRED:
        if key not in table:
            raise _fail(entry, "is missing", key)
    values = {key: _text(entry, key, table[key]) for key in _TEXT_KEYS if key in table}
    if not _URL_PATTERN.fullmatch(values["source"]):
        raise _fail(entry, f"must be an http(s) URL, got {shown(values['source'])}", "source")
    if not _DATE_PATTERN.fullmatch(values["date"]):
        raise _fail(entry, f"must be YYYY-MM-DD or 'undated', got {shown(values['date'])}", "date")
    drafter = table["drafter"]
    if drafter not in DRAFTERS:
        hint = did_you_mean(str(drafter), DRAFTERS) or "one of " + ", ".join(DRAFTERS)
        raise _fail(entry, f"unknown drafter {shown(drafter)}", "drafter", hint)
    if table["decoding"] not in DECODING:
        raise _fail(entry, f"must be one of {', '.join(DECODING)}, got {shown(table['decoding'])}", "decoding")
    if not isinstance(table["tree"], bool):
        raise _fail(entry, f"must be true or false, got {shown(table['tree'])}", "tree")
    if "model" in values:
        try:
            specs.model(values["model"])
        except SpecError as error:
            raise _fail(entry, error.message, "model", error.hint) from None
    gamma = _whole(entry, "gamma", table["gamma"], *GAMMA_RANGE) if "gamma" in table else None
    tau = alpha = None
    if ("tokens_per_step" in table) == ("alpha" in table):
        raise _fail(entry, "give tokens_per_step (τ) or alpha (with gamma), one of the two", "tokens_per_step")
    if "alpha" in table:
        try:
            alpha = check_alpha(table["alpha"])
        except SpecError as error:
            raise _fail(entry, error.message, "alpha", error.hint) from None
        if gamma is None or table["tree"]:
            raise _fail(entry, "an acceptance rate needs the chain's gamma, and no tree", "alpha")
    else:
        highest = gamma + 1 if gamma is not None and not table["tree"] else _MAX_TOKENS_PER_STEP
        tau = _number(entry, "tokens_per_step", table["tokens_per_step"], 1, highest)
    speedup = _number(entry, "speedup", table["speedup"], 0.01, _MAX_SPEEDUP) if "speedup" in table else None
    return Acceptance(
        id=entry,
        drafter=drafter,
        tree=table["tree"],
        batch=_whole(entry, "batch", table["batch"], 1, 1_000_000) if "batch" in table else None,
        decoding=table["decoding"],
        published_tokens_per_step=tau,
        published_alpha=alpha,
        gamma=gamma,
        speedup=speedup,
        **values,
    )


def _decode(text: str, label: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise SpecError(f"TOML syntax error: {error}", file=label) from None
    except (RecursionError, ValueError, OverflowError) as error:
        raise SpecError(f"cannot be read as TOML: {type(error).__name__}", file=label) from None


def parse_acceptance(text: str, label: str = ACCEPTANCE_FILE, specs: SpecSet | None = None) -> tuple[Acceptance, ...]:
    """The rows of an acceptance file's TOML ``text``; the first mistake is a SpecError naming
    ``label``, the entry and the field."""
    specs = specs or load_specs()
    document = _decode(text, label)
    for key in document:
        if key != "acceptance":
            raise SpecError(f"unknown table [{key}]", file=label, hint="the file holds [acceptance.ID] tables")
    entries = document.get("acceptance", {})
    if not isinstance(entries, dict):
        raise SpecError("[acceptance] must hold [acceptance.ID] tables", file=label)
    rows = []
    for entry, table in entries.items():
        try:
            if not _ID_PATTERN.fullmatch(entry):
                raise _fail(entry, "bad id: use 1 to 64 lower-case letters, digits, '.', '-' and '_'")
            if not isinstance(table, dict):
                raise _fail(entry, f"must be a table [acceptance.{entry}]")
            rows.append(_row(entry, table, specs))
        except SpecError as error:
            raise error.located(file=label) from None
    return tuple(rows)


def load_acceptance(path: str | Path | None = None, specs: SpecSet | None = None) -> tuple[Acceptance, ...]:
    """The built-in acceptance table, or the file at ``path``, validated against the spec files."""
    if path is None:
        data = (resources.files("roofline") / "data" / "acceptance.toml").read_bytes()
        label = ACCEPTANCE_FILE
    else:
        label = str(path)
        data = read_spec_bytes(path, label)
    return parse_acceptance(decode_spec_text(data, label), label, specs)
