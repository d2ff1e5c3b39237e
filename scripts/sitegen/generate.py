"""One generator run: compute every output in memory, then write only what changed.

Order matters for "a failed build leaves the last good output": the spec files
are parsed, every table, value and chart is computed, and every generated text
is checked (``check_outputs``) before the first byte is written, so a bad spec
raises SpecError while ``figures/`` is untouched. A SpecError raised while
computing names the spec file and entry it came from (``SpecSet.locate``).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field, fields
from pathlib import Path

from roofline import SpecError, SpecSet
from roofline.errors import entry_label, shown

from . import render
from .context import load_context, read_specs
from .output import is_generated, json_file, markdown_file, svg_file, write_all_if_changed
from .page import PageContent, PageModuleError
from .pages import failure, page_folders

#: What must never appear in generated Markdown: a shortcode or template tag
#: (pages expand ``{{ … }}`` after this file is written) or active HTML.
_FORBIDDEN = re.compile(r"\{\{|\}\}|\{%|%\}|<\s*script|javascript:", re.IGNORECASE)


@dataclass
class Run:
    """What a run did, for the command line, the hook's log and the benchmark."""

    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    svgs_rendered: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        return (
            f"figures: {len(self.written)} written, {len(self.unchanged)} unchanged,"
            f" {len(self.removed)} removed, {self.svgs_rendered} SVGs rendered in {self.seconds:.2f} s"
        )


def page_contents(root: Path) -> dict[str, PageContent]:
    """Page (relative to docs/) -> what its folder's ``page.py`` computed from the specs under ``root``.

    Any failure is one line naming the module: a SpecError also names the spec file and
    entry it came from (``SpecSet.locate``); anything else raised while computing (a bug)
    names the exception and the line of ``page.py`` it came from.
    """
    ctx = load_context(root)
    contents = {}
    for folder in page_folders(root / "docs"):
        if folder.generator is None:
            continue
        module = folder.module()
        where = folder.where(folder.generator)
        try:
            content = module.build(ctx)
        except PageModuleError as error:
            raise PageModuleError(f"{where}: {error}") from None
        except SpecError as error:
            raise ctx.specs.locate(error) from None
        except Exception as error:
            raise PageModuleError(f"{where}: build() raised {failure(error, folder.generator)}") from None
        if not isinstance(content, PageContent):
            raise PageModuleError(f"{where}: build() must return a PageContent, not {type(content).__name__}")
        for figure in content.figures:
            if not render.alt_text(figure.spec).strip():
                raise PageModuleError(
                    f"{where}: figure {figure.name!r} has no alt text: give its chart a title, as"
                    " sitegen.figures.figure_spec(chart, title, subtitle) does (title and subtitle are its alt text)"
                )
        contents[folder.page] = content
    return contents


def spec_text_holding(specs: SpecSet, pattern: re.Pattern[str]) -> tuple[str, str, str] | None:
    """(file, entry, field) of the first spec text that ``pattern`` finds, or None: which
    file, entry and field to look at when generated text holds something it should not."""
    for kind, entries in (("gpu", specs.gpus), ("model", specs.models), ("model", specs.drafts)):
        for entry_id, record in entries.items():
            label = entry_label(kind, entry_id)
            for spec_field in fields(record):
                value = getattr(record, spec_field.name)
                if isinstance(value, str) and pattern.search(value):
                    return specs.origins.get(label, "roofline/data"), label, spec_field.name
    return None


def check_outputs(outputs: dict[str, bytes], specs: SpecSet | None = None) -> None:
    """Raise SpecError naming the file if any generated Markdown or prose value could act as markup.

    Spec text is escaped where it is written (``escape``), which shows markup and script
    links as the characters they are; this is the last check before anything reaches
    ``figures/``, so a slip fails the build here, with ``figures/`` untouched, not later
    on a page. The error names the generated file and, when the text came from a spec
    (``specs``), that spec's file, entry and field.
    """
    for name, content in outputs.items():
        if name.endswith(".md"):
            texts = {"": content.decode("utf-8")}
        elif name == "values.json":
            texts = {
                f"docs/{page} value '{key}'": value
                for page, values in json.loads(content)["pages"].items()
                for key, value in values.items()
            }
        else:
            continue
        for where, text in texts.items():
            found = _FORBIDDEN.search(text)
            if found:
                generated = f"figures/{name}" + (f" ({where})" if where else "")
                origin = spec_text_holding(specs, _FORBIDDEN) if specs is not None else None
                if origin is not None:
                    file, entry, field_name = origin
                    raise SpecError(
                        f"holds {shown(found.group(0))}, which reached {generated} unescaped",
                        file=file,
                        entry=entry,
                        field=field_name,
                        hint="the spec text is fine; the generator must pass it through sitegen.escape.text",
                    )
                raise SpecError(
                    f"generated text holds {found.group(0)!r}, which a page would read as markup",
                    file=f"figures/{name}",
                    entry=where or None,
                    hint="pass spec text through sitegen.escape.text",
                )


def build_outputs(root: Path, figures: Path, *, rerender: bool, run: Run) -> dict[str, bytes]:
    """File name in ``figures/`` -> its exact bytes.

    ``values.json`` holds each page's values under its own name, so a page
    quotes only what its module computed. Tables and figures share one folder:
    two pages making the same file name is an error, not a silent overwrite.
    An SVG is re-rendered only when its spec changed (or ``rerender``):
    vl-convert is the slow step, and the same spec always gives the same SVG.
    """
    contents = page_contents(root)
    pages = {page: content.values for page, content in contents.items() if content.values}
    outputs: dict[str, bytes] = {"values.json": json_file({"pages": pages}, notice_key="_generated")}
    made_by: dict[str, str] = {}

    def add(name: str, page: str, content: bytes) -> None:
        if name in made_by:
            raise PageModuleError(f"figures/{name} is made for both docs/{made_by[name]} and docs/{page}")
        made_by[name] = page
        outputs[name] = content

    for page, content in contents.items():
        for name, table in content.tables.items():
            add(f"{name}.md", page, markdown_file(table))
        for figure in content.figures:
            spec_bytes = json_file(figure.spec, notice_key="usermeta", wrap="generated", compact=True)
            old_svg = figures / f"{figure.name}.svg"
            if not rerender and _same(figures / f"{figure.name}.vl.json", spec_bytes) and is_generated(old_svg):
                svg_bytes = old_svg.read_bytes()
                image = svg_bytes.decode().partition("\n")[2]
            else:
                image = render.svg(figure.spec)
                svg_bytes = svg_file(image)
                run.svgs_rendered += 1
            add(f"{figure.name}.vl.json", page, spec_bytes)
            add(f"{figure.name}.svg", page, svg_bytes)
            add(f"figure-{figure.name}.md", page, markdown_file(render.snippet(figure, image)))
    check_outputs(outputs, read_specs(root))
    return outputs


def _stale(figures: Path, outputs: dict[str, bytes]) -> list[Path]:
    """Generated files in ``figures/`` that this run did not make (a renamed or dropped figure).

    Dot-files are left alone: they are other runs' temporary files, mid-write
    (two builds may share a checkout, such as a dev server and a test).
    """
    if not figures.is_dir():
        return []
    return [
        path
        for path in sorted(figures.iterdir())
        if path.is_file() and not path.name.startswith(".") and path.name not in outputs and is_generated(path)
    ]


def _same(path: Path, content: bytes) -> bool:
    try:
        return path.read_bytes() == content
    except FileNotFoundError:
        return False


def generate(root: Path, *, rerender: bool = False) -> Run:
    """Regenerate ``root/figures``: write changed files atomically, delete generated files no longer made."""
    started = time.perf_counter()
    run = Run()
    figures = root / "figures"
    outputs = build_outputs(root, figures, rerender=rerender, run=run)
    written = {
        path.name for path in write_all_if_changed({figures / name: content for name, content in outputs.items()})
    }
    for name in outputs:
        (run.written if name in written else run.unchanged).append(name)
    for path in _stale(figures, outputs):
        path.unlink(missing_ok=True)
        run.removed.append(path.name)
    run.seconds = time.perf_counter() - started
    return run


def differences(root: Path) -> list[str]:
    """Files in ``figures/`` that a fresh run (every SVG re-rendered) would change, add or delete."""
    figures = root / "figures"
    outputs = build_outputs(root, figures, rerender=True, run=Run())
    changed = [name for name, content in outputs.items() if not _same(figures / name, content)]
    return changed + [f"{path.name} (stale)" for path in _stale(figures, outputs)]


def values(root: Path, page: str) -> dict[str, str]:
    """The prose values of ``page`` (relative to docs/) as last written to ``figures/values.json``."""
    return json.loads((root / "figures" / "values.json").read_text(encoding="utf-8"))["pages"].get(page, {})
