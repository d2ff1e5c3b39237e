#!/usr/bin/env python3
"""Generate the course site's tables, charts and prose numbers into figures/.

Reads roofline/data/*.toml through the roofline package and writes, each file
starting with a line that says it is generated:
  figures/values.json                 every number each page's prose quotes ({{ n.NAME }}), by page
  figures/NAME.md                     each page's tables ({{ md.NAME }}), such as the chapter's H100 table
  figures/NAME.vl.json, NAME.svg      each chart: Vega-Lite spec and static SVG
  figures/figure-NAME.md              the Markdown that embeds each chart ({{ md.figure-NAME }})
What each page gets comes from its own module in scripts/sitegen/pages/.
Deterministic; writes only files whose bytes change, each atomically; a bad
spec exits 2 with the package's one-line error (as `roofline validate` does) and
leaves figures/ as it was.

Run:  python scripts/build_figures.py            regenerate (what `make figures` does)
      python scripts/build_figures.py --check    exit 1 if figures/ differs from a fresh run
MkDocs calls it through hooks/figures.py; nothing here depends on MkDocs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# This checkout's package and helpers, even when another checkout is installed in the venv.
for entry in (str(ROOT / "scripts"), str(ROOT)):
    if entry in sys.path:
        sys.path.remove(entry)
    sys.path.insert(0, entry)

from sitegen.generate import differences, generate  # noqa: E402
from sitegen.page import PageModuleError  # noqa: E402

import roofline  # noqa: E402

if Path(roofline.__file__).resolve().parent != ROOT / "roofline":
    raise ImportError(f"imported roofline from {roofline.__file__}, not from {ROOT}; a stale module is cached")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with a fresh run instead of writing")
    parser.add_argument("--rerender", action="store_true", help="re-render every SVG even if its spec is unchanged")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        if args.check:
            changed = differences(args.root)
            for name in changed:
                print(f"figures/{name} differs from a fresh run", file=sys.stderr)
            if changed:
                print("run `make figures` and commit figures/", file=sys.stderr)
            return 1 if changed else 0
        print(generate(args.root, rerender=args.rerender).summary())
        return 0
    except (roofline.SpecError, PageModuleError) as error:
        print(f"build_figures.py: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a full disk or a read-only checkout: figures/ is left as it was
        where = f" {error.filename}" if error.filename else ""
        print(f"build_figures.py: error: cannot write{where}: {error.strerror or error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
