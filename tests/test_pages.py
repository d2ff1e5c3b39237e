"""The one loader (sitegen.pages), the nav check and the markers: every contract mistake an author
can make fails with one line naming the page, the file or marker, the key, and the fix.

Each test writes a small page folder into a temporary docs/ and runs the same code the
build runs (generate, markers, navigation); tests/test_site.py builds two of these
mistakes through MkDocs itself, to show the hooks pass the line on as it is.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

import support
from sitegen.generate import page_contents
from sitegen.markers import MarkerError, Markers
from sitegen.navigation import NavError, chapter_list
from sitegen.page import PageModuleError
from sitegen.pages import chapters, find, page_folders
from sitegen.render import AltTextError, check_alt_text

GOOD_PAGE = """
from sitegen.page import PageContent

from . import helper


def build(ctx):
    content = PageContent()
    content.put("answer", helper.ANSWER)
    return content
"""

GOOD_CALCULATOR = """
from roofline.forms import Field, Form, Output

FORM = Form(
    title="T",
    legend="L",
    fields=[Field.number("users", "Users", low=1, high=10, default=2)],
    outputs=[Output.text("speed", "Speed")],
)


@FORM.view
def view(users):
    return {"speed": str(users)}
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A checkout with this repo's spec files and one chapter folder, ``docs/chapters/x/``."""
    shutil.copytree(support.ROOT / "roofline" / "data", tmp_path / "roofline" / "data")
    return write(
        tmp_path,
        {
            "docs/chapters/x/index.md": "---\nsummary: what x teaches.\n---\n\n# X\n\n{{ n.answer }}\n",
            "docs/chapters/x/page.py": GOOD_PAGE,
            "docs/chapters/x/helper.py": "ANSWER = '42'\n",
            "docs/chapters/x/calculators/c.py": GOOD_CALCULATOR,
        },
    )


def one_line(error: pytest.ExceptionInfo) -> str:
    text = str(error.value)
    assert "\n" not in text and "Traceback" not in text, text
    return text


def test_a_page_folder_is_found_and_its_modules_import_relatively_without_bytecode(root: Path) -> None:
    folder = find(root / "docs", "x")
    assert (folder.page, folder.url, folder.is_chapter) == ("chapters/x/index.md", "chapters/x/", True)
    assert list(folder.calculators) == ["c"] and [c.slug for c in chapters(root / "docs")] == ["x"]
    assert page_contents(root)["chapters/x/index.md"].values == {"answer": "42"}
    assert not list((root / "docs").rglob("__pycache__"))  # MkDocs would watch and copy it


@pytest.mark.parametrize(
    ("page", "message"),
    [
        ("X = 1\n", "docs/chapters/x/page.py: needs build(ctx) returning the page's PageContent"),
        ("def build(ctx:\n", "docs/chapters/x/page.py: cannot import: SyntaxError"),
        ("import not_a_module\n", "docs/chapters/x/page.py: cannot import: ModuleNotFoundError"),
        (
            "def build(ctx):\n    return 1 / 0\n",
            "docs/chapters/x/page.py: build() raised ZeroDivisionError: division by zero (page.py, line 2)",
        ),
        ("def build(ctx):\n    return {}\n", "docs/chapters/x/page.py: build() must return a PageContent, not dict"),
        (
            "from sitegen.page import PageContent\n\n\ndef build(ctx):\n    content = PageContent()\n"
            "    content.figure('bare', {'mark': 'point'}, 'No title.')\n    return content\n",
            "docs/chapters/x/page.py: figure 'bare' has no alt text: give its chart a title, as"
            " sitegen.figures.figure_spec(chart, title, subtitle) does",
        ),
    ],
    ids=["no build", "syntax error", "bad import", "a bug", "not PageContent", "figure without alt text"],
)
def test_a_broken_page_module_is_one_line(root: Path, page: str, message: str) -> None:
    write(root, {"docs/chapters/x/page.py": page})
    with pytest.raises(PageModuleError) as error:
        page_contents(root)
    assert one_line(error).startswith(message)


def markers(root: Path) -> Markers:
    return Markers(docs=root / "docs", wheel_uri="w.whl", snapshot_uri="s.gz", version="v")


def widget(root: Path) -> str:
    return markers(root).replace("<!-- roofline:calculator c -->", "chapters/x/index.md", "chapters/x/")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            ('{"speed": str(users)}', '{"spede": str(users)}'),
            "view(defaults): output 'speed' (text): the answer has no 'speed'; return it from view()",
        ),
        (('{"speed": str(users)}', '{"speed": str(users), "fits": \'no\'}'), "the answer's 'fits' must be a bool"),
        (("return {", "raise KeyError('x')\n    return {"), "view(defaults) raised KeyError: 'x' (c.py, line 13)"),
        (("default=2", "default=0"), "docs/chapters/x/calculators/c.py: FormError: field 'users': default 0 is not"),
        (("FORM = Form(", "SHAPE = Form("), "docs/chapters/x/calculators/c.py: NameError: name 'FORM' is not defined"),
        (("@FORM.view\n", ""), "docs/chapters/x/calculators/c.py: needs FORM = Form(...) and its view decorated"),
        (
            ('Output.text("speed", "Speed")', 'Output("speed", "gauge", "Speed")'),
            "output 'speed': kind 'gauge' is not registered (kinds: text, bar, stack, timeline, vega;",
        ),
    ],
    ids=["missing output", "optional key", "view raises", "bad field", "no FORM", "no decorator", "unknown kind"],
)
def test_a_broken_calculator_is_one_line_naming_page_marker_and_key(root: Path, change, message: str) -> None:
    path = root / "docs" / "chapters" / "x" / "calculators" / "c.py"
    text = path.read_text()
    assert change[0] in text
    path.write_text(text.replace(change[0], change[1], 1))
    with pytest.raises(MarkerError) as error:
        widget(root)
    line = one_line(error)
    assert line.startswith("runtime hook: docs/chapters/x/index.md: <!-- roofline:calculator c --> ")
    assert message in line


EXAMPLE_MARKER = "<!-- roofline:calculator c example=busy -->"


def example_widget(root: Path, examples: str) -> str:
    """The calculator c with the page's example ``busy``, where page.py declares ``examples``."""
    page = root / "docs" / "chapters" / "x" / "page.py"
    page.write_text(page.read_text() + f"\nEXAMPLES = {examples}\n")
    return markers(root).replace(EXAMPLE_MARKER, "chapters/x/index.md", "chapters/x/")


def test_a_calculator_offers_the_pages_example_as_a_button(root: Path) -> None:
    html = example_widget(root, "{'busy': {'users': helper.ANSWER and 7}}")
    assert 'data-rf-example="{&quot;users&quot;:7}"' in html
    assert ">Load this section's example</button>" in html
    assert "rf-calc__example" not in widget(root)  # no example named, no button


@pytest.mark.parametrize(
    ("examples", "message"),
    [
        ("{'busy': {'users': 11}}", "field users must be a whole number from 1 to 10, got 11"),
        ("{'busy': {'users': 2, 'gpu': 'h100-sxm'}}", "field gpu is not a field of this calculator (fields: users)"),
        ("{'busy': {}}", "field users is missing"),
        ("{'calm': {'users': 2}}", "does not exist (examples there: calm); add it, built from the prose's constants"),
    ],
    ids=["out of range", "unknown field", "missing field", "unknown example"],
)
def test_a_bad_example_is_one_line_naming_page_calculator_and_field(root: Path, examples: str, message: str) -> None:
    with pytest.raises(MarkerError) as error:
        example_widget(root, examples)
    line = one_line(error)
    assert line.startswith(
        f"runtime hook: docs/chapters/x/index.md: {EXAMPLE_MARKER} docs/chapters/x/page.py: EXAMPLES['busy']"
        " for calculator c"
    )
    assert message in line, line


def test_a_calculator_name_used_twice_is_one_line(root: Path) -> None:
    write(root, {"docs/chapters/y/index.md": "# Y\n", "docs/chapters/y/calculators/c.py": GOOD_CALCULATOR})
    with pytest.raises(PageModuleError) as error:
        page_folders(root / "docs")
    assert one_line(error) == (
        "docs/chapters/y/calculators/c.py: calculator 'c' is also in docs/chapters/x/index.md;"
        " calculator names are site-wide (the worker and the address bar use them): rename one"
    )


def test_the_calculator_renders_from_its_declaration(root: Path) -> None:
    html = widget(root)
    assert 'data-rf-calc="c"' in html and 'data-rf-module="calculators/c.py"' in html
    assert 'min="1" max="10" value="2"' in html and 'data-rf-describe="a whole number from 1 to 10"' in html
    assert '<dd data-rf-out="speed">2</dd>' in html


def test_a_chapter_missing_from_the_nav_is_one_line_with_the_line_to_add(root: Path) -> None:
    assert chapter_list(root / "docs", [{"Chapters": [{"1. X": "chapters/x/index.md"}]}]) == (
        "1. [X](chapters/x/index.md):\n   what x teaches.\n   About 1 minute to read.\n"
    )
    with pytest.raises(NavError) as error:
        chapter_list(root / "docs", [{"Home": "index.md"}])
    assert one_line(error) == (
        "docs/chapters/x/index.md is not in mkdocs.yml's nav: add one line under Chapters,"
        ' - "1. Its short title": chapters/x/index.md'
    )
    write(root, {"docs/chapters/x/index.md": "# X\n"})
    with pytest.raises(NavError) as error:
        chapter_list(root / "docs", [{"1. X": "chapters/x/index.md"}])
    assert "docs/chapters/x/index.md: needs a summary for the home page's list of chapters" in one_line(error)


@pytest.mark.parametrize("image", ['<img src="a.svg">', '<img alt="" src="a.svg">', "<img alt='  ' src=a.svg>"])
def test_an_image_without_alt_text_is_one_line(image: str) -> None:
    with pytest.raises(AltTextError) as error:
        check_alt_text(f"<p>{image}</p>", "docs/chapters/x/index.md")
    assert one_line(error).startswith("docs/chapters/x/index.md: the image 'a.svg' has no alt text;")
    check_alt_text('<img alt="A chart of x." src="a.svg">', "docs/chapters/x/index.md")
