"""The built site: a strict build, its pages, the nav and home page, and no other origins.

Every test here reads the tests' one built site (``conftest.site``: this checkout with
the README's worked example chapter and the widget test page added). The two
spec-edit tests build a temporary copy of the repository of their own. What is
particular to a chapter is tested in its own folder.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from bs4 import BeautifulSoup

import roofline
import support
from roofline import benchmarks, estimate
from roofline import formatting as fmt
from sitegen.context import read_specs
from sitegen.pages import find

pytestmark = pytest.mark.slow

ROOT = support.ROOT
CHAPTER = find(ROOT / "docs", "prefill-vs-decode")
CHAPTER_GPU, SMALL_MODEL = CHAPTER.module().GPU, CHAPTER.module().SMALL_MODEL


def page(site, path: str) -> BeautifulSoup:
    return site.soup(path)


def text_of(soup: BeautifulSoup) -> str:
    return " ".join(soup.get_text(" ").split())


@pytest.fixture(scope="module")
def chapter(site) -> BeautifulSoup:
    return site.soup(CHAPTER.url)


# The build ---------------------------------------------------------------------------


def test_strict_build_has_no_warnings(site):
    assert "WARNING" not in site.log and "ERROR" not in site.log, site.log


def test_nav_lists_chapters_in_order_then_reference(site):
    nav = [a.get_text(strip=True) for a in page(site, "").select("nav.md-nav--primary a.md-nav__link")]
    order = ["1. Prefill vs Decode", "2. The KV Cache", "3. Continuous Batching", "Hardware", "Models"]
    order += ["How the numbers are computed", "Measured vs ceiling"]
    positions = [next(i for i, label in enumerate(nav) if label.startswith(item)) for item in order]
    assert positions == sorted(positions)


def test_the_home_pages_list_of_chapters_is_the_navs(site):
    """Generated from mkdocs.yml's nav ({{ nav.chapters }}): every chapter, in nav order, the worked
    example included (its one nav line is all the tests' site added), each with its title, summary,
    reading time (its prose words over 238 a minute, rounded up) and its Interview-signal question."""
    from sitegen.course import interview_question, prose_words, reading_minutes
    from sitegen.navigation import nav_pages, title_and_summary

    nav = (site.root / "mkdocs.yml").read_text(encoding="utf-8")
    listed = [line.split(": ", 1)[1].strip() for line in nav.splitlines() if "chapters/" in line and ": " in line]
    items = page(site, "").select("article ol > li")
    assert [item.select_one("a")["href"] for item in items] == [path.removesuffix("index.md") for path in listed]
    for item, path in zip(items, listed, strict=True):
        title, summary = title_and_summary(site.docs, path)
        source = (site.docs / path).read_text(encoding="utf-8")
        minutes = reading_minutes(prose_words(source))
        question = interview_question(source)
        assert question, f"{path} has no Interview-signal question for the home page"
        assert text_of(item) == (
            f"{title} : {summary} About {minutes} minute{'s' if minutes != 1 else ''} to read."
            f" It lets you answer: {question}"
        )
    assert len(items) == len(support.site_chapters())
    assert list(nav_pages(["a.md", {"B": [{"c": "c.md"}]}])) == ["a.md", "c.md"]


# The chapter ---------------------------------------------------------------------------


def test_measured_page_lists_every_measurement_and_is_in_the_nav(site):
    from roofline.measured import compare_all

    soup = page(site, "reference/measured/")
    comparisons = compare_all()
    tables = [table for table in soup.select("article table") if table.find_parent("details") is None]
    rows = [
        tr for table in tables if table.select_one("th").get_text(strip=True) == "#" for tr in table.select("tbody tr")
    ]
    assert len(rows) == len(comparisons)
    shown = set()
    for row in rows:
        cells = [td.get_text(strip=True) for td in row.select("td")]
        link = row.select_one("a[href]")
        # The answer leads (metric, measured, ceiling, ratio, expected), then the conditions and the source.
        shown.add((link["href"], link.get_text(strip=True), cells[2], cells[4], cells[11].rsplit(", ", 1)[1]))
    in_unit = find(ROOT / "docs", "measured").module().shown

    for comparison in comparisons:
        m = comparison.measurement
        wanted = (m.source, m.section, in_unit(m.metric, m.value), f"{comparison.ratio * 100:.0f}%", m.date)
        assert wanted in shown, m.id
    assert soup.select_one("#figure-measured-ratios .roofline-chart img") is not None
    assert soup.select_one("#figure-measured-vs-expected .roofline-chart img") is not None
    # The serving runs, fitted on and held out, each in a table of its own behind a summary (issue 17).
    runs = benchmarks.load_serving_runs(ROOT / "data" / "serving-measurements.csv")
    folded = [details.select("tbody tr") for details in soup.select("article details")]
    assert [len(rows) for rows in folded] == [sum(r.split == split for r in runs) for split in ("fit", "check")]
    nav = [a.get_text(strip=True) for a in soup.select("nav.md-nav a")]
    assert "Measured vs ceiling" in nav


def test_hardware_page_says_what_80_gb_means(site):
    text = text_of(page(site, "reference/hardware/"))
    assert "What the memory figure means" in text and "'80 GB' is the nameplate" in text


def test_math_is_rendered_at_build_time_with_no_math_script(site, chapter):
    formulas = chapter.select(".arithmatex")
    assert formulas
    for formula in formulas:
        # KaTeX's visible HTML and the MathML a screen reader reads; no TeX left for a script to find.
        assert formula.select_one(".katex .katex-html") and formula.select_one(".katex math")
        assert "\\(" not in formula.get_text() and "\\[" not in formula.get_text()
    for page in site.directory.rglob("*.html"):
        scripts = [s.get("src", "") for s in BeautifulSoup(page.read_text(), "html.parser").select("script[src]")]
        assert not [src for src in scripts if "katex" in src or "mathjax" in src.lower()], page


def test_the_notebook_page_links_to_its_download(site):
    page = site.directory / "notebooks" / "explore-the-roofline" / "index.html"
    soup = BeautifulSoup(page.read_text(), "html.parser")
    links = soup.select("a[download]")
    assert [link.get_text(strip=True) for link in links] == ["Download it"]
    target = page.parent / links[0]["href"]
    source = ROOT / "docs" / "notebooks" / "explore-the-roofline.py"
    assert target.read_text() == source.read_text()


def test_search_index_has_no_raw_tex_and_no_pilcrow(site):
    import json

    docs = json.loads((site.directory / "search" / "search_index.json").read_text())["docs"]
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
    assert config["site_url"] == "http://127.0.0.1:8000/"
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
        "gpu_count_problem",
        "bytes_per_value",
        # Chapter 2's formulas and chapter 3's simulator.
        "weights_read_bytes",
        "kv_equals_weights_context",
        "kv_read_asymptote",
        "step_split",
        "generation_work",
        "paging_use",
        "lognormal_lengths",
        "swap_or_recompute",
        "recompute_seconds",
        "swap_copies",
        "swap_cost",
        "break_even_host_link",
        "recompute_wins_between",
        "simulate",
        "iteration_costs",
    ):
        assert name in text, name


def test_notebook_page_says_at_its_top_how_to_run_it(site):
    """The notebook does not run in the page like a Run cell (issue 40), so before its first cell the
    page says so, and gives the README's commands to get the package and open the notebook."""
    notebook = page(site, "notebooks/explore-the-roofline")
    first_cell = notebook.select_one(".jp-CodeCell")
    top = " ".join(" ".join(cell.get_text().split()) for cell in first_cell.find_all_previous(class_="jp-MarkdownCell"))
    assert "unlike the chapters' Run cells, it does not run in your browser" in top
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### The notebook") :]
    block = section[section.index("```sh") + len("```sh") : section.index("```", section.index("```sh") + 5)]
    commands = [line.split("  #")[0].strip() for line in block.strip().splitlines()]
    assert len(commands) == 5 and commands[-1].startswith("jupyter lab docs/notebooks/")
    for command in commands:
        assert " ".join(command.split()) in top, command


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
    """Whether ``url``, as loaded from ``base``, leaves ``base``'s origin (data: URLs stay)."""
    url = url.strip()
    if not url or url.startswith(("data:", "#", "about:")):
        return False
    parts, home = urlsplit(urljoin(base, url)), urlsplit(base)
    return (parts.scheme, parts.netloc) != (home.scheme, home.netloc)


def css_urls(css: str) -> list[str]:
    return [a or b for a, b in _CSS_URL.findall(css)]


def test_no_page_loads_anything_from_another_origin(site):
    offenders: list[str] = []

    def check_css(where: str, css: str, base: str) -> None:
        offenders.extend(f"{where}: {url}" for url in css_urls(css) if foreign(url, base))

    for html in sorted(site.directory.rglob("*.html")):
        base = f"{site.isolated}{html.relative_to(site.directory).as_posix()}"
        soup = BeautifulSoup(html.read_text(encoding="utf-8"), "html.parser")
        for tag, attributes in _LOADING_ATTRIBUTES.items():
            for element in soup.find_all(tag):
                if tag == "link" and set(element.get("rel", [])) <= {"canonical", "alternate", "prev", "next"}:
                    continue  # navigation, not a load
                for attribute in attributes:
                    for value in (element.get(attribute) or "").split(","):
                        candidate = value.strip().split(" ")[0]
                        if foreign(candidate, base):
                            offenders.append(f"{html.relative_to(site.directory)}: <{tag} {attribute}={candidate}>")
        for style in soup.find_all("style"):
            check_css(f"{html.relative_to(site.directory)} <style>", style.get_text(), base)
        for element in soup.find_all(style=True):
            check_css(f"{html.relative_to(site.directory)} style=", element["style"], base)
        for script in soup.find_all("script", src=False):
            for url in re.findall(r"""(?:import\s*\(|from\s|src\s*=)\s*["'](https?:)?//[^"']+""", script.get_text()):
                offenders.append(f"{html.relative_to(site.directory)}: inline script loads {url}")
    for css in sorted(site.directory.rglob("*.css")):
        base = f"{site.isolated}{css.relative_to(site.directory).as_posix()}"
        check_css(str(css.relative_to(site.directory)), css.read_text(encoding="utf-8"), base)
    assert offenders == []


def test_no_page_skips_a_heading_level(site):
    """Lighthouse's (and axe's) heading-order: within a page's article each heading is at most one
    level below the one before it, so a screen reader's outline has no missing level (the glossary's
    terms and the changes' days were h3 under the page's h1)."""
    skipped: list[str] = []
    for html in sorted(site.directory.rglob("*.html")):
        article = BeautifulSoup(html.read_text(encoding="utf-8"), "html.parser").find("article")
        if article is None:
            continue
        previous = 1
        for heading in article.find_all(re.compile(r"^h[1-6]$")):
            level = int(heading.name[1])
            if level > previous + 1:
                text = heading.get_text(" ", strip=True).rstrip("¶").strip()
                skipped.append(f"{html.relative_to(site.directory)}: h{level} {text!r} after h{previous}")
            previous = level
    assert skipped == []


def test_vendored_libraries_are_served_by_the_site(site):
    for path in ("vega/vega.min.js", "vega/vega-lite.min.js", "vega/vega-embed.min.js", "katex/katex.min.css"):
        assert (site.directory / "assets" / "vendor" / path).is_file(), path
    css = (site.directory / "assets/vendor/katex/katex.min.css").read_text()
    for url in css_urls(css):
        assert (site.directory / "assets/vendor/katex" / url).is_file(), url


def test_the_widgets_name_the_served_snapshot_by_its_digest_and_its_inputs(site, chapter):
    links = {widget["data-rf-snapshot"] for widget in chapter.select("[data-rf-cell], [data-rf-calc]")}
    assert len(links) == 1, links
    address, _, fragment = links.pop().partition("#")
    served = (site.directory / "chapters" / "prefill-vs-decode" / address).resolve()
    # The page names the digest the worker checks the file against before restoring it.
    with gzip.open(served) as container:
        container.readline()
        header = json.loads(container.readline())
        assert fragment == f"sha256={header['sha256']}&raw={header['rawSha256']}"
    assert served.parent == (site.directory / "assets" / "runtime" / "snapshots").resolve()
    version = json.loads((ROOT / "node_modules" / "pyodide" / "package.json").read_text())["version"]
    assert re.fullmatch(rf"roofline-pyodide{re.escape(version)}-[0-9a-f]{{16}}\.snapshot\.gz", served.name), served.name
    assert served.read_bytes()[:2] == b"\x1f\x8b"  # gzip, which the worker's DecompressionStream undoes
    # Not compared with build/snapshot-cache's file of that name: a build running beside this one (a
    # parallel test's) may have made its own since (same inputs, not byte-identical), and the hook
    # serves the bytes it read, whose digest the pages name (checked above).


def test_the_runtime_files_have_names_that_never_change_and_may_be_kept_a_year(site, chapter):
    """Issue 23: a second chapter, and the calculators' worker, read Pyodide, the wheel and the
    snapshot from the browser's cache, without asking the server again: each is served under a
    name its content never changes (a version or a digest) and with an immutable Cache-Control."""
    from urllib.request import urlopen

    version = json.loads((ROOT / "node_modules" / "pyodide" / "package.json").read_text())["version"]
    widget = chapter.select_one("[data-rf-cell]")
    assert widget["data-rf-pyodide"] == f"../../assets/runtime/pyodide/{version}/"
    base = f"{site.isolated}chapters/prefill-vs-decode/"
    addresses = [
        widget["data-rf-pyodide"] + "pyodide.asm.wasm",
        widget["data-rf-pyodide"] + "pyodide.mjs",
        widget["data-rf-wheel"],
        widget["data-rf-snapshot"].partition("#")[0],
    ]
    for address in addresses:
        with urlopen(urljoin(base, address)) as response:
            assert response.headers["Cache-Control"] == "public, max-age=31536000, immutable", address
    # What may change under the same name is revalidated: a page, the runtime's own scripts.
    for address in ("", "../../javascripts/runtime/runtime.mjs"):
        with urlopen(urljoin(base, address)) as response:
            assert "immutable" not in response.headers["Cache-Control"], address


# Spec edits --------------------------------------------------------------------------


@pytest.fixture
def repo_copy(tmp_path) -> Path:
    """This checkout without .git, .venv and build output; node_modules linked, not copied."""
    return support.copy_checkout(tmp_path / "repo")


@pytest.mark.cost(45)
def test_editing_a_spec_changes_the_rebuilt_chapter_and_its_figure(repo_copy, tmp_path):
    gpus = repo_copy / "roofline" / "data" / "gpus.toml"
    gpus.write_text(gpus.read_text().replace("bandwidth_bytes_per_s = 3.35e12", "bandwidth_bytes_per_s = 4.02e12", 1))
    specs = read_specs(repo_copy)
    edited = estimate(CHAPTER_GPU, SMALL_MODEL, specs=specs)
    rule_rate = fmt.rate(edited.rule.decode_tokens_per_s_per_user)
    rate = fmt.rate(edited.decode_tokens_per_s_per_user)
    old_rate = fmt.rate(estimate(CHAPTER_GPU, SMALL_MODEL).decode_tokens_per_s_per_user)
    assert rate != old_rate

    done = support.mkdocs_build(repo_copy, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-4000:]
    rebuilt = BeautifulSoup((tmp_path / "site" / CHAPTER.url / "index.html").read_text(), "html.parser")
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

    done = support.mkdocs_build(repo_copy, tmp_path / "site")
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
    assert set(names) == {
        "runtime.mjs",
        "runcell.mjs",
        "calculator.mjs",
        "editor.mjs",
        "outputs.mjs",
        "checks.mjs",
        "own.mjs",
        "timeline.mjs",
        "vega.mjs",
        "quiz.mjs",
        "progress.mjs",
    }
    for href in preloaded:
        assert (site.directory / "chapters" / "prefill-vs-decode" / href).resolve().is_file(), href
    runtime_js = ROOT / "docs" / "javascripts" / "runtime"
    for name in names:
        for imported in re.findall(
            r'^import\s[^;]*?\bfrom\s+"\./([\w.-]+\.mjs)"', (runtime_js / name).read_text(), re.M
        ):
            assert imported in names, f"{name} imports {imported}, which is not preloaded"
    assert not page(site, "").select('link[rel="modulepreload"]')  # the home page has no widget


# Mistakes an author makes stop the build with one line ------------------------------------------


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        ("nav", "docs/chapters/kv-cache/index.md is not in mkdocs.yml's nav: add one line under Chapters,"),
        (
            "output",
            "docs/chapters/kv-cache/calculators/kv_budget.py: view(defaults): output 'users' (text):"
            " the answer has no 'users'; return it from view()",
        ),
    ],
)
def test_a_contract_mistake_stops_the_build_with_one_line(site, tmp_path, mistake, message):
    # The tests' site's checkout (its snapshot, and the figures/ its build made, so no page is computed again).
    root = support.copy_checkout(tmp_path / "repo", source=site.root)
    if mistake == "nav":  # a chapter folder the nav forgot
        yml = root / "mkdocs.yml"
        yml.write_text(yml.read_text().replace('      - "2. The KV Cache": chapters/kv-cache/index.md\n', ""))
    else:  # a view that no longer answers a declared output
        path = root / "docs" / "chapters" / "kv-cache" / "calculators" / "kv_budget.py"
        path.write_text(path.read_text().replace('        "users": f"{users:,}",\n', ""))
    done = support.mkdocs_build(root, tmp_path / "site", figures="skip")
    assert done.returncode != 0
    # MkDocs may say which page it was reading on a line of its own; the error itself is one line.
    errors = [line for line in done.stderr.splitlines() if message in line]
    assert len(errors) == 1 and errors[0].startswith("ERROR"), done.stderr[-2000:]
    assert "Traceback" not in done.stderr


def test_the_site_serves_every_python_file_the_worker_fetches_and_no_other(site):
    """The worker fetches the runtime's helper modules and each calculator; a page folder's other Python
    (page.py, charts.py, tests, programs) stays out of the site (exclude_docs)."""
    runtime = (ROOT / "docs" / "javascripts" / "runtime" / "runtime.mjs").read_text()
    helpers = re.search(r"const MODULES = \[([^\]]*)\]", runtime).group(1)
    for name in re.findall(r'"([\w.]+\.py)"', helpers):
        assert (site.directory / "javascripts" / "runtime" / name).is_file(), name
    modules = set()
    for html in site.directory.rglob("index.html"):
        for form in BeautifulSoup(html.read_text(encoding="utf-8"), "html.parser").select("[data-rf-module]"):
            served = (html.parent / form["data-rf-module"]).resolve()
            assert served.is_file(), (html, form["data-rf-module"])
            modules.add(served)
    python = {path.resolve() for path in site.directory.rglob("*.py")}
    notebooks = {path.resolve() for path in (site.directory / "notebooks").rglob("*.py")}
    helpers_served = {path.resolve() for path in (site.directory / "javascripts" / "runtime").glob("*.py")}
    assert python - notebooks - helpers_served == modules
    assert not list(site.directory.rglob("__pycache__"))
