"""Front-end files the site serves itself, taken from node_modules (pinned by package-lock.json).

Nothing on the site may load from another origin, so Vega, Vega-Lite,
vega-embed and KaTeX (with its fonts) are served from ``assets/vendor/``.
"""

from __future__ import annotations

from pathlib import Path

_FILES = {
    "assets/vendor/vega/vega.min.js": "vega/build/vega.min.js",
    "assets/vendor/vega/vega-lite.min.js": "vega-lite/build/vega-lite.min.js",
    "assets/vendor/vega/vega-embed.min.js": "vega-embed/build/vega-embed.min.js",
    "assets/vendor/katex/katex.min.css": "katex/dist/katex.min.css",
}
#: katex.min.css refers to fonts/NAME relative to itself.
_FONTS = ("katex/dist/fonts", "assets/vendor/katex/fonts")


def vendor_files(root: Path) -> dict[str, Path]:
    """Site path -> file in ``node_modules``, for every vendored asset; raises if one is missing."""
    modules = root / "node_modules"
    files = {site: modules / source for site, source in _FILES.items()}
    fonts = modules / _FONTS[0]
    if fonts.is_dir():
        for font in sorted(fonts.iterdir()):
            files[f"{_FONTS[1]}/{font.name}"] = font
    missing = [str(path) for path in files.values() if not path.is_file()]
    if missing or not fonts.is_dir():
        raise FileNotFoundError(
            f"node_modules lacks {', '.join(missing) or fonts}; run `make setup` (npm ci from package-lock.json)"
        )
    return files
