"""The package keeps its promises about itself: standard library only, documented, typed records."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import sys
from pathlib import Path

import roofline

PACKAGE = Path(roofline.__file__).parent


def _public_definitions(tree: ast.Module):
    """Module-level functions and classes, and the methods of public classes, not starting with _."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
            yield node
            if isinstance(node, ast.ClassDef):
                for member in node.body:
                    if isinstance(member, ast.FunctionDef) and not member.name.startswith("_"):
                        yield member


def test_every_public_function_and_class_has_a_docstring() -> None:
    missing = [
        f"{path.name}:{node.lineno} {node.name}"
        for path in sorted(PACKAGE.glob("*.py"))
        for node in _public_definitions(ast.parse(path.read_text(encoding="utf-8")))
        if ast.get_docstring(node) is None
    ]
    assert missing == []


def test_imports_only_the_standard_library() -> None:
    allowed = set(sys.stdlib_module_names) | {"roofline"}
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] in allowed, f"{path.name} imports {name}"


def test_public_records_are_frozen_dataclasses() -> None:
    for name in ("GpuSpec", "ModelSpec", "MoeSpec", "MlaSpec", "Hardware", "Workload", "Pass", "MemoryUse", "Estimate"):
        record = getattr(roofline, name)
        assert dataclasses.is_dataclass(record) and record.__dataclass_params__.frozen, name


def test_every_exported_name_exists() -> None:
    for name in roofline.__all__:
        assert hasattr(roofline, name), name
        assert inspect.getdoc(getattr(roofline, name)), name
