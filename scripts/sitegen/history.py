"""Dates from the repository's git history: each page's "last updated", and the "What changed" list.

``last_updated(root, paths)`` is the committer date of the newest commit touching any of ``paths``,
``git log -1 --format=%cs -- PATHS``. A checkout without git, or without history (a copy, an
export, a tarball), gives ``None``, and the page says nothing rather than a wrong date.

``changes(root)`` lists, newest first, the commits that touched a spec file (``roofline/data/``),
a published measurement (``data/``) or a chapter page, one entry per commit: its date, what kind
of source it touched, and its subject line. A chapter's own tests (``test_*.py``) do not count:
a reader sees no change there.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: What "What changed" follows: (path prefix, what to call it), checked in order.
WATCHED = (
    ("roofline/data/", "spec"),
    ("data/", "measurement"),
    ("docs/chapters/", "chapter"),
)


def _git(root: Path, *args: str) -> str | None:
    """git's output in ``root``, or None where git or the history is missing."""
    if shutil.which("git") is None or not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def last_updated(root: Path, paths: Sequence[str]) -> str | None:
    """The newest commit date (YYYY-MM-DD) touching ``paths`` (relative to ``root``), or None."""
    out = _git(root, "log", "-1", "--format=%cs", "--", *paths)
    return out.strip() or None if out is not None else None


@dataclass(frozen=True)
class Change:
    date: str
    kinds: tuple[str, ...]
    subject: str
    files: tuple[str, ...]


def _content(path: str) -> bool:
    """A file whose change a reader can see: not a chapter's own tests."""
    return not path.rsplit("/", 1)[-1].startswith(("test_", "conftest"))


def changes(root: Path, limit: int = 200) -> list[Change] | None:
    """The newest ``limit`` commits touching WATCHED paths, newest first; None without history."""
    prefixes = [prefix.rstrip("/") for prefix, _ in WATCHED]
    out = _git(root, "log", f"-{limit}", "--no-merges", "--format=%x00%cs%x09%s", "--name-only", "--", *prefixes)
    if out is None:
        return None
    found: list[Change] = []
    for record in out.split("\x00"):
        if not record.strip():
            continue
        head, _, body = record.partition("\n")
        date, _, subject = head.partition("\t")
        files = tuple(line for line in body.splitlines() if line.strip())
        seen = (kind for file in files if _content(file) for prefix, kind in WATCHED if file.startswith(prefix))
        kinds = tuple(dict.fromkeys(seen))
        if kinds:
            found.append(Change(date, kinds, subject.strip(), files))
    return found


def _escape(text: str) -> str:
    """A commit subject as literal Markdown text: no emphasis, code, links or HTML from it."""
    for char in "\\`*_[]<>{}#|":
        text = text.replace(char, "\\" + char)
    return text


def changes_markdown(root: Path, limit: int = 200) -> str:
    """The "What changed" page's body: a dated list per day, or one line saying there is no history."""
    found = changes(root, limit)
    if found is None:
        return (
            "This copy of the site was built without its git history, so it cannot list the changes;"
            " a build from a clone of the repository lists them here.\n"
        )
    if not found:
        return "No spec, measurement or chapter has changed yet.\n"
    lines: list[str] = []
    day = None
    for change in found:
        if change.date != day:
            day = change.date
            lines.append(f"\n## {day}\n")  # h2 under the page's h1: no level skipped
        chapters = sorted(
            {
                file.split("/")[2]
                for file in change.files
                if file.startswith("docs/chapters/") and file.count("/") >= 3 and _content(file)
            }
        )
        where = ", ".join(change.kinds)
        if chapters:
            where += " (" + ", ".join(chapters) + ")"
        lines.append(f"- **{where}**: {_escape(change.subject)}")
    return "\n".join(lines).lstrip("\n") + "\n"
