"""The generator behind the site: deterministic, up to date, atomic, and faithful to the package.

These run the generator in-process (no MkDocs); tests/test_site.py builds the site.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import roofline
import support
from sitegen.course import NAV_LISTS
from sitegen.generate import Run, build_outputs, generate
from sitegen.output import GENERATOR, NOTICE, is_generated, json_file, write_if_changed
from sitegen.page import PageModuleError
from sitegen.pages import chapters
from sitegen.shortcodes import ShortcodeError, Shortcodes
from sitegen.vendor import vendor_files

ROOT = support.ROOT
FIGURES = ROOT / "figures"


#: A chapter with values and figures to try the shortcodes on: chapter 1.
CHAPTER_PAGE = "chapters/prefill-vs-decode/index.md"


def copy_inputs(tmp_path: Path) -> Path:
    """A root with this repo's spec files, page folders, committed figures and serving runs (data/), for runs
    that write."""
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "roofline" / "data", root / "roofline" / "data")
    shutil.copytree(ROOT / "docs", root / "docs", ignore=support.COPY_IGNORE)
    shutil.copytree(FIGURES, root / "figures")
    shutil.copytree(ROOT / "data", root / "data")  # the serving runs the measured page shows
    return root


@pytest.mark.slow  # re-renders every SVG (vl-convert): seconds, and make test-fast leaves it out
def test_committed_figures_match_a_fresh_run_and_check_mode_says_so():
    """``build_figures.py --check`` regenerates everything in a process of its own (every SVG re-rendered;
    ``sitegen.generate.differences``) and exits 0 only if nothing in figures/ would change, be added or be
    deleted; else it names each file. One fresh run serves both checks."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_figures.py"), "--check"], capture_output=True, text=True
    )
    assert done.returncode == 0, f"figures/ is stale: run `make figures` and commit it\n{done.stderr}"


def test_every_generated_file_says_so_on_its_first_line():
    for path in sorted(p for p in FIGURES.iterdir() if not p.name.startswith(".")):
        first = path.read_bytes().split(b"\n", 1)[0].decode()
        assert NOTICE in first and GENERATOR in first, path.name


def test_chart_specs_are_valid_vega_lite_with_the_notice_in_usermeta():
    for path in sorted(FIGURES.glob("*.vl.json")):
        name = path.name.removesuffix(".vl.json")
        spec = json.loads(path.read_text())
        assert spec["usermeta"] == {"generated": NOTICE}
        assert spec["$schema"].endswith("vega-lite/v6.4.1.json")
        svg = (FIGURES / f"{name}.svg").read_text()
        assert "<svg" in svg and "http://" not in svg.replace("http://www.w3.org/", "")


@pytest.mark.slow  # regenerates every page's figures twice (chapter 3 alone simulates for seconds)
def test_an_unchanged_run_writes_nothing_and_neither_does_the_next(tmp_path):
    """Twice in one process: generation is deterministic, and leaves nothing behind that changes a
    second run. (Across processes, with every SVG re-rendered, the committed figures are what a fresh
    ``build_figures.py --check`` makes: the test above.)"""
    root = copy_inputs(tmp_path)
    before = {path.name: path.stat().st_mtime_ns for path in (root / "figures").iterdir()}
    for _ in range(2):
        run = generate(root)
        assert run.written == [] and run.removed == [] and run.svgs_rendered == 0
    assert {path.name: path.stat().st_mtime_ns for path in (root / "figures").iterdir()} == before


@pytest.mark.slow  # regenerates every page's figures (chapter 3 alone simulates for seconds)
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


@pytest.mark.slow  # regenerates every page's figures (chapter 3 alone simulates for seconds)
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
    with pytest.raises(ShortcodeError, match=r"unknown list 'nav.chapter' \(did you mean 'chapters'"):
        codes.expand("{{ nav.chapter }}", page, lists={"chapters": "1. [A](a.md): b"})


def test_values_are_per_page():
    """A page quotes only its own module's values; the error says where a value does live."""
    codes = Shortcodes(FIGURES)
    assert codes.expand("{{ n.usable_fraction }}", "reference/formulas/index.md") == "95%"
    with pytest.raises(
        ShortcodeError,
        match=r"docs/reference/formulas/index.md: unknown value 'n.decode_small_bf16' "
        r"\(docs/chapters/prefill-vs-decode/index.md has it",
    ):
        codes.expand("{{ n.decode_small_bf16 }}", "reference/formulas/index.md")
    with pytest.raises(ShortcodeError, match=r"docs/index.md: unknown value 'n.x' \(docs/index.md has no page.py"):
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


def test_every_page_module_names_an_existing_page_and_each_output_once(page_contents):
    contents = page_contents  # sitegen.generate.page_contents(ROOT), computed once (conftest)
    for page in contents:
        assert (ROOT / "docs" / page).is_file(), page
    assert CHAPTER_PAGE in contents and "reference/formulas/index.md" in contents
    assert {f"chapters/{chapter.slug}/index.md" for chapter in chapters(ROOT / "docs")} <= set(contents)


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
        codes.expand(
            page.read_text(encoding="utf-8"),
            page.relative_to(ROOT / "docs").as_posix(),
            lists=dict.fromkeys(NAV_LISTS, ""),
        )


def test_vendored_assets_are_present():
    files = vendor_files(ROOT)
    assert any(uri.endswith("vega-embed.min.js") for uri in files)
    assert any(uri.endswith(".woff2") for uri in files)


@pytest.mark.slow
def test_build_figures_script_reports_a_bad_spec_in_one_line_and_exits_2(tmp_path):
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


@pytest.mark.parametrize(
    ("changed", "names_fonts"),
    [
        (["roofline.svg", "kv-slope.svg"], True),
        (["roofline.svg", "figure-roofline.md"], True),  # a pixel wider: the snippet's <img> size too
        (["roofline.svg", "roofline.vl.json"], False),
        (["roofline.svg", "figure-kv-slope.md"], False),
        (["values.json"], False),
    ],
)
def test_the_check_names_the_fonts_only_when_nothing_but_svgs_differ(monkeypatch, capsys, changed, names_fonts):
    """SVGs alone differing on an unchanged checkout is the mark of another machine's fonts (vl-convert
    prefers a system's font to the Arimo it is handed), with the snippets whose image size they change:
    the check says how to find them, beside the usual fix. A changed spec, value or other snippet is a
    stale checkout, and gets the usual fix alone."""
    import build_figures

    monkeypatch.setattr(build_figures, "differences", lambda root: changed)
    assert build_figures.main(["--check"]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert lines[:-1] == [f"figures/{name} differs from a fresh run" for name in changed]
    assert lines[-1].startswith("run `make figures` and commit figures/")
    assert ("fc-list | grep -i arimo" in lines[-1]) is names_fonts


def test_every_static_svg_is_laid_out_in_the_font_vl_convert_is_handed() -> None:
    """Each committed SVG names STATIC_FONT, Arimo first: the font render.svg hands vl-convert from
    node_modules, so its layout does not depend on the fonts a machine happens to have."""
    from sitegen.render import STATIC_FONT

    assert STATIC_FONT.startswith("Arimo,")
    for path in sorted(FIGURES.glob("*.svg")):
        families = set(re.findall(r'font-family="([^"]*)"', path.read_text()))
        assert families == {STATIC_FONT}, (path.name, families)


def test_a_missing_font_is_one_line_naming_the_folder_and_the_fix(tmp_path) -> None:
    from sitegen.render import FontMissingError, _register_fonts

    with pytest.raises(FontMissingError) as caught:
        _register_fonts(tmp_path)
    message = str(caught.value)
    assert "\n" not in message and str(tmp_path / "@expo-google-fonts/arimo/400Regular") in message
    assert message.endswith("run `make setup` (npm ci from package-lock.json)")
