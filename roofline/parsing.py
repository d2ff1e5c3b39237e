"""Numbers as a person types them (a command-line option, a length range): one parser, one rule.

- ASCII digits only: ``int()`` and ``float()`` also take ``"١٢"`` (Arabic-Indic) and
  ``"１０"`` (full-width), which no reader means as a number here.
- No sign but a number's own ``-``: ``+1`` and ``-0`` are refused.
- ``_`` or ``,`` may group digits, one at a time and only between two digits:
  ``1_000`` and ``1,000``, never ``,,1,,`` or ``1__0``.
- A real number may have a fraction and an exponent (``2.5``, ``1e-6``); ``inf`` and
  ``nan`` are read, then refused as outside every range; hex is not a number here.
- A whole number is measured before it is converted: a 5,000-digit one is refused
  without ``int()`` (which refuses past 4,300 digits, slowly).

A bad value raises SpecError whose message echoes it cut to ``SHOWN_LENGTH`` characters.
"""

from __future__ import annotations

import math
import re

from .errors import SpecError, shown

#: Digits in groups: "_" or "," one at a time, only between two digits (a page's number fields
#: take the same rule: docs/javascripts/runtime/checks.mjs).
DIGIT_GROUPS = r"[0-9]+(?:[_,][0-9]+)*"
#: A leading "-" is the only sign (a number's own, as the page's fields take it); "+1" is refused.
WHOLE = re.compile(rf"-?{DIGIT_GROUPS}")
REAL = re.compile(
    rf"-?(?:(?:{DIGIT_GROUPS}(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)", re.IGNORECASE
)


def _signed_zero(text: str, value: float) -> SpecError | None:
    """The error for "-0" (or "-0.0"): a sign on zero is a typo, not a value anyone means."""
    if value == 0 and text.strip().startswith("-"):
        return SpecError(f"must be written without a sign, got {shown(text.strip())}")
    return None


def _plain(text: str) -> str:
    return text.strip().replace("_", "").replace(",", "")


def _digits_phrase(count: int, negative: bool) -> str:
    """'a 12-digit number', 'an 11-digit negative number': the article follows the spoken count
    (eight, eleven, eighteen, eighty ..., eight hundred ... start with a vowel sound)."""
    spoken = str(count)
    vowel = spoken.startswith("8") or count in (11, 18) or 11_000 <= count < 12_000 or 18_000 <= count < 19_000
    kind = "negative number" if negative else "number"
    return f"{'an' if vowel else 'a'} {count:,}-digit {kind}"


def _too_long(digits: str, bounds: tuple[int, int]) -> bool:
    """Whether ``digits`` (a whole number, grouping removed) has more digits than either bound."""
    minimum, maximum = bounds
    return len(digits.lstrip("+-").lstrip("0")) > len(str(max(abs(minimum), abs(maximum))))


def whole_shown(text: str, bounds: tuple[int, int]) -> str:
    """How a range error shows ``text``, a whole number as ``WHOLE`` reads it: past ``bounds``'
    width its length ('a 12-digit number', never converted), a signed zero as typed, else its
    value grouped ('1,000')."""
    digits = _plain(text)
    if _too_long(digits, bounds):
        negative = digits.startswith("-")
        return _digits_phrase(len(digits.lstrip("+")) - negative, negative)
    value = int(digits)
    return shown(text.strip()) if _signed_zero(text, value) else f"{value:,}"


def parse_whole(text: str, bounds: tuple[int, int]) -> int:
    """``text`` as a whole number within ``bounds`` (inclusive), written as the module says."""
    minimum, maximum = bounds
    if not isinstance(text, str) or not WHOLE.fullmatch(text.strip()):
        raise SpecError(f"must be a whole number, got {shown(text)}")
    digits = _plain(text)
    if _too_long(digits, bounds):
        if digits.startswith("-"):
            raise SpecError(f"must be at least {minimum:,}, got {whole_shown(text, bounds)}")
        raise SpecError(f"must be at most {maximum:,}, got {whole_shown(text, bounds)}")
    value = int(digits)
    signed = _signed_zero(text, value)
    if signed:
        raise signed
    if value < minimum:
        raise SpecError(f"must be at least {minimum:,}, got {value:,}")
    if value > maximum:
        raise SpecError(f"must be at most {maximum:,}, got {value:,}")
    return value


def parse_real(text: str, bounds: tuple[float, float]) -> float:
    """``text`` as a finite number within ``bounds`` (inclusive), written as the module says."""
    low, high = bounds
    if not isinstance(text, str) or not REAL.fullmatch(text.strip()):
        raise SpecError(f"must be a number, got {shown(text)}")
    value = float(_plain(text))  # a long run of digits is fine here: float() has no digit limit
    signed = _signed_zero(text, value)
    if signed:
        raise signed
    if not (math.isfinite(value) and low <= value <= high):
        raise SpecError(f"must be between {low:g} and {high:g}, got {shown(text.strip())}")
    return value
