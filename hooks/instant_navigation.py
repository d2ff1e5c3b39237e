"""Keep Material's instant navigation working wherever the site is served.

Instant navigation only takes over a click when the link's address is listed in
sitemap.xml, and the sitemap's addresses are built from ``site_url``. Material
rewrites their scheme and host name to the serving ones, but not the port or
the path, so a build for ``http://127.0.0.1:8000/`` served on another port, or a
site published under a sub-path its ``site_url`` does not name, silently falls
back to full page loads.

This hook puts a small script at the top of every page (the 404 page included).
It wraps ``DOMParser.parseFromString``, the one call Material reads the sitemap
through: in a document that is this site's sitemap (an ``<urlset>`` holding the
built ``site_url``), that ``site_url`` is replaced by the root the page is served
from (Material's own ``base`` setting resolved against the address). Everything
else passes through untouched. ``tests/test_publish.py`` checks the result under a
sub-path on a plain server.
"""

from __future__ import annotations

import json
from typing import Any

from mkdocs.exceptions import PluginError

VIEWPORT = '<meta name="viewport" content="width=device-width,initial-scale=1">'

SCRIPT = """<script>
(() => {
  const built = %s;
  const parse = DOMParser.prototype.parseFromString;
  DOMParser.prototype.parseFromString = function (text, type) {
    if (type === "text/xml" && text.includes("<urlset") && text.includes(built)) {
      const config = JSON.parse(document.getElementById("__config").textContent);
      const served = new URL(config.base, location.href).href.replace(/\\/?$/, "/");
      text = text.split(built).join(served);
    }
    return parse.call(this, text, type);
  };
})();
</script>"""


def with_rebasing_script(output: str, site_url: str, where: str) -> str:
    if VIEWPORT not in output:
        raise PluginError(f"instant_navigation hook: {where} lacks {VIEWPORT!r}; update hooks/instant_navigation.py")
    return output.replace(VIEWPORT, VIEWPORT + "\n" + SCRIPT % json.dumps(site_url), 1)


def on_post_page(output: str, page: Any, config: Any) -> str:
    return with_rebasing_script(output, config["site_url"], page.file.src_uri)


def on_post_template(output: str, template_name: str, config: Any) -> str:
    if template_name != "404.html":
        return output
    return with_rebasing_script(output, config["site_url"], template_name)
