"""Page quality benchmarks: Lighthouse (mobile) and axe-core on every page of the built site.

Run: ``python scripts/bench_pages.py [--site DIR] [--runs N] [--page PATH ...] [--save DIR]
[--axe-only | --lighthouse-only]``
(or ``python scripts/bench.py pages``). Builds the site (unless ``--site`` names a
built one), serves it with ``scripts/serve.py``'s handler, exactly as ``make serve``
does (gzip, cache headers, COOP/COEP), and for each page prints:

- Lighthouse 12's performance and accessibility scores under its default mobile
  simulation, with FCP, LCP, total blocking time, CLS, the main-thread work, the
  DOM size and the bytes transferred (compressed, as the server sent them);
- axe-core's serious and critical violations, in the light and in the dark scheme.

Lighthouse runs through its Node CLI (pinned in package.json) on Debian's
Chromium: chrome-launcher finds it through ``CHROME_PATH``, and nothing is
downloaded. These are benchmarks to report, not timed tests: scores move with
the load on the machine, so ``--runs`` keeps the median of several runs, and prints
each run's score beside it. With ``--save DIR`` each run's whole Lighthouse report is
written there as JSON, and the page's longest main-thread tasks and the scripts that
took the most of it (Lighthouse's ``long-tasks`` and ``bootup-time``) are printed under
its line: where to look when a score drops.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

import serve  # a sibling script: scripts/ is on the path (this folder, or make setup's .pth)
from chromium import CHROMIUM_ARGS, CHROMIUM_PATH, launch, require

ROOT = Path(__file__).resolve().parent.parent
LIGHTHOUSE = ROOT / "node_modules" / "lighthouse" / "cli" / "index.js"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
#: Audits whose numeric value the report prints, with the unit it is shown in.
METRICS = {
    "first-contentful-paint": ("FCP", "ms"),
    "largest-contentful-paint": ("LCP", "ms"),
    "total-blocking-time": ("TBT", "ms"),
    "cumulative-layout-shift": ("CLS", ""),
    "mainthread-work-breakdown": ("main thread", "ms"),
    "dom-size": ("DOM", "elements"),
    "total-byte-weight": ("transferred", "bytes"),
}
#: axe impacts that fail the bar (minor and moderate ones are listed by --verbose only).
BLOCKING = ("serious", "critical")


def site_pages(site: Path) -> list[str]:
    """Every page of the built site as a path below its root (``""`` for the home page)."""
    pages = []
    for index in sorted(site.rglob("index.html")):
        relative = index.parent.relative_to(site).as_posix()
        if relative.split("/")[0] in ("assets", "search", "javascripts", "figures"):
            continue
        pages.append("" if relative == "." else relative + "/")
    if (site / "404.html").is_file():
        pages.append("404.html")
    return pages


def lighthouse(url: str) -> dict:
    """One Lighthouse run (default mobile emulation and simulated throttling) as its JSON report."""
    flags = " ".join(["--headless=new", *CHROMIUM_ARGS])
    command = [
        "node",
        str(LIGHTHOUSE),
        url,
        "--output=json",
        "--output-path=stdout",
        "--quiet",
        "--only-categories=performance,accessibility",
        f"--chrome-flags={flags}",
    ]
    env = {**os.environ, "CHROME_PATH": str(CHROMIUM_PATH)}
    for _attempt in range(2):  # on a loaded machine Lighthouse now and then fails to record its trace
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode == 0:
            break
    if done.returncode != 0:
        raise RuntimeError(f"lighthouse failed on {url}: {done.stderr.strip()[-600:]}")
    return json.loads(done.stdout)


def summarise(report: dict) -> dict[str, float]:
    """The scores and metrics this benchmark prints, from one Lighthouse report."""
    figures = {name: report["categories"][name]["score"] for name in ("performance", "accessibility")}
    for audit in METRICS:
        figures[audit] = report["audits"][audit].get("numericValue", float("nan"))
    failed = [
        audit_id
        for audit_id, audit in report["audits"].items()
        if audit.get("scoreDisplayMode") == "binary"
        and audit.get("score") == 0
        and audit_id in {ref["id"] for ref in report["categories"]["accessibility"]["auditRefs"]}
    ]
    figures["failed_accessibility_audits"] = failed
    return figures


def where_time_went(report: dict, count: int = 5) -> list[str]:
    """The ``count`` longest main-thread tasks and the scripts that took the most main thread,
    from one Lighthouse report (its ``long-tasks`` and ``bootup-time`` audits), one line each."""
    lines = []
    tasks = report["audits"].get("long-tasks", {}).get("details", {}).get("items", [])
    for task in sorted(tasks, key=lambda item: -item.get("duration", 0))[:count]:
        at = task.get("startTime", 0)
        lines.append(f"long task {task['duration']:,.0f} ms at {at:,.0f} ms: {task.get('url', '')}")
    scripts = report["audits"].get("bootup-time", {}).get("details", {}).get("items", [])
    for script in sorted(scripts, key=lambda item: -item.get("total", 0))[:count]:
        lines.append(
            f"script {script['total']:,.0f} ms (evaluation {script.get('scripting', 0):,.0f},"
            f" parse {script.get('scriptParseCompile', 0):,.0f}): {script.get('url', '')}"
        )
    return lines


def median_of(runs: list[dict]) -> dict:
    """Per figure, the median over runs (the failed-audit list of the first run)."""
    merged = {
        key: statistics.median(run[key] for run in runs) for key in runs[0] if key != "failed_accessibility_audits"
    }
    merged["failed_accessibility_audits"] = runs[0]["failed_accessibility_audits"]
    return merged


def format_lighthouse(page: str, figures: dict) -> str:
    parts = [f"perf {figures['performance']:.2f}", f"a11y {figures['accessibility']:.2f}"]
    for audit, (label, unit) in METRICS.items():
        value = figures[audit]
        if unit == "bytes":
            parts.append(f"{label} {value / 1024:,.0f} KiB")
        elif unit == "ms":
            parts.append(f"{label} {value:,.0f} ms")
        elif unit:
            parts.append(f"{label} {value:,.0f}")
        else:
            parts.append(f"{label} {value:.3f}")
    line = f"{page or '(home)':42} " + ", ".join(parts)
    if figures["failed_accessibility_audits"]:
        line += f"; failing: {', '.join(figures['failed_accessibility_audits'])}"
    return line


def axe_violations(page, impacts: tuple[str, ...] = BLOCKING) -> list[dict]:
    """axe-core's violations of the given impacts on a loaded Playwright ``page``."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    # resultTypes: every violating node is still listed, but axe describes only one passing node per
    # rule instead of each of them (the measured page has 11,000 table cells): about a quarter faster.
    results = page.evaluate("async () => (await axe.run(document, { resultTypes: ['violations'] })).violations")
    return [
        {
            "id": item["id"],
            "impact": item["impact"],
            "help": item["help"],
            "targets": [n["target"] for n in item["nodes"]],
            # axe's own reason for the first node, e.g. the two colours and their ratio.
            "why": next((check["message"] for check in item["nodes"][0]["any"] + item["nodes"][0]["all"]), ""),
        }
        for item in results
        if item["impact"] in impacts
    ]


def axe_site(base: str, pages: list[str]) -> dict[tuple[str, str], list[dict]]:
    """(page, scheme) -> blocking violations, for every page in light and dark."""
    from playwright.sync_api import sync_playwright

    found = {}
    with sync_playwright() as playwright:
        browser = launch(playwright)
        for scheme in ("light", "dark"):
            context = browser.new_context(color_scheme=scheme, viewport={"width": 390, "height": 844})
            page = context.new_page()
            for path in pages:
                page.goto(base + path, wait_until="load")
                page.wait_for_timeout(300)  # let document$ subscribers (charts, runtime) settle
                found[(path, scheme)] = axe_violations(page)
            context.close()
        browser.close()
    return found


def report(
    site: Path | None = None,
    runs: int = 1,
    *,
    axe: bool = True,
    lighthouse_runs: bool = True,
    only: list[str] | None = None,
    save: Path | None = None,
) -> None:
    require("bench_pages")
    for tool, used in ((LIGHTHOUSE, lighthouse_runs), (AXE, axe)):
        if used and not tool.is_file():
            raise SystemExit(f"bench_pages: {tool.relative_to(ROOT)} is missing; run `make setup` (npm ci)")
    with tempfile.TemporaryDirectory() as scratch:
        if site is None:
            site = Path(scratch) / "site"
            serve.build_site(site)
        server = serve.make_server(site, quiet=True)
        base = serve.serve_in_background(server)
        pages = site_pages(site)
        if only:
            missing = sorted(set(only) - set(pages))
            if missing:
                raise SystemExit(f"bench_pages: no such page {', '.join(missing)} (pages are paths like {pages[1]!r})")
            pages = [page for page in pages if page in only]
        try:
            if lighthouse_runs:
                print(f"Lighthouse 12, mobile, median of {runs} run(s), served as by `make serve` at {base}")
                for path in pages:
                    reports = [lighthouse(base + path) for _ in range(runs)]
                    each = [summarise(one) for one in reports]
                    line = format_lighthouse(path, median_of(each))
                    if runs > 1:  # a goal such as "0.90 in 3 of 3 runs" reads every run, not the median
                        scores = " ".join(f"{run['performance']:.2f}" for run in each)
                        tbt = " ".join(f"{run['total-blocking-time']:,.0f}" for run in each)
                        line += f"; each run's perf {scores}, TBT {tbt} ms"
                    print(line, flush=True)
                    if save is not None:
                        save.mkdir(parents=True, exist_ok=True)
                        name = (path or "home").strip("/").replace("/", "_")
                        for number, one in enumerate(reports, 1):
                            (save / f"{name}.{number}.json").write_text(json.dumps(one), encoding="utf-8")
                            for detail in where_time_went(one):
                                print(f"    run {number}: {detail}")
            if axe:
                print("axe-core, serious and critical violations at 390 px, light and dark:")
                for (path, scheme), violations in axe_site(base, pages).items():
                    listed = "; ".join(
                        f"{v['impact']} {v['id']} ({len(v['targets'])}×: {v['help']})" for v in violations
                    )
                    print(f"  {path or '(home)':40} {scheme:5} {len(violations)} {listed}", flush=True)
        finally:
            server.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, help="a built site to measure instead of a fresh build")
    parser.add_argument("--runs", type=int, default=1, help="Lighthouse runs per page (median kept)")
    parser.add_argument("--axe-only", action="store_true")
    parser.add_argument("--lighthouse-only", action="store_true")
    parser.add_argument(
        "--page", action="append", help="measure only this page (a path like chapters/kv-cache/); repeatable"
    )
    parser.add_argument("--save", type=Path, help="write each run's Lighthouse report (JSON) into this folder")
    args = parser.parse_args()
    report(
        args.site,
        args.runs,
        axe=not args.lighthouse_only,
        lighthouse_runs=not args.axe_only,
        only=args.page,
        save=args.save,
    )


if __name__ == "__main__":
    main()
