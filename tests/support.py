"""Helpers shared by the test modules (pytest puts tests/ on sys.path)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def load_script(name: str, path: Path) -> ModuleType:
    """Import a file that is not in a package (a script, a hook, the calculator view) as ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def node_test_report(node: str, name: str) -> str:
    """Run ``tests/node/NAME`` with Node's own test runner; assert it passed; return its report."""
    done = subprocess.run(
        [node, "--test", "--test-reporter=spec", str(ROOT / "tests" / "node" / name)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, report
    return report
