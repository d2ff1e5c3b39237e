"""The lint rules documented in pyproject.toml hold for every Python file in the repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_ruff_finds_nothing() -> None:
    """``ruff check`` with no paths, exactly as ``make lint`` runs it: every file ruff finds, .gitignore respected."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_ruff_format_would_change_nothing() -> None:
    """``ruff format --check``, as ``make lint`` runs it too: one layout, so a diff shows only what changed."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
