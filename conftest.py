"""Fixtures for every test module: pytest finds this file at the repository's root, so the
tests in tests/ and each page folder's own tests under docs/ share it. Plain helpers are in
tests/support.py; no test module imports another.

- ``site``     the tests' site, built once per run for every test that needs a build (under
               pytest-xdist by the first worker that needs it, and shared by all):
               this checkout copied, with the README's worked example chapter written in
               and the widget test page added (``support.copy_checkout``), built with
               ``site_url`` set to the address of the server that serves it with COOP/COEP
               (Material's instant navigation needs them to match), and served a second
               time without those headers, as a plain static host would.
- ``browser``  Debian's Chromium, launched once for the session; each test opens its own contexts.
- ``node``     Node's path, for the tests that run Pyodide or the page's modules under it.
- ``page_contents``  what every page folder's ``page.py`` computes from this checkout's specs
               (``sitegen.generate.page_contents``), computed once per session: a chapter that
               simulates takes seconds, and several modules read the same answers.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

#: tests/hang_guard.py (tests/ is on pytest's pythonpath): a test that hangs is named and made to fail.
pytest_plugins = ["hang_guard"]

#: The most a test may spend building the tests' site or waiting for another worker's build: the
#: build's own timeout (900 s, support.mkdocs_build) and the copy before it.
SITE_BUILD_S = 1200.0

#: Seconds a test takes on a quiet machine, by kind, where the test does not say (``pytest.mark.cost``).
COST_S = {"browser": 5.0, "node": 5.0, "slow": 1.5}
#: ... and a test of none of those kinds.
QUICK_S = 0.02


def pytest_report_header(config: pytest.Config) -> str:
    """The machine, at the top of the run's output, so that CI's log says what a failure ran on."""
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    try:
        shared = f"{shutil.disk_usage('/dev/shm').total / 2**30:.1f} GiB"
    except OSError:
        shared = "none"
    return f"machine: {os.cpu_count()} cores, {memory / 2**30:.0f} GiB memory, /dev/shm {shared}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test`` runs one worker a core, up to four), the longest work starts first.

    - Tests that share a module-scoped fixture (a page booted once for a module, a build) stay next
      to each other, in their order, so a worker that takes some of them sets that fixture up once.
      Each test is still handed out alone, so two workers share a long module's tests (its page then
      boots once on each). Keeping a module on one worker was measured no faster here: the whole
      suite took 542, 597 and 615 s that way, 502 to 682 s this way (2026-12-02, two cores, in the
      same hours), so the order the suite has long run in stays. pytest-xdist 3.8's ``xdist_group``
      marker would not keep them together anyway under pytest 9: it writes its group into
      ``item._nodeid``, which pytest 9 no longer reads.
    - Groups run longest first, by their tests' costs (``cost`` marker, else ``COST_S`` by kind), so
      that no long test is left to run alone at the end. ``make test`` passes
      ``--no-loadscope-reorder``: xdist would otherwise reorder its work by size.
    - The first group needs the tests' site and its worker builds it; the next ones, one a worker,
      need nothing built, so the other workers do not wait for that build.
    Without xdist nothing changes."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        groups.setdefault(_group_of(item), []).append(item)
    order = sorted(groups.values(), key=lambda group: -sum(map(_cost, group)))
    if order and _needs_the_site(order[0]):
        free = [group for group in order[1:] if not _needs_the_site(group)]
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        ahead = free[: workers - 1]
        order = [order[0], *ahead, *(group for group in order[1:] if group not in ahead)]
    items[:] = [item for group in order for item in group]


def _group_of(item: pytest.Item) -> str:
    """The module, for a test sharing a module-, class- or package-scoped fixture; else the test itself."""
    info = getattr(item, "_fixtureinfo", None)
    definitions = info.name2fixturedefs.values() if info else ()
    if any(fixture.scope in ("module", "class", "package") for chain in definitions for fixture in chain):
        return item.nodeid.split("::", 1)[0]
    return item.nodeid


def _cost(item: pytest.Item) -> float:
    marked = item.get_closest_marker("cost")
    if marked is not None:
        return float(marked.args[0])
    return next((seconds for kind, seconds in COST_S.items() if item.get_closest_marker(kind)), QUICK_S)


def _needs_the_site(group: list[pytest.Item]) -> bool:
    return any({"site", "browser"} & set(getattr(item, "fixturenames", ())) for item in group)


@dataclass
class Site:
    """The tests' built site."""

    root: Path  # the checkout it was built from: a copy, with the worked example and the widget page
    directory: Path  # the built site
    isolated: str  # its base URL with COOP/COEP (crossOriginIsolated; Stop interrupts), also its site_url
    plain: str  # its base URL without them (Stop restarts the worker)
    log: str  # the build's output

    @property
    def docs(self) -> Path:
        return self.root / "docs"

    def html(self, path: str) -> str:
        """The built page at ``path`` (``chapters/kv-cache/``, or ``""`` for the home page)."""
        return (self.directory / path / "index.html").read_text(encoding="utf-8")

    def soup(self, path: str) -> object:
        from bs4 import BeautifulSoup

        return BeautifulSoup(self.html(path), "html.parser")


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    """Built once for the whole run: under pytest-xdist the first worker that needs it builds it while
    any other waits, then each reads where it is. Its two servers are processes of their own that last
    as long as the run (a worker that finishes early must not take them down with it)."""
    import hang_guard  # the plugin above, imported by pytest by now
    import support

    shared = support.run_folder(tmp_path_factory)
    record = shared / "tests-site.json"
    # Building, or waiting for another worker's build, is not hanging: its time is not counted against
    # this test (the build's own timeout, support.mkdocs_build's, bounds it), up to SITE_BUILD_S.
    with hang_guard.extended(SITE_BUILD_S), support.exclusive(shared / "tests-site.lock"):
        if not record.exists():
            record.write_text(json.dumps(_build_the_tests_site(shared / "tests-site")), encoding="utf-8")
    built = json.loads(record.read_text(encoding="utf-8"))
    if built["failed"]:
        pytest.fail(f"the tests' site did not build:\n{built['log'][-4000:]}", pytrace=False)
    return Site(Path(built["root"]), Path(built["directory"]), built["isolated"], built["plain"], built["log"])


def _build_the_tests_site(folder: Path) -> dict[str, Any]:
    """Copy this checkout with the worked example and the widget page, serve where its build will be
    (isolated and plain), build it for the isolated address, and say where everything is."""
    import support

    root = support.copy_checkout(folder / "repo", example=True, widgets=True)
    directory = folder / "site"
    isolated = support.serve_for_run(directory, isolated=True)
    plain = support.serve_for_run(directory, isolated=False)
    done = support.mkdocs_build(root, directory, isolated)
    return {
        "root": str(root),
        "directory": str(directory),
        "isolated": isolated,
        "plain": plain,
        "log": done.stderr,
        "failed": done.returncode != 0,
    }


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's Chromium, launched once for the whole session (a launch costs seconds on a loaded
    machine). Tests share nothing through it: each opens its own context, with its own cache and
    storage, and closes it. Nothing else may start a sync Playwright in this thread meanwhile."""
    playwright_sync = pytest.importorskip("playwright.sync_api")
    import support
    from chromium import CHROMIUM_PATH, launch

    if not CHROMIUM_PATH.exists():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    # An assertion with no timeout of its own waits as long as a step may on a loaded machine, not
    # Playwright's 5 s (support.DEFAULT_MS); each context's actions likewise (support.Recorded.open).
    playwright_sync.expect.set_options(timeout=support.DEFAULT_MS)
    with playwright_sync.sync_playwright() as playwright:
        launched = support.Relaunching(playwright, launch)  # again after the hang guard kills it
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def chapter(request: pytest.FixtureRequest, browser, site) -> Iterator[object]:
    """The page of the test module's ``FOLDER`` (its chapter, from ``sitegen.pages.find``), opened on the
    tests' isolated site once for the module, Run cell ready, and checked on leaving to have asked no
    other origin for anything (``support.open_chapter``). A module that opens its page otherwise
    defines its own ``chapter``."""
    import support

    with support.open_chapter(browser, site, request.module.FOLDER.url) as page:
        yield page


@pytest.fixture(scope="session")
def node() -> str:
    """Node's path; the test is skipped where Node is not installed."""
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not installed")
    if not (Path(__file__).parent / "node_modules" / "pyodide" / "pyodide.mjs").exists():
        pytest.fail("node_modules/pyodide is missing: run `make setup` (npm ci)")
    return found


@pytest.fixture(scope="session")
def page_contents() -> dict[str, Any]:
    """Page (relative to docs/, ``chapters/<slug>/index.md``) -> its ``PageContent``, computed once from
    this checkout; read it, never change it (every test that asks shares it)."""
    from sitegen.generate import page_contents

    return page_contents(Path(__file__).resolve().parent)
