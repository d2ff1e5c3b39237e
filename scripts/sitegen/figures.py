"""The course's figure frame, shared by every page's charts: size, title, palette, axes, legend.

A page module builds its chart with Altair (data inline, ``alt.Data(values=...)``,
which needs neither pandas nor numpy), then passes it through ``figure_spec``, which
gives it the course's look and its title. The title and subtitle are also the
figure's alternative text (``render.alt_text``): a figure without a title fails the
build. Nothing here is named by Altair's global counters (no unnamed selections),
so the same chart gives byte-identical output.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import altair as alt

#: Drawing size of the static SVGs; the interactive charts stretch to the column width.
WIDTH, HEIGHT = 640, 340
#: Categorical colours that read on both the light and the dark page.
PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#9c755f"]


def sig(value: float, digits: int = 4) -> float:
    """Round to ``digits`` significant digits: smaller specs, and tooltips show what matters."""
    return float(f"{value:.{digits}g}")


def geometric(start: float, stop: float, per_doubling: int = 8) -> Iterator[float]:
    """``start``, then steps of 2**(1/per_doubling), up to and including ``stop``."""
    step = 2 ** (1 / per_doubling)
    value = start
    while value < stop * (1 - 1e-9):
        yield value
        value *= step
    yield stop


def figure_spec(
    chart: alt.TopLevelMixin, title: str, subtitle: list[str], *, size: tuple[int, int] | None = (WIDTH, HEIGHT)
) -> dict[str, Any]:
    """The course's frame for a figure, as a Vega-Lite dict: its size (``None``: the parts of a
    compound chart set their own), title (a subtitle line per entry, so narrow screens do not
    clip it), palette, axis and legend style. Every chapter's figures go through it; the title
    and subtitle are what a screen reader hears for the figure."""
    sized = chart.properties(width=size[0], height=size[1]) if size else chart
    spec = (
        sized.properties(title=alt.TitleParams(title, subtitle=subtitle, anchor="start"))
        .configure_range(category=PALETTE)
        # labelSeparation: greedy overlap removal also drops labels that would touch (4,09616,384).
        .configure_axis(labelFontSize=12, titleFontSize=12, labelOverlap="greedy", labelSeparation=6)
    )
    return spec.configure_legend(orient="bottom", direction="horizontal", columns=4).to_dict()
