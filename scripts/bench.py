"""Benchmarks: the package's full sweep, the site build and the in-browser runtime.

Run: ``python scripts/bench.py [package] [site] [browser] [pages]`` (all four when
none is named), or ``make bench``. ``pages`` is Lighthouse and axe-core on every
page (``scripts/bench_pages.py``). Prints one line per figure and writes nothing.

These machines are shared and noisy, so each figure is also given as a ratio
to a baseline measured in the same process (or browser session) just before.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

SWEEP_BATCHES = tuple(2**power for power in range(11))  # 1 … 1024
SWEEP_CONTEXTS = (0, 1024, 4096, 32768, 131072)


def sweep_cases() -> list[tuple]:
    """Every GPU × model × weight precision × batch × context, as (gpu, model, precision, batch, context)."""
    from roofline import PRECISIONS, builtin_specs

    specs = builtin_specs()
    return list(
        itertools.product(specs.gpus.values(), specs.models.values(), PRECISIONS, SWEEP_BATCHES, SWEEP_CONTEXTS)
    )


def run_sweep(cases: list[tuple]) -> list:
    """Evaluate every case with the package's public API and keep the results, as a
    figure builder would."""
    from roofline import Hardware, Workload, evaluate

    return [
        evaluate(Hardware(gpu), Workload(model, precision, batch=batch, context=context))
        for gpu, model, precision, batch, context in cases
    ]


def run_baseline(cases: list[tuple]) -> None:
    """The rule of thumb alone (bandwidth / weight bytes) over the same cases: a yardstick
    for this machine's Python speed, not a competitor."""
    from roofline import bytes_per_value, total_parameters

    for gpu, model, precision, batch, _context in cases:
        _ = batch * gpu.bandwidth_bytes_per_s / (total_parameters(model) * bytes_per_value(precision))


def best_of(repeats: int, work: Callable[[], object]) -> float:
    """Fastest of ``repeats`` wall-clock runs, in seconds (the least disturbed by neighbours)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def bench_package(repeats: int = 5) -> dict[str, float]:
    """Time the full sweep (goal: under 1 s) and its peak traced memory."""
    cases = sweep_cases()
    run_sweep(cases)  # warm caches and imports, as a long-lived page would be
    sweep_s = best_of(repeats, lambda: run_sweep(cases))
    baseline_s = best_of(repeats, lambda: run_baseline(cases))
    tracemalloc.start()
    run_sweep(cases)
    _, peak_bytes = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "evaluations": len(cases),
        "sweep_s": sweep_s,
        "evaluations_per_s": len(cases) / sweep_s,
        "ratio_to_baseline": sweep_s / baseline_s,
        "peak_traced_bytes": peak_bytes,
    }


def report_package() -> None:
    figures = bench_package()
    print(
        f"package sweep: {figures['evaluations']:,} evaluations in {figures['sweep_s']:.3f} s"
        f" ({figures['evaluations_per_s']:,.0f}/s; goal < 1 s);"
        f" {figures['ratio_to_baseline']:.1f}× the bare rule-of-thumb loop;"
        f" peak traced memory holding every result {figures['peak_traced_bytes'] / 1e6:.1f} MB"
    )


def report_site() -> None:
    import bench_site

    bench_site.report()


def report_browser() -> None:
    import bench_browser

    bench_browser.report()


def report_pages() -> None:
    import bench_pages

    bench_pages.report()


SECTIONS = {"package": report_package, "site": report_site, "browser": report_browser, "pages": report_pages}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sections", nargs="*", metavar="SECTION", help=f"any of {', '.join(SECTIONS)} (default: all)")
    args = parser.parse_args()
    for name in args.sections:
        if name not in SECTIONS:
            parser.error(f"unknown section '{name}'; choose from {', '.join(SECTIONS)}")
    for name in args.sections or SECTIONS:
        SECTIONS[name]()


if __name__ == "__main__":
    main()
