"""Site benchmark: clean `mkdocs build` times with and without figure generation, and the
chapter page's transferred bytes.

Run: ``python scripts/bench.py site`` (or ``python scripts/bench_site.py``). Builds into
temporary directories and writes nothing in the repo.

Builds: each round builds the site from scratch three ways, interleaved so that a
noisy neighbour hits all three alike, and the fastest of each is reported (the
least disturbed; a build's spread here is about a second):
  skip      the committed figures/ as they are (ROOFLINE_FIGURES=skip): no generation;
  update    what every build does: recompute all tables and values, rewrite nothing
            unchanged, re-render an SVG only if its spec changed;
  rerender  full generation: every table, value and SVG computed again.
Goal: generation (rerender - skip) adds at most 30% or under 2 s, whichever is larger.

Transfer: the chapter loaded in Chromium from scripts/serve.py's handler, which
gzips text as a static host does, so these are the bytes sent (compressed), by
kind (HTML, CSS, JS, figures, fonts, runtime, other) once the page has loaded
and the network has been quiet for a while ("before interaction"), and again
after scrolling to the bottom, which is when the charts fetch Vega and their specs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from chromium import launch, require  # a sibling script

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = "chapters/prefill-vs-decode/"
MODES = ("skip", "update", "rerender")


def clean_build(mode: str, site: Path) -> float:
    """Seconds for one `mkdocs build --strict` into an empty ``site`` with ROOFLINE_FIGURES=mode."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "ROOFLINE_FIGURES": mode}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"mkdocs build ({mode}) failed:\n{done.stderr[-3000:]}")
    return elapsed


def bench_builds(rounds: int = 3) -> dict[str, float]:
    """Fastest clean-build seconds per mode, plus what generation adds and the goal it must meet."""
    times: dict[str, list[float]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory() as scratch:
        clean_build("update", Path(scratch) / "warm")  # first run pays for imports and disk caches
        for round_ in range(rounds):
            for mode in MODES:
                times[mode].append(clean_build(mode, Path(scratch) / f"{mode}-{round_}"))
    result = {mode: min(values) for mode, values in times.items()}
    result["generation_s"] = result["rerender"] - result["skip"]
    result["goal_s"] = max(0.3 * result["skip"], 2.0)
    result["generator_alone_s"] = bench_generator()
    return result


def bench_generator(rounds: int = 3) -> float:
    """Fastest in-process run of the whole generator with every SVG re-rendered (nothing is written)."""
    from sitegen.generate import Run, build_outputs

    build_outputs(ROOT, ROOT / "figures", rerender=True, run=Run())  # imports, vl-convert's first start
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        build_outputs(ROOT, ROOT / "figures", rerender=True, run=Run())
        best = min(best, time.perf_counter() - start)
    return best


def kind(url: str) -> str:
    """Which budget line a response belongs to."""
    path = url.split("?", 1)[0]
    if "/assets/runtime/" in path or "/javascripts/runtime/" in path:
        return "runtime"  # Pyodide, the wheel and the Run cell's own code: issue 4's budget
    if "/figures/" in path:
        return "figures"
    if path.endswith((".woff2", ".woff", ".ttf")):
        return "fonts"
    if path.endswith(".css"):
        return "css"
    if path.endswith((".js", ".mjs")):
        return "js"
    if path.endswith((".html", "/")):
        return "html"
    return "other"


def bench_transfer(site: Path, quiet_ms: int = 3000) -> dict[str, Counter]:
    """Bytes the chapter transfers, by kind: before any interaction, and after scrolling to the end."""
    from playwright.sync_api import sync_playwright

    import serve

    server = serve.make_server(site, quiet=True)  # what `make serve` sends, without its log
    origin = serve.serve_in_background(server)
    seen: list[tuple[str, int]] = []
    try:
        with sync_playwright() as playwright:
            browser = launch(playwright)
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()

            def finished(request) -> None:
                sizes = request.sizes()
                seen.append((request.url, sizes["responseBodySize"] + sizes["responseHeadersSize"]))

            page.on("requestfinished", finished)
            page.goto(origin + CHAPTER, wait_until="load")
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(quiet_ms)
            before = Counter()
            for url, size in list(seen):
                before[kind(url)] += size
            height = page.evaluate("document.body.scrollHeight")
            for y in range(0, height, 600):
                page.evaluate(f"window.scrollTo(0, {y})")
                page.wait_for_timeout(100)
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(1000)
            after = Counter()
            for url, size in seen:
                after[kind(url)] += size
            browser.close()
    finally:
        server.shutdown()
    return {"before_interaction": before, "after_scrolling": after}


def report() -> None:
    require("bench_site")  # before the builds, which the transfer figures need a browser after
    builds = bench_builds()
    skip, rerender, generation, goal = builds["skip"], builds["rerender"], builds["generation_s"], builds["goal_s"]
    print(
        f"site build (fastest of 3, clean): without generation {skip:.2f} s; with full generation {rerender:.2f} s;"
        f" typical (only changed SVGs re-rendered) {builds['update']:.2f} s"
    )
    verdict = "meets" if generation <= goal else "MISSES"
    print(
        f"  generation adds {generation:.2f} s ({generation / skip:.0%});"
        f" goal <= {goal:.2f} s (30% or 2 s, whichever is larger): {verdict};"
        f" the generator alone, warm, every SVG re-rendered: {builds['generator_alone_s']:.2f} s"
    )
    with tempfile.TemporaryDirectory() as scratch:
        site = Path(scratch) / "site"
        clean_build("update", site)
        transfer = bench_transfer(site)
    for label, counts in transfer.items():
        total = sum(counts.values())
        without_runtime = total - counts.get("runtime", 0)
        parts = ", ".join(f"{name} {counts[name] / 1e3:,.0f} kB" for name in sorted(counts))
        print(
            f"chapter transfer (compressed, as sent), {label.replace('_', ' ')}: {total / 1e3:,.0f} kB"
            f" ({without_runtime / 1e3:,.0f} kB without the Python runtime): {parts}"
        )


if __name__ == "__main__":
    report()
