"""Formatting for the numbers a page's prose quotes: each becomes the exact text a reader sees.

Page modules (``docs/**/page.py``) compute values with the package and format
them with these helpers and ``roofline.formatting``, so "209" in a chapter is
the string the generator wrote, never typed by hand.
"""

from __future__ import annotations

from roofline import formatting as fmt


def percent(fraction: float, digits: int = 0) -> str:
    """``0.6852`` -> ``"69%"``."""
    return f"{fraction * 100:.{digits}f}%"


def tera(value: float, digits: int = 2) -> str:
    """``3.35e12`` -> ``"3.35"`` (the unit is written in the prose)."""
    return f"{value / 1e12:,.{digits}f}"


def whole(value: float) -> str:
    """``2000`` -> ``"2,000"``."""
    return f"{value:,.0f}"


def ms(seconds: float) -> str:
    """Milliseconds without the unit: ``0.0335`` -> ``"33.5"``."""
    return fmt.milliseconds(seconds).removesuffix(" ms")
