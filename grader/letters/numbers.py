"""Numbers as every page shows them: the letter's rules, in one place.

- A percentage is a whole number, rounded half up as a person rounds (16.5 / 20 is
  82.5%, shown "83%"), never "100%" for a score short of full, never "0%" for a score
  above nothing. The Grade and Review pages, the exports and the letter all use
  ``whole_percent`` (a number, for tables) or ``percent_text`` (words).
- Points are "16.5 / 20": rounded to 2 decimals, without trailing zeros (``points_text``);
  the Grade and Review pages, the progress board and the log lines all use it (the
  letter writes them as the rubric does: ``grader.letters.build.format_points``).
- A cell is named by its position counting every cell from the top, from 1: "cell 16"
  is the sixteenth cell, in the letter and in Review's notebook view alike
  (``cell_number``, ``cell_name``).
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

__all__ = ["cell_name", "cell_number", "percent_text", "points_text", "whole_percent"]


def whole_percent(score: float | None, max_score: float | None) -> int | None:
    """``score`` in whole percent of ``max_score`` (half up, never 100 when short of full
    nor 0 when above nothing); None without a score or a maximum."""
    if score is None or not max_score:
        return None
    try:  # in decimal, from the numbers as written: 16.5 / 20 is exactly 82.5
        exact = Decimal(repr(float(score))) * 100 / Decimal(repr(float(max_score)))
        pct = int(exact.quantize(Decimal(1), ROUND_HALF_UP))
    except (InvalidOperation, ValueError, OverflowError):
        return None  # not a finite number: no percentage to show
    if score < max_score:
        pct = min(pct, 99)
    if score > 0:
        pct = max(pct, 1)
    return pct


def percent_text(score: float | None, max_score: float | None) -> str:
    """"83%" (``whole_percent``), "" when there is no percentage."""
    pct = whole_percent(score, max_score)
    return "" if pct is None else f"{pct}%"


def points_text(points: float | None, max_points: float | None) -> str:
    """"3.5 / 5" (rounded to 2 decimals), "-" when there is no score."""
    if points is None:
        return "-"
    return f"{round(points, 2):g} / {max_points:g}" if max_points is not None else \
        f"{round(points, 2):g}"


def cell_number(index: int) -> int:
    """The number a student sees for the cell at 0-based position ``index``."""
    return index + 1


def cell_name(index: int) -> str:
    """"cell 16" for the cell at 0-based position ``index``."""
    return f"cell {cell_number(index)}"
