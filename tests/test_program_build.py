"""What the site build gives the in-page runtime: the wheel, the widgets' markup from their
markers, and the server's headers. Fast checks in CPython, no browser.
"""

from __future__ import annotations

import html as html_module
import re
import urllib.request
import zipfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

import build_wheel
import serve
import support
from sitegen import widgets
from sitegen.markers import MarkerError, Markers
from sitegen.pages import find

ROOT = support.ROOT
DOCS = ROOT / "docs"
CHAPTER = find(DOCS, "prefill-vs-decode")
PROGRAM = CHAPTER.folder / "programs" / "h100_decode_prefill.py"
RUN_CELL = "<!-- roofline:run-cell programs/h100_decode_prefill.py -->"
CALCULATOR = "<!-- roofline:calculator decode_speed -->"


# ---- The wheel -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_wheel_is_pure_complete_and_reproducible(tmp_path: Path) -> None:
    first = build_wheel.build_wheel(tmp_path / "a", cache=None)
    second = build_wheel.build_wheel(tmp_path / "b", cache=None)
    assert first.name.endswith("-py3-none-any.whl")
    assert first.read_bytes() == second.read_bytes()  # fixed timestamps: same sources, same bytes
    with zipfile.ZipFile(first) as archive:
        names = archive.namelist()
        metadata = archive.read(next(name for name in names if name.endswith("dist-info/METADATA"))).decode()
    package = sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "roofline").rglob("*.py"))
    assert sorted(name for name in names if name.endswith(".py")) == package
    assert {"roofline/data/gpus.toml", "roofline/data/models.toml"} <= set(names)
    assert "Requires-Dist" not in metadata  # Pyodide's loadPackage would not install dependencies


def test_check_wheel_refuses_a_wheel_without_spec_data(tmp_path: Path) -> None:
    broken = tmp_path / "roofline-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(broken, "w") as archive:
        archive.writestr("roofline/__init__.py", "")
    with pytest.raises(build_wheel.WheelError, match=r"missing roofline/data/gpus\.toml"):
        build_wheel.check_wheel(broken)
    platform = tmp_path / "roofline-0.1.0-cp311-cp311-linux_x86_64.whl"
    platform.write_bytes(broken.read_bytes())
    with pytest.raises(build_wheel.WheelError, match="not a pure"):
        build_wheel.check_wheel(platform)


def test_the_source_digest_follows_the_package(tmp_path: Path) -> None:
    (tmp_path / "roofline").mkdir()
    (tmp_path / "roofline" / "__init__.py").write_text("x = 1\n")
    before = build_wheel.source_digest(tmp_path)
    (tmp_path / "roofline" / "__init__.py").write_text("x = 2\n")
    assert build_wheel.source_digest(tmp_path) != before


# ---- The markers ---------------------------------------------------------------------------------


def markers(docs: Path = DOCS) -> Markers:
    return Markers(docs=docs, wheel_uri="assets/runtime/wheels/v/w.whl", snapshot_uri="assets/s.gz", version="v")


def test_both_markers_on_the_chapter_become_its_widgets() -> None:
    page = f"<h2>A</h2>\n{RUN_CELL}\n<p>b</p>\n{CALCULATOR}\n"
    html = markers().replace(page, CHAPTER.page, CHAPTER.url)
    assert "roofline:" not in html
    assert html.count("data-rf-cell") == 1 and html.count('data-rf-calc="decode_speed"') == 1
    assert 'data-rf-wheel="../../assets/runtime/wheels/v/w.whl"' in html  # relative to the page
    assert 'data-rf-module="calculators/decode_speed.py"' in html  # served from the chapter's folder
    assert html_module.escape(PROGRAM.read_text(encoding="utf-8")) in html


def test_another_page_names_a_chapters_program_by_path_and_its_calculator_by_name(tmp_path: Path) -> None:
    """The widget test page shows chapter 1's widgets: the program by its path, the calculator by name."""
    page = "<!-- roofline:run-cell ../chapters/prefill-vs-decode/programs/h100_decode_prefill.py -->\n" + CALCULATOR
    html = markers().replace(page, "elsewhere/index.md", "elsewhere/")
    assert 'data-rf-filename="h100_decode_prefill.py"' in html
    assert 'data-rf-module="../chapters/prefill-vs-decode/calculators/decode_speed.py"' in html


def test_any_number_of_run_cells_each_with_its_own_program_and_ids(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "chapters" / "x" / "programs").mkdir(parents=True)
    (docs / "chapters" / "x" / "programs" / "one.py").write_text("print('one')\n")
    (docs / "chapters" / "x" / "programs" / "two.py").write_text("print('two')\n")
    page = "<!-- roofline:run-cell programs/one.py -->\n<!-- roofline:run-cell programs/two.py -->\n" * 2
    html = markers(docs).replace(page, "chapters/x/index.md", "chapters/x/")
    assert html.count("data-rf-cell") == 4
    assert html.count("print(&#x27;one&#x27;)") == 2 and html.count("print(&#x27;two&#x27;)") == 2
    assert len(set(re.findall(r'id="(rf-cell-help-\d+)"', html))) == 4


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            "<!-- roofline:run-cell programs/nope.py -->",
            "runtime hook: docs/chapters/x/index.md: <!-- roofline:run-cell programs/nope.py --> names a missing"
            " program: docs/chapters/x/programs/nope.py does not exist",
        ),
        (
            "<!-- roofline:calculator nope -->",
            "runtime hook: docs/chapters/x/index.md: <!-- roofline:calculator nope -->"
            " docs/chapters/x/calculators/nope.py does not exist (calculators here: none)",
        ),
        ("<!-- roofline:run-cell -->", "names no program; write <!-- roofline:run-cell programs/NAME.py -->"),
        ("<!-- roofline:run-cell ../../../mkdocs.yml -->", "must name a .py file by its path from the page's folder"),
        ("<!-- roofline:run-cell ../../../scripts/serve.py -->", "must name a .py file by its path from the page's"),
        ("<!-- roofline:calculator -->", "needs the calculator's name"),
        ("<!-- roofline:slider x -->", "is not a widget (use run-cell, calculator or quiz)"),
        (CALCULATOR * 2, "appears twice on the page"),
    ],
)
def test_a_bad_marker_fails_the_build_with_one_line(marker: str, message: str) -> None:
    with pytest.raises(MarkerError) as raised:
        markers().replace(f"<p>a</p>\n{marker}\n", "chapters/x/index.md", "chapters/x/")
    assert message in str(raised.value) and "\n" not in str(raised.value)


def test_pages_without_markers_are_left_alone() -> None:
    assert markers().replace("<p>no widgets</p>", "index.md", "") == "<p>no widgets</p>"


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
    source = PROGRAM.read_text(encoding="utf-8")
    cell = widgets.run_cell(source, PROGRAM.name, widgets.RuntimeLinks(wheel="w.whl", version="v"))
    parser = _Textarea()
    parser.feed(cell)
    assert parser.text.removeprefix("\n") == source
    assert html_module.escape(PROGRAM.name) in cell


# ---- The server ----------------------------------------------------------------------------------


@pytest.mark.parametrize("isolated", [True, False])
def test_serve_sends_isolation_headers_and_mime_types(tmp_path: Path, isolated: bool) -> None:
    for name in ("a.wasm", "b.mjs", "c.whl"):
        (tmp_path / name).write_bytes(b"x")
    server = serve.make_server(tmp_path, isolated=isolated, quiet=True)
    base = serve.serve_in_background(server)
    try:
        headers = {name: urllib.request.urlopen(base + name).headers for name in ("a.wasm", "b.mjs", "c.whl")}
    finally:
        server.shutdown()
    assert headers["a.wasm"]["Content-Type"] == "application/wasm"
    assert headers["b.mjs"]["Content-Type"] == "text/javascript"
    assert headers["c.whl"]["Content-Type"] == "application/zip"
    expected = ("same-origin", "require-corp") if isolated else (None, None)
    wasm = headers["a.wasm"]
    assert (wasm["Cross-Origin-Opener-Policy"], wasm["Cross-Origin-Embedder-Policy"]) == expected
    assert server.server_address[0] == "127.0.0.1"
