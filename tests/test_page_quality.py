"""Every page as a reader meets it: accessible in light and dark, charts answer a tap.

axe-core (pinned in package.json) checks every built page at 390 px and at 1280 px:
as the page stands once its widgets have mounted and the browser is idle, before
any scrolling (what a keyboard reader meets first), in the scheme the reader's
system prefers (dark on the phone, light on the desktop); and again in the other
scheme, switched by the header's toggle (which redraws every chart), once Run has
been pressed twice and every lazily drawn part is there. So each scheme is
checked at each width, with one Python boot a page. No serious or critical
violation may remain, and no page may log an error or a warning on the way, a Run
pressed twice included. The chapter's wide table and the charts are checked as a
reader would use them on a phone. The site is the tests' one build (the widget test
page and the worked example chapter included), served by scripts/serve.py's handler,
as ``make serve`` does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_pages import AXE, axe_violations, site_pages
from chromium import CHROMIUM_PATH
from support import STEP_MS

pytestmark = [pytest.mark.browser, pytest.mark.slow]
playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

CHAPTER = "chapters/prefill-vs-decode/"
PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True}
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
BOOT_MS = 120_000  # Python's first boot on a loaded machine, the page's other work beside it

if not CHROMIUM_PATH.exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)
if not AXE.is_file():
    pytest.skip("node_modules lacks axe-core; run `make setup`", allow_module_level=True)


@pytest.fixture
def served(site) -> tuple[str, Path]:
    """The tests' one built site (``conftest.site``), served by scripts/serve.py's handler."""
    return site.isolated, site.directory


def _listen_for_problems(page) -> list[str]:
    """Every uncaught error and every console warning or error the page logs, as lines."""
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"{page.url}: uncaught {error}"))
    page.on(
        "console",
        lambda message: (
            problems.append(f"{page.url}: console.{message.type}: {message.text}")
            if message.type in ("warning", "error")
            else None
        ),
    )
    return problems


def _mounted_and_idle(page) -> None:
    """Every Run cell has Python ready, the calculators' own Python is up with no answer on its way,
    and scroll-cues.js has measured every sideways region."""
    for cell in page.locator("[data-rf-cell]").all():
        expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    if page.locator("[data-rf-calc]").count():
        expect(page.locator("html")).to_have_attribute("data-rf-calc-runtime", "ready", timeout=BOOT_MS)
        busy = page.locator("[data-rf-calc][data-state=computing], [data-rf-calc][data-state=waiting]")
        expect(busy).to_have_count(0, timeout=STEP_MS)
    expect(page.locator('[data-rf-watched="pending"]')).to_have_count(0, timeout=STEP_MS)


def _run_twice(page) -> None:
    """Press Run on every cell twice, from the keyboard: a re-run replaces the output the page is watching.

    The key, not a pointer: running text below the first screen is laid out only when it comes
    near it (course.css, content-visibility), so the blocks above a cell can still grow in the
    frame after Playwright scrolls to it, and a click aimed before that lands beside the button.
    """
    for cell in page.locator("[data-rf-cell]").all():
        for _ in range(2):
            cell.locator("[data-rf-action=run]").press("Enter")
            expect(cell).to_have_attribute("data-state", "ready", timeout=STEP_MS)
            expect(cell.locator(".rf-status")).to_contain_text("Finished in", timeout=STEP_MS)


def _scroll_through(page) -> None:
    """Scroll the whole page, so lazily drawn parts (charts, marked scroll regions) are there too."""
    height = page.evaluate("document.body.scrollHeight")
    for y in range(0, height, 800):
        page.evaluate(f"window.scrollTo(0, {y})")
    page.wait_for_load_state("networkidle")
    # Charts swap their static picture for the drawn view: check the page once they have.
    # A fast scroll can pass a chart without it being seen; bring each one into view, in the page:
    # Playwright's own scroll first waits for the chart to hold still, which a chart being drawn for
    # the new scheme may not do within its timeout on a loaded machine (CI saw 30 s pass so).
    page.evaluate(
        "(async () => { for (const chart of document.querySelectorAll('.roofline-chart')) {"
        " chart.scrollIntoView({ block: 'center' }); await new Promise((r) => setTimeout(r, 50)); } })()"
    )
    # A figure laid out for the first time as it nears the screen (course.css, content-visibility) can
    # push the next chart off screen before it is seen: bring each one still waiting back into view.
    pending = page.locator('.roofline-chart[data-state="pending"]')
    for _ in range(20):
        # In the page, not through a locator: the chart may be drawn between the check and the scroll.
        if not page.evaluate(
            "(() => { const chart = document.querySelector('.roofline-chart[data-state=\"pending\"]');"
            " chart?.scrollIntoView({ block: 'center' }); return chart !== null; })()"
        ):
            break
        page.wait_for_timeout(500)
    try:
        expect(pending).to_have_count(0, timeout=STEP_MS)
    except AssertionError:
        # Name the charts, and whether Vega's libraries ever arrived, so that a failure says why.
        waiting = page.evaluate(
            "[[...document.querySelectorAll('.roofline-chart[data-state=\"pending\"]')].map((c) => c.dataset.figure),"
            " typeof window.vegaEmbed === 'function']"
        )
        raise AssertionError(f"{page.url}: charts never drawn {waiting[0]}; vega-embed loaded: {waiting[1]}") from None
    expect(page.locator('[data-rf-watched="pending"]')).to_have_count(0, timeout=STEP_MS)
    page.evaluate("window.scrollTo(0, 0)")
    page.wait_for_timeout(300)


def _switch_scheme(page, palette: str) -> None:
    """Switch the colour scheme with the header's toggle, as a reader does, and wait until every
    drawn chart has been drawn again in it (charts.js and vega.mjs mark each drawing's scheme)."""
    page.locator("form[data-md-component=palette] label:visible").first.click()
    expect(page.locator("body")).to_have_attribute("data-md-color-scheme", palette)
    # Lay out everything: Chromium keeps the old scheme's computed colours in a part skipped by
    # content-visibility (course.css) until it nears the screen, and axe would read those; a reader
    # only ever sees such a part once it has been styled afresh.
    page.add_style_tag(content="* { content-visibility: visible !important; }")
    scheme = "dark" if palette == "slate" else "light"
    stale = page.locator(
        f'.roofline-chart[data-state="interactive"]:not([data-scheme="{scheme}"]),'
        f' [data-rf-draw="vega"][data-state="drawn"]:not([data-scheme="{scheme}"])'
    )
    expect(stale).to_have_count(0, timeout=STEP_MS)


#: Each width loads every page in the scheme a reader's system prefers, then switches to the other
#: with the header's toggle: each scheme is checked at each width, with one Python boot a page.
VARIANTS = {"390px": ("dark", PHONE), "1280px": ("light", DESKTOP)}
PALETTES = {"light": "default", "dark": "slate"}
#: Each width's pages are dealt into this many shares, each a test of its own, so that parallel
#: workers (make test) can check them at once; every page is in one share of each width.
SHARES = 3


@pytest.mark.cost(40)
@pytest.mark.parametrize("share", range(SHARES), ids=lambda share: f"share {share + 1} of {SHARES}")
@pytest.mark.parametrize("size", list(VARIANTS))
def test_no_serious_or_critical_axe_violation_on_any_page(browser, served, size, share) -> None:
    """Per page: as loaded, in the system's scheme; then, switched to the other scheme, with Run
    pressed twice and the page scrolled through (so every lazily drawn part is there, drawn in that
    scheme). Switched back before the next page: Material keeps a reader's choice from page to page."""
    base, directory = served
    scheme, device = VARIANTS[size]
    other = "light" if scheme == "dark" else "dark"
    context = browser.new_context(color_scheme=scheme, **device)
    page = context.new_page()
    problems = _listen_for_problems(page)
    found = {}
    pages = site_pages(directory)
    assert len(pages) >= 9
    for path in pages[share::SHARES]:
        page.goto(base + path)
        expect(page.locator("body")).to_have_attribute("data-md-color-scheme", PALETTES[scheme])
        _mounted_and_idle(page)
        found[(path, scheme, "as loaded")] = axe_violations(page)
        _switch_scheme(page, PALETTES[other])
        _run_twice(page)
        _scroll_through(page)
        found[(path, other, "scrolled through")] = axe_violations(page)
        page.locator("form[data-md-component=palette] label:visible").first.click()
        expect(page.locator("body")).to_have_attribute("data-md-color-scheme", PALETTES[scheme])
    context.close()
    assert {where: violations for where, violations in found.items() if violations} == {}
    assert problems == []


def test_the_chapter_table_scrolls_with_a_cue_and_from_the_keyboard(browser, served) -> None:
    base, _ = served
    context = browser.new_context(**PHONE)
    page = context.new_page()
    page.goto(base + CHAPTER)
    region = page.locator(".md-typeset__scrollwrap").first
    region.scroll_into_view_if_needed()
    expect(region).to_have_attribute("data-rf-scrolls", "more")
    expect(region).to_have_attribute("tabindex", "0")
    expect(region).to_have_attribute("role", "region")
    expect(page.locator(".rf-scroll-hint").first).to_be_visible()
    # From the keyboard: focus it and press the right arrow until its far edge shows. Not a fixed
    # count: each press scrolls smoothly, and on a loaded machine (a test suite with Lighthouse beside
    # it) 40 presses once left the table short of its end.
    region.focus()
    for _ in range(400):
        if region.get_attribute("data-rf-scrolls") == "end":
            break
        page.keyboard.press("ArrowRight")
    expect(region).to_have_attribute("data-rf-scrolls", "end")
    context.close()


def test_a_tap_on_a_chart_mark_shows_its_tooltip(browser, served) -> None:
    base, _ = served
    context = browser.new_context(**PHONE)
    page = context.new_page()
    page.goto(base + CHAPTER)
    chart = page.locator('.roofline-chart[data-figure="roofline"]')
    chart.scroll_into_view_if_needed()
    expect(chart).to_have_attribute("data-state", "interactive", timeout=STEP_MS)
    # The dot for prefill, the one mark with that name: tap its centre.
    dot = chart.locator("svg g.mark-symbol.role-mark path").last
    box = dot.bounding_box()
    page.touchscreen.tap(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    tooltip = page.locator("#vg-tooltip-element")
    expect(tooltip).to_be_visible()
    expect(tooltip).to_contain_text("prefill")
    expect(tooltip).to_contain_text("compute")
    context.close()
