"""The Run cell and the calculator in a real browser: Debian's Chromium driven by Playwright.

The machinery every widget page shares (runcell.mjs, calculator.mjs, the worker, the
snapshot), tried on chapter 1's page and on the test-only widget page. The site is the
tests' one build (``conftest.site``), served twice: with COOP/COEP, so the page is
cross-origin isolated and Stop interrupts Python, and without, as a plain static host
would, so Stop restarts the worker.

Every browser context records every request; each test ends by checking that
none went anywhere but the local server. Waits are on DOM state (data-state,
data-rf-rendered), never on sleeps; the first Pyodide boot gets 60 s.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

import support
from sitegen.pages import PageFolder, find
from support import BOOT_MS, STEP_MS, Recorded

pytestmark = [pytest.mark.browser, pytest.mark.slow]

playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

ROOT = support.ROOT
CHAPTER = "chapters/prefill-vs-decode/"
CHAPTER_FOLDER = find(ROOT / "docs", "prefill-vs-decode")
PROGRAM = CHAPTER_FOLDER.folder / "programs" / "h100_decode_prefill.py"
FIELDS = ("gpu", "model", "precision", "gpus", "users", "context")
CALC = "decode_speed"
calculator_view = CHAPTER_FOLDER.calculator(CALC)
#: The test-only page with two Run cells and two calculators (tests/fixtures/widgets).
WIDGETS = PageFolder(support.WIDGETS, support.WIDGETS / "test-widgets")
WIDGETS_PAGE = "test-widgets/"


def _context(browser: object, **options: object) -> Recorded:
    return Recorded.open(browser, **options)


@pytest.fixture(scope="module")
def chapter(browser: object, site) -> Iterator[tuple[object, Recorded]]:
    """One page of the chapter on the isolated server, booted once and shared by the tests below."""
    recorded = _context(browser)
    page = recorded.page()
    page.goto(site.isolated + CHAPTER)
    expect(page.locator("[data-rf-cell]")).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    yield page, recorded
    recorded.assert_only(site.isolated)
    recorded.close()


@functools.cache
def cpython_output(source: str | None = None) -> str:
    """What CPython prints for the program (the committed file unless ``source`` is given); asked once
    per session for each, since a dozen tests compare with the committed program's output."""
    command = [sys.executable, str(PROGRAM)] if source is None else [sys.executable, "-c", source]
    return subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT).stdout


def run(page: object, code: str | None = None, cell: object | None = None) -> str:
    """Put ``code`` (or the committed program) in the cell, press Run, wait for the end; return the output.

    Not Reset: once anything has run, Reset also restarts Python, which the tests of Reset check.
    """
    cell = cell or page.locator("[data-rf-cell]")
    expect(cell).to_have_attribute("data-state", "ready", timeout=STEP_MS)
    cell.locator("textarea").fill(PROGRAM.read_text(encoding="utf-8") if code is None else code)
    cell.locator("[data-rf-action=run]").click()
    expect(cell).to_have_attribute("data-state", "ready", timeout=STEP_MS)
    return cell.locator(".rf-output").text_content()


# ---- The Run cell --------------------------------------------------------------------------------


def test_run_prints_what_cpython_prints_for_the_same_file(chapter) -> None:
    page, _ = chapter
    assert page.evaluate("crossOriginIsolated") is True
    assert page.locator("[data-rf-cell] textarea").input_value() == PROGRAM.read_text(encoding="utf-8")
    output = run(page)
    assert output == cpython_output()
    assert "Llama 3.1 8B" in output and "compute-bound near 295 users" in output
    expect(page.locator("[data-rf-cell] .rf-status")).to_contain_text("Finished in")


def test_edited_code_runs_and_reset_restores_the_file(chapter) -> None:
    page, _ = chapter
    code = (
        "from roofline import estimate\n"
        "print(round(estimate('h100-sxm', 'llama-3.1-8b', precision='fp8').decode_tokens_per_s_per_user))\n"
    )
    assert run(page, code) == cpython_output(code)
    editor = page.locator("[data-rf-cell] .rf-editor")
    # The highlighted copy under the transparent textarea follows every edit.
    assert editor.locator(".rf-editor__highlight").text_content().rstrip() == code.rstrip()
    page.locator("[data-rf-action=reset]").click()
    assert editor.locator("textarea").input_value() == PROGRAM.read_text(encoding="utf-8")


def test_an_exception_shows_a_traceback_without_pyodide_frames(chapter) -> None:
    page, _ = chapter
    output = run(page, "import roofline\n\nroofline.estimate('h100', 'llama-3.1-8b')\n")
    assert output.startswith("Traceback (most recent call last):\n")
    assert 'File "h100_decode_prefill.py", line 3, in <module>' in output
    assert "roofline.estimate('h100', 'llama-3.1-8b')" in output  # the reader's line is quoted
    assert output.rstrip().endswith("roofline.errors.SpecError: unknown GPU 'h100' (did you mean 'h100-sxm'?)")
    for internal in ("_pyodide", "_base.py", "roofline_cell", "<exec>"):
        assert internal not in output
    expect(page.locator("[data-rf-cell] .rf-output [data-stream=stderr]")).to_have_count(1)


def test_the_editor_works_from_the_keyboard(chapter) -> None:
    page, _ = chapter
    cell = page.locator("[data-rf-cell]")
    textarea = cell.locator("textarea")
    textarea.fill("")
    textarea.focus()
    page.keyboard.type("for i in range(2):")
    page.keyboard.press("Enter")  # keeps the indentation, one level more after a colon
    page.keyboard.type("print(i * 21)")
    assert textarea.input_value() == "for i in range(2):\n    print(i * 21)"
    page.keyboard.press("Control+Enter")  # runs
    expect(cell.locator(".rf-output")).to_have_text("0\n21\n", timeout=STEP_MS)
    expect(cell).to_have_attribute("data-state", "ready", timeout=STEP_MS)
    page.keyboard.press("Tab")  # indents: the editor keeps Tab ...
    assert textarea.evaluate("element => element === document.activeElement")
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")  # ... until Escape hands it back, so the keyboard is never trapped
    assert not textarea.evaluate("element => element === document.activeElement")


KEY_COST = """() => new Promise((resolve) => {
  const textarea = document.querySelector("[data-rf-cell] textarea");
  textarea.focus();
  const started = performance.now();
  document.execCommand("insertText", false, "z");
  requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - started), 0));
})"""


def test_a_long_program_is_edited_plainly_and_one_too_long_is_refused(chapter) -> None:
    """Every keystroke laid out the highlighted copy of the whole text again: 8.2 s a keystroke with
    a million blank lines. Past 2,000 lines the editor is the bare textarea, scrolling; past 10,000
    lines (where Chrome's textarea alone costs seconds a keystroke) an edit is refused in one line."""
    page, _ = chapter
    cell = page.locator("[data-rf-cell]")
    editor = cell.locator(".rf-editor")
    textarea = cell.locator("textarea")
    # Set as a paste sets it: Playwright's fill types the text through Chrome's editing, which
    # takes a minute for 5,000 lines with or without the highlighting.
    textarea.evaluate(
        """(box, text) => {
          box.value = text;
          box.dispatchEvent(new InputEvent("input", { bubbles: true, inputType: "insertFromPaste" }));
        }""",
        "x = 1\n" * 5000,
    )
    expect(editor).to_have_class(re.compile(r"\brf-editor--plain\b"))
    assert editor.locator(".rf-editor__highlight").evaluate("layer => layer.childNodes.length") == 0
    textarea.evaluate("box => box.setSelectionRange(0, 0)")
    costs = [page.evaluate(KEY_COST) for _ in range(3)]
    print(f"\n5,000 lines: {', '.join(f'{cost:.0f}' for cost in costs)} ms a keystroke")
    assert textarea.input_value() == "zzz" + "x = 1\n" * 5000
    # A million blank lines pasted: refused, the program as it was, the reason in the status line.
    textarea.evaluate("box => box.setSelectionRange(box.value.length, box.value.length)")
    page.keyboard.insert_text("\n" * 1_000_000)
    expect(cell.locator(".rf-status")).to_contain_text("at most 10,000 lines")
    assert textarea.input_value() == "zzz" + "x = 1\n" * 5000
    # Back under the size: highlighted again, and it still runs.
    assert run(page, "print(6 * 7)\n") == "42\n"
    expect(editor).not_to_have_class(re.compile(r"\brf-editor--plain\b"))
    assert editor.locator(".rf-editor__highlight").text_content().startswith("print(6 * 7)")


def stop_a_runaway_loop(page: object) -> None:
    """Start a loop that never ends after printing; check the print streamed; press Stop."""
    cell = page.locator("[data-rf-cell]")
    cell.locator("textarea").fill("print('before the loop', flush=True)\nwhile True:\n    pass\n")
    cell.locator("[data-rf-action=run]").click()
    expect(cell).to_have_attribute("data-state", "running")
    # Streamed: the line is on the page while the program is still running.
    expect(cell.locator(".rf-output")).to_have_text("before the loop\n", timeout=STEP_MS)
    expect(cell).to_have_attribute("data-state", "running")
    cell.locator("[data-rf-action=stop]").click()


def test_stop_interrupts_a_runaway_loop_when_isolated(chapter) -> None:
    page, _ = chapter
    stop_a_runaway_loop(page)
    cell = page.locator("[data-rf-cell]")
    expect(cell.locator(".rf-status")).to_have_text("Stopped.", timeout=STEP_MS)
    expect(cell).to_have_attribute("data-state", "ready")
    # Interrupted, not restarted: the same warm Python runs the next program.
    assert page.evaluate("document.documentElement.dataset.rfRuntime") == "ready"
    assert run(page) == cpython_output()


def test_stop_restarts_python_without_isolation(browser, site) -> None:
    recorded = _context(browser)
    page = recorded.page()
    page.goto(site.plain + CHAPTER)
    assert page.evaluate("crossOriginIsolated") is False
    cell = page.locator("[data-rf-cell]")
    expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    stop_a_runaway_loop(page)
    # Replaced by the standby Python booted beside it once Run was pressed: at once if it is up,
    # else after its boot ("Python is restarting").
    expect(cell.locator(".rf-status")).to_contain_text("Stopped", timeout=STEP_MS)
    expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    assert page.evaluate("document.documentElement.dataset.rfBoots") == "2"
    assert boot_timings(page).get("snapshot") is True  # the new worker restored the snapshot too
    assert run(page) == cpython_output()
    recorded.assert_only(site.plain)
    recorded.close()


@pytest.mark.parametrize("served", ["isolated", "plain"])
def test_stop_and_reset_after_a_restart_leave_a_python_that_runs(browser, site, served) -> None:
    """A program that ignores the interrupt (a sleep inside C) is ended by replacing the worker; the
    new worker, and the one after Reset, must run the next program. On an isolated page the new
    worker once shared the old one's buffer, SIGINT still in it, so every later Run said "Running…"
    for good."""
    base = getattr(site, served)
    recorded = _context(browser)
    page = recorded.page()
    page.goto(base + CHAPTER)
    assert page.evaluate("crossOriginIsolated") is (served == "isolated")
    cell = page.locator("[data-rf-cell]")
    expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    for _ in range(2):  # the second Stop restarts the worker that the first one started
        boots = int(page.evaluate("document.documentElement.dataset.rfBoots"))
        cell.locator("textarea").fill("import time\nprint('asleep', flush=True)\ntime.sleep(60)\n")
        cell.locator("[data-rf-action=run]").click()
        expect(cell.locator(".rf-output")).to_have_text("asleep\n", timeout=STEP_MS)
        cell.locator("[data-rf-action=stop]").click()
        expect(cell.locator(".rf-status")).to_contain_text("Stopped", timeout=STEP_MS)
        expect(page.locator("html")).to_have_attribute("data-rf-boots", str(boots + 1), timeout=STEP_MS)
        assert run(page, "print(6 * 7)\n") == "42\n"
    cell.locator("[data-rf-action=reset]").click()  # once something ran, Reset starts a fresh Python
    assert run(page, "print(6 * 7)\n") == "42\n"
    recorded.assert_only(base)
    recorded.close()


def boot_timings(page: object) -> dict:
    """How the page's Python started (runtime.mjs keeps the worker's boot report)."""
    return page.evaluate("import('../../javascripts/runtime/runtime.mjs').then((m) => m.runtime.timings)")


def test_python_starts_from_the_build_snapshot(chapter) -> None:
    page, recorded = chapter
    assert boot_timings(page).get("snapshot") is True
    assert any(urlsplit(url).path.endswith(".snapshot.gz") for url in recorded.urls)


def test_a_corrupted_snapshot_boots_plain_says_so_and_prints_the_same(browser, site) -> None:
    recorded = _context(browser)
    page = recorded.page()

    def truncated(route: object) -> None:
        whole = route.fetch().body()
        route.fulfill(status=200, body=whole[: len(whole) // 2], content_type="application/gzip")

    recorded.context.route("**/*.snapshot.gz", truncated)
    page.goto(site.isolated + CHAPTER)
    cell = page.locator("[data-rf-cell]")
    expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    assert boot_timings(page).get("snapshot") is not True
    assert run(page) == cpython_output()
    expect(cell.locator(".rf-status")).to_contain_text(
        "Python started without its snapshot (the snapshot download is truncated or corrupted)."
    )
    recorded.assert_only(site.isolated)
    recorded.close()


def resealed(container: bytes, edit) -> bytes:
    """The served snapshot with ``edit(records)`` applied to its records (a bytearray), and, like a
    careful tamperer's, a fresh digest in its header that matches them (snapshot_codec's recordsDigest)."""
    raw = gzip.decompress(container)
    format_end = raw.index(b"\n")
    header_end = raw.index(b"\n", format_end + 1)
    header = json.loads(raw[format_end + 1 : header_end])
    records = bytearray(raw[header_end + 1 :])
    edit(records)
    base = header.get("base") or {}
    binding = f"{raw[:format_end].decode()}\n{header['rawBytes']}\n{base.get('at', '')}\n{base.get('digest', '')}\n"
    header["sha256"] = hashlib.sha256(binding.encode() + bytes(records)).hexdigest()
    return gzip.compress(raw[: format_end + 1] + json.dumps(header).encode() + b"\n" + bytes(records))


def flip_middle_byte(records: bytearray) -> None:
    records[len(records) // 2] ^= 0x40


@pytest.mark.cost(30)
def test_a_snapshot_that_is_not_the_built_one_is_never_restored(browser, site) -> None:
    """Replaced whole by one that is consistent in itself: only the page's record of the digest tells.

    One case in the browser, the hardest to see: every other reason a snapshot is refused (a byte
    altered, a truncated download, another Pyodide or wasm, no digest) comes from the same
    readSnapshot and takes the same way to a plain boot, and tests/node/golden.test.mjs checks
    each of them without a browser.
    """
    reason = "the snapshot is not the one this page was built with"

    def change(whole: bytes) -> bytes:
        return resealed(whole, flip_middle_byte)

    recorded = _context(browser)
    page = recorded.page()
    recorded.context.route(
        "**/*.snapshot.gz", lambda route: route.fulfill(status=200, body=change(route.fetch().body()))
    )
    page.goto(site.plain + CHAPTER)
    cell = page.locator("[data-rf-cell]")
    expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    assert boot_timings(page).get("snapshot") is not True
    assert run(page) == cpython_output()
    expect(cell.locator(".rf-status")).to_contain_text(f"Python started without its snapshot ({reason}).")
    # The calculator too computes with the plain Python, and gives the package's numbers.
    params = dict(calculator_view.DEFAULTS, users=33)
    set_control(page, "users", 33)
    wait_for(page, params)
    assert shown(page) == expected(params)
    recorded.assert_only(site.plain)
    recorded.close()


@pytest.mark.cost(20)
def test_a_restore_that_never_ends_is_replaced_by_a_plain_boot(browser, site) -> None:
    """The watchdog. A worker whose restore spins reports "restoring" and then nothing, busy in wasm;
    here the first worker script does just that (in JavaScript), and the page must give up on it."""
    recorded = _context(browser)
    page = recorded.page()
    spun: list[str] = []

    def spinning_once(route: object) -> None:
        if spun:
            route.continue_()
            return
        spun.append(route.request.url)
        # A worker of a cross-origin isolated page must say it may be embedded there.
        isolation = {"Cross-Origin-Embedder-Policy": "require-corp", "Cross-Origin-Resource-Policy": "same-origin"}
        # It speaks on the port the page sends first, as worker.mjs does, and then spins.
        body = 'self.onmessage = ({ data }) => { data.port.postMessage({type: "restoring"}); for (;;) {} };'
        route.fulfill(status=200, content_type="text/javascript", headers=isolation, body=body)

    recorded.context.route("**/javascripts/runtime/worker.mjs*", spinning_once)
    page.goto(site.isolated + CHAPTER)
    cell = page.locator("[data-rf-cell]")
    expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS + 15_000)
    assert spun and page.evaluate("document.documentElement.dataset.rfBoots") == "2"
    assert boot_timings(page).get("snapshot") is not True  # the second worker was told to boot plainly
    assert run(page) == cpython_output()
    expect(cell.locator(".rf-status")).to_contain_text(
        "Python started without its snapshot (restoring it took over 15 s)."
    )
    recorded.assert_only(site.isolated)
    recorded.close()


# ---- The calculator ------------------------------------------------------------------------------

OUTPUTS = ("per_user", "expected", "total", "weights", "hardware", "memory", "bound", "explain")


def shown(page: object) -> dict[str, str]:
    form = page.locator("[data-rf-calc]")
    return {name: form.locator(f"[data-rf-out={name}]").text_content() for name in OUTPUTS}


def expected(params: dict[str, object]) -> dict[str, str]:
    """The calculator's text for ``params``, computed by the package here in CPython."""
    view = calculator_view.view(**params)
    return {name: view[name] for name in OUTPUTS}


def url_query(params: dict[str, object], calculator: str = CALC) -> str:
    """The address bar's query for a calculator's inputs: each under the calculator's name."""
    return urlencode({f"{calculator}.{name}": value for name, value in params.items()})


def wait_for(page: object, params: dict[str, object], timeout: int = STEP_MS) -> None:
    support.wait_for_render(page.locator("[data-rf-calc]"), params, timeout)


def set_control(page: object, name: str, value: object) -> None:
    control = page.locator(f"#rf-{CALC}-{name}")
    if name in ("gpu", "model", "precision"):
        control.select_option(str(value))
    else:
        control.fill(str(value))


def test_every_control_changes_the_numbers_to_the_packages(chapter) -> None:
    page, _ = chapter
    params = dict(calculator_view.DEFAULTS)
    support.start_at_defaults(page.locator("[data-rf-calc]"), params)  # whatever test ran before on this page
    assert shown(page) == expected(params)
    for name, value in [
        ("gpu", "h200"),
        ("model", "mistral-7b"),
        ("precision", "fp8"),
        ("gpus", 2),
        ("users", 32),
        ("context", 32768),
    ]:
        before = shown(page)
        params[name] = value
        set_control(page, name, value)
        wait_for(page, params)
        after = shown(page)
        assert after == expected(params), name
        assert after != before, f"changing {name} changed nothing"
        # The state reaches the address bar once the reader pauses.
        page.wait_for_function("query => location.search === '?' + query", arg=url_query(params), timeout=STEP_MS)
    # And straight from the package's public API, not only through the view:
    from roofline import estimate
    from roofline import formatting as fmt

    direct = estimate("h200", "mistral-7b", precision="fp8", gpus=2, batch=32, context=32768)
    assert shown(page)["per_user"] == fmt.rate(direct.decode_tokens_per_s_per_user)
    assert shown(page)["total"] == fmt.rate(direct.decode_tokens_per_s_total)


def test_keyboard_changes_users(chapter) -> None:
    page, _ = chapter
    users = page.locator(f"#rf-{CALC}-users")
    users.focus()
    start = int(users.input_value())
    page.keyboard.press("ArrowUp")
    params = {name: page.locator(f"#rf-{CALC}-{name}").input_value() for name in FIELDS}
    assert int(params["users"]) == start + 1
    wait_for(page, params)


def test_405b_at_16_bit_does_not_fit_one_h100(chapter) -> None:
    page, _ = chapter
    params = dict(calculator_view.DEFAULTS, model="llama-3.1-405b")
    for name in FIELDS:
        set_control(page, name, params[name])
    wait_for(page, params)
    form = page.locator("[data-rf-calc]")
    expect(form).to_have_attribute("data-fits", "false")
    expect(form.locator("[data-rf-out=verdict]")).to_have_text("Does not fit")
    assert shown(page) == expected(params)
    assert shown(page)["per_user"] == "—"
    assert "811.7 GB" in shown(page)["explain"] and "use 16 GPUs" in shown(page)["explain"]  # a tensor-parallel degree


def test_the_calculator_shows_the_rule_the_ceiling_and_the_expected_band(chapter) -> None:
    page, _ = chapter
    form = page.locator("[data-rf-calc]")
    # The defaults (earlier tests share this page and leave other inputs), then a deployment that does not fit.
    defaults = dict(calculator_view.DEFAULTS)
    for name in FIELDS:
        set_control(page, name, defaults[name])
    wait_for(page, defaults)
    assert shown(page) == expected(defaults)
    # The expected figure is the calibration's (it moves when the fit does): its shape, computed by the package.
    band = expected(defaults)["expected"]
    assert re.fullmatch(r"\d[\d,]* \(band \d[\d,]*–\d[\d,]*\) tokens/s", band), band
    expect(form.locator("[data-rf-out=expected]")).to_have_text(band)
    expect(form.locator("[data-rf-out=explain]")).to_contain_text(
        "The rule of thumb gives 209; an engine reads one row of the embedding, not the whole table, so 223"
    )
    params = dict(calculator_view.DEFAULTS, model="llama-3.1-70b", precision="fp8", context=131072)
    for name in FIELDS:
        set_control(page, name, params[name])
    wait_for(page, params)
    assert shown(page) == expected(params)
    # The fix names the longest context that fits, as the package computes it (equal to CPython's above).
    assert re.search(r"To fit: shorten the context to \d[\d,]* tokens or fewer", shown(page)["explain"])
    expect(form.locator("[data-rf-out=expected]")).to_have_text("—")


def test_a_deep_link_restores_its_state_and_a_bad_value_falls_back(browser, site) -> None:
    recorded = _context(browser)
    page = recorded.page()
    params = {"gpu": "mi300x", "model": "llama-3.1-70b", "precision": "int4", "gpus": 2, "users": 64, "context": 8192}
    page.goto(site.isolated + CHAPTER + "?" + url_query(params))
    wait_for(page, params, timeout=BOOT_MS)
    assert shown(page) == expected(params)
    assert {name: page.locator(f"#rf-{CALC}-{name}").input_value() for name in FIELDS} == {
        name: str(value) for name, value in params.items()
    }
    bad = dict(params, users="many", gpu="h100")
    page.goto(site.isolated + CHAPTER + "?" + urlencode(bad))
    fixed = dict(params, users=calculator_view.DEFAULTS["users"], gpu=calculator_view.DEFAULTS["gpu"])
    wait_for(page, fixed)
    note = page.locator("[data-rf-calc] .rf-calc__note")
    expect(note).to_be_visible()
    expect(note).to_contain_text('users="many"')
    expect(note).to_contain_text('gpu="h100"')
    assert shown(page) == expected(fixed)
    recorded.assert_only(site.isolated)
    recorded.close()


def test_the_calculator_fits_a_phone(browser, site) -> None:
    recorded = _context(browser, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = recorded.page()
    page.goto(site.isolated + CHAPTER)
    form = page.locator("[data-rf-calc]")
    form.scroll_into_view_if_needed()
    overflow = form.evaluate("form => form.scrollWidth - form.clientWidth")
    assert overflow <= 0
    for name in FIELDS:  # each control is labelled and big enough to tap
        box = page.locator(f"#rf-{CALC}-{name}").bounding_box()
        assert box["height"] >= 40, name
        assert page.locator(f"label[for=rf-{CALC}-{name}]").count() == 1
    recorded.close()


# ---- Navigation, failures, requests -------------------------------------------------------------


def test_instant_navigation_away_and_back_keeps_the_widgets_working(chapter, site) -> None:
    page, _ = chapter
    page.evaluate("window.__sameDocument = true")  # survives only if no full page load happens
    page.locator("a.md-nav__link[href$='reference/hardware/']").first.click()
    expect(page).to_have_url(site.isolated + "reference/hardware/")
    page.go_back()
    expect(page.locator("[data-rf-cell]")).to_have_attribute("data-state", "ready", timeout=STEP_MS)
    assert urlsplit(page.url).path == "/" + CHAPTER
    assert page.evaluate("window.__sameDocument") is True, "navigation reloaded the page"
    assert run(page) == cpython_output()
    # Back restores the calculator's inputs from the address bar, and they still compute.
    params = dict(calculator_view.DEFAULTS)
    query = parse_qsl(urlsplit(page.url).query)
    params.update(
        {key.removeprefix(f"{CALC}."): type(params[key.removeprefix(f"{CALC}.")])(value) for key, value in query}
    )
    wait_for(page, params)
    params["users"] = 8
    set_control(page, "users", 8)
    wait_for(page, params)
    assert shown(page) == expected(params)


@pytest.mark.parametrize(
    "missing",
    # The wasm comes through the worker's own shared download; the standard library through
    # Pyodide's request, which boot.mjs watches (Pyodide alone would wait forever).
    ["pyodide.asm.wasm", "python_stdlib.zip"],
)
def test_a_missing_runtime_file_is_explained_and_retry_recovers(browser, site, missing) -> None:
    recorded = _context(browser)
    page = recorded.page()
    recorded.context.route(f"**/{missing}", lambda route: route.fulfill(status=404, body="gone"))
    page.goto(site.isolated + CHAPTER)
    cell = page.locator("[data-rf-cell]")
    expect(cell).to_have_attribute("data-state", "failed", timeout=BOOT_MS)
    expect(cell.locator(".rf-status")).to_contain_text("Python could not start")
    expect(cell.locator(".rf-status")).to_contain_text(f"a runtime file is missing ({missing}: HTTP 404)")
    expect(cell.locator(".rf-status")).to_contain_text("The rest of the page works without it.")
    # The page still reads correctly: the calculator shows its build-time numbers.
    assert shown(page) == expected(calculator_view.DEFAULTS)
    recorded.context.unroute(f"**/{missing}")
    cell.locator("[data-rf-action=retry]").click()
    expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    assert run(page) == cpython_output()
    recorded.assert_only(site.isolated)
    recorded.close()


@pytest.mark.parametrize("snapshot", [True, False], ids=["from the snapshot", "plain boot"])
def test_a_wasm_served_under_another_type_still_boots(browser, site, snapshot) -> None:
    """Some hosts send .wasm as application/octet-stream, which instantiateStreaming refuses."""
    recorded = _context(browser)

    def octet_stream(route) -> None:
        response = route.fetch()
        route.fulfill(response=response, headers={**response.headers, "content-type": "application/octet-stream"})

    def without_snapshot(route) -> None:
        # The page names no snapshot, so Pyodide requests the wasm itself (a failed restore
        # would still use the worker's own download, labelled correctly).
        response = route.fetch()
        route.fulfill(response=response, body=re.sub(r' data-rf-snapshot="[^"]*"', "", response.text()))

    recorded.context.route("**/pyodide.asm.wasm", octet_stream)
    if not snapshot:
        recorded.context.route(f"**/{CHAPTER}", without_snapshot)
    page = recorded.page()
    page.goto(site.isolated + CHAPTER)
    cell = page.locator("[data-rf-cell]")
    expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    assert run(page) == cpython_output()
    assert (
        page.evaluate(
            "import('../../javascripts/runtime/runtime.mjs').then(({ runtime }) => runtime.timings.snapshot === true)"
        )
        == snapshot
    )
    recorded.close()


def test_requests_stay_on_the_local_server_and_include_the_workers(chapter, site) -> None:
    _, recorded = chapter
    recorded.assert_only(site.isolated)
    requested = {urlsplit(url).path.rsplit("/", 1)[-1] for url in recorded.urls}
    # The worker's own fetches are recorded too, so the check above covers them.
    for name in ("worker.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "roofline-0.1.0-py3-none-any.whl"):
        assert name in requested


# ---- A page with several widgets (built only by the tests) ---------------------------------------

SECOND_PROGRAM = WIDGETS.folder / "programs" / "widgets_h200_fp8.py"
kv_view = WIDGETS.calculator("kv_cache_size")


@pytest.fixture
def widgets(browser: object, site) -> Iterator[tuple[object, Recorded]]:
    """The test-only page with two Run cells and two calculators, opened afresh for each test: the
    first checks what a page fresh from the server shows and downloads, which no other test may have
    changed, and any of them may be handed out first."""
    recorded = _context(browser)
    page = recorded.page()
    page.goto(site.isolated + WIDGETS_PAGE)
    for index in range(2):
        expect(page.locator("[data-rf-cell]").nth(index)).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    yield page, recorded
    recorded.assert_only(site.isolated)
    recorded.close()


def cell(page: object, index: int) -> object:
    return page.locator("[data-rf-cell]").nth(index)


def wait_for_calculator(page: object, name: str, params: dict[str, object]) -> object:
    form = page.locator(f"[data-rf-calc={name}]")
    support.wait_for_render(form, params)
    return form


def test_two_run_cells_share_one_python_and_two_calculators_another(widgets) -> None:
    page, recorded = widgets
    first, second = cell(page, 0), cell(page, 1)
    assert first.locator("textarea").input_value() == PROGRAM.read_text(encoding="utf-8")
    assert second.locator("textarea").input_value() == SECOND_PROGRAM.read_text(encoding="utf-8")
    first.locator("[data-rf-action=run]").click()
    second.locator("[data-rf-action=run]").click()  # queued behind the first, in the same Python
    for each, program in ((first, PROGRAM), (second, SECOND_PROGRAM)):
        expect(each.locator(".rf-status")).to_contain_text("Finished in", timeout=STEP_MS)
        expected_output = subprocess.run(
            [sys.executable, str(program)], capture_output=True, text=True, check=True, cwd=ROOT
        ).stdout
        assert each.locator(".rf-output").text_content() == expected_output
    assert "Llama 3.1 70B on NVIDIA H200" in second.locator(".rf-output").text_content()
    # Each calculator computes its own view; the same field name (context) does not collide.
    page.locator(f"#rf-{CALC}-users").fill("16")
    speed = dict(calculator_view.DEFAULTS, users=16)
    form = wait_for_calculator(page, CALC, speed)
    assert form.locator("[data-rf-out=per_user]").text_content() == calculator_view.view(**speed)["per_user"]
    page.locator("#rf-kv_cache_size-model").select_option("llama-3.1-70b")
    page.locator("#rf-kv_cache_size-context").fill("32768")
    kv = {"model": "llama-3.1-70b", "context": 32768}
    kv_form = wait_for_calculator(page, "kv_cache_size", kv)
    for name in ("per_token", "per_user"):
        assert kv_form.locator(f"[data-rf-out={name}]").text_content() == kv_view.view(**kv)[name]
    expect(kv_form.locator("[data-rf-out=verdict]")).to_have_text("Llama 3.1 70B")
    # Both calculators keep their inputs in the address bar under their own names.
    page.wait_for_function(
        "query => location.search === '?' + query",
        arg=url_query(speed) + "&" + url_query(kv, "kv_cache_size"),
        timeout=STEP_MS,
    )
    # One Python for the page's Runs and one for its calculators, each booted once, from one
    # download of Pyodide's runtime: the second worker's request is answered by the browser's cache.
    assert page.evaluate("document.documentElement.dataset.rfBoots") == "1"
    assert page.evaluate("document.documentElement.dataset.rfCalcBoots") == "1"
    wasm = [request for request in recorded.finished if request.url.endswith("pyodide.asm.wasm")]
    assert len(wasm) == 2
    assert sorted(request.sizes()["responseBodySize"] > 0 for request in wasm) == [False, True]


def test_a_run_cannot_change_later_runs_or_the_calculator(widgets) -> None:
    page, _ = widgets
    hostile = (
        "from roofline.precisions import BYTES_PER_VALUE\n"
        "BYTES_PER_VALUE['bf16'] = 1.0\n"
        "import builtins\n"
        "builtins.print = lambda *a, **k: None\n"
        "print('silenced')\n"
    )
    boots = page.evaluate("document.documentElement.dataset.rfBoots")
    assert run(page, hostile, cell(page, 1)) == ""
    # The calculator still computes with 2 bytes per bf16 weight (1.0 would double its answer).
    params = dict(calculator_view.DEFAULTS, users=2)
    page.locator(f"#rf-{CALC}-users").fill("2")
    form = wait_for_calculator(page, CALC, params)
    assert form.locator("[data-rf-out=per_user]").text_content() == calculator_view.view(**params)["per_user"]
    # Later Runs, in either cell, print again and see the package as shipped.
    probe = "from roofline.precisions import BYTES_PER_VALUE\nprint(BYTES_PER_VALUE['bf16'])\n"
    assert run(page, probe, cell(page, 0)) == "2.0\n"
    assert run(page, probe, cell(page, 1)) == "2.0\n"
    assert page.evaluate("document.documentElement.dataset.rfBoots") == boots  # the same Python throughout


def test_reset_brings_back_the_program_and_a_clean_python(widgets) -> None:
    page, _ = widgets
    second = cell(page, 1)
    run(page, "import sys\nsys.setrecursionlimit(123)\nprint(sys.getrecursionlimit())\n", second)
    boots = int(page.evaluate("document.documentElement.dataset.rfBoots"))
    second.locator("[data-rf-action=reset]").click()
    assert second.locator("textarea").input_value() == SECOND_PROGRAM.read_text(encoding="utf-8")
    expect(second.locator(".rf-output")).to_have_text("")
    expect(second.locator(".rf-status")).to_have_text("")
    expect(page.locator("html")).to_have_attribute("data-rf-boots", str(boots + 1))
    output = run(page, "import sys\nprint(sys.getrecursionlimit())\n", second)
    assert output.strip() != "123"


# ---- Programs a reader runs cannot freeze the page -----------------------------------------------

HEARTBEAT = """() => {
  window.__gaps = [];
  let last = performance.now();
  clearInterval(window.__beat);
  window.__beat = setInterval(() => {
    const now = performance.now();
    window.__gaps.push(now - last);
    last = now;
  }, 10);
}"""


def heartbeat_gaps(page: object) -> list[float]:
    """Stop the heartbeat; the gaps between its beats, in ms."""
    gaps = page.evaluate("window.__gaps")
    page.evaluate("clearInterval(window.__beat)")
    return gaps


def freeze_bound_ms(page: object) -> float:
    """The longest main-thread gap a responsiveness check allows: 3 s, or ten times the longest gap of
    the same page idle for 3 s just before, whichever is more. The machine's load, measured in the same
    run, not a guess at it (with four workers on two cores a gap of 1.24 s was seen where the idle
    page's was 0.1 s). These bounds only catch the old freezes (7.8 s, 11.8 s); the figures printed
    are the benchmark."""
    page.evaluate(HEARTBEAT)
    page.wait_for_timeout(3000)
    return max(3000.0, 10 * max(heartbeat_gaps(page)))


def until_ready(page: object) -> None:
    """Wait for the cell to be ready by asking the page for one attribute, every 100 ms. Not
    Playwright's expect on the cell: each of its retries describes the cell, output included, from
    inside the page, and with 10,000 spans printed that walk was itself a 1.3 s main-thread task, most
    of the longest gap a responsiveness test measured."""
    page.wait_for_function(
        "document.querySelector('[data-rf-cell]').dataset.state === 'ready'", polling=100, timeout=STEP_MS
    )


def start(page: object, code: str) -> object:
    cell = page.locator("[data-rf-cell]").first
    expect(cell).to_have_attribute("data-state", "ready", timeout=STEP_MS)
    cell.locator("textarea").fill(code)
    cell.locator("[data-rf-action=run]").click()
    expect(cell).to_have_attribute("data-state", "running")
    return cell


def test_a_print_flood_keeps_the_page_responsive_and_stop_ends_it(chapter) -> None:
    """Goals: the main thread never stalls over 100 ms; Stop ends the program within 0.5 s.

    Timing goals are benchmarks, not tests (the figures are printed); the bounds (freeze_bound_ms)
    only catch the old failure: gaps of 7.8 s, Stop 8 s late, where the idle page's gaps were 0.1 s.
    """
    page, _ = chapter
    boots = page.evaluate("document.documentElement.dataset.rfBoots")
    bound = freeze_bound_ms(page)
    page.evaluate(HEARTBEAT)
    cell = start(page, "while True:\n    print('x' * 1000)\n")
    page.wait_for_timeout(3000)  # the flood runs; the heartbeat measures the page meanwhile
    stop_ms = page.evaluate(
        """() => new Promise((resolve) => {
          const cell = document.querySelector("[data-rf-cell]");
          const clicked = performance.now();
          new MutationObserver((_, observer) => {
            if (cell.dataset.state !== "running") { observer.disconnect(); resolve(performance.now() - clicked); }
          }).observe(cell, { attributes: true });
          cell.querySelector("[data-rf-action=stop]").click();
        })"""
    )
    gaps = heartbeat_gaps(page)
    print(
        f"\nflood: longest main-thread gap {max(gaps):.0f} ms over {len(gaps)} beats of 10 ms"
        f" (allowed: {bound:.0f} ms); Stop took {stop_ms:.0f} ms"
    )
    assert max(gaps) < bound and stop_ms < bound, (max(gaps), stop_ms, bound)
    text = cell.locator(".rf-output").text_content()
    assert "earlier lines" in text and "not shown" in text
    assert len(text) <= 520_000 and text.count("\n") <= 10_002
    # Interrupted, in the same Python: what a quiet machine does. Where the interrupt takes longer than
    # the page's grace (INTERRUPT_GRACE_MS, 1.5 s; seen with both cores spun beside the suite), the
    # page restarts Python instead and says so: the reader's designed fallback, not a failure.
    expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    restarted = page.evaluate("document.documentElement.dataset.rfBoots") != boots
    if restarted:
        print("flood: the interrupt outlasted the grace under this load; Python was restarted")
        assert page.evaluate("document.documentElement.dataset.rfBoots") == str(int(boots) + 1)
    else:
        expect(cell.locator(".rf-status")).to_have_text("Stopped.")


# Each block of the pane: its spans' streams and texts, and the height it claims while skipped.
BLOCKS = """() => [...document.querySelectorAll("[data-rf-cell] .rf-output__block")].map((block) => ({
  streams: [...block.children].map((span) => span.dataset.stream[3]).join(""),
  texts: [...block.children].map((span) => span.textContent),
  claimed: parseFloat(block.style.containIntrinsicBlockSize.replace("auto", "")),
}))"""

# Programs that print to stdout and stderr in turn: (program, characters, lines, how the output ends).
ALTERNATING = {
    "writes": (
        "import sys\nfor i in range(200_000):\n    sys.stdout.write('a')\n    sys.stderr.write('b')\n",
        400_000,
        0,
        "ab" * 100,
    ),
    "lines": (
        "import sys\nfor i in range(50_000):\n    print('a')\n    print('b', file=sys.stderr)\n",
        200_000,
        100_000,
        "a\nb\n" * 100,
    ),
}


@pytest.mark.parametrize("kind", ALTERNATING)
def test_output_switching_streams_costs_the_page_little(chapter, kind: str) -> None:
    """stdout and stderr in turn, a span each. Writes without a newline: all in one open line, it
    grew one block of 400,000 spans, laid out again every frame, and the page's scroll cues watched
    every span: 100,000 turns froze the tab for 11.8 s. A line each: a block a line, 10,000 blocks
    to place on every frame, 0.6 s frames. Now a block holds 256 spans or lines at most, the pane
    10,000 spans, a message from the worker as many runs of one stream; and a block claims, while
    skipped, the rows its spans make (a stderr span is a block): claiming one row, each block near
    the pane was laid out every frame to learn its height, 0.5 s frames."""
    program, chars, lines, ending = ALTERNATING[kind]
    page, _ = chapter
    bound = freeze_bound_ms(page)
    cell = page.locator("[data-rf-cell]")
    expect(cell).to_have_attribute("data-state", "ready", timeout=STEP_MS)
    cell.locator("textarea").fill(program)
    page.evaluate(HEARTBEAT)
    cell.locator("[data-rf-action=run]").click()
    until_ready(page)
    gaps = heartbeat_gaps(page)
    print(
        f"\nalternating {kind}: longest main-thread gap {max(gaps):.0f} ms over {len(gaps)} beats of 10 ms"
        f" (allowed: {bound:.0f} ms)"
    )
    expect(cell.locator(".rf-status")).to_contain_text("Finished in")
    output = cell.locator(".rf-output").text_content()
    assert output.endswith(ending)
    blocks = page.evaluate(BLOCKS)
    streams = [block["streams"] for block in blocks]
    assert sum(map(len, streams)) <= 10_000 and max(map(len, streams)) <= 256
    assert len(blocks) <= 10_000 // 256 + 2  # blocks full before the next starts, not one a line
    assert "".join(streams).endswith("oe" * 100)  # each write keeps its stream: stdout, stderr, ...
    # Every character and line printed is shown or counted as not shown (the worker's and the pane's cuts).
    shown = "".join(text for block in blocks for text in block["texts"])
    note = cell.locator(".rf-output__dropped").text_content()
    dropped = f"{lines - shown.count(chr(10)):,} earlier lines ({-(-(chars - len(shown)) // 1000):,} kB) not shown"
    assert dropped in note, (note, len(shown))
    # Each block claims a row per newline and per span not ending in one.
    for block in blocks:
        rows = sum(text.count("\n") + (not text.endswith("\n")) for text in block["texts"])
        assert block["claimed"] == pytest.approx(max(rows, 1) * 1.45), block["claimed"]
    assert max(gaps) < bound


def test_stdout_and_stderr_in_turn_that_fit_the_pane_are_shown_whole(chapter) -> None:
    """6,000 lines, a line each of stdout and stderr in turn, printed faster than the worker sends:
    under every cap of the pane, so every line is shown, in order, and nothing is said to be
    missing. (A worker message of at most 1,024 runs cut holes in such output, while the pane said
    "earlier lines not shown" above its first line.)"""
    page, _ = chapter
    program = "import sys\nfor i in range(3000):\n    print('step', i)\n    print('warning', i, file=sys.stderr)\n"
    output = run(page, program)
    assert output == "".join(f"step {i}\nwarning {i}\n" for i in range(3000))
    expect(page.locator("[data-rf-cell] .rf-output__dropped")).to_have_count(0)


def test_a_flood_shows_its_newest_lines_without_a_hole(chapter) -> None:
    """300,000 numbered lines of about 100 characters, printed faster than the worker sends: the
    worker cuts each message to its newest 64 kB (about 650 lines, where the pane keeps 500 kB), and
    the pane drops whatever came before a cut. So the pane shows consecutive numbers up to the last,
    and the count above them says exactly how many lines came first. (The pane kept what came before
    a cut: several messages' lines with a hole after each, under "earlier lines not shown".)"""
    page, _ = chapter
    run(page, "for i in range(300_000):\n    print(i, '.' * 90)\n")
    blocks = page.evaluate(BLOCKS)
    lines = "".join(text for block in blocks for text in block["texts"]).splitlines()
    numbers = [int(line.split()[0]) for line in lines]
    assert numbers == list(range(numbers[0], 300_000)), (numbers[:3], len(numbers))
    note = page.locator("[data-rf-cell] .rf-output__dropped").text_content()
    assert f"… {numbers[0]:,} earlier lines (" in note, (note, numbers[0])
    assert note.endswith("or 500 kB, less while a program prints faster than the page can show …\n"), note


def test_output_without_newlines_is_capped_and_the_run_ends_cleanly(chapter) -> None:
    page, _ = chapter
    output = run(page, "import sys\nfor _ in range(300):\n    sys.stdout.write('y' * 100000)\nprint('end')\n")
    expect(page.locator("[data-rf-cell] .rf-status")).to_contain_text("Finished in")
    assert output.endswith("y" * 1000 + "end\n")
    assert "not shown" in output and len(output) <= 520_000
    assert "Traceback" not in output and "RangeError" not in output


def test_input_raises_eoferror_that_says_why(chapter) -> None:
    page, _ = chapter
    output = run(page, "name = input('Your name? ')\n")
    assert output.startswith("Your name? Traceback (most recent call last):")
    assert 'File "h100_decode_prefill.py", line 1, in <module>' in output
    assert output.rstrip().endswith(
        "EOFError: input() has nothing to read: a program on this page gets no keyboard input."
        " Set the value in the code instead, then press Run."
    )
    assert "roofline_cell" not in output


def test_a_keyboard_interrupt_the_program_raises_shows_its_traceback(chapter) -> None:
    page, _ = chapter
    output = run(page, "def f():\n    raise KeyboardInterrupt('by hand')\n\nf()\n")
    assert output.startswith("Traceback (most recent call last):")
    assert output.rstrip().endswith("KeyboardInterrupt: by hand")
    expect(page.locator("[data-rf-cell] .rf-status")).to_contain_text("Stopped with an error")


def test_a_long_traceback_wraps_at_1280_px(chapter) -> None:
    page, _ = chapter
    page.set_viewport_size({"width": 1280, "height": 900})
    output = run(page, "import roofline\nroofline.estimate('h100', 'llama-3.1-8b-instruct-with-a-long-name-' * 3)\n")
    assert "did you mean" in output
    box = page.locator("[data-rf-cell] .rf-output")
    assert box.evaluate("el => el.scrollWidth <= el.clientWidth"), "the traceback is cut off; it should wrap"


def test_reset_clears_the_output_and_undo_brings_back_the_edit(browser, site) -> None:
    recorded = _context(browser)
    page = recorded.page()
    page.goto(site.isolated + CHAPTER)
    cell = page.locator("[data-rf-cell]")
    expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    edited = "print('edited')\n"
    assert run(page, edited) == "edited\n"
    cell.locator("[data-rf-action=reset]").click()
    textarea = cell.locator("textarea")
    assert textarea.input_value() == PROGRAM.read_text(encoding="utf-8")
    expect(cell.locator(".rf-output")).to_have_text("")
    expect(cell.locator(".rf-status")).to_have_text("")
    textarea.focus()
    page.keyboard.press("Control+z")
    assert textarea.input_value() == edited  # once, not the program twice
    recorded.close()


def test_a_run_that_leaves_memory_far_above_its_start_gets_a_fresh_python(browser, site) -> None:
    recorded = _context(browser)
    page = recorded.page()
    page.goto(site.isolated + CHAPTER)
    cell = page.locator("[data-rf-cell]")
    expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    assert run(page, "block = bytearray(700 * 1024 * 1024)\nprint(len(block))\n") == f"{700 * 1024 * 1024}\n"
    expect(cell.locator(".rf-status")).to_contain_text("MB more than it started with, so a fresh Python replaces it.")
    expect(page.locator("html")).to_have_attribute("data-rf-boots", "2", timeout=STEP_MS)
    assert run(page, "print('after')\n") == "after\n"
    recorded.close()


def test_a_value_typed_past_the_limit_never_shows_its_prefix_s_results(chapter) -> None:
    page, _ = chapter
    set_control(page, "users", 7)
    params = {name: page.locator(f"#rf-{CALC}-{name}").input_value() for name in FIELDS}
    wait_for(page, params)
    users = page.locator(f"#rf-{CALC}-users")
    users.fill("")
    users.type("5000", delay=80)  # 5, 50, 500 are valid on the way; 5000 is not
    form = page.locator("[data-rf-calc]")
    expect(form).to_have_attribute("data-state", "invalid")
    expect(form).to_have_class(re.compile(r"\brf-calc--stale\b"))
    expect(page.locator(f"#rf-{CALC}-users-error")).to_contain_text("from 1 to 4,096")
    page.wait_for_timeout(600)  # longer than the address bar's delay: it must not take 500
    assert "users=500" not in page.url and "users=5000" not in page.url
    expect(form).to_have_attribute("data-state", "invalid")
    users.fill("12")
    wait_for(page, dict(params, users=12))
    expect(form).not_to_have_class(re.compile(r"\brf-calc--stale\b"))


# ---- Declared checks: decimal steps and rules between fields ------------------------------------


def test_a_decimal_step_is_checked_in_the_page_as_in_python(browser, site) -> None:
    """The worked example's calculator has a share from 0.5 to 1 in steps of 0.05 (roofline.forms)."""
    example = find(site.docs, support.example_slug())
    name = next(iter(example.calculators))
    recorded = _context(browser)
    page = recorded.page()
    page.goto(f"{site.isolated}{example.url}")
    form = page.locator(f"form[data-rf-calc={name}]")
    share = form.locator("input[name=reached]")
    assert share.get_attribute("step") == "0.05" and share.get_attribute("inputmode") == "decimal"
    # The defaults, as the build wrote them (whatever fields the README's example has), with the share changed.
    params = {
        key: int(value) if value.isdigit() else value
        for key, value in parse_qsl(form.get_attribute("data-rf-rendered"))
    }
    params["reached"] = 0.85
    share.fill("0.85")
    support.wait_for_render(form, params, timeout=BOOT_MS)
    expected = support.view_in(site.root, example.slug, name, params)["read"]
    assert form.locator("[data-rf-out=read]").text_content() == expected
    for bad in ("0.83", "0.45", "1.05"):  # off the steps, below, above: the same words as Python's
        share.fill(bad)
        expect(form).to_have_attribute("data-state", "invalid")
        expect(form.locator("#rf-cache_growth-reached-error")).to_have_text(
            "Must be a number from 0.5 to 1 in steps of 0.05."
        )
    share.fill("1")
    params["reached"] = 1
    expect(form).to_have_attribute("data-rf-rendered", support.rendered(params), timeout=STEP_MS)
    expect(share).not_to_have_attribute("aria-invalid", "true")
    recorded.assert_only(site.isolated)
    recorded.close()


def test_the_calculators_chart_is_a_vega_view_drawn_near_the_screen_and_redrawn_on_input(browser, site) -> None:
    """Chapter 1's chart is the generic `vega` output kind: the view's Vega-Lite spec, drawn with the
    site's vega-embed once it nears the screen, named by its description, and redrawn for new inputs."""
    recorded = _context(browser)
    page = recorded.page()
    page.goto(site.isolated + CHAPTER)
    chart = page.locator("form[data-rf-calc=decode_speed] [data-rf-draw=vega]")
    assert chart.get_attribute("data-state") is None  # not drawn while far from the screen
    chart.scroll_into_view_if_needed()
    expect(chart).to_have_attribute("data-state", "drawn", timeout=BOOT_MS)
    svg = chart.locator("svg.marks")
    expect(svg).to_have_attribute("aria-label", re.compile(r"the dots mark 1 users\.$"))
    page.locator(f"#rf-{CALC}-users").fill("32")
    wait_for(page, dict(calculator_view.DEFAULTS, users=32))
    expect(chart.locator("svg.marks")).to_have_attribute("aria-label", re.compile(r"the dots mark 32 users\.$"))
    recorded.assert_only(site.isolated)
    recorded.close()
