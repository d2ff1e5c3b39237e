"""Issue 12's items in the page's Python widgets, as a phone or desktop reader meets them:
Save-Data and slow connections fetch no Python until the reader uses a widget (and the
cell says so), a shared calculator link lands on the calculator, the GPU menu shows whole
names on a desktop, and a Run's printed table that is wider than a phone says it scrolls."""

from __future__ import annotations

import json

import pytest

from support import BOOT_MS, STEP_MS, Recorded

pytestmark = [pytest.mark.browser, pytest.mark.slow]
expect = pytest.importorskip("playwright.sync_api").expect

CHAPTER = "chapters/prefill-vs-decode/"
CALC = "decode_speed"
_context = Recorded.open

#: What a page asks for when Python warms up: the runtime and the snapshot are the large files.
PYTHON_FILES = ("pyodide.asm.wasm", ".snapshot.gz", "python_stdlib.zip")


def connection(**fields: object) -> str:
    """An init script that makes ``navigator.connection`` report ``fields`` (the Network Information API)."""
    values = ", ".join(
        f"{key}: {value!r}".replace("True", "true").replace("False", "false") for key, value in fields.items()
    )
    return f"Object.defineProperty(navigator, 'connection', {{ value: {{ {values} }}, configurable: true }});"


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"saveData": True, "effectiveType": "4g"}, "your browser asks to save data"),
        ({"saveData": False, "effectiveType": "3g"}, "this connection looks slow"),
    ],
    ids=["save-data", "slow connection"],
)
def test_python_waits_for_the_reader_on_save_data_and_slow_connections(browser, site, fields, reason) -> None:
    recorded = _context(browser, viewport={"width": 390, "height": 844}, is_mobile=True)
    recorded.context.add_init_script(connection(**fields))
    page = recorded.page()
    page.goto(site.isolated + CHAPTER)
    cell = page.locator("[data-rf-cell]")
    cell.scroll_into_view_if_needed()  # in view: a normal connection would start Python now
    expect(cell.locator(".rf-status")).to_contain_text(f"loads when you press Run or edit: {reason}", timeout=STEP_MS)
    # The size it names is the build's measure of the files (data-rf-sizes), never a typed figure.
    megabytes = round(sum(json.loads(cell.get_attribute("data-rf-sizes")).values()) / 1e6)
    expect(cell.locator(".rf-status")).to_contain_text(f"Python ({megabytes} MB of files) loads when")
    page.wait_for_timeout(2500)  # idle time in which the page would otherwise warm up
    assert not [url for url in recorded.gets if url.endswith(PYTHON_FILES)]
    cell.locator("[data-rf-action=run]").click()
    expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    expect(cell.locator(".rf-output")).not_to_be_empty()
    assert [url for url in recorded.gets if url.endswith("pyodide.asm.wasm")]
    recorded.close()


def test_a_shared_calculator_link_lands_on_the_calculator(browser, site) -> None:
    recorded = _context(browser, viewport={"width": 390, "height": 844}, is_mobile=True)
    page = recorded.page()
    page.goto(site.isolated + CHAPTER + f"?{CALC}.users=32")
    form = page.locator(f"[data-rf-calc={CALC}]")
    expect(form).to_be_in_viewport()
    expect(page.locator(f"#rf-{CALC}-users")).to_have_value("32")
    top = form.bounding_box()["y"]
    assert 0 <= top < 844 / 2, top  # near the top of the window, below the header
    plain = recorded.page()
    plain.goto(site.isolated + CHAPTER)  # without the calculator's inputs, the page opens at its top
    assert plain.evaluate("window.scrollY") == 0
    recorded.close()


def test_the_gpu_menu_shows_whole_names_on_a_desktop(browser, site) -> None:
    recorded = _context(browser, viewport={"width": 1280, "height": 900})
    page = recorded.page()
    page.goto(site.isolated + CHAPTER)
    menu = page.locator(f"#rf-{CALC}-gpu")
    menu.scroll_into_view_if_needed()
    # The widest option's text, measured in the menu's own font, against the room inside the menu.
    room, needed = menu.evaluate(
        """menu => {
          const style = getComputedStyle(menu);
          const context = document.createElement("canvas").getContext("2d");
          context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
          const widest = Math.max(...[...menu.options].map((option) => context.measureText(option.text).width));
          const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
          return [menu.clientWidth - padding - 24, widest];  // 24 px: the menu's arrow
        }"""
    )
    assert needed <= room, (needed, room)
    recorded.close()


def test_a_wide_printed_table_on_a_phone_says_it_scrolls(browser, site) -> None:
    recorded = _context(browser, viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    page = recorded.page()
    page.goto(site.isolated + CHAPTER)
    cell = page.locator("[data-rf-cell]")
    cell.scroll_into_view_if_needed()
    expect(cell).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    cell.locator("textarea").fill("print('|'.join(f'{n:>12}' for n in range(12)))\n")
    cell.locator("[data-rf-action=run]").click()
    output = cell.locator(".rf-output")
    expect(output).to_have_attribute("data-rf-scrolls", "more", timeout=STEP_MS)
    expect(cell.locator(".rf-scroll-hint")).to_have_text("Swipe or scroll the output sideways for more columns →")
    assert output.get_attribute("role") == "log" and output.get_attribute("aria-label") == "Output"
    cell.locator("textarea").fill("print('short')\n")
    cell.locator("[data-rf-action=run]").click()
    expect(output).to_have_text("short\n", timeout=STEP_MS)
    expect(output).not_to_have_attribute("data-rf-scrolls", "more")
    expect(cell.locator(".rf-scroll-hint")).to_have_count(0)
    assert output.get_attribute("tabindex") == "0"  # still reachable from the keyboard
    recorded.close()
