"""Markdown tables with literal-text cells, and the list of sources printed under a table.

The reference pages build their tables with these (``docs/reference/*/page.py``); a
chapter's own tables come from its page module, such as the package's ``decode_prefill_table``.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import escape


def markdown_table(header: tuple[str, ...], rows: list[tuple[str, ...]], right: set[int]) -> str:
    """A Markdown table; the columns numbered in ``right`` are right-aligned. Cells are written as given."""
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|")
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def sources_list(entries: Iterable[tuple[str, str, str]]) -> str:
    """A list under a table, one line per entry: its name, id and linked source.

    Sources are long; in a column they squeeze every other column on a laptop screen. Each
    becomes a link through ``escape.linked``: http(s) URLs only, the rest literal text.
    """
    lines = ["", "**Sources**", ""]
    lines += [
        f"- **{escape.text(name)}** (`{entry_id}`): {escape.linked(source)}" for name, entry_id, source in entries
    ]
    return "\n".join(lines) + "\n"
