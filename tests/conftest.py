"""Test-session setup: the sibling scripts (chromium, serve, build_wheel, …) import by name,
and every browser test module gets the ``browser`` fixture from here."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Debian's Chromium for one test module: a sync Playwright session must end before another
    starts in this thread, so each module that drives a browser gets its own."""
    playwright_sync = pytest.importorskip("playwright.sync_api")
    from chromium import launch

    with playwright_sync.sync_playwright() as playwright:
        launched = launch(playwright)
        yield launched
        launched.close()
