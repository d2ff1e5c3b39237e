"""The chapter's charts in Debian's Chromium: interactive, themed, lazy, and local.

On the tests' one built site (``conftest.site``, whose ``site_url`` is its
server's origin, as instant navigation needs). Every context records its
requests; none may leave the server.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from chromium import CHROMIUM_PATH
from support import BOOT_MS  # a calculator's chart waits for Python's first boot

pytestmark = [pytest.mark.browser, pytest.mark.slow]
playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = "chapters/prefill-vs-decode/"
CHARTS = ".roofline-chart"
WAIT_MS = 30_000

if not CHROMIUM_PATH.exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)


@pytest.fixture(scope="module")
def base(site) -> str:
    return site.isolated


def in_chromium(browser, base: str, body: Callable[[Callable[..., object]], None]) -> None:
    """Run ``body(visit)`` in the session's Chromium (``conftest.browser``), then check no request left
    the test server. ``visit(path, **context_options)`` opens a page in a new context; every context
    is closed at the end."""
    urls: list[str] = []
    contexts: list[object] = []

    def visit(path: str = CHAPTER, **options: object):
        context = browser.new_context(viewport={"width": 1280, "height": 900}, **options)
        contexts.append(context)
        context.on("request", lambda request: urls.append(request.url))
        page = context.new_page()
        page.goto(base + path)
        return page

    try:
        body(visit)
    finally:
        for context in contexts:
            context.close()
    origin = urlsplit(base).netloc
    foreign = [u for u in urls if not u.startswith(("data:", "blob:")) and urlsplit(u).netloc != origin]
    assert foreign == [], f"requests to other origins: {foreign}"


def scroll_through(page) -> None:
    """Bring every chart near the viewport, as a reader scrolling down would."""
    for chart in page.locator(CHARTS).all():
        chart.scroll_into_view_if_needed()


def test_charts_turn_interactive_with_tooltips_and_no_actions_menu(browser, base):
    def body(visit):
        page = visit()
        scroll_through(page)
        expect(page.locator(f'{CHARTS}[data-state="interactive"]')).to_have_count(4, timeout=WAIT_MS)
        assert page.locator(".vega-embed .vega-actions, .vega-embed details").count() == 0
        assert page.locator(f"{CHARTS} img").first.is_hidden()  # the static SVG steps aside
        bar = page.locator("#figure-decode-by-precision .roofline-chart__view svg .mark-rect path").first
        bar.scroll_into_view_if_needed()
        bar.hover()
        tooltip = page.locator("#vg-tooltip-element")
        expect(tooltip).to_be_visible(timeout=WAIT_MS)
        expect(tooltip).to_contain_text("tokens/s")

    in_chromium(browser, base, body)


def test_charts_follow_the_colour_scheme(browser, base):
    def body(visit):
        page = visit(color_scheme="light")
        chart = page.locator("#figure-roofline")
        chart.scroll_into_view_if_needed()
        expect(chart.locator(".roofline-chart")).to_have_attribute("data-state", "interactive", timeout=WAIT_MS)
        label = chart.locator(".role-axis-title text").first
        light = label.get_attribute("fill")
        page.locator("label.md-header__button[for^='__palette']:visible").click()
        expect(page.locator("body")).to_have_attribute("data-md-color-scheme", "slate")
        expect(label).not_to_have_attribute("fill", light, timeout=WAIT_MS)

    in_chromium(browser, base, body)


@pytest.mark.parametrize(
    "chart",
    [
        "#figure-roofline .roofline-chart",  # a figure (charts.js)
        "form[data-rf-calc=decode_speed] [data-rf-draw=vega]",  # a calculator's output (runtime/vega.mjs)
    ],
    ids=["figure", "calculator"],
)
def test_a_chart_switched_while_it_draws_ends_in_the_new_scheme(browser, base, chart: str):
    """The redraw on a switch covers drawn charts only; one being drawn read the old colours when it
    started, so it must draw itself again. vega-embed is served with a wrapper that holds each
    drawing for a while after its colours were read, and the reader switches then."""
    slow = (
        ";(() => { const embed = window.vegaEmbed; window.vegaEmbed = async (...args) => {"
        " window.embedding = true; await new Promise((r) => setTimeout(r, 1500)); return embed(...args); }; })();"
    )

    def held_back(route) -> None:
        response = route.fetch()
        route.fulfill(response=response, body=response.text() + slow)

    def body(visit):
        page = visit(color_scheme="light")
        page.route("**/vega-embed.min.js", held_back)
        drawn = page.locator(chart)
        drawn.scroll_into_view_if_needed()
        page.wait_for_function("window.embedding === true", timeout=BOOT_MS)
        page.locator("label.md-header__button[for^='__palette']:visible").click()
        expect(page.locator("body")).to_have_attribute("data-md-color-scheme", "slate")
        expect(drawn).to_have_attribute("data-scheme", "dark", timeout=WAIT_MS)
        dark_text = page.evaluate("getComputedStyle(document.body).getPropertyValue('--md-default-fg-color').trim()")
        label = drawn.locator(".role-axis-title text").first
        expect(label).to_have_attribute("fill", dark_text, timeout=WAIT_MS)

    in_chromium(browser, base, body)


def test_charts_survive_instant_navigation(browser, base):
    def body(visit):
        page = visit()
        page.evaluate("window.__sameDocument = true")
        page.locator("nav.md-nav--primary a", has_text="Hardware").first.click()
        expect(page.locator("h1")).to_have_id("hardware")
        page.locator("nav.md-nav--primary a", has_text="Prefill vs Decode").first.click()
        expect(page.locator(CHARTS)).to_have_count(4)  # the URL changes before the content does
        assert page.evaluate("window.__sameDocument === true"), "instant navigation fell back to a full load"
        scroll_through(page)
        expect(page.locator(f'{CHARTS}[data-state="interactive"]')).to_have_count(4, timeout=WAIT_MS)

    in_chromium(browser, base, body)


def test_without_javascript_the_static_svgs_show(browser, base):
    def body(visit):
        page = visit(java_script_enabled=False)
        images = page.locator(f"{CHARTS} img")
        expect(images).to_have_count(4)
        for image in images.all():
            image.scroll_into_view_if_needed()
            expect(image).to_be_visible()
            page.wait_for_function("img => img.complete && img.naturalWidth > 0", arg=image.element_handle())

    in_chromium(browser, base, body)


def test_pages_without_charts_do_not_load_vega(browser, base):
    def body(visit):
        page = visit("reference/hardware/")
        page.wait_for_load_state("networkidle")
        assert page.evaluate("typeof window.vega") == "undefined"

    in_chromium(browser, base, body)
