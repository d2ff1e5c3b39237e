"""The one error type the package raises for bad input, and its one-line message."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: Longest echo of a bad value in a message; a 5,000-digit number must not fill the screen.
SHOWN_LENGTH = 60
#: Longest message and longest hint of one error line: whatever a message quotes from its input
#: (a path, a key, a library's own words), the line stays a line.
MESSAGE_LENGTH = 400


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
        #: For an id no spec file defines: its kind and id (``("gpu", "h100")``), so that
        #: ``SpecSet.locate`` can name the file it would belong in.
        self.missing: tuple[str, str] | None = None
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
            _cut(self.file),
            _cut(self.entry),
            f"field '{_cut(self.field)}'" if self.field else None,
            shortened(self.message),
        ]
        text = ": ".join(part for part in parts if part)
        if self.hint:
            text += f" ({shortened(self.hint)})"
        return one_line(text)


def _cut(text: str | None, limit: int = 200) -> str | None:
    """A name from the input (a path, an id, a key), cut so that the message stays readable."""
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def shortened(text: str, limit: int = MESSAGE_LENGTH) -> str:
    """``text`` cut to ``limit`` characters, keeping its start and its end (where a message says
    what was expected): ``"must be … got 'aaa…aaa' (see --help)"``."""
    if len(text) <= limit:
        return text
    head = (limit - 1) * 2 // 3
    return text[:head] + "…" + text[len(text) - (limit - 1 - head) :]


def one_line(text: str) -> str:
    """``text`` with every control, format or line-separator character escaped (``\\n``, ``\\u202e``).

    An error echoes what the user typed: a file name, an id, a key. A newline in
    it must not split the one-line message, nor a terminal escape or a
    right-to-left override rewrite what the reader sees.
    """
    if text.isprintable():
        return text
    return "".join(
        char if char.isprintable() or char == " " else char.encode("unicode_escape").decode("ascii") for char in text
    )


def shown(value: object) -> str:
    """A bad value as a message echoes it: its ``repr``, cut to ``SHOWN_LENGTH`` characters."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**SHOWN_LENGTH:
        # str() of a huge int is slow, and refused past 4,300 digits: count digits from the bits.
        return f"a number of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    if isinstance(value, (dict, list)):
        return "a table" if isinstance(value, dict) else "an array"
    text = repr(value)
    return text if len(text) <= SHOWN_LENGTH else text[: SHOWN_LENGTH - 1] + "…"


def entry_label(kind: str, entry_id: str) -> str:
    """An entry named as its table header reads in the file, so a search finds it: ``[gpu."h100-sxm"]``."""
    return f'[{kind}."{entry_id}"]'


def did_you_mean(word: str, choices: Iterable[str]) -> str | None:
    """A 'did you mean' hint naming the closest choice, or None when nothing is close.

    A prefix match wins first (``h100`` -> ``h100-sxm``), then difflib's ratio.
    """
    options = sorted(choices)
    word = word[:100]  # no id is longer; difflib's cost grows with the length
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
    return SpecError(f"unknown {kind} {shown(name)}", hint=hint)
