"""The README's examples are real: each ``$ roofline ...`` block is run and compared."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

import support
from roofline.cli import main

README = Path(__file__).resolve().parent.parent / "README.md"
EXAMPLE = re.compile(r"```console\n\$ roofline (?P<args>[^\n]+)\n(?P<output>.*?)```", re.DOTALL)


def examples() -> list[tuple[str, str]]:
    found = [(match["args"], match["output"]) for match in EXAMPLE.finditer(README.read_text(encoding="utf-8"))]
    assert found, "the README shows no roofline examples"
    return found


@pytest.mark.parametrize(("args", "expected"), examples())
def test_readme_example_output_is_what_the_command_prints(
    args: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        main(shlex.split(args))
    except SystemExit:
        pass
    captured = capsys.readouterr()
    assert captured.out + captured.err == expected


def test_the_worked_example_touches_one_chapter_folder_one_package_module_and_one_nav_line() -> None:
    """The README's claim, checked on its own blocks (``support.readme_example`` reads them)."""
    files, nav = support.readme_example()
    slug = support.example_slug()
    package = [path for path in files if path.startswith("roofline/")]
    chapter = [path for path in files if path.startswith(f"docs/chapters/{slug}/")]
    assert len(package) == 1 and sorted(package + chapter) == sorted(files)
    assert re.fullmatch(rf'- "\d+\. [^"]+": chapters/{slug}/index\.md', nav.strip())
    for path, body in files.items():
        if path.endswith(".py"):
            compile(body, path, "exec")  # each Python file parses as shown


@pytest.mark.slow
def test_the_worked_example_is_built_into_the_tests_site(site) -> None:
    """The tests' site is this checkout with the example written in as shown: its page quotes its value,
    shows its table and figure, and holds its Run cell and calculator (every check a chapter gets is in
    tests/test_every_chapter.py, which runs on it too)."""
    slug = support.example_slug()
    page = site.soup(f"chapters/{slug}/")
    text = " ".join(page.select_one("article").get_text(" ").split())
    assert "each decode step spends 0.160 ms reading one user's 4,096-token cache" in text
    assert "Figure (a). The read grows with the context." in text
    assert page.select_one("article table") is not None
    assert page.select_one("[data-rf-cell][data-rf-filename='cache_growth.py']") is not None
    assert page.select_one("form[data-rf-calc=cache_growth] input[name=reached][step='0.05']") is not None


# ---- "The rules a chapter meets": every rule names a test that exists, and every chapter test is named ----

RULES = re.compile(r"### The rules a chapter meets\n(?P<section>.*?)\n### ", re.DOTALL)
NAMED_TEST = re.compile(r"`(?P<path>(?:tests|docs)/[\w/.-]+\.py)::(?P<test>test_\w+)`")


def rules_table() -> list[tuple[str, str]]:
    """Every (file, test) the README's table of chapter rules names."""
    found = RULES.search(README.read_text(encoding="utf-8"))
    assert found, "the README's 'Writing a chapter' has no '### The rules a chapter meets' section"
    return [(match["path"], match["test"]) for match in NAMED_TEST.finditer(found["section"])]


def test_every_rule_names_a_test_that_exists() -> None:
    named = rules_table()
    assert len(named) >= 15
    for path, test in named:
        source = (README.parent / path).read_text(encoding="utf-8")
        assert re.search(rf"^def {test}\(", source, re.M), f"the README names {path}::{test}, which does not exist"


def test_every_test_run_on_each_chapter_is_named_in_the_rules() -> None:
    """A new check on every chapter (tests/test_every_chapter.py) must say, in the README, what an author writes."""
    named = {test for path, test in rules_table() if path == "tests/test_every_chapter.py"}
    source = (README.parent / "tests" / "test_every_chapter.py").read_text(encoding="utf-8")
    defined = set(re.findall(r"^def (test_\w+)\(", source, re.M))
    assert defined - named == set(), f"add these to the README's 'The rules a chapter meets': {sorted(defined - named)}"
