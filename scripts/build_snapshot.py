"""Build the page's Pyodide memory snapshot (scripts/make_snapshot.mjs, in Node), cached.

The snapshot is Python's memory with the roofline wheel unpacked, the package and
the page's helper modules (``docs/javascripts/runtime/*.py``) imported and the spec
files parsed; the worker restores it instead of booting Python (see
``docs/javascripts/runtime/boot.mjs``). Making one takes Node about 5–10 s, so it is
kept in ``build/snapshot-cache/`` under a name that is a digest of everything it is
made from: the Pyodide version, the wheel's bytes, the helper modules and the
scripts that write and read it. An unchanged rebuild finds it there; a changed input gives a new name, so a
browser never mixes a cached snapshot with a newer wheel.

Run: ``python scripts/build_snapshot.py WHEEL`` prints the snapshot's path. The MkDocs
hook ``hooks/runtime.py`` calls ``build_snapshot`` on every site build.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "build" / "snapshot-cache"
MAKER = ROOT / "scripts" / "make_snapshot.mjs"
#: The JavaScript that makes and reads the snapshot: a change to it is a new snapshot.
CODE = tuple(
    ROOT / "docs" / "javascripts" / "runtime" / name for name in ("boot.mjs", "snapshot_codec.mjs", "wasm_memory.mjs")
)
PYODIDE = ROOT / "node_modules" / "pyodide"
HELPERS = ROOT / "docs" / "javascripts" / "runtime"
#: Snapshots older than the newest few are deleted: each is about 5 MB.
KEEP = 3


class SnapshotError(RuntimeError):
    """The snapshot could not be made; the message is one line naming the cause."""


def helper_modules() -> list[Path]:
    """The page's helper modules, which the worker also loads: every ``.py`` beside boot.mjs."""
    return sorted(HELPERS.glob("*.py"))


def pyodide_version(pyodide: Path = PYODIDE) -> str:
    try:
        return json.loads((pyodide / "package.json").read_text(encoding="utf-8"))["version"]
    except (OSError, ValueError, KeyError):
        raise SnapshotError(f"{pyodide / 'package.json'} has no Pyodide version; run `make setup` (npm ci)") from None


def snapshot_name(wheel: Path, modules: list[Path], pyodide: Path = PYODIDE) -> str:
    """``roofline-pyodide<version>-<digest>.snapshot.gz``: digest = SHA-256 of every input."""
    version = pyodide_version(pyodide)
    digest = hashlib.sha256(version.encode() + b"\0")
    for path in (wheel, MAKER, *CODE, *modules):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return f"roofline-pyodide{version}-{digest.hexdigest()[:16]}.snapshot.gz"


def content_digest(snapshot: Path, data: bytes | None = None, field: str = "sha256") -> str:
    """The SHA-256 of the snapshot's records, as its header records it (make_snapshot.mjs computes it).

    The page names it beside the file's address, and the worker restores nothing that
    does not match (boot.mjs): a file corrupted or replaced after the build is refused.
    With ``data`` (the file's bytes, read once) the digest is those bytes', whatever the
    file holds by now. ``field="rawSha256"``: the raw snapshot's digest, which a copy a page
    kept for the next must match (docs/javascripts/runtime/snapshot_store.mjs).
    """
    try:
        with gzip.open(snapshot if data is None else io.BytesIO(data), "rb") as stream:
            stream.readline()  # the format line
            digest = json.loads(stream.readline())[field]
    except (OSError, EOFError, ValueError, KeyError, TypeError) as error:
        raise SnapshotError(f"{snapshot.name} has no readable digest in its header ({error})") from None
    if not (isinstance(digest, str) and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)):
        raise SnapshotError(f"{snapshot.name}'s header holds no SHA-256 digest ({field})")
    return digest


def build_snapshot(
    wheel: Path, modules: list[Path] | None = None, *, cache: Path = CACHE, pyodide: Path = PYODIDE
) -> Path:
    """The cached snapshot for ``wheel`` and ``modules``, made with Node if it is not there yet."""
    modules = helper_modules() if modules is None else modules
    target = cache / snapshot_name(wheel, modules, pyodide)
    if target.is_file():
        return target
    node = shutil.which("node")
    if node is None:
        raise SnapshotError("node is not on PATH; the Pyodide snapshot is made with Node 20 (install nodejs)")
    cache.mkdir(parents=True, exist_ok=True)
    # A unique scratch name, renamed at the end: two builds at once never see half a file.
    handle, scratch = tempfile.mkstemp(dir=cache, suffix=".partial")
    os.close(handle)
    command = [node, str(MAKER), str(pyodide), str(wheel), scratch, *map(str, modules)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        if result.returncode != 0:
            last = (result.stderr.strip() or result.stdout.strip() or "no output").splitlines()[-1][:300]
            raise SnapshotError(f"making the Pyodide snapshot failed (node {MAKER.name}): {last}")
        os.chmod(scratch, 0o644)  # mkstemp makes it private; the site serves it
        os.replace(scratch, target)
    finally:
        Path(scratch).unlink(missing_ok=True)
    _prune(cache, keep=target)
    return target


def _prune(cache: Path, keep: Path) -> None:
    """Delete all but the newest KEEP snapshots (and never ``keep``)."""
    snapshots = sorted(cache.glob("*.snapshot.gz"), key=lambda path: path.stat().st_mtime, reverse=True)
    for old in snapshots[KEEP:]:
        if old != keep:
            old.unlink(missing_ok=True)


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/build_snapshot.py WHEEL")
    try:
        print(build_snapshot(Path(sys.argv[1]).resolve()))
    except SnapshotError as error:
        sys.exit(f"build_snapshot: {error}")


if __name__ == "__main__":
    main()
