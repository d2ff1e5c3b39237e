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
- chapter 5's speculation calculator, input to updated numbers and chart, p95 over varied
  inputs (goal ≤ 50 ms), its ratio to chapter 1's, and the same views in CPython;
- a pasted config.json ("Your model…", issue 24), paste to updated numbers, p95 over varied
  configs (goal ≤ 100 ms), against a built-in model chosen from the menu in the same page;
- chapter 4's "Which format on my GPU" calculator, on its own page, input to numbers, p95 over
  varied inputs (the issue's goal ≤ 50 ms), as a ratio to chapter 1's calculator in the same run;
- chapter 3's serving simulator (1,000 requests a run), input to redrawn metrics and
  timeline, p95 over varied traffic (goal ≤ 300 ms), against the same views in CPython;
- chapter 6's "Deploy it", input to numbers, p95 over varied splits (goal ≤ 50 ms), with
  where the time went (Python in the worker, the round trip around it, the page's
  rendering) and its ratio to chapter 1's calculator in the same run;
- bytes transferred before any interaction (at the load event) and once Python is warm;
- compressed bytes until Python is warm (each file as gzip -6 would send it; the
  snapshot is served gzipped already), with the snapshot and, in the same run,
  without it (the snapshot's request blocked, so the page boots plainly), against
  the goal of ≤ 12 MB in all.

Times are taken inside the page (``performance.now()``), so Playwright's own
overhead is not in them. Prints one line per figure; writes nothing to the repo.
``python scripts/bench_browser.py compare OLD_SITE [NEW_SITE]`` builds this checkout and measures the second
chapter and Stop without isolation against ``OLD_SITE`` (a site built before a change), interleaved.
``python scripts/bench_browser.py calculators`` measures the calculators alone (chapters 1, 2, 4,
5 and 6, each with its ratio to chapter 1's), without the boots, the simulator and the bytes.
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlsplit

import serve  # a sibling script: scripts/ is on the path (this folder, or make setup's .pth)
from chromium import launch, require

ROOT = Path(__file__).resolve().parent.parent
#: Pyodide's files are served under their version (hooks/runtime.py).
PYODIDE_VERSION = json.loads((ROOT / "node_modules" / "pyodide" / "package.json").read_text(encoding="utf-8"))[
    "version"
]
CHAPTER = "chapters/prefill-vs-decode/"
KV_CHAPTER = "chapters/kv-cache/"
#: performance.measureUserAgentSpecificMemory() answers at once instead of at the next GC (up to 20 s).
EAGER_MEMORY = "--enable-blink-features=ForceEagerMeasureMemory"
PROGRAM = Path(__file__).resolve().parent.parent / "docs" / CHAPTER / "programs" / "h100_decode_prefill.py"
TIMEOUT_MS = 90_000
COLD_REPEATS = 3
WARM_REPEATS = 10
IDLE_REPEATS = 3
CALC_INPUTS = 120
SPECULATION_CHAPTER = "chapters/speculative-decoding/"
SERVING_CHAPTER = "chapters/continuous-batching/"
DEPLOY_CHAPTER = "chapters/parallelism/"
QUANT_CHAPTER = "chapters/quantization/"
SERVING_INPUTS = 30
OWN_INPUTS = 60
RESTART_REPEATS = 3
PAIR_REPEATS = 5  # the two-Pythons comparison: its difference is small beside a loaded machine's noise

BARE_PAGE = """<!doctype html>
<meta charset="utf-8"><title>Bare Pyodide</title>
<pre id="out"></pre>
<script type="module">
  const indexURL = new URL("../assets/runtime/pyodide/PYODIDE_VERSION/", location.href).href;
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


# Alternates, in chapter 1's calculator, a pasted config.json (each one new, so each is read
# afresh: a new hash, nothing cached) and a built-in model chosen from the menu, and collects the
# page's input-to-numbers measurement of each (paste: the input event of the paste box).
OWN_LOOP = """async ([texts, builtins]) => {
  const form = document.querySelector("[data-rf-calc=decode_speed]");
  const box = form.querySelector("details[data-rf-own=model] textarea");
  const menu = form.elements.namedItem("model");
  const answered = () => new Promise((resolve) => {
    const done = (event) => {
      form.removeEventListener("rf-calc-rendered", done);
      form.removeEventListener("rf-calc-failed", done);
      resolve(event.detail);
    };
    form.addEventListener("rf-calc-rendered", done);
    form.addEventListener("rf-calc-failed", done);
  });
  const pause = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 40)));
  const pasted = [], builtin = [];
  for (const [index, text] of texts.entries()) {
    let rendered = answered();
    box.value = text;
    box.dispatchEvent(new InputEvent("input", { bubbles: true, inputType: "insertFromPaste" }));
    pasted.push(await rendered);
    await pause();
    rendered = answered();
    menu.value = builtins[index % builtins.length];
    menu.dispatchEvent(new Event("input", { bubbles: true }));
    builtin.push(await rendered);
    await pause();
  }
  return { pasted, builtin };
}"""


def _own_configs(count: int) -> list[str]:
    """``count`` different config.json texts: the Llama 3.1 8B fixture at varied depth and width."""
    fixture = json.loads((ROOT / "tests" / "fixtures" / "hfconfig" / "llama-3.1-8b.json").read_text(encoding="utf-8"))
    texts = []
    for index in range(count):
        config = dict(fixture, num_hidden_layers=16 + index % 48, intermediate_size=8192 + 256 * (index // 48))
        texts.append(json.dumps(config, indent=2))
    return texts


# Installed before the page's scripts: the calculators' worker gets an empty script, so the page
# has only the Runs' Python, as before calculators had one of their own. The cost of the second
# is then a difference within one browser run.
ONE_WORKER = """
const RealWorker = window.Worker;
window.Worker = function (url, options) {
  if (decodeURIComponent(String(url)).includes('"role":"calc"')) {
    url = URL.createObjectURL(new Blob([""], { type: "text/javascript" }));
  }
  return new RealWorker(url, options);
};
"""

# Bytes the tab's JavaScript and wasm hold (page and workers), once both are settled.
MEMORY = """async () => {
  const measured = await performance.measureUserAgentSpecificMemory();
  return measured.bytes;
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


def _deploy_inputs(count: int) -> list[dict[str, object]]:
    """Varied inputs for chapter 6's "Deploy it": every split and latency, small to 64-GPU pipelines,
    every model and GPU, light to heavy batches (some refused, as a reader's would be)."""
    from roofline import builtin_specs

    specs = builtin_specs()
    gpus, models = list(specs.gpus), list(specs.models)
    return [
        {
            "model": models[(i // 2) % len(models)],
            "gpu": gpus[i % len(gpus)],
            "split": ("tp", "pp", "tpxpp")[i % 3],
            "gpus": (1, 2, 4, 8, 16, 32, 64)[i % 7],
            "pp_stages": (1, 2, 4, 8)[i % 4],
            "microbatches": 1 + (i * 5) % 64,
            "weights": ("bf16", "fp8", "int4")[i % 3],
            "batch": 1 + (i * 37) % 4096,
            "context": (i * 1024) % 131072,
            "prompt": (i * 512) % 32768,
            "latency": ("smallest", "nccl", "custom_oneshot", "vllm_custom")[i % 4],
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


def _speculation_inputs(count: int) -> list[dict[str, object]]:
    """Varied inputs for chapter 5's speculation calculator, mostly ones it answers: Llama 3 targets
    on one to eight GPUs that hold them, Llama 3.2 1B or a given draft cost, short to long contexts;
    every fifth target another model, which the view may refuse (another vocabulary, no room)."""
    from roofline import builtin_specs

    specs = builtin_specs()
    gpus, models = list(specs.gpus), list(specs.models)
    targets = ["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-8b", "llama-3.1-405b"]
    large = ["h100-sxm", "h200", "b200", "a100-80gb", "mi300x"]
    inputs = []
    for i in range(count):
        target = targets[i % 4] if i % 5 else models[(i // 2) % len(models)]
        inputs.append(
            {
                "gpu": gpus[i % len(gpus)] if i % 7 == 0 else large[i % 5],
                "model": target,
                "draft": ["given-cost", "llama-3.2-1b", models[(i * 3) % len(models)]][i % 3],
                "draft_cost": round(0.02 + (i * 7 % 30) / 100, 2),
                "alpha": round(0.4 + (i * 13 % 56) / 100, 2),
                "gamma": 1 + (i * 5) % 10,
                "batch": [1, 2, 4, 8, 16, 32, 64, 128, 3, 24][i % 10],
                "context": (i * 1024) % 16384,
                "gpus": 8 if target == "llama-3.1-405b" else [1, 2, 4, 8][i % 4],
            }
        )
    return inputs


def speculation_cpython_ms(inputs: list[dict[str, object]]) -> list[float]:
    """Chapter 5's calculator views in CPython here, each timed once as the page times it: the
    baseline for the in-page figure."""
    import time

    from sitegen.pages import find

    view = find(Path(__file__).resolve().parent.parent / "docs", "speculative-decoding").calculator("speculate")
    times = []
    for params in inputs:
        start = time.perf_counter()
        view.view(**params)
        times.append((time.perf_counter() - start) * 1e3)
    return times


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

    def open_chapter(self, *, record: list | None = None, one_worker: bool = False) -> tuple[object, object]:
        context = self.browser.new_context()
        if record is not None:
            context.on("requestfinished", lambda request: record.append(request))
        context.add_init_script(CELL_PROBE)
        if one_worker:
            context.add_init_script(ONE_WORKER)
        page = context.new_page()
        return context, page

    def run_and_time(self, page: object) -> float:
        """Click Run; return ms from the click to the finished output."""
        done = len(page.evaluate("window.__rf.finished"))
        page.click("[data-rf-action=run]")
        page.wait_for_function(f"window.__rf.finished.length > {done}", timeout=TIMEOUT_MS)
        clicks, finished = page.evaluate("[window.__rf.clicks, window.__rf.finished]")
        return finished[-1] - clicks[-1]

    def cold_click_ms(self, *, one_worker: bool = False) -> tuple[float, float, dict[str, float]]:
        """Fresh context: Run as soon as the cell is set up. Returns (click-to-output,
        navigation-to-output, where that time went: ms after navigation at which the page
        started the worker and at which the worker said Python was up). ``one_worker``: the
        calculators' worker never starts (ONE_WORKER)."""
        context, page = self.open_chapter(one_worker=one_worker)
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

    def memory_bytes(self, *, one_worker: bool) -> int:
        """What chapter 1's tab holds (page and workers) once Python is up and the page idle."""
        context, page = self.open_chapter(one_worker=one_worker)
        page.goto(self.base + CHAPTER)
        page.wait_for_selector("html[data-rf-runtime=ready]", timeout=TIMEOUT_MS)
        if not one_worker:
            page.wait_for_selector("html[data-rf-calc-runtime=ready]", timeout=TIMEOUT_MS)
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(2000)  # the calculators' imports and the next Run's package copy
        measured = page.evaluate(MEMORY)
        context.close()
        return measured

    def second_chapter_ms(self) -> tuple[float, float]:
        """Chapter 1 opened and warm, then chapter 2 in the same browser: (a full page load, Run as soon
        as the cell is set up: navigation to its last line; instant navigation from chapter 1's link
        to chapter 2, then Run: click on the link to the last line)."""
        context, page = self.open_chapter()
        page.goto(self.base + CHAPTER)
        page.wait_for_selector("html[data-rf-runtime=ready]", timeout=TIMEOUT_MS)
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(3000)  # time for V8 to keep the wasm's compiled code beside the file
        page.goto(self.base + KV_CHAPTER, wait_until="commit")
        page.wait_for_selector("[data-rf-cell][data-rf-mounted]", timeout=TIMEOUT_MS)
        self.run_and_time(page)
        full_load = page.evaluate("window.__rf.finished[0]")
        # Back on chapter 1 (warm), then the link to chapter 2, as a reader moves on: the page
        # and its worker stay, only the content is swapped.
        page.goto(self.base + CHAPTER)
        page.wait_for_selector("html[data-rf-runtime=ready]", timeout=TIMEOUT_MS)
        page.wait_for_load_state("networkidle")
        clicked = page.evaluate("document.querySelector('[data-rf-cell]').dataset.left = ''; performance.now()")
        page.locator('a[href$="kv-cache/"]').first.click()
        page.wait_for_selector("[data-rf-cell][data-rf-mounted]:not([data-left])", timeout=TIMEOUT_MS)
        assert page.evaluate("document.documentElement.dataset.rfBoots") == "1"  # the same worker
        self.run_and_time(page)
        instant = page.evaluate("window.__rf.finished.at(-1)") - clicked
        context.close()
        return full_load, instant

    def warm_page(self, record: list | None = None) -> tuple[object, object]:
        context, page = self.open_chapter(record=record)
        page.goto(self.base + CHAPTER)
        page.wait_for_selector("html[data-rf-runtime=ready]", timeout=TIMEOUT_MS)
        page.wait_for_selector("html[data-rf-calc-runtime=ready]", timeout=TIMEOUT_MS)  # for calculator_ms
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

    def own_config_ms(self, page: object) -> dict[str, list[dict]]:
        """Chapter 1's calculator: pasted configs and built-in models, alternately, in one page."""
        page.locator("[data-rf-calc] details[data-rf-own=model] summary").click()
        menu = "[data-rf-calc=decode_speed] select[name=model] > option"  # the built-in models only
        builtins = page.evaluate(f"() => [...document.querySelectorAll('{menu}')].map((o) => o.value).slice(0, 4)")
        return page.evaluate(OWN_LOOP, [_own_configs(OWN_INPUTS), builtins])

    def calculator_on_own_page_ms(self, chapter: str, name: str, trigger: str, inputs: list[dict]) -> list[dict]:
        """Calculator ``name`` on a fresh page of ``chapter``, once Python is warm there: each input's
        rf-calc-rendered measurement (``trigger`` is the field whose input event asks for it)."""
        context = self.browser.new_context()
        page = context.new_page()
        page.goto(self.base + chapter)
        page.wait_for_selector("html[data-rf-calc-runtime=ready]", timeout=TIMEOUT_MS)
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

    def deploy_ms(self) -> list[dict]:
        """Chapter 6's "Deploy it" calculator."""
        return self.calculator_on_own_page_ms(DEPLOY_CHAPTER, "deploy", "batch", _deploy_inputs(CALC_INPUTS))

    def speculation_ms(self) -> list[dict]:
        """Chapter 5's speculation calculator: input to its numbers and chart."""
        inputs = _speculation_inputs(CALC_INPUTS)
        return self.calculator_on_own_page_ms(SPECULATION_CHAPTER, "speculate", "alpha", inputs)

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


def runtime_figures(bench: Bench) -> dict[str, float]:
    """Issue 25's and 23's figures, each beside its baseline in the same browser run: the
    calculators' own Python (navigation to a Run's output and the tab's memory, with it and
    without), the second chapter (a full load and instant navigation, then Run), and the bare boot."""
    bare, both, one = [], [], []
    for _ in range(PAIR_REPEATS):  # interleaved, so a change in the machine's load hits all alike
        bare.append(bench.bare_boot_ms())
        both.append(bench.cold_click_ms()[1])
        one.append(bench.cold_click_ms(one_worker=True)[1])
    memory_both = [bench.memory_bytes(one_worker=False) for _ in range(2)]
    memory_one = [bench.memory_bytes(one_worker=True) for _ in range(2)]
    second = [bench.second_chapter_ms() for _ in range(COLD_REPEATS)]
    return {
        "bare_boot_ms_interleaved": statistics.median(bare),
        "nav_to_output_two_workers_ms": statistics.median(both),
        "nav_to_output_one_worker_ms": statistics.median(one),
        "nav_to_output_pairs_ms": list(zip(one, both, strict=True)),
        "memory_two_workers_bytes": statistics.median(memory_both),
        "memory_one_worker_bytes": statistics.median(memory_one),
        "second_chapter_full_load_ms": statistics.median(s[0] for s in second),
        "second_chapter_instant_ms": statistics.median(s[1] for s in second),
    }


def print_runtime_figures(figures: dict[str, float]) -> None:
    bare = figures["bare_boot_ms_interleaved"]
    both, one = figures["nav_to_output_two_workers_ms"], figures["nav_to_output_one_worker_ms"]
    _line("bare Pyodide page (interleaved with the below)", f"{bare:,.0f} ms", "(baseline)")
    _line("ch. 1 navigation to Run's output, one Python", f"{one:,.0f} ms", f"{one / bare:.2f} × bare")
    _line("  with the calculators' own Python", f"{both:,.0f} ms", f"{both / bare:.2f} × bare")
    _line("  cost of the second Python", f"{both - one:+,.0f} ms", "≤ +150 ms", both - one <= 150)
    pairs = figures.get("nav_to_output_pairs_ms", [])
    print("browser    (each pair, one / two: " + ", ".join(f"{a:,.0f} / {b:,.0f}" for a, b in pairs) + " ms)")
    mem_both, mem_one = figures["memory_two_workers_bytes"], figures["memory_one_worker_bytes"]
    _line("ch. 1 tab memory, one Python", f"{mem_one / 1e6:,.0f} MB")
    _line("  with the calculators' own Python", f"{mem_both / 1e6:,.0f} MB")
    extra = (mem_both - mem_one) / 1e6
    _line("  cost of the second Python", f"{extra:+,.0f} MB", "≤ +120 MB", extra <= 120)
    full, instant = figures["second_chapter_full_load_ms"], figures["second_chapter_instant_ms"]
    _line("ch. 1 then ch. 2 (full load): navigation to output", f"{full:,.0f} ms", "≤ 0.3 × bare", full <= 0.3 * bare)
    _line("  ratio to the bare boot", f"{full / bare:.2f} ×")
    _line(
        "ch. 1 then ch. 2 (instant navigation): click to output", f"{instant:,.0f} ms", f"{instant / bare:.2f} × bare"
    )


def measure_runtime(base: str, plain_base: str, site_dir: Path) -> dict[str, object]:
    """runtime_figures and Stop without isolation, nothing else."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright, extra_args=(EAGER_MEMORY,))
        bench = Bench(browser, base, plain_base, site_dir)
        figures: dict[str, object] = runtime_figures(bench)
        figures["stops_ms"] = bench.stop_then_run_ms()
        browser.close()
    return figures


def runtime_only() -> None:
    """Only runtime_figures and Stop without isolation (``python scripts/bench_browser.py runtime``)."""
    figures = _serve_and_measure(measure_runtime)
    print_runtime_figures(figures)
    stops = figures["stops_ms"]
    restart = statistics.median(stops)
    _line("no isolation: Stop a loop, Run: Stop to last line", f"{restart:,.0f} ms", "≤ 1,000 ms", restart <= 1000)
    print(f"browser  (each Stop: {', '.join(f'{ms:,.0f}' for ms in stops)} ms)")


def second_chapter_boot(bench: Bench) -> tuple[float, dict[str, object]]:
    """Chapter 1 warm, then chapter 2 as a full load and Run at once: (navigation to output, the Run
    worker's boot timings on chapter 2, ms after navigation: see boot.mjs's bootPython)."""
    context, page = bench.open_chapter()
    page.goto(bench.base + CHAPTER)
    page.wait_for_selector("html[data-rf-runtime=ready]", timeout=TIMEOUT_MS)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(3000)  # time for V8 to keep the wasm's compiled code, and the page its copy
    page.goto(bench.base + KV_CHAPTER, wait_until="commit")
    page.wait_for_selector("[data-rf-cell][data-rf-mounted]", timeout=TIMEOUT_MS)
    bench.run_and_time(page)
    full_load = page.evaluate("window.__rf.finished[0]")
    timings = page.evaluate(
        "import('../../javascripts/runtime/runtime.mjs').then(({ runtime }) =>"
        " ({ ...runtime.timings, startedAt: runtime.startedAt }))"
    )
    context.close()
    return full_load, timings


def compare(old_site: Path, new_site: Path | None = None) -> None:
    """``compare OLD_SITE``: this checkout's build against a site built before (``OLD_SITE``), each
    figure of issue 23's second chapter and Stop without isolation, old and new interleaved, with
    the bare boot between them and the load average printed beside every round. ``new_site``: a
    site already built from this checkout, instead of a fresh build."""
    import os

    from playwright.sync_api import sync_playwright

    require("bench_browser")

    with tempfile.TemporaryDirectory(prefix="roofline-bench-") as folder:
        if new_site is None:
            new_site = Path(folder) / "site"
            serve.build_site(new_site)
        sites = {"old": old_site.resolve(), "new": new_site}
        servers = []
        bases: dict[str, tuple[str, str]] = {}
        for name, site in sites.items():
            (site / "bench").mkdir(exist_ok=True)
            (site / "bench" / "bare.html").write_text(
                BARE_PAGE.replace("PYODIDE_VERSION", PYODIDE_VERSION), encoding="utf-8"
            )
            pair = serve.make_server(site, quiet=True), serve.make_server(site, isolated=False, quiet=True)
            servers.extend(pair)
            bases[name] = (serve.serve_in_background(pair[0]), serve.serve_in_background(pair[1]))
        try:
            with sync_playwright() as playwright:
                browser = launch(playwright)
                benches = {name: Bench(browser, *bases[name], sites[name]) for name in sites}
                for round_ in range(COLD_REPEATS):
                    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
                    bare = benches["old"].bare_boot_ms()
                    print(f"round {round_ + 1} (load {load}): bare Pyodide {bare:,.0f} ms", flush=True)
                    for name, bench in benches.items():
                        full, timings = second_chapter_boot(bench)
                        split = ", ".join(
                            f"{key} {value:,.0f}" if isinstance(value, float) else f"{key} {value}"
                            for key, value in timings.items()
                        )
                        print(
                            f"  {name}: ch. 1 then ch. 2, navigation to output {full:,.0f} ms,"
                            f" {full / bare:.2f} × bare ({split})",
                            flush=True,
                        )
                    for name, bench in benches.items():
                        stops = bench.stop_then_run_ms()
                        print(
                            f"  {name}: no isolation, Stop to output: "
                            + ", ".join(f"{ms:,.0f}" for ms in stops)
                            + " ms",
                            flush=True,
                        )
                browser.close()
        finally:
            for server in servers:
                server.shutdown()


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
        browser = launch(playwright, extra_args=(EAGER_MEMORY,))
        bench = Bench(browser, base, plain_base, site_dir)
        figures.update(runtime_figures(bench))
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
        calc = bench.calculator_ms(page)
        latencies = [result["inputToNumbersMs"] for result in calc]
        figures["calc_p50_ms"] = statistics.median(latencies)
        figures["calc_p95_ms"] = _percentile(latencies, 0.95)
        figures["calc_python_p50_ms"] = statistics.median(result["pythonMs"] for result in calc)
        figures["calc_python_p95_ms"] = _percentile([result["pythonMs"] for result in calc], 0.95)
        figures["calc_render_p50_ms"] = statistics.median(result["renderMs"] for result in calc)
        figures.update(_deploy_figures(bench.deploy_ms()))
        figures.update(own_figures(bench, page))
        kv = bench.kv_budget_ms()
        figures["kv_calc_p95_ms"] = _percentile([result["inputToNumbersMs"] for result in kv], 0.95)
        figures["kv_calc_python_p95_ms"] = _percentile([result["pythonMs"] for result in kv], 0.95)
        figures.update(_which_format_figures(bench.which_format_ms()))
        figures.update(_speculation_figures(bench.speculation_ms()))
        figures.update(declared_figures(bench))
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


def _speculation_figures(results: list[dict]) -> dict[str, float]:
    """Chapter 5's calculator: input to numbers p50 and p95, Python's view p95 (and CPython's for the
    same inputs here), drawing p50."""
    return {
        "spec_p50_ms": statistics.median(result["inputToNumbersMs"] for result in results),
        "spec_p95_ms": _percentile([result["inputToNumbersMs"] for result in results], 0.95),
        "spec_python_p95_ms": _percentile([result["pythonMs"] for result in results], 0.95),
        "spec_render_p50_ms": statistics.median(result["renderMs"] for result in results),
        "spec_cpython_p95_ms": _percentile(speculation_cpython_ms(_speculation_inputs(CALC_INPUTS)), 0.95),
    }


def _speculation_lines(figures: dict[str, object]) -> None:
    speculation = figures["spec_p95_ms"]
    _line(
        f"speculation (ch. 5) input to numbers, p50 / p95 ({CALC_INPUTS})",
        f"{figures['spec_p50_ms']:.1f} / {speculation:.1f} ms",
        "≤ 50 ms",
        speculation <= 50,
    )
    _line("  ratio to chapter 1's calculator p95", f"{speculation / figures['calc_p95_ms']:.2f} ×")
    _line(
        "  of which Python's view, p95",
        f"{figures['spec_python_p95_ms']:.1f} ms",
        f"CPython here {figures['spec_cpython_p95_ms']:.1f} ms",
    )
    _line("  of which drawing the numbers and chart, p50", f"{figures['spec_render_p50_ms']:.1f} ms")


def _which_format_figures(results: list[dict]) -> dict[str, float]:
    """Chapter 4's calculator: input to numbers p50 and p95, and Python's view p95."""
    latencies = [result["inputToNumbersMs"] for result in results]
    return {
        "which_format_p50_ms": statistics.median(latencies),
        "which_format_p95_ms": _percentile(latencies, 0.95),
        "which_format_python_p95_ms": _percentile([result["pythonMs"] for result in results], 0.95),
    }


def _which_format_lines(figures: dict[str, object]) -> None:
    which = figures["which_format_p95_ms"]
    _line(f"Which format (ch. 4) input to numbers, p95 ({CALC_INPUTS})", f"{which:.1f} ms", "≤ 50 ms", which <= 50)
    _line("  p50", f"{figures['which_format_p50_ms']:.1f} ms")
    _line("  ratio to chapter 1's calculator p95", f"{which / figures['calc_p95_ms']:.2f} ×")
    _line("  of which Python's view, p95", f"{figures['which_format_python_p95_ms']:.1f} ms")


def _deploy_figures(results: list[dict]) -> dict[str, float]:
    """Chapter 6's calculator: input to numbers, and each part of it, p50 and p95."""
    figures = {}
    for key, name in (
        ("inputToNumbersMs", ""),
        ("pythonMs", "_python"),
        ("roundTripMs", "_trip"),
        ("renderMs", "_render"),
        ("inputToSendMs", "_send"),
    ):
        values = [result[key] for result in results]
        figures[f"deploy{name}_p50_ms"] = statistics.median(values)
        figures[f"deploy{name}_p95_ms"] = _percentile(values, 0.95)
    return figures


def declared_calculators() -> list[tuple[str, str, str, list[dict[str, object]]]]:
    """Every chapter calculator that declares its own benchmark: ``BENCH_INPUTS`` (the inputs a reader
    would try, each differing from the last) and ``BENCH_TRIGGER`` (the field whose input event asks for
    the answer) in its module. As (chapter URL, name, trigger, inputs). A new chapter's calculator joins
    the benchmark by declaring them, without an edit here."""
    from sitegen.pages import chapters

    found = []
    for folder in chapters(ROOT / "docs"):
        for name in folder.calculators:
            module = folder.calculator(name)
            inputs = getattr(module, "BENCH_INPUTS", None)
            if inputs:
                found.append((folder.url, name, module.BENCH_TRIGGER, list(inputs)))
    return found


def declared_figures(bench: Bench) -> dict[str, object]:
    """Each declared calculator on a page of its own chapter: input to numbers, p50 and p95."""
    figures: dict[str, object] = {"declared": []}
    for url, name, trigger, inputs in declared_calculators():
        times = [result["inputToNumbersMs"] for result in bench.calculator_on_own_page_ms(url, name, trigger, inputs)]
        figures["declared"].append(name)
        figures[f"{name}_inputs"] = len(times)
        figures[f"{name}_p50_ms"] = statistics.median(times)
        figures[f"{name}_p95_ms"] = _percentile(times, 0.95)
    return figures


def _declared_lines(figures: dict[str, object]) -> None:
    for name in figures["declared"]:
        p95 = figures[f"{name}_p95_ms"]
        _line(
            f"{name} input to numbers, p50 / p95 ({figures[f'{name}_inputs']})",
            f"{figures[f'{name}_p50_ms']:.1f} / {p95:.1f} ms",
            "≤ 50 ms",
            p95 <= 50,
        )


def _deploy_lines(figures: dict[str, object]) -> None:
    deploy = figures["deploy_p95_ms"]
    _line(f"Deploy it (ch. 6) input to numbers, p95 ({CALC_INPUTS})", f"{deploy:.1f} ms", "≤ 50 ms", deploy <= 50)
    _line("  p50", f"{figures['deploy_p50_ms']:.1f} ms")
    _line(
        "  p50 / p95: Python / round trip / render / input to send",
        " · ".join(
            f"{figures[f'deploy_{part}_p50_ms']:.1f} / {figures[f'deploy_{part}_p95_ms']:.1f}"
            for part in ("python", "trip", "render", "send")
        )
        + " ms",
    )
    _line("  ratio to chapter 1's calculator p95", f"{deploy / figures['calc_p95_ms']:.2f} ×")


def own_figures(bench: Bench, page: object) -> dict[str, float]:
    """Paste to numbers for a config.json, and the built-in model's update, p50 and p95 in one page."""
    own = bench.own_config_ms(page)
    figures = {}
    for kind in ("pasted", "builtin"):
        failed = [result for result in own[kind] if result["failed"]]
        if failed:
            raise RuntimeError(f"{len(failed)} {kind} updates failed in the page")
        latencies = [result["inputToNumbersMs"] for result in own[kind]]
        figures[f"own_{kind}_p50_ms"] = statistics.median(latencies)
        figures[f"own_{kind}_p95_ms"] = _percentile(latencies, 0.95)
        figures[f"own_{kind}_python_p95_ms"] = _percentile([result["pythonMs"] for result in own[kind]], 0.95)
    return figures


def print_own_figures(figures: dict[str, object]) -> None:
    pasted, builtin = figures["own_pasted_p95_ms"], figures["own_builtin_p95_ms"]
    _line(
        f"pasted config.json to numbers, p50 / p95 ({OWN_INPUTS})",
        f"{figures['own_pasted_p50_ms']:.1f} / {pasted:.1f} ms",
        "≤ 100 ms",
        pasted <= 100,
    )
    _line("  built-in model from the menu, p50 / p95", f"{figures['own_builtin_p50_ms']:.1f} / {builtin:.1f} ms")
    _line("  ratio of the p95s (pasted ÷ built-in)", f"{pasted / builtin:.2f} ×")
    _line(
        "  of which Python's view, p95: pasted / built-in",
        f"{figures['own_pasted_python_p95_ms']:.1f} / {figures['own_builtin_python_p95_ms']:.1f} ms",
    )


def measure_own(base: str, plain_base: str, site_dir: Path) -> dict[str, object]:
    """The pasted-config figures on one warm page of chapter 1."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        bench = Bench(browser, base, plain_base, site_dir)
        context, page = bench.warm_page()
        figures = own_figures(bench, page)
        context.close()
        browser.close()
    return figures


def own_only() -> dict[str, object]:
    """Only the pasted-config figures (``bench_browser.py own``): build, serve, one warm page."""
    figures = _serve_and_measure(measure_own)
    print_own_figures(figures)
    return figures


def _serve_and_measure(measure_site) -> dict[str, object]:
    """Build the site into a temporary folder, serve it (and without isolation), and measure it."""
    require("bench_browser")
    with tempfile.TemporaryDirectory(prefix="roofline-bench-") as folder:
        site_dir = Path(folder) / "site"
        server = serve.make_server(site_dir, quiet=True)
        plain_server = serve.make_server(site_dir, isolated=False, quiet=True)
        base = f"http://127.0.0.1:{server.server_port}/"
        serve.build_site(site_dir, site_url=base)
        (site_dir / "bench").mkdir()
        (site_dir / "bench" / "bare.html").write_text(
            BARE_PAGE.replace("PYODIDE_VERSION", PYODIDE_VERSION), encoding="utf-8"
        )
        serve.serve_in_background(server)
        plain_base = serve.serve_in_background(plain_server)
        try:
            return measure_site(base, plain_base, site_dir)
        finally:
            server.shutdown()
            plain_server.shutdown()


def measure_calculators(base: str, plain_base: str, site_dir: Path) -> dict[str, object]:
    """The calculators of chapters 1, 2, 4, 5 and 6, and every one that declares its benchmark
    (``declared_calculators``), each on a page of its own chapter."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        bench = Bench(browser, base, plain_base, site_dir)
        context, page = bench.warm_page()
        calc = [result["inputToNumbersMs"] for result in bench.calculator_ms(page)]
        context.close()
        figures: dict[str, object] = {"calc_p50_ms": statistics.median(calc), "calc_p95_ms": _percentile(calc, 0.95)}
        figures.update(_deploy_figures(bench.deploy_ms()))
        kv = [result["inputToNumbersMs"] for result in bench.kv_budget_ms()]
        figures["kv_calc_p95_ms"] = _percentile(kv, 0.95)
        figures.update(_which_format_figures(bench.which_format_ms()))
        figures.update(_speculation_figures(bench.speculation_ms()))
        figures.update(declared_figures(bench))
        browser.close()
    return figures


def report_calculators() -> dict[str, object]:
    """``calculators``: build, serve and measure the calculators only (chapters 1, 2, 4, 5, 6 and the declared)."""
    figures = _serve_and_measure(measure_calculators)
    _line(
        "calculator (ch. 1) input to numbers, p50 / p95",
        f"{figures['calc_p50_ms']:.1f} / {figures['calc_p95_ms']:.1f} ms",
    )
    _deploy_lines(figures)
    kv = figures["kv_calc_p95_ms"]
    _line(f"KV budget (ch. 2) input to numbers, p95 ({CALC_INPUTS})", f"{kv:.1f} ms", "≤ 16 ms", kv <= 16)
    _line("  ratio to chapter 1's calculator p95", f"{kv / figures['calc_p95_ms']:.2f} ×")
    _which_format_lines(figures)
    _speculation_lines(figures)
    _declared_lines(figures)
    return figures


#: In the page: click "New question" (or "Check" with a wrong answer), and the milliseconds until
#: Python's reply is written into the result line.
QUIZ_CLICK_MS = """(action) => new Promise((resolve, reject) => {
  setTimeout(() => reject(new Error(`no reply to ${action} in 120 s`)), 120000);
  const quiz = document.querySelector("[data-rf-quiz]");
  const result = quiz.querySelector("[data-rf-quiz-result]");
  const done = action === "new" ? (text) => text.startsWith("New question") : (text) => text && text !== "Checking…";
  result.textContent = "";
  if (action === "check") quiz.querySelector("input[name=answer]").value = "123";
  const started = performance.now();
  const watch = new MutationObserver(() => {
    if (done(result.textContent)) {
      watch.disconnect();
      resolve(performance.now() - started);
    }
  });
  watch.observe(result, { childList: true, characterData: true, subtree: true });
  quiz.querySelector(action === "new" ? "[data-rf-quiz-new]" : "[data-rf-quiz-check]").click();
})"""
QUIZ_QUESTIONS = 40


def measure_quiz(base: str, plain_base: str, site_dir: Path) -> dict[str, object]:
    """Every chapter's quiz once Python is up: click to reply for a new question and for a check,
    ``QUIZ_QUESTIONS`` of each a chapter, beside chapter 1's calculator in the same browser."""
    from playwright.sync_api import sync_playwright

    from sitegen.pages import chapters

    slugs = [chapter.slug for chapter in chapters(ROOT / "docs") if chapter.quiz_path]
    figures: dict[str, object] = {}
    with sync_playwright() as playwright:
        browser = launch(playwright)
        bench = Bench(browser, base, plain_base, site_dir)
        context, page = bench.warm_page()
        calc = [result["inputToNumbersMs"] for result in bench.calculator_ms(page)]
        figures["calc_p95_ms"] = _percentile(calc, 0.95)
        for slug in slugs:
            page.goto(f"{base}chapters/{slug}/")
            page.wait_for_selector("[data-rf-quiz][data-rf-mounted]", timeout=TIMEOUT_MS)
            page.evaluate(QUIZ_CLICK_MS, "new")  # the first one waits for Python
            new = [page.evaluate(QUIZ_CLICK_MS, "new") for _ in range(QUIZ_QUESTIONS)]
            check = [page.evaluate(QUIZ_CLICK_MS, "check") for _ in range(QUIZ_QUESTIONS)]
            figures[slug] = {"new_p95_ms": _percentile(new, 0.95), "check_p95_ms": _percentile(check, 0.95)}
        context.close()
        browser.close()
    return figures


def report_quiz() -> dict[str, object]:
    """``quiz``: build, serve and time every chapter's quiz in Chromium."""
    figures = _serve_and_measure(measure_quiz)
    _line("calculator (ch. 1) input to numbers, p95 (baseline)", f"{figures['calc_p95_ms']:.1f} ms")
    for slug, timed in figures.items():
        if isinstance(timed, dict):
            new, check = timed["new_p95_ms"], timed["check_p95_ms"]
            _line(f"quiz ({slug}) new question, p95", f"{new:.1f} ms", "≤ 100 ms", new <= 100)
            _line(f"quiz ({slug}) grading, p95", f"{check:.1f} ms", "≤ 50 ms", check <= 50)
    return figures


def report() -> dict[str, object]:
    """Build, serve, measure and print every browser figure; return them as a dict."""
    figures = _serve_and_measure(measure)
    print_runtime_figures(figures)
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
    print_own_figures(figures)
    kv = figures["kv_calc_p95_ms"]
    _deploy_lines(figures)
    _line(f"KV budget (ch. 2) input to numbers, p95 ({CALC_INPUTS})", f"{kv:.1f} ms", "≤ 16 ms", kv <= 16)
    _line("  ratio to chapter 1's calculator p95", f"{kv / figures['calc_p95_ms']:.2f} ×")
    _line("  of which Python's view, p95", f"{figures['kv_calc_python_p95_ms']:.1f} ms")
    _which_format_lines(figures)
    _speculation_lines(figures)
    _declared_lines(figures)
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
    if sys.argv[1:] == ["runtime"]:
        runtime_only()
    elif sys.argv[1:] == ["calculators"]:
        report_calculators()
    elif sys.argv[1:] == ["own"]:
        own_only()
    elif sys.argv[1:] == ["quiz"]:
        report_quiz()
    elif len(sys.argv) in (3, 4) and sys.argv[1] == "compare":
        compare(*map(Path, sys.argv[2:]))
    elif sys.argv[1:]:
        sys.exit("usage: bench_browser.py [runtime | calculators | own | quiz | compare OLD_SITE [NEW_SITE]]")
    else:
        report()


if __name__ == "__main__":
    main()
