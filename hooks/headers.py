"""Write ``_headers`` into the built site, for hosts that read one (Netlify, Cloudflare Pages).

With these headers the pages are cross-origin isolated, as under ``make serve``:
the Run cell's Stop then interrupts Python and keeps it warm, instead of
restarting it. Files whose names carry a content hash may be cached for a year.
Hosts that ignore the file (GitHub Pages, a plain web server) serve the site as
before; the Run cell then falls back to restarting Python on Stop.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

HEADERS = """\
# Read by Netlify and Cloudflare Pages; written by hooks/headers.py at build time.
/*
  Cross-Origin-Opener-Policy: same-origin
  Cross-Origin-Embedder-Policy: require-corp
  Cross-Origin-Resource-Policy: same-origin

/assets/javascripts/bundle.*
  Cache-Control: public, max-age=31536000, immutable

/assets/javascripts/workers/*
  Cache-Control: public, max-age=31536000, immutable

/assets/stylesheets/*
  Cache-Control: public, max-age=31536000, immutable

/assets/runtime/pyodide/*
  Cache-Control: public, max-age=31536000, immutable

/assets/runtime/wheels/*
  Cache-Control: public, max-age=31536000, immutable

/assets/runtime/snapshots/*
  Cache-Control: public, max-age=31536000, immutable
"""


def on_post_build(config: Any) -> None:
    (Path(config["site_dir"]) / "_headers").write_text(HEADERS, encoding="utf-8")
