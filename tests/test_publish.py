"""Published under a sub-path on a plain static host, the site still works in Chromium.

Two builds, served by one plain server (no COOP/COEP, no gzip: a GitHub Pages
project site), each under its own sub-path, with the site's 404.html for any
missing address as such hosts do:

- ``/roofline/``: built here with ``SITE_URL=https://owner.example/roofline/``, the
  right path on another host and port, as a build made for publishing is;
- ``/forgot/``: the tests' one built site (``conftest.site``), whose ``site_url`` is
  its own server's address on another port, at the root: a ``site_url`` that does
  not match where it is served, as for an owner who forgot ``SITE_URL``.

Every page loads with no failed request; the chapter's charts, math, Run cell (Stop
included) and calculator work; links and instant navigation work; and the 404 page
is styled and links into the site from any depth.
"""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar
from urllib.parse import unquote, urlsplit

import pytest

import serve
import support
from bench_pages import site_pages
from chromium import CHROMIUM_PATH

pytestmark = [pytest.mark.browser, pytest.mark.slow]
playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = "chapters/prefill-vs-decode/"
PUBLISHED_URL = "https://owner.example/roofline/"
BOOT_MS = 90_000
STEP_MS = 20_000

if not CHROMIUM_PATH.exists():
    pytest.skip("Debian's chromium is not installed (.ci/run installs it)", allow_module_level=True)


class SubPathHost(http.server.SimpleHTTPRequestHandler):
    """A plain static host: each built site under its own first path segment; 404.html for the rest."""

    mounts: ClassVar[dict[str, Path]] = {}
    extensions_map: ClassVar[dict[str, str]] = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".mjs": "text/javascript",
        ".wasm": "application/wasm",
    }

    def _mount(self) -> tuple[Path | None, str]:
        path = unquote(urlsplit(self.path).path)
        first, _, rest = path.lstrip("/").partition("/")
        return self.mounts.get(first), rest

    def translate_path(self, path: str) -> str:
        site, rest = self._mount()
        if site is None:
            return str(Path("/nonexistent-host-root") / "missing")
        return str(site / rest)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        site, _ = self._mount()
        if code != 404 or site is None:
            super().send_error(code, message, explain)
            return
        body = (site / "404.html").read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def copyfile(self, source, outputfile) -> None:
        try:
            super().copyfile(source, outputfile)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser stopped reading (the test moved on): not a failure, and no traceback in the log

    def log_message(self, *args: object) -> None:
        pass


def build(site: Path, site_url: str, tests_site) -> None:
    """A build as a publisher makes it: ``SITE_URL`` set, mkdocs.yml reading it with ``!ENV``. Of a copy
    of the tests' site's checkout (conftest), so its wheel and snapshot are the ones already cached,
    and from the figures/ that site's build has just regenerated there (``ROOFLINE_FIGURES=skip``:
    the same bytes, without computing every page a second time)."""
    root = support.copy_checkout(site.parent / "repo", source=tests_site.root)
    done = support.mkdocs_build(root, site, site_url, figures="skip")
    assert done.returncode == 0, done.stderr[-4000:]


@dataclass
class Host:
    url: str  # http://127.0.0.1:PORT/
    sites: dict[str, Path]  # sub-path -> built site


@pytest.fixture(scope="module")
def host(tmp_path_factory, site) -> Iterator[Host]:
    published = tmp_path_factory.mktemp("published") / "site"
    build(published, PUBLISHED_URL, site)
    sites = {"roofline": published, "forgot": site.directory}
    handler = type("Host", (SubPathHost,), {"mounts": sites})
    server = serve.SiteServer(("127.0.0.1", 0), handler)  # its listen queue: a plain host's is long too
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield Host(f"http://127.0.0.1:{server.server_port}/", sites)
    server.shutdown()


class Watched:
    """A page whose failed requests (network errors and HTTP errors) are recorded."""

    def __init__(self, browser: object, **options: object) -> None:
        self.context = browser.new_context(**options)
        self.page = self.context.new_page()
        self.failed: list[str] = []
        self.context.on("requestfailed", self._request_failed)
        self.context.on("response", self._response)

    def _request_failed(self, request: object) -> None:
        # Chromium reports a worker's HEAD request as aborted once its headers are in (the
        # runtime checks its files with HEAD); an answered HEAD is not a failed request.
        if request.method == "HEAD" and request.response() is not None:
            return
        # Without isolation a Run polls a blob: URL the page revokes on Stop (worker.mjs,
        # RevokedURLSignal): that read failing is the signal, and it never reaches the host.
        if request.url.startswith(support.OFF_THE_NETWORK):
            return
        self.failed.append(f"{request.method} {request.url} ({request.failure})")

    def _response(self, response: object) -> None:
        if response.status >= 400:
            self.failed.append(f"{response.request.method} {response.url} {response.status}")

    def close(self) -> None:
        self.context.close()


def styled(page: object) -> bool:
    """Material's stylesheet is applied (the header sticks to the top)."""
    return page.evaluate("getComputedStyle(document.querySelector('.md-header')).position") == "sticky"


def test_the_build_says_where_it_is_published(host) -> None:
    published = host.sites["roofline"]
    assert f"<loc>{PUBLISHED_URL}{CHAPTER}</loc>" in (published / "sitemap.xml").read_text()
    headers = (published / "_headers").read_text()
    assert "Cross-Origin-Opener-Policy: same-origin" in headers
    assert "Cross-Origin-Embedder-Policy: require-corp" in headers


@pytest.mark.parametrize("mount", ["roofline", "forgot"])
def test_every_page_loads_with_no_failed_request(browser, host, mount) -> None:
    watched = Watched(browser, viewport={"width": 390, "height": 844})
    pages = [path for path in site_pages(host.sites[mount]) if path != "404.html"]
    assert len(pages) >= 8
    for path in pages:
        watched.page.goto(f"{host.url}{mount}/{path}", wait_until="load")
        assert styled(watched.page), path
        # Lazy parts fetch as the reader scrolls: go to the end so they load too.
        watched.page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
        watched.page.wait_for_load_state("networkidle")
        # Leaving while Python still downloads would abort those requests: let it finish.
        for cell in watched.page.locator("[data-rf-cell]").all():
            expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    assert watched.failed == []
    watched.close()


def test_charts_math_run_cell_and_calculator_work_under_the_sub_path(browser, host) -> None:
    watched = Watched(browser)
    page = watched.page
    page.goto(host.url + "roofline/" + CHAPTER)
    assert page.evaluate("crossOriginIsolated") is False
    # Math: rendered at build time, laid out by KaTeX's stylesheet (its MathML is visually hidden).
    assert page.locator(".arithmatex .katex").count() >= 5
    assert page.evaluate("getComputedStyle(document.querySelector('.katex-mathml')).position") == "absolute"
    # Charts: each becomes an interactive Vega view once scrolled to.
    charts = page.locator(".roofline-chart")
    assert charts.count() >= 3
    for index in range(charts.count()):
        charts.nth(index).scroll_into_view_if_needed()
        expect(charts.nth(index)).to_have_attribute("data-state", "interactive", timeout=STEP_MS)
        expect(charts.nth(index).locator("svg.marks")).to_be_visible()
    # The Run cell: runs the program, and Stop without isolation restarts Python.
    cell = page.locator("[data-rf-cell]")
    expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    cell.locator("[data-rf-action=run]").click()
    expect(cell).to_have_attribute("data-state", "ready", timeout=STEP_MS)
    program = ROOT / "docs" / CHAPTER / "programs" / "h100_decode_prefill.py"
    cpython = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, check=True).stdout
    assert cell.locator(".rf-output").text_content() == cpython
    cell.locator("textarea").fill("print('before the loop', flush=True)\nwhile True:\n    pass\n")
    cell.locator("[data-rf-action=run]").click()
    expect(cell.locator(".rf-output")).to_have_text("before the loop\n", timeout=STEP_MS)
    cell.locator("[data-rf-action=stop]").click()
    # Stop swaps in the standby Python booted beside the run, or boots a new one (its "restarting" note
    # shows only while that boot lasts, which on a quiet machine may be too short to see): either way
    # the cell is ready again and the next Run runs in a live Python.
    expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    expect(cell.locator(".rf-output")).to_have_text("before the loop\n")
    cell.locator("textarea").fill("print('after Stop')\n")
    cell.locator("[data-rf-action=run]").press("Enter")
    expect(cell.locator(".rf-output")).to_have_text("after Stop\n", timeout=BOOT_MS)
    expect(cell.locator(".rf-status")).to_contain_text("Finished in")
    # The calculator: a new number of users changes the answer.
    form = page.locator("[data-rf-calc]")
    before = form.locator("[data-rf-out=total]").text_content()
    page.locator("#rf-decode_speed-users").fill("64")
    expect(form.locator("[data-rf-out=total]")).not_to_have_text(before, timeout=STEP_MS)
    assert watched.failed == []
    watched.close()


@pytest.mark.parametrize("mount", ["roofline", "forgot"])
def test_links_and_instant_navigation_work_under_the_sub_path(browser, host, mount) -> None:
    watched = Watched(browser)
    page = watched.page
    page.goto(f"{host.url}{mount}/")
    # Material takes over links once it has read the sitemap, a moment after load.
    page.wait_for_load_state("networkidle")
    page.evaluate("window.__sameDocument = true")
    page.get_by_role("link", name="2. The KV Cache").first.click()
    page.wait_for_url(f"{host.url}{mount}/chapters/kv-cache/")
    expect(page.locator("h1")).to_contain_text("The KV Cache")
    # Instant navigation swapped the content in: the document (and this mark) survived.
    assert page.evaluate("window.__sameDocument") is True
    page.get_by_role("link", name="How the numbers are computed").first.click()
    page.wait_for_url(f"{host.url}{mount}/reference/formulas/")
    # The address changes first; the content follows once fetched.
    expect(page.locator("h1")).to_contain_text("How the numbers are computed")
    assert page.locator(".katex").count() > 10
    assert page.evaluate("window.__sameDocument") is True
    assert watched.failed == []
    watched.close()


@pytest.mark.parametrize(
    ("mount", "missing"),
    [
        ("roofline", "chapters/no-such-chapter/deeper/"),
        ("roofline", "typo"),
        ("forgot", "reference/x/y/z/"),
        ("forgot", "typo"),
    ],
)
def test_the_404_page_is_styled_and_links_into_the_site_from_any_depth(browser, host, mount, missing) -> None:
    watched = Watched(browser)
    page = watched.page
    response = page.goto(f"{host.url}{mount}/{missing}")
    assert response.status == 404
    # A root that had to be found from the sitemap reloads the page once; wait for the settled one.
    page.wait_for_load_state("networkidle")
    assert styled(page)
    hrefs = page.eval_on_selector_all(".md-nav__link[href]", "links => links.map((link) => link.href)")
    assert f"{host.url}{mount}/chapters/kv-cache/" in hrefs
    page.get_by_role("link", name="1. Prefill vs Decode").first.click()
    page.wait_for_url(f"{host.url}{mount}/{CHAPTER}")
    expect(page.locator("h1")).to_contain_text("Prefill vs Decode")
    assert [failure for failure in watched.failed if f"{host.url}{mount}/{missing} 404" not in failure] == []
    watched.close()


@pytest.mark.parametrize(
    ("missing", "probes"),
    [
        # No folder of the site in it: the nearest few folders are asked, never one per segment.
        ("typo/" + "x/" * 1500 + "end", 5),
        ("a/" * 40, 5),
        # A folder of the site in it, however deep: the address alone says where the root is.
        ("chapters/" + "y/" * 800, 0),
    ],
)
def test_the_404_page_asks_a_bounded_number_of_folders_at_any_depth(browser, host, missing, probes) -> None:
    watched = Watched(browser)
    page = watched.page
    # The 404 page's probes are synchronous requests; Material's own sitemap reads are not counted.
    page.add_init_script(
        """window.__probes = [];
        const open = XMLHttpRequest.prototype.open;
        XMLHttpRequest.prototype.open = function (method, url, async) {
          if (async === false) window.__probes.push(String(url));
          return open.apply(this, arguments);
        };"""
    )
    response = page.goto(f"{host.url}forgot/{missing}")
    assert response.status == 404
    page.wait_for_load_state("networkidle")
    assert styled(page)
    assert page.evaluate("window.__rfSiteRoot") == "/forgot/"
    asked = page.evaluate("window.__probes")
    assert len(asked) <= probes and all(url.endswith("sitemap.xml") for url in asked), asked
    hrefs = page.eval_on_selector_all(".md-nav__link[href]", "links => links.map((link) => link.href)")
    assert f"{host.url}forgot/chapters/kv-cache/" in hrefs
    watched.close()
