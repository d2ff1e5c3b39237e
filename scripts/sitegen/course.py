"""The course as a whole: reading times, the question each chapter answers, and "What comes next".

Reading time is a chapter's prose words over the average adult's silent reading rate for
non-fiction, 238 words a minute (Brysbaert 2019, below), rounded up to a whole minute::

    minutes = ceil(words / 238)

Prose words are what a reader reads as text: the page's Markdown less its front matter, HTML
comments, fenced code, formulas, footnote definitions (the sources), link addresses and the
generated tables and figures (``{{ md.… }}``); a quoted value (``{{ n.… }}``) counts as one word.
The calculators, Run cells and self-checks take longer than reading, which the home page says.

Source: Marc Brysbaert, "How many words do we read per minute? A review and meta-analysis of
reading rate", Journal of Memory and Language 109 (2019) 104047, doi:10.1016/j.jml.2019.104047:
238 words a minute for silent reading of English non-fiction.
"""

from __future__ import annotations

import math
import posixpath
import re
from pathlib import Path
from typing import Any

#: Brysbaert (2019): adults' mean silent reading rate for English non-fiction.
WORDS_PER_MINUTE = 238
#: The heading of the section the build appends to every chapter (the tests look for it).
NEXT_HEADING = "What comes next"
#: What ``{{ nav.NAME }}`` may name (``nav_lists`` writes each).
NAV_LISTS = ("chapters", "reading", "glossary", "changes")
#: The glossary's terms, relative to docs/ (sitegen/glossary.py reads them).
GLOSSARY_TERMS = "glossary.toml"

_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)
_COMMENT = re.compile(r"<!--.*?-->", re.S)
_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.S | re.M)
_DISPLAY_MATH = re.compile(r"\\\[.*?\\\]|\$\$.*?\$\$", re.S)
_INLINE_MATH = re.compile(r"\\\(.*?\\\)", re.S)
_FOOTNOTE = re.compile(r"^\[\^[^\]]+\]:.*$", re.M)
_SNIPPET = re.compile(r"\{\{\s*md\.[^}]*\}\}")
_VALUE = re.compile(r"\{\{\s*[a-z]+\.[^}]*\}\}")
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_WORD = re.compile(r"[A-Za-z0-9]")
_INTERVIEW = re.compile(r'^!!! note "Interview signal"\n(?:[ \t]*\n)*[ \t]+\*\*(?P<question>"[^\n]+")\*\*', re.M)


def prose_words(markdown: str) -> int:
    """The words a reader reads in a page's Markdown (see the module's docstring for what is left out)."""
    text = _FRONT_MATTER.sub("", markdown, count=1)
    for pattern in (_COMMENT, _FENCE, _DISPLAY_MATH, _INLINE_MATH, _FOOTNOTE, _SNIPPET, _LINK_TARGET):
        text = pattern.sub(" ", text)
    text = _VALUE.sub(" value ", text)
    return sum(1 for word in text.split() if _WORD.search(word))


def reading_minutes(words: int) -> int:
    """``ceil(words / WORDS_PER_MINUTE)``, at least one minute."""
    return max(1, math.ceil(words / WORDS_PER_MINUTE))


def interview_question(markdown: str) -> str:
    """The question of the page's Interview-signal box, quotes included; ``""`` where it has none,
    or where it quotes a value (the home page cannot expand another page's values)."""
    match = _INTERVIEW.search(markdown)
    if not match or "{{" in match.group("question"):
        return ""
    return match.group("question")


def course_reading(docs: Path, chapters: list[str]) -> str:
    """One sentence: how long the chapters take to read in all."""
    words = sum(prose_words((docs / page).read_text(encoding="utf-8")) for page in chapters)
    minutes = sum(reading_minutes(prose_words((docs / page).read_text(encoding="utf-8"))) for page in chapters)
    hours, rest = divmod(minutes, 60)
    span = f"{hours} hour{'s' if hours != 1 else ''} {rest} minutes" if hours else f"{minutes} minutes"
    count = len(chapters)
    return (
        f"The {count} chapter{'s' if count != 1 else ''} hold {words:,} words of prose: about {span} of"
        f" reading at {WORDS_PER_MINUTE} words a minute, the average adult's silent reading rate for"
        " non-fiction (Brysbaert, 2019, [doi:10.1016/j.jml.2019.104047](https://doi.org/10.1016/j.jml.2019.104047))."
        " Each chapter's calculators, Run cells and self-check take longer than reading it."
    )


def next_section(chapters: list[str], page: str, titles: dict[str, tuple[str, str]]) -> str:
    """The "What comes next" section for chapter ``page``, as Markdown: the next chapter in nav order,
    linked, with its summary; after the last, a way back to the home page and its lists.

    ``chapters`` is the nav's chapter pages in order, ``titles`` page -> (title, summary). Links are
    relative to ``page``, as MkDocs resolves a Markdown link."""
    index = chapters.index(page)
    here = posixpath.dirname(page)

    def link(target: str) -> str:
        return posixpath.relpath(target, here)

    if index + 1 < len(chapters):
        following = chapters[index + 1]
        title, summary = titles[following]
        body = f"Chapter {index + 2}, [{title}]({link(following)}): {summary}"
    else:
        body = (
            f"This is the last chapter so far. The [course's home page]({link('index.md')}) lists every"
            f" chapter with the question it answers; the [glossary]({link('glossary.md')}) defines each"
            f" term, and the [printable course]({link('print.md')}) holds every chapter and every"
            " self-check answer on one page."
        )
    return f"\n\n## {NEXT_HEADING} {{#what-comes-next}}\n\n{body}\n"


def nav_lists(root: Path, docs: Path, nav: Any) -> dict[str, str]:
    """What ``{{ nav.NAME }}`` expands to: ``chapters`` (the home page's list), ``reading`` (the course's
    reading time), ``glossary`` (the glossary's entries) and ``changes`` (the "What changed" list)."""
    from .glossary import glossary_markdown, load_terms
    from .history import changes_markdown
    from .navigation import chapter_list, listed_chapters, title_and_summary

    listed = listed_chapters(nav)
    titles = {page: f"chapter {number}, {title_and_summary(docs, page)[0]}" for number, page in enumerate(listed, 1)}
    return {
        "chapters": chapter_list(docs, nav),
        "reading": course_reading(docs, listed),
        "glossary": glossary_markdown(load_terms(docs / GLOSSARY_TERMS), titles),
        "changes": changes_markdown(root),
    }
