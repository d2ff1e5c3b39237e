"""MkDocs glue for what makes the chapters one course; the work is in scripts/sitegen.

- on_config:         read the glossary's terms and the nav's chapters;
- on_page_markdown:  end every chapter with "What comes next", the next chapter in nav order
                     (sitegen/course.py), so no page types its own;
- on_page_content:   link each glossary term's first use on a chapter page to its entry
                     (sitegen/glossary.py), and keep the chapter's final HTML for the print page;
- on_page_context:   "last updated" from git for every page (sitegen/history.py; Material shows
                     ``page.meta.revision_date`` under the content), and the print page's body:
                     every chapter with its self-check answers open (sitegen/printable.py).

Listed last in mkdocs.yml, so it sees each page after the math and the widgets are rendered.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

#: The print page, relative to docs/.
PRINT_PAGE = "print.md"
GLOSSARY_PAGE = "glossary.md"

_state: dict[str, Any] = {}


def on_config(config: Any) -> None:
    from sitegen.course import GLOSSARY_TERMS
    from sitegen.glossary import GlossaryError, load_terms
    from sitegen.navigation import listed_chapters, title_and_summary

    docs = Path(config["docs_dir"])
    try:
        _state["terms"] = load_terms(docs / GLOSSARY_TERMS)
    except GlossaryError as error:
        raise PluginError(str(error)) from None
    chapters = listed_chapters(config["nav"])
    _state["chapters"] = chapters
    _state["titles"] = {page: title_and_summary(docs, page) for page in chapters}
    _state["html"] = {}
    _state["docs"] = docs
    _state["root"] = docs.resolve().parent


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    from sitegen.course import next_section

    if page.file.src_uri in _state["chapters"]:
        return markdown.rstrip("\n") + next_section(_state["chapters"], page.file.src_uri, _state["titles"])
    return markdown


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    from sitegen.glossary import link_first_uses

    source = page.file.src_uri
    if source not in _state["chapters"]:
        return html
    glossary = posixpath.relpath(GLOSSARY_PAGE.removesuffix(".md") + "/", page.url.rstrip("/") or ".")
    html, _ = link_first_uses(html, _state["terms"], lambda term: f"{glossary}/#{term.anchor}")
    _state["html"][source] = (page.url, page.title, html)
    return html


def _sources(page: Any) -> list[str]:
    """The git pathspecs of the files a page is made from, relative to the repository: a page folder's
    whole folder (its page, generator, programs and calculators, not its tests), the glossary's terms,
    or the page's own file."""
    source = Path(page.file.abs_src_path)
    docs = _state["docs"]
    if source.name == "index.md" and (source.parent / "page.py").is_file():
        paths = [source.parent]
    elif page.file.src_uri == PRINT_PAGE:
        paths = [source, *(docs / chapter for chapter in _state["chapters"])]
    elif page.file.src_uri == GLOSSARY_PAGE:
        paths = [source, docs / "glossary.toml"]
    else:
        paths = [source]
    root = _state["root"]
    resolved = [path.resolve() for path in paths]
    out = [str(path.relative_to(root)) if path.is_relative_to(root) else str(path) for path in resolved]
    # A folder's own tests change nothing a reader sees: git leaves them out of the date.
    folders = [path for path, full in zip(out, resolved, strict=True) if full.is_dir()]
    return out + [f":(exclude,glob){path}/**/test_*.py" for path in folders]


def on_page_context(context: Any, page: Any, config: Any, nav: Any) -> Any:
    from sitegen.history import last_updated
    from sitegen.printable import Chapter, printable_course

    date = last_updated(_state["root"], _sources(page))
    if date:
        page.meta["revision_date"] = f"Last updated {date}"
    if page.file.src_uri == PRINT_PAGE:
        missing = [chapter for chapter in _state["chapters"] if chapter not in _state["html"]]
        if missing:
            raise PluginError(f"course hook: docs/{PRINT_PAGE}: no built content for docs/{missing[0]}")
        chapters = [Chapter(*_state["html"][chapter]) for chapter in _state["chapters"]]
        page.content = (page.content or "") + printable_course(chapters, page.url)
    return context
