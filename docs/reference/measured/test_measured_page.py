"""The reference page "Measured vs ceiling": every measurement in its table with its ceiling, ratio and link."""

from __future__ import annotations

from pathlib import Path

import pytest

import roofline
from sitegen import escape
from sitegen.context import load_context
from sitegen.pages import find

FOLDER = find(Path(__file__).resolve().parents[2], "measured")
measured = FOLDER.module()


@pytest.fixture(scope="module")
def ctx():
    return load_context(FOLDER.docs.parent)


def test_the_measured_page_lists_every_measurement_with_its_ceiling_and_link(ctx):
    from roofline.measured import compare_all

    content = measured.build(ctx)
    comparisons = compare_all()
    rows = {}
    for name in measured.PAGE_TABLES.values():
        for line in content.tables[name].splitlines()[2:]:
            if line.startswith("| "):
                cells = [cell.strip() for cell in line.strip("|").split(" | ")]
                rows[int(cells[0])] = cells
    assert sorted(rows) == list(range(1, len(comparisons) + 1))
    order = list(measured.PAGE_TABLES)
    by_kind = sorted(comparisons, key=lambda c: order.index(measured.group(c)))
    for number, comparison in enumerate(by_kind, start=1):
        m, cells = comparison.measurement, rows[number]
        # The answer leads (measured, ceiling, ratio), so a phone shows it before the table scrolls;
        # a speculative run says so in its first cell.
        assert cells[1] == measured.METRIC_NAMES[m.metric] + (" (speculative)" if m.speculative else "")
        assert cells[2] == measured.shown(m.metric, m.value)
        assert cells[3] == measured.shown(m.metric, comparison.ceiling)
        assert cells[4] == f"{comparison.ratio * 100:.0f}%"
        assert cells[5] == escape.text(ctx.specs.gpu(m.gpu).name) and cells[6] == str(m.gpus)
        assert f"- **{number}.** Hardware: {escape.text(m.hardware)}." in content.tables[
            measured.PAGE_TABLES[measured.group(comparison)]
        ]
        assert (
            cells[9]
            == f"{m.weight_precision} / {m.kv_precision}, batch {m.batch or 'max'},"
            + (f" {m.input_tokens:,} / {m.output_tokens:,}")
            if m.model
            else cells[9] == "—"
        )
        assert cells[10] == f"[{escape.text(m.section)}]({m.source}), {m.date}"
    assert content.values["count"] == str(len(comparisons))
    # The chart has one point per measurement, and every kind that has one.
    figure = next(f for f in content.figures if f.name == "measured-ratios")
    points = next(layer for layer in figure.spec["layer"] if layer["mark"]["type"] == "point")["data"]["values"]
    assert len(points) == len(comparisons)
    assert {p["kind"] for p in points} == {*roofline.measured.KINDS, measured.SPECULATIVE}
    # Only the speculative runs pass their ceilings, and each is in the speculative row.
    assert all(p["kind"] == measured.SPECULATIVE for p in points if p["ratio"] > 1)


def test_shown_units_per_metric():
    shown = measured.shown
    assert shown("decode_tokens_per_s_per_user", 93.89) == "93.9 tok/s"
    assert shown("inter_token_latency_s", 0.01858) == "18.58 ms"
    assert shown("hbm_bandwidth_bytes_per_s", 2.97e12) == "2.97 TB/s"
    assert shown("gemm_flops_per_s", 1.3822e15) == "1,382 TFLOP/s"



def test_the_single_gpu_rows_say_they_are_one_stack_on_one_machine(ctx):
    """All three come from gpt-fast on one power-capped A100: the page says so, in the source's words."""
    note = measured.build(ctx).values["single_rows_note"]
    assert note.startswith("These 3 rows are one stack on one machine: gpt-fast")
    assert "power-limited to 330 W" in note and "not a range for every GPU" in note
