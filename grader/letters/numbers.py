"""Numbers as every page shows them: the letter's rules, in one place.

- Points and percentages are the gradebook's (``grader.points``, re-exported here for
  the pages that read them from the letter's side): "8.64 / 20" (``points_text``), "43%"
  (``percent_text``, or ``whole_percent`` for a table), the same in the letter, every
  page, the PDF and every export.
- A cell is named by its position counting every cell from the top, from 1: "cell 16"
  is the sixteenth cell, in the letter and in Review's notebook view alike
  (``cell_number``, ``cell_name``).
"""

from __future__ import annotations

from ..points import as_points, percent_text, points_text, whole_percent

__all__ = ["as_points", "cell_name", "cell_number", "percent_text", "points_text",
           "whole_percent"]


def cell_number(index: int) -> int:
    """The number a student sees for the cell at 0-based position ``index``."""
    return index + 1


def cell_name(index: int) -> str:
    """"cell 16" for the cell at 0-based position ``index``."""
    return f"cell {cell_number(index)}"
