"""The chapters as one course: the landing page, "What comes next", the glossary and its links,
the printable course, the footer and each page's "last updated", and "What changed".

The unit tests run the shared machinery (``sitegen.course``, ``sitegen.glossary``,
``sitegen.printable``, ``sitegen.history``) on small inputs; the ``slow`` ones read the tests'
built site (``conftest.site``), where the worked example chapter is the last in the nav.
"""

from __future__ import annotations

import json
import posixpath
import re
import subprocess
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

import support
from sitegen.course import (
    NEXT_HEADING,
    WORDS_PER_MINUTE,
    interview_question,
    next_section,
    prose_words,
    reading_minutes,
)
from sitegen.glossary import GlossaryError, Term, glossary_markdown, link_first_uses, load_terms
from sitegen.history import changes_markdown, last_updated
from sitegen.printable import Chapter, printable_chapter, rebase

ROOT = support.ROOT
TERMS = load_terms(ROOT / "docs" / "glossary.toml")
#: Where a glossary link must never stand.
FORBIDDEN = ("code", "pre", "h1", "h2", "h3", "h4", "h5", "h6", "summary", "a")


def text_of(element) -> str:
    return " ".join(element.get_text(" ").split())


def nav_slugs(site) -> list[str]:
    """The tests' site's chapters in its nav's order (the worked example last)."""
    nav = (site.root / "mkdocs.yml").read_text(encoding="utf-8")
    pages = [line.split(": ", 1)[1].strip() for line in nav.splitlines() if "chapters/" in line and ": " in line]
    return [page.split("/")[1] for page in pages]


def one_line(error: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(error.value)
    assert "\n" not in message, message
    return message


# Reading time and the question each chapter answers -----------------------------------


def test_reading_time_counts_prose_words_only_and_rounds_up_at_238_a_minute() -> None:
    page = (
        "---\nsummary: not read.\n---\n\n# Two words\n\n"
        "<!-- roofline:run-cell programs/x.py -->\n"
        "```python\nprint('code is not prose')\n```\n\n"
        "A value {{ n.speed }} counts once; \\(N b\\) and a [link](https://example.com/a/b) text.\n\n"
        "\\[\nT = 2 N\n\\]\n\n{{ md.figure-x }}\n\n[^src]: A source is not read.\n"
    )
    # "Two words" + "A value <v> counts once; and a link text." = 2 + 9
    assert prose_words(page) == 11
    assert WORDS_PER_MINUTE == 238
    assert reading_minutes(0) == 1
    assert reading_minutes(238) == 1
    assert reading_minutes(239) == 2
    for slug in support.site_chapters()[:-1]:
        source = (ROOT / "docs" / "chapters" / slug / "index.md").read_text(encoding="utf-8")
        assert 10 <= reading_minutes(prose_words(source)) <= 60, slug


def test_each_chapter_has_a_question_for_the_home_page() -> None:
    box = '!!! note "Interview signal"\n    **"Why is decode slow?"**\n\n    **Weak:** ...\n'
    assert interview_question("# X\n\n" + box) == '"Why is decode slow?"'
    assert interview_question("# X\n") == ""
    for slug in support.site_chapters()[:-1]:
        source = (ROOT / "docs" / "chapters" / slug / "index.md").read_text(encoding="utf-8")
        assert interview_question(source).endswith('?"'), slug


def test_what_comes_next_follows_the_nav_and_the_last_chapter_points_home() -> None:
    chapters = ["chapters/a/index.md", "chapters/b/index.md"]
    titles = {"chapters/a/index.md": ("A title", "what a teaches."), "chapters/b/index.md": ("B title", "b.")}
    first = next_section(chapters, "chapters/a/index.md", titles)
    assert f"## {NEXT_HEADING} {{#what-comes-next}}" in first
    assert "Chapter 2, [B title](../b/index.md): b." in first
    last = next_section(chapters, "chapters/b/index.md", titles)
    assert "[course's home page](../../index.md)" in last and "[glossary](../../glossary.md)" in last


# The glossary ---------------------------------------------------------------------------


def test_every_glossary_term_is_defined_and_listed_with_its_chapter() -> None:
    chapters = [f"chapters/{slug}/index.md" for slug in support.site_chapters()[:-1]]
    titles = {page: page for page in chapters}
    markdown = glossary_markdown(TERMS, titles)
    assert len(TERMS) >= 30
    for term in TERMS:
        assert len(term.definition.split()) >= 8, term.name
        assert f"## {term.name} {{#{term.anchor}}}\n\n{term.definition}\n" in markdown
        assert term.chapter in chapters, term.name


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[[term]]\nname = "x"\n', "docs/glossary.toml: term 'x': 'definition' is missing or under five words"),
        ('[[term]]\ndefinition = "a b c d e"\n', "docs/glossary.toml: term 1: 'name' is missing or empty"),
        (
            '[[term]]\nname = "a"\ndefinition = "one two three four five"\n'
            '[[term]]\nname = "b"\nalso = ["a"]\ndefinition = "one two three four five"\n',
            "docs/glossary.toml: term 'b': the spelling 'a' is also term 'a''s; keep one",
        ),
        (
            '[[term]]\nname = "a"\ndefinition = "one two three four five"\nsee = "b"\n',
            "docs/glossary.toml: term 'a': unknown field 'see'; use name, definition, also, chapter",
        ),
    ],
)
def test_a_bad_glossary_entry_is_one_line_naming_it(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "docs").mkdir()
    path = tmp_path / "docs" / "glossary.toml"
    path.write_text(toml, encoding="utf-8")
    with pytest.raises(GlossaryError) as error:
        load_terms(path)
    assert one_line(error).startswith(message)


def test_only_the_first_use_in_running_text_is_linked() -> None:
    terms = [Term("KV cache", "The cached keys and values of every layer.", ("KV caches",)), Term("decode", "d " * 6)]
    html = (
        '<h2 id="kv">The KV cache</h2><p><code>KV cache</code> and <a href="x">KV cache</a>'
        '<span class="katex">decode</span></p><details class="question"><summary>KV cache?</summary>'
        "<p>Decode reads the KV caches.</p></details><p>The KV cache again; decode.</p>"
    )
    out, linked = link_first_uses(html, terms, lambda term: f"../glossary/#{term.anchor}")
    soup = BeautifulSoup(out, "html.parser")
    links = soup.select("a.glossary-term")
    assert [(a.get_text(), a["href"]) for a in links] == [
        ("Decode", "../glossary/#decode"),
        ("KV caches", "../glossary/#kv-cache"),
    ]
    assert links[1]["title"] == "The cached keys and values of every layer."
    assert linked == ["decode", "KV cache"]
    for link in links:
        assert link.find_parent(FORBIDDEN) is None
    # Nothing else changed: the same text, less the two links.
    assert soup.get_text() == BeautifulSoup(html, "html.parser").get_text()


# The printable course -----------------------------------------------------------------------


def test_a_chapter_on_the_print_page_keeps_its_links_ids_and_answers() -> None:
    assert rebase("../kv-cache/#paging", "chapters/prefill-vs-decode/", "print/") == "../chapters/kv-cache/#paging"
    assert rebase("../../figures/a.svg", "chapters/x/", "print/") == "../figures/a.svg"
    assert rebase("https://example.com/", "chapters/x/", "print/") == "https://example.com/"
    html = (
        '<h1 id="t">T</h1><p>See <a href="#fn:1">1</a> and <a href="../y/">y</a>.</p>'
        '<details class="question"><summary>Q?</summary><p>The answer is <strong>4</strong>.</p></details>'
        '<form class="rf-calc" id="c"><input id="c-a"></form>'
        '<section class="rf-quiz" data-rf-module="quiz.py"><form><input id="q-a"></form></section>'
        '<h2 id="what-comes-next">What comes next</h2><p>Chapter 2.</p><div class="footnote" id="fn:1">s</div>'
    )
    out = BeautifulSoup(printable_chapter(Chapter("chapters/x/", "1. X", html), "print/"), "html.parser")
    assert out.select_one("details")["open"] == ""
    assert [e["id"] for e in out.find_all(id=True)] == ["x--t", "x--fn:1"]
    assert out.select_one('a[href="#x--fn:1"]') and out.select_one('a[href="../chapters/y/"]')
    assert out.select_one("form") is None and out.select_one("[data-rf-module]") is None
    assert [text_of(note) for note in out.select(".print-widget")] == [
        "[A calculator stands here in the chapter online: 1. X, ../chapters/x/]",
        "[A quiz stands here in the chapter online: 1. X, ../chapters/x/]",
    ]
    assert "What comes next" not in text_of(out) and "The answer is 4 ." in text_of(out)


# Dates from git ---------------------------------------------------------------------------


def test_last_updated_is_the_newest_commit_date_and_nothing_without_history(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("this checkout has no git history")
    wanted = subprocess.run(
        ["git", "-C", str(ROOT), "log", "-1", "--format=%cs", "--", "docs/chapters/kv-cache"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", wanted)
    assert last_updated(ROOT, ["docs/chapters/kv-cache"]) == wanted
    (tmp_path / "page.md").write_text("# x\n", encoding="utf-8")
    assert last_updated(tmp_path, ["page.md"]) is None
    assert changes_markdown(tmp_path).startswith("This copy of the site was built without its git history")


def test_what_changed_lists_dated_spec_measurement_and_chapter_changes() -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("this checkout has no git history")
    markdown = changes_markdown(ROOT)
    days = re.findall(r"^## (\d{4}-\d{2}-\d{2})$", markdown, re.M)
    assert days and days == sorted(days, reverse=True)
    entries = re.findall(r"^- \*\*(.+?)\*\*: ", markdown, re.M)
    assert entries and all(re.match(r"(spec|measurement|chapter)", entry) for entry in entries)


# The built site ---------------------------------------------------------------------------


@pytest.mark.slow
def test_every_built_chapter_ends_with_what_comes_next_and_its_links_resolve(site) -> None:
    slugs = nav_slugs(site)
    assert sorted(slugs) == sorted(support.site_chapters())
    for number, slug in enumerate(slugs, start=1):
        soup = site.soup(f"chapters/{slug}/")
        heading = soup.select_one("article h2#what-comes-next")
        assert heading is not None and text_of(heading) == f"{NEXT_HEADING} ¶", slug
        assert heading.find_next_sibling("h2") is None, f"{slug}: 'What comes next' is not the last section"
        paragraph = heading.find_next_sibling("p")
        links = paragraph.select("a[href]:not(.glossary-term)")
        for link in links:
            target = posixpath.normpath(posixpath.join(f"chapters/{slug}/", link["href"].split("#")[0]))
            assert (site.directory / target / "index.html").is_file() or target == ".", (slug, link["href"])
        if number < len(slugs):
            assert links[0]["href"] == f"../{slugs[number]}/", slug
            assert text_of(paragraph).startswith(f"Chapter {number + 1}, ")
        else:
            assert [link["href"] for link in links] == ["../../", "../../glossary/", "../../print/"]


@pytest.mark.slow
def test_each_terms_first_use_on_each_chapter_links_to_its_glossary_entry(site) -> None:
    glossary = site.soup("glossary/")
    anchors = {heading["id"] for heading in glossary.select("article h2[id]")}
    assert anchors == {term.anchor for term in TERMS}
    for term in TERMS:
        entry = glossary.select_one(f"h2#{term.anchor}")
        assert text_of(entry.find_next_sibling("p")) == term.definition
    by_spelling = {spelling: term for term in TERMS for spelling in term.spellings}
    pattern = re.compile(
        r"(?<![\w-])(?:" + "|".join(re.escape(s) for s in sorted(by_spelling, key=len, reverse=True)) + r")(?![\w-])"
    )
    for slug in support.site_chapters():
        soup = site.soup(f"chapters/{slug}/")
        article = soup.select_one("article")
        links = article.select("a.glossary-term")
        assert len(links) >= (1 if slug == support.example_slug() else 10), slug
        names = []
        for link in links:
            assert link.find_parent(FORBIDDEN) is None, (slug, str(link))
            assert link.find_parent(class_=re.compile(r"^(katex|arithmatex|rf-)")) is None, (slug, str(link))
            anchor = link["href"].rsplit("#", 1)[1]
            assert link["href"] == f"../../glossary/#{anchor}" and anchor in anchors, (slug, link["href"])
            names.append(by_spelling[link.get_text()].name)
        assert len(names) == len(set(names)), f"{slug}: a term is linked twice"
        # The first use of each linked term in the article's running text is the link itself.
        first: dict[str, object] = {}
        for string in article.find_all(string=True):
            parent = string.parent
            other = string.find_parent("a")
            if other is not None and "glossary-term" not in (other.get("class") or []):
                continue
            if parent.find_parent(FORBIDDEN[:-1]) or parent.name in FORBIDDEN[:-1]:
                continue
            if parent.find_parent(class_=re.compile(r"^(katex|arithmatex|rf-|footnote|admonition-title)")):
                continue
            for match in pattern.finditer(str(string)):
                first.setdefault(by_spelling[match.group(0)].name, parent)
        for link, name in zip(links, names, strict=True):
            assert first[name] is link, f"{slug}: {name!r} is used before its link"


@pytest.mark.slow
def test_search_ranks_the_glossary_first_and_leaves_the_print_page_out(site) -> None:
    index = json.loads((site.directory / "search" / "search_index.json").read_text(encoding="utf-8"))
    boosts = {doc["location"]: doc.get("boost") for doc in index["docs"]}
    assert boosts["glossary/"] == 10 and boosts["glossary/#kv-cache"] == 10
    assert not any(location.startswith("print/") for location in boosts)


@pytest.mark.slow
def test_the_printable_course_holds_every_chapter_and_every_self_check_answer(site) -> None:
    printed = site.soup("print/")
    sections = printed.select("article section.print-chapter")
    slugs = nav_slugs(site)
    assert len(sections) == len(slugs)
    for section, slug in zip(sections, slugs, strict=True):
        chapter = site.soup(f"chapters/{slug}/")
        assert text_of(section.select_one("h1")) == text_of(chapter.select_one("article h1")), slug
        answers = chapter.select("article details.question")
        shown = section.select("details.question")
        if slug == support.example_slug():
            assert not answers  # the README's worked example has no self-check
        else:
            assert answers, f"{slug} has no self-check"
        assert len(shown) == len(answers), slug
        for online, paper in zip(answers, shown, strict=True):
            assert paper.has_attr("open"), slug
            assert text_of(paper) == text_of(online), slug
        assert section.select("form.rf-calc, div.rf-cell") == [], slug
    ids = [element["id"] for element in printed.find_all(id=True)]
    assert len(ids) == len(set(ids)), "the print page repeats an id"
    stylesheets = [link["href"] for link in printed.select('link[rel="stylesheet"]')]
    assert any(href.endswith("stylesheets/print.css") for href in stylesheets)
    css = (site.directory / "stylesheets" / "print.css").read_text(encoding="utf-8")
    assert "@media print" in css and ".rf-calc" in css and "details::details-content" in css


@pytest.mark.slow
def test_every_page_has_the_footer_and_the_landing_page_speaks_to_a_learner(site) -> None:
    for path in ("", "chapters/kv-cache/", "glossary/", "print/", "changes/", "about/"):
        footer = text_of(site.soup(path).select_one("footer .md-copyright"))
        assert "Released under the MIT licence by the maintainers of the roofline repository." in footer, path
        assert "Found an error? Open an issue in the repository this site is built from" in footer, path
    chapter_footer = text_of(site.soup("chapters/kv-cache/").select_one("footer .md-copyright"))
    assert "naming this page's source, docs/chapters/kv-cache/index.md" in chapter_footer
    home = site.soup("")
    headings = [text_of(h) for h in home.select("article h2")]
    assert headings[:3] == ["Who it is for ¶", "What you need first ¶", "The chapters ¶"]
    assert "238 words a minute" in text_of(home)
    # A copy without git history (the tests' site) says no date rather than a wrong one.
    has_history = (site.root / ".git").exists()
    assert (site.soup("chapters/kv-cache/").select_one(".md-source-file") is not None) == has_history


def test_the_nav_lists_are_the_ones_pages_may_name() -> None:
    from sitegen.course import NAV_LISTS, nav_lists

    nav = [{"Chapters": [{"1.": f"chapters/{slug}/index.md"} for slug in support.site_chapters()[:-1]]}]
    lists = nav_lists(ROOT, ROOT / "docs", nav)
    assert tuple(lists) == NAV_LISTS
    assert lists["glossary"].count("\n## ") + lists["glossary"].startswith("## ") == len(TERMS)


@pytest.mark.slow
@pytest.mark.browser
def test_a_printed_chapter_shows_every_answer_and_no_widget_then_folds_back(browser, site) -> None:
    """As the browser prints: print media, then the beforeprint event (print.js opens every answer);
    afterprint folds back the ones the reader had closed."""
    expect = pytest.importorskip("playwright.sync_api").expect
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(site.isolated + "chapters/kv-cache/")
        answers = page.locator("article details.question > :not(summary)")
        count = answers.count()
        assert count >= 5
        expect(answers.first).to_be_hidden()
        page.emulate_media(media="print")
        page.evaluate("window.dispatchEvent(new Event('beforeprint'))")
        for index in range(count):
            expect(answers.nth(index)).to_be_visible()
        expect(page.locator("article .rf-calc").first).to_be_hidden()
        expect(page.locator("article .rf-cell").first).to_be_hidden()
        page.evaluate("window.dispatchEvent(new Event('afterprint'))")
        page.emulate_media(media="screen")
        expect(answers.first).to_be_hidden()
    finally:
        context.close()
