"""Chapter 7's widgets in Debian's Chromium: the Run cells and the layout calculator.

On the tests' one built site (``conftest.site``): each Run cell prints what CPython prints for the
same program, the calculator shows the package's answer for each input and its example, answers a
change within 50 ms at the 95th percentile, and the page shows its figure, self-check and
interview box.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sitegen.pages import find
from support import BOOT_MS, STEP_MS, Recorded, set_inputs, start_at_defaults, wait_for_render

pytestmark = [pytest.mark.browser, pytest.mark.slow]
expect = pytest.importorskip("playwright.sync_api").expect

FOLDER = find(Path(__file__).resolve().parents[2], "mixture-of-experts")
CHAPTER = FOLDER.url
PROGRAMS = ("experts_touched", "expert_step", "break_even")
CALC = "mixture_of_experts"
calculator_view = FOLDER.calculator(CALC)
SHOWN = ("fewest", "best", "g8", "g32", "g72")
#: Inputs the latency check cycles through: models, GPUs, batches and contexts a reader would try.
TIMED = [
    {"model": model, "gpu": gpu, "batch": batch, "context": context}
    for model, gpu in (("deepseek-v3", "h100-sxm"), ("qwen3-30b-a3b", "h200"), ("gpt-oss-120b", "b200"))
    for batch in (64, 1024, 8192)
    for context in (1024, 8192)
]
#: The same timing loop as scripts/bench_browser.py: each input's input-to-numbers time, in the page.
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
      form.addEventListener("rf-calc-failed", done);
    });
    for (const [name, value] of Object.entries(params)) form.elements.namedItem(name).value = String(value);
    form.elements.namedItem(trigger).dispatchEvent(new Event("input", { bubbles: true }));
    results.push(await rendered);
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 40)));
  }
  return results;
}"""


@pytest.fixture(scope="module")
def chapter(browser, site) -> Iterator[object]:
    recorded = Recorded.open(browser)
    page = recorded.page()
    page.goto(site.isolated + CHAPTER)
    expect(page.locator("[data-rf-cell]").first).to_have_attribute("data-state", "ready", timeout=BOOT_MS)
    yield page
    recorded.assert_only(site.isolated)
    recorded.close()


def form(page: object) -> object:
    return page.locator(f"form[data-rf-calc={CALC}]")


def shown(page: object) -> dict[str, str]:
    return {name: form(page).locator(f"[data-rf-out={name}]").first.text_content() for name in SHOWN}


def expected(params: dict[str, object]) -> dict[str, str]:
    view = calculator_view.view(**params)
    return {name: str(view[name]) for name in SHOWN}


@pytest.mark.parametrize("program", PROGRAMS)
def test_each_run_cell_prints_what_cpython_prints(chapter, program: str) -> None:
    cell = chapter.locator(f"[data-rf-cell][data-rf-filename='{program}.py']")
    cell.locator("[data-rf-action=run]").click()
    expect(cell.locator(".rf-status")).to_contain_text("Finished", timeout=STEP_MS)
    path = FOLDER.folder / "programs" / f"{program}.py"
    cpython = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, check=True).stdout
    assert cell.locator(".rf-output").text_content() == cpython


def test_the_calculator_shows_the_packages_layouts_for_each_input(chapter) -> None:
    params = dict(calculator_view.DEFAULTS)
    start_at_defaults(form(chapter), params)
    assert shown(chapter) == expected(params)
    for name, value in [("model", "qwen3-30b-a3b"), ("weights", "bf16"), ("batch", 512), ("gpu", "h200")]:
        before = shown(chapter)
        params[name] = value
        set_inputs(form(chapter), {name: value})
        wait_for_render(form(chapter), params)
        assert shown(chapter) == expected(params), name
        assert shown(chapter) != before, f"changing {name} changed nothing"


def test_the_example_button_loads_sglangs_layout(chapter) -> None:
    button = form(chapter).locator("[data-rf-example]")
    button.click()
    params = {**calculator_view.DEFAULTS, **FOLDER.module().EXAMPLES["sglang"]}
    wait_for_render(form(chapter), params)
    assert shown(chapter) == expected(params)
    assert "EP72" in shown(chapter)["g72"] and "tokens/s" in shown(chapter)["g72"]


def test_the_calculator_answers_within_50_ms_at_the_95th_percentile(chapter) -> None:
    form(chapter).scroll_into_view_if_needed()
    results = chapter.evaluate(CALC_LOOP, [CALC, "batch", TIMED])
    times = sorted(result["inputToNumbersMs"] for result in results)
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    assert p95 <= 50, f"p95 {p95:.1f} ms (median {statistics.median(times):.1f} ms) over {len(times)} inputs"


def test_the_built_page_shows_its_figure_self_check_and_interview_box(chapter) -> None:
    text = chapter.locator("article").inner_text()
    assert "{{" not in text and "}}" not in text
    captions = [caption.strip() for caption in chapter.locator("figure figcaption").all_text_contents()]
    assert [caption[:11] for caption in captions if caption.startswith("Figure")] == ["Figure (a)."]
    questions = chapter.locator("details.question")
    assert questions.count() >= 5
    box = chapter.locator(".admonition.note").filter(has_text="Interview signal")
    assert box.count() == 1
    answers = box.text_content()
    assert answers.index("Weak:") < answers.index("Strong:")


@pytest.mark.parametrize("size", ["390px", "1280px"])
def test_no_serious_or_critical_axe_violation_on_this_page(browser, site, size: str) -> None:
    """The check every page gets (tests/test_page_quality.py), on this page alone: as loaded in the
    system's scheme, then in the other with Run pressed twice and the page scrolled through."""
    import test_page_quality as quality
    from bench_pages import axe_violations

    scheme, device = quality.VARIANTS[size]
    other = "light" if scheme == "dark" else "dark"
    context = browser.new_context(color_scheme=scheme, **device)
    page = context.new_page()
    problems = quality._listen_for_problems(page)
    page.goto(site.isolated + CHAPTER)
    expect(page.locator("body")).to_have_attribute("data-md-color-scheme", quality.PALETTES[scheme])
    quality._mounted_and_idle(page)
    found = {scheme: axe_violations(page)}
    quality._switch_scheme(page, quality.PALETTES[other])
    quality._run_twice(page)
    quality._scroll_through(page)
    found[other] = axe_violations(page)
    context.close()
    assert {where: violations for where, violations in found.items() if violations} == {}
    assert problems == []
