"""The 404 page works from any depth and under any sub-path, whatever site_url says.

A host serves 404.html for every missing address, at that address: relative links
would resolve against the wrong folder, and Material writes absolute ones from
``site_url``'s path, which is wrong whenever the site is published elsewhere (a
GitHub Pages project site whose owner forgot ``SITE_URL``). So, in the built 404.html:

- every link, stylesheet and script that points into the site becomes relative;
- a small script at the top of ``<head>`` works out the site's root from the
  address (the path up to the first segment that is one of the site's top-level
  folders, such as ``chapters/`` or ``assets/``; else ``site_url``'s sub-path when
  the address is under it) and writes ``<base href=ROOT>``, so all of them resolve there;
- Material's settings (``__config``: ``base`` and the search worker) are written
  with that root too.

When the address holds none of the site's folders (``/project/typo``) and
``site_url`` names no sub-path, the script asks the parent folders, nearest first,
for ``sitemap.xml`` (synchronously, so nothing loads from a wrong root) and takes
the first that holds this site's. It asks only the ``MAX_PROBED_DEPTH`` folders
nearest the host's root: a crafted address with thousands of segments costs at
most that many requests, not one per segment. A site published deeper than that
whose owner forgot ``SITE_URL`` gets ``site_url``'s root on such an address.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from mkdocs.exceptions import PluginError

_state: dict[str, Any] = {}
#: Folders asked for a sitemap at most: sub-paths of depth 0 to 4 (``/``, ``/repo/``, ``/a/b/c/d/``).
MAX_PROBED_DEPTH = 5

ROOT_SCRIPT = """<script>
(() => {
  const known = new Set(%(known)s);
  const sitePath = %(site_path)s;
  const maxProbes = %(max_probes)s;
  const parts = location.pathname.split("/").filter(Boolean);
  const prefix = (depth) => "/" + parts.slice(0, depth).map((part) => part + "/").join("");
  // Does this folder hold this site? Asked synchronously, before anything else loads, and
  // only when the address alone cannot tell (no folder of the site in it).
  const holdsSite = (path) => {
    const request = new XMLHttpRequest();
    request.open("GET", path + "sitemap.xml", false);
    try { request.send(); } catch { return false; }
    return request.status === 200 && request.responseText.includes(%(marker)s);
  };
  let root = null;
  const at = parts.findIndex((part) => known.has(part));
  if (at >= 0) root = prefix(at);
  else if (sitePath !== "/" && location.pathname.startsWith(sitePath)) root = sitePath;
  else {
    // At most maxProbes requests, nearest the host's root: never one per segment of a crafted address.
    for (let depth = Math.min(parts.length - 1, maxProbes - 1); depth >= 0 && root === null; depth--) {
      if (holdsSite(prefix(depth))) root = prefix(depth);
    }
  }
  root ??= sitePath;
  window.__rfSiteRoot = root;
  document.write('<base href="' + root.replace(/[&"<>]/g, "") + '">');
})();
</script>"""

CONFIG_SCRIPT = """<script>
(() => {
  const config = %(config)s;
  config.base = window.__rfSiteRoot;
  config.search = window.__rfSiteRoot + config.search;
  const json = JSON.stringify(config).replace(/</g, "\\\\u003c");
  document.write('<script id="__config" type="application/json">' + json + "<\\/script>");
})();
</script>"""

#: Tags that make the browser fetch at once: stylesheets, the icon, scripts with a src.
_LOADED = re.compile(r'<link\b[^>]*\brel="(?:stylesheet|icon)"[^>]*>|<script\b[^>]*\bsrc="[^"]*"[^>]*></script>')


def _written_by_script(match: re.Match[str]) -> str:
    tag = match.group(0)
    if re.search(r'(href|src)="(https?:)?//', tag):
        return tag
    return "<script>document.write(" + json.dumps(tag).replace("</", "<\\/") + ")</script>"


_CONFIG = re.compile(r'<script id="__config" type="application/json">(?P<json>.*?)</script>', re.S)


def on_files(files: Any, config: Any) -> Any:
    # The first path segment of every file the site serves: what a root is followed by.
    _state["known"] = sorted({file.dest_uri.split("/")[0] for file in files if "/" in file.dest_uri})
    # A page only this site has, to tell its sitemap from another site's on the same host.
    pages = sorted(file.url for file in files if file.is_documentation_page() and file.url.count("/") >= 2)
    _state["marker"] = f"/{pages[0]}</loc>" if pages else "<urlset"
    return files


def relative_404(output: str, site_path: str, known: list[str], marker: str) -> str:
    """The built 404 page rewritten as the module docstring describes."""
    match = _CONFIG.search(output)
    if match is None:
        raise PluginError("not_found hook: 404.html lacks Material's __config; update hooks/not_found.py")
    settings = json.loads(match.group("json"))
    settings["search"] = settings["search"].removeprefix(site_path)
    output = output.replace(match.group(0), CONFIG_SCRIPT % {"config": json.dumps(settings).replace("</", "<\\/")}, 1)
    # href="/proj/x" -> href="x"; href="/proj/." -> href="." (the home page).
    prefix = re.escape(site_path)
    output = re.sub(rf'\b(href|src)="{prefix}(?!/)([^"]*)"', lambda m: f'{m.group(1)}="{m.group(2) or "."}"', output)
    script = ROOT_SCRIPT % {
        "known": json.dumps(known),
        "site_path": json.dumps(site_path),
        "marker": json.dumps(marker),
        "max_probes": MAX_PROBED_DEPTH,
    }
    # The browser's preload scanner reads ahead of scripts, before the <base> exists, and would
    # fetch relative stylesheets and scripts from the wrong folder: write those tags from script.
    output = _LOADED.sub(_written_by_script, output)
    # After <meta charset> and the viewport, before the first address that needs the base.
    viewport = '<meta name="viewport" content="width=device-width,initial-scale=1">'
    if viewport not in output:
        raise PluginError("not_found hook: 404.html lacks the viewport meta; update hooks/not_found.py")
    return output.replace(viewport, viewport + "\n" + script, 1)


def on_post_template(output: str, template_name: str, config: Any) -> str:
    if template_name != "404.html":
        return output
    site_path = urlsplit(config["site_url"] or "/").path or "/"
    if not site_path.endswith("/"):
        site_path += "/"
    return relative_404(output, site_path, _state["known"], _state["marker"])
