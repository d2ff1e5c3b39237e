"""Your model and your GPU in every calculator, as a reader uses them in the page (issue 24).

One test over every calculator of the site: paste a config.json and the numbers change; a
malformed paste gets one line under the box and the results stay; a reload of the link
restores the choice from this browser's storage; the same link in another browser (a fresh
context) says in one line that it names a model this browser does not hold, and shows the
default. Then the entry itself at 390 px, light and dark, driven from the keyboard only, with
axe on the open panel. The CPython half is ``test_own_entries.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import support
from bench_pages import AXE, axe_violations
from chromium import CHROMIUM_PATH
from sitegen.pages import chapters, find

pytestmark = [pytest.mark.browser, pytest.mark.slow]
playwright_sync = pytest.importorskip("playwright.sync_api")
expect = playwright_sync.expect

if not CHROMIUM_PATH.exists():
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)

ROOT = Path(__file__).resolve().parent.parent
CONFIG = (ROOT / "tests" / "fixtures" / "hfconfig" / "qwen3-32b.json").read_text(encoding="utf-8")
MALFORMED = CONFIG.replace('"hidden_size"', '"hidden_sise"')
CALCULATORS = [(chapter.slug, name) for chapter in chapters(ROOT / "docs") for name in chapter.calculators]
OWN_ID = re.compile(r"^own-[0-9a-f]{8}$")
# What a browser dispatches when a reader pastes: the text lands in the box, then one input event.
PASTE = """(box, text) => {
  box.value = text;
  box.dispatchEvent(new InputEvent("input", { bubbles: true, inputType: "insertFromPaste" }));
}"""


def _ready(page, base: str, slug: str, name: str, query: str = ""):
    """Calculator ``name`` on its chapter's page, once the calculators' Python is up."""
    page.goto(f"{base}chapters/{slug}/{query}")
    page.wait_for_selector("html[data-rf-calc-runtime=ready]", timeout=support.BOOT_MS)
    return page.locator(f"form[data-rf-calc={name}]")


def _numbers(form) -> dict[str, str]:
    """Every result the calculator shows (the spoken summary aside, which follows later)."""
    return {key: text for key, text in support.text_outputs(form).items() if key != "summary"}


@pytest.mark.parametrize(("slug", "name"), CALCULATORS)
def test_your_model_in_every_calculator(browser, site, slug: str, name: str) -> None:
    if "model" not in find(ROOT / "docs", slug).calculator(name).FORM.owns.values():
        pytest.skip(
            f"calculator {name!r} has no Field.model: "
            "see test_own_entries.py::test_every_calculator_offers_your_gpu_and_your_model"
        )
    context = browser.new_context()
    page = context.new_page()
    form = _ready(page, site.isolated, slug, name)
    select = form.locator(".rf-field:has(> details[data-rf-own=model]) select")
    default, field = select.input_value(), select.get_attribute("name")
    before = _numbers(form)
    panel = form.locator("details[data-rf-own=model]")
    panel.locator("summary").click()
    box = panel.locator("textarea")

    # A pasted config: read by the package, chosen in the menu, and every number follows.
    box.evaluate(PASTE, CONFIG)
    expect(select).to_have_value(OWN_ID, timeout=support.STEP_MS)
    expect(form).to_have_attribute("data-state", "ready", timeout=support.STEP_MS)
    chosen = select.input_value()
    expect(select.locator("option:checked")).to_have_text("Your model (Qwen3)")
    after = _numbers(form)
    assert sum(after[key] != before[key] for key in after) >= 3, (before, after)
    page.wait_for_function(f"location.search.includes('{name}.{field}={chosen}')")
    assert "Qwen3ForCausalLM" not in page.url  # the link names the hash, never the config

    # A malformed paste: one line under the box naming the key; the menu and results stay.
    box.evaluate(PASTE, MALFORMED)
    error = panel.locator(".rf-own__error")
    expect(error).to_contain_text("field 'hidden_size': is missing", timeout=support.STEP_MS)
    assert "\n" not in error.text_content()
    expect(box).to_have_attribute("aria-invalid", "true")
    assert select.input_value() == chosen and form.get_attribute("data-state") == "ready"
    assert _numbers(form) == after and "rf-calc--stale" not in (form.get_attribute("class") or "")

    # The link, reloaded in this browser: the choice comes back from its storage.
    link = page.url
    again = context.new_page()
    form = _ready(again, site.isolated, slug, name, "?" + link.split("?", 1)[1])
    expect(form).to_have_attribute("data-state", "ready", timeout=support.STEP_MS)
    expect(form.locator(f"select[name={field}]")).to_have_value(chosen)
    assert _numbers(form) == after
    context.close()

    # The same link in a browser that never saw the config: one line, and the default.
    other = browser.new_context()
    form = _ready(other.new_page(), site.isolated, slug, name, "?" + link.split("?", 1)[1])
    note = form.locator(".rf-calc__note")
    expect(note).to_contain_text(f"={chosen} is a model pasted in another browser", timeout=support.STEP_MS)
    assert "\n" not in note.text_content()
    expect(form.locator(f"select[name={field}]")).to_have_value(default)
    other.close()


@pytest.mark.skipif(not AXE.is_file(), reason="node_modules lacks axe-core; run `make setup`")
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_your_gpu_at_390px_from_the_keyboard(browser, site, scheme: str, tmp_path: Path) -> None:
    """Tab to "Your GPU…", open it with Enter, type the numbers, press the button: no mouse."""
    context = browser.new_context(
        color_scheme=scheme, viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True
    )
    page = context.new_page()
    form = _ready(page, site.isolated, "prefill-vs-decode", "decode_speed")
    expect(form).to_have_attribute("data-state", "static")
    before = _numbers(form)
    form.locator("select[name=gpu]").focus()
    page.keyboard.press("Tab")
    summary = form.locator("details[data-rf-own=gpu] > summary")
    expect(summary).to_be_focused()
    page.keyboard.press("Enter")
    panel = form.locator("details[data-rf-own=gpu]")
    expect(panel).to_have_attribute("open", "")
    page.keyboard.press("Tab")  # the paste box
    page.keyboard.press("Tab")  # the first number
    for value in ("192", "8", "2250", "4500", ""):
        if value:
            page.keyboard.insert_text(value)
        page.keyboard.press("Tab")
    expect(panel.locator(".rf-own__use")).to_be_focused()
    page.keyboard.press("Enter")
    expect(form.locator("select[name=gpu] option:checked")).to_have_text("Your GPU (typed)", timeout=support.STEP_MS)
    expect(form).to_have_attribute("data-state", "ready", timeout=support.STEP_MS)
    assert _numbers(form) != before
    # It fits the phone: nothing wider than the screen, the panel inside the form.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    box = panel.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
    assert axe_violations(page) == []
    panel.locator("..").screenshot(path=str(tmp_path / f"your-gpu-390-{scheme}.png"))
    context.close()


def test_hostile_text_shows_as_text_and_a_100_mb_paste_is_refused_by_its_size(browser, site) -> None:
    context = browser.new_context()
    page = context.new_page()
    form = _ready(page, site.isolated, "kv-cache", "kv_budget")
    panel = form.locator("details[data-rf-own=model]")
    panel.locator("summary").click()
    box = panel.locator("textarea")
    marked = '<img src=x onerror="window.__pwned = 1">'
    # A config that reads fine, named in markup: the menu shows the name as text.
    named = CONFIG.replace("{", '{\n  "_name_or_path": ' + json.dumps(f"org/{marked}") + ",", 1)
    box.evaluate(PASTE, named)
    expect(form.locator("select[name=model] option:checked")).to_have_text(marked, timeout=support.STEP_MS)
    # A config the package refuses, with markup in the key it names: the line shows it as text.
    box.evaluate(PASTE, json.dumps({"architectures": [marked]}))
    expect(panel.locator(".rf-own__error")).to_contain_text(f"unknown architecture '{marked}", timeout=support.STEP_MS)
    assert form.locator("img").count() == 0 and page.evaluate("window.__pwned") is None
    # 100 MB on the clipboard: refused by its length, before it lands in the box or reaches Python.
    page.evaluate(
        """(box) => {
          const data = new DataTransfer();
          data.setData("text/plain", "{" + " ".repeat(100_000_000) + "}");
          box.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
        }""",
        box.element_handle(),
    )
    expect(panel.locator(".rf-own__error")).to_have_text(
        "That is 100,000,002 characters; a config.json is a few kB and at most 1 MB:"
        " paste that file, not a weights file."
    )
    assert len(box.input_value()) < 1000
    context.close()


def test_a_paste_shows_what_the_package_read_from_it_as_text(browser, site) -> None:
    """After a paste the panel says what the package understood (issue 40): the file's layers, widths,
    heads, vocabulary and experts, the package's own line, set as text; a refused paste clears it."""
    from roofline.ownspecs import own_entry, what_was_read

    context = browser.new_context()
    page = context.new_page()
    form = _ready(page, site.isolated, "prefill-vs-decode", "decode_speed")
    panel = form.locator("details[data-rf-own=model]")
    panel.locator("summary").click()
    box, read = panel.locator("textarea"), panel.locator(".rf-own__read")
    marked = '<img src=x onerror="window.__pwned = 1">'
    moe = (ROOT / "tests" / "fixtures" / "hfconfig" / "qwen3-30b-a3b.json").read_text(encoding="utf-8")
    named = moe.replace("{", '{\n  "_name_or_path": ' + json.dumps(marked) + ",", 1)
    box.evaluate(PASTE, named)
    expect(form.locator("select[name=model] option:checked")).to_have_text(marked, timeout=support.STEP_MS)
    config = json.loads(moe)
    expect(read).to_have_text(what_was_read(own_entry("model", "own-00000000", named)))
    shown = read.text_content()
    for words in (
        f"Read: {marked}: {config['num_hidden_layers']} layers",
        f"hidden size {config['hidden_size']:,}",
        f"{config['num_attention_heads']} attention heads, {config['num_key_value_heads']} KV heads",
        f"vocabulary {config['vocab_size']:,}",
        f"{config['num_experts']} experts, {config['num_experts_per_tok']} per token",
    ):
        assert words in shown, (words, shown)
    assert form.locator("img").count() == 0 and page.evaluate("window.__pwned") is None
    # A paste the package refuses: its one line, and no reading left over from the last one.
    box.evaluate(PASTE, MALFORMED)
    expect(panel.locator(".rf-own__error")).to_contain_text("field 'hidden_size': is missing", timeout=support.STEP_MS)
    expect(read).to_have_text("")
    context.close()


STORE_KEY = "roofline.own.v1"
#: A config.json nested 3,000 deep (6 kB): it overflowed JavaScript's stack inside json.loads and
#: killed the calculators' Python, and the page kept it (issue 42, NC1).
DEEP = '{"a":' + "[" * 3000 + "]" * 3000 + "}"


def _kept(page) -> str:
    return page.evaluate(f"localStorage.getItem('{STORE_KEY}') ?? ''")


@pytest.mark.parametrize("kind", ["model", "gpu"])
def test_a_deeply_nested_paste_gets_one_line_and_the_calculators_go_on(browser, site, kind: str) -> None:
    context = browser.new_context()
    page = context.new_page()
    form = _ready(page, site.isolated, "kv-cache", "kv_budget")
    select = form.locator(f".rf-field:has(> details[data-rf-own={kind}]) select")
    default = select.input_value()
    panel = form.locator(f"details[data-rf-own={kind}]")
    panel.locator("summary").click()
    panel.locator("textarea").evaluate(PASTE, DEEP)
    error = panel.locator(".rf-own__error")
    expect(error).to_contain_text("nested more than 64 deep", timeout=support.STEP_MS)
    assert "\n" not in error.text_content()
    assert select.input_value() == default and select.locator("optgroup").count() == 0
    assert "[[[" not in _kept(page)
    assert page.evaluate("document.documentElement.dataset.rfCalcBoots") == "1"  # the same Python goes on
    if kind == "model":  # and reads the next paste
        panel.locator("textarea").evaluate(PASTE, CONFIG)
        expect(select.locator("option:checked")).to_have_text("Your model (Qwen3)", timeout=support.STEP_MS)
        expect(form).to_have_attribute("data-state", "ready", timeout=support.STEP_MS)
    context.close()


#: Appended to kv_budget's module as the tests serve it: its view kills Pyodide (a JavaScript stack
#: overflow, as the deep paste did) whenever the context is 4,096, whatever made Python die.
DYING_VIEW = """

_view = view


def view(**params):
    if params.get("context") == 4096:
        import json

        json.loads("[" * 100_000)
    return _view(**params)
"""


def test_a_calculator_python_that_dies_is_replaced_and_keeps_nothing(browser, site) -> None:
    context = browser.new_context()

    def dying(route) -> None:
        response = route.fetch()
        route.fulfill(response=response, body=response.text() + DYING_VIEW)

    context.route("**/kv-cache/calculators/kv_budget.py*", dying)
    page = context.new_page()
    form = _ready(page, site.isolated, "kv-cache", "kv_budget")
    boots = page.locator("html")
    expect(boots).to_have_attribute("data-rf-calc-boots", "1")
    form.locator("input[name=context]").fill("4096")
    expect(form).to_have_attribute("data-state", "failed", timeout=support.STEP_MS)
    expect(form.locator(".rf-calc__note")).to_contain_text("Maximum call stack size exceeded")
    # A fresh Python, which answers the next input.
    expect(boots).to_have_attribute("data-rf-calc-boots", "2", timeout=support.STEP_MS)
    form.locator("input[name=context]").fill("8192")
    expect(form).to_have_attribute("data-state", "ready", timeout=support.BOOT_MS)
    expect(form.locator(".rf-calc__note")).to_be_hidden()  # the failure was for other inputs
    # A paste whose answer killed Python is not kept: it would kill it again from the menu next visit.
    form.locator("input[name=context]").fill("4096")
    expect(boots).to_have_attribute("data-rf-calc-boots", "3", timeout=support.STEP_MS)
    panel = form.locator("details[data-rf-own=model]")
    panel.locator("summary").click()
    panel.locator("textarea").evaluate(PASTE, CONFIG)
    expect(panel.locator(".rf-own__error")).to_contain_text("Python could not read this", timeout=support.STEP_MS)
    expect(boots).to_have_attribute("data-rf-calc-boots", "4", timeout=support.STEP_MS)
    assert form.locator("select[name=model] optgroup").count() == 0 and _kept(page) in ("", "{}")
    form.locator("input[name=context]").fill("8192")
    expect(form).to_have_attribute("data-state", "ready", timeout=support.BOOT_MS)
    context.unroute_all(behavior="ignoreErrors")
    context.close()
