"""One colour, one meaning (issue 40): chapter 3's timeline figure and its simulator's timeline give each
kind of span the same colour and name. Before, red was padding in the figure and a preemption's
prefill-again in the simulator, whose kinds came in another order (the page colours the n-th kind)."""

from __future__ import annotations

import re

from roofline.serving import SPAN_LEGEND
from sitegen.pages import find
from support import ROOT

CSS = ROOT / "docs" / "javascripts" / "runtime" / "runtime.css"


def _simulator_colours() -> dict[str, str]:
    """The light scheme's colour of each kind the simulator's timeline draws, by its place in the list."""
    css = CSS.read_text(encoding="utf-8")
    by_index = {
        int(n): colour for n, colour in re.findall(r"^\.rf-timeline__span--(\d) \{ fill: (#[0-9a-f]{6});", css, re.M)
    }
    kinds = find(ROOT / "docs", "continuous-batching").calculator("serving").SPAN_KINDS
    return {kind: by_index[index] for index, (kind, _) in enumerate(kinds) if index in by_index}


def _figure_colours() -> dict[str, str]:
    """The figure's colour of each kind, from the chart the page builds."""
    page = find(ROOT / "docs", "continuous-batching").module()
    charts = __import__(page.__package__ + ".charts", fromlist=["SPAN_KINDS"])
    return {kind: charts.SPAN_COLOURS[index] for index, kind in enumerate(charts.SPAN_KINDS)}


def test_each_kind_of_span_has_one_colour_in_the_figure_and_the_simulator() -> None:
    simulator, figure = _simulator_colours(), _figure_colours()
    shared = set(simulator) & set(figure)
    assert {"prefill", "decode", "padding"} <= shared
    assert {kind: simulator[kind] for kind in shared} == {kind: figure[kind] for kind in shared}
    assert simulator["recompute"] != simulator["padding"], "a preemption and padding share a colour"


def test_both_name_the_kinds_from_one_legend() -> None:
    kinds = find(ROOT / "docs", "continuous-batching").calculator("serving").SPAN_KINDS
    assert [tuple(pair) for pair in kinds] == list(SPAN_LEGEND)
    assert dict(SPAN_LEGEND)["padding"] == "Padding (static)"
