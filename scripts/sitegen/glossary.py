"""The glossary: its terms (``docs/glossary.toml``), its page, and a link from each term's first use on a page.

Each ``[[term]]`` has a ``name``, a ``definition``, optional ``also`` (other spellings that count as a
use) and an optional ``chapter`` (the page that teaches it). The glossary page lists them
(``{{ nav.glossary }}``); every chapter page gets, at build time, a link from the first use of each
term to its entry, with the definition as the link's title (a tooltip). A use is a whole-word
match in running text; nothing inside code, headings, links, formulas, question summaries,
admonition titles, buttons, forms or widgets is linked, since a link there would break the markup
or read as noise. A spelling written in lower case also matches with a capital first letter.

Bad entries raise GlossaryError with one line naming the file, the entry and the field.
"""

from __future__ import annotations

import html
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

#: Elements whose text is never linked (and whose descendants are not either).
SKIP_TAGS = frozenset(
    {"a", "code", "pre", "kbd", "samp", "script", "style", "svg", "math", "summary", "button", "label"}
    | {"select", "option", "textarea", "h1", "h2", "h3", "h4", "h5", "h6", "figcaption", "title", "template"}
)
#: Classes that mark formulas (KaTeX's output, arithmatex's wrapper), admonition titles and the widgets.
SKIP_CLASSES = ("katex", "arithmatex", "admonition-title", "rf-", "roofline-run", "roofline-chart", "footnote")
VOID_TAGS = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)
_TAG = re.compile(
    r"<(?P<close>/)?(?P<name>[A-Za-z][A-Za-z0-9-]*)(?P<attrs>(?:[^>\"']|\"[^\"]*\"|'[^']*')*)>|<!--.*?-->", re.S
)
_CLASS = re.compile(r"""\bclass\s*=\s*(?:"([^"]*)"|'([^']*)')""")
#: Attributes whose value says "leave this element alone": hidden widget state and aria-hidden copies.
_HIDDEN = re.compile(r"""\baria-hidden\s*=\s*["']?true""")


class GlossaryError(ValueError):
    """A bad glossary entry; one line naming the file, the entry and the field."""


@dataclass(frozen=True)
class Term:
    name: str
    definition: str
    also: tuple[str, ...] = ()
    chapter: str = ""

    @property
    def anchor(self) -> str:
        """The entry's id on the glossary page: ``kv-cache`` for "KV cache"."""
        return re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")

    @property
    def spellings(self) -> tuple[str, ...]:
        """Every spelling that counts as a use, a lower-case one also with its first letter capitalised."""
        out: list[str] = []
        for spelling in (self.name, *self.also):
            out.append(spelling)
            if spelling[:1].islower():
                out.append(spelling[:1].upper() + spelling[1:])
        return tuple(dict.fromkeys(out))


def load_terms(path: Path) -> list[Term]:
    """The terms of ``path`` in file order; GlossaryError on a missing field, a duplicate or a clash."""
    where = path.name if path.parent.name != "docs" else f"docs/{path.name}"
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise GlossaryError(f"{where}: not valid TOML: {error}") from None
    entries = data.get("term")
    if not isinstance(entries, list) or not entries:
        raise GlossaryError(f"{where}: no [[term]] entries; add one with name and definition")
    terms: list[Term] = []
    seen: dict[str, str] = {}
    for number, entry in enumerate(entries, start=1):
        label = f"{where}: term {number}"
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise GlossaryError(f"{label}: 'name' is missing or empty; give the term as the glossary heads it")
        label = f"{where}: term {name!r}"
        definition = entry.get("definition")
        if not isinstance(definition, str) or len(definition.split()) < 5:
            raise GlossaryError(f"{label}: 'definition' is missing or under five words; define the term in a sentence")
        also = entry.get("also", [])
        if not isinstance(also, list) or not all(isinstance(item, str) and item.strip() for item in also):
            raise GlossaryError(f"{label}: 'also' must be a list of non-empty spellings, such as [\"KV caches\"]")
        chapter = entry.get("chapter", "")
        if not isinstance(chapter, str):
            raise GlossaryError(f"{label}: 'chapter' must be a page path such as \"chapters/kv-cache/index.md\"")
        unknown = set(entry) - {"name", "definition", "also", "chapter"}
        if unknown:
            raise GlossaryError(f"{label}: unknown field {sorted(unknown)[0]!r}; use name, definition, also, chapter")
        term = Term(name.strip(), " ".join(definition.split()), tuple(item.strip() for item in also), chapter)
        for spelling in (term.name, *term.also):
            if spelling in seen:
                raise GlossaryError(f"{label}: the spelling {spelling!r} is also term {seen[spelling]!r}'s; keep one")
            seen[spelling] = term.name
        terms.append(term)
    anchors = [term.anchor for term in terms]
    for term in terms:
        if anchors.count(term.anchor) > 1:
            raise GlossaryError(f"{where}: term {term.name!r}: its anchor {term.anchor!r} is another term's too")
    return terms


def glossary_markdown(terms: Iterable[Term], titles: dict[str, str], page: str = "glossary.md") -> str:
    """The glossary page's entries, alphabetically: a heading with the term's anchor, its definition,
    the other spellings, and a link to the chapter that teaches it (``titles``: page -> its title)."""
    depth = page.count("/")
    up = "../" * depth
    lines: list[str] = []
    for term in sorted(terms, key=lambda t: t.name.lower()):
        lines.append(f"## {term.name} {{#{term.anchor}}}\n")  # h2 under the page's h1: no level skipped
        lines.append(term.definition + "\n")
        extras = []
        if term.also:
            extras.append("Also written: " + ", ".join(term.also) + ".")
        if term.chapter:
            if term.chapter not in titles:
                raise GlossaryError(
                    f"docs/glossary.toml: term {term.name!r}: 'chapter' {term.chapter!r} is not a chapter in the nav"
                )
            extras.append(f"Taught in [{titles[term.chapter]}]({up}{term.chapter}).")
        if extras:
            lines.append(" ".join(extras) + "\n")
    return "\n".join(lines)


def _skipped(name: str, attrs: str) -> bool:
    if name in SKIP_TAGS or _HIDDEN.search(attrs):
        return True
    match = _CLASS.search(attrs)
    if match:
        classes = (match.group(1) or match.group(2) or "").split()
        return any(c.startswith(SKIP_CLASSES) for c in classes)
    return False


def link_first_uses(text: str, terms: Iterable[Term], href: Callable[[Term], str]) -> tuple[str, list[str]]:
    """``text`` (a page's HTML) with each term's first use in running text linked to ``href(term)``,
    and the names of the terms linked, in order.

    Walks the markup as tags and text: a stack of open elements says whether the text at hand lies
    inside a skipped element (SKIP_TAGS, SKIP_CLASSES, aria-hidden). Only text nodes change.
    """
    terms = list(terms)
    by_spelling = {spelling: term for term in terms for spelling in term.spellings}
    if not by_spelling:
        return text, []
    # Longest first, so "KV cache" wins over a shorter spelling that starts the same way.
    alternatives = "|".join(re.escape(s) for s in sorted(by_spelling, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])")
    done: set[str] = set()
    linked: list[str] = []
    stack: list[tuple[str, bool]] = []  # (tag name, skipped here or above)
    out: list[str] = []

    def link(segment: str) -> str:
        def one(match: re.Match[str]) -> str:
            term = by_spelling[match.group(0)]
            if term.name in done:
                return match.group(0)
            done.add(term.name)
            linked.append(term.name)
            return (
                f'<a class="glossary-term" href="{html.escape(href(term))}" title="{html.escape(term.definition)}">'
                f"{match.group(0)}</a>"
            )

        return pattern.sub(one, segment)

    position = 0
    for match in _TAG.finditer(text):
        segment = text[position : match.start()]
        skipping = bool(stack) and stack[-1][1]
        out.append(segment if skipping or not segment.strip() else link(segment))
        out.append(match.group(0))
        position = match.end()
        name = (match.group("name") or "").lower()
        if not name:
            continue  # a comment
        if match.group("close"):
            # Pop to the matching element; a stray end tag pops nothing.
            for index in range(len(stack) - 1, -1, -1):
                if stack[index][0] == name:
                    del stack[index:]
                    break
            continue
        attrs = match.group("attrs") or ""
        if name in VOID_TAGS or attrs.rstrip().endswith("/"):
            continue
        parent = bool(stack) and stack[-1][1]
        stack.append((name, parent or _skipped(name, attrs)))
        if name in ("script", "style"):
            # Their bodies are raw text: skip straight to the end tag.
            end = re.compile(rf"</{name}\s*>", re.I).search(text, position)
            stop = end.start() if end else len(text)
            out.append(text[position:stop])
            position = stop
    tail = text[position:]
    out.append(tail if (stack and stack[-1][1]) or not tail.strip() else link(tail))
    return "".join(out), linked
