"""Spec text is data, never markup: how a name or a source enters generated Markdown.

A spec file is input from whoever edits it. A GPU named ``<img src=x onerror=…>``
must show those characters, not run them; a model named ``8B {{ draft }}`` must
not look like a shortcode; a ``|`` must not start a new table column; a ``$``
must not open a formula. So every character that means something to
Python-Markdown, its extensions (tables, attr_list, arithmatex, footnotes,
inlinehilite) or HTML is written as a numeric character reference, which the
browser shows as the character itself and no Markdown rule reads.

A source becomes a link only where it holds an http(s) URL with a host; any
other scheme (``javascript:``, ``data:``) stays text.

One rule for text that looks like markup or a script link, in every file, entry and
field: it is shown as the characters it holds, never refused. ``roofline validate``
accepts it and the build shows it literally; the colon after a script scheme's name
is written as a reference too (``javascript&#58;``), so no generated text holds an
active ``javascript:`` for the build's last check (``generate.check_outputs``) to
find, and a link target that happens to contain one (in its query) has it
percent-encoded.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit

from roofline.sweep import Table

#: Characters with a meaning in Markdown, its extensions or HTML. ``(``, ``!`` and ``:``
#: mean something only next to ``[`` or ``{``, which are escaped, so they stay readable.
_MARKUP = frozenset("&<>\"'`*_[]{}|\\$#")

#: An http(s) URL that starts a word: ``x:https://…`` or ``a.https://…`` is not one.
URL = re.compile(r"(?<![\w:/.])https?://[^\s<>\"']+", re.IGNORECASE)
#: What may stay as it is in a link target; everything else is percent-encoded.
_URL_SAFE = "/:?#@!$&'*+,;=%-._~"


#: A URL scheme that runs or embeds code when followed: its colon is escaped wherever spec text goes.
SCRIPT_SCHEME = re.compile(r"(javascript|vbscript|livescript|data)(\s*):", re.IGNORECASE)


def text(value: str) -> str:
    """``value`` as literal text in Markdown (a table cell, a list item, prose, an image's alt)."""
    escaped = "".join(f"&#{ord(char)};" if char in _MARKUP else char for char in value)
    return SCRIPT_SCHEME.sub(r"\1\2&#58;", escaped)


def table(rows: Table) -> str:
    """The package's table as Markdown with every cell literal text (model names come from spec files)."""
    cells = tuple(tuple(text(cell) for cell in row) for row in rows.rows)
    return Table(rows.header, cells).markdown()


def http_url(candidate: str) -> str | None:
    """``candidate`` as a safe link target if it is an http(s) URL with a host, else None.

    Characters that could end the Markdown link or break out of the ``href``
    (``( ) < > " { } |`` and spaces) are percent-encoded.
    """
    try:
        parts = urlsplit(candidate)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    return SCRIPT_SCHEME.sub(r"\1\2%3A", quote(candidate, safe=_URL_SAFE))


def _label(url: str) -> str:
    """A short label for a long URL: host and path, the middle elided past 60 characters."""
    label = url.split("://", 1)[1].rstrip("/")
    parts = label.split("/")
    if len(label) > 60 and len(parts) > 4:
        label = "/".join([*parts[:3], "…", parts[-1]])
    return label


def without_sentence_end(url: str) -> str:
    """``url`` less the punctuation after it that ends the sentence around it (see ``linked``)."""
    while url:
        if url[-1] in ".,;:!?":
            url = url[:-1]
        elif url[-1] == ")" and url.count(")") > url.count("("):
            url = url[:-1]
        else:
            return url
    return url


def linked(source: str) -> str:
    """A source text with each http(s) URL in it as a Markdown link and the rest as literal text.

    Trailing punctuation belongs to the sentence, not the URL: ``.,;:!?``, and a ``)`` the URL
    did not open (``(see https://…/gpus.md):`` links ``…/gpus.md``; a Wikipedia ``…_(unit)`` keeps its own).
    """
    pieces = []
    position = 0
    for match in URL.finditer(source):
        raw = without_sentence_end(match.group(0))
        target = http_url(raw)
        if target is None:
            continue
        pieces.append(text(source[position : match.start()]))
        pieces.append(f"[{text(_label(raw))}]({target})")
        position = match.start() + len(raw)
    pieces.append(text(source[position:]))
    return "".join(pieces)
