"""Chapter 1, "Prefill vs Decode": its numbers, tables, figures, Run cell and calculator.

One package, one answer: every number the page quotes, the table its Run cell
prints and the calculator's view are the package's, recomputed here and compared
with what the page module wrote and what the built page shows (the tests' one
built site, ``conftest.site``). What every chapter gets checked is in
``tests/test_every_chapter.py``; this is what is particular to this one.
"""

from __future__ import annotations

import html as html_module
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from roofline_views import answer as worker_answer

import roofline
from roofline import Hardware, Workload, crossover_batch, estimate, load_specs, simple_crossover_batch
from roofline import formatting as fmt
from roofline.kvcache import no_crossover_from
from roofline.performance import TWO_LEVEL
from roofline.sweep import decode_prefill_rows, decode_prefill_table, gpus_to_fit
from sitegen.context import load_context
from sitegen.markers import Markers
from sitegen.output import strip_notice
from sitegen.pages import find
from sitegen.shortcodes import Shortcodes

FOLDER = find(Path(__file__).resolve().parents[2], "prefill-vs-decode")
ROOT = FOLDER.docs.parent
FIGURES = ROOT / "figures"
PAGE = FOLDER.folder / "index.md"
PROGRAM = FOLDER.folder / "programs" / "h100_decode_prefill.py"
CALCULATOR = "<!-- roofline:calculator decode_speed -->"
chapter_module = FOLDER.module()
calculator = FOLDER.calculator("decode_speed")
CHAPTER_GPU, SMALL_MODEL, LARGE_MODEL = chapter_module.GPU, chapter_module.SMALL_MODEL, chapter_module.LARGE_MODEL


@pytest.fixture(scope="module")
def ctx():
    return load_context(ROOT)


@pytest.fixture(scope="module")
def markers() -> Markers:
    return Markers(docs=FOLDER.docs, wheel_uri="assets/w.whl", snapshot_uri="assets/s.gz", version="v")


def text_of(soup: BeautifulSoup) -> str:
    return " ".join(soup.get_text(" ").split())


# ---- The page module's values, tables and figures --------------------------------------------------


@pytest.fixture(scope="module")
def values(ctx):
    return chapter_module.build(ctx).values


def test_h100_tables_are_the_packages_own_tables(ctx):
    """Dense models in the first table; mixtures of experts and latent attention in the second."""
    specs = load_specs()
    dense, sparse = chapter_module.model_groups(ctx)
    assert "mixtral-8x7b" in sparse and "deepseek-v3" in sparse and "llama-3.1-8b" in dense
    assert not set(dense) & set(sparse) and set(dense) | set(sparse) == set(specs.models)
    for name, models in (("h100-decode-prefill", dense), ("h100-decode-prefill-sparse", sparse)):
        expected = decode_prefill_table(
            decode_prefill_rows(specs, CHAPTER_GPU, models, precisions=("bf16", "fp8", "int4"), prompt=2000)
        ).markdown()
        assert strip_notice((FIGURES / f"{name}.md").read_text()) == expected


def test_the_rule_then_the_ceiling_with_each_reason(values):
    """Issue 9: the rule's 209, 47 and 32.5 ms stay; the ceiling follows with its reasons."""
    assert (values["decode_small_bf16"], values["decode_large_bf16"], values["prefill_rule_ms"]) == (
        "209",
        "47",
        "32.5",
    )
    assert values["explain_decode_small_bf16"] == (
        "the rule gives 209; an engine reads one row of the embedding, not the whole table, so 223"
    )
    assert values["explain_prefill_small"] == (
        "the rule gives 32.5 ms; the output head runs for the last prompt token only and lookups cost no math,"
        " so 28.2 ms, and causal attention over 2,000 tokens brings it to 29.3 ms"
    )
    assert values["prefill_small_bound"] == "compute" and values["ceiling_prefill_small_fp8_ms"] == "14.6"
    assert values["explain_prefill_small"].endswith("brings it to 29.3 ms")
    assert values["ceiling_prefill_small_int4_ms"] == "29.3"
    # Issue 17: on two GPUs the 70B's reads give 48, and its 160 all-reduces a step take it to 47.
    assert values["explain_decode_large_bf16"].endswith(
        "so 48, and 160 all-reduces between the 2 GPUs add 0.598 ms, so 47"  # 3.7 µs measured on 2 (issue 35)
    )
    # The MoE and MLA rows, explained with the package's own figures.
    # Mixtral's ceiling on its GPUs pays the all-reduces between them (issue 17): 263 -> 247; issue 35: 3.7 µs on 2.
    assert values["moe_rule"] == "72" and values["moe_ceiling"] == "247"
    assert (
        "a mixture of experts reads only the experts its tokens pick (2.0 of 8 a layer)" in values["explain_decode_moe"]
    )
    # 85.0 GB usable an H100 (issue 17): 1,342 GB of bf16 weights need 16, fp8 halves that to 8.
    assert values["mla_gpus_bf16"] == "16" and values["mla_gpus_fp8"] == "8" and values["mla_gpus_saved"] == "8"
    # Both prefills wait on one read of the weights; 16 GPUs span two NVLink domains, where the
    # ceiling charges a two-level all-reduce (1/8 of each message between the servers), cheaper than
    # a flat ring over the network, which made bf16's prefill 156.9 ms.
    at16 = estimate(CHAPTER_GPU, "deepseek-v3", gpus=16, prompt=2000)
    bf16 = at16.prefill
    assert at16.hardware.allreduce_wire[1] == TWO_LEVEL and values["mla_cross_share"] == "1/8"
    assert values["mla_prefill_fp8_bound"] == "memory" == bf16.bound
    assert values["mla_prefill_bf16_ms"] == fmt.milliseconds(bf16.seconds).removesuffix(" ms")
    assert float(values["mla_prefill_bf16_ms"]) < 2 * float(values["mla_prefill_fp8_ms"])


def test_one_step_time_for_one_read(values, ctx):
    """The batching section's single-user step and the tokens/s it implies come from one decode step."""
    step = roofline.decode_step(Hardware(ctx.specs.gpu(CHAPTER_GPU)), Workload(ctx.specs.model(SMALL_MODEL)))
    assert values["step_batch1_ms"] == fmt.milliseconds(step.seconds).removesuffix(" ms")
    assert values["decode_small_ceiling"] == fmt.rate(1 / step.seconds)
    # The rule's step is the rule's speed inverted, wherever the chapter quotes it.
    rule = estimate(CHAPTER_GPU, SMALL_MODEL).rule.decode_tokens_per_s_per_user
    assert values["step_small_bf16_ms"] == fmt.milliseconds(1 / rule).removesuffix(" ms")


def test_measured_figures_are_the_packages_comparisons(values):
    from roofline.measured import compare_all, well_tuned_decode_range

    comparisons = {c.measurement.id: c for c in compare_all()}
    gptfast = comparisons["gptfast-llama-3.1-8b-bf16-1gpu"]
    assert values["gptfast_tps"] == "93.9" and "power-limited to 330 W" in values["gptfast_hardware"]
    assert values["gptfast_ratio"] == f"{gptfast.ratio * 100:.0f}%"
    assert "github.com/pytorch-labs/gpt-fast" in values["gptfast_source"]
    expected = well_tuned_decode_range(list(comparisons.values()))
    assert values["well_tuned_low"] == f"{expected.low * 100:.0f}%"
    assert values["well_tuned_high"] == f"{expected.high * 100:.0f}%"
    nim = comparisons["nim-llama-3.3-70b-fp8-tp2-5000-500-itl"]
    assert values["nim_itl_ms"] == "18.58" and values["nim_ratio"] == f"{nim.ratio * 100:.0f}%"
    assert values["nim_gpus"] == "2" and values["nim_input"] == "5,000" and values["nim_output"] == "500"
    speculative = [c for c in comparisons.values() if c.measurement.speculative]
    above = [c for c in comparisons.values() if c.ratio > 1]
    assert values["speculative_sentence"] == (
        f"{len(speculative)} of the {len(comparisons)} measurements here used them, and {len(above)} exceeded"
        " their ceilings."
    )
    assert all(c.measurement.speculative for c in above)  # only speculative runs may beat a ceiling


def test_the_speculative_sentence_counts_what_it_says():
    from dataclasses import replace

    from roofline.measured import compare_all

    plain = [c for c in compare_all() if not c.measurement.speculative]
    flagged = [replace(plain[0], measurement=replace(plain[0].measurement, speculative=True), ratio=1.4)]
    assert chapter_module.speculative_sentence(flagged + plain[1:]) == (
        f"1 of the {len(plain)} measurements here used them, and 1 exceeded its ceiling."
    )
    assert chapter_module.speculative_sentence(plain) == (
        f"None of the {len(plain)} measurements here used them, and none exceeded its ceiling."
    )


def test_decode_bars_print_what_the_table_prints():
    """A bar's label and the table cell are one formatted number (no 847 beside 848)."""
    spec = json.loads((FIGURES / "decode-by-precision.vl.json").read_text())
    points = next(d["values"] for d in spec.get("datasets", {}).values()) if "datasets" in spec else None
    points = points or spec["data"]["values"]
    table = strip_notice((FIGURES / "h100-decode-prefill.md").read_text())
    table += strip_notice((FIGURES / "h100-decode-prefill-sparse.md").read_text())
    cells = {
        (row[0], row[1]): row[4]
        for row in (
            [cell.strip() for cell in line.strip("|").split("|")]
            for line in table.splitlines()[2:]
            if line.startswith("| ")
        )
    }
    for point in points:
        assert point["label"] == cells[(point["model"], point["precision"])]


def test_prose_values_agree_with_the_package(values):
    """Spot checks against direct package calls (the chapter's worked numbers).

    The chapter teaches the rule of thumb first, so its per-precision decode figures
    are the rule's (209, 417, 834); the table beside them holds the ceilings.
    """
    for precision in ("bf16", "fp8", "int4"):
        result = estimate(CHAPTER_GPU, SMALL_MODEL, precision=precision)
        assert values[f"decode_small_{precision}"] == fmt.rate(result.rule.decode_tokens_per_s_per_user)
    assert values["decode_small_bf16"] == "209"
    prefill = estimate(CHAPTER_GPU, SMALL_MODEL, prompt=2000).prefill.seconds
    assert values["explain_prefill_small"].endswith(f"brings it to {fmt.milliseconds(prefill)}")
    h100 = Hardware(load_specs().gpu(CHAPTER_GPU))
    model = load_specs().model(SMALL_MODEL)
    assert values["crossover_bf16"] == fmt.users(roofline.simple_crossover_batch(h100, "bf16"))
    assert values["crossover_users_a"] == fmt.users(crossover_batch(h100, Workload(model, context=128)))
    assert values["crossover_users_b"] == fmt.users(crossover_batch(h100, Workload(model, context=256)))


def test_no_crossover_threshold_is_where_crossover_batch_turns_none(ctx):
    h100, small = Hardware(ctx.specs.gpu(CHAPTER_GPU)), ctx.specs.model(SMALL_MODEL)
    threshold = no_crossover_from(h100, Workload(small))
    assert threshold is not None
    assert crossover_batch(h100, Workload(small, context=threshold)) is None
    assert crossover_batch(h100, Workload(small, context=threshold - 1)) is not None


def test_the_chapter_shows_its_figures_a_to_d_in_reading_order():
    source = PAGE.read_text(encoding="utf-8")
    text = Shortcodes(FIGURES).expand(source, FOLDER.page, lists={"chapters": ""})
    letters = [text[i + len("**Figure (")] for i in range(len(text)) if text.startswith("**Figure (", i)]
    assert letters == ["a", "b", "c", "d"]


# ---- The Run cell's program ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def output() -> str:
    result = subprocess.run([sys.executable, str(PROGRAM)], capture_output=True, text=True, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


def text_rows(output: str, table: int = 0) -> list[list[str]]:
    """The ``table``-th aligned text table's body rows, cells split on runs of two or more spaces."""
    lines = output.split("\n\n")[table].splitlines()
    return [re.split(r" {2,}", line.strip()) for line in lines[1:]]


def markdown_rows(markdown: str) -> list[list[str]]:
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def test_program_prints_the_chapter_tables_row_for_row(output: str) -> None:
    for table, name in enumerate(("h100-decode-prefill.md", "h100-decode-prefill-sparse.md")):
        chapter = markdown_rows((FIGURES / name).read_text(encoding="utf-8"))
        assert chapter, f"figures/{name} has no table rows"
        assert text_rows(output, table) == chapter


def test_program_prints_the_issue_numbers(output: str) -> None:
    """Issue 3's worked numbers, with issue 9's ceiling: the table holds the engine's ceiling, 223 tokens/s
    for the 8B at 16-bit (the rule's 209 reads the whole embedding table), 70B needs 2 GPUs, and the
    rule's crossover stays ≈295."""
    rows = {(row[0], row[1]): row for row in text_rows(output)}
    assert rows[("Llama 3.1 8B", "bf16")][4] == "223"
    assert rows[("Llama 3.1 70B", "bf16")][3] == "2"
    assert output.rstrip().endswith("At 16-bit, decode turns compute-bound near 295 users.")


def test_program_prints_the_rule_beside_the_ceiling(output: str) -> None:
    """Issue 9: the Run cell prints both, with the reason for each difference."""
    assert (
        "- decode: the rule gives 209; an engine reads one row of the embedding, not the whole table,"
        " so 223 tokens/s\n" in output
    )
    assert "- prefill: the rule gives 32.5 ms; the output head runs for the last prompt token only" in output
    assert "causal attention over 2,000 tokens brings it to 29.3 ms\n" in output


def test_program_uses_the_shared_table_functions() -> None:
    """The program must build its table with the functions the chapter uses, not its own arithmetic."""
    source = PROGRAM.read_text(encoding="utf-8")
    assert "decode_prefill_rows(" in source and "decode_prefill_table(" in source


# ---- The calculator -------------------------------------------------------------------------------


def test_the_first_paint_shows_the_packages_numbers_for_the_defaults(markers) -> None:
    """Issue 2, section 5: one user of the 8B at 16-bit, 4,096 tokens, ≈17 GB of 81.6 GB (issue 17: the
    weights plus 95% of what they leave of the 85.5 GB the driver reports, less 0.5 GB of workspace).
    Issue 9: the ceiling reads one embedding row, not the table, so ≈216 tokens/s where the rule gave ≈203."""
    html = markers.replace(CALCULATOR, FOLDER.page, FOLDER.url)
    view = calculator.view(**calculator.DEFAULTS)
    for name in ("per_user", "total", "weights", "hardware", "memory", "bound", "verdict", "explain"):
        assert f'data-rf-out="{name}">{html_module.escape(view[name])}<' in html
    assert view["per_user"] in {"215", "216"} and view["memory"] == "16.6 GB of 81.6 GB weights + KV pool"
    for field in calculator.FORM.fields:
        assert f'id="rf-decode_speed-{field.name}"' in html


def test_the_page_marker_offers_the_lone_example_as_a_button(markers) -> None:
    """Issue 40: the page's marker names the example; the widget carries its inputs on a labelled button."""
    marker = "<!-- roofline:calculator decode_speed example=lone -->"
    assert marker in PAGE.read_text(encoding="utf-8")
    soup = BeautifulSoup(markers.replace(marker, FOLDER.page, FOLDER.url), "html.parser")
    button = soup.select_one("button.rf-calc__example")
    assert button.get_text() == "Load this section's example" and button["type"] == "button"
    assert json.loads(button["data-rf-example"]) == chapter_module.EXAMPLES["lone"]


def test_the_view_words_a_deployment_that_does_not_fit() -> None:
    view = calculator.view(**dict(calculator.DEFAULTS, model="llama-3.1-405b"))
    # 811.7 GB over 85.0 GB per H100 is 9.5 GPUs; the smallest tensor-parallel degree that holds it is 16.
    assert view["fits"] is False and view["per_user"] == "—" and view["gpus_needed"] == 16
    assert view["expected"] == "—"
    assert view["explain"] == (
        "Does not fit. The weights alone need 811.7 GB at bf16, more than the 85.0 GB usable on 1 GPU."
        " To fit: use 16 GPUs of this kind."
    )


def test_a_long_context_that_does_not_fit_gets_advice_that_works() -> None:
    # Issue 8: 70B at fp8 fits its weights (72.7 GB: an fp8 checkpoint keeps its head and embedding at
    # 16 bits, issue 35); one user's 131,072-token cache (42.9 GB) does not fit the 11.7 GB they leave
    # (issue 17's memory). The answer is a shorter context, a
    # smaller cache or smaller weights, not "weights alone" and more GPUs only.
    view = calculator.view(**dict(calculator.DEFAULTS, model="llama-3.1-70b", precision="fp8", context=131072))
    assert view["fits"] is False
    assert "weights alone" not in view["explain"]
    assert view["explain"].startswith(
        "Does not fit. The weights (72.7 GB) fit, but one user's KV cache at 131,072 tokens needs 42.9 GB"
    )
    assert "shorten the context to 35,850 tokens or fewer; or store the weights in int4" in view["explain"]


def test_the_view_says_what_the_rule_gives_and_why_the_ceiling_differs() -> None:
    view = calculator.view(**calculator.DEFAULTS)
    assert view["per_user"] == "215"
    assert view["explain"].startswith(
        "The rule of thumb gives 209; an engine reads one row of the embedding, not the whole table, so 223,"
        " and this user's context brings it to 215 tokens/s per user, the ceiling."
    )
    # The step reads what the ceiling counts: 15.0 GB of weights (one embedding row), not the 16.1 GB stored.
    assert "Each decode step reads 15.0 GB of the 16.1 GB of weights and 0.5 GB of KV cache" in view["explain"]


def test_the_expected_band_stands_beside_the_ceiling() -> None:
    """Issue 17: the calculator shows the calibrated prediction and its band beside the ceiling, for
    any GPU count and batch: one user's step at the fitted costs, the band the time between tokens'
    80% band inverted, and the sentence on what expected means."""
    from roofline import estimate
    from roofline import formatting as fmt
    from roofline.calibration import load_calibration

    for change in ({}, {"gpus": 2, "model": "llama-3.1-70b"}, {"users": 8}):
        params = dict(calculator.DEFAULTS, **change)
        view = calculator.view(**params)
        result = estimate(
            params["gpu"],
            params["model"],
            gpus=params["gpus"],
            batch=params["users"],
            context=params["context"],
            costs="expected",
        )
        rate = result.to_dict()["expected"]["decode_tokens_per_s_per_user"]
        low, high = load_calibration().decode_rate_band(rate)
        assert view["expected"] == f"{rate:,.0f} (band {low:,.0f}–{high:,.0f}) tokens/s"
        assert float(view["expected"].split()[0].replace(",", "")) < float(view["per_user"].replace(",", ""))
        assert fmt.EXPECTED_MEANS in view["explain"]


def test_the_view_changes_its_explanation_with_the_bound() -> None:
    memory = calculator.view(**dict(calculator.DEFAULTS, context=0))
    compute = calculator.view(**dict(calculator.DEFAULTS, context=0, users=512))
    assert "memory-bound" in memory["explain"] and "until about 295 users" in memory["explain"]
    assert "compute-bound" in compute["explain"] and compute["bound"] == "compute-bound"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"users": 0}, "users"),
        ({"context": 10**9}, "context"),
        ({"gpus": True}, "gpus"),
        ({"gpu": "h100"}, "must be one of the choices, got 'h100' (did you mean 'h100-sxm'?)"),
        ({"precision": "fp3"}, "field 'precision': must be one of the choices"),
    ],
)
def test_the_worker_answers_bad_requests_with_the_reason(change: dict, message: str) -> None:
    """The worker's roofline_views.answer, in CPython: the form refuses the input, naming the field."""
    answered = json.loads(worker_answer("decode_speed", json.dumps(dict(calculator.DEFAULTS, **change))))
    assert message in answered["error"] and answered["fields"] == list(change)


def test_the_chart_reuses_the_results_crossover_at_every_batch() -> None:
    from roofline import estimate

    result = estimate("h100-sxm", "llama-3.1-8b", context=0, batch=48)
    points = calculator.chart_points(result)
    assert [point["users"] for point in points] == sorted({*calculator.CHART_USERS, 48})
    for point in points:
        direct = estimate("h100-sxm", "llama-3.1-8b", batch=point["users"])
        assert point["per_user"] == direct.decode_tokens_per_s_per_user
        assert point["total"] == direct.decode_tokens_per_s_total


def test_the_chart_is_a_vega_lite_spec_of_those_points_with_the_crossover_ruled() -> None:
    """The calculator's chart is the generic vega output kind: a Vega-Lite spec, plain dicts."""
    from roofline import estimate

    chart = calculator.view(**dict(calculator.DEFAULTS, context=0, users=48))["chart"]
    assert chart["description"].endswith("the dots mark 48 users.")
    layers = {layer["mark"]["type"]: layer for layer in chart["layer"]}
    crossover = estimate("h100-sxm", "llama-3.1-8b").crossover_batch
    assert layers["rule"]["data"]["values"][0]["users"] == crossover
    lines = layers["line"]["data"]["values"]
    assert {row["series"] for row in lines} == {"all users", "each user"}
    assert [row["users"] for row in layers["point"]["data"]["values"]] == [48, 48]
    json.dumps(chart, allow_nan=False)
    full = calculator.view(**dict(calculator.DEFAULTS, context=131072))["chart"]
    assert any(layer["mark"]["type"] == "rect" for layer in full["layer"])  # memory full, shaded
    nothing = calculator.view(**dict(calculator.DEFAULTS, model="llama-3.1-405b"))["chart"]
    assert "Nothing fits" in nothing["description"]


def test_multi_gpu_answers_name_how_the_all_reduces_are_charged() -> None:
    """Issue 17: several GPUs pay two all-reduces a layer, and the answer says at what rate."""
    view = calculator.view(**dict(calculator.DEFAULTS, model="llama-3.1-70b", gpus=2))
    assert "at 6.70 TB/s (2 GPUs together)" in view["explain"]
    assert "160 all-reduces between the 2 GPUs add" in view["explain"]
    assert "each 3.7 µs + 2(G-1)/G x message / 450 GB/s over NVLink 4" in view["explain"]  # measured on 2 (issue 35)
    assert "all-reduce" not in calculator.view(**calculator.DEFAULTS)["explain"]


# ---- The built page (the tests' site) ---------------------------------------------------------------


@pytest.fixture(scope="module")
def chapter(site) -> BeautifulSoup:
    return site.soup(FOLDER.url)


@pytest.mark.slow
def test_chapter_has_the_packages_h100_tables(chapter):
    """Dense models first; mixtures of experts and latent attention in a table of their own."""
    specs = roofline.load_specs()
    dense = [m.id for m in specs.models.values() if m.moe is None and m.mla is None]
    sparse = [m.id for m in specs.models.values() if m.id not in dense]
    shown = [t for t in chapter.select("table") if "Decode tok/s" in t.get_text()]
    assert len(shown) == 2
    for table, models in zip(shown, (dense, sparse), strict=True):
        expected = decode_prefill_table(
            decode_prefill_rows(specs, CHAPTER_GPU, models, precisions=("bf16", "fp8", "int4"), prompt=2000)
        )
        header = tuple(th.get_text(strip=True) for th in table.select("thead th"))
        rows = tuple(tuple(td.get_text(strip=True) for td in tr.select("td")) for tr in table.select("tbody tr"))
        assert header == expected.header
        assert rows == expected.rows


@pytest.mark.slow
def test_chapter_shows_the_rule_then_the_ceiling_with_the_reasons(chapter):
    text = text_of(chapter.select_one("article"))
    section = text[text.index("The rule and the ceiling") : text.index("Ceilings, not predictions")]
    small = estimate(CHAPTER_GPU, SMALL_MODEL, prompt=2000)
    assert small.decode_vs_rule in section and small.prefill_vs_rule in section
    for precision in ("fp8", "int4"):
        assert estimate(CHAPTER_GPU, SMALL_MODEL, precision=precision).decode_vs_rule in section
    # Multi-GPU numbers carry their all-reduces (issue 17) and the measured gap.
    assert "ideal scaling" not in section and "interconnect free" not in section
    assert "160 all-reduces between the 2 GPUs add 0.598 ms" in section
    assert "published multi-GPU decode measurements reached 36% to 66%" in section
    # The mixture-of-experts and latent-attention rows are explained beside their table.
    assert "Bandwidth ÷ all the weights gives 72 tokens/s on 2 GPUs, yet the table shows 247" in section
    assert "decode rises to 260" in section  # 263 before fp8 checkpoints kept their head at 16 bits (issue 35)
    assert "DeepSeek-V3 decodes faster than Llama 3.1 8B (483 against 223 tokens/s)" in section
    assert (
        "At fp8, DeepSeek-V3 needs 8 fewer GPUs, and its prefill takes 39.4 ms against 39.3 at 16 bits,"
        " still memory-bound" in section
    )
    assert "sends only 1/8 of each message between them" in section
    # Prose that no longer reads right is gone.
    assert "because the package also counts causal attention" not in text
    assert "a 8,000" not in text and "document of 8,000 tokens" in text
    assert "Halving the bytes per weight doubles the ceiling." not in text


@pytest.mark.slow
def test_ceilings_not_predictions_quotes_the_measurements(chapter):
    text = text_of(chapter.select_one("article"))
    section = text[text.index("Ceilings, not predictions") : text.index("Why batching helps")]
    assert "93.9 tokens/s" in section and "power-limited to 330 W" in section
    assert "69% of the 136 tokens/s ceiling" in section
    assert "reached 51% to 69%" in section and "inter-token latency of 18.58 ms" in section
    assert "Speculative decoding and multi-token prediction" in section
    assert "presumably they are 8-bit" not in text and "Llama-2-7B" not in text
    links = [a["href"] for a in chapter.select(".footnote a[href^='https://']")]
    assert any("github.com/pytorch-labs/gpt-fast" in link for link in links)
    assert any("docs.nvidia.com/nim" in link for link in links)


@pytest.mark.slow
def test_chapter_has_every_figure_with_its_svg_and_spec(site, chapter):
    # Lettered in reading order: the roofline comes first in the chapter.
    for letter, name in zip(
        "abcd", ("roofline", "decode-by-precision", "prefill-vs-prompt", "batching-crossover"), strict=True
    ):
        block = chapter.select_one(f"#figure-{name} .roofline-chart img")
        assert block is not None, name
        served = site.directory / "chapters" / "prefill-vs-decode" / block["src"]
        assert served.resolve().read_bytes() == (ROOT / "figures" / f"{name}.svg").read_bytes()
        assert (served.resolve().with_name(f"{name}.vl.json")).is_file()
        assert f"Figure ({letter})." in chapter.select_one(f"#figure-{name} figcaption").get_text()
    assert [fig.get_text()[:10] for fig in chapter.select("figure.roofline-figure figcaption")] == [
        f"Figure ({letter})" for letter in "abcd"
    ]


@pytest.mark.slow
def test_chapter_prose_works_the_packages_numbers(chapter):
    text = text_of(chapter)
    specs = roofline.load_specs()
    # The chapter teaches the rule of thumb first: its worked decode figures are the rule's.
    for precision in ("bf16", "fp8", "int4"):
        rate = fmt.rate(estimate(CHAPTER_GPU, SMALL_MODEL, precision=precision).rule.decode_tokens_per_s_per_user)
        assert f"{rate} tokens/s" in text, precision
    h100 = Hardware(specs.gpu(CHAPTER_GPU))
    large = specs.model(LARGE_MODEL)
    gpus = gpus_to_fit(h100, Workload(large))
    large_result = estimate(CHAPTER_GPU, LARGE_MODEL, gpus=gpus)
    assert fmt.gigabytes(large_result.memory.weights_bytes) in text
    assert f"{gpus} GPUs" in text
    assert f"{fmt.rate(large_result.rule.decode_tokens_per_s_per_user)} tokens/s" in text
    prefill = estimate(CHAPTER_GPU, SMALL_MODEL, prompt=2000).prefill.seconds
    rule = 2 * roofline.active_parameters(specs.model(SMALL_MODEL)) * 2000 / h100.peak_flops_per_s
    assert fmt.milliseconds(prefill) in text and fmt.milliseconds(rule) in text
    small = specs.model(SMALL_MODEL)
    assert f"about {fmt.users(simple_crossover_batch(h100, 'bf16'))} users" in text
    for context in (128, 256):
        assert fmt.users(crossover_batch(h100, Workload(small, context=context))) in text
    assert f"From {no_crossover_from(h100, Workload(small)):,} tokens" in text
    assert "{{" not in text


@pytest.mark.slow
def test_self_check_answers_are_collapsible_and_computed(chapter):
    questions = chapter.select("details.question")
    assert len(questions) >= 3
    first = text_of(questions[0])
    h200 = fmt.rate(estimate("h200", SMALL_MODEL).rule.decode_tokens_per_s_per_user)
    assert f"{h200} tokens/s" in first


@pytest.mark.slow
def test_chapter_covers_the_required_topics(chapter):
    text = text_of(chapter).lower()
    for phrase in (
        "what you will learn",
        "letter",
        "time to first token",
        "time per output token",
        "onions",
        "saffron",
        "compute-bound",
        "memory-bound",
        "ceilings",
        "why batching helps",
        "kv cache",
        "continuous batching",
        "self-check",
        "lightly loaded gpu",
    ):
        assert phrase in text, phrase


def test_chapter_source_keeps_the_runtime_markers_on_their_own_lines():
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    run_cell_marker = "<!-- roofline:run-cell programs/h100_decode_prefill.py -->"
    calculator_marker = "<!-- roofline:calculator decode_speed example=lone -->"
    run_cell = lines.index(run_cell_marker)
    calculator = lines.index(calculator_marker)
    assert lines.count(run_cell_marker) == lines.count(calculator_marker) == 1
    headings = {line: i for i, line in enumerate(lines) if line.startswith("## ")}
    assert headings["## The rules applied to an H100"] < run_cell < headings["## Ceilings, not predictions"]
    assert headings["## Why batching helps"] < calculator < headings["## Self-check"]


def test_calculator_refuses_a_gpu_count_and_warns_past_the_models_limit() -> None:
    """No engine splits Llama 3.1 70B over 3 GPUs; Llama 2 13B serves 4,096 tokens, not 8,192."""
    refused = calculator.view(**{**calculator.DEFAULTS, "model": "llama-3.1-70b", "gpus": 3})
    assert refused["verdict"] == "Llama 3.1 70B does not split over 3 GPUs"
    assert refused["per_user"] == refused["total"] == "—" and "1, 2, 4, 8" in refused["explain"]
    past = calculator.view(**{**calculator.DEFAULTS, "model": "llama-2-13b", "context": 8192})
    assert past["verdict"] == "Fits in memory, past Llama 2 13B's limit"
    assert past["explain"].startswith("A context of 8,192 tokens is past Llama 2 13B's limit of 4,096")
    assert "limit" not in calculator.view(**calculator.DEFAULTS)["verdict"]


def test_the_interview_answer_is_the_packages(ctx) -> None:
    """TTFT of the 8,000-token prompt: the same at 4 bits as at 16 (no 4-bit math), halved at fp8."""
    values = chapter_module.build(ctx).values
    prefill = {
        p: estimate("h100-sxm", "llama-3.1-8b", precision=p, prompt=8000).prefill.seconds
        for p in ("bf16", "int4", "fp8")
    }
    assert values["iv_prefill_bf16_ms"] == values["iv_prefill_int4_ms"] == f"{prefill['bf16'] * 1e3:,.1f}"
    assert values["iv_prefill_fp8_ms"] == f"{prefill['fp8'] * 1e3:,.1f}"


def self_check_answers(values) -> list[str]:
    """The self-check's answers as the page words them, the package's values filled in."""
    section = PAGE.read_text().split("## Self-check", 1)[1].split("\n## ", 1)[0]
    filled = re.sub(r"\{\{ n\.(\w+) \}\}", lambda match: values[match.group(1)], section)
    return [" ".join(answer.split()) for answer in filled.split('??? question "')[1:]]


def test_a_self_check_that_asks_for_the_ceiling_bolds_the_ceiling(values):
    """Question 1 asks for the decode ceiling: the bold answer is the ceiling, the rule's figure beside it."""
    small = load_specs().model(SMALL_MODEL)
    result = estimate(chapter_module.QUIZ_GPU, small.id)
    first = self_check_answers(values)[0]
    assert "decode ceiling" in first.split('"', 1)[0]
    assert re.findall(r"\*\*([^*]+)\*\*", first)[0] == f"{fmt.rate(result.decode_tokens_per_s_per_user)} tokens/s"
    assert f"so {fmt.rate(result.rule.decode_tokens_per_s_per_user)} tokens/s" in first


def test_a_self_check_weight_is_the_tables_weight(values, ctx):
    """Question 4's 4-bit weights are the figure the chapter's tables print (block scales in), the rule's beside it."""
    specs = load_specs()
    large = chapter_module.focus_of(ctx).large
    int4 = estimate(CHAPTER_GPU, large.id, precision="int4", specs=specs)
    fourth = self_check_answers(values)[3]
    assert f"The weights become {fmt.gigabytes(int4.memory.weights_bytes)}" in fourth
    assert f"say {fmt.gigabytes(roofline.rule.rule_weight_bytes(int4.workload))}" in fourth
    assert f"rises to **{fmt.rate(int4.decode_tokens_per_s_per_user)} tokens/s**" in fourth


def test_the_4_bit_crossover_is_the_quantization_chapters_with_the_rules_beside(values, ctx):
    """Chapter 1's rule (exactly 4 bits a weight) and chapter 4's figure (block scales counted) both
    appear here, and the AWQ figure is the one chapter 4 prints."""
    quantization = find(ROOT, "quantization").module().build(ctx).values
    h100 = Hardware(load_specs().gpu(CHAPTER_GPU))
    assert values["crossover_int4_weights"] == fmt.users(simple_crossover_batch(h100, "int4"))
    assert values["crossover_int4_awq"] == quantization["cb_h100_int4_awq"]
    assert values["crossover_int4_scaled"] != values["crossover_int4_weights"]


@pytest.mark.slow
def test_terms_from_later_chapters_are_introduced_where_they_first_appear(chapter):
    """Tensor parallelism, mixtures of experts and fp8 are taught in later chapters (issue 40): the
    page's first use of each, in reading order, is in or after the sentence that says what it is."""
    # Without a separator between elements, so that a glossary link inside a sentence reads on.
    text = " ".join(chapter.select_one("article").get_text().split())
    lowered = text.lower()
    for term, introduction in (
        ("tensor parallel", "Splitting every layer between them is called tensor parallelism"),
        ("tensor-parallel", "Splitting every layer between them is called tensor parallelism"),
        ("expert", "mixtures of experts: models whose feed-forward layers are split into many blocks"),
        ("fp8", "The format is fp8: a floating-point number in one byte"),
    ):
        assert introduction in text, introduction
        assert lowered.index(term) >= text.index(introduction), (term, text[lowered.index(term) - 80 :][:200])
    assert "the parallelism chapter teaches it" in text and "quantization chapter covers the formats" in text
    # Beside the calculator, before its expected output, one sentence says what "expected" means.
    start = text.index("Try it: pick a GPU, a model and a load")
    label = text.index("Tokens/s for each user (expected, with band)", start)
    beside = text[start:label]
    assert "an expected figure: a calibrated prediction with a band, fitted on published serving runs" in beside
    assert "Measured vs ceiling explains the fit" in beside
    links = [a["href"] for a in chapter.select("article a") if a.get_text(strip=True) == "Measured vs ceiling"]
    assert "../../reference/measured/" in links


def test_the_decode_speed_example_shows_the_lone_users_quoted_speed(values):
    """Issue 40: the calculator's example is the paragraph's single user with no context; at those
    inputs it shows the tokens/s the prose quotes, which its defaults (4,096 tokens cached) do not."""
    example = chapter_module.EXAMPLES["lone"]
    assert calculator.FORM.validate(example) == example
    answer = calculator.view(**example)
    assert answer["per_user"] == values["decode_small_ceiling"]
    assert answer["total"] == values["decode_small_ceiling"]
    assert calculator.view(**calculator.FORM.defaults)["per_user"] != values["decode_small_ceiling"]


@pytest.mark.slow
@pytest.mark.browser
def test_pressing_the_example_button_shows_the_lone_users_quoted_speed(browser, site, values) -> None:
    """Issue 40, in the browser: Space on the focused button sets every input to the paragraph's
    single user with no context, Python recomputes, and the quoted tokens/s is what the widget shows."""
    from support import BOOT_MS, Recorded, rendered, text_outputs

    expect = pytest.importorskip("playwright.sync_api").expect
    recorded = Recorded.open(browser)
    page = recorded.page()
    page.goto(site.isolated + FOLDER.url)
    form = page.locator("[data-rf-calc=decode_speed]")
    form.scroll_into_view_if_needed()
    form.get_by_role("button", name="Load this section's example").focus()
    page.keyboard.press("Space")
    example = chapter_module.EXAMPLES["lone"]
    expect(form).to_have_attribute("data-rf-rendered", rendered(example), timeout=BOOT_MS)
    for name, value in example.items():
        assert form.locator(f"[name={name}]").input_value() == str(value), name
    assert text_outputs(form)["per_user"] == values["decode_small_ceiling"]
    recorded.close()
