"""Chapter 3, "Continuous Batching": its quoted numbers, its calculator, its Run cell and its built page.

One package, one answer: every number the page quotes is recomputed here with
``roofline.serving.simulate`` (or chapter 1's and 2's own functions) and compared
with what the page module wrote; the claims the prose makes about those numbers
(which is larger, where goodput peaks) are checked on the same numbers, so a
change to the simulator that turns a sentence false fails here.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest

from roofline import (
    Hardware,
    ServingConfig,
    SpecError,
    Workload,
    builtin_specs,
    decode_step,
    estimate,
    memory_use,
    simulate,
)
from roofline import formatting as fmt
from roofline.forms import InputError
from roofline.serving import Lengths, blocks_for, kv_blocks_available
from sitegen import widgets
from sitegen.context import load_context
from sitegen.pages import find
from support import BOOT_MS, STEP_MS, Recorded, node_test_report, rendered, set_inputs, text_outputs

FOLDER = find(Path(__file__).resolve().parents[2], "continuous-batching")
ROOT = FOLDER.docs.parent
PAGE_SOURCE = FOLDER.folder / "index.md"
PROGRAM = FOLDER.folder / "programs" / "serving_policies.py"
chapter = FOLDER.module()
calculator = FOLDER.calculator("serving")


@pytest.fixture(scope="module")
def values() -> dict[str, str]:
    return chapter.build(load_context(ROOT)).values


@pytest.fixture(scope="module")
def setup() -> tuple[Hardware, Workload]:
    specs = builtin_specs()
    return Hardware(specs.gpu(chapter.GPU)), Workload(specs.model(chapter.MODEL), chapter.PRECISION)


def run(setup: tuple[Hardware, Workload], traffic: chapter.Traffic, policy: str, **changes: object):
    hardware, workload = setup
    config = ServingConfig(
        policy=policy,
        rate=traffic.rate,
        requests=traffic.requests,
        prompt=traffic.prompt,
        output=traffic.output,
        **changes,
    )
    return simulate(hardware, workload, config)


# ---- The page's numbers are the simulator's ------------------------------------------------------


def test_the_comparison_quotes_what_simulate_returns(values, setup) -> None:
    static = run(setup, chapter.COMPARE, "static")
    continuous = run(setup, chapter.COMPARE, "continuous")
    assert values["cmp_static_tps"] == fmt.rate(static.throughput_tokens_per_s)
    assert values["cmp_continuous_tps"] == fmt.rate(continuous.throughput_tokens_per_s)
    assert values["cmp_static_ttft"] == fmt.duration(static.ttft_s[50])
    assert values["cmp_continuous_ttft"] == fmt.duration(continuous.ttft_s[50])
    # What the prose says of them: continuous serves more, and static falls behind the arrivals.
    assert continuous.throughput_tokens_per_s > static.throughput_tokens_per_s
    assert static.throughput_requests_per_s < 0.9 * chapter.COMPARE.rate <= continuous.throughput_requests_per_s
    assert static.goodput_requests_per_s < continuous.goodput_requests_per_s


def test_littles_law_on_the_page_is_the_simulators_own_count(values, setup) -> None:
    """The page's Little check: nominal rate × mean latency against the simulator's time-weighted count,
    within 5% (the issue's tolerance for long runs); the page states the gap it finds."""
    continuous = run(setup, chapter.COMPARE, "continuous")
    predicted = chapter.COMPARE.rate * continuous.latency_mean_s
    assert values["little_measured"] == f"{continuous.mean_in_flight:.1f}"
    assert values["little_predicted"] == f"{predicted:.1f}"
    gap = abs(continuous.mean_in_flight - predicted) / continuous.mean_in_flight
    assert gap < 0.05
    assert values["little_error"] == f"{gap:.1%}"


def test_chunked_prefill_numbers_and_claims(values, setup) -> None:
    continuous = run(setup, chapter.LONG_PROMPTS, "continuous")
    chunked = run(setup, chapter.LONG_PROMPTS, "chunked", token_budget=chapter.CHUNK_BUDGET)
    assert values["chunk_continuous_tpot"] == fmt.duration(continuous.tpot_s[99])
    assert values["chunk_chunked_tpot"] == fmt.duration(chunked.tpot_s[99])
    assert chunked.tpot_s[99] < continuous.tpot_s[99]
    smallest = run(setup, chapter.LONG_PROMPTS, "chunked", token_budget=chapter.BUDGETS[0])
    largest = run(setup, chapter.LONG_PROMPTS, "chunked", token_budget=chapter.BUDGETS[-1])
    # "The budget is a dial": small budgets lower TPOT and raise TTFT.
    assert smallest.tpot_s[99] < largest.tpot_s[99] and smallest.ttft_s[99] > largest.ttft_s[99]
    costs = chapter.iteration_costs(*setup)
    budget = chapter.budget_for(costs, chapter.TBT_TARGET_S)
    assert values["tbt_budget"] == fmt.rate(budget)
    following = chapter.BUDGETS[chapter.BUDGETS.index(budget) + 1]
    assert (
        chapter.chunk_iteration_s(costs, budget) <= chapter.TBT_TARGET_S < chapter.chunk_iteration_s(costs, following)
    )


def test_goodput_peaks_then_falls_as_the_prose_says(setup) -> None:
    for policy in ("continuous", "chunked"):
        goodputs = [
            run(
                setup,
                chapter.Traffic(rate, chapter.SWEEP_REQUESTS, chapter.COMPARE.prompt, chapter.COMPARE.output),
                policy,
            ).goodput_requests_per_s
            for rate in chapter.SWEEP_RATES
        ]
        peak = goodputs.index(max(goodputs))
        assert 0 < peak < len(goodputs) - 1 and goodputs[-1] < goodputs[peak], policy


def test_at_a_low_rate_tpot_is_chapter_1s_decode_step_and_ttft_the_prefill(values, setup) -> None:
    """One package, one answer: the simulator at batch 1 is chapter 1's decode step."""
    hardware, workload = setup
    quiet = run(setup, chapter.QUIET, "continuous")
    step = decode_step(hardware, Workload(workload.model, chapter.PRECISION, batch=1, context=512)).seconds
    assert quiet.tpot_s[50] == pytest.approx(step, rel=0.01)
    assert values["quiet_tpot"] == values["quiet_decode_step"] == fmt.duration(step)
    assert values["quiet_ttft"] == values["quiet_prefill"]


def test_the_stall_is_chapter_1s_prefill_against_its_decode_step(values, setup) -> None:
    """The stall example's two times are chapter 1's prefill and batched decode step, to the float."""
    hardware, workload = setup
    costs = chapter.iteration_costs(hardware, workload)
    prefill = estimate(chapter.GPU, chapter.MODEL, prompt=chapter.STALL_PROMPT).prefill.seconds
    step = estimate(chapter.GPU, chapter.MODEL, batch=chapter.STALL_USERS, context=chapter.STALL_CONTEXT).decode.seconds
    assert chapter.prefill_s(costs, chapter.STALL_PROMPT) == prefill
    assert chapter.decode_s(costs, chapter.STALL_USERS, chapter.STALL_CONTEXT) == step
    assert values["stall_prefill_ms"] == fmt.duration(prefill) and values["stall_decode_ms"] == fmt.duration(step)


def test_admission_is_chapter_2s_users_that_fit(values, setup) -> None:
    """The simulator's blocks per request into its free blocks is chapter 2's largest batch at that context."""
    hardware, workload = setup
    admitted = kv_blocks_available(hardware, workload) // blocks_for(chapter.ADMIT_CONTEXT)
    fit = memory_use(hardware, Workload(workload.model, chapter.PRECISION, context=chapter.ADMIT_CONTEXT)).max_batch
    assert admitted == fit
    assert values["admit_users"] == values["admit_chapter2_users"] == fmt.rate(fit)


# ---- The calculator ------------------------------------------------------------------------------


def test_the_calculators_markup_has_a_timeline_and_its_metrics() -> None:
    view = calculator.view(**calculator.DEFAULTS)
    links = widgets.RuntimeLinks(wheel="w.whl", version="v")
    page = widgets.calculator("serving", calculator.FORM, view, links, "serving.py")
    timeline = next(output for output in calculator.FORM.outputs if output.kind == "timeline")
    assert 'data-rf-draw="timeline" data-rf-key="timeline"' in page and html.escape(timeline.caption) in page
    for name in ("ttft", "tpot", "throughput", "goodput", "in_flight", "busy"):
        assert f'data-rf-out="{name}">{html.escape(view[name])}<' in page


def test_the_calculator_shows_what_simulate_returns(setup) -> None:
    params = dict(calculator.DEFAULTS, policy="chunked", rate=20, prompt_low=512, prompt_high=4096)
    view = calculator.view(**params)
    hardware, workload = setup
    config = ServingConfig(
        policy="chunked",
        rate=20.0,
        requests=calculator.REQUESTS,
        prompt=Lengths(512, 4096),
        output=Lengths(params["output_low"], params["output_high"]),
        max_batch=params["max_batch"],
        token_budget=params["token_budget"],
        trace_requests=calculator.TIMELINE_REQUESTS,
    )
    result = simulate(hardware, workload, config)
    assert view["ttft"] == " · ".join(fmt.duration(result.ttft_s[p]) for p in (50, 90, 99))
    assert view["throughput"].startswith(f"{fmt.rate(result.throughput_tokens_per_s)} tokens/s")
    # The timeline is the trace: one row per traced request, a wait span, then the simulator's spans.
    rows = view["timeline"]["rows"]
    assert len(rows) == calculator.TIMELINE_REQUESTS
    for row, trace in zip(rows, result.trace, strict=True):
        spans = [span for span in row["spans"] if span[0] != "wait"]
        assert spans == [[kind, start, end] for kind, start, end, _ in trace.spans]
        assert row["spans"][-1][2] == trace.finish_s


def test_lengths_from_above_to_are_refused_by_the_forms_rule_naming_both_fields() -> None:
    with pytest.raises(InputError) as refused:
        calculator.view(**dict(calculator.DEFAULTS, output_low=900, output_high=100))
    assert refused.value.fields == ("output_low", "output_high")
    assert "The shortest output ('from') must not be longer than the longest ('to')." in str(refused.value)


def test_every_model_the_form_offers_simulates_or_says_why() -> None:
    models = calculator.FORM.field("model").choices
    for model, _ in models:
        try:
            view = calculator.view(**dict(calculator.DEFAULTS, model=model, rate=1))
        except SpecError as error:  # too big for one GPU: the page shows this line
            assert "\n" not in str(error) and "leave no room" in str(error), model
        else:
            assert view["timeline"]["rows"], model


@pytest.mark.node
def test_the_page_draws_a_timeline_bar_per_span(node) -> None:
    """The timeline output kind's drawing, under Node (tests/node/timeline.test.mjs)."""
    report = node_test_report(node, "timeline.test.mjs")
    assert "pass 5\n" in report, report


# ---- The Run cell --------------------------------------------------------------------------------


def test_the_run_cell_prints_the_three_policies_as_simulate_computes_them(setup) -> None:
    done = subprocess.run([sys.executable, str(PROGRAM)], capture_output=True, text=True, check=True, cwd=ROOT)
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["static", "continuous", "chunked"]
    row = next(line for line in lines if line.startswith("output tokens/s"))
    traffic = chapter.Traffic(16, 1000, Lengths(128, 4096), Lengths(32, 512))
    expected = [
        fmt.rate(run(setup, traffic, policy).throughput_tokens_per_s) for policy in ("static", "continuous", "chunked")
    ]
    assert row.split()[2:] == expected


# ---- The built page ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def page(site):
    return site.soup(FOLDER.url)


@pytest.mark.slow
def test_the_built_page_resolves_every_value_and_shows_its_widgets(page, values) -> None:
    text = " ".join(page.get_text(" ").split())
    assert "{{" not in text and "Coming next" not in text
    for name in ("cmp_continuous_tps", "little_measured", "chunk_chunked_tpot", "admit_users", "tbt_budget"):
        assert values[name] in text, name
    figures = ["serving-timelines", "serving-budget", "serving-throughput-latency", "serving-goodput"]
    for letter, name in zip("abcd", figures, strict=True):
        assert f"Figure ({letter})." in page.select_one(f"#figure-{name} figcaption").get_text(), name
    assert page.select_one("[data-rf-calc=serving] [data-rf-draw=timeline]") is not None
    assert page.select_one("[data-rf-cell][data-rf-filename='serving_policies.py']") is not None
    assert len(page.select("details.question")) >= 4
    interview = next(box for box in page.select(".admonition") if "Interview signal" in box.get_text())
    strong = " ".join(interview.get_text(" ").split())
    for name in ("stall_prefill_ms", "chunk_continuous_tpot", "chunk_chunked_tpot", "tbt_budget"):
        assert values[name] in strong, name
    footnotes = page.select_one(".footnote").get_text()
    for paper in ("Orca", "PagedAttention", "Sarathi-Serve", "DistServe"):
        assert paper in footnotes
    assert len(re.findall(r"https://", footnotes)) == 4


# ---- The simulator in Chromium: a calculator with a timeline ---------------------------------------

SERVING_OUTPUTS = ("verdict", "ttft", "tpot", "throughput", "goodput", "in_flight", "busy", "explain")


def serving_shown(form: object) -> dict[str, object]:
    """The metrics on screen, and the timeline as drawn: per row, each bar's kind and its titled times."""
    shown = {name: text for name, text in text_outputs(form).items() if name in SERVING_OUTPUTS}
    shown["timeline"] = form.locator("svg.rf-timeline").evaluate(
        """svg => [...svg.querySelectorAll("[data-rf-row]")].map((row) =>
             [...row.querySelectorAll("rect")].map((bar) =>
               [bar.dataset.kind, bar.querySelector("title").textContent.split(": ")[1]]))"""
    )
    return shown


def serving_expected(params: dict[str, object]) -> dict[str, object]:
    """The same, computed by the calculator's view here in CPython."""
    view = calculator.view(**params)
    expected = {name: view[name] for name in SERVING_OUTPUTS}
    expected["timeline"] = [
        [[kind, f"{start:.3f}–{end:.3f} s"] for kind, start, end in row["spans"]] for row in view["timeline"]["rows"]
    ]
    return expected


@pytest.mark.slow
@pytest.mark.browser
def test_the_simulator_redraws_its_timeline_and_metrics_as_cpython_computes_them(browser, site) -> None:
    expect = pytest.importorskip("playwright.sync_api").expect
    recorded = Recorded.open(browser)
    page = recorded.page()
    page.goto(site.isolated + FOLDER.url)
    form = page.locator("[data-rf-calc=serving]")
    form.scroll_into_view_if_needed()
    params = dict(calculator.DEFAULTS)
    expect(form.locator("svg.rf-timeline")).to_be_visible()
    assert serving_shown(form) == serving_expected(params)  # the build-time answer, drawn before Python starts
    for change in ({"rate": 30}, {"policy": "static"}, {"policy": "chunked", "prompt_high": 8192, "token_budget": 256}):
        set_inputs(form, change)
        params.update(change)
        expect(form).to_have_attribute("data-rf-rendered", rendered(params), timeout=BOOT_MS)
        expect(form).to_have_attribute("data-state", "ready")
        assert serving_shown(form) == serving_expected(params), change
    # Static batches pad: the timeline shows padding bars, which continuous batching never draws.
    assert "padding" not in {kind for row in serving_shown(form)["timeline"] for kind, _ in row}
    set_inputs(form, {"policy": "static"})
    expect(form.locator("svg.rf-timeline rect[data-kind=padding]").first).to_be_attached(timeout=STEP_MS)
    # Lengths the wrong way round break the form's rule: both boxes marked, one line under the first.
    set_inputs(form, {"output_low": 900, "output_high": 100})
    expect(form).to_have_attribute("data-state", "invalid")
    for name in ("output_low", "output_high"):
        expect(form.locator(f"[name={name}]")).to_have_attribute("aria-invalid", "true")
    expect(form.locator("#rf-serving-output_low-error")).to_have_text(
        "The shortest output ('from') must not be longer than the longest ('to')."
    )
    recorded.assert_only(site.isolated)
    recorded.context.close()
