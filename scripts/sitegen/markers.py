"""The widget markers of a page's HTML, turned into Run cells and calculators.

    <!-- roofline:run-cell programs/NAME.py -->   a Run cell showing that program, by its path
                                                 from the page's folder (anywhere under docs/)
    <!-- roofline:calculator NAME -->            the calculator calculators/NAME.py of the page's
                                                 folder (or, by its site-wide name, another's)
    <!-- roofline:calculator NAME example=KEY --> the same, with a "Load this section's example"
                                                 button setting the inputs to EXAMPLES[KEY] of the
                                                 page's page.py (the prose's own constants)
    <!-- roofline:quiz -->                       the graded quiz quiz.py of the page's folder
                                                 (roofline.quiz), one question pre-drawn here

A page may hold any number of Run cells and calculators (each calculator once). A marker
that names a missing program or calculator, a calculator that breaks its contract
(``sitegen.pages``, ``roofline.forms``), or a view whose answer for the defaults misses
what an output needs raises MarkerError: one line naming the page, the marker and the fix.
A calculator's first paint is its view of its defaults, computed here in CPython, once
per build (``Markers`` keeps them).

``hooks/runtime.py`` makes one ``Markers`` per build; nothing here depends on MkDocs.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline.forms import Form, FormError, InputError

from . import widgets
from .pages import CALCULATOR_NAME, PageFolder, PageModuleError, calculator_folder, failure

#: A marker: the widget kind, then its argument. Matched on the page's HTML, where comments pass through.
MARKER = re.compile(r"<!--\s*roofline:(?P<kind>[\w-]+)(?P<argument>[^>]*?)\s*-->")
KINDS = ("run-cell", "calculator", "quiz")
#: A calculator marker's argument: the calculator's name, then optionally the page's example to offer.
CALCULATOR_ARGUMENT = re.compile(r"(?P<name>\S*)(?:\s+example=(?P<example>[\w-]+))?")
#: The seed of the question a quiz shows before Python starts (any fixed seed: the build's draw).
BUILD_SEED = 0
#: Draws per template the build checks (roofline.quiz.check_quiz), as tests/test_quiz.py does.
QUIZ_DRAWS = 200


class MarkerError(ValueError):
    """A marker the build cannot turn into a widget; the message is one line naming page and marker."""


def relative_url(target: str, page_url: str) -> str:
    """``target`` (a path from the site's root) as a link from the page at ``page_url`` (``chapters/x/``)."""
    return posixpath.relpath(target, page_url.rstrip("/") or ".") if page_url.strip("/") else target


@dataclass
class Markers:
    """Everything a build's markers need: docs/, where the wheel and snapshot are served, the asset version."""

    docs: Path
    wheel_uri: str
    snapshot_uri: str
    version: str
    #: The snapshot's SHA-256, named beside its address (``#sha256=``) so the worker restores
    #: nothing else (boot.mjs); "" names none (a build without a snapshot's digest, in tests).
    snapshot_digest: str = ""
    #: The raw snapshot's SHA-256 (``&raw=``), which a copy a page kept for the next must match
    #: (docs/javascripts/runtime/snapshot_store.mjs); "" names none, and nothing is kept.
    snapshot_raw_digest: str = ""
    #: Where Pyodide's runtime files are served (a folder named by its version); "": the runtime's default.
    pyodide_uri: str = ""
    #: Bytes of each runtime file the worker downloads, by its site address (hooks/runtime.py).
    sizes: dict[str, int] = field(default_factory=dict)
    #: Calculator file -> (form, answer for the defaults), computed once per build.
    calculators: dict[Path, tuple[Form, dict[str, Any]]] = field(default_factory=dict)
    #: Quiz file -> (its name, the pre-drawn question), each checked once per build.
    quizzes: dict[Path, tuple[str, dict[str, Any]]] = field(default_factory=dict)

    def quiz(self, page: str) -> tuple[str, dict[str, Any], Path]:
        """The page folder's quiz: its name, the question drawn for ``BUILD_SEED``, its file.
        Every template is drawn ``QUIZ_DRAWS`` times first; the first problem is the error."""
        folder = PageFolder(self.docs, (self.docs / page).parent)
        path = folder.folder / "quiz.py"
        if path not in self.quizzes:
            from roofline.quiz import check_quiz

            try:
                module = folder.quiz()
            except PageModuleError as error:
                raise ValueError(str(error)) from None
            problems = check_quiz(module.QUIZ, QUIZ_DRAWS)
            if problems:
                raise ValueError(f"{folder.where(path)}: {problems[0]}")
            self.quizzes[path] = folder.quiz_name, module.view("new", BUILD_SEED)
        name, drawn = self.quizzes[path]
        return name, drawn, path

    def program(self, argument: str, folder: Path) -> tuple[str, str]:
        """``programs/NAME.py`` from the page's ``folder`` -> (its text, its file name); ValueError if wrong."""
        if not argument:
            raise ValueError("names no program; write <!-- roofline:run-cell programs/NAME.py -->")
        relative = Path(argument)
        path = (folder / relative).resolve()
        docs = self.docs.resolve()
        if relative.is_absolute() or relative.suffix != ".py" or not path.is_relative_to(docs):
            raise ValueError("must name a .py file by its path from the page's folder, such as programs/NAME.py")
        if not path.is_file():
            raise ValueError(f"names a missing program: docs/{path.relative_to(docs).as_posix()} does not exist")
        return path.read_text(encoding="utf-8"), path.name

    def calculator(self, argument: str, page: str) -> tuple[Form, dict[str, Any], Path]:
        """The calculator's form, its view of the defaults and its file; ValueError saying what is wrong."""
        if not CALCULATOR_NAME.fullmatch(argument):
            raise ValueError("needs the calculator's name, such as decode_speed (calculators/NAME.py beside the page)")
        folder = calculator_folder(self.docs, page, argument)
        path = folder.folder / "calculators" / f"{argument}.py"
        if path not in self.calculators:
            try:
                module = folder.calculator(argument)
            except PageModuleError as error:
                raise ValueError(str(error)) from None
            form = module.FORM
            try:
                initial = module.view(**form.defaults)
                widgets.check_answer(form, initial)
            except (FormError, widgets.AnswerError) as error:
                raise ValueError(f"{folder.where(path)}: view(defaults): {error}") from None
            except Exception as error:  # a bug in the view: its type, message and line
                raise ValueError(f"{folder.where(path)}: view(defaults) raised {failure(error, path)}") from None
            self.calculators[path] = form, initial
        form, initial = self.calculators[path]
        return form, initial, path

    def example(self, form: Form, name: str, key: str, page: str) -> dict[str, Any]:
        """``EXAMPLES[key]`` of the page's ``page.py``, checked against ``form``: the inputs at which the
        calculator shows the figures the prose quotes. ValueError naming page, calculator and field."""
        folder = PageFolder(self.docs, (self.docs / page).parent)
        try:
            examples = getattr(folder.module(), "EXAMPLES", None)
        except PageModuleError as error:
            raise ValueError(str(error)) from None
        where = f"{folder.where(folder.generator)}: EXAMPLES[{key!r}] for calculator {name}"
        if not isinstance(examples, dict) or key not in examples:
            known = ", ".join(examples) if isinstance(examples, dict) else "none"
            raise ValueError(
                f"{where} does not exist (examples there: {known}); add it, built from the prose's constants"
            )
        try:
            return form.validate(examples[key])
        except InputError as error:
            raise ValueError(f"{where}: field {', '.join(error.fields)} {error.message}") from None

    def snapshot_fragment(self) -> str:
        """``#sha256=RECORDS&raw=RAW``: the digests the worker checks the snapshot against (boot.mjs)."""
        named = [f"sha256={self.snapshot_digest}"] if self.snapshot_digest else []
        if self.snapshot_digest and self.snapshot_raw_digest:
            named.append(f"raw={self.snapshot_raw_digest}")
        return "#" + "&".join(named) if named else ""

    def replace(self, html: str, page: str, page_url: str) -> str:
        """``html`` of ``page`` (relative to docs/, shown at ``page_url``) with each marker replaced by its widget."""
        links = widgets.RuntimeLinks(
            wheel=relative_url(self.wheel_uri, page_url),
            snapshot=relative_url(self.snapshot_uri, page_url) + self.snapshot_fragment(),
            version=self.version,
            pyodide=relative_url(self.pyodide_uri.rstrip("/"), page_url) + "/" if self.pyodide_uri else "",
            sizes=tuple((relative_url(uri, page_url), size) for uri, size in sorted(self.sizes.items())),
        )
        folder = (self.docs / page).parent
        seen: set[str] = set()
        count = 0

        def widget(match: re.Match[str]) -> str:
            nonlocal count
            kind, argument = match.group("kind"), match.group("argument").strip()
            where = f"runtime hook: docs/{page}: {match.group(0)}"
            try:
                if kind == "run-cell":
                    source, filename = self.program(argument, folder)
                    count += 1
                    return widgets.run_cell(source, filename, links, index=count)
                if kind == "calculator":
                    parsed = CALCULATOR_ARGUMENT.fullmatch(argument)
                    name, key = (parsed["name"], parsed["example"]) if parsed else (argument, None)
                    if name in seen:
                        raise ValueError("appears twice on the page; each calculator once (its inputs live in the URL)")
                    seen.add(name)
                    form, initial, path = self.calculator(name, page)
                    example = self.example(form, name, key, page) if key else None
                    # The site serves a calculator where it sits under docs/; the worker fetches it there.
                    module_url = relative_url(path.relative_to(self.docs).as_posix(), page_url)
                    return widgets.calculator(name, form, initial, links, module_url, example=example)
                if kind == "quiz":
                    if kind in seen:
                        raise ValueError("appears twice on the page; a page has one quiz")
                    seen.add(kind)
                    name, drawn, path = self.quiz(page)
                    module_url = relative_url(path.relative_to(self.docs).as_posix(), page_url)
                    return widgets.quiz(name, folder.name, drawn, links, module_url)
                raise ValueError(f"is not a widget (use {', '.join(KINDS[:-1])} or {KINDS[-1]})")
            except ValueError as error:
                raise MarkerError(f"{where} {error}") from None

        return MARKER.sub(widget, html)
