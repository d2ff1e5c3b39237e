"""Fixtures for every test module: pytest finds this file at the repository's root, so the
tests in tests/ and each page folder's own tests under docs/ share it. Plain helpers are in
tests/support.py; no test module imports another.

- ``site``     the tests' site, built once per session for every test that needs a build:
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

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test`` runs one worker a core, up to four), every test that needs
    the built site or the browser runs on one worker: the site is then built once, and one Chromium
    at a time shares the cores with the other workers' package, CLI and build tests. Without xdist
    nothing changes (its marker is only named when its plugin is there)."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if {"site", "browser"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("site"))


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
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    import serve
    import support

    folder = tmp_path_factory.mktemp("tests-site")
    root = support.copy_checkout(folder / "repo", example=True, widgets=True)
    directory = folder / "site"
    isolated = serve.make_server(directory, isolated=True, quiet=True)
    plain = serve.make_server(directory, isolated=False, quiet=True)
    isolated_url = f"http://127.0.0.1:{isolated.server_port}/"
    done = support.mkdocs_build(root, directory, isolated_url)
    if done.returncode != 0:
        pytest.fail(f"the tests' site did not build:\n{done.stderr[-4000:]}", pytrace=False)
    yield Site(root, directory, serve.serve_in_background(isolated), serve.serve_in_background(plain), done.stderr)
    isolated.shutdown()
    plain.shutdown()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's Chromium, launched once for the whole session (a launch costs seconds on a loaded
    machine). Tests share nothing through it: each opens its own context, with its own cache and
    storage, and closes it. Nothing else may start a sync Playwright in this thread meanwhile."""
    playwright_sync = pytest.importorskip("playwright.sync_api")
    from chromium import CHROMIUM_PATH, launch

    if not CHROMIUM_PATH.exists():
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    with playwright_sync.sync_playwright() as playwright:
        launched = launch(playwright)
        yield launched
        launched.close()


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
