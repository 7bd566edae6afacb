"""Points and percentages: the gradebook's precision, and the one way every reader sees them.

A student who checks the arithmetic of their letter must find the gradebook's numbers:
the letter (Markdown, HTML, PDF), every page, the CLI and every export (Canvas CSV,
CSV, JSON) write a grade's points and its percentage with the functions here, and with
nothing else (``tests/test_one_number.py`` scans the source for any other way).

- **Precision.** The gradebook keeps points to ``PLACES`` (2) decimals. Scoring rounds
  each criterion's points with ``gradebook`` (half up, as a person rounds: 0.845 is
  0.85) and a grade's total is the sum of its criteria's rounded points
  (``grader.scoring.total_points``), so the criteria a letter shows add up to the total
  it shows, and the Canvas CSV exports that same total. A score short of full is never
  rounded up to full (it stays 0.01 short), nor one above nothing down to 0.
- **Points** are written by ``as_points``: "8.64", "3", "0.5" (no trailing zeros, never
  an exponent); ``points_text`` writes a score and its maximum, "8.64 / 20".
- **Percentages** are written by ``percent_text`` from the points as shown (8.64 / 20 is
  43.2%: "43%"): whole, rounded half up as a person rounds (16.5 / 20 is 82.5%: "83%"),
  never "100%" for a score short of full, never "0%" for a score above nothing.
  ``decimals`` asks for more places under the same rule (a preview's 52.6% -> 52.9%);
  ``decimals=None`` writes as few as show where the score stands (the self-check's
  "99.7%" for a solution that loses a tenth of a point). ``whole_percent`` is the same
  number for a table's column.

May import: nothing of ours (every room may import it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal, InvalidOperation

__all__ = ["PLACES", "as_points", "gradebook", "percent_text", "points_text", "total",
           "whole_percent"]

PLACES = 2  # the decimals the gradebook keeps
_STEP = Decimal(1).scaleb(-PLACES)  # 0.01
_MOST_DECIMALS = 6  # percent_text(decimals=None): beyond this, cut toward the score's side


def _decimal(x: float) -> Decimal | None:
    """``x`` as written (0.845 is exactly 0.845, not the float below it); None when it
    is not a finite number."""
    try:
        d = Decimal(repr(float(x)))
    except (InvalidOperation, ValueError, TypeError, OverflowError):
        return None
    return d if d.is_finite() else None


def _rounded(x: float, full: float | None) -> Decimal | None:
    d = _decimal(x)
    if d is None:
        return None
    q = d.quantize(_STEP, ROUND_HALF_UP)
    top = _decimal(full) if full is not None else None
    if top is not None and d < top <= q:  # short of full: never shown (or kept) as full
        q = max(top - _STEP, Decimal(0)).quantize(_STEP)
    if d > 0 >= q:  # above nothing: never 0
        q = _STEP if top is None or top >= _STEP else q
    return q


def gradebook(x: float, full: float | None = None) -> float:
    """``x`` points at the gradebook's precision (2 decimals, half up); with ``full``
    (the criterion's or the grade's maximum) a score short of it stays short. A value
    that is not a finite number is returned as it is."""
    q = _rounded(x, full)
    return float(x) if q is None else float(q)


def total(parts: Iterable[float]) -> float:
    """A grade's total: the sum of its criteria's points, each already at the gradebook's
    precision (``gradebook``), so the parts shown add up to the total shown."""
    return gradebook(math.fsum(parts))


def as_points(x: float | None, full: float | None = None) -> str:
    """A number of points as every reader sees it: "8.64", "3", "0.5"; "-" for none."""
    if x is None:
        return "-"
    q = _rounded(x, full)
    if q is None:
        return "-"
    text = f"{q:f}".rstrip("0").rstrip(".")  # always 2 places before the strip
    return "0" if text in ("-0", "") else text


def points_text(score: float | None, full: float | None) -> str:
    """"8.64 / 20": a score and its maximum (``as_points``); "-" when there is no score."""
    if score is None:
        return "-"
    shown = as_points(score, full)
    return shown if full is None else f"{shown} / {as_points(full)}"


def _percent(score: float | None, full: float | None, decimals: int | None) -> Decimal | None:
    """The one rule: half up, never 100 short of full, never 0 above nothing; of the
    points as shown (``decimals=None``: of the exact figures)."""
    if score is None or not full:
        return None
    exact_places = decimals is None
    s = _decimal(score) if exact_places else _rounded(score, full)
    f = _decimal(full) if exact_places else _rounded(full, None)
    if s is None or f is None or f <= 0:
        return None
    exact = s * 100 / f
    if not exact_places:
        step = Decimal(1).scaleb(-decimals)
        shown = exact.quantize(step, ROUND_HALF_UP)
        if s < f:
            shown = min(shown, 100 - step)
        if s > 0:
            shown = max(shown, step)
        return shown
    for places in range(_MOST_DECIMALS + 1):  # as few places as show where it stands
        shown = exact.quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP)
        if (shown < 100 or s >= f) and (shown > 0 or s <= 0):
            return shown
    # closer than a millionth to an end: cut, not round, so it stays on its side
    return exact.quantize(Decimal(1).scaleb(-_MOST_DECIMALS),
                          ROUND_FLOOR if exact >= 50 else ROUND_CEILING)


def whole_percent(score: float | None, full: float | None) -> int | None:
    """``percent_text``'s whole number, for a table's column; None without a score or a
    maximum."""
    pct = _percent(score, full, 0)
    return None if pct is None else int(pct)


def percent_text(score: float | None, full: float | None, decimals: int | None = 0) -> str:
    """"43%" (8.64 / 20); "" when there is no percentage. ``decimals`` places under the
    same rule, or ``None`` for as few as show where the score stands."""
    pct = _percent(score, full, decimals)
    return "" if pct is None else f"{pct:f}%"
