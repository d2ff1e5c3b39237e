"""``{{ n.NAME }}``, ``{{ md.NAME }}`` and ``{{ fig.NAME }}`` in page Markdown, expanded from the generated files.

- ``n.NAME`` is a number the page's own module computed (``figures/values.json``,
  under the page's name): one page cannot quote another page's values.
- ``md.NAME`` is the body of ``figures/NAME.md`` (a table or a figure), on any page.
- ``fig.NAME`` is a cross-reference, "figure (b)", linked to ``{{ md.figure-NAME }}``
  on the same page.
- ``nav.NAME`` is a list made from mkdocs.yml's nav and the repository (``course.nav_lists``):
  ``nav.chapters``, the home page's list of chapters; ``nav.reading``, the course's reading
  time; ``nav.glossary``, the glossary's entries; ``nav.changes``, the "What changed" list.

Figures are lettered (a), (b), (c)… in the order the page embeds them, and
cross-references use the same letters, wherever they stand. An unknown name,
or anything else between ``{{`` and ``}}``, raises ShortcodeError: a typo must
stop the build, not print an empty string into the chapter.
"""

from __future__ import annotations

import difflib
import json
import re
import string
from collections.abc import Mapping
from pathlib import Path

from .output import strip_notice
from .page import LETTER

_CODE = re.compile(r"\{\{\s*(?P<kind>[a-z]+)\.(?P<name>[A-Za-z0-9_-]+)\s*\}\}")
_ANY = re.compile(r"\{\{.*?\}\}", re.S)
FIGURE_PREFIX = "figure-"


class ShortcodeError(ValueError):
    """A shortcode that names nothing the generator wrote."""


def _hint(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def figure_letters(text: str) -> dict[str, str]:
    """Figure name -> its letter, in the order ``text`` embeds them (the first embedding counts)."""
    names = [m.group("name") for m in _CODE.finditer(text) if m.group("kind") == "md"]
    figures = dict.fromkeys(name.removeprefix(FIGURE_PREFIX) for name in names if name.startswith(FIGURE_PREFIX))
    if len(figures) > len(string.ascii_lowercase):
        raise ShortcodeError(f"{len(figures)} figures on one page; letters run out at 26")
    return dict(zip(figures, string.ascii_lowercase, strict=False))


class Shortcodes:
    """The values and snippets of one generated ``figures/`` directory."""

    def __init__(self, figures: Path) -> None:
        self.figures = figures
        payload = json.loads((figures / "values.json").read_text(encoding="utf-8"))
        self.pages: Mapping[str, Mapping[str, str]] = payload["pages"]
        self.snippets = sorted(path.stem for path in figures.glob("*.md"))

    def _value(self, name: str, page: str, where: str) -> str:
        values = self.pages.get(page, {})
        if name in values:
            return values[name]
        elsewhere = sorted(other for other, names in self.pages.items() if name in names)
        if elsewhere:
            hint = f" (docs/{elsewhere[0]} has it; each page quotes only its own module's values)"
        elif not values:
            hint = f" (docs/{page} has no page.py beside it computing values)"
        else:
            hint = _hint(name, list(values))
        raise ShortcodeError(f"{where}: unknown value 'n.{name}'{hint}")

    def _snippet(self, name: str, letters: Mapping[str, str], where: str) -> str:
        if name not in self.snippets:
            raise ShortcodeError(f"{where}: unknown snippet 'md.{name}'{_hint(name, self.snippets)}")
        body = strip_notice((self.figures / f"{name}.md").read_text(encoding="utf-8"))
        return body.replace(LETTER, letters.get(name.removeprefix(FIGURE_PREFIX), "?"))

    def _reference(self, name: str, letters: Mapping[str, str], where: str) -> str:
        if name not in letters:
            shown = ", ".join(sorted(letters)) or "none"
            raise ShortcodeError(
                f"{where}: 'fig.{name}' refers to a figure this page does not show"
                f"{_hint(name, list(letters))} (it shows: {shown}; embed it with {{{{ md.figure-{name} }}}})"
            )
        return f"[figure ({letters[name]})](#figure-{name})"

    def expand(self, text: str, page: str = "", where: str = "", lists: Mapping[str, str] | None = None) -> str:
        """``text`` (the Markdown of ``page``, relative to docs/) with every shortcode replaced.

        ``lists`` holds what ``nav.NAME`` expands to. Raises ShortcodeError, naming ``where``
        (default ``docs/PAGE``), on any it cannot resolve.
        """
        lists = lists or {}
        where = where or f"docs/{page}"
        letters = figure_letters(text)

        def lookup(match: re.Match[str]) -> str:
            kind, name = match.group("kind"), match.group("name")
            if kind == "n":
                return self._value(name, page, where)
            if kind == "md":
                return self._snippet(name, letters, where)
            if kind == "fig":
                return self._reference(name, letters, where)
            if kind == "nav":
                if name not in lists:
                    raise ShortcodeError(f"{where}: unknown list 'nav.{name}'{_hint(name, list(lists))}")
                return lists[name]
            raise ShortcodeError(
                f"{where}: unknown shortcode kind '{kind}' (use n.NAME, md.NAME, fig.NAME or nav.NAME)"
            )

        expanded = _CODE.sub(lookup, text)
        leftover = _ANY.search(expanded)
        if leftover:
            raise ShortcodeError(f"{where}: malformed shortcode {leftover.group(0)!r} (use {{{{ n.NAME }}}})")
        return expanded
