"""Whose score an edited rubric moves, as the rubric preview shows it first.

``movers`` are the students whose score moves, each with the score before and after in
points and in percent of the total (the total may change too: "31.5 / 37.5 (84%) ->
33 / 40 (83%)"), sorted by the size of the change; ``unmoved_line`` sums up the others
in one line. Read from a ``grader.service.rescore`` preview.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..points import as_points, gradebook, percent_text
from .rescore import RescorePreview, RescoreRow

__all__ = ["ScoreMove", "mover_rows", "movers", "movers_summary", "score_text", "unmoved_line"]


@dataclass(frozen=True, slots=True)
class ScoreMove:
    """A student whose score the edit moves, as the preview shows it."""

    grade_id: int
    name: str  # the pseudonym when names are hidden
    before: str  # "31.5 / 37.5 (84%)"
    after: str  # "33 / 40 (83%)"
    points: float  # the change in points, rounded to 2 decimals
    percent: float  # the change in percentage points of the total, rounded to 1 decimal
    change: str  # "+1.5 points, -1 percentage point"
    criteria: str  # the criteria that move: "q1: 1 -> 2; q2: removed, was 1"
    with_overrides: str = ""  # "32 -> 34.5 / 40 (86%)" when the old grade has overrides


def _percent(score: float, max_score: float) -> float | None:
    return 100.0 * score / max_score if max_score > 0 else None


def score_text(score: float, max_score: float, decimals: int = 0) -> str:
    """ "31.5 / 37.5 (84%)": points and percent as the letter writes them (``grader.points``:
    half up, never 100% short of full, nor 0% above nothing), ``decimals`` places."""
    pct = percent_text(score, max_score, decimals)
    return f"{as_points(score)} / {as_points(max_score)}" + (f" ({pct})" if pct else "")


def _signed(x: float, unit: str) -> str:
    text = as_points(x)
    if text == "0":
        return f"no change in {unit}s"
    return f"{'+' if x > 0 else ''}{text} {unit}{'' if abs(x) == 1 else 's'}"


def _move(r: RescoreRow) -> ScoreMove | None:
    """``r`` as a move, or None when it was not re-scored or does not move."""
    if r.old_score is None or r.new_score is None:
        return None
    before, after = _percent(r.old_score, r.old_max), _percent(r.new_score, r.new_max)
    moved = gradebook(r.new_score - r.old_score)
    percent = round(after - before, 1) if before is not None and after is not None else 0.0
    if not moved and not percent and not r.moved:
        return None
    decimals = 0 if abs(percent) >= 1 or not percent else 1  # 84% -> 83%; 52.6% -> 52.9%
    carried = ""
    if r.overrides and r.current_score is not None and r.carried_score is not None:
        carried = (f"{as_points(r.current_score)} -> "
                   f"{score_text(r.carried_score, r.new_max, decimals)}")
    return ScoreMove(r.grade_id, r.name, score_text(r.old_score, r.old_max, decimals),
                     score_text(r.new_score, r.new_max, decimals), moved, percent,
                     f"{_signed(moved, 'point')}, {_signed(percent, 'percentage point')}",
                     "; ".join(r.moved), carried)


def movers(preview: RescorePreview) -> list[ScoreMove]:
    """The students whose score moves (in points, in percent of the total, or on some
    criterion), the biggest change in percent first."""
    moves = [m for m in map(_move, preview.rows) if m is not None]
    return sorted(moves, key=lambda m: (-abs(m.percent), -abs(m.points), m.name))


def mover_rows(preview: RescorePreview) -> list[dict[str, str]]:
    """``movers`` as table rows; the overrides column only when some grade has one."""
    moves = movers(preview)
    rows = [{"student": m.name, "before": m.before, "after": m.after, "change": m.change,
             "criteria that move": m.criteria} for m in moves]
    if any(m.with_overrides for m in moves):
        for row, m in zip(rows, moves, strict=True):
            row["with your overrides"] = m.with_overrides
    return rows


def movers_summary(preview: RescorePreview) -> str:
    """ "3 of 5 graded students would move; 1 could not be re-scored." """
    failed = sum(r.new_score is None for r in preview.rows)
    text = f"{len(movers(preview))} of {len(preview.rows)} graded students would move"
    return text + (f"; {failed} could not be re-scored." if failed else ".")


def unmoved_line(preview: RescorePreview, limit: int = 8) -> str:
    """The students who do not move, in one line ("" when everyone moves)."""
    moving = {m.grade_id for m in movers(preview)}
    names = sorted(r.name for r in preview.rows
                   if r.new_score is not None and r.grade_id not in moving)
    if not names:
        return ""
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    who = "1 student does" if len(names) == 1 else f"{len(names)} students do"
    return f"{who} not move: {', '.join(names[:limit])}{more}."
