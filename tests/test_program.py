"""The Run cells' programs under CPython: every file in docs/programs/, and chapter 1's in detail.

One file, three uses: a page shows it in a Run cell, the reader's browser
runs it in Pyodide (tests/test_browser.py compares that output with this one),
and here CPython runs it. Chapter 1's table must be the chapter's table, row
for row, since both come from ``roofline.sweep``.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from support import load_script

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "docs" / "programs" / "h100_decode_prefill.py"
CHAPTER_TABLE = ROOT / "figures" / "h100-decode-prefill.md"


PROGRAMS = sorted((ROOT / "docs" / "programs").glob("*.py"))
MARKER = re.compile(r"<!--\s*roofline:run-cell\s+(\S+)\s*-->")


@pytest.mark.parametrize("program", PROGRAMS, ids=[path.name for path in PROGRAMS])
def test_every_program_runs_cleanly_in_cpython(program: Path) -> None:
    result = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and result.stdout.strip(), program.name


def test_every_program_a_page_names_exists() -> None:
    named = {
        (page.relative_to(ROOT).as_posix(), match)
        for page in (ROOT / "docs").rglob("*.md")
        for match in MARKER.findall(page.read_text(encoding="utf-8"))
    }
    assert ("docs/chapters/prefill-vs-decode.md", "programs/h100_decode_prefill.py") in named
    assert ("docs/chapters/kv-cache.md", "programs/kv_budget.py") in named
    for page, program in named:
        assert (ROOT / "docs" / program).is_file(), f"{page} names {program}"


@pytest.fixture(scope="module")
def output() -> str:
    result = subprocess.run([sys.executable, str(PROGRAM)], capture_output=True, text=True, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    return result.stdout


def text_rows(output: str, table: int = 0) -> list[list[str]]:
    """The ``table``-th aligned text table's body rows, cells split on runs of two or more spaces."""
    lines = output.split("\n\n")[table].splitlines()
    return [re.split(r" {2,}", line.strip()) for line in lines[1:]]


def markdown_rows(markdown: str) -> list[list[str]]:
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def test_program_prints_the_chapter_tables_row_for_row(output: str) -> None:
    for table, name in enumerate(("h100-decode-prefill.md", "h100-decode-prefill-sparse.md")):
        chapter = markdown_rows((CHAPTER_TABLE.parent / name).read_text(encoding="utf-8"))
        assert chapter, f"figures/{name} has no table rows"
        assert text_rows(output, table) == chapter


def test_program_prints_the_issue_numbers(output: str) -> None:
    """Issue 3's worked numbers, with issue 9's ceiling: the table holds the engine's ceiling, 223 tokens/s
    for the 8B at 16-bit (the rule's 209 reads the whole embedding table), 70B needs 2 GPUs, and the
    rule's crossover stays ≈295."""
    rows = {(row[0], row[1]): row for row in text_rows(output)}
    assert rows[("Llama 3.1 8B", "bf16")][4] == "223"
    assert rows[("Llama 3.1 70B", "bf16")][3] == "2"
    assert output.rstrip().endswith("At 16-bit, decode turns compute-bound near 295 users.")


def test_program_prints_the_rule_beside_the_ceiling(output: str) -> None:
    """Issue 9: the Run cell prints both, with the reason for each difference."""
    assert (
        "- decode: the rule gives 209; an engine reads one row of the embedding, not the whole table,"
        " so 223 tokens/s\n" in output
    )
    assert "- prefill: the rule gives 32.5 ms; the output head runs for the last prompt token only" in output
    assert "causal attention over 2,000 tokens brings it to 29.3 ms\n" in output


def test_program_uses_the_shared_table_functions() -> None:
    """The program must build its table with the functions the chapter uses, not its own arithmetic."""
    source = PROGRAM.read_text(encoding="utf-8")
    assert "decode_prefill_rows(" in source and "decode_prefill_table(" in source


class _Textarea(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.inside = False
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.inside = self.inside or tag == "textarea"

    def handle_endtag(self, tag: str) -> None:
        self.inside = self.inside and tag != "textarea"

    def handle_data(self, data: str) -> None:
        if self.inside:
            self.text += data


def test_the_cell_shows_the_file_exactly() -> None:
    """What the reader sees and edits is the file byte for byte (HTML drops the newline after <textarea>)."""
    markup = load_script("runtime_markup", ROOT / "hooks" / "runtime_markup.py")
    source = PROGRAM.read_text(encoding="utf-8")
    cell = markup.run_cell(source, PROGRAM.name, markup.RuntimeLinks(wheel="w.whl", version="v"))
    parser = _Textarea()
    parser.feed(cell)
    assert parser.text.removeprefix("\n") == source
    assert html.escape(PROGRAM.name) in cell
