"""Small markup fixes the theme and mkdocs-jupyter have no setting for.

- on_page_content: in notebook pages, nbconvert's heading anchors (``<a class="anchor-link">¶</a>``)
                   become Material's own ``headerlink``, which looks like every other page's and
                   which Material's search leaves out of the index (no stray "¶" in results);
- on_post_page, on_post_template (404.html): Material's search dialog gets an accessible name (axe: aria-dialog-name),
                   and Material's bundle is deferred: at the end of <body> it still stopped the browser from
                   painting until it had run, and it restyles the whole page several times as it starts, so
                   a phone's first paint waited for all of it (Lighthouse's first and largest paint).
                   The page's own classic scripts are deferred too (mkdocs.yml), so they still run after it.
                   And <html> carries the classes the bundle gives it ("js" for "no-js", and its focus
                   polyfill's "js-focus-visible") from the start, not only once the bundle has run: each
                   change to <html>'s class made the browser restyle the whole page (selectors such as
                   the theme's "table:not([class]) th > :first-child" tie every element to it), in the
                   bundle's first long task. The bundle's own calls then change nothing. Without
                   JavaScript "no-js" stays.

A fix whose target markup is gone (after a theme update) fails the build with one
line, instead of quietly dropping the fix.
"""

from __future__ import annotations

import re
from typing import Any

from mkdocs.exceptions import PluginError

SEARCH_DIALOG = '<div class="md-search" data-md-component="search" role="dialog">'
NAMED_SEARCH_DIALOG = '<div class="md-search" data-md-component="search" role="dialog" aria-label="Search this site">'
_ANCHOR = re.compile(r'<a class="anchor-link" href="(#[^"]*)">¶</a>')
_NO_JS_HEAD = re.compile(r'(<html lang="[^"]*" class="no-js">\s*<head>)')
#: The theme's own first steps (bundle.ts: classList.remove("no-js"), add("js"); the focus-visible
#: polyfill: add("js-focus-visible")), taken before the body is parsed, so that the bundle's later
#: calls change nothing. No stylesheet here or in the theme styles "js-focus-visible" itself.
EARLY_JS = (
    "<script>document.documentElement.classList.replace('no-js', 'js'),"
    " document.documentElement.classList.add('js-focus-visible')</script>"
)
_BUNDLE = re.compile(r'<script src="([^"]*assets/javascripts/bundle\.[0-9a-f]+\.min\.js)"></script>')


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri.endswith((".py", ".ipynb")):
        return _ANCHOR.sub(r'<a class="headerlink" href="\1" title="Permanent link">¶</a>', html)
    return html


def name_search_dialog(output: str, where: str) -> str:
    if SEARCH_DIALOG not in output:
        raise PluginError(
            f"theme_fixes hook: {where}'s search dialog markup changed ({SEARCH_DIALOG!r} not found);"
            " update hooks/theme_fixes.py for the new Material version"
        )
    return output.replace(SEARCH_DIALOG, NAMED_SEARCH_DIALOG, 1)


def defer_bundle(output: str, where: str) -> str:
    if len(_BUNDLE.findall(output)) != 1:
        raise PluginError(
            f'theme_fixes hook: {where} has no single <script src=".../bundle.*.min.js"> to defer;'
            " update hooks/theme_fixes.py for the new Material version"
        )
    return _BUNDLE.sub(r'<script src="\1" defer></script>', output)


def say_js_early(output: str, where: str) -> str:
    if len(_NO_JS_HEAD.findall(output)) != 1:
        raise PluginError(
            f'theme_fixes hook: {where} has no single <html class="no-js"><head> to mark as scripted early;'
            " update hooks/theme_fixes.py for the new Material version"
        )
    return _NO_JS_HEAD.sub(lambda match: match.group(1) + EARLY_JS, output, count=1)


def fix_page(output: str, where: str) -> str:
    return say_js_early(defer_bundle(name_search_dialog(output, where), where), where)


def on_post_page(output: str, page: Any, config: Any) -> str:
    return fix_page(output, page.file.src_uri)


def on_post_template(output: str, template_name: str, config: Any) -> str:
    # 404.html is a theme template rendered on its own, not a page.
    if template_name != "404.html":
        return output
    return fix_page(output, template_name)
