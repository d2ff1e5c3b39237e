#!/usr/bin/env python3
"""Generate the course site's tables, charts and prose numbers into figures/.

Reads roofline/data/*.toml through the roofline package and writes, each file
starting with a line that says it is generated:
  figures/values.json                 every number each page's prose quotes ({{ n.NAME }}), by page
  figures/NAME.md                     each page's tables ({{ md.NAME }}), such as the chapter's H100 table
  figures/NAME.vl.json, NAME.svg      each chart: Vega-Lite spec and static SVG
  figures/figure-NAME.md              the Markdown that embeds each chart ({{ md.figure-NAME }})
What each page gets comes from the page.py in its folder (docs/chapters/<slug>/, docs/reference/<name>/).
Deterministic; writes only files whose bytes change, each atomically; a bad
spec exits 2 with the package's one-line error (as `roofline validate` does) and
leaves figures/ as it was.

Run:  python scripts/build_figures.py            regenerate (what `make figures` does)
      python scripts/build_figures.py --check    exit 1 if figures/ differs from a fresh run
      python scripts/build_figures.py --root DIR  the same for another checkout (a test's copy)
MkDocs calls it through hooks/figures.py; nothing here depends on MkDocs. ``sitegen`` is
found because scripts/ is on the path (this script's folder; ``make setup`` adds it to the venv).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import roofline
from sitegen.generate import differences, generate
from sitegen.page import PageModuleError
from sitegen.render import FontMissingError

ROOT = Path(__file__).resolve().parent.parent


#: Why only SVGs can differ on an unchanged checkout: vl-convert lays a chart's text out in the
#: first font it finds of the family named (``sitegen.render.STATIC_FONT``), and it finds a system's
#: font before the ones it is handed, so a system-wide Arimo of another version, whose glyphs'
#: widths differ, moves a chart by a pixel.
FONT_HINT = (
    "only SVGs differ: if you changed no chart, this machine has fonts that take precedence over"
    " node_modules' Arimo, in which the committed SVGs were laid out (a system-wide Arimo, such as"
    " Debian's fonts-croscore: `fc-list | grep -i arimo`); run the check where it has none"
)


def stale_hint(changed: list[str]) -> str:
    """The fix to print under the stale files' names: regenerate, or, where only SVGs differ (the
    mark of another machine's fonts), also the fonts to install. An SVG's new size also changes the
    snippet that embeds it (``figure-NAME.md``), so those count as the SVG's."""
    regenerate = "run `make figures` and commit figures/"
    svgs = {name.removesuffix(".svg") for name in changed if name.endswith(".svg")}
    snippets_of_svgs = {f"figure-{name}.md" for name in svgs}
    if svgs and all(name.endswith(".svg") or name in snippets_of_svgs for name in changed):
        return f"{regenerate}; {FONT_HINT}"
    return regenerate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with a fresh run instead of writing")
    parser.add_argument("--rerender", action="store_true", help="re-render every SVG even if its spec is unchanged")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to generate for (default: this one)")
    args = parser.parse_args(argv)
    try:
        if args.check:
            changed = differences(args.root)
            for name in changed:
                print(f"figures/{name} differs from a fresh run", file=sys.stderr)
            if changed:
                print(stale_hint(changed), file=sys.stderr)
            return 1 if changed else 0
        print(generate(args.root, rerender=args.rerender).summary())
        return 0
    except (roofline.SpecError, PageModuleError, FontMissingError) as error:
        print(f"build_figures.py: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a full disk or a read-only checkout: figures/ is left as it was
        where = f" {error.filename}" if error.filename else ""
        print(f"build_figures.py: error: cannot write{where}: {error.strerror or error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
