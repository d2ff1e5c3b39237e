"""The built site: a strict build, the chapter's tables, figures and numbers, and no other origins.

The site is built once per session into a temporary directory (a full build
takes seconds). The two spec-edit tests build a temporary copy of the repo.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

from sitegen.context import read_specs  # noqa: E402
from sitegen.pages.prefill_vs_decode import GPU as CHAPTER_GPU  # noqa: E402
from sitegen.pages.prefill_vs_decode import LARGE_MODEL, SMALL_MODEL  # noqa: E402

import roofline  # noqa: E402
from roofline import Hardware, Workload, crossover_batch, estimate, simple_crossover_batch  # noqa: E402
from roofline import formatting as fmt  # noqa: E402
from roofline.kvcache import no_crossover_from  # noqa: E402
from roofline.sweep import decode_prefill_rows, decode_prefill_table, gpus_to_fit  # noqa: E402

pytestmark = pytest.mark.slow

CHAPTER_SOURCE = ROOT / "docs" / "chapters" / "prefill-vs-decode.md"
SITE_ORIGIN = "http://127.0.0.1:8000"
#: Left out of a repo copy: big, generated, or not needed to build.
COPY_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "node_modules", "site", ".cache", "__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache"
)


def mkdocs_build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env.pop("ROOFLINE_FIGURES", None)
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = mkdocs_build(ROOT, out)
    assert done.returncode == 0, done.stderr[-4000:]
    site_log = done.stdout + done.stderr
    (out / "_build.log").write_text(site_log)
    return out


def page(site: Path, path: str) -> BeautifulSoup:
    return BeautifulSoup((site / path / "index.html").read_text(encoding="utf-8"), "html.parser")


@pytest.fixture(scope="session")
def chapter(site) -> BeautifulSoup:
    return page(site, "chapters/prefill-vs-decode")


def text_of(soup: BeautifulSoup) -> str:
    return " ".join(soup.get_text(" ").split())


# The build ---------------------------------------------------------------------------


def test_strict_build_has_no_warnings(site):
    log = (site / "_build.log").read_text()
    assert "WARNING" not in log and "ERROR" not in log, log


def test_nav_lists_chapters_in_order_then_reference(site):
    nav = [a.get_text(strip=True) for a in page(site, "").select("nav.md-nav--primary a.md-nav__link")]
    order = ["1. Prefill vs Decode", "2. The KV Cache", "3. Continuous Batching", "Hardware", "Models"]
    order += ["How the numbers are computed", "Measured vs ceiling"]
    positions = [next(i for i, label in enumerate(nav) if label.startswith(item)) for item in order]
    assert positions == sorted(positions)


# The chapter ---------------------------------------------------------------------------


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


def test_chapter_shows_the_rule_then_the_ceiling_with_the_reasons(chapter):
    text = text_of(chapter.select_one("article"))
    section = text[text.index("The rule and the ceiling") : text.index("Ceilings, not predictions")]
    small = estimate(CHAPTER_GPU, SMALL_MODEL, prompt=2000)
    assert small.decode_vs_rule in section and small.prefill_vs_rule in section
    for precision in ("fp8", "int4"):
        assert estimate(CHAPTER_GPU, SMALL_MODEL, precision=precision).decode_vs_rule in section
    # Multi-GPU numbers carry their assumption and the measured gap.
    assert section.count("ideal scaling") >= 3 and "interconnect free" in section
    assert "published multi-GPU decode measurements reached 25% to 64%" in section
    # The mixture-of-experts and latent-attention rows are explained beside their table.
    assert "Bandwidth ÷ all the weights gives 72 tokens/s on 2 GPUs, yet the table shows 263" in section
    assert "DeepSeek-V3 decodes faster than Llama 3.1 8B (1,463 against 223 tokens/s)" in section
    assert "At fp8, DeepSeek-V3 needs 16 fewer GPUs, and its prefill is still 12.5 ms and memory-bound" in section
    # Prose that no longer reads right is gone.
    assert "because the package also counts causal attention" not in text
    assert "a 8,000" not in text and "document of 8,000 tokens" in text
    assert "Halving the bytes per weight doubles the ceiling." not in text


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


def test_measured_page_lists_every_measurement_and_is_in_the_nav(site):
    from roofline.measured import compare_all

    soup = page(site, "reference/measured/")
    comparisons = compare_all()
    rows = [tr for table in soup.select("article table") for tr in table.select("tbody tr")]
    assert len(rows) == len(comparisons)
    shown = set()
    for row in rows:
        cells = [td.get_text(strip=True) for td in row.select("td")]
        link = row.select_one("a[href]")
        shown.add((link["href"], link.get_text(strip=True), cells[7], cells[9], cells[10].rsplit(", ", 1)[1]))
    from sitegen.pages.measured import shown as in_unit

    for comparison in comparisons:
        m = comparison.measurement
        wanted = (m.source, m.section, in_unit(m.metric, m.value), f"{comparison.ratio * 100:.0f}%", m.date)
        assert wanted in shown, m.id
    assert soup.select_one("#figure-measured-ratios .roofline-chart img") is not None
    nav = [a.get_text(strip=True) for a in soup.select("nav.md-nav a")]
    assert "Measured vs ceiling" in nav


def test_hardware_page_says_what_80_gb_means(site):
    text = text_of(page(site, "reference/hardware/"))
    assert "What the memory figure means" in text and "'80 GB' is the nameplate" in text


def test_chapter_has_every_figure_with_its_svg_and_spec(site, chapter):
    # Lettered in reading order: the roofline comes first in the chapter.
    for letter, name in zip(
        "abcd", ("roofline", "decode-by-precision", "prefill-vs-prompt", "batching-crossover"), strict=True
    ):
        block = chapter.select_one(f"#figure-{name} .roofline-chart img")
        assert block is not None, name
        served = site / "chapters" / "prefill-vs-decode" / block["src"]
        assert served.resolve().read_bytes() == (ROOT / "figures" / f"{name}.svg").read_bytes()
        assert (served.resolve().with_name(f"{name}.vl.json")).is_file()
        assert f"Figure ({letter})." in chapter.select_one(f"#figure-{name} figcaption").get_text()
    assert [fig.get_text()[:10] for fig in chapter.select("figure.roofline-figure figcaption")] == [
        f"Figure ({letter})" for letter in "abcd"
    ]


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


def test_self_check_answers_are_collapsible_and_computed(chapter):
    questions = chapter.select("details.question")
    assert len(questions) >= 3
    first = text_of(questions[0])
    h200 = fmt.rate(estimate("h200", SMALL_MODEL).rule.decode_tokens_per_s_per_user)
    assert f"{h200} tokens/s" in first


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
    lines = CHAPTER_SOURCE.read_text(encoding="utf-8").splitlines()
    run_cell_marker = "<!-- roofline:run-cell programs/h100_decode_prefill.py -->"
    calculator_marker = "<!-- roofline:calculator decode_speed -->"
    run_cell = lines.index(run_cell_marker)
    calculator = lines.index(calculator_marker)
    assert lines.count(run_cell_marker) == lines.count(calculator_marker) == 1
    headings = {line: i for i, line in enumerate(lines) if line.startswith("## ")}
    assert headings["## The rules applied to an H100"] < run_cell < headings["## Ceilings, not predictions"]
    assert headings["## Why batching helps"] < calculator < headings["## Self-check"]


def test_math_is_rendered_at_build_time_with_no_math_script(site, chapter):
    formulas = chapter.select(".arithmatex")
    assert formulas
    for formula in formulas:
        # KaTeX's visible HTML and the MathML a screen reader reads; no TeX left for a script to find.
        assert formula.select_one(".katex .katex-html") and formula.select_one(".katex math")
        assert "\\(" not in formula.get_text() and "\\[" not in formula.get_text()
    for page in site.rglob("*.html"):
        scripts = [s.get("src", "") for s in BeautifulSoup(page.read_text(), "html.parser").select("script[src]")]
        assert not [src for src in scripts if "katex" in src or "mathjax" in src.lower()], page


def test_the_notebook_page_links_to_its_download(site):
    page = site / "notebooks" / "explore-the-roofline" / "index.html"
    soup = BeautifulSoup(page.read_text(), "html.parser")
    links = soup.select("a[download]")
    assert [link.get_text(strip=True) for link in links] == ["Download it"]
    target = page.parent / links[0]["href"]
    source = ROOT / "docs" / "notebooks" / "explore-the-roofline.py"
    assert target.read_text() == source.read_text()


def test_search_index_has_no_raw_tex_and_no_pilcrow(site):
    import json

    docs = json.loads((site / "search" / "search_index.json").read_text())["docs"]
    texts = [doc["title"] + " " + doc["text"] for doc in docs]
    assert not [text for text in texts if "\\(" in text or "\\[" in text or "\\text" in text]
    assert not [text for text in texts if "\u00b6" in text]
    hardware = next(doc for doc in docs if doc["location"] == "reference/formulas/#hardware")
    assert hardware["text"].startswith("<p>G identical GPUs")


def test_theme_settings_the_issue_asks_for():
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    # site_url is `!ENV [SITE_URL, default]`: read it as its default, as a build without SITE_URL does.
    Loader.add_constructor("!ENV", lambda loader, node: loader.construct_sequence(node)[-1])
    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)
    assert "site_url: !ENV [SITE_URL, " in (ROOT / "mkdocs.yml").read_text()
    theme = config["theme"]
    assert theme["font"] is False
    assert "navigation.instant" in theme["features"] and "content.code.copy" in theme["features"]
    assert {p["scheme"] for p in theme["palette"]} == {"default", "slate"}
    assert config["site_url"] == SITE_ORIGIN + "/"
    assert not any("offline" in (p if isinstance(p, str) else next(iter(p))) for p in config["plugins"])


# Reference pages and the notebook -----------------------------------------------------


def test_reference_pages_list_every_spec_with_its_source(site):
    specs = roofline.load_specs()
    hardware, models = text_of(page(site, "reference/hardware")), page(site, "reference/models")
    anchors = models.select("a[href]") + page(site, "reference/hardware").select("a[href]")
    links = {a["href"] for a in anchors}
    for gpu in specs.gpus.values():
        assert gpu.name in hardware
        assert any(href in gpu.source for href in links if href.startswith("http")), gpu.id
    for model in specs.models.values():
        assert model.name in text_of(models)
        assert fmt.parameters(roofline.total_parameters(model)) in text_of(models)
        assert any(href in model.source for href in links if href.startswith("http")), model.id


def test_formulas_page_names_every_formula_function(site):
    text = text_of(page(site, "reference/formulas"))
    for name in (
        "swiglu_parameters",
        "attention_parameters",
        "embedding_parameters",
        "expert_parameters",
        "moe_layers",
        "always_used_parameters",
        "total_parameters",
        "active_parameters",
        "expected_distinct_experts",
        "parameters_read",
        "weight_bytes",
        "kv_cache_bytes_per_token",
        "attention_flops_per_cached_token",
        "decode_flops_per_token",
        "prefill_attention_flops",
        "decode_step",
        "prefill_pass",
        "simple_crossover_batch",
        "crossover_batch",
        "memory_use",
        "gpus_to_fit",
        "bytes_per_value",
    ):
        assert name in text, name


def test_notebook_page_is_executed_with_inline_charts(site):
    notebook = page(site, "notebooks/explore-the-roofline")
    assert "decode, per user" in text_of(notebook)  # an executed cell's output
    # Altair's svg renderer: vl-convert draws in the kernel, nbconvert inlines a data: URL.
    assert len(notebook.select('.jp-OutputArea img[src^="data:image/svg+xml"]')) >= 2


# No other origin ---------------------------------------------------------------------

_CSS_URL = re.compile(r"""url\(\s*['"]?([^'")]+)['"]?\s*\)|@import\s+['"]([^'"]+)['"]""")
_LOADING_ATTRIBUTES = {
    "script": ("src",),
    "img": ("src", "srcset"),
    "source": ("src", "srcset"),
    "video": ("src", "poster"),
    "audio": ("src",),
    "iframe": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "image": ("href", "xlink:href"),
    "use": ("href", "xlink:href"),
    "link": ("href",),
}


def foreign(url: str, base: str) -> bool:
    """Whether ``url``, as loaded from ``base``, leaves the site's origin (data: URLs stay)."""
    url = url.strip()
    if not url or url.startswith(("data:", "#", "about:")):
        return False
    parts = urlsplit(urljoin(base, url))
    return f"{parts.scheme}://{parts.netloc}" != SITE_ORIGIN


def css_urls(css: str) -> list[str]:
    return [a or b for a, b in _CSS_URL.findall(css)]


def test_no_page_loads_anything_from_another_origin(site):
    offenders: list[str] = []

    def check_css(where: str, css: str, base: str) -> None:
        offenders.extend(f"{where}: {url}" for url in css_urls(css) if foreign(url, base))

    for html in sorted(site.rglob("*.html")):
        base = f"{SITE_ORIGIN}/{html.relative_to(site).as_posix()}"
        soup = BeautifulSoup(html.read_text(encoding="utf-8"), "html.parser")
        for tag, attributes in _LOADING_ATTRIBUTES.items():
            for element in soup.find_all(tag):
                if tag == "link" and set(element.get("rel", [])) <= {"canonical", "alternate", "prev", "next"}:
                    continue  # navigation, not a load
                for attribute in attributes:
                    for value in (element.get(attribute) or "").split(","):
                        candidate = value.strip().split(" ")[0]
                        if foreign(candidate, base):
                            offenders.append(f"{html.relative_to(site)}: <{tag} {attribute}={candidate}>")
        for style in soup.find_all("style"):
            check_css(f"{html.relative_to(site)} <style>", style.get_text(), base)
        for element in soup.find_all(style=True):
            check_css(f"{html.relative_to(site)} style=", element["style"], base)
        for script in soup.find_all("script", src=False):
            for url in re.findall(r"""(?:import\s*\(|from\s|src\s*=)\s*["'](https?:)?//[^"']+""", script.get_text()):
                offenders.append(f"{html.relative_to(site)}: inline script loads {url}")
    for css in sorted(site.rglob("*.css")):
        base = f"{SITE_ORIGIN}/{css.relative_to(site).as_posix()}"
        check_css(str(css.relative_to(site)), css.read_text(encoding="utf-8"), base)
    assert offenders == []


def test_vendored_libraries_are_served_by_the_site(site):
    for path in ("vega/vega.min.js", "vega/vega-lite.min.js", "vega/vega-embed.min.js", "katex/katex.min.css"):
        assert (site / "assets" / "vendor" / path).is_file(), path
    css = (site / "assets/vendor/katex/katex.min.css").read_text()
    for url in css_urls(css):
        assert (site / "assets/vendor/katex" / url).is_file(), url


def test_the_widgets_name_the_served_snapshot_and_it_is_the_cached_one(site, chapter):
    links = {widget["data-rf-snapshot"] for widget in chapter.select("[data-rf-cell], [data-rf-calc]")}
    assert len(links) == 1, links
    address, _, fragment = links.pop().partition("#")
    served = (site / "chapters" / "prefill-vs-decode" / address).resolve()
    # The page names the digest the worker checks the file against before restoring it.
    with gzip.open(served) as container:
        container.readline()
        assert fragment == f"sha256={json.loads(container.readline())['sha256']}"
    assert served.parent == (site / "assets" / "runtime" / "snapshots").resolve()
    version = json.loads((ROOT / "node_modules" / "pyodide" / "package.json").read_text())["version"]
    assert re.fullmatch(rf"roofline-pyodide{re.escape(version)}-[0-9a-f]{{16}}\.snapshot\.gz", served.name), served.name
    assert served.read_bytes()[:2] == b"\x1f\x8b"  # gzip, which the worker's DecompressionStream undoes
    assert served.read_bytes() == (ROOT / "build" / "snapshot-cache" / served.name).read_bytes()


# Spec edits --------------------------------------------------------------------------


@pytest.fixture
def repo_copy(tmp_path) -> Path:
    """This checkout without .git, .venv and build output; node_modules linked, not copied."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT, copy, ignore=COPY_IGNORE, symlinks=True)
    (copy / "node_modules").symlink_to(ROOT / "node_modules")
    return copy


def test_editing_a_spec_changes_the_rebuilt_chapter_and_its_figure(repo_copy, tmp_path):
    gpus = repo_copy / "roofline" / "data" / "gpus.toml"
    gpus.write_text(gpus.read_text().replace("bandwidth_bytes_per_s = 3.35e12", "bandwidth_bytes_per_s = 4.02e12", 1))
    specs = read_specs(repo_copy)
    edited = estimate(CHAPTER_GPU, SMALL_MODEL, specs=specs)
    rule_rate = fmt.rate(edited.rule.decode_tokens_per_s_per_user)
    rate = fmt.rate(edited.decode_tokens_per_s_per_user)
    old_rate = fmt.rate(estimate(CHAPTER_GPU, SMALL_MODEL).decode_tokens_per_s_per_user)
    assert rate != old_rate

    done = mkdocs_build(repo_copy, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-4000:]
    rebuilt = page(tmp_path / "site", "chapters/prefill-vs-decode")
    assert f"{rule_rate} tokens/s" in text_of(rebuilt)  # the prose works the rule
    table = next(t for t in rebuilt.select("table") if "Decode tok/s" in t.get_text())
    assert table.select_one("tbody tr").select("td")[4].get_text(strip=True) == rate
    for name in ("decode-by-precision.vl.json", "decode-by-precision.svg", "roofline.svg"):
        assert (repo_copy / "figures" / name).read_bytes() != (ROOT / "figures" / name).read_bytes(), name
    spec = (repo_copy / "figures" / "decode-by-precision.vl.json").read_text()
    expected = estimate(CHAPTER_GPU, SMALL_MODEL, specs=specs).decode_tokens_per_s_per_user
    assert f'"tokens_per_s":{float(f"{expected:.4g}")}' in spec


def test_a_bad_spec_fails_the_build_with_the_packages_one_line_error(repo_copy, tmp_path):
    gpus = repo_copy / "roofline" / "data" / "gpus.toml"
    bad = gpus.read_text().replace("memory_bytes = 80e9", "memory_bytes = 0", 1)
    gpus.write_text(bad)
    with pytest.raises(roofline.SpecError) as expected:
        roofline.parse_specs(bad, "roofline/data/gpus.toml")
    before = {p.name: p.read_bytes() for p in (repo_copy / "figures").iterdir()}

    done = mkdocs_build(repo_copy, tmp_path / "site")
    assert done.returncode != 0
    assert str(expected.value) in done.stderr
    assert "Traceback" not in done.stderr
    assert {p.name: p.read_bytes() for p in (repo_copy / "figures").iterdir()} == before


def test_widget_pages_preload_every_widget_module_and_other_pages_none(site, chapter):
    """main.mjs imports the widget modules only once the page is parsed; a widget page names
    them (and what they import) in its head, so they download while it is parsed."""
    preloaded = [link["href"] for link in chapter.select('head link[rel="modulepreload"]')]
    names = [href.rsplit("/", 1)[-1] for href in preloaded]
    # Every module main.mjs imports on a widget page, and every module those import.
    assert set(names) == {"runtime.mjs", "runcell.mjs", "calculator.mjs", "editor.mjs", "chart.mjs", "timeline.mjs"}
    for href in preloaded:
        assert (site / "chapters" / "prefill-vs-decode" / href).resolve().is_file(), href
    runtime_js = ROOT / "docs" / "javascripts" / "runtime"
    for name in names:
        for imported in re.findall(
            r'^import\s[^;]*?\bfrom\s+"\./([\w.-]+\.mjs)"', (runtime_js / name).read_text(), re.M
        ):
            assert imported in names, f"{name} imports {imported}, which is not preloaded"
    assert not page(site, "").select('link[rel="modulepreload"]')  # the home page has no widget
