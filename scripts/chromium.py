"""Debian's Chromium, launched by Playwright the one way every test and benchmark here does it.

Import as a sibling script (``sys.path`` holds ``scripts/``). Never ``playwright
install``: it downloads a browser, and these machines reach no such host.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

CHROMIUM_PATH = Path("/usr/bin/chromium")
#: Below this much /dev/shm Chromium keeps its shared memory in /tmp instead.
MIN_SHARED_MEMORY_BYTES = 1 << 30


def small_shared_memory(path: str = "/dev/shm") -> bool:
    """Whether ``path`` (where Chromium keeps the memory its processes share) is too small for it: a
    container's default is 64 MB, and Chromium's renderers crash when it fills (a renderer that dies
    while Playwright opens a page leaves that call waiting for good). Without it, not small."""
    try:
        return shutil.disk_usage(path).total < MIN_SHARED_MEMORY_BYTES
    except OSError:
        return False


#: Headless-friendly flags; without the networking ones Chromium keeps calling home,
#: and on this closed network those calls fail noisily.
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    *(("--disable-dev-shm-usage",) if small_shared_memory() else ()),
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
