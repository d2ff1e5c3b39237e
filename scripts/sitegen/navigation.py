"""The chapters as mkdocs.yml's ``nav`` lists them: the home page's list, and the check that none is missing.

The nav is the one hand-kept list of chapters (one line per chapter, which sets the
order). Everything else follows from it: the home page's numbered list of chapters
(``{{ nav.chapters }}`` in ``docs/index.md``), each item the chapter's own title
(its first ``# `` heading), its ``summary`` (front matter in its ``index.md``), the
question its Interview-signal box asks and its reading time (``sitegen.course``); and the
"What comes next" section at the end of every chapter (``course.next_section``).
A chapter folder the nav does not list fails the build, since MkDocs would only
log it and ship the page orphaned.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .pages import chapters

_FRONT_MATTER = re.compile(r"\A---\n(?P<body>.*?)\n---\n", re.S)
_HEADING = re.compile(r"^# (?P<title>.+)$", re.M)


class NavError(ValueError):
    """The nav and the chapter folders disagree; one line naming the page and the fix."""


def nav_pages(nav: Any) -> Iterator[str]:
    """Every page (relative to docs/) the nav names, in order, at any depth."""
    if isinstance(nav, str):
        yield nav
    elif isinstance(nav, list):
        for item in nav:
            yield from nav_pages(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            yield from nav_pages(value)


def title_and_summary(docs: Path, page: str) -> tuple[str, str]:
    """A chapter page's first ``# `` heading and the ``summary`` of its front matter."""
    text = (docs / page).read_text(encoding="utf-8")
    front = _FRONT_MATTER.match(text)
    summary = ""
    if front:
        for line in front.group("body").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "summary":
                summary = value.strip()
    heading = _HEADING.search(text[front.end() if front else 0 :])
    where = f"docs/{page}"
    if heading is None:
        raise NavError(f"{where}: a chapter page needs a '# Title' line (the home page lists it by that title)")
    if not summary:
        raise NavError(
            f"{where}: needs a summary for the home page's list of chapters: start the page with"
            " '---', 'summary: what the reader learns, in one line.', '---'"
        )
    return heading.group("title").strip(), summary


def listed_chapters(nav: Any) -> list[str]:
    """The chapter pages the nav lists, in its order."""
    return [page for page in nav_pages(nav) if page.startswith("chapters/")]


def chapter_list(docs: Path, nav: Any) -> str:
    """The home page's list of chapters, in nav order, as Markdown; NavError if the nav misses one.

    Each item: the title, linked; the summary; the question the chapter lets the reader answer
    (its Interview-signal question, where it has one); and its reading time, from its word count."""
    from .course import interview_question, prose_words, reading_minutes

    listed = listed_chapters(nav)
    for chapter in chapters(docs):
        if chapter.page not in listed:
            raise NavError(
                f"{chapter.where()} is not in mkdocs.yml's nav: add one line under Chapters,"
                f' - "{len(listed) + 1}. Its short title": {chapter.page}'
            )
    lines = []
    for number, page in enumerate(listed, start=1):
        title, summary = title_and_summary(docs, page)
        text = (docs / page).read_text(encoding="utf-8")
        question = interview_question(text)
        answers = f" It lets you answer: *{question}*" if question else ""
        minutes = reading_minutes(prose_words(text))
        time = f"About {minutes} minute{'s' if minutes != 1 else ''} to read."
        lines.append(f"{number}. [{title}]({page}):\n   {summary}\n   {time}{answers}")
    return "\n".join(lines) + "\n"
