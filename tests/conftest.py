"""Test-session setup: the sibling scripts (chromium, serve, build_wheel, …) import by name."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
