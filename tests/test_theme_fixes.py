"""hooks/theme_fixes.py: the markup fixes it makes to every page, and the one line it fails with
when the theme's markup they rely on is gone."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from mkdocs.exceptions import PluginError

_SPEC = importlib.util.spec_from_file_location("theme_fixes", Path(__file__).parent.parent / "hooks" / "theme_fixes.py")
theme_fixes = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(theme_fixes)

PAGE = """<!doctype html>
<html lang="en" class="no-js">
  <head>
    <meta charset="utf-8">
  </head>
  <body>
    <div class="md-search" data-md-component="search" role="dialog">
    <script src="../assets/javascripts/bundle.0123abcd.min.js"></script>
  </body>
</html>
"""


def test_html_says_js_before_the_body_is_parsed_and_keeps_no_js_without_javascript() -> None:
    fixed = theme_fixes.fix_page(PAGE, "chapters/x.md")
    head = fixed.index("<head>")
    script = fixed.index(theme_fixes.EARLY_JS)
    assert head < script < fixed.index('<meta charset="utf-8">') < fixed.index("<body>")
    assert fixed.count(theme_fixes.EARLY_JS) == 1
    assert '<html lang="en" class="no-js">' in fixed  # a reader without JavaScript keeps the theme's no-js styles
    assert "classList.replace('no-js', 'js')" in theme_fixes.EARLY_JS
    assert "classList.add('js-focus-visible')" in theme_fixes.EARLY_JS
    assert 'bundle.0123abcd.min.js" defer></script>' in fixed
    assert 'role="dialog" aria-label="Search this site"' in fixed


def test_a_theme_without_the_no_js_root_fails_the_build_with_one_line() -> None:
    page = PAGE.replace(' class="no-js"', "")
    expected = r"^theme_fixes hook: chapters/x\.md has no single <html class=\"no-js\"><head>"
    with pytest.raises(PluginError, match=expected):
        theme_fixes.fix_page(page, "chapters/x.md")
