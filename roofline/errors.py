"""The one error type the package raises for bad input, and its one-line message."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class SpecError(ValueError):
    """Bad spec data or a bad request, reported on one line.

    The message names, where known, the file, the entry and the field, then
    what is wrong, then a hint such as the close match for a misspelling:
    ``gpus.toml: gpu 'h100-sxm': field 'memory_bytes': must be positive, got 0``.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        entry: str | None = None,
        field: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.entry = entry
        self.field = field
        self.hint = hint
        super().__init__(str(self))

    def located(self, **where: str | None) -> SpecError:
        """Return a copy that also names any of file, entry or field not yet known."""
        context = {"file": self.file, "entry": self.entry, "field": self.field}
        for key, value in where.items():
            if context[key] is None:
                context[key] = value
        return SpecError(self.message, hint=self.hint, **context)

    def __str__(self) -> str:
        parts = [
            self.file,
            self.entry,
            f"field '{self.field}'" if self.field else None,
            self.message,
        ]
        text = ": ".join(part for part in parts if part)
        if self.hint:
            text += f" ({self.hint})"
        return text


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """A 'did you mean' hint naming the closest choice, or None when nothing is close.

    A prefix match wins first (``h100`` -> ``h100-sxm``), then difflib's ratio.
    """
    options = sorted(choices)
    prefixed = [option for option in options if option.startswith(word.lower())]
    if len(prefixed) == 1:
        return f"did you mean '{prefixed[0]}'?"
    close = difflib.get_close_matches(word.lower(), options, n=1, cutoff=0.6)
    if close:
        return f"did you mean '{close[0]}'?"
    return None


def unknown_name(kind: str, name: str, choices: Iterable[str]) -> SpecError:
    """The error for a name that is not one of ``choices``, with the likely fix."""
    choices = sorted(choices)
    hint = did_you_mean(name, choices) or "choose one of " + ", ".join(choices)
    return SpecError(f"unknown {kind} '{name}'", hint=hint)
