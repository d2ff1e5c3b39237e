"""The size manifest the progress line counts against (data-rf-sizes, hooks/runtime.py).

The worker's "Starting Python: downloading X of Y MB" line (docs/javascripts/runtime/runtime.mjs)
takes each file's whole from this manifest, since a host that gzips the wasm sends the packed
length while the worker counts unpacked bytes. Each entry must name a file the built site serves,
at the size it is served with, and every large file the worker fetches must be in it.
"""

from __future__ import annotations

import json
from urllib.parse import urljoin, urlsplit

import pytest

pytestmark = pytest.mark.slow  # it reads the tests' built site

CHAPTER = "chapters/prefill-vs-decode/"


def test_every_widget_names_the_runtime_files_at_their_served_sizes(site) -> None:
    page = site.soup(CHAPTER)
    widgets = page.select("[data-rf-cell], [data-rf-calc]")
    assert widgets, "the chapter shows no widget"
    manifests = {widget["data-rf-sizes"] for widget in widgets}
    assert len(manifests) == 1, "every widget of a page names the same files"
    sizes = json.loads(manifests.pop())
    base = site.isolated + CHAPTER
    served = {}
    for address, size in sizes.items():
        path = site.directory / urlsplit(urljoin(base, address)).path.lstrip("/")
        assert path.is_file(), f"data-rf-sizes names {address}, which the site does not serve"
        served[path.name] = size
        assert size == path.stat().st_size, f"{address}: {size} bytes named, {path.stat().st_size} served"
    widget = widgets[0]
    wanted = {
        "pyodide.asm.wasm",
        "python_stdlib.zip",
        urlsplit(widget["data-rf-snapshot"]).path.rsplit("/", 1)[-1],
        widget["data-rf-wheel"].rsplit("/", 1)[-1],
    }
    assert wanted <= set(served), f"missing from data-rf-sizes: {sorted(wanted - set(served))}"
    assert sum(served.values()) > 10e6  # the runtime's megabytes, as the progress line's total shows them
