"""Plain helpers shared by the test modules (fixtures live in the repository's conftest.py).

pytest's ``pythonpath`` puts tests/ (this module) and scripts/ (``sitegen``, the helper
scripts) on the path; no test module imports another.

- The tests' site: this checkout copied, with the README's worked example chapter written
  in (its files and its nav line, exactly as the README shows them) and the widget test
  page (``tests/fixtures/widgets``), then built once (``conftest.site``).
- The command line: good spec files and the one-line-error check.
- The browser: a context that records every request, a calculator's inputs and outputs, and what
  every chapter page shows (its Run cell, calculator, figures, self-check and interview box).
- Node: one test file run with Node's own test runner.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from roofline.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: Addresses a page reads without the network (no host sees them): data, a blob the page made, about:.
OFF_THE_NETWORK = ("data:", "blob:", "about:")
#: Left out of a repo copy: big, generated, or not needed to build.
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "node_modules", "site", ".cache", "__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache"
)
#: The widget test page's folder, copied into the tests' site as docs/test-widgets/.
WIDGETS = ROOT / "tests" / "fixtures" / "widgets"
#: A file of the README's worked example: ``<!-- example: PATH -->`` and the fenced block after it.
EXAMPLE_FILE = re.compile(r"<!-- example: (?P<path>\S+) -->\n```\w*\n(?P<body>.*?)```", re.DOTALL)
#: The worked example's nav line, shown in the README as ``<!-- example nav line -->`` and a block.
EXAMPLE_NAV = re.compile(r"<!-- example nav line -->\n```\w*\n(?P<line>.*?)\n```", re.DOTALL)


# ---- The tests' site -------------------------------------------------------------------------------


def readme_example() -> tuple[dict[str, str], str]:
    """The README's worked example: its files (path -> text) and its nav line for mkdocs.yml."""
    text = README.read_text(encoding="utf-8")
    files = {match["path"]: match["body"] for match in EXAMPLE_FILE.finditer(text)}
    nav = EXAMPLE_NAV.search(text)
    assert files and nav, "the README's 'Writing a chapter' shows no worked example"
    return files, nav["line"]


def example_slug() -> str:
    """The worked example chapter's slug, from the path of its page."""
    files, _ = readme_example()
    pages = [path for path in files if re.fullmatch(r"docs/chapters/[^/]+/index\.md", path)]
    assert len(pages) == 1, f"the worked example should hold one chapter page, not {pages}"
    return pages[0].split("/")[2]


def add_nav_line(mkdocs_yml: Path, line: str) -> None:
    """Put ``line`` after the nav's last chapter line, as an author adds a chapter."""
    lines = mkdocs_yml.read_text(encoding="utf-8").splitlines(keepends=True)
    last = max(i for i, text in enumerate(lines) if "chapters/" in text and text.lstrip().startswith("- "))
    indent = lines[last][: len(lines[last]) - len(lines[last].lstrip())]
    lines.insert(last + 1, indent + line.strip() + "\n")
    mkdocs_yml.write_text("".join(lines), encoding="utf-8")


def copy_checkout(target: Path, *, example: bool = False, widgets: bool = False, source: Path = ROOT) -> Path:
    """This checkout without .git, .venv and build output (node_modules linked), optionally with the
    README's worked example written in and the widget test page added. ``source`` copies another
    checkout instead: the tests' site's (``conftest.site``), whose figures/ its build already made."""
    shutil.copytree(source, target, ignore=COPY_IGNORE, symlinks=True)
    (target / "node_modules").symlink_to(ROOT / "node_modules")
    if example:
        files, nav = readme_example()
        for path, body in files.items():
            (target / path).parent.mkdir(parents=True, exist_ok=True)
            (target / path).write_text(body, encoding="utf-8")
        add_nav_line(target / "mkdocs.yml", nav)
    if widgets:
        shutil.copytree(WIDGETS, target / "docs", dirs_exist_ok=True)
    return target


def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every process of this test run shares. pytest-xdist gives each worker a base folder of
    its own inside the run's (``…/pytest-N/popen-gw0``); without xdist it is the run's own."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if "PYTEST_XDIST_WORKER" in os.environ else base


def run_owner() -> int:
    """The process whose end is the end of this test run: xdist's controller (every worker's parent),
    or this process when there are no workers."""
    return os.getppid() if "PYTEST_XDIST_WORKER" in os.environ else os.getpid()


@contextmanager
def exclusive(lock: Path) -> Iterator[None]:
    """Hold ``lock`` (a file) against every other process of the run: the first to come builds, the
    others wait and then read what it left."""
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def serve_for_run(directory: Path, *, isolated: bool) -> str:
    """Serve ``directory`` with ``scripts/serve.py`` (what ``make serve`` runs) in a process of its own that
    ends with the test run, so that every worker can use it while any still runs; its base URL."""
    command = [sys.executable, str(ROOT / "scripts" / "serve.py"), "--port", "0", "--quiet"]
    command += ["--directory", str(directory), "--exit-with", str(run_owner())]
    if not isolated:
        command.append("--no-isolation")
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    started = re.search(r"http://127\.0\.0\.1:\d+/", server.stdout.readline())
    if started is None:
        server.kill()
        pytest.fail(f"scripts/serve.py did not start on {directory}", pytrace=False)
    return started[0]


def site_chapters() -> list[str]:
    """The chapters of the tests' site, by slug: this checkout's, then the worked example."""
    from sitegen.pages import chapters

    return [chapter.slug for chapter in chapters(ROOT / "docs")] + [example_slug()]


def view_in(root: Path, slug: str, name: str, request: dict[str, Any]) -> dict[str, Any]:
    """Calculator ``name`` of page folder ``slug`` answering ``request`` in CPython, in the checkout at
    ``root`` (a process of its own, whose ``roofline`` is that checkout's: the worked example's module
    is in the tests' site's package, not in this one)."""
    code = (
        "import json, sys; from pathlib import Path; from sitegen.pages import find; "
        "module = find(Path('docs').resolve(), sys.argv[1]).calculator(sys.argv[2]); "
        "print(json.dumps(module.view(**json.loads(sys.argv[3]))))"
    )
    command = [sys.executable, "-c", code, slug, name, json.dumps(request)]
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def mkdocs_build(
    root: Path, site_dir: Path, site_url: str | None = None, *, figures: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` of the checkout at ``root`` into ``site_dir``, as ``make build`` runs it;
    ``site_url`` through ``SITE_URL``, which mkdocs.yml reads (see README, "Publishing").

    ``figures="skip"`` (``ROOFLINE_FIGURES``, hooks/figures.py) builds from ``root``'s figures/ as they
    are, computing no page: for a copy of the tests' site's checkout, whose build just made them, when
    the test is about something else (tests/test_figures.py checks that generation is current)."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env.pop("ROOFLINE_FIGURES", None)
    env.pop("SITE_URL", None)
    if site_url:
        env["SITE_URL"] = site_url
    if figures:
        env["ROOFLINE_FIGURES"] = figures
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=900, check=False)


def checkout_env(root: Path) -> dict[str, str]:
    """The environment for a command run in the checkout at ``root`` (a test's copy): its package,
    its scripts and its tests first on the path, and none of this run's ``PYTEST_`` settings."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join(str(root / folder) for folder in ("", "scripts", "tests"))
    env["NO_MKDOCS_2_WARNING"] = "1"
    return env


def run_pytest(
    tmp_path: Path, source: str | dict[str, str], *options: str, workers: int = 2
) -> subprocess.CompletedProcess[str]:
    """pytest as ``make test`` runs it (``workers`` workers, ``--dist loadgroup``), with this
    repository's conftest.py as a plugin (its scheduling, its ``browser``, the hang guard), on
    ``source`` written as ``tmp_path/test_it.py`` (or on several files: name -> source);
    ``options`` are added to its command line. A run of its own: none of this run's ``PYTEST_``
    settings (``PYTEST_ADDOPTS``, an xdist worker's own)."""
    files = source if isinstance(source, dict) else {"test_it.py": source}
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text), encoding="utf-8")
    command = [sys.executable, "-m", "pytest", "-p", "conftest", "-n", str(workers), "--dist", "loadgroup"]
    command += ["--no-loadscope-reorder", "--max-worker-restart", "0", "-p", "no:cacheprovider", "-q", *options, *files]
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join(str(ROOT / folder) for folder in ("", "scripts", "tests"))
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240, check=False)


# ---- The command line ------------------------------------------------------------------------------

GOOD_GPU = """\
[gpu."my-gpu"]
name = "My GPU"
memory_bytes = 96e9
bandwidth_bytes_per_s = 4e12
source = "https://example.com/my-gpu-datasheet"

[gpu."my-gpu".dense_flops_per_s]
bf16 = 1e15
fp8 = 2e15
"""

GOOD_MODEL = """\
[model."tiny-1b"]
name = "Tiny 1B"
layers = 16
hidden_size = 2048
attention_heads = 32
kv_heads = 8
head_dim = 64
ffn_size = 8192
vocab_size = 128256
tied_embeddings = true
source = "https://example.com/tiny/config.json"
"""


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``roofline ARGV`` in this process: its exit status, stdout and stderr."""
    try:
        status = main(list(argv))
    except SystemExit as exit_:  # argparse exits itself
        status = int(exit_.code or 0)
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "specs.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def assert_one_line_error(status: int, err: str, *fragments: str) -> None:
    assert status == 2
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, f"{fragment!r} not in {err!r}"


# ---- The browser ------------------------------------------------------------------------------------

# How long a browser test waits for what a reader would see. Every wait is for a state (an
# attribute, a text), never for a time, so these bounds cost nothing when the state comes: they
# are how long a loaded machine may take before the test calls it a failure. With two cores spun
# by other processes beside two workers (make test-stress), a boot took up to ~25 s and a step
# (a restart, which is a boot, included) over 10 s; each bound is about three times that.
BOOT_MS = 90_000  # a Pyodide boot: about 3 s on a quiet machine
STEP_MS = 45_000  # anything after it: a Run, a calculator's answer, Stop, a restart
#: Playwright's own default for an ``expect`` with no timeout (5 s) and for an action (30 s), raised
#: for every browser test (conftest.browser): a click or an assertion waits as long as a step may.
DEFAULT_MS = STEP_MS


class Relaunching:
    """A Playwright browser (``conftest.browser``) launched again when it has died (it crashed, or
    the hang guard, ``hang_guard.py``, killed the Chromium a hung test waited on), so that one dead
    browser fails one test, not every later test of its worker. Everything else is the browser's own."""

    def __init__(self, playwright: Any, launch: Callable[[Any], Any]) -> None:
        self._playwright = playwright
        self._launch = launch
        self._browser = launch(playwright)

    def __getattr__(self, name: str) -> Any:
        if not self._browser.is_connected():
            self._browser = self._launch(self._playwright)
        return getattr(self._browser, name)


@dataclass
class Recorded:
    """A browser context and every URL it requested (workers' requests included)."""

    context: Any
    urls: list[str] = field(default_factory=list)
    gets: list[str] = field(default_factory=list)  # GET only (the worker also sends HEADs)
    finished: list[Any] = field(default_factory=list)  # Playwright's finished requests, for their sizes

    @classmethod
    def open(cls, browser: Any, **options: Any) -> Recorded:
        """A new context of ``browser`` (``options`` as Playwright's new_context takes them), recorded."""
        recorded = cls(browser.new_context(**options))
        recorded.context.set_default_timeout(DEFAULT_MS)

        def record(request: Any) -> None:
            recorded.urls.append(request.url)
            if request.method == "GET":
                recorded.gets.append(request.url)

        recorded.context.on("request", record)
        recorded.context.on("requestfinished", lambda request: recorded.finished.append(request))
        return recorded

    def page(self) -> Any:
        return self.context.new_page()

    def close(self) -> None:
        """Close the context. A route's handler may still be fetching for a request the page sent last
        (a standby worker's wasm, say): its failure then would surface in the next test's first call
        to Playwright, so routes are dropped first, with such failures ignored."""
        self.context.unroute_all(behavior="ignoreErrors")
        self.context.close()

    def assert_only(self, base: str) -> None:
        """No request went anywhere but ``base``'s origin."""
        origin = urlsplit(base)
        foreign = [
            url
            for url in self.urls
            if not url.startswith(OFF_THE_NETWORK)
            and (urlsplit(url).scheme, urlsplit(url).netloc) != (origin.scheme, origin.netloc)
        ]
        assert foreign == [], f"requests to other origins: {foreign}"


def shown_number(value: Any) -> str:
    """A value as the page writes it back (JavaScript's String(): 1.0 is "1")."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def rendered(params: dict[str, Any]) -> str:
    """A calculator's ``data-rf-rendered`` for ``params``: its inputs as a query string, in the form's order."""
    return urlencode({name: shown_number(value) for name, value in params.items()})


def set_inputs(form: Any, params: dict[str, Any]) -> None:
    """Put ``params`` into a calculator ``form`` (a Playwright locator): select a choice, type a number."""
    for name, value in params.items():
        control = form.locator(f"[name={name}]")
        if control.evaluate("(element) => element.tagName") == "SELECT":
            control.select_option(str(value))
        else:
            control.fill(shown_number(value))


def wait_for_render(form: Any, params: dict[str, Any], timeout: int = STEP_MS) -> None:
    """Wait until a calculator ``form`` (a Playwright locator) is set up and shows its answer for ``params``.

    Its state is then "ready" (Python's answer), or "static" when ``params`` are its defaults and
    nothing asked Python yet (a page shown afresh, or after Back): the build wrote that answer, and
    it stays. The markup says "static" before the page's script runs, so set-up is checked on its
    own mark (data-rf-mounted): input sent before it would be lost.
    """
    from playwright.sync_api import expect  # only the browser tests call this

    # The first answer on a page may wait for the calculators' Python to boot: BOOT_MS, not STEP_MS.
    expect(form).to_have_attribute("data-rf-rendered", rendered(params), timeout=max(timeout, BOOT_MS))
    expect(form).to_have_attribute("data-rf-mounted", "", timeout=STEP_MS)
    expect(form).to_have_attribute("data-state", re.compile(r"^(ready|static)$"), timeout=STEP_MS)


def start_at_defaults(form: Any, defaults: dict[str, Any]) -> None:
    """Put a calculator ``form`` back to its ``defaults`` and wait for their answer.

    Tests that share one page (a module-scoped fixture) are handed out one at a time, to more
    than one worker, so any of them may run first, after any other: each starts from a state it
    sets, not from what another left. What the build writes before any input is checked on the
    built page itself (tests/test_every_chapter.py).
    """
    set_inputs(form, defaults)
    wait_for_render(form, defaults)


def text_outputs(form: Any) -> dict[str, str]:
    """Every text a calculator ``form`` shows, by its key (``data-rf-out``)."""
    return form.evaluate(
        "(form) => Object.fromEntries([...form.querySelectorAll('[data-rf-out]')]"
        ".map((element) => [element.dataset.rfOut, element.textContent]))"
    )


# ---- A chapter's page, as its browser test reads it -----------------------------------------------


@contextmanager
def open_chapter(browser: Any, site: Any, url: str) -> Iterator[Any]:
    """The chapter at ``url`` on the tests' isolated site, once its Run cell is ready; on leaving,
    no request has gone to another origin (the site works offline)."""
    from playwright.sync_api import expect  # only the browser tests call this

    recorded = Recorded.open(browser)
    page = recorded.page()
    page.goto(site.isolated + url)
    expect(page.locator("[data-rf-cell]").first).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    yield page
    recorded.assert_only(site.isolated)
    recorded.close()


@dataclass(frozen=True)
class CalculatorUnderTest:
    """One calculator of a chapter: the outputs a test compares (``shown``), as the page shows them
    and as CPython's view computes them for the same inputs."""

    view: Any  # the calculator's module (``sitegen.pages`` folder.calculator(name))
    name: str
    shown: tuple[str, ...]

    def form(self, page: Any) -> Any:
        return page.locator(f"form[data-rf-calc={self.name}]")

    def displayed(self, page: Any) -> dict[str, str]:
        """The first element of each shown key, as the page wrote it."""
        outputs = self.form(page).evaluate(
            "(form) => { const out = {}; for (const element of form.querySelectorAll('[data-rf-out]'))"
            " if (!(element.dataset.rfOut in out)) out[element.dataset.rfOut] = element.textContent; return out; }"
        )
        return {name: outputs[name] for name in self.shown}

    def expected(self, params: dict[str, Any]) -> dict[str, str]:
        view = self.view.view(**params)
        return {name: str(view[name]) for name in self.shown}

    def assert_follows(self, page: Any, changes: list[tuple[str, Any]]) -> dict[str, Any]:
        """From the defaults, change one input at a time: after each, the page shows what CPython
        computes, and something it shows changed. Returns the inputs last set."""
        params = dict(self.view.DEFAULTS)
        start_at_defaults(self.form(page), params)  # whatever test ran before on this page
        assert self.displayed(page) == self.expected(params)
        for name, value in changes:
            before = self.displayed(page)
            params[name] = value
            set_inputs(self.form(page), {name: value})
            wait_for_render(self.form(page), params)
            assert self.displayed(page) == self.expected(params), name
            assert self.displayed(page) != before, f"changing {name} changed nothing"
        return params


def assert_run_cell_prints_what_cpython_prints(page: Any, program: Path) -> None:
    """The page's Run cell of ``program`` (its file name), run, prints exactly what CPython prints for it."""
    from playwright.sync_api import expect  # only the browser tests call this

    cell = page.locator(f"[data-rf-cell][data-rf-filename='{program.name}']")
    cell.locator("[data-rf-action=run]").click()
    expect(cell.locator(".rf-status")).to_contain_text("Finished", timeout=STEP_MS)
    cpython = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, check=True).stdout
    assert cell.locator(".rf-output").text_content() == cpython


def assert_figures_self_check_and_interview(page: Any, letters: str, questions_at_least: int = 4) -> str:
    """What every chapter shows a reader: no template left unfilled, its figures lettered (a), (b), …
    in order, at least ``questions_at_least`` self-check questions that start closed, and one interview box whose weak
    answer comes before its strong one. Returns the interview box's text."""
    text = page.locator("article").inner_text()
    assert "{{" not in text and "}}" not in text
    # text_content: figures off screen are skipped by content-visibility, and innerText leaves them out.
    captions = [caption.strip() for caption in page.locator("figure figcaption").all_text_contents()]
    assert [caption[:11] for caption in captions if caption.startswith("Figure")] == [
        f"Figure ({letter})." for letter in letters
    ]
    questions = page.locator("details.question")
    assert questions.count() >= questions_at_least
    assert all(not questions.nth(i).evaluate("(details) => details.open") for i in range(questions.count()))
    box = page.locator(".admonition.note").filter(has_text="Interview signal")
    assert box.count() == 1
    answers = box.text_content()  # innerText skips what content-visibility has not laid out
    assert answers.index("Weak:") < answers.index("Strong:")
    return answers


# ---- Node --------------------------------------------------------------------------------------------


def node_test_report(node: str, name: str) -> str:
    """Run ``tests/node/NAME`` with Node's own test runner; assert it passed; return its report."""
    done = subprocess.run(
        [node, "--test", "--test-reporter=spec", str(ROOT / "tests" / "node" / name)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    return report
