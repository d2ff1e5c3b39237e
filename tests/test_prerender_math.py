"""Formulas rendered at build time: KaTeX's HTML in the page, a cache, and one clear line for bad TeX."""

from __future__ import annotations

import shutil

import pytest

from prerender_math import MathError, MathRenderer, render_page

pytestmark = pytest.mark.node

if shutil.which("node") is None:
    pytest.skip("node is not installed", allow_module_level=True)


def test_inline_and_display_formulas_become_katex_html(tmp_path) -> None:
    page = (
        '<p>Write <span class="arithmatex">\\(B_\\text{mem}\\)</span> for bandwidth.</p>\n'
        '<div class="arithmatex">\\[ t = \\frac{N b}{B_\\text{mem}} \\]</div>'
    )
    html = render_page(page, MathRenderer(tmp_path))
    assert "\\(" not in html and "\\[" not in html
    assert html.count('class="katex"') == 2 and 'class="katex-display"' in html
    # What a screen reader reads, and what search indexes for the inline one.
    assert "<mi>B</mi>" in html and "<mtext>mem</mtext>" in html
    assert '<div class="arithmatex" data-search-exclude>' in html
    assert "<katex-visual data-search-exclude>" in html


def test_a_second_build_takes_formulas_from_the_cache_without_node(tmp_path, monkeypatch) -> None:
    import prerender_math

    first = MathRenderer(tmp_path).render([("E = mc^2", True)])
    monkeypatch.setattr(prerender_math, "RENDERER", tmp_path / "no-such-renderer.mjs")
    assert MathRenderer(tmp_path).render([("E = mc^2", True)]) == first
    with pytest.raises(MathError):
        MathRenderer(tmp_path).render([("E = mc^3", True)])  # not cached: needs Node, which now fails


def test_tex_katex_cannot_parse_fails_with_one_line_naming_it(tmp_path) -> None:
    with pytest.raises(MathError) as raised:
        MathRenderer(tmp_path).render([("\\frac{1}{", False)])
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith('KaTeX cannot render "\\\\frac{1}{"')


def test_a_formatted_number_in_a_formula_renders_as_one_number(tmp_path) -> None:
    """``{{ n.X }}`` puts numbers such as 2,000 into formulas: no thin space after their separators."""
    page = '<p><span class="arithmatex">\\(2,000 \\times 1,048,576 + f(1,2)\\)</span></p>'
    html = render_page(page, MathRenderer(tmp_path))
    visual = html[html.index("<katex-visual") :]
    # One separator in the first number and two in the second, each braced into an ordinary group
    # and so never followed by the thin space TeX gives punctuation; the list's comma keeps its space.
    assert visual.count('<span class="mord"><span class="mpunct">,</span></span>') == 3
    assert visual.count('<span class="mpunct">,</span><span class="mspace"') == 1
