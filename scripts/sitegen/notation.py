"""One notation for the whole course: ``docs/notation.toml`` and the build's check against it.

The table gives every symbol a page's formulas use one meaning and one unit, site-wide.
``hooks/math.py`` calls ``check_page`` on every page before its formulas are rendered (a chapter,
a reference page, any page with a formula), and a page that breaks the table stops the build
with one line naming the page, the symbol and the fix:

- a symbol the table does not list (``\\(U\\)`` for memory, where the table says ``M``);
- a symbol written right after the words the table gives another symbol's meaning ("bandwidth
  \\(W\\)", where ``W`` is weight bytes and bandwidth is ``B_\\text{mem}``).

A symbol is a letter or a Greek letter, with an accent (``\\hat{c}``), a subscript (``B_\\text{mem}``,
``T_s``, ``w_\\ell``) and a star (``c^\\ast``) as part of its name; any other superscript is a power,
``\\text{...}`` outside a subscript is words, and every other command (``\\frac``, ``\\sum``, ``\\min``)
is an operator. The reference page "How the numbers are computed" renders the table itself
(``markdown``) and is checked against it like every other page.
"""

from __future__ import annotations

import html
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from sitegen.tables import markdown_table

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "docs" / "notation.toml"
SOURCE = "docs/notation.toml"

GREEK = frozenset(
    "alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi rho sigma"
    " tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma Upsilon Phi Psi Omega ell".split()
)
ACCENTS = frozenset({"hat", "bar", "tilde", "widehat", "overline"})
#: Commands whose braced argument is words, not symbols.
WORDS = frozenset({"text", "textrm", "textit", "mathrm", "operatorname"})
_FORMULA = re.compile(
    r'<span class="arithmatex">\\\((?P<inline>.*?)\\\)</span>|<div class="arithmatex">\\\[(?P<display>.*?)\\\]</div>',
    re.S,
)

#: A tag that opens or closes a block of text (a paragraph, a table cell, a list item, a heading).
_BLOCK = re.compile(r"</?(?:p|td|th|tr|li|div|h[1-6]|table|ul|ol|dd|dt|blockquote)\b[^>]*>")


class NotationError(Exception):
    """A page or the table breaks the notation; the message is one line."""


@dataclass(frozen=True)
class Symbol:
    """One row of the table: the symbol's TeX, what it means, its unit, and the words that name it."""

    tex: str
    meaning: str
    unit: str
    names: tuple[str, ...] = ()


def load(path: Path = TABLE) -> dict[str, Symbol]:
    """The table by symbol (its TeX with the spaces taken out); NotationError names a bad entry."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise NotationError(f"{SOURCE}: not valid TOML: {error}") from None
    table: dict[str, Symbol] = {}
    for number, entry in enumerate(data.get("symbol", []), 1):
        where = f"{SOURCE}: [[symbol]] #{number}"
        missing = [key for key in ("tex", "meaning", "unit") if not isinstance(entry.get(key), str)]
        if missing:
            raise NotationError(f"{where}: needs {', '.join(missing)} as text (tex, meaning, unit, names)")
        unknown = set(entry) - {"tex", "meaning", "unit", "names"}
        if unknown:
            raise NotationError(f"{where}: unknown key {sorted(unknown)[0]!r} (allowed: tex, meaning, unit, names)")
        key = _key(entry["tex"])
        found = symbols_in(entry["tex"])
        if found != [key]:
            raise NotationError(f"{where}: tex {entry['tex']!r} is not one symbol (read as {found})")
        if key in table:
            raise NotationError(f"{where}: {entry['tex']} is listed twice; give each symbol one meaning")
        table[key] = Symbol(entry["tex"], entry["meaning"], entry["unit"], tuple(entry.get("names", ())))
    owners: dict[str, str] = {}
    for symbol in table.values():
        for name in symbol.names:
            if name in owners:
                raise NotationError(f"{SOURCE}: the words {name!r} name both {owners[name]} and {symbol.tex}")
            owners[name] = symbol.tex
    return table


def _key(tex: str) -> str:
    return re.sub(r"\s+", "", tex)


def _group(tex: str, start: int) -> tuple[str, int]:
    """The braced group or single token at ``start``: its text and the index after it."""
    while start < len(tex) and tex[start] == " ":
        start += 1
    if start >= len(tex):
        return "", start
    if tex[start] == "{":
        depth = 0
        for index in range(start, len(tex)):
            depth += {"{": 1, "}": -1}.get(tex[index], 0)
            if depth == 0:
                return tex[start : index + 1], index + 1
        return tex[start:], len(tex)
    if tex[start] == "\\":
        match = re.match(r"\\([A-Za-z]+|.)", tex[start:])
        assert match is not None
        name = match.group(0)
        if match.group(1) in WORDS:
            argument, end = _group(tex, start + len(name))
            return name + argument, end
        return name, start + len(name)
    return tex[start], start + 1


def _inner(group: str) -> str:
    """A braced group without its outer braces (``{n_\\text{tok}}`` -> ``n_\\text{tok}``), a token as it is."""
    return group[1:-1] if group.startswith("{") and group.endswith("}") else group


def symbols_in(tex: str) -> list[str]:
    """The symbols of formula ``tex``, in order, each as its key (see the module's docstring)."""
    found: list[str] = []
    index = 0
    while index < len(tex):
        char = tex[index]
        command = re.match(r"\\([A-Za-z]+)", tex[index:])
        if command and command.group(1) in WORDS:
            _, index = _group(tex, index)  # words
            continue
        if command and command.group(1) in ACCENTS:
            argument, end = _group(tex, index + len(command.group(0)))
            inner = _inner(argument).strip()
            name, index = f"\\{command.group(1)}{{{inner}}}", end
        elif command and command.group(1) in GREEK:
            name, index = command.group(0), index + len(command.group(0))
        elif command:
            index += len(command.group(0))  # an operator or spacing
            continue
        elif char.isascii() and char.isalpha():
            name, index = char, index + 1
        elif char in "_^":
            # A subscript or power on something that is not a symbol (\sum_{t}, a bracket's power): its symbols.
            argument, index = _group(tex, index + 1)
            found.extend(symbols_in(_inner(argument)) if not argument.startswith("\\text") else [])
            continue
        else:
            index += 1
            continue
        # The symbol's own subscript and star belong to its name.
        if tex[index : index + 1] == "_":
            argument, index = _group(tex, index + 1)
            name += "_" + argument
        power = re.match(r"\^(\\ast|\*|\{\\ast\})", tex[index:])
        if power:
            name += "^\\ast"
            index += len(power.group(0))
        found.append(_key(name))
    return found


def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", text))).lower()


def _named(before: str, after: str, names: list[tuple[str, Symbol]], bare: bool) -> tuple[str, Symbol] | None:
    """The table's words that stand right beside a formula, and the symbol they name: "bandwidth
    \\(W\\)", "\\(W\\) the bandwidth", "\\(W\\) is the bandwidth"; with ``bare`` also "\\(K\\) KV
    heads". Bare words after a symbol may count it ("\\(g\\) weights per group"), so they only
    suggest the fix for a symbol already wrong, never make a symbol wrong. None if no words."""
    article = "(the )?" if bare else "the "
    for name, owner in names:
        if re.search(rf"(^|[^a-z]){re.escape(name)}$", before) or re.match(
            rf"(is |as )?{article}{re.escape(name)}([^a-z]|$)", after
        ):
            return name, owner
    return None


def check_page(page: str, page_html: str, table: dict[str, Symbol]) -> None:
    """NotationError, in one line, for the first formula of ``page`` (its rendered Markdown, before
    KaTeX) that uses a symbol outside ``table`` or one right beside another symbol's words. Where
    the words beside an unknown symbol name one in the table, the fix names that symbol."""
    names = sorted(((name, symbol) for symbol in table.values() for name in symbol.names), key=lambda x: -len(x[0]))
    last = 0
    matches = list(_FORMULA.finditer(page_html))
    for number, match in enumerate(matches):
        tex = html.unescape(match.group("inline") if match.group("inline") is not None else match.group("display"))
        found = symbols_in(tex)
        # Words name a symbol only within its own paragraph, list item or table cell: the unit
        # column of one row of a table is not the name of the next row's symbol.
        before = _plain(_BLOCK.split(page_html[last : match.start()])[-1])[-60:].rstrip()
        last = match.end()
        end = matches[number + 1].start() if number + 1 < len(matches) else len(page_html)
        after = _plain(_BLOCK.split(page_html[match.end() : end])[0])[:60].lstrip()
        # Only a lone symbol in running text is introduced by the words beside it.
        lone = len(found) == 1 and match.group("inline") is not None
        for key in found:
            if key not in table:
                named = _named(before, after, names, bare=True) if lone else None
                fix = (
                    f"'{named[0]}' is \\({named[1].tex}\\) in {SOURCE}; write \\({named[1].tex}\\)"
                    if named
                    else f"use the symbol {SOURCE} gives this quantity, or add it there with its meaning and unit"
                )
                raise NotationError(f"{page}: \\({key}\\) is not in the notation table; {fix}")
        named = _named(before, after, names, bare=False) if lone else None
        if named and _key(named[1].tex) != found[0]:
            (name, owner), symbol = named, found[0]
            raise NotationError(
                f"{page}: \\({symbol}\\) is called '{name}', which {SOURCE} gives to \\({owner.tex}\\)"
                f" ({owner.meaning}), while \\({symbol}\\) is {table[symbol].meaning}; write \\({owner.tex}\\)"
            )


def markdown(table: dict[str, Symbol]) -> str:
    """The table as the reference page shows it: symbol, meaning, unit."""
    rows = [(f"\\({symbol.tex}\\)", symbol.meaning, symbol.unit) for symbol in table.values()]
    return markdown_table(("Symbol", "Meaning", "Unit"), rows, right=set())
