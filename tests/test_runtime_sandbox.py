"""The Run cell is a sandbox: a reader's program cannot speak for the runtime, reach the calculators, or stop Stop.

Issue 25, second round (S1, S2, H4, C4), on the test-only widget page (two Run cells, two
calculators), served with and without isolation headers. Each hostile program is a neighbour
of the attack report's case, not the case alone: forged replies of every type the page knows,
the private port hunted through the worker's prototypes, an error thrown in the worker's scope,
the package's spec file and the view code changed in a Run, and Stop pressed on a Run that waits.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

import support
from sitegen.pages import PageFolder, find
from support import BOOT_MS, STEP_MS, Recorded

pytestmark = [pytest.mark.browser, pytest.mark.slow]

playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

CALC = "decode_speed"
calculator_view = find(support.ROOT / "docs", "prefill-vs-decode").calculator(CALC)
WIDGETS = PageFolder(support.WIDGETS, support.WIDGETS / "test-widgets")
PAGE = "test-widgets/"
XSS = '"><img src=x onerror="window.__xss=document.domain">'

#: Every reply type the page reads, for every id a page could have used, posted on the worker's
#: global scope; the port hunted by wrapping the prototypes the worker's code would touch; an
#: error thrown in the worker's scope with words of the attacker's; then busy for good (H4).
FORGER = """
import js, json, time
xss = %(xss)r
view = {"per_user": "FORGED 999,999", "verdict": xss, "fits": True, "summary": xss}
kinds = [
    lambda i: {"type": "calc", "id": i, "response": json.dumps(view)},
    lambda i: {"type": "done", "id": i, "status": "ok", "memoryGrowth": 0},
    lambda i: {"type": "out", "id": i, "chunks": [["stdout", xss]], "dropped": {"chars": 0, "lines": 0}},
    lambda i: {"type": "boot-failed", "message": "Your session expired. Log in at https://evil.example"},
    lambda i: {"type": "booted", "timings": {"fallback": xss}},
]
js.eval('''(() => {
  const post = MessagePort.prototype.postMessage;
  MessagePort.prototype.postMessage = function (...args) { self.__port = this; return post.apply(this, args); };
  const data = Object.getOwnPropertyDescriptor(MessageEvent.prototype, "data").get;
  Object.defineProperty(MessageEvent.prototype, "data", {
    configurable: true,
    get() {
      if (this.currentTarget && this.currentTarget !== self) self.__port = this.currentTarget;
      return data.call(this);
    },
  });
  setTimeout(() => { throw new Error("Your session expired. Log in at https://evil.example"); }, 0);
})()''')
print("armed", flush=True)
end = time.time() + 3
while time.time() < end:
    for make in kinds:
        for i in range(1, 80):
            message = js.JSON.parse(json.dumps(make(i)))
            js.postMessage(message)
            port = js.Reflect.get(js.self, "__port")
            if port is not None:
                port.postMessage(message)
    time.sleep(0.02)
print("forged", flush=True)
while True:
    pass
"""

#: S2: the README's own "edit gpus.toml", done in a Run; the view's code swapped; the limits changed.
TAMPERER = """
import json, pathlib, roofline, roofline_views
specs = pathlib.Path(roofline.__file__).parent / "data" / "gpus.toml"
specs.write_text(specs.read_text().replace("bandwidth_bytes_per_s = 3.35e12", "bandwidth_bytes_per_s = 33.5e12"))
def hijacked(name, request):
    return json.dumps({"per_user": "HIJACKED", "verdict": "HIJACKED"})
roofline_views.answer.__code__ = hijacked.__code__
try:
    import roofline_calculator_decode_speed as calculator
    calculator.LIMITS["users"] = (1, 10)
except ImportError:
    pass
print(specs.read_text().count("33.5e12"), roofline_views.answer("decode_speed", "{}"))
"""


@pytest.fixture(params=["isolated", "plain"])
def page(request, browser: object, site) -> Iterator[object]:
    """The widget page on one of the two servers, both cells and both calculators ready."""
    base = getattr(site, request.param)
    recorded = Recorded.open(browser)
    page = recorded.page()
    page.goto(base + PAGE)
    assert page.evaluate("crossOriginIsolated") is (request.param == "isolated")
    for index in range(2):
        expect(cell(page, index)).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    expect(page.locator("html")).to_have_attribute("data-rf-calc-runtime", "ready", timeout=BOOT_MS)
    yield page
    recorded.assert_only(base)
    recorded.close()


def cell(page: object, index: int = 0) -> object:
    return page.locator("[data-rf-cell]").nth(index)


def start(page: object, code: str, index: int = 0) -> object:
    the_cell = cell(page, index)
    the_cell.locator("textarea").fill(code)
    the_cell.locator("[data-rf-action=run]").click()
    return the_cell


def calculator_shows(page: object, users: int) -> None:
    """Type ``users`` into the calculator; its numbers must be the package's, and ready."""
    params = dict(calculator_view.DEFAULTS, users=users)
    page.locator(f"#rf-{CALC}-users").fill(str(users))
    form = page.locator(f"[data-rf-calc={CALC}]")
    support.wait_for_render(form, params)
    view = calculator_view.view(**params)
    shown = support.text_outputs(form)
    for name in ("per_user", "total", "verdict"):
        if name in shown:
            assert shown[name] == str(view[name]), name


def test_forged_replies_are_not_read_and_stop_stays_until_the_run_ends(page) -> None:
    runner = start(page, FORGER % {"xss": XSS})
    expect(runner.locator(".rf-output")).to_contain_text("armed", timeout=STEP_MS)
    # While the program forges, the calculator answers from its own worker, with the package's numbers.
    calculator_shows(page, 7)
    expect(runner.locator(".rf-output")).to_contain_text("forged", timeout=STEP_MS)
    calculator_shows(page, 9)
    # The Run is still busy (it spins), so it is still running and Stop still works.
    expect(runner).to_have_attribute("data-state", "running")
    assert runner.locator("[data-rf-action=stop]").is_enabled()
    assert page.evaluate("window.__xss") is None
    assert page.locator("[data-rf-calc] img, [data-rf-cell] img").count() == 0
    # What the page itself says (the cells' statuses, the calculators), not the program's text.
    text = " ".join(page.locator(".rf-status, [data-rf-calc]").all_text_contents())
    assert "session expired" not in text and "FORGED" not in text and "could not start" not in text
    # The forged out messages never reached the output: only what the program printed.
    assert runner.locator(".rf-output").text_content() == "armed\nforged\n"
    runner.locator("[data-rf-action=stop]").click()
    expect(runner.locator(".rf-status")).to_contain_text("Stopped", timeout=STEP_MS)
    expect(runner).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    # The port was never caught: a later Run in the same worker (isolated: it was interrupted,
    # its wrapped prototypes still in place) finds none, and runs as usual.
    probe = start(page, "import js\nprint(js.Reflect.get(js.self, '__port') is None, 6 * 7)\n", 1)
    expect(probe).to_have_attribute("data-state", "ready", timeout=STEP_MS)
    expect(probe.locator(".rf-output")).to_have_text("True 42\n")
    expect(probe.locator(".rf-status")).to_contain_text("Finished in")
    assert page.evaluate("window.__xss") is None


def test_a_run_that_edits_the_specs_and_the_views_changes_no_calculator(page) -> None:
    runner = start(page, TAMPERER)
    expect(runner).to_have_attribute("data-state", "ready", timeout=STEP_MS)
    # The Run did change its own Python: the file and the function are the tampered ones there.
    expect(runner.locator(".rf-output")).to_have_text('1 {"per_user": "HIJACKED", "verdict": "HIJACKED"}\n')
    calculator_shows(page, 33)  # 1,024 tokens/s if the edited bandwidth had been read
    calculator_shows(page, 12)  # refused as past 10 if the limits had been changed
    text = page.locator(f"[data-rf-calc={CALC}]").text_content()
    assert "HIJACKED" not in text


def test_stop_on_a_waiting_run_takes_it_out_of_the_queue_and_nothing_else(page) -> None:
    """The first program runs until the test stops it, counting aloud: however long each step takes on
    a loaded machine, the second Run is still waiting when its Stop is pressed (a program of a few
    seconds once ended first, and the Stop then reached the second Run itself)."""
    boots = page.evaluate("document.documentElement.dataset.rfBoots")
    first = start(page, COUNTER, 0)
    expect(first.locator(".rf-output")).to_contain_text("1\n")
    second = start(page, "print('second ran')\n", 1)
    expect(second.locator(".rf-status")).to_contain_text("Waiting for the program running in another cell")
    # A calculation meanwhile goes to the calculators' worker, not behind the Runs.
    calculator_shows(page, 5)
    second.locator("[data-rf-action=stop]").click()
    expect(second).to_have_attribute("data-state", "ready")
    expect(second.locator(".rf-status")).to_have_text("Stopped.")
    assert second.locator(".rf-output").text_content() == ""
    # The program that was running is untouched: it goes on counting, in the same worker.
    counted = int(first.locator(".rf-output").text_content().split()[-1])
    expect(first.locator(".rf-output")).to_contain_text(f"\n{counted + 2}\n")
    expect(first).to_have_attribute("data-state", "running")
    assert page.evaluate("document.documentElement.dataset.rfBoots") == boots
    calculator_shows(page, 6)
    form_text = page.locator(f"[data-rf-calc={CALC}]").text_content()
    assert "KeyboardInterrupt" not in form_text and "Traceback" not in form_text
    first.locator("[data-rf-action=stop]").click()  # its own Stop ends it
    expect(first).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    expect(first.locator(".rf-status")).to_contain_text("Stopped")
    assert second.locator(".rf-output").text_content() == ""  # and the second never ran


#: Counts aloud until stopped: 1, 2, 3 … a line every tenth of a second.
COUNTER = "import time\ncount = 0\nwhile True:\n    count += 1\n    print(count, flush=True)\n    time.sleep(0.1)\n"


def test_a_rule_between_fields_greys_the_results_and_marks_both(browser, site) -> None:
    """W3: "from" above "to", and chunked prefill's token budget at or under the max batch, are invalid
    input like any refused value, never a Python failure. (A refusal only the package can make, a KV
    cache that thrashes, takes the same path: chapter 3's timeline test.)"""
    recorded = Recorded.open(browser)
    page = recorded.page()
    page.goto(site.isolated + "chapters/continuous-batching/")
    expect(page.locator("html")).to_have_attribute("data-rf-calc-runtime", "ready", timeout=BOOT_MS)
    form = page.locator("[data-rf-calc=serving]")

    def invalid(*names: str) -> None:
        expect(form).to_have_attribute("data-state", "invalid", timeout=STEP_MS)
        expect(form).to_have_class(re.compile(r"\brf-calc--stale\b"))
        for name in names:
            expect(page.locator(f"#rf-serving-{name}")).to_have_attribute("aria-invalid", "true")

    # Under continuous batching (the default) no token budget applies: a max batch past it computes,
    # as `roofline simulate --max-batch` does (issue 42, NW3); chunked prefill then refuses it.
    page.locator("#rf-serving-max_batch").fill("600")  # the default budget is 512
    expect(form).to_have_attribute("data-rf-rendered", re.compile(r"(^|&)max_batch=600(&|$)"), timeout=STEP_MS)
    expect(form).to_have_attribute("data-state", "ready")
    page.locator("#rf-serving-policy").select_option("chunked")
    invalid("max_batch", "token_budget", "policy")
    assert "Python could not compute" not in form.text_content()
    expect(page.locator("#rf-serving-max_batch-error")).to_contain_text("must be below the token budget")
    page.locator("#rf-serving-token_budget").fill("1024")  # fixed: the marks go, the numbers come back
    expect(form).to_have_attribute("data-state", "ready", timeout=STEP_MS)
    expect(form).not_to_have_class(re.compile(r"\brf-calc--stale\b"))
    assert page.locator("#rf-serving-token_budget").get_attribute("aria-invalid") is None
    page.locator("#rf-serving-prompt_low").fill("5000")  # above 'to' (2,048)
    invalid("prompt_low", "prompt_high")
    recorded.assert_only(site.isolated)
    recorded.close()


#: The page's runtime object, for an expression to follow: f"{RUNTIME}.bytecode)".
RUNTIME = "import('../../javascripts/runtime/runtime.mjs').then(({ runtime }) => runtime"


def wait_for_pyc(page: object) -> None:
    """Until the Runs' worker has written the package's .pyc (Stop interrupts only after that)."""
    deadline = time.monotonic() + BOOT_MS / 1000
    while not page.evaluate(f"{RUNTIME}.bytecode)"):
        assert time.monotonic() < deadline, "the worker never wrote the package's .pyc"
        page.wait_for_timeout(200)


def test_without_isolation_stop_interrupts_the_run_and_python_stays_warm(browser, site) -> None:
    """Issue 23's Stop without isolation: no shared memory, yet Stop reaches the program (the page
    revokes the Run's blob: URL, which the worker reads while the Run lasts), and the same worker,
    with its Python, runs the next program: no restart, no boot. (Stop swaps a standby in instead
    when one is up, or before the worker has written the package's .pyc: here there is none, and
    the worker is given the time to write them.)"""
    recorded = Recorded.open(browser)
    page = recorded.page()
    page.goto(site.plain + "chapters/prefill-vs-decode/")
    runner = cell(page)
    expect(runner).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    assert page.evaluate("crossOriginIsolated") is False
    page.evaluate(f"{RUNTIME}.keepStandby = () => {{}})")
    wait_for_pyc(page)
    runner.locator("textarea").fill("print('spinning', flush=True)\nwhile True:\n    pass\n")
    runner.locator("[data-rf-action=run]").click()
    expect(runner.locator(".rf-output")).to_have_text("spinning\n", timeout=STEP_MS)
    runner.locator("[data-rf-action=stop]").click()
    expect(runner.locator(".rf-status")).to_have_text("Stopped.", timeout=STEP_MS)
    expect(runner).to_have_attribute("data-state", "ready")
    assert page.evaluate("document.documentElement.dataset.rfBoots") == "1"  # the same worker
    probe = start(page, "print(6 * 7)\n")
    expect(probe.locator(".rf-status")).to_contain_text("Finished in", timeout=STEP_MS)
    expect(probe.locator(".rf-output")).to_have_text("42\n")
    assert page.evaluate("document.documentElement.dataset.rfBoots") == "1"
    recorded.assert_only(site.plain)
    recorded.close()


def test_without_isolation_a_standby_still_booting_when_stop_interrupts_is_dropped(browser, site) -> None:
    """The Run a reader presses after Stop should not share the cores with a standby's boot: when the
    interrupt ends the Run while the standby is still booting, that standby is dropped (and the next
    one boots later). Here every worker started after the first runs a script that never boots, so
    the standby the reader's use of the cell starts is still booting when Stop is pressed."""
    recorded = Recorded.open(browser)
    page = recorded.page()
    page.goto(site.plain + "chapters/prefill-vs-decode/")
    runner = cell(page)
    expect(runner).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    wait_for_pyc(page)
    page.route("**/worker.mjs*", lambda route: route.fulfill(body="// never boots\n", content_type="text/javascript"))
    runner.locator("textarea").fill("print('spinning', flush=True)\nwhile True:\n    pass\n")
    runner.locator("[data-rf-action=run]").click()
    expect(runner.locator(".rf-output")).to_have_text("spinning\n", timeout=STEP_MS)
    assert page.evaluate(f"{RUNTIME}.standby !== null && (window.firstStandby = runtime.standby) !== null)")
    runner.locator("[data-rf-action=stop]").click()
    expect(runner.locator(".rf-status")).to_have_text("Stopped.", timeout=STEP_MS)
    assert page.evaluate("document.documentElement.dataset.rfBoots") == "1"  # interrupted, not swapped
    assert page.evaluate(f"{RUNTIME}.standby !== window.firstStandby)"), "the booting standby was kept"
    probe = start(page, "print(6 * 7)\n")
    expect(probe.locator(".rf-status")).to_contain_text("Finished in", timeout=STEP_MS)
    expect(probe.locator(".rf-output")).to_have_text("42\n")
    recorded.close()


def test_without_isolation_stop_swaps_in_a_python_booted_beside_a_run_that_ignores_it(browser, site) -> None:
    """Issue 23's Stop without isolation, when the program swallows the interrupt: the reader's use of
    the cell booted a standby Python, and Stop swaps it in once the interrupt has had its time: the
    page never waits for a boot, and says so."""
    recorded = Recorded.open(browser)
    page = recorded.page()
    page.goto(site.plain + "chapters/prefill-vs-decode/")
    runner = cell(page)
    expect(runner).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    stubborn = (
        "print('spinning', flush=True)\n"
        "while True:\n    try:\n        while True:\n            pass\n    except KeyboardInterrupt:\n        pass\n"
    )
    runner.locator("textarea").fill(stubborn)
    runner.locator("[data-rf-action=run]").click()
    expect(runner.locator(".rf-output")).to_have_text("spinning\n", timeout=STEP_MS)
    standby_up = (
        "import('../../javascripts/runtime/runtime.mjs').then(({ runtime }) =>"
        " Boolean(runtime.standby && runtime.standby.inbox.some((data) => data.type === 'booted')))"
    )
    # Polled here: wait_for_function takes the promise this expression gives for a true value.
    deadline = time.monotonic() + BOOT_MS / 1000
    while not page.evaluate(standby_up):
        assert time.monotonic() < deadline, "the standby Python never came up"
        page.wait_for_timeout(200)
    runner.locator("[data-rf-action=stop]").click()
    expect(runner.locator(".rf-status")).to_have_text("Stopped.", timeout=STEP_MS)  # not "Python is restarting"
    expect(runner).to_have_attribute("data-state", "ready")
    assert page.evaluate("document.documentElement.dataset.rfBoots") == "2"
    # The standby booted from what the first worker restored (the compiled wasm, the raw snapshot),
    # reading no snapshot of its own.
    assert page.evaluate(
        "import('../../javascripts/runtime/runtime.mjs').then(({ runtime }) => runtime.timings.prepared)"
    )
    probe = start(page, "print(6 * 7)\n")
    expect(probe.locator(".rf-status")).to_contain_text("Finished in", timeout=STEP_MS)
    expect(probe.locator(".rf-output")).to_have_text("42\n")
    recorded.assert_only(site.plain)
    recorded.close()
