"""The Run cell's highlighter is linear on any input and shows every character (tests/node/editor.test.mjs)."""

from __future__ import annotations

import shutil

import pytest

from support import node_test_report

pytestmark = pytest.mark.node


def test_the_highlighter_is_linear_on_long_runs_strings_and_brackets() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    report = node_test_report(node, "editor.test.mjs")
    assert "pass 15\n" in report, report
