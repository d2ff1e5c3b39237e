"""The benchmark scripts say in one line what a fresh machine lacks, before building anything."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import bench_browser
import bench_pages
import bench_site
import chromium
import serve


def test_a_missing_chromium_stops_every_browser_benchmark_in_one_line(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(chromium, "CHROMIUM_PATH", tmp_path / "chromium")
    built: list[object] = []
    monkeypatch.setattr(serve, "build_site", lambda *args, **kwargs: built.append(args))
    for tool, start in (
        ("bench_pages", lambda: bench_pages.report()),
        ("bench_browser", lambda: bench_browser.compare(tmp_path / "old-site")),
        ("bench_browser", lambda: bench_browser.report()),
        ("bench_site", lambda: bench_site.report()),
        ("chromium.launch", lambda: chromium.launch(object())),  # any other caller
    ):
        with pytest.raises(SystemExit) as stopped:
            start()
        message = str(stopped.value)
        assert message.startswith(f"{tool}: {tmp_path / 'chromium'} is missing"), message
        assert "apt-get install chromium" in message and "\n" not in message
    assert built == []  # each stopped before building a site


@pytest.mark.parametrize(("name", "lighthouse_runs", "axe"), [("LIGHTHOUSE", True, False), ("AXE", False, True)])
def test_a_missing_node_tool_names_itself_and_make_setup(monkeypatch, tmp_path, name, lighthouse_runs, axe) -> None:
    monkeypatch.setattr(chromium, "CHROMIUM_PATH", Path(sys.executable))  # any file that exists
    missing = bench_pages.ROOT / "node_modules" / "gone" / "tool.js"
    monkeypatch.setattr(bench_pages, name, missing)
    with pytest.raises(SystemExit) as stopped:
        bench_pages.report(tmp_path / "site", lighthouse_runs=lighthouse_runs, axe=axe)
    assert str(stopped.value) == "bench_pages: node_modules/gone/tool.js is missing; run `make setup` (npm ci)"


def test_chromium_keeps_its_shared_memory_in_tmp_only_where_dev_shm_is_small(monkeypatch, tmp_path: Path) -> None:
    """A container's /dev/shm is 64 MB by default, too small for Chromium's renderers; this machine's is not."""
    sizes = {"/container/shm": 64 << 20, "/machine/shm": 24 << 30}
    real = chromium.shutil.disk_usage
    monkeypatch.setattr(
        chromium.shutil,
        "disk_usage",
        lambda path: real(tmp_path)._replace(total=sizes[path]) if path in sizes else real(path),
    )
    assert chromium.small_shared_memory("/container/shm")
    assert not chromium.small_shared_memory("/machine/shm")
    assert not chromium.small_shared_memory(str(tmp_path / "absent"))  # no such folder: leave the flag out
    assert ("--disable-dev-shm-usage" in chromium.CHROMIUM_ARGS) == chromium.small_shared_memory()
