"""One generator module per page that quotes computed numbers, shows generated tables or figures.

Each module here has ``PAGE`` (its Markdown file, relative to ``docs/``) and
``build(ctx) -> PageContent`` (see ``sitegen.page``). Adding a chapter means
adding its page, a module here and its programs: this package finds the
module by itself, and nothing else needs a line for it.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from ..page import PageModuleError


def page_modules() -> list[ModuleType]:
    """Every page module, sorted by name; raises PageModuleError for one without PAGE or build."""
    names = sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_"))
    modules, pages = [], {}
    for name in names:
        module = importlib.import_module(f"{__name__}.{name}")
        where = f"scripts/sitegen/pages/{name}.py"
        page = getattr(module, "PAGE", None)
        if not isinstance(page, str) or not page.endswith(".md"):
            raise PageModuleError(
                f"{where}: needs PAGE, the page's Markdown file relative to docs/ (like 'chapters/x.md')"
            )
        if not callable(getattr(module, "build", None)):
            raise PageModuleError(f"{where}: needs build(ctx) returning the page's PageContent")
        if page in pages:
            raise PageModuleError(f"{where}: docs/{page} already has a module, {pages[page]}")
        pages[page] = where
        modules.append(module)
    return modules
