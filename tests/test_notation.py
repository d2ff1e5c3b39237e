"""One notation site-wide (issue 40): docs/notation.toml, the build's check and the reference's table.

Before, W was weight bytes in chapters 2 and 6 and bandwidth in chapter 4, usable memory was M in
chapter 2 and U in chapter 6, S was a speedup in chapter 5 and an all-reduce's bytes in chapter 6,
and alpha an acceptance rate in chapter 5 and a latency in chapter 6. The seeded sentences below are
the old pages' own; each must stop the build in one line naming the page, the symbol and the fix."""

from __future__ import annotations

import importlib.util
import json
import re
from types import SimpleNamespace

import markdown
import pytest

from sitegen import notation
from sitegen.pages import chapters
from support import ROOT

TABLE = notation.load()
EXTENSIONS = ["tables", "admonition", "attr_list", "footnotes", "md_in_html", "pymdownx.arithmatex", "pymdownx.details"]


def _html(text: str, values: dict[str, str] | None = None) -> str:
    """The page's Markdown as the build turns it into HTML, its values filled in and snippets left out."""
    values = values or {}
    text = re.sub(r"\{\{\s*n\.([\w-]+)\s*\}\}", lambda m: values.get(m.group(1), "1"), text)
    text = re.sub(r"\{\{[^}]*\}\}", "", text)
    return markdown.markdown(text, extensions=EXTENSIONS, extension_configs={"pymdownx.arithmatex": {"generic": True}})


def _error(text: str) -> str:
    with pytest.raises(notation.NotationError) as raised:
        notation.check_page("docs/chapters/x/index.md", _html(text), TABLE)
    message = str(raised.value)
    assert "\n" not in message and message.startswith("docs/chapters/x/index.md: ")
    return message


def _pages_with_math() -> list[str]:
    """Every page under docs/ with a formula in its Markdown, by its path under docs/."""
    pages = sorted(path.relative_to(ROOT / "docs").as_posix() for path in (ROOT / "docs").rglob("*.md"))
    return [page for page in pages if re.search(r"\\\(|\\\[", (ROOT / "docs" / page).read_text(encoding="utf-8"))]


REFERENCE = "reference/formulas/index.md"


def _page_html(page: str, source: str | None = None) -> str:
    values = json.loads((ROOT / "figures" / "values.json").read_text(encoding="utf-8"))["pages"]
    if source is None:
        source = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return _html(source, values.get(page, {}))


def test_the_check_covers_every_chapter_and_the_reference_page() -> None:
    pages = _pages_with_math()
    assert REFERENCE in pages
    assert {f"chapters/{c.slug}/index.md" for c in chapters(ROOT / "docs")} <= set(pages)


@pytest.mark.parametrize("page", _pages_with_math())
def test_every_page_s_formulas_use_the_table(page: str) -> None:
    notation.check_page(f"docs/{page}", _page_html(page), TABLE)


@pytest.mark.parametrize(
    ("new", "old", "words"),
    [
        # The reference page's own symbols before issue 40: K for KV heads (the table's H_kv) ...
        (
            r"\(H_\text{kv}\) key-value heads",
            r"\(K\) KV heads",
            ["\\(K\\) is not in the notation table", "'kv heads' is \\(H_\\text{kv}\\)", "write \\(H_\\text{kv}\\)"],
        ),
        # ... k for experts per token, where the table's k is KV bytes per token ...
        (
            r"\(E_\text{tok}\) experts per token",
            r"\(k\) is the experts per token",
            ["\\(k\\) is called 'experts per token'", "KV-cache bytes per token", "write \\(E_\\text{tok}\\)"],
        ),
        # ... W_link for link bandwidth (the table's B_link) ...
        (
            r"over links of \(B_\text{link}\) bytes/s",
            r"over links of \(W_\text{link}\) bytes/s",
            ["\\(W_\\text{link}\\) is not in the notation table", "add it there with its meaning and unit"],
        ),
        # ... and alpha for the all-reduce latency, the table's alpha being the acceptance rate.
        (
            r"\(t_\text{lat}(G) = t_\text{base} + 2(G-1)\,t_\text{ring}\)",
            r"\(\alpha(G) = \alpha_0 + 2(G-1)\,h\)",
            ["\\(\\alpha_0\\) is not in the notation table"],
        ),
    ],
)
def test_a_clash_seeded_on_the_reference_page_fails_in_one_line(new: str, old: str, words: list[str]) -> None:
    source = (ROOT / "docs" / REFERENCE).read_text(encoding="utf-8")
    assert new in source
    with pytest.raises(notation.NotationError) as raised:
        notation.check_page(f"docs/{REFERENCE}", _page_html(REFERENCE, source.replace(new, old, 1)), TABLE)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"docs/{REFERENCE}: "), message
    for word in words:
        assert word in message, message


@pytest.mark.parametrize(
    ("old", "words"),
    [
        # Chapter 4: W as the bandwidth, where chapters 2 and 6 use it for weight bytes.
        (r"the bytes per weight and \(W\) the bandwidth.", ["\\(W\\)", "'bandwidth'", "write \\(B_\\text{mem}\\)"]),
        (r"for memory bandwidth \(W\), a step", ["\\(W\\)", "write \\(B_\\text{mem}\\)"]),
        # Chapter 6: usable memory U, where chapter 2 writes M.
        (r"With usable memory \(U\) per GPU and weights \(W\):", ["\\(U\\) is not in the notation table"]),
        # Chapter 6: alpha for a latency, the table's alpha being chapter 5's acceptance rate.
        (r"\(t_\text{AR} = \alpha_\text{base}\)", ["\\(\\alpha_\\text{base}\\) is not in the notation table"]),
        # Chapter 2: p for a shared prefix, the table's p being pipeline stages.
        (r"For \(B\) requests sharing a prefix of \(p\) tokens", ["\\(p\\)", "write \\(P_\\text{shared}\\)"]),
        # Chapter 3: the output length as n_out, where chapters 1 and 2 write n.
        (r"\[ \bar{N} = \lambda \cdot (n_\text{out} - 1) \]", ["\\(n_\\text{out}\\) is not in the notation table"]),
    ],
)
def test_the_old_pages_clashes_each_fail_in_one_line(old: str, words: list[str]) -> None:
    message = _error(old)
    for word in words:
        assert word in message, message
    assert "docs/notation.toml" in message


def test_the_same_sentences_in_the_table_s_symbols_pass() -> None:
    for good in (
        r"the bytes per weight and \(B_\text{mem}\) the bandwidth.",
        r"With usable memory \(M\) per GPU and weights \(W\):",
        r"For \(B\) requests sharing a prefix of \(P_\text{shared}\) tokens",
        r"\(W_\text{read}\) the weight bytes a step reads",
    ):
        notation.check_page("docs/chapters/x/index.md", _html(good), TABLE)


@pytest.mark.parametrize(
    ("tex", "symbols"),
    [
        (
            r"B^\ast = \frac{F_\text{peak}}{B_\text{mem}} \cdot \frac{b}{2}",
            [r"B^\ast", r"F_\text{peak}", r"B_\text{mem}", "b"],
        ),
        (r"\sum_{j=1}^{p} T_j + (p-1)\,t_\text{hop}", ["j", "p", "T_j", "p", r"t_\text{hop}"]),
        (r"\frac{\text{KV room on } G \text{ GPUs}}{x^2}", ["G", "x"]),
        (r"\frac{\tau}{1 + \gamma \hat c}", [r"\tau", r"\gamma", r"\hat{c}"]),
        (r"\sum_\ell \min(c, w_\ell)", [r"\ell", "c", r"w_\ell"]),
        # A braced power keeps its symbol's subscript whole (it once lost the closing brace).
        (
            r"E\left(1 - \tfrac{E_\text{tok}}{E}\right)^{n_\text{tok}}",
            ["E", r"E_\text{tok}", "E", r"n_\text{tok}"],
        ),
    ],
)
def test_a_formula_reads_as_its_symbols(tex: str, symbols: list[str]) -> None:
    assert notation.symbols_in(tex) == symbols


def test_the_table_gives_each_symbol_and_each_name_one_meaning(tmp_path) -> None:
    assert len(TABLE) == len({symbol.tex for symbol in TABLE.values()})
    entry = "[[symbol]]\ntex = 'W'\nmeaning = 'weight bytes'\nunit = 'bytes'\n"
    (tmp_path / "twice.toml").write_text(entry + entry.replace("weight bytes", "bandwidth"))
    with pytest.raises(notation.NotationError, match="W is listed twice; give each symbol one meaning"):
        notation.load(tmp_path / "twice.toml")
    (tmp_path / "two.toml").write_text("[[symbol]]\ntex = 'a + b'\nmeaning = 'x'\nunit = 's'\n")
    with pytest.raises(notation.NotationError, match="is not one symbol"):
        notation.load(tmp_path / "two.toml")


def test_words_name_a_symbol_only_in_their_own_table_cell() -> None:
    """The reference page's notation table: the unit column 'parameters' of N's row is not the
    name of the symbol that opens the next row."""
    rows = "| Symbol | Unit |\n| --- | --- |\n| \\(N\\) | parameters |\n| \\(N_q\\) | parameters |\n"
    notation.check_page("docs/reference/formulas/index.md", _html(rows), TABLE)
    assert "is called 'parameters'" in _error(r"the parameters \(N_q\) of the head")


def _math_hook():
    spec = importlib.util.spec_from_file_location("math_hook", ROOT / "hooks" / "math.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_build_stops_on_any_page_that_breaks_the_notation() -> None:
    """hooks/math.py runs the check before KaTeX on every page: a chapter or any other page with
    bandwidth W fails with the one line; a page whose formulas keep the table renders."""
    from mkdocs.exceptions import PluginError

    hook = _math_hook()
    hook.on_config(None)
    html = _html(r"the bytes per weight and \(W\) the bandwidth.")
    chapter = SimpleNamespace(file=SimpleNamespace(src_uri="chapters/quantization/index.md"))
    with pytest.raises(PluginError) as raised:
        hook.on_page_content(html, chapter, None, None)
    assert str(raised.value).startswith("docs/chapters/quantization/index.md: \\(W\\) is called 'bandwidth'")
    reference = SimpleNamespace(file=SimpleNamespace(src_uri="reference/formulas/index.md"))
    with pytest.raises(PluginError) as raised:
        hook.on_page_content(html, reference, None, None)
    assert str(raised.value).startswith("docs/reference/formulas/index.md: \\(W\\) is called 'bandwidth'")
    home = SimpleNamespace(file=SimpleNamespace(src_uri="index.md"))
    good = _html(r"the bytes per weight and \(B_\text{mem}\) the bandwidth.")
    assert "katex" in hook.on_page_content(good, home, None, None)


def test_the_reference_page_shows_the_table() -> None:
    page = (ROOT / "docs" / "reference" / "formulas" / "index.md").read_text(encoding="utf-8")
    assert "## Notation" in page and "{{ md.notation }}" in page
    shown = (ROOT / "figures" / "notation.md").read_text(encoding="utf-8")
    for symbol in TABLE.values():
        assert f"| \\({symbol.tex}\\) | {symbol.meaning} | {symbol.unit} |" in shown
