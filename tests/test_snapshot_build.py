"""The build's Pyodide snapshot (scripts/build_snapshot.py): named by its inputs, cached, and
a failure to make it is one clear line that leaves nothing half-written behind.

Making a real snapshot is covered by tests/test_node_pyodide.py (which also restores it)
and by every site build; these tests use stand-in inputs and a stand-in maker script.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import build_snapshot

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    pyodide = tmp_path / "pyodide"
    pyodide.mkdir()
    (pyodide / "package.json").write_text(json.dumps({"version": "314.0.7"}))
    wheel = tmp_path / "roofline-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"wheel bytes")
    module = tmp_path / "roofline_cell.py"
    module.write_text("def run(): pass\n")
    return {"pyodide": pyodide, "wheel": wheel, "module": module}


def name(inputs: dict[str, Path]) -> str:
    return build_snapshot.snapshot_name(inputs["wheel"], [inputs["module"]], inputs["pyodide"])


def test_the_name_carries_the_pyodide_version_and_changes_with_every_input(inputs) -> None:
    first = name(inputs)
    assert first.startswith("roofline-pyodide314.0.7-") and first.endswith(".snapshot.gz")
    assert name(inputs) == first
    seen = {first}
    inputs["wheel"].write_bytes(b"another wheel")
    seen.add(name(inputs))
    inputs["module"].write_text("def run(): return 1\n")
    seen.add(name(inputs))
    (inputs["pyodide"] / "package.json").write_text(json.dumps({"version": "315.0.0"}))
    seen.add(name(inputs))
    assert len(seen) == 4
    assert name(inputs).startswith("roofline-pyodide315.0.0-")


def test_an_unchanged_rebuild_reuses_the_cached_snapshot_without_node(inputs, tmp_path, monkeypatch) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    cached = cache / name(inputs)
    cached.write_bytes(b"made earlier")

    def no_node(*args: object, **kwargs: object) -> None:
        raise AssertionError("node ran although the snapshot was cached")

    monkeypatch.setattr(subprocess, "run", no_node)
    found = build_snapshot.build_snapshot(inputs["wheel"], [inputs["module"]], cache=cache, pyodide=inputs["pyodide"])
    assert found == cached


@pytest.mark.node
def test_a_failing_maker_is_one_line_and_leaves_no_file(inputs, tmp_path, monkeypatch) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    maker = tmp_path / "make_snapshot.mjs"
    maker.write_text('console.error("Error: Pyodide would not start\\n    at somewhere"); process.exit(1);\n')
    monkeypatch.setattr(build_snapshot, "MAKER", maker)
    cache = tmp_path / "cache"
    with pytest.raises(build_snapshot.SnapshotError) as failure:
        build_snapshot.build_snapshot(inputs["wheel"], [inputs["module"]], cache=cache, pyodide=inputs["pyodide"])
    message = str(failure.value)
    assert "\n" not in message
    assert message.startswith("making the Pyodide snapshot failed (node make_snapshot.mjs): ")
    assert list(cache.iterdir()) == []


def test_a_pyodide_without_its_package_json_is_one_line(inputs) -> None:
    (inputs["pyodide"] / "package.json").unlink()
    with pytest.raises(build_snapshot.SnapshotError, match=r"package\.json has no Pyodide version; run `make setup`"):
        name(inputs)
