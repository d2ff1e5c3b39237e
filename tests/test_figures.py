"""The generator behind the site: deterministic, up to date, atomic, and faithful to the package.

These run the generator in-process (no MkDocs); tests/test_site.py builds the site.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from sitegen import escape, tables  # noqa: E402
from sitegen.context import load_context  # noqa: E402
from sitegen.generate import Run, build_outputs, differences, generate, page_contents  # noqa: E402
from sitegen.output import GENERATOR, NOTICE, is_generated, json_file, strip_notice, write_if_changed  # noqa: E402
from sitegen.page import PageModuleError  # noqa: E402
from sitegen.pages import prefill_vs_decode as chapter  # noqa: E402
from sitegen.pages.prefill_vs_decode import GPU as CHAPTER_GPU  # noqa: E402
from sitegen.pages.prefill_vs_decode import SMALL_MODEL  # noqa: E402
from sitegen.shortcodes import ShortcodeError, Shortcodes  # noqa: E402
from sitegen.vendor import vendor_files  # noqa: E402

import roofline  # noqa: E402
from roofline import Hardware, Workload, crossover_batch, estimate, load_specs  # noqa: E402
from roofline import formatting as fmt  # noqa: E402
from roofline.kvcache import no_crossover_from  # noqa: E402
from roofline.sweep import decode_prefill_rows, decode_prefill_table  # noqa: E402

FIGURES = ROOT / "figures"


@pytest.fixture(scope="module")
def ctx():
    return load_context(ROOT)


@pytest.fixture(scope="module")
def values(ctx):
    return chapter.build(ctx).values


CHAPTER_PAGE = "chapters/prefill-vs-decode.md"
CHAPTER_FIGURES = ("roofline", "decode-by-precision", "prefill-vs-prompt", "batching-crossover")


def copy_inputs(tmp_path: Path) -> Path:
    """A root with this repo's spec files and committed figures, for runs that write."""
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "roofline" / "data", root / "roofline" / "data")
    shutil.copytree(FIGURES, root / "figures")
    return root


def test_committed_figures_match_a_fresh_run():
    """Regenerates everything (every SVG re-rendered) and fails on any difference from figures/."""
    assert differences(ROOT) == [], "figures/ is stale: run `make figures` and commit it"


def test_generation_is_deterministic(ctx):
    first = build_outputs(ROOT, FIGURES, rerender=True, run=Run())
    second = build_outputs(ROOT, FIGURES, rerender=True, run=Run())
    assert first == second


def test_every_generated_file_says_so_on_its_first_line():
    for path in sorted(p for p in FIGURES.iterdir() if not p.name.startswith(".")):
        first = path.read_bytes().split(b"\n", 1)[0].decode()
        assert NOTICE in first and GENERATOR in first, path.name


def test_chart_specs_are_valid_vega_lite_with_the_notice_in_usermeta():
    for name in CHAPTER_FIGURES:
        spec = json.loads((FIGURES / f"{name}.vl.json").read_text())
        assert spec["usermeta"] == {"generated": NOTICE}
        assert spec["$schema"].endswith("vega-lite/v6.4.1.json")
        svg = (FIGURES / f"{name}.svg").read_text()
        assert "<svg" in svg and "http://" not in svg.replace("http://www.w3.org/", "")


def test_h100_tables_are_the_packages_own_tables(ctx):
    """Dense models in the first table; mixtures of experts and latent attention in the second."""
    specs = load_specs()
    dense, sparse = chapter.model_groups(ctx)
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
    assert values["prefill_small_ms"] == "29.3" and values["ceiling_prefill_small_fp8_ms"] == "14.6"
    assert values["ceiling_prefill_small_int4_ms"] == "29.3"
    # Issue 17: on two GPUs the 70B's reads give 48, and its 160 all-reduces a step take it to 47.
    assert values["explain_decode_large_bf16"].endswith(
        "so 48, and 160 all-reduces between the 2 GPUs add 0.598 ms, so 47"
    )
    # The MoE and MLA rows, explained with the package's own figures.
    # Mixtral's ceiling on its GPUs pays the all-reduces between them (issue 17): 263 -> 247.
    assert values["moe_rule"] == "72" and values["moe_ceiling"] == "247"
    assert (
        "a mixture of experts reads only the experts its tokens pick (2.0 of 8 a layer)" in values["explain_decode_moe"]
    )
    # 85.0 GB usable an H100 (issue 17): 1,342 GB of bf16 weights need 16, fp8 halves that to 8.
    assert values["mla_gpus_bf16"] == "16" and values["mla_gpus_fp8"] == "8" and values["mla_gpus_saved"] == "8"
    # Both prefills wait on one read of the weights; 16 GPUs span two NVLink domains, so bf16's
    # all-reduces cross the slower scale-out network and take longer than fp8's within one node.
    assert values["mla_prefill_fp8_bound"] == "memory" == values["mla_prefill_bf16_bound"]
    assert float(values["mla_prefill_fp8_ms"]) < float(values["mla_prefill_bf16_ms"])


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
    assert values["speculative_sentence"] == (
        f"None of the {len(comparisons)} measurements here used them, and none exceeded its ceiling."
    )


def test_the_speculative_sentence_counts_what_it_says():
    from dataclasses import replace

    from roofline.measured import compare_all

    comparisons = compare_all()
    flagged = [replace(comparisons[0], measurement=replace(comparisons[0].measurement, speculative=True), ratio=1.4)]
    assert chapter.speculative_sentence(flagged + comparisons[1:]) == (
        f"1 of the {len(comparisons)} measurements here used them, and 1 exceeded its ceiling."
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
    assert values["prefill_small_ms"] == fmt.milliseconds(prefill).removesuffix(" ms")
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


def test_reference_tables_list_every_spec_with_its_source(ctx):
    hardware, models = tables.hardware_table(ctx), tables.models_table(ctx)
    for gpu in ctx.specs.gpus.values():
        row = next(line for line in hardware.splitlines() if line.startswith(f"| {gpu.name} | `{gpu.id}`"))
        assert fmt.gigabytes(gpu.memory_bytes, 0) in row
        source = next(line for line in hardware.splitlines() if line.startswith(f"- **{gpu.name}** (`{gpu.id}`)"))
        for url in tables._URL.findall(gpu.source):
            assert f"]({url.rstrip(').,')})" in source
    for model in ctx.specs.models.values():
        row = next(line for line in models.splitlines() if line.startswith(f"| {model.name} | `{model.id}`"))
        assert fmt.parameters(roofline.total_parameters(model)) in row
        source = next(line for line in models.splitlines() if line.startswith(f"- **{model.name}** (`{model.id}`)"))
        for url in tables._URL.findall(model.source):
            assert f"]({url.rstrip(').,')})" in source


def test_an_unchanged_run_writes_nothing(tmp_path):
    root = copy_inputs(tmp_path)
    before = {path.name: path.stat().st_mtime_ns for path in (root / "figures").iterdir()}
    run = generate(root)
    assert run.written == [] and run.removed == [] and run.svgs_rendered == 0
    assert {path.name: path.stat().st_mtime_ns for path in (root / "figures").iterdir()} == before


def test_a_spec_edit_rewrites_only_what_it_changes(tmp_path):
    root = copy_inputs(tmp_path)
    models = root / "roofline" / "data" / "models.toml"
    # A model no page's prose names (chapter 1 explains Mixtral, chapter 2 quotes DeepSeek-V3 and Gemma 2).
    models.write_text(models.read_text().replace('name = "Mistral 7B v0.2"', 'name = "Mistral 7-B v0.2"'))
    run = generate(root)
    assert "models.md" in run.written and "decode-by-precision.vl.json" in run.written
    assert "values.json" in run.unchanged and "roofline.svg" in run.unchanged
    assert "Mistral 7-B v0.2" in (root / "figures" / "models.md").read_text()


def test_a_bad_spec_raises_the_packages_error_and_keeps_the_last_good_figures(tmp_path):
    root = copy_inputs(tmp_path)
    gpus = root / "roofline" / "data" / "gpus.toml"
    bad = gpus.read_text().replace("bandwidth_bytes_per_s = 3.35e12", "bandwidth_bytes_per_s = -1", 1)
    gpus.write_text(bad)
    with pytest.raises(roofline.SpecError) as caught:
        roofline.parse_specs(bad, "roofline/data/gpus.toml")
    before = {path.name: path.read_bytes() for path in (root / "figures").iterdir()}
    with pytest.raises(roofline.SpecError) as raised:
        generate(root)
    assert str(raised.value) == str(caught.value)
    assert "\n" not in str(raised.value)
    assert {path.name: path.read_bytes() for path in (root / "figures").iterdir()} == before


def test_stale_generated_files_are_removed_and_others_kept(tmp_path):
    root = copy_inputs(tmp_path)
    (root / "figures" / "old-chart.svg").write_bytes(b"<!-- " + NOTICE.encode() + b" -->\n<svg/>")
    (root / "figures" / "notes.txt").write_text("kept: not generated\n")
    # Another build's file, mid-write: generated, but not this run's to delete.
    (root / "figures" / ".values.json.abc.tmp").write_bytes(b"{" + NOTICE.encode())
    run = generate(root)
    assert run.removed == ["old-chart.svg"]
    assert (root / "figures" / "notes.txt").exists()
    assert (root / "figures" / ".values.json.abc.tmp").exists()


def test_write_if_changed_is_atomic_and_lazy(tmp_path):
    target = tmp_path / "out.txt"
    assert write_if_changed(target, b"one")
    assert not write_if_changed(target, b"one")
    assert write_if_changed(target, b"two") and target.read_bytes() == b"two"
    assert [path.name for path in tmp_path.iterdir()] == ["out.txt"]  # no temporary left behind


def test_json_file_puts_the_notice_on_the_first_line():
    data = json_file({"a": 1}, notice_key="usermeta", wrap="generated", compact=True)
    first, _, _ = data.decode().partition("\n")
    assert NOTICE in first
    assert json.loads(data) == {"usermeta": {"generated": NOTICE}, "a": 1}


def test_is_generated_tells_generated_files_from_others(tmp_path):
    assert is_generated(FIGURES / "values.json")
    (tmp_path / "mine.md").write_text("# written by hand\n")
    assert not is_generated(tmp_path / "mine.md")
    assert not is_generated(tmp_path / "missing.md")


def test_shortcodes_expand_and_fail_loudly(tmp_path):
    codes = Shortcodes(FIGURES)
    values = json.loads((FIGURES / "values.json").read_text())["pages"][CHAPTER_PAGE]
    page = CHAPTER_PAGE
    assert codes.expand("{{ n.decode_small_bf16 }} tok/s", page) == f"{values['decode_small_bf16']} tok/s"
    assert codes.expand("{{md.h100-decode-prefill}}", page).startswith("| Model |")
    with pytest.raises(
        ShortcodeError, match=r"docs/x.md: unknown value 'n.decode_smal_bf16' .did you mean 'decode_small_bf16'"
    ):
        codes.expand("{{ n.decode_smal_bf16 }}", page, where="docs/x.md")
    with pytest.raises(ShortcodeError, match="unknown snippet"):
        codes.expand("{{ md.nothing-here }}", page)
    with pytest.raises(ShortcodeError, match="malformed"):
        codes.expand("{{ n.decode small }}", page)
    with pytest.raises(ShortcodeError, match="unknown shortcode kind"):
        codes.expand("{{ x.decode }}", page)


def test_values_are_per_page():
    """A page quotes only its own module's values; the error says where a value does live."""
    codes = Shortcodes(FIGURES)
    assert codes.expand("{{ n.usable_fraction }}", "reference/formulas.md") == "95%"
    with pytest.raises(
        ShortcodeError,
        match=r"docs/reference/formulas.md: unknown value 'n.decode_small_bf16' "
        r"\(docs/chapters/prefill-vs-decode.md has it",
    ):
        codes.expand("{{ n.decode_small_bf16 }}", "reference/formulas.md")
    with pytest.raises(ShortcodeError, match=r"docs/index.md: unknown value 'n.x' \(docs/index.md has no module"):
        codes.expand("{{ n.x }}", "index.md")


def test_figures_are_lettered_in_reading_order_and_cross_references_follow():
    codes = Shortcodes(FIGURES)
    page = "\n".join(
        [
            "See {{ fig.prefill-vs-prompt }} before it appears.",
            "{{ md.figure-roofline }}",
            "{{ md.figure-prefill-vs-prompt }}",
            "Again: {{ fig.roofline }}.",
        ]
    )
    text = codes.expand(page, CHAPTER_PAGE)
    assert "See [figure (b)](#figure-prefill-vs-prompt) before it appears." in text
    assert "Again: [figure (a)](#figure-roofline)." in text
    assert text.index("**Figure (a).** The roofline") < text.index("**Figure (b).** Prefill time")
    # The same figure on another page takes that page's order.
    assert "**Figure (a).** Prefill time" in codes.expand("{{ md.figure-prefill-vs-prompt }}", "index.md")
    with pytest.raises(ShortcodeError, match=r"'fig.batching-crossover' refers to a figure this page does not show"):
        codes.expand(page + "{{ fig.batching-crossover }}", CHAPTER_PAGE)


def test_the_chapter_shows_its_figures_a_to_d_in_reading_order():
    source = (ROOT / "docs" / "chapters" / "prefill-vs-decode.md").read_text(encoding="utf-8")
    text = Shortcodes(FIGURES).expand(source, CHAPTER_PAGE)
    letters = [text[i + len("**Figure (")] for i in range(len(text)) if text.startswith("**Figure (", i)]
    assert letters == ["a", "b", "c", "d"]


def test_every_page_module_names_an_existing_page_and_each_output_once(ctx):
    contents = page_contents(ROOT)
    for page in contents:
        assert (ROOT / "docs" / page).is_file(), page
    assert CHAPTER_PAGE in contents and "reference/formulas.md" in contents


def test_two_pages_making_the_same_figure_file_fail_with_one_line(tmp_path, monkeypatch):
    from sitegen import generate as generate_module
    from sitegen.page import PageContent

    def clash(root):
        first, second = PageContent(), PageContent()
        first.table("same", "| a |\n")
        second.table("same", "| b |\n")
        return {"chapters/one.md": first, "chapters/two.md": second}

    monkeypatch.setattr(generate_module, "page_contents", clash)
    with pytest.raises(
        PageModuleError, match=r"^figures/same.md is made for both docs/chapters/one.md and docs/chapters/two.md$"
    ):
        build_outputs(ROOT, FIGURES, rerender=False, run=Run())


def test_every_shortcode_in_the_docs_resolves():
    codes = Shortcodes(FIGURES)
    for page in sorted((ROOT / "docs").rglob("*.md")):
        codes.expand(page.read_text(encoding="utf-8"), page.relative_to(ROOT / "docs").as_posix())


def test_vendored_assets_are_present():
    files = vendor_files(ROOT)
    assert any(uri.endswith("vega-embed.min.js") for uri in files)
    assert any(uri.endswith(".woff2") for uri in files)


@pytest.mark.slow
def test_build_figures_check_mode_passes():
    import subprocess

    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_figures.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_build_figures_script_reports_a_bad_spec_in_one_line_and_exits_2(tmp_path):
    import subprocess

    root = copy_inputs(tmp_path)
    models = root / "roofline" / "data" / "models.toml"
    models.write_text(models.read_text().replace("layers = 32", "layers = 0", 1))
    before = {path.name: path.read_bytes() for path in (root / "figures").iterdir()}
    script = ROOT / "scripts" / "build_figures.py"
    done = subprocess.run(
        [sys.executable, str(script), "--root", str(root)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr == (
        'build_figures.py: error: roofline/data/models.toml: [model."llama-3.1-8b"]:'
        " field 'layers': must be at least 1, got 0\n"
    )
    assert {path.name: path.read_bytes() for path in (root / "figures").iterdir()} == before


def test_the_measured_page_lists_every_measurement_with_its_ceiling_and_link(ctx):
    from sitegen.pages import measured

    from roofline.measured import compare_all

    content = measured.build(ctx)
    comparisons = compare_all()
    rows = {}
    for name in measured.TABLES.values():
        for line in content.tables[name].splitlines()[2:]:
            if line.startswith("| "):
                cells = [cell.strip() for cell in line.strip("|").split(" | ")]
                rows[int(cells[0])] = cells
    assert sorted(rows) == list(range(1, len(comparisons) + 1))
    by_kind = sorted(comparisons, key=lambda c: roofline.measured.KINDS.index(c.measurement.kind))
    for number, comparison in enumerate(by_kind, start=1):
        m, cells = comparison.measurement, rows[number]
        assert cells[1] == escape.text(ctx.specs.gpu(m.gpu).name) and cells[2] == str(m.gpus)
        assert f"- **{number}.** Hardware: {escape.text(m.hardware)}." in content.tables[measured.TABLES[m.kind]]
        assert (
            cells[5]
            == f"{m.weight_precision} / {m.kv_precision}, batch {m.batch or 'max'},"
            + (f" {m.input_tokens:,} / {m.output_tokens:,}")
            if m.model
            else cells[5] == "—"
        )
        assert cells[7] == measured.shown(m.metric, m.value)
        assert cells[8] == measured.shown(m.metric, comparison.ceiling)
        assert cells[9] == f"{comparison.ratio * 100:.0f}%"
        assert cells[10] == f"[{escape.text(m.section)}]({m.source}), {m.date}"
    assert content.values["count"] == str(len(comparisons))
    # The chart has one point per measurement, and every kind that has one.
    figure = next(f for f in content.figures if f.name == "measured-ratios")
    points = next(layer for layer in figure.spec["layer"] if layer["mark"]["type"] == "point")["data"]["values"]
    assert len(points) == len(comparisons)
    assert {p["kind"] for p in points} == set(roofline.measured.KINDS)


def test_shown_units_per_metric():
    from sitegen.pages.measured import shown

    assert shown("decode_tokens_per_s_per_user", 93.89) == "93.9 tok/s"
    assert shown("inter_token_latency_s", 0.01858) == "18.58 ms"
    assert shown("hbm_bandwidth_bytes_per_s", 2.97e12) == "2.97 TB/s"
    assert shown("gemm_flops_per_s", 1.3822e15) == "1,382 TFLOP/s"


def test_the_hardware_table_says_what_each_memory_figure_means(ctx):
    hardware = tables.hardware_table(ctx)
    notes = hardware.split("**What the memory figure means**", 1)[1]
    for gpu in ctx.specs.gpus.values():
        if gpu.memory_note:
            line = next(line for line in notes.splitlines() if f"(`{gpu.id}`)" in line)
            assert line.endswith(": " + escape.text(gpu.memory_note))
    assert "'80 GB' is the nameplate" in ctx.specs.gpu("h100-sxm").memory_note
