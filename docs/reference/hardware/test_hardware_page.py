"""The reference pages "Hardware" and "Models": every spec with its source, and what each memory figure means."""

from __future__ import annotations

from pathlib import Path

import pytest

import roofline
from roofline import formatting as fmt
from sitegen import escape
from sitegen.context import load_context
from sitegen.pages import find

DOCS = Path(__file__).resolve().parents[2]
hardware_page = find(DOCS, "hardware").module()
models_page = find(DOCS, "models").module()


@pytest.fixture(scope="module")
def ctx():
    return load_context(DOCS.parent)


def test_reference_tables_list_every_spec_with_its_source(ctx):
    hardware, models = hardware_page.hardware_table(ctx), models_page.models_table(ctx)
    for gpu in ctx.specs.gpus.values():
        row = next(line for line in hardware.splitlines() if line.startswith(f"| {gpu.name} | `{gpu.id}`"))
        assert fmt.gigabytes(gpu.memory_bytes, 0) in row
        source = next(line for line in hardware.splitlines() if line.startswith(f"- **{gpu.name}** (`{gpu.id}`)"))
        for url in escape.URL.findall(gpu.source):
            assert f"]({escape.without_sentence_end(url)})" in source
    for model in ctx.specs.models.values():
        row = next(line for line in models.splitlines() if line.startswith(f"| {model.name} | `{model.id}`"))
        assert fmt.parameters(roofline.total_parameters(model)) in row
        source = next(line for line in models.splitlines() if line.startswith(f"- **{model.name}** (`{model.id}`)"))
        for url in escape.URL.findall(model.source):
            assert f"]({escape.without_sentence_end(url)})" in source


def test_the_hardware_table_says_what_each_memory_figure_means(ctx):
    hardware = hardware_page.hardware_table(ctx)
    notes = hardware.split("**What the memory figure means**", 1)[1]
    for gpu in ctx.specs.gpus.values():
        if gpu.memory_note:
            line = next(line for line in notes.splitlines() if f"(`{gpu.id}`)" in line)
            assert line.endswith(": " + escape.text(gpu.memory_note))
    assert "'80 GB' is the nameplate" in ctx.specs.gpu("h100-sxm").memory_note


def test_the_hardware_table_names_each_chip_that_computes_as_another_and_why(ctx):
    """The H200 and the GH200 are the H100 SXM's die with other memory (the MI325X the MI300X's, the
    A100 PCIe the A100 SXM's): the page says their expected figures use the other chip's compute
    shares, with the source that says the two have the same tensor rates."""
    notes = hardware_page.hardware_table(ctx).split("**Chips with another's tensor cores**", 1)[1]
    sharing = [gpu for gpu in ctx.specs.gpus.values() if gpu.same_compute_as]
    pairs = {gpu.id: gpu.same_compute_as for gpu in sharing}
    assert pairs == {"h200": "h100-sxm", "gh200": "h100-sxm", "mi325x": "mi300x", "a100-80gb-pcie": "a100-80gb"}
    for gpu in sharing:
        named = ctx.specs.gpu(gpu.same_compute_as)
        line = next(line for line in notes.splitlines() if f"(`{gpu.id}`)" in line)
        assert f"computes as **{escape.text(named.name)}** (`{named.id}`)" in line
        for url in escape.URL.findall(gpu.same_compute_source):
            assert f"]({escape.without_sentence_end(url)})" in line
