"""The one loader: every page folder of the site, and what it holds.

A page folder is a folder under ``docs/`` whose page is ``index.md`` (so the URL is
the folder's: ``docs/chapters/kv-cache/index.md`` is ``chapters/kv-cache/``) and
which holds any of::

    page.py            its generator: build(ctx) -> PageContent (values, tables, figures)
    charts.py, …       helpers page.py imports relatively (``from . import charts``)
    programs/NAME.py   its Run cells' programs (``<!-- roofline:run-cell programs/NAME.py -->``)
    calculators/NAME.py its calculators (``<!-- roofline:calculator NAME -->``): FORM and view
    quiz.py            its graded questions (``<!-- roofline:quiz -->``): QUIZ = Quiz(...), view = QUIZ.view
    test_*.py          its own tests (pytest collects them; the site leaves them out)

Chapters are the page folders under ``docs/chapters/``; the reference pages under
``docs/reference/`` have the same shape. Nothing lists them: a new folder is found
here, by the build (``generate``, ``hooks/runtime.py``), the tests
(``tests/test_every_chapter.py``) and the benchmarks alike. MkDocs does not copy the
Python files into the site, except the calculators, which the page's worker fetches
(``exclude_docs`` in ``mkdocs.yml``).

Every mistake raises PageModuleError with one line naming the file and the fix.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import re
import sys
import traceback
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import ModuleType

from .page import PageModuleError

#: Where chapters live, relative to docs/.
CHAPTERS = "chapters"
#: A page folder's generator module.
GENERATOR = "page.py"
#: A calculator's name: its URL keys (NAME.FIELD=…) and the worker's module name use it.
CALCULATOR_NAME = re.compile(r"[a-z][a-z0-9_]*")
#: The module name a calculator gets in CPython and in the reader's worker (roofline_views.py).
CALCULATOR_MODULE = "roofline_calculator_{name}"
#: A page folder's quiz declaration (roofline.quiz), and the name the worker imports it by.
QUIZ_FILE = "quiz.py"
QUIZ_NAME = "quiz_{slug}"
#: The package name a page folder's modules get: ``roofline_page_chapters_kv_cache.page``.
PACKAGE_PREFIX = "roofline_page_"


def raised_at(error: BaseException, path: Path) -> str:
    """`` (page.py, line 12)`` for the deepest frame of ``error``'s traceback in ``path``, or ``""``."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if Path(frame.filename) == path]
    return f" ({path.name}, line {frames[-1].lineno})" if frames else ""


def failure(error: BaseException, path: Path) -> str:
    """An exception as one line: its type, its message (first line) and where in ``path`` it was raised."""
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}{': ' + message if message else ''}{raised_at(error, path)}"


def _import_fresh(name: str, path: Path, *, package: Path | None = None) -> ModuleType:
    """Import ``path`` as module ``name`` (or, with ``package``, a package at that folder), afresh.

    Fresh, so a long ``mkdocs serve`` sees edits; without writing bytecode into docs/,
    which MkDocs would otherwise watch and copy.
    """
    for loaded in [key for key in sys.modules if key == name or key.startswith(name + ".")]:
        del sys.modules[loaded]
    if package is not None:
        spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
        spec.submodule_search_locations = [str(package)]
    else:
        spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    if package is not None:
        return module
    writes, sys.dont_write_bytecode = sys.dont_write_bytecode, True
    try:
        assert spec.loader is not None
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        sys.dont_write_bytecode = writes
    return module


@dataclass(frozen=True)
class PageFolder:
    """One page folder: ``docs`` is the site's docs/ folder, ``folder`` the page's own."""

    docs: Path
    folder: Path

    @property
    def slug(self) -> str:
        """The folder's name, spelled as in its URL: ``kv-cache``."""
        return self.folder.name

    @property
    def page(self) -> str:
        """The page's Markdown file relative to docs/, as MkDocs names it: ``chapters/kv-cache/index.md``."""
        return (self.folder / "index.md").relative_to(self.docs).as_posix()

    @property
    def url(self) -> str:
        """The page's address relative to the site: ``chapters/kv-cache/``."""
        return self.folder.relative_to(self.docs).as_posix() + "/"

    @property
    def is_chapter(self) -> bool:
        return self.folder.parent == self.docs / CHAPTERS

    @property
    def generator(self) -> Path | None:
        path = self.folder / GENERATOR
        return path if path.is_file() else None

    @property
    def programs(self) -> list[Path]:
        return sorted((self.folder / "programs").glob("*.py"))

    @property
    def calculators(self) -> dict[str, Path]:
        """Calculator name -> its module file."""
        return {path.stem: path for path in sorted((self.folder / "calculators").glob("*.py"))}

    @property
    def quiz_path(self) -> Path | None:
        path = self.folder / QUIZ_FILE
        return path if path.is_file() else None

    @property
    def quiz_name(self) -> str:
        """The quiz's name on the calculators' channel: ``quiz_kv_cache`` (a calculator name's alphabet)."""
        return QUIZ_NAME.format(slug=re.sub(r"[^0-9a-z]", "_", self.slug.lower()))

    def quiz(self) -> ModuleType:
        """``quiz.py``, imported afresh as the worker names it; PageModuleError if it breaks the contract."""
        path = self.folder / QUIZ_FILE
        if not path.is_file():
            raise PageModuleError(f"{self.where(path)} does not exist: declare QUIZ = Quiz(...) and view = QUIZ.view")
        try:
            module = _import_fresh(CALCULATOR_MODULE.format(name=self.quiz_name), path)
        except Exception as error:  # a QuizError in a template, a syntax error, a failed import
            raise PageModuleError(f"{self.where(path)}: {failure(error, path)}") from None
        from roofline.quiz import Quiz

        quiz = getattr(module, "QUIZ", None)
        if not isinstance(quiz, Quiz) or getattr(module, "view", None) != quiz.view:
            raise PageModuleError(f"{self.where(path)}: needs QUIZ = Quiz(...) and view = QUIZ.view")
        return module

    @property
    def tests(self) -> list[Path]:
        return sorted(self.folder.glob("test_*.py"))

    def where(self, path: Path | None = None) -> str:
        """``docs/chapters/kv-cache/page.py``: a file of this folder as messages name it."""
        return "docs/" + (path or self.folder / "index.md").relative_to(self.docs).as_posix()

    @cached_property
    def package(self) -> str:
        """The Python package this folder's modules import as (``roofline_page_chapters_kv_cache``)."""
        relative = self.folder.relative_to(self.docs).as_posix()
        return PACKAGE_PREFIX + re.sub(r"[^0-9A-Za-z]", "_", relative)

    def module(self) -> ModuleType:
        """``page.py``, imported afresh; PageModuleError if it is missing, does not import, or has no build()."""
        path = self.generator
        if path is None:
            raise PageModuleError(f"{self.where()}: its folder has no {GENERATOR} (build(ctx) -> PageContent)")
        _import_fresh(self.package, path, package=self.folder)
        try:
            module = importlib.import_module(f"{self.package}.page")
        except Exception as error:  # a syntax error or a failed import, as one line
            raise PageModuleError(f"{self.where(path)}: cannot import: {failure(error, path)}") from None
        if not callable(getattr(module, "build", None)):
            raise PageModuleError(f"{self.where(path)}: needs build(ctx) returning the page's PageContent")
        return module

    def calculator(self, name: str) -> ModuleType:
        """Calculator ``name``, imported afresh as the worker names it; PageModuleError if it breaks the contract."""
        path = self.calculators.get(name)
        if path is None:
            known = ", ".join(self.calculators) or "none"
            raise PageModuleError(
                f"{self.where(self.folder / 'calculators' / f'{name}.py')} does not exist (calculators here: {known})"
            )
        try:
            module = _import_fresh(CALCULATOR_MODULE.format(name=name), path)
        except Exception as error:  # a FormError in the declaration, a syntax error, a failed import
            raise PageModuleError(f"{self.where(path)}: {failure(error, path)}") from None
        from roofline.forms import Form

        form, view = getattr(module, "FORM", None), getattr(module, "view", None)
        if not isinstance(form, Form) or getattr(view, "form", None) is not form:
            raise PageModuleError(f"{self.where(path)}: needs FORM = Form(...) and its view decorated with @FORM.view")
        return module


def page_folders(docs: Path) -> list[PageFolder]:
    """Every page folder under ``docs``, by page path; PageModuleError for a calculator name used twice.

    A folder counts when it holds ``index.md`` and a generator, programs or calculators.
    """
    found = []
    for index in sorted(docs.rglob("index.md")):
        folder = index.parent
        if folder == docs or any(part.startswith((".", "_")) for part in folder.relative_to(docs).parts):
            continue
        page = PageFolder(docs, folder)
        if page.generator or page.programs or page.calculators:
            found.append(page)
    owners: dict[str, PageFolder] = {}
    for page in found:
        for name, path in page.calculators.items():
            if not CALCULATOR_NAME.fullmatch(name):
                raise PageModuleError(
                    f"{page.where(path)}: a calculator's name must be lowercase letters, digits and _"
                )
            if name in owners:
                raise PageModuleError(
                    f"{page.where(path)}: calculator {name!r} is also in {owners[name].where()};"
                    " calculator names are site-wide (the worker and the address bar use them): rename one"
                )
            owners[name] = page
    return found


def chapters(docs: Path) -> list[PageFolder]:
    """The page folders under ``docs/chapters/``, by slug."""
    return [page for page in page_folders(docs) if page.is_chapter]


def find(docs: Path, slug: str) -> PageFolder:
    """The page folder whose slug (or page path) is ``slug``; PageModuleError naming the known ones."""
    pages = page_folders(docs)
    for page in pages:
        if slug in (page.slug, page.page, page.url.rstrip("/")):
            return page
    raise PageModuleError(f"no page folder {slug!r} under {docs} (found: {', '.join(p.slug for p in pages)})")


def calculator_folder(docs: Path, page: str, name: str) -> PageFolder:
    """The folder whose ``calculators/NAME.py`` the Markdown page ``page`` (relative to docs/) shows.

    The page's own folder first; else the one page folder that has it (calculator names are
    site-wide, so another page may show a chapter's calculator by name); else the page's own
    folder, whose ``calculator(name)`` then says what is missing.
    """
    own = PageFolder(docs, (docs / page).parent)
    if name in own.calculators:
        return own
    return next((folder for folder in page_folders(docs) if name in folder.calculators), own)
