"""Benchmarks of the in-page Python runtime in Debian's Chromium, driven by Playwright.

Run: ``python scripts/bench_browser.py`` (or ``python scripts/bench.py browser``, which
calls ``report()``). Builds the site into a temporary folder, serves it from a
background thread with the COOP/COEP headers of ``make serve``, and measures,
against a bare Pyodide page (``loadPyodide``, then one ``print``) served in the
same run:

- cold click-to-output: Run pressed on a fresh browser context as soon as the cell
  exists, until the program's last line is on the page (goal ≤ 1.15 × bare boot),
  and from navigation to that line (goal ≤ 0.4 × bare boot: Python is restored
  from the build's memory snapshot, see docs/javascripts/runtime/boot.mjs);
- without the isolation headers, Stop on ``while True: pass`` (which restarts the
  worker from the snapshot), then Run: Stop pressed to the last line (goal ≤ 1 s);
- a warm Run (goal ≤ 100 ms) and a Run after 5 s idle (goal ≤ 300 ms), click to last line;
- calculator input to updated numbers, p95 over varied inputs (goal ≤ 16 ms), for
  chapter 1's calculator and, on its own page, chapter 2's KV budget (ratio to chapter 1's);
- chapter 4's "Which format on my GPU" calculator, on its own page, input to numbers, p95 over
  varied inputs (the issue's goal ≤ 50 ms), as a ratio to chapter 1's calculator in the same run;
- chapter 3's serving simulator (1,000 requests a run), input to redrawn metrics and
  timeline, p95 over varied traffic (goal ≤ 300 ms), against the same views in CPython;
- bytes transferred before any interaction (at the load event) and once Python is warm;
- compressed bytes until Python is warm (each file as gzip -6 would send it; the
  snapshot is served gzipped already), with the snapshot and, in the same run,
  without it (the snapshot's request blocked, so the page boots plainly), against
  the goal of ≤ 12 MB in all.

Times are taken inside the page (``performance.now()``), so Playwright's own
overhead is not in them. Prints one line per figure; writes nothing to the repo.
``--calculators`` measures only the calculators (chapters 1, 2 and 4), in one browser.
"""

from __future__ import annotations

import gzip
import statistics
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

import serve  # a sibling script: scripts/ is on the path (this folder, or make setup's .pth)
from chromium import CHROMIUM_PATH, launch

CHAPTER = "chapters/prefill-vs-decode/"
KV_CHAPTER = "chapters/kv-cache/"
PROGRAM = Path(__file__).resolve().parent.parent / "docs" / CHAPTER / "programs" / "h100_decode_prefill.py"
TIMEOUT_MS = 90_000
COLD_REPEATS = 3
WARM_REPEATS = 10
IDLE_REPEATS = 3
CALC_INPUTS = 120
SERVING_CHAPTER = "chapters/continuous-batching/"
QUANT_CHAPTER = "chapters/quantization/"
SERVING_INPUTS = 30
RESTART_REPEATS = 3

BARE_PAGE = """<!doctype html>
<meta charset="utf-8"><title>Bare Pyodide</title>
<pre id="out"></pre>
<script type="module">
  const indexURL = new URL("../assets/runtime/pyodide/", location.href).href;
  const { loadPyodide } = await import(indexURL + "pyodide.mjs");
  const pyodide = await loadPyodide({ indexURL, packageBaseUrl: indexURL });
  pyodide.setStdout({ batched: (text) => (document.getElementById("out").textContent += text) });
  pyodide.runPython("print('hello from Python')");
  document.body.dataset.bootMs = String(performance.now());
</script>
"""

# Installed before the page's scripts: records when Run is clicked and when the cell finishes.
CELL_PROBE = """
window.__rf = { clicks: [], stops: [], finished: [] };
document.addEventListener("click", (event) => {
  if (event.target.closest?.("[data-rf-action=run]")) window.__rf.clicks.push(performance.now());
  if (event.target.closest?.("[data-rf-action=stop]")) window.__rf.stops.push(performance.now());
}, true);
let finished = false;
new MutationObserver(() => {
  const status = document.querySelector("[data-rf-cell] .rf-status");
  const now = Boolean(status && status.textContent.startsWith("Finished"));
  if (now && !finished) window.__rf.finished.push(performance.now());
  finished = now;
}).observe(document, { subtree: true, childList: true, characterData: true });
"""

# Sets the calculator's controls to each of `inputs` in turn, at the pace of a held-down
# arrow key (one input every frame plus 40 ms, after the previous answer is painted), and
# collects the page's own input-to-numbers measurement (the rf-calc-rendered event).
CALC_LOOP = """async ([name, trigger, inputs]) => {
  const form = document.querySelector(`[data-rf-calc=${name}]`);
  const results = [];
  for (const params of inputs) {
    const rendered = new Promise((resolve) => {
      const done = (event) => {
        form.removeEventListener("rf-calc-rendered", done);
        form.removeEventListener("rf-calc-failed", done);
        resolve(event.detail);
      };
      form.addEventListener("rf-calc-rendered", done);
      form.addEventListener("rf-calc-failed", done);  // a view that refuses its inputs answers too
    });
    for (const [name, value] of Object.entries(params)) form.elements.namedItem(name).value = String(value);
    form.elements.namedItem(trigger).dispatchEvent(new Event("input", { bubbles: true }));
    results.push(await rendered);
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 40)));
  }
  return results;
}"""


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def _kv_budget_inputs(count: int) -> list[dict[str, object]]:
    """Varied inputs for chapter 2's KV budget: every model and GPU, each KV format, contexts and prefixes."""
    from roofline import builtin_specs
    from roofline.kvformats import KV_FORMAT_NAMES

    specs = builtin_specs()
    gpus, models = list(specs.gpus), list(specs.models)
    return [
        {
            "gpu": gpus[i % len(gpus)],
            "model": models[(i // 2) % len(models)],
            "weights": ["bf16", "fp8", "int4"][i % 3],
            "kv": KV_FORMAT_NAMES[i % len(KV_FORMAT_NAMES)],
            "gpus": 1 + i % 8,
            "context": 1024 + (i * 4096) % 131072,
            "prefix": (i * 512) % 1024,
        }
        for i in range(count)
    ]


def _calculator_inputs(count: int) -> list[dict[str, object]]:
    """Varied inputs, every GPU and model, as a reader would try them (each differs from the last)."""
    from roofline import builtin_specs

    specs = builtin_specs()
    gpus, models = list(specs.gpus), list(specs.models)
    precisions = ["bf16", "fp8", "int4"]
    return [
        {
            "gpu": gpus[i % len(gpus)],
            "model": models[(i // 2) % len(models)],
            "precision": precisions[i % 3],
            "gpus": 1 + i % 8,
            "users": 1 + (i * 37) % 512,
            "context": (i * 1024) % 32768,
        }
        for i in range(count)
    ]


def _which_format_inputs(count: int) -> list[dict[str, object]]:
    """Varied inputs for chapter 4's calculator: every GPU and model, batches, contexts and prompts."""
    from roofline import builtin_specs

    specs = builtin_specs()
    gpus, models = list(specs.gpus), list(specs.models)
    return [
        {
            "gpu": gpus[i % len(gpus)],
            "model": models[(i // 2) % len(models)],
            "batch": 1 + (i * 37) % 512,
            "context": (i * 1024) % 32768,
            "prompt": (i * 300) % 8000,
        }
        for i in range(count)
    ]


#: Deployments the serving benchmark cycles through: (GPU count, GPU, model, weight precision).
SERVING_DEPLOYMENTS = [
    ("1", "h100-sxm", "llama-3.1-8b", "bf16"),
    ("1", "h100-sxm", "llama-3.1-70b", "fp8"),
    ("2", "h200", "llama-3.1-70b", "bf16"),
    ("8", "h100-sxm", "llama-3.1-405b", "fp8"),
    ("1", "mi300x", "mixtral-8x7b", "bf16"),
]


def _serving_inputs(count: int) -> list[dict[str, object]]:
    """Varied traffic for chapter 3's simulator: every policy and admission rule, light to overloaded
    rates, short to long prompts, on small and large deployments the form offers."""
    policies = ["static", "continuous", "chunked"]
    inputs = []
    for i in range(count):
        gpus, gpu, model, precision = SERVING_DEPLOYMENTS[(i // 3) % len(SERVING_DEPLOYMENTS)]
        inputs.append(
            {
                "gpu": gpu,
                "gpus": gpus,
                "precision": precision,
                "model": model,
                "policy": policies[i % 3],
                "admission": ["paged", "reserve"][(i // 2) % 2],
                "rate": 2 + (i * 7) % 40,
                "prompt_high": 512 * (1 + i % 8),
                "output_high": 128 * (1 + (i // 3) % 4),
            }
        )
    return inputs


def _serving_limit_inputs() -> list[dict[str, object]]:
    """Inputs at the form's limits that cost the simulator the most of those a search found (issue 25's
    H2: every view bounded to about a second): longest outputs, the largest max batch, the highest rate,
    and caches small enough to preempt on nearly every step, which the view may refuse as thrashing."""
    view = _load_serving_view()
    big = {"rate": 1000, "max_batch": 1024, "token_budget": 65536}
    cases = [
        {**big, "policy": "chunked", "rate": 1, "prompt_low": 1, "prompt_high": 1, "output_low": 8192,
         "output_high": 8192},
        {**big, "policy": "chunked", "prompt_low": 32768, "prompt_high": 32768, "output_low": 8192,
         "output_high": 8192},
        {**big, "prompt_low": 1, "prompt_high": 1, "output_low": 8192, "output_high": 8192},
        {**big, "gpus": "2", "gpu": "tpu-v5e", "model": "llama-2-13b", "precision": "bf16", "prompt_low": 1,
         "prompt_high": 1, "output_low": 2000, "output_high": 2400, "token_budget": 2048},
        {**big, "gpus": "2", "gpu": "tpu-v5e", "model": "llama-2-13b", "precision": "bf16", "policy": "chunked",
         "prompt_low": 1, "prompt_high": 1, "output_low": 1600, "output_high": 3300, "token_budget": 2048},
        {**big, "gpu": "a100-80gb", "model": "llama-3.1-70b", "precision": "fp8", "rate": 1, "prompt_low": 1,
         "prompt_high": 1, "output_low": 1, "output_high": 8192},
        {**big, "gpus": "8", "gpu": "mi300x", "model": "deepseek-v3", "precision": "int4", "policy": "chunked",
         "admission": "reserve", "prompt_low": 1, "prompt_high": 32768, "output_low": 1, "output_high": 8192},
    ]  # fmt: skip
    # Every case passes the form's checks (the page sends it to Python); the view may still refuse
    # it as thrashing, and that answer, a line instead of results, is timed too.
    return [view.FORM.validate(dict(view.DEFAULTS, **case)) for case in cases]


def serving_cpython_ms(inputs: list[dict[str, object]]) -> list[float]:
    """The same views in CPython here, each timed (a refusal as long as it took): the baseline for
    the in-page figure."""
    import time

    from roofline import SpecError

    view = _load_serving_view()
    times = []
    for params in inputs:
        start = time.perf_counter()
        try:
            view.view(**dict(view.DEFAULTS, **params))
        except SpecError:
            pass
        times.append((time.perf_counter() - start) * 1e3)
    return times


def _load_serving_view():
    """Chapter 3's calculator module, through the site's one loader."""
    from sitegen.pages import find

    return find(Path(__file__).resolve().parent.parent / "docs", "continuous-batching").calculator("serving")


class Bench:
    """One built site, one server, one browser; each measurement opens fresh contexts."""

    def __init__(self, browser: object, base: str, plain_base: str, site_dir: Path) -> None:
        self.browser = browser
        self.base = base
        self.plain_base = plain_base  # the same site without COOP/COEP
        self.site_dir = site_dir

    def bare_boot_ms(self) -> float:
        context = self.browser.new_context()
        page = context.new_page()
        page.goto(self.base + "bench/bare.html")
        page.wait_for_selector("body[data-boot-ms]", timeout=TIMEOUT_MS)
        assert page.text_content("#out").strip() == "hello from Python"
        boot = float(page.get_attribute("body", "data-boot-ms"))
        context.close()
        return boot

    def open_chapter(self, *, record: list | None = None) -> tuple[object, object]:
        context = self.browser.new_context()
        if record is not None:
            context.on("requestfinished", lambda request: record.append(request))
        context.add_init_script(CELL_PROBE)
        page = context.new_page()
        return context, page

    def run_and_time(self, page: object) -> float:
        """Click Run; return ms from the click to the finished output."""
        done = len(page.evaluate("window.__rf.finished"))
        page.click("[data-rf-action=run]")
        page.wait_for_function(f"window.__rf.finished.length > {done}", timeout=TIMEOUT_MS)
        clicks, finished = page.evaluate("[window.__rf.clicks, window.__rf.finished]")
        return finished[-1] - clicks[-1]

    def cold_click_ms(self) -> tuple[float, float, dict[str, float]]:
        """Fresh context: Run as soon as the cell is set up. Returns (click-to-output,
        navigation-to-output, where that time went: ms after navigation at which the page
        started the worker and at which the worker said Python was up)."""
        context, page = self.open_chapter()
        page.goto(self.base + CHAPTER, wait_until="commit")
        page.wait_for_selector("[data-rf-cell][data-rf-mounted]", timeout=TIMEOUT_MS)
        click_to_output = self.run_and_time(page)
        navigation_to_output = page.evaluate("window.__rf.finished[0]")
        stages = page.evaluate(
            "import('../../javascripts/runtime/runtime.mjs').then(({ runtime }) =>"
            " ({ started: runtime.startedAt, booted: runtime.startedAt + runtime.timings.sinceStart }))"
        )
        context.close()
        return click_to_output, navigation_to_output, stages

    def warm_page(self, record: list | None = None) -> tuple[object, object]:
        context, page = self.open_chapter(record=record)
        page.goto(self.base + CHAPTER)
        page.wait_for_selector("html[data-rf-runtime=ready]", timeout=TIMEOUT_MS)
        return context, page

    def warm_runs_ms(self, page: object) -> list[float]:
        self.run_and_time(page)  # the first run after boot imports what the program needs
        return [self.run_and_time(page) for _ in range(WARM_REPEATS)]

    def idle_runs_ms(self, page: object) -> list[float]:
        times = []
        for _ in range(IDLE_REPEATS):
            page.wait_for_timeout(5000)  # the point of this figure is the pause itself
            times.append(self.run_and_time(page))
        return times

    def calculator_ms(self, page: object) -> list[dict]:
        page.locator("[data-rf-calc]").scroll_into_view_if_needed()
        return page.evaluate(CALC_LOOP, ["decode_speed", "users", _calculator_inputs(CALC_INPUTS)])

    def calculator_on_own_page_ms(self, chapter: str, name: str, trigger: str, inputs: list[dict]) -> list[dict]:
        """Calculator ``name`` on a fresh page of ``chapter``, once Python is warm there: each input's
        rf-calc-rendered measurement (``trigger`` is the field whose input event asks for it)."""
        context = self.browser.new_context()
        page = context.new_page()
        page.goto(self.base + chapter)
        page.wait_for_selector("html[data-rf-runtime=ready]", timeout=TIMEOUT_MS)
        page.locator(f"[data-rf-calc={name}]").scroll_into_view_if_needed()
        results = page.evaluate(CALC_LOOP, [name, trigger, inputs])
        context.close()
        return results

    def kv_budget_ms(self) -> list[dict]:
        """Chapter 2's KV budget calculator."""
        return self.calculator_on_own_page_ms(KV_CHAPTER, "kv_budget", "prefix", _kv_budget_inputs(CALC_INPUTS))

    def which_format_ms(self) -> list[dict]:
        """Chapter 4's "Which format on my GPU" calculator."""
        return self.calculator_on_own_page_ms(
            QUANT_CHAPTER, "which_format", "prompt", _which_format_inputs(CALC_INPUTS)
        )

    def serving_ms(self) -> list[dict]:
        """Chapter 3's simulator (1,000 requests a run): input to redrawn metrics and timeline."""
        return self.calculator_on_own_page_ms(SERVING_CHAPTER, "serving", "rate", _serving_inputs(SERVING_INPUTS))

    def serving_limits_ms(self) -> list[dict]:
        """Chapter 3's simulator on the costliest inputs at the form's limits (``_serving_limit_inputs``)."""
        return self.calculator_on_own_page_ms(SERVING_CHAPTER, "serving", "rate", _serving_limit_inputs())

    def stop_then_run_ms(self) -> list[float]:
        """Without isolation: Stop a ``while True: pass`` (the worker restarts), Run the
        chapter's program at once; ms from the Stop click to its last line, per repeat."""
        context, page = self.open_chapter()
        page.goto(self.plain_base + CHAPTER)
        page.wait_for_selector("html[data-rf-runtime=ready]", timeout=TIMEOUT_MS)
        assert page.evaluate("crossOriginIsolated") is False
        cell = page.locator("[data-rf-cell]")
        program = PROGRAM.read_text(encoding="utf-8")
        times = []
        for _ in range(RESTART_REPEATS):
            cell.locator("textarea").fill("while True:\n    pass\n")
            cell.locator("[data-rf-action=run]").click()
            page.wait_for_selector("[data-rf-cell][data-state=running]", timeout=TIMEOUT_MS)
            page.wait_for_timeout(300)  # let the loop be well under way, as a reader's would be
            cell.locator("[data-rf-action=stop]").click()
            page.wait_for_selector("[data-rf-cell]:not([data-state=running])", timeout=TIMEOUT_MS)
            cell.locator("textarea").fill(program)
            self.run_and_time(page)
            stops, finished = page.evaluate("[window.__rf.stops, window.__rf.finished]")
            times.append(finished[-1] - stops[-1])
        context.close()
        return times

    def compressed_bytes_until_warm(self, *, snapshot: bool) -> tuple[int, int, int]:
        """(compressed bytes of every file fetched until Python is warm, of which the
        snapshot's, files). Each file is measured from the built site on disk, as
        gzip -6 would send it, so the figure does not depend on this server's encoding."""
        requests: list = []
        context = self.browser.new_context()
        if not snapshot:
            context.route("**/*.snapshot.gz", lambda route: route.abort())
        context.on("requestfinished", lambda request: requests.append(request))
        page = context.new_page()
        page.goto(self.base + CHAPTER)
        page.wait_for_selector("html[data-rf-runtime=ready]", timeout=TIMEOUT_MS)
        page.wait_for_load_state("networkidle")
        context.close()
        # Once per file: a second request for the same file (a fallback boot fetching
        # Pyodide again) is answered from the browser's cache.
        files = {urlsplit(request.url).path for request in requests if request.method == "GET"}
        sizes = {path: self._compressed_size(path) for path in files}
        of_snapshot = sum(size for path, size in sizes.items() if path.endswith(".snapshot.gz"))
        return sum(sizes.values()), of_snapshot, len(files)

    def _compressed_size(self, url_path: str) -> int:
        path = unquote(url_path).lstrip("/")
        file = self.site_dir / path
        if file.is_dir() or path == "":
            file = file / "index.html"
        if not file.is_file():
            return 0
        data = file.read_bytes()
        return len(data) if file.suffix == ".gz" else len(gzip.compress(data, compresslevel=6))

    def bytes_before_and_warm(self) -> tuple[int, int, int]:
        """(bytes at the load event, bytes once Python is warm, requests then)."""
        requests: list = []
        context = self.browser.new_context()
        context.on("requestfinished", lambda request: requests.append(request))
        page = context.new_page()
        page.goto(self.base + CHAPTER, wait_until="load")
        at_load = list(requests)
        page.wait_for_selector("html[data-rf-runtime=ready]", timeout=TIMEOUT_MS)
        page.wait_for_load_state("networkidle")
        warm = list(requests)
        sizes = {id(request): _transferred(request) for request in warm}
        context.close()
        return sum(sizes[id(request)] for request in at_load), sum(sizes.values()), len(warm)


def _transferred(request: object) -> int:
    sizes = request.sizes()
    return sizes["responseBodySize"] + sizes["responseHeadersSize"]


def _line(label: str, value: str, goal: str = "", met: bool | None = None) -> None:
    verdict = "" if met is None else ("  ok" if met else "  MISSED")
    print(f"browser  {label:<44} {value:>22}  {goal}{verdict}")


def measure(base: str, plain_base: str, site_dir: Path) -> dict[str, object]:
    """Take every figure from the site served at ``base`` (and, without isolation, at ``plain_base``)."""
    from playwright.sync_api import sync_playwright

    figures: dict[str, object] = {}
    with sync_playwright() as playwright:
        browser = launch(playwright)
        bench = Bench(browser, base, plain_base, site_dir)
        bare = [bench.bare_boot_ms() for _ in range(COLD_REPEATS)]
        cold = [bench.cold_click_ms() for _ in range(COLD_REPEATS)]
        figures["bare_boot_ms"] = statistics.median(bare)
        figures["cold_click_ms"] = statistics.median(c[0] for c in cold)
        figures["cold_navigation_ms"] = statistics.median(c[1] for c in cold)
        figures["cold_worker_started_ms"] = statistics.median(c[2]["started"] for c in cold)
        figures["cold_python_up_ms"] = statistics.median(c[2]["booted"] for c in cold)
        context, page = bench.warm_page()
        figures["warm_run_ms"] = statistics.median(bench.warm_runs_ms(page))
        figures["idle_run_ms"] = max(bench.idle_runs_ms(page))
        figures.update(calculator_figures(bench.calculator_ms(page)))
        figures.update(other_calculators(bench))
        serving = bench.serving_ms()
        figures["serving_p50_ms"] = statistics.median(result["inputToNumbersMs"] for result in serving)
        figures["serving_p95_ms"] = _percentile([result["inputToNumbersMs"] for result in serving], 0.95)
        figures["serving_python_p50_ms"] = statistics.median(result["pythonMs"] for result in serving)
        figures["serving_render_p50_ms"] = statistics.median(result["renderMs"] for result in serving)
        figures["serving_cpython_p50_ms"] = statistics.median(serving_cpython_ms(_serving_inputs(SERVING_INPUTS)))
        limits = bench.serving_limits_ms()
        figures["serving_limit_max_ms"] = max(result["inputToNumbersMs"] for result in limits)
        figures["serving_limit_python_max_ms"] = max(result["pythonMs"] for result in limits)
        figures["serving_limit_cpython_max_ms"] = max(serving_cpython_ms(_serving_limit_inputs()))
        figures["boot_timings"] = page.evaluate(
            "import('../../javascripts/runtime/runtime.mjs').then((m) => m.runtime.timings)"
        )
        context.close()
        before, warm, count = bench.bytes_before_and_warm()
        figures.update(bytes_before_interaction=before, bytes_warm=warm, requests_warm=count)
        figures["stop_then_run_ms"] = statistics.median(bench.stop_then_run_ms())
        total, of_snapshot, _ = bench.compressed_bytes_until_warm(snapshot=True)
        plain_total, _, _ = bench.compressed_bytes_until_warm(snapshot=False)
        figures.update(compressed_warm=total, compressed_snapshot=of_snapshot, compressed_warm_plain=plain_total)
        browser.close()
    return figures


def other_calculators(bench: Bench) -> dict[str, float]:
    """Chapter 2's and chapter 4's calculators, each on a fresh page of its own: p95 of input to
    numbers and of Python's view, and chapter 4's p50."""
    figures = {}
    for key, results in (("kv_calc", bench.kv_budget_ms()), ("which_format", bench.which_format_ms())):
        figures[f"{key}_p95_ms"] = _percentile([result["inputToNumbersMs"] for result in results], 0.95)
        figures[f"{key}_python_p95_ms"] = _percentile([result["pythonMs"] for result in results], 0.95)
        figures[f"{key}_p50_ms"] = statistics.median(result["inputToNumbersMs"] for result in results)
    return figures


def calculator_figures(calc: list[dict]) -> dict[str, float]:
    """Chapter 1's calculator: p50 and p95 of input to numbers, of Python's view, and the drawing's p50."""
    latencies = [result["inputToNumbersMs"] for result in calc]
    return {
        "calc_p50_ms": statistics.median(latencies),
        "calc_p95_ms": _percentile(latencies, 0.95),
        "calc_python_p50_ms": statistics.median(result["pythonMs"] for result in calc),
        "calc_python_p95_ms": _percentile([result["pythonMs"] for result in calc], 0.95),
        "calc_render_p50_ms": statistics.median(result["renderMs"] for result in calc),
    }


def measure_calculators(base: str, plain_base: str, site_dir: Path) -> dict[str, object]:
    """Only the calculators: chapter 1's on a warm page of its own, then chapters 2 and 4."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        bench = Bench(browser, base, plain_base, site_dir)
        context, page = bench.warm_page()
        bench.run_and_time(page)  # what the page's program imports is warm, as in the full run
        figures = calculator_figures(bench.calculator_ms(page))
        context.close()
        figures.update(other_calculators(bench))
        browser.close()
    return figures


def report_calculators(figures: dict[str, object]) -> None:
    _line("calculator input to numbers, p50", f"{figures['calc_p50_ms']:.1f} ms")
    _line(
        f"calculator input to numbers, p95 ({CALC_INPUTS} inputs)",
        f"{figures['calc_p95_ms']:.1f} ms",
        "≤ 16 ms",
        figures["calc_p95_ms"] <= 16,
    )
    _line(
        "  of which Python's view, p50 / p95",
        f"{figures['calc_python_p50_ms']:.1f} / {figures['calc_python_p95_ms']:.1f} ms",
    )
    _line("  of which drawing the numbers and chart, p50", f"{figures['calc_render_p50_ms']:.1f} ms")
    kv = figures["kv_calc_p95_ms"]
    _line(f"KV budget (ch. 2) input to numbers, p95 ({CALC_INPUTS})", f"{kv:.1f} ms", "≤ 16 ms", kv <= 16)
    _line("  ratio to chapter 1's calculator p95", f"{kv / figures['calc_p95_ms']:.2f} ×")
    _line("  of which Python's view, p95", f"{figures['kv_calc_python_p95_ms']:.1f} ms")
    which = figures["which_format_p95_ms"]
    _line(f"Which format (ch. 4) input to numbers, p95 ({CALC_INPUTS})", f"{which:.1f} ms", "≤ 50 ms", which <= 50)
    _line("  p50", f"{figures['which_format_p50_ms']:.1f} ms")
    _line("  ratio to chapter 1's calculator p95", f"{which / figures['calc_p95_ms']:.2f} ×")
    _line("  of which Python's view, p95", f"{figures['which_format_python_p95_ms']:.1f} ms")


def report(calculators_only: bool = False) -> dict[str, object]:
    """Build, serve, measure and print every browser figure; return them as a dict."""
    with tempfile.TemporaryDirectory(prefix="roofline-bench-") as folder:
        site_dir = Path(folder) / "site"
        server = serve.make_server(site_dir, quiet=True)
        plain_server = serve.make_server(site_dir, isolated=False, quiet=True)
        base = f"http://127.0.0.1:{server.server_port}/"
        serve.build_site(site_dir, site_url=base)
        (site_dir / "bench").mkdir()
        (site_dir / "bench" / "bare.html").write_text(BARE_PAGE, encoding="utf-8")
        serve.serve_in_background(server)
        plain_base = serve.serve_in_background(plain_server)
        try:
            figures = (measure_calculators if calculators_only else measure)(base, plain_base, site_dir)
        finally:
            server.shutdown()
            plain_server.shutdown()
    if calculators_only:
        report_calculators(figures)
        return figures
    bare, cold = figures["bare_boot_ms"], figures["cold_click_ms"]
    timings = figures["boot_timings"] or {}
    _line("bare Pyodide page: navigation to print", f"{bare:,.0f} ms", "(baseline)")
    goal = 1.15 * bare
    _line("cold Run: click to last line (fresh context)", f"{cold:,.0f} ms", f"≤ {goal:,.0f} ms", cold <= goal)
    _line("  ratio to the bare boot", f"{cold / bare:.2f} ×", "≤ 1.15 ×", cold / bare <= 1.15)
    navigation = figures["cold_navigation_ms"]
    goal = 0.4 * bare
    _line("cold Run: navigation to last line", f"{navigation:,.0f} ms", f"≤ {goal:,.0f} ms", navigation <= goal)
    _line("  ratio to the bare boot", f"{navigation / bare:.2f} ×", "≤ 0.4 ×", navigation / bare <= 0.4)
    _line(
        "  after navigation: worker started / Python up",
        f"{figures['cold_worker_started_ms']:,.0f} / {figures['cold_python_up_ms']:,.0f} ms",
    )
    started = "from the snapshot" if timings.get("snapshot") else f"plain ({timings.get('fallback', 'no snapshot')})"
    _line(
        f"  worker boot {started}: Pyodide / wheel + imports",
        f"{timings.get('pyodide', 0):,.0f} / {timings.get('wheelAndImports', 0):,.0f} ms",
    )
    restart = figures["stop_then_run_ms"]
    _line("no isolation: Stop a loop, Run: Stop to last line", f"{restart:,.0f} ms", "≤ 1,000 ms", restart <= 1000)
    warm, idle = figures["warm_run_ms"], figures["idle_run_ms"]
    _line("warm Run: click to last line (median)", f"{warm:,.0f} ms", "≤ 100 ms", warm <= 100)
    _line("Run after 5 s idle (worst of 3)", f"{idle:,.0f} ms", "≤ 300 ms", idle <= 300)
    report_calculators(figures)
    serving = figures["serving_p95_ms"]
    _line(
        f"serving simulator input to timeline, p50 / p95 ({SERVING_INPUTS} inputs)",
        f"{figures['serving_p50_ms']:.0f} / {serving:.0f} ms",
        "≤ 300 ms",
        serving <= 300,
    )
    _line(
        "  of which Python's view (1,000 requests), p50",
        f"{figures['serving_python_p50_ms']:.0f} ms",
        f"CPython here {figures['serving_cpython_p50_ms']:.0f} ms"
        f" ({figures['serving_python_p50_ms'] / figures['serving_cpython_p50_ms']:.1f} ×)",
    )
    _line("  of which drawing the metrics and timeline, p50", f"{figures['serving_render_p50_ms']:.1f} ms")
    _line("  ratio to chapter 1's calculator p95", f"{serving / figures['calc_p95_ms']:.1f} ×")
    worst = figures["serving_limit_max_ms"]
    _line(
        "serving simulator at the form's limits, slowest input",
        f"{worst:,.0f} ms",
        "about 1 s",
        worst <= 1500,
    )
    _line(
        "  of which Python's view, slowest",
        f"{figures['serving_limit_python_max_ms']:,.0f} ms",
        f"CPython here {figures['serving_limit_cpython_max_ms']:,.0f} ms",
    )
    _line("bytes before any interaction (load event)", f"{figures['bytes_before_interaction'] / 1e6:,.2f} MB")
    _line(
        "bytes once Python is warm",
        f"{figures['bytes_warm'] / 1e6:,.2f} MB",
        f"({figures['requests_warm']} requests)",
    )
    compressed, snapshot, plain = (
        figures[key] / 1e6 for key in ("compressed_warm", "compressed_snapshot", "compressed_warm_plain")
    )
    _line("compressed bytes until Python is warm", f"{compressed:,.2f} MB", "≤ 12 MB", compressed <= 12)
    _line("  of which the snapshot", f"{snapshot:,.2f} MB")
    _line("  without the snapshot (plain boot, baseline)", f"{plain:,.2f} MB")
    return figures


def main() -> None:
    if not CHROMIUM_PATH.exists():
        sys.exit(f"bench_browser: {CHROMIUM_PATH} is missing (apt-get install chromium)")
    report(calculators_only="--calculators" in sys.argv[1:])


if __name__ == "__main__":
    main()
