"""The 404 page works from any depth and under any sub-path, whatever site_url says.

A host serves 404.html for every missing address, at that address: relative links
would resolve against the wrong folder, and Material writes absolute ones from
``site_url``'s path, which is wrong whenever the site is published elsewhere (a
GitHub Pages project site whose owner forgot ``SITE_URL``). So, in the built 404.html:

- every link, stylesheet and script that points into the site becomes relative;
- a small script at the very top of ``<head>`` works out the site's root from the
  address (the path up to the first segment that is one of the site's top-level
  folders, such as ``chapters/`` or ``assets/``; else ``site_url``'s path when the
  address is under it) and writes ``<base href=ROOT>``, so all of them resolve there;
- Material's settings (``__config``: ``base`` and the search worker) are written
  with that root too.

When the address holds none of the site's folders (``/project/typo``), the guess
is checked once the page has loaded: if ``ROOT/sitemap.xml`` is not this site's,
the nearest parent folder that has it becomes the root, remembered for the tab,
and the page reloads once.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from mkdocs.exceptions import PluginError

_state: dict[str, Any] = {}

ROOT_SCRIPT = """<script>
(() => {
  const known = new Set(%(known)s);
  const sitePath = %(site_path)s;
  const parts = location.pathname.split("/").filter(Boolean);
  let root = null;
  const at = parts.findIndex((part) => known.has(part));
  if (at >= 0) root = "/" + parts.slice(0, at).map((part) => part + "/").join("");
  const remembered = sessionStorage.getItem("rf-site-root");
  if (root === null && remembered && location.pathname.startsWith(remembered)) root = remembered;
  if (root === null) root = location.pathname.startsWith(sitePath) ? sitePath : "/";
  window.__rfSiteRoot = root;
  document.write('<base href="' + root.replace(/[&"<>]/g, "") + '">');
  if (at >= 0) return;
  // Not sure: check that the root holds this site's sitemap, else try the parent folders.
  addEventListener("load", async () => {
    const holdsSite = async (path) => {
      try {
        const response = await fetch(path + "sitemap.xml", { cache: "no-store" });
        return response.ok && (await response.text()).includes(%(marker)s);
      } catch { return false; }
    };
    if (await holdsSite(root)) return;
    for (let depth = parts.length - 1; depth >= 0; depth--) {
      const candidate = "/" + parts.slice(0, depth).map((part) => part + "/").join("");
      if (candidate !== root && (await holdsSite(candidate))) {
        sessionStorage.setItem("rf-site-root", candidate);
        location.reload();
        return;
      }
    }
  });
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
    }
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
