"""The printable course: every chapter's built content on one page, self-check answers open.

``printable_chapter`` takes one chapter's rendered HTML (what MkDocs puts in ``page.content``, after
every hook) and makes it fit to stand beside the others on ``print/``:

- every ``id`` gets the chapter's slug in front (``kv-cache--paging``), and every in-page link
  follows, so footnotes and figure references still land in their own chapter;
- every relative address is rebased from the chapter's URL onto the print page's;
- every ``<details>`` (the self-check answers, folded tables) is open;
- the widgets (Run cells, calculators) become one line pointing at the chapter online, since
  they need the page's Python; the glossary links and "What comes next" are dropped, as a
  book needs neither.

Nothing here knows a chapter by name: the hook passes the chapters in nav order.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from bs4 import BeautifulSoup, Tag

#: The widget roots the build writes (sitegen/markers.py, sitegen/widgets.py), each with what the
#: print page calls it: paper can run none of them.
WIDGETS = {"form.rf-calc": "calculator", "div.rf-cell": "Run cell", "section.rf-quiz": "quiz"}
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


@dataclass(frozen=True)
class Chapter:
    """One chapter as the print page takes it: its URL (``chapters/kv-cache/``), title and HTML."""

    url: str
    title: str
    html: str

    @property
    def slug(self) -> str:
        return self.url.strip("/").rsplit("/", 1)[-1]


def rebase(address: str, source_url: str, target_url: str) -> str:
    """``address`` as written on the page at ``source_url``, rewritten for the page at ``target_url``
    (both relative to the site's root, ending in ``/``). Absolute addresses and fragments are kept."""
    if not address or address.startswith(("#", "/")) or _SCHEME.match(address):
        return address
    path, hash_, fragment = address.partition("#")
    if not path:
        return address
    resolved = posixpath.normpath(posixpath.join(source_url, path))
    relative = posixpath.relpath(resolved, target_url.rstrip("/") or ".")
    if path.endswith("/") and not relative.endswith("/"):
        relative += "/"
    return relative + hash_ + fragment


def printable_chapter(chapter: Chapter, print_url: str) -> str:
    """One chapter's content, ready for the print page (see the module's docstring)."""
    soup = BeautifulSoup(chapter.html, "html.parser")
    prefix = chapter.slug + "--"
    # The generated "What comes next" section: its heading up to the next heading of its level or the end.
    heading = soup.find(id="what-comes-next")
    if isinstance(heading, Tag):
        for sibling in list(heading.find_next_siblings()):
            if sibling.name in ("h1", "h2") or "footnote" in (sibling.get("class") or []):
                break
            sibling.decompose()
        heading.decompose()
    online = rebase("./", chapter.url, print_url)
    for selector, kind in WIDGETS.items():
        for widget in soup.select(selector):
            note = soup.new_tag("p", attrs={"class": "print-widget"})
            note.string = f"[A {kind} stands here in the chapter online: {chapter.title}, {online}]"
            widget.replace_with(note)
    for link in soup.select("a.glossary-term"):
        link.unwrap()
    for details in soup.find_all("details"):
        details["open"] = ""
    for element in soup.find_all(True):
        if element.get("id"):
            element["id"] = prefix + element["id"]
        for attribute in ("href", "src"):
            value = element.get(attribute)
            if not isinstance(value, str):
                continue
            if value.startswith("#"):
                element[attribute] = "#" + prefix + value[1:]
            else:
                element[attribute] = rebase(value, chapter.url, print_url)
        for attribute in ("aria-labelledby", "aria-describedby", "for", "aria-controls"):
            value = element.get(attribute)
            if isinstance(value, str) and value:
                element[attribute] = " ".join(prefix + part for part in value.split())
    return str(soup)


def printable_course(chapters: list[Chapter], print_url: str) -> str:
    """Every chapter in turn, each in a section that starts on a new sheet when printed."""
    parts = []
    for number, chapter in enumerate(chapters, start=1):
        body = printable_chapter(chapter, print_url)
        parts.append(
            f'<section class="print-chapter" id="chapter-{number}" aria-label="Chapter {number}">{body}</section>'
        )
    return "\n".join(parts)
