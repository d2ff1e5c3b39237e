"""Build the roofline package as a pure ``py3-none-any`` wheel for the in-browser runtime.

Writes ``roofline-<version>-py3-none-any.whl`` into OUT_DIR (default ``dist/``) from
``roofline/``, ``pyproject.toml`` and ``README.md``, using pip's ordinary wheel build
(setuptools, no build isolation, no index: it works offline). The page loads the
wheel with Pyodide's ``loadPackage(url)``. pyodide-build is not used: on Python 3.11
it downloads a cross-build environment from the internet and cannot read Pyodide
314's lockfile, and a pure-Python wheel does not need it.

Run: ``python scripts/build_wheel.py [OUT_DIR]``. The MkDocs hook ``hooks/runtime.py``
calls ``build_wheel`` on every site build; a wheel for unchanged sources comes from
``build/wheel-cache/`` in milliseconds instead of seconds.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "build" / "wheel-cache"
#: Every file the wheel is made from; the digest of these names the cache entry.
SOURCE_FILES = ("pyproject.toml", "README.md")
PACKAGE = "roofline"
PURE_WHEEL = re.compile(r"^roofline-[^-]+-py3-none-any\.whl$")
#: Fixed zip timestamps (1980-01-01, the zip epoch), so equal sources give equal bytes.
SOURCE_DATE_EPOCH = "315532800"


class WheelError(RuntimeError):
    """The wheel could not be built, or is not the pure wheel the browser needs."""


def _sources(root: Path) -> list[Path]:
    files = [root / name for name in SOURCE_FILES if (root / name).exists()]
    package = root / PACKAGE
    files += sorted(path for path in package.rglob("*") if path.is_file() and "__pycache__" not in path.parts)
    return files


def source_digest(root: Path = ROOT) -> str:
    """SHA-256 over the relative path and bytes of every source file, in a fixed order."""
    digest = hashlib.sha256()
    for path in _sources(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def check_wheel(path: Path) -> None:
    """Raise WheelError unless ``path`` is a pure wheel holding the package and its spec data.

    Pyodide installs exactly what the wheel holds, so a wheel without
    ``roofline/data/*.toml`` would import and then fail on the first estimate.
    """
    if not PURE_WHEEL.match(path.name):
        raise WheelError(f"{path.name}: not a pure py3-none-any wheel of {PACKAGE}")
    with zipfile.ZipFile(path) as archive:
        names = set(archive.namelist())
    for required in (f"{PACKAGE}/__init__.py", f"{PACKAGE}/data/gpus.toml", f"{PACKAGE}/data/models.toml"):
        if required not in names:
            raise WheelError(f"{path.name}: missing {required}")


def _pip_wheel(root: Path, out_dir: Path) -> Path:
    """Run ``pip wheel`` on a copy of the sources, so the work tree gets no build/ or egg-info."""
    with tempfile.TemporaryDirectory(prefix="roofline-wheel-") as scratch:
        source = Path(scratch) / "src"
        source.mkdir()
        for path in _sources(root):
            target = source / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        built = Path(scratch) / "dist"
        command = [
            sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
            "--disable-pip-version-check", "--quiet", "--wheel-dir", str(built), str(source),
        ]  # fmt: skip
        env = {**os.environ, "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH}
        result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if result.returncode != 0:
            raise WheelError(f"pip wheel failed:\n{result.stdout}{result.stderr}")
        wheels = list(built.glob("*.whl"))
        if len(wheels) != 1:
            raise WheelError(f"pip wheel made {len(wheels)} wheels, expected one")
        check_wheel(wheels[0])
        out_dir.mkdir(parents=True, exist_ok=True)
        # Copy under a temporary name, then rename: a reader of out_dir never sees half a wheel.
        partial = out_dir / f".{wheels[0].name}.{os.getpid()}.partial"
        shutil.copyfile(wheels[0], partial)
        final = out_dir / wheels[0].name
        os.replace(partial, final)
        return final


def build_wheel(out_dir: Path | None = None, *, root: Path = ROOT, cache: Path | None = CACHE) -> Path:
    """Build (or take from the cache) the pure wheel of ``root``'s package and return its path.

    With ``out_dir`` the wheel is copied there; without it the path is the cache
    entry itself, which is never rewritten once made (its name is the source digest).
    """
    if cache is None:
        return _pip_wheel(root, Path(out_dir or ROOT / "dist"))
    entry = cache / source_digest(root)[:20]
    cached = sorted(entry.glob("*.whl")) if entry.is_dir() else []
    if not cached:
        cached = [_pip_wheel(root, entry)]
    check_wheel(cached[0])
    if out_dir is None:
        return cached[0]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / cached[0].name
    shutil.copyfile(cached[0], target)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", nargs="?", default=str(ROOT / "dist"), help="where to write the wheel")
    parser.add_argument("--no-cache", action="store_true", help="always run pip, ignoring build/wheel-cache/")
    args = parser.parse_args()
    try:
        path = build_wheel(Path(args.out_dir), cache=None if args.no_cache else CACHE)
    except WheelError as error:
        sys.exit(f"build_wheel: error: {error}")
    print(path)


if __name__ == "__main__":
    main()
