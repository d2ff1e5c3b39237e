"""``{{ n.NAME }}`` and ``{{ md.NAME }}`` in page Markdown, expanded from the generated files.

``n.NAME`` is a number from ``figures/values.json``; ``md.NAME`` is the body of
``figures/NAME.md`` (a table or a figure). An unknown name, or anything else
between ``{{`` and ``}}``, raises ShortcodeError: a typo must stop the build,
not print an empty string into the chapter.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from pathlib import Path

from .output import strip_notice

_CODE = re.compile(r"\{\{\s*(?P<kind>[a-z]+)\.(?P<name>[A-Za-z0-9_-]+)\s*\}\}")
_ANY = re.compile(r"\{\{.*?\}\}", re.S)


class ShortcodeError(ValueError):
    """A shortcode that names nothing the generator wrote."""


def _hint(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


class Shortcodes:
    """The values and snippets of one generated ``figures/`` directory."""

    def __init__(self, figures: Path) -> None:
        self.figures = figures
        payload = json.loads((figures / "values.json").read_text(encoding="utf-8"))
        self.values: Mapping[str, str] = payload["values"]
        self.snippets = sorted(path.stem for path in figures.glob("*.md"))

    def lookup(self, kind: str, name: str, where: str) -> str:
        if kind == "n":
            if name not in self.values:
                raise ShortcodeError(f"{where}: unknown value 'n.{name}'{_hint(name, list(self.values))}")
            return self.values[name]
        if kind == "md":
            if name not in self.snippets:
                raise ShortcodeError(f"{where}: unknown snippet 'md.{name}'{_hint(name, self.snippets)}")
            return strip_notice((self.figures / f"{name}.md").read_text(encoding="utf-8"))
        raise ShortcodeError(f"{where}: unknown shortcode kind '{kind}' (use n.NAME or md.NAME)")

    def expand(self, text: str, where: str = "page") -> str:
        """``text`` with every shortcode replaced; raises ShortcodeError on any it cannot resolve."""
        expanded = _CODE.sub(lambda m: self.lookup(m.group("kind"), m.group("name"), where), text)
        leftover = _ANY.search(expanded)
        if leftover:
            raise ShortcodeError(f"{where}: malformed shortcode {leftover.group(0)!r} (use {{{{ n.NAME }}}})")
        return expanded
