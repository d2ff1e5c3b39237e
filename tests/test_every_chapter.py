"""Every chapter, checked the same way: a new chapter folder gets all of this with no test edits.

Fast (``make test-fast``), for each chapter of this checkout (``docs/chapters/<slug>/``):

- its values: every ``{{ n.NAME }}`` its page quotes is computed, and every value its
  ``page.py`` computes is quoted (a number nobody reads can drift unseen);
- its figures and tables: each is shown on the page, and each figure has alt text;
- its calculators: the view answers every declared output at the defaults and at each
  field's bounds (the others at their defaults), or the form refuses the input in one
  line naming the field; and the markup the build writes carries the declaration;
- its programs: each runs cleanly in CPython.

Slow, on the tests' site (``conftest.site``: this checkout plus the README's worked
example and the widget test page, built once), for each of its chapters:

- the built page: no shortcode left, every figure lettered in reading order with its alt text;
- Pyodide under Node, booted once from the site's own wheel and snapshot: every calculator
  request above and every program gives exactly what CPython gives;
- Chromium: one smoke test per page with widgets: each Run cell prints what CPython prints,
  each calculator shows CPython's answer after an input at a bound, and refuses a bad input.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from html import unescape
from pathlib import Path
from typing import Any

import pytest

import hang_guard
import support
from roofline import SpecError
from roofline.forms import InputError, plain
from sitegen.pages import chapters, find
from sitegen.render import alt_text
from sitegen.widgets import KINDS, RuntimeLinks, calculator, check_answer

ROOT = support.ROOT
DOCS = ROOT / "docs"
CHAPTERS = [chapter.slug for chapter in chapters(DOCS)]
QUOTED = re.compile(r"\{\{\s*n\.([\w-]+)\s*\}\}")
#: Floats computed in CPython and in Pyodide may differ in the last bit (libm); nothing more.
REL = 1e-12


def _calculators(docs: Path, slugs: list[str]) -> list[tuple[str, str]]:
    return [(slug, name) for slug in slugs for name in find(docs, slug).calculators]


def _programs(docs: Path, slugs: list[str]) -> list[tuple[str, str]]:
    return [(slug, path.name) for slug in slugs for path in find(docs, slug).programs]


CALCULATORS = _calculators(DOCS, CHAPTERS)
PROGRAMS = _programs(DOCS, CHAPTERS)


@pytest.fixture(scope="module")
def contents(page_contents) -> dict[str, Any]:
    """Slug -> what its page.py computes from this checkout's specs (conftest's, computed once)."""
    return {slug: page_contents[f"chapters/{slug}/index.md"] for slug in CHAPTERS}


def answer(view: Any, request: dict[str, Any]) -> dict[str, Any]:
    """The view's answer, or the error the form (or the package) refuses the request with, as the worker gives it."""
    try:
        return view(**request)
    except InputError as error:
        return {"error": str(error), "fields": list(error.fields)}
    except SpecError as error:
        return {"error": str(error)}


# ---- This checkout's chapters, in CPython ----------------------------------------------------------


@pytest.mark.parametrize("slug", CHAPTERS)
def test_every_quoted_value_is_computed_and_every_computed_value_quoted(slug: str, contents) -> None:
    source = (DOCS / "chapters" / slug / "index.md").read_text(encoding="utf-8")
    quoted, computed = set(QUOTED.findall(source)), set(contents[slug].values)
    assert quoted - computed == set(), f"quoted but not computed by page.py: {sorted(quoted - computed)}"
    assert computed - quoted == set(), f"computed by page.py but never quoted: {sorted(computed - quoted)}"


@pytest.mark.parametrize("slug", CHAPTERS)
def test_every_chapter_has_one_interview_box_in_one_style(slug: str) -> None:
    """As the course's chapters do: the question, a weak answer and why it is weak, then a strong one."""
    source = (DOCS / "chapters" / slug / "index.md").read_text(encoding="utf-8")
    count = source.count('!!! note "Interview signal"')
    assert count == 1, f"{slug}/index.md has {count} Interview-signal boxes, not one: {INTERVIEW_SHAPE}"
    box = source.split('!!! note "Interview signal"', 1)[1].split("\n## ", 1)[0]
    assert "    **Weak:**" in box and "    **Strong:**" in box and box.index("**Weak:**") < box.index("**Strong:**"), (
        f"{slug}/index.md: the Interview-signal box needs a weak answer, then a strong one: {INTERVIEW_SHAPE}"
    )
    assert "admonition" not in box and "!!! failure" not in box and "!!! success" not in box, (
        f"{slug}/index.md: no admonition inside the Interview-signal box: {INTERVIEW_SHAPE}"
    )


#: The box's shape, as the README's worked example writes it.
INTERVIEW_SHAPE = (
    'write `!!! note "Interview signal"`, then, indented by four spaces, the question in bold, a paragraph '
    "starting **Weak:** (an answer and why it falls short) and one starting **Strong:** (README, "
    "'The rules a chapter meets')"
)


@pytest.mark.parametrize("slug", CHAPTERS)
def test_every_figure_and_table_is_shown_and_every_figure_has_alt_text(slug: str, contents) -> None:
    source = (DOCS / "chapters" / slug / "index.md").read_text(encoding="utf-8")
    content = contents[slug]
    for figure in content.figures:
        assert f"{{{{ md.figure-{figure.name} }}}}" in source, f"figure {figure.name!r} is made but not shown"
        assert alt_text(figure.spec).strip(), f"figure {figure.name!r} has no alt text"
    for table in content.tables:
        assert f"{{{{ md.{table} }}}}" in source, f"table {table!r} is made but not shown"


@pytest.mark.parametrize(("slug", "name"), CALCULATORS, ids=[f"{s}-{n}" for s, n in CALCULATORS])
def test_every_calculator_answers_at_its_defaults_and_at_each_bound(slug: str, name: str) -> None:
    module = find(DOCS, slug).calculator(name)
    form = module.FORM
    rules = {rule.fields for rule in form.rules}
    for request in form.requests_at_bounds():
        result = answer(module.view, request)
        if "error" in result:
            # Within bounds, only one of the form's rules (naming every field it reads), or the package
            # for a deployment it cannot serve (the page shows the line), may refuse; either way in one
            # line, never a traceback.
            assert "\n" not in result["error"], (request, result)
            assert "fields" not in result or tuple(result["fields"]) in rules, (request, result)
            continue
        check_answer(form, result)
        json.dumps(result, allow_nan=False)  # the worker sends it as JSON


@pytest.mark.parametrize(("slug", "name"), CALCULATORS, ids=[f"{s}-{n}" for s, n in CALCULATORS])
def test_every_calculator_refuses_a_value_past_each_bound_in_one_line(slug: str, name: str) -> None:
    module = find(DOCS, slug).calculator(name)
    for field in module.FORM.fields:
        if field.kind == "choice":
            bad = [field.choices[0][0] + "-x"]
        else:
            bad = [field.low - field.step, field.high + field.step, str(field.default), True]
        for value in bad:
            with pytest.raises(InputError) as refused:
                module.view(**dict(module.FORM.defaults, **{field.name: value}))
            assert refused.value.fields == (field.name,)
            assert f"field '{field.name}': must be {field.describe()}" in str(refused.value)


@pytest.mark.parametrize(("slug", "name"), CALCULATORS, ids=[f"{s}-{n}" for s, n in CALCULATORS])
def test_every_calculator_markup_carries_its_declaration(slug: str, name: str) -> None:
    module = find(DOCS, slug).calculator(name)
    form = module.FORM
    initial = module.view(**form.defaults)
    html = calculator(name, form, initial, RuntimeLinks(wheel="w.whl", version="v"), f"calculators/{name}.py")
    for field in form.fields:
        assert f'name="{field.name}"' in html and "data-rf-describe=" in html
        if field.kind == "number":
            assert f'step="{plain(field.step)}" min="{plain(field.low)}" max="{plain(field.high)}"' in html
    for output in form.outputs:
        if KINDS[output.kind].place == "row":
            assert f'data-rf-out="{output.name}"' in html
        else:
            assert f'data-rf-draw="{output.kind}" data-rf-key="{output.name}"' in html
    rules = json.loads(unescape(re.search(r'data-rf-rules="([^"]*)"', html).group(1)))
    assert [rule["message"] for rule in rules] == [rule.message for rule in form.rules]


@pytest.mark.parametrize(("slug", "program"), PROGRAMS, ids=[f"{s}-{p}" for s, p in PROGRAMS])
def test_every_program_runs_cleanly_in_cpython(slug: str, program: str) -> None:
    path = DOCS / "chapters" / slug / "programs" / program
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, f"{slug}/programs/{program} exited {done.returncode}:\n{done.stderr}"
    assert done.stderr == "", (
        f"{slug}/programs/{program} wrote to stderr (a Run cell shows it as an error):\n{done.stderr}"
    )
    assert done.stdout.strip(), f"{slug}/programs/{program} printed nothing: a Run cell shows what it prints"


# ---- The tests' site: every chapter, the worked example included ------------------------------------

SITE_CHAPTERS = support.site_chapters()

#: CPython's answers in the tests' site's own checkout (its package holds the worked example's module).
CPYTHON = """
import json, subprocess, sys
from pathlib import Path
from sitegen.pages import chapters
from roofline import SpecError
from roofline.forms import InputError

found = {"calculators": {}, "programs": {}}
for chapter in chapters(Path("docs").resolve()):
    for name in chapter.calculators:
        module = chapter.calculator(name)
        requests, answers = module.FORM.requests_at_bounds(), []
        for request in requests:
            try:
                answers.append(module.view(**request))
            except InputError as error:
                answers.append({"error": str(error), "fields": list(error.fields)})
            except SpecError as error:
                answers.append({"error": str(error)})
        found["calculators"][name] = {"path": str(chapter.calculators[name]), "requests": requests, "answers": answers}
    for program in chapter.programs:
        # As `python PROGRAM` runs it, but with this checkout's package first on the path (the cwd).
        run = f"import runpy; runpy.run_path({str(program)!r}, run_name='__main__')"
        done = subprocess.run([sys.executable, "-c", run], capture_output=True, text=True, check=False)
        found["programs"][str(program)] = {"returncode": done.returncode, "output": done.stdout, "stderr": done.stderr}
print(json.dumps(found))
"""


@pytest.fixture(scope="session")
def cpython(site) -> dict[str, Any]:
    """Every calculator's requests and answers, and every program's output, in CPython, in the site's checkout."""
    done = subprocess.run([sys.executable, "-c", CPYTHON], capture_output=True, text=True, cwd=site.root, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="session")
def pyodide(site, node, cpython, tmp_path_factory) -> dict[str, Any]:
    """The same requests and programs in Pyodide under Node, booted once from the site's wheel and snapshot."""
    runtime = site.docs / "javascripts" / "runtime"
    folder = tmp_path_factory.mktemp("pyodide")
    fixture = {
        "pyodide": str(ROOT / "node_modules" / "pyodide"),
        "wheel": str(next((site.directory / "assets" / "runtime" / "wheels").rglob("*.whl"))),
        "snapshot": str(next((site.directory / "assets" / "runtime" / "snapshots").glob("*.snapshot.gz"))),
        "modules": [{"name": path.name, "path": str(path)} for path in sorted(runtime.glob("*.py"))],
        "calculators": [
            {"name": name, "path": entry["path"], "requests": entry["requests"]}
            for name, entry in cpython["calculators"].items()
        ],
        "programs": [{"path": path, "filename": Path(path).name} for path in cpython["programs"]],
        "out": str(folder / "answers.json"),
    }
    (folder / "fixture.json").write_text(json.dumps(fixture), encoding="utf-8")
    script = ROOT / "tests" / "node" / "every_widget.mjs"
    # Every calculator request of the site in one Pyodide: minutes under load, bounded by its own timeout.
    with hang_guard.extended(600):
        done = subprocess.run(
            [node, str(script), str(folder / "fixture.json")], capture_output=True, text=True, timeout=600, check=False
        )
    assert done.returncode == 0, "\n".join(line[:300] for line in (done.stdout + done.stderr).splitlines()[-40:])
    return json.loads((folder / "answers.json").read_text(encoding="utf-8"))


def assert_same(actual: Any, expected: Any, where: str) -> None:
    """Equal, floats to REL."""
    if isinstance(expected, float) and isinstance(actual, (int, float)):
        assert math.isclose(actual, expected, rel_tol=REL, abs_tol=0.0), f"{where}: {actual} != {expected}"
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and sorted(actual) == sorted(expected), f"{where}: keys differ"
        for key in expected:
            assert_same(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{where}: lengths differ"
        for index, (one, other) in enumerate(zip(actual, expected, strict=True)):
            assert_same(one, other, f"{where}[{index}]")
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


@pytest.mark.slow
@pytest.mark.parametrize("slug", SITE_CHAPTERS)
def test_the_built_chapter_letters_its_figures_and_each_has_alt_text(slug: str, site) -> None:
    soup = site.soup(f"chapters/{slug}/")
    article = soup.select_one("article")
    assert not re.search(r"\{\{\s*(n|md|fig|nav)\.", article.get_text()), "a shortcode is left on the page"
    assert "<!-- roofline:" not in str(article), "a widget marker is left on the page"
    figures = article.select("figure.roofline-figure")
    letters = [figure.select_one("figcaption").get_text()[:11] for figure in figures]
    assert letters == [f"Figure ({letter})." for letter in "abcdefghijklmnopqrstuvwxyz"[: len(figures)]]
    for figure in figures:
        image = figure.select_one("img")
        assert image is not None and image.get("alt", "").strip(), figure.get("id")
    assert (site.root / "docs" / "chapters" / slug / "index.md").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("slug", SITE_CHAPTERS)
def test_every_built_calculator_shows_its_defaults_answer_before_python_starts(slug: str, site, cpython) -> None:
    """What a reader sees before Python boots (or with scripts off): the build's answer at the defaults.

    Checked here on the built page rather than first thing in a browser test: tests sharing one
    browser page may run in any order, so none of them can count on seeing the page untouched.
    """
    soup = site.soup(f"chapters/{slug}/")
    for name in find(site.docs, slug).calculators:
        entry = cpython["calculators"][name]
        defaults, answer = entry["requests"][0], entry["answers"][0]  # requests_at_bounds: the defaults first
        form = soup.select_one(f"form[data-rf-calc={name}]")
        assert form is not None, name
        assert form["data-state"] == "static", name
        for field, value in defaults.items():
            control = form.select_one(f"[name={field}]")
            chosen = control.select_one("option[selected]") if control.name == "select" else control
            assert chosen["value"] == support.shown_number(value), (name, field)
        outputs = {element["data-rf-out"]: element.get_text() for element in form.select("[data-rf-out]")}
        compared = [key for key in outputs if key in answer]
        assert compared, f"{name}: no text output of its view on the built page"
        for key in compared:
            assert outputs[key] == str(answer[key]), (name, key)


@pytest.mark.slow
@pytest.mark.node
@pytest.mark.parametrize("slug", SITE_CHAPTERS)
def test_every_calculator_and_program_gives_in_pyodide_what_cpython_gives(slug: str, site, cpython, pyodide) -> None:
    assert pyodide["snapshot"] is True, pyodide["fallback"]
    folder = find(site.docs, slug)
    for name in folder.calculators:
        expected = cpython["calculators"][name]["answers"]
        assert_same(pyodide["calculators"][name], expected, name)
        assert any("error" not in one for one in expected), f"{name}: no request answered"
    for program in folder.programs:
        ran = cpython["programs"][str(program)]
        assert ran["returncode"] == 0 and ran["stderr"] == "", ran["stderr"]
        assert pyodide["programs"][str(program)] == {"status": "ok", "traceback": None, "output": ran["output"]}


WIDGET_PAGES = [
    slug for slug in SITE_CHAPTERS if slug not in CHAPTERS or find(DOCS, slug).programs or find(DOCS, slug).calculators
]


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("slug", WIDGET_PAGES)
def test_the_widgets_work_in_a_browser(slug: str, site, browser, cpython) -> None:
    expect = pytest.importorskip("playwright.sync_api").expect
    recorded = support.Recorded.open(browser)
    page = recorded.page()
    page.goto(f"{site.isolated}chapters/{slug}/")
    folder = find(site.docs, slug)
    cells = page.locator("[data-rf-cell]")
    if folder.programs:
        expect(cells.first).to_have_attribute("data-state", "ready", timeout=support.BOOT_MS)
    for index in range(cells.count()):
        cell = cells.nth(index)
        filename = cell.get_attribute("data-rf-filename")
        cell.locator("[data-rf-action=run]").click()
        expect(cell.locator(".rf-status")).to_contain_text("Finished in", timeout=support.STEP_MS)
        program = next(path for path in cpython["programs"] if Path(path).name == filename)
        assert cell.locator(".rf-output").text_content() == cpython["programs"][program]["output"]
    for name in folder.calculators:
        entry = cpython["calculators"][name]
        form = page.locator(f"form[data-rf-calc={name}]")
        # The last request that the view answers: a field at one of its bounds.
        index = max(i for i, one in enumerate(entry["answers"]) if "error" not in one)
        request, expected = entry["requests"][index], entry["answers"][index]
        support.set_inputs(form, request)
        support.wait_for_render(form, request)
        for key, text in support.text_outputs(form).items():
            if key in expected:
                assert text == str(expected[key]), (name, key)
        # A value past a bound is refused where it is typed, and the results are greyed.
        number = next((f for f in request if form.locator(f"input[name={f}]").count()), None)
        if number is not None:
            form.locator(f"input[name={number}]").fill("-1e9")
            expect(form).to_have_attribute("data-state", "invalid", timeout=support.STEP_MS)
            expect(form.locator(f"input[name={number}]")).to_have_attribute("aria-invalid", "true")
    recorded.assert_only(site.isolated)
    recorded.close()
