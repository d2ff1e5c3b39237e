"""``make serve PORT=...``: the port reaches scripts/serve.py, and a bad or busy one is one line before any build."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SERVE = [sys.executable, str(ROOT / "scripts" / "serve.py")]


@pytest.mark.slow
@pytest.mark.parametrize("port", ["99999", "-1", "80a", "+80"])
def test_a_port_that_is_no_port_is_one_line(port: str) -> None:
    done = subprocess.run([*SERVE, "--port", port], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith(f"argument --port: {port!r} is not a port: give a whole number from 0 to 65535, e.g. PORT=8001")
    )
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_port_in_use_is_one_line_said_before_the_build(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # --build would run MkDocs for minutes first; the port is checked before it.
        command = [*SERVE, "--port", str(port), "--build", "--directory", str(tmp_path / "site")]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"serve.py: error: cannot serve on port {port}: Address already in use; "
        f"choose another, e.g. make serve PORT={port + 1}"
    )
    assert not (tmp_path / "site").exists()


def test_make_serve_passes_port_to_the_server() -> None:
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", "serve", "PORT=8123"], cwd=ROOT, capture_output=True, text=True
    )
    assert 'scripts/serve.py --build --watch --port "8123"' in done.stdout, done.stdout
