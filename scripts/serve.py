"""Serve the built site on http://127.0.0.1:8000 with the headers Pyodide's Stop needs.

Run: ``python scripts/serve.py [--build] [--port 8000] [--directory site]``.
With ``--build`` it runs ``mkdocs build`` first. Every response carries
``Cross-Origin-Opener-Policy: same-origin`` and
``Cross-Origin-Embedder-Policy: require-corp`` so the page is cross-origin
isolated, and ``.wasm``/``.mjs`` get their proper MIME types.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class IsolatedHandler(http.server.SimpleHTTPRequestHandler):
    """Static files plus the cross-origin isolation headers."""

    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".whl": "application/zip",
    }

    def end_headers(self) -> None:
        self.send_header("Cross-Origin-Opener-Policy", "same-origin")
        self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        self.send_header("Cross-Origin-Resource-Policy", "same-origin")
        super().end_headers()


def build_site() -> None:
    """Build the site into site/ with the strict MkDocs build."""
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=ROOT, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="store_true", help="run mkdocs build first")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--directory", default=str(ROOT / "site"))
    args = parser.parse_args()
    if args.build:
        build_site()
    handler = functools.partial(IsolatedHandler, directory=args.directory)
    with http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler) as server:
        print(f"Serving {args.directory} on http://127.0.0.1:{args.port}/ (Ctrl-C stops)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
