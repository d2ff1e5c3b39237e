"""Debian's Chromium, launched by Playwright the one way every test and benchmark here does it.

Import as a sibling script (``sys.path`` holds ``scripts/``). Never ``playwright
install``: it downloads a browser, and these machines reach no such host.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHROMIUM_PATH = Path("/usr/bin/chromium")
#: Headless-friendly flags; without the networking ones Chromium keeps calling home,
#: and on this closed network those calls fail noisily.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def require(tool: str) -> None:
    """Stop ``tool`` with one line saying how to install the browser, when Debian's Chromium is missing
    (a fresh machine has none until ``.ci/run`` or ``apt-get`` installs it). ``launch`` calls it; a
    script that builds a site first calls it before, so that the build is not wasted."""
    if not CHROMIUM_PATH.exists():
        raise SystemExit(f"{tool}: {CHROMIUM_PATH} is missing; install Debian's Chromium (apt-get install chromium)")


def launch(playwright: Any, *, extra_args: tuple[str, ...] = (), **options: Any) -> Any:
    """A headless Chromium browser from a started Playwright (sync or async API); ``extra_args`` add flags.
    Without Debian's Chromium, one line from ``require``."""
    require("chromium.launch")
    args = [*CHROMIUM_ARGS, *extra_args]
    return playwright.chromium.launch(executable_path=str(CHROMIUM_PATH), args=args, **options)
