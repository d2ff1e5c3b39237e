"""Write a new chapter that already passes every test a chapter must pass: ``make new-chapter``.

Run: ``python scripts/new_chapter.py --slug SLUG --title "TITLE" [--short "NAV TITLE"] [--module NAME]``,
or ``make new-chapter SLUG=... TITLE="..."`` (the same, from make's variables).

It writes the README's worked example ("Writing a chapter") under the new slug: the package
module ``roofline/<module>.py``, and in ``docs/chapters/<slug>/`` the page, its generator, one Run
cell, one calculator and a quiz of five questions, with a figure, a table, a quoted value and the
Interview-signal box; then the chapter's line in ``mkdocs.yml``'s nav. ``make new-chapter`` then
runs ``make figures``. The README's example is this script's output for its slug and title, and
a test builds both into a throwaway checkout and runs the linter and the chapter tests on them, so
neither can drift from the rules.

Every name is derived from the slug, so two scaffolded chapters never collide: the module
(``cache-growth`` -> ``cachegrowth``), the program and calculator (``cache_growth``), the figure
(``cache-growth``) and the table (``cache-growth-reads``). Bad input (a slug that is not lower-case
words joined by hyphens, a title with quotes or markup, a folder, module or calculator that exists
already) is refused in one line, and nothing is written.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SLUG = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
#: A title goes into a Markdown heading and a double-quoted YAML string: no quotes, markup or escapes.
TITLE = re.compile(r"[^\"\\<>`{}\[\]\x00-\x1f\x7f]+")
MODULE = re.compile(r"[a-z][a-z0-9_]*")


class ScaffoldError(Exception):
    """One line saying what is wrong and what to do instead."""


@dataclass(frozen=True)
class Names:
    """Everything a chapter's files are named after, from its slug and title."""

    slug: str
    title: str
    short: str
    module: str

    @property
    def name(self) -> str:
        """The program's and the calculator's name (a calculator's name is site-wide)."""
        return self.slug.replace("-", "_")

    def fill(self, template: str) -> str:
        for key, value in (("@SLUG@", self.slug), ("@TITLE@", self.title), ("@MODULE@", self.module)):
            template = template.replace(key, value)
        return sorted_imports(template.replace("@NAME@", self.name))


def sorted_imports(text: str) -> str:
    """``text`` with each run of ``from roofline.<module> import …`` lines in the order of their modules,
    as the linter wants them: the chapter's module sorts before or after ``roofline.forms`` by its name."""
    lines, run = text.splitlines(keepends=True), re.compile(r"from roofline\.(\w+) import ")
    start = 0
    while start < len(lines):
        end = start
        while end < len(lines) and run.match(lines[end]):
            end += 1
        lines[start:end] = sorted(lines[start:end], key=lambda line: run.match(line)[1])
        start = end + 1
    return "".join(lines)


def names(slug: str, title: str, short: str | None = None, module: str | None = None) -> Names:
    """The chapter's names, each checked; ScaffoldError (one line) on the first bad one."""
    if not SLUG.fullmatch(slug or ""):
        raise ScaffoldError(
            f"slug {slug!r}: use lower-case words joined by hyphens, starting with a letter, e.g. SLUG=long-context"
        )
    title = " ".join((title or "").split())
    if not title or not TITLE.fullmatch(title):
        raise ScaffoldError(
            f"title {title!r}: write it in plain words, without quotes, backslashes, brackets or markup, "
            'e.g. TITLE="Prefix Caching: Paying for a Prompt Once"'
        )
    short = " ".join((short or title.split(":", 1)[0]).split())
    if not short or not TITLE.fullmatch(short) or ":" in short:
        raise ScaffoldError(f'short title {short!r}: plain words without a colon, e.g. SHORT="Prefix Caching"')
    module = module or slug.replace("-", "")
    if not MODULE.fullmatch(module):
        raise ScaffoldError(f"module {module!r}: a Python name in lower case, e.g. MODULE=prefixcache")
    return Names(slug, title, short, module)


def planned(found: Names) -> dict[str, str]:
    """Path (from the repository's root) -> text, for every file the chapter starts with."""
    folder = f"docs/chapters/{found.slug}"
    return {
        f"roofline/{found.module}.py": found.fill(PACKAGE_MODULE),
        f"{folder}/index.md": found.fill(PAGE),
        f"{folder}/page.py": found.fill(GENERATOR),
        f"{folder}/programs/{found.name}.py": found.fill(PROGRAM),
        f"{folder}/calculators/{found.name}.py": found.fill(CALCULATOR),
        f"{folder}/quiz.py": found.fill(QUIZ_FILE),
    }


def nav_line(found: Names, number: int) -> str:
    """The chapter's line under Chapters in mkdocs.yml's nav."""
    return f'- "{number}. {found.short}": chapters/{found.slug}/index.md'


def chapter_lines(mkdocs_yml: str) -> list[int]:
    """Indexes of the nav's chapter lines (``- "N. Title": chapters/<slug>/index.md``)."""
    lines = mkdocs_yml.splitlines()
    return [i for i, text in enumerate(lines) if re.match(r'\s*- "[^"]*": chapters/[^/]+/index\.md\s*$', text)]


def with_nav_line(mkdocs_yml: str, found: Names) -> str:
    """``mkdocs.yml``'s text with the chapter's line after the last chapter, numbered next."""
    lines = mkdocs_yml.splitlines(keepends=True)
    chapters = chapter_lines(mkdocs_yml)
    if not chapters:
        raise ScaffoldError(
            'mkdocs.yml: its nav has no chapter line (- "1. Title": chapters/<slug>/index.md) to follow'
        )
    last = chapters[-1]
    indent = lines[last][: len(lines[last]) - len(lines[last].lstrip())]
    lines.insert(last + 1, indent + nav_line(found, len(chapters) + 1) + "\n")
    return "".join(lines)


def taken(root: Path, found: Names) -> str | None:
    """What already holds one of the chapter's names, in one line, or None."""
    if (root / "docs" / "chapters" / found.slug).exists():
        return f"docs/chapters/{found.slug}/ exists already: choose another SLUG"
    if (root / "roofline" / f"{found.module}.py").exists() or (root / "roofline" / found.module).exists():
        return f"roofline/{found.module}.py exists already: choose another SLUG, or name the module with MODULE=..."
    for calculator in (root / "docs").glob(f"**/calculators/{found.name}.py"):
        return f"a calculator named {found.name!r} exists already ({calculator.relative_to(root)}): choose another SLUG"
    if f"chapters/{found.slug}/index.md" in (root / "mkdocs.yml").read_text(encoding="utf-8"):
        return f"mkdocs.yml's nav names chapters/{found.slug}/index.md already: remove that line or choose another SLUG"
    return None


def scaffold(root: Path, found: Names) -> list[str]:
    """Write the chapter's files and its nav line into the checkout at ``root``; the paths written.

    Everything is checked before the first write; should a write fail midway, what was written is
    removed again, so the checkout is as it was."""
    problem = taken(root, found)
    if problem:
        raise ScaffoldError(problem)
    mkdocs_yml = root / "mkdocs.yml"
    before = mkdocs_yml.read_text(encoding="utf-8")
    after = with_nav_line(before, found)
    files = planned(found)
    written: list[Path] = []
    try:
        for relative, text in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("x", encoding="utf-8") as out:  # never over a file that appeared meanwhile
                written.append(path)
                out.write(text)
        mkdocs_yml.write_text(after, encoding="utf-8")
    except OSError as error:
        for path in written:
            path.unlink(missing_ok=True)
        folder = root / "docs" / "chapters" / found.slug
        for empty in sorted((p for p in [folder, *folder.rglob("*")] if p.is_dir()), reverse=True):
            if not any(empty.iterdir()):
                empty.rmdir()
        mkdocs_yml.write_text(before, encoding="utf-8")
        raise ScaffoldError(f"could not write {error.filename}: {error.strerror}; nothing was kept") from None
    return [*files, "mkdocs.yml"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slug", default=os.environ.get("SLUG"), help="the chapter's folder and URL, e.g. moe")
    parser.add_argument("--title", default=os.environ.get("TITLE"), help="the page's title")
    parser.add_argument("--short", default=os.environ.get("SHORT"), help="the nav's title (the title up to a colon)")
    parser.add_argument("--module", default=os.environ.get("MODULE"), help="the package module (the slug, no hyphens)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to write into")
    args = parser.parse_args(argv)
    try:
        if not args.slug or not args.title:
            raise ScaffoldError(
                'give the chapter a slug and a title: make new-chapter SLUG=moe TITLE="Mixture of Experts"'
            )
        found = names(args.slug, args.title, args.short or None, args.module or None)
        written = scaffold(args.root, found)
    except ScaffoldError as error:
        print(f"new_chapter.py: error: {error}", file=sys.stderr)
        return 2
    print("\n".join(f"wrote {path}" for path in written))
    print(f"next: edit them, `make figures`, `make test-fast`; the page is chapters/{found.slug}/ under `make serve`")
    return 0


# ---- The chapter's files: the README's worked example, with its names as placeholders ----------------

PACKAGE_MODULE = '''\
"""One user's KV cache as a decode step reads it: the formulas of "@TITLE@"."""

from __future__ import annotations

from .architecture import kv_cache_bytes
from .performance import Hardware, Pass, Workload, timed


def cache_read(hardware: Hardware, workload: Workload) -> Pass:
    """A decode step's read of one user's KV cache at the workload's context, timed by the
    roofline rule (``timed``: bytes ÷ bandwidth, as the read does no math)."""
    cache = kv_cache_bytes(workload.model, workload.context, workload.kv_precision)
    return timed(hardware, cache, 0.0)
'''

PAGE = """\
---
summary: how one user's KV cache grows with context, and what each step pays to read it.
---

# @TITLE@

On an H100, each decode step spends {{ n.read_4k }} reading one user's 4,096-token
cache of Llama 3.1 8B; {{ fig.@SLUG@ }} follows it as the context grows.

{{ md.@SLUG@-reads }}

{{ md.figure-@SLUG@ }}

<!-- roofline:run-cell programs/@NAME@.py -->

<!-- roofline:calculator @NAME@ -->

<!-- roofline:quiz -->

!!! note "Interview signal"
    **"What does one more token of context cost a decode step?"**

    **Weak:** "Nothing: a decode step handles one new token." That token attends to
    every cached one, so the step reads the whole cache, however short its output.

    **Strong:** "A read of the whole cache, every step: {{ n.read_4k }} on an H100 for
    4,096 tokens of Llama 3.1 8B, growing in step with the context, as
    {{ fig.@SLUG@ }} shows."
"""

GENERATOR = '''\
"""The page's numbers: one value, one table, one figure."""

import altair as alt

from roofline import Hardware, Workload
from roofline import formatting as fmt
from roofline.@MODULE@ import cache_read
from sitegen.context import Context
from sitegen.figures import figure_spec
from sitegen.page import PageContent
from sitegen.tables import markdown_table

GPU, MODEL = "h100-sxm", "llama-3.1-8b"
CONTEXTS = (1024, 4096, 16384, 65536)


def build(ctx: Context) -> PageContent:
    content = PageContent()
    hardware, model = Hardware(ctx.specs.gpu(GPU)), ctx.specs.model(MODEL)
    reads = {tokens: cache_read(hardware, Workload(model, context=tokens)) for tokens in CONTEXTS}
    content.put("read_4k", fmt.milliseconds(reads[4096].seconds))
    rows = [(f"{t:,}", fmt.gigabytes(r.bytes_moved, 2), fmt.milliseconds(r.seconds)) for t, r in reads.items()]
    content.table("@SLUG@-reads", markdown_table(("Context", "Cache", "Read per step"), rows, right={0, 1, 2}))
    points = [{"tokens": t, "ms": r.seconds * 1e3} for t, r in reads.items()]
    chart = alt.Chart(alt.Data(values=points)).mark_line(point=True).encode(x="tokens:Q", y="ms:Q")
    title, subtitle = f"Reading one user's cache, {model.name}", ["Each decode step reads all of it."]
    content.figure("@SLUG@", figure_spec(chart, title, subtitle), "The read grows with the context.")
    return content
'''

PROGRAM = """\
from roofline import Hardware, Workload, builtin_specs
from roofline.@MODULE@ import cache_read

specs = builtin_specs()
read = cache_read(Hardware(specs.gpu("h100-sxm")), Workload(specs.model("llama-3.1-8b"), context=4096))
print(f"{read.bytes_moved / 1e9:.2f} GB read in {read.seconds * 1e3:.3f} ms")
"""

CALCULATOR = '''\
"""One user's cache on a GPU: its size, its read at a share of peak bandwidth, and its share of memory."""

from roofline import Hardware, Workload, builtin_specs
from roofline import formatting as fmt
from roofline.@MODULE@ import cache_read
from roofline.forms import Field, Form, Output

SPECS = builtin_specs()
FORM = Form(
    title="Reading one user's cache",
    legend="Model, GPU and context",
    fields=[
        Field.model("model", "Model", SPECS, default="llama-3.1-8b"),
        Field.gpu("gpu", "GPU", SPECS, default="h100-sxm"),
        Field.number("context", "Context (tokens)", low=1, high=131072, default=4096),
        Field.number("reached", "Share of peak bandwidth reached", low=0.5, high=1, step=0.05, default=0.8),
    ],
    outputs=[
        Output.text("cache", "Cache"),
        Output.text("read", "Read per step"),
        Output.text("share", "Share of the memory the driver reports"),
    ],
)


@FORM.view
def view(model: str, gpu: str, context: int, reached: float) -> dict:
    specs = FORM.specs()  # the built-in specs, and the reader's own GPU or model when the page sends one
    hardware = Hardware(specs.gpu(gpu))
    read = cache_read(hardware, Workload(specs.model(model), context=context))
    return {
        "cache": fmt.gigabytes(read.bytes_moved, 2),
        "read": fmt.milliseconds(read.seconds / reached),
        "share": f"{read.bytes_moved / hardware.addressable_memory_bytes:.2%}",
    }
'''


QUIZ_FILE = '''\
"""The chapter's quiz: five kinds of question on one user's cache read, each drawn afresh and
answered by the package (``roofline.quiz`` explains templates, draws and grading)."""

from roofline import Hardware, Workload, builtin_specs
from roofline.@MODULE@ import cache_read
from roofline.quiz import Quiz, Slip, Solution, Step, Template, words

SPECS = builtin_specs()
GPUS = ("h100-sxm", "h200", "a100-80gb", "l40s")
#: Models whose cache grows in step with the context (no sliding window caps it).
MODELS = ("llama-3.1-8b", "llama-3.1-70b", "llama-3.2-1b")
CONTEXTS = (1024, 4096, 16384, 65536)
BITS = "you counted bits where the cache is counted in bytes (8 bits a byte)."


def _read(p: dict, context: int):
    return cache_read(Hardware(SPECS.gpu(p["gpu"])), Workload(SPECS.model(p["model"]), context=context))


def cache_size(p: dict) -> Solution:
    read = _read(p, p["context"])
    answer = read.bytes_moved / 1e9
    per_token = read.bytes_moved / p["context"] / 1e3
    steps = (
        Step("Cache per token (keys and values, every layer)", per_token, "kB"),
        Step("Times the context", answer, "GB"),
    )
    return Solution(answer, steps, (Slip("bits", answer * 8, BITS),), words(p, SPECS))


def read_time(p: dict) -> Solution:
    read = _read(p, p["context"])
    answer = read.seconds * 1e3
    steps = (Step("Cache read", read.bytes_moved / 1e9, "GB"), Step("Read time = bytes ÷ bandwidth", answer, "ms"))
    return Solution(answer, steps, (Slip("bits", answer * 8, BITS),), words(p, SPECS))


def batch_read(p: dict) -> Solution:
    read = _read(p, p["context"])
    one = read.seconds * 1e3
    answer = one * p["batch"]
    steps = (
        Step("One user's cache read", one, "ms"),
        Step("Times the users: each step reads every cache", answer, "ms"),
    )
    slip = Slip("per-user", one, "you timed one user's cache; a step reads every user's cache.")
    return Solution(answer, steps, (slip, Slip("bits", answer * 8, BITS)), words(p, SPECS))


def memory_share(p: dict) -> Solution:
    read = _read(p, p["context"])
    memory = Hardware(SPECS.gpu(p["gpu"])).addressable_memory_bytes
    answer = 100 * read.bytes_moved / memory
    steps = (
        Step("Cache", read.bytes_moved / 1e9, "GB"),
        Step("Memory the driver reports", memory / 1e9, "GB"),
        Step("Share = cache ÷ memory", answer, "%"),
    )
    return Solution(answer, steps, (Slip("bits", answer * 8, BITS),), words(p, SPECS))


def context_for(p: dict) -> Solution:
    per_token_s = _read(p, 1).seconds
    answer = p["ms"] * 1e-3 / per_token_s
    steps = (
        Step("Read time a token of context adds", per_token_s * 1e6, "µs"),
        Step("Context = the time ÷ that", answer, "tokens"),
    )
    return Solution(answer, steps, (Slip("bits", answer / 8, BITS),), words(p, SPECS))


QUIZ = Quiz(
    "@SLUG@",
    [
        Template(
            "cache-size",
            "How large is one user's {context}-token cache of {model}?",
            {"model": MODELS, "gpu": GPUS, "context": CONTEXTS},
            cache_size,
            "GB",
        ),
        Template(
            "read-time",
            "How long does a decode step on one {gpu} spend reading one user's {context}-token cache of {model}?",
            {"model": MODELS, "gpu": GPUS, "context": CONTEXTS},
            read_time,
            "ms",
        ),
        Template(
            "batch-read",
            "How long does a step on one {gpu} spend reading {batch} users' {context}-token caches of {model}?",
            {"model": MODELS, "gpu": GPUS, "context": CONTEXTS, "batch": (4, 8, 16, 32)},
            batch_read,
            "ms",
        ),
        Template(
            "memory-share",
            "What share of one {gpu}'s driver-reported memory does one {context}-token cache of {model} fill?",
            {"model": MODELS, "gpu": GPUS, "context": CONTEXTS},
            memory_share,
            "%",
        ),
        Template(
            "context-for",
            "At what context does reading one user's cache of {model} on one {gpu} take {ms} ms a step?",
            {"model": MODELS, "gpu": GPUS, "ms": (0.1, 0.5, 1, 2)},
            context_for,
            "tokens",
        ),
    ],
)
view = QUIZ.view
'''


if __name__ == "__main__":
    sys.exit(main())
