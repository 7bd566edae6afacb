"""Overrides follow a submission to its new grade: what a regrade carries over.

An instructor's override is made on one grade, and a grade belongs to one rubric
version. When the same submission is graded again under another version (a
regrade after a rubric edit, the same file uploaded again), the new grade would
silently lose the instructor's decisions. So, when a grade is stored, the latest
override of each criterion of the grade it replaces (the newest other grade of the
same submission) is carried to it:

- only to a criterion of the same id that the new grade has, and has no override of
  its own yet (so carrying twice changes nothing, and an override made on the new
  grade is never replaced);
- capped at the criterion's points under the new rubric;
- keeping the reason, who and when, with ``carried_from`` pointing at the original
  entry and a note saying it was carried (and capped);
- never to a grade whose grading failed.

An override whose criterion is gone cannot be carried: ``carry_status`` names it,
so the pages can say so. These functions work inside the caller's transaction.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from dataclasses import dataclass

from ..points import as_points
from .db_schema import OVERRIDE_SELECT, OverrideRow

__all__ = ["CarryResult", "NotCarried", "carry_overrides", "carry_status"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class NotCarried:
    override: OverrideRow  # the entry of the replaced grade
    reason: str  # "criterion q3 is not in rubric 1a2b3c", "the new grade is an error"


@dataclass(frozen=True, slots=True)
class CarryResult:
    grade_id: int
    source_grade: int | None  # the grade it replaced (None: the submission's first grade)
    source_version: str  # that grade's rubric version
    carried: tuple[OverrideRow, ...] = ()  # entries of ``grade_id`` carried over
    not_carried: tuple[NotCarried, ...] = ()


def _source(c: sqlite3.Connection, grade_id: int) -> tuple[int, str] | None:
    """The grade ``grade_id`` replaces: the newest other grade of the same submission."""
    row = c.execute(
        "SELECT g2.id, rv.version FROM grades g JOIN grades g2 ON g2.submission_id = "
        "g.submission_id AND g2.id != g.id JOIN rubric_versions rv ON rv.id = "
        "g2.rubric_version_id WHERE g.id = ? ORDER BY g2.created_at DESC, g2.id DESC LIMIT 1",
        (grade_id,)).fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def _overrides(c: sqlite3.Connection, grade_id: int) -> list[OverrideRow]:
    return [OverrideRow(*r) for r in c.execute(f"{OVERRIDE_SELECT} WHERE grade_id = ? "
                                                "ORDER BY id", (grade_id,))]


def _latest(overrides: list[OverrideRow]) -> list[OverrideRow]:
    return list({o.criterion_id: o for o in overrides}.values())


def _plan(c: sqlite3.Connection, grade_id: int
          ) -> tuple[tuple[int, str] | None, list[tuple[OverrideRow, float, float]],
                     list[NotCarried]]:
    """The source, what to carry (entry, current points, cap) and what cannot be."""
    source = _source(c, grade_id)
    if source is None:
        return None, [], []
    wanted = _latest(_overrides(c, source[0]))
    if not wanted:
        return source, [], []
    status, version = c.execute(
        "SELECT g.status, rv.version FROM grades g JOIN rubric_versions rv ON rv.id = "
        "g.rubric_version_id WHERE g.id = ?", (grade_id,)).fetchone()
    if status != "graded":
        return source, [], [NotCarried(o, "the new grade is an error (not graded)")
                            for o in wanted]
    criteria = {cid: (float(points), float(top)) for cid, points, top in c.execute(
        "SELECT criterion_id, points, max_points FROM criterion_grades WHERE grade_id = ?",
        (grade_id,))}
    own = {o.criterion_id for o in _overrides(c, grade_id)}
    carry, lost = [], []
    for o in wanted:
        if o.criterion_id not in criteria:
            lost.append(NotCarried(o, f"criterion {o.criterion_id} is not in rubric {version}"))
        elif o.criterion_id not in own:
            carry.append((o, *criteria[o.criterion_id]))
    return source, carry, lost


def carry_overrides(c: sqlite3.Connection, grade_id: int) -> int:
    """Carry the replaced grade's overrides to ``grade_id`` (see the module's rules);
    returns how many entries were added. The caller refreshes the grade's summary."""
    source, carry, lost = _plan(c, grade_id)
    if source is None:
        return 0
    when = time.strftime("%Y-%m-%d %H:%M")
    for o, points, top in carry:
        capped = o.new_points > top
        note = (f"carried from grade {source[0]} (rubric {source[1]}) on {when}"
                + (f"; capped at {as_points(top)} points, the criterion's maximum now (was "
                   f"{as_points(o.new_points)})" if capped else ""))
        c.execute("INSERT INTO overrides (grade_id, criterion_id, old_points, new_points, "
                  "reason, who, at, carried_from, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                  (grade_id, o.criterion_id, points, min(o.new_points, top), o.reason, o.who,
                   o.at, o.id, note))
    for n in lost:
        log.warning("grade %d: override %d of grade %d not carried: %s", grade_id,
                    n.override.id, source[0], n.reason)
    if carry:
        log.info("grade %d: %d overrides carried from grade %d", grade_id, len(carry),
                 source[0])
    return len(carry)


def carry_status(c: sqlite3.Connection, grade_id: int) -> CarryResult:
    """What ``grade_id`` carries from the grade it replaced, and what it could not."""
    source, _, lost = _plan(c, grade_id)
    if source is None:
        return CarryResult(grade_id, None, "")
    carried = tuple(o for o in _overrides(c, grade_id) if o.carried_from is not None)
    return CarryResult(grade_id, source[0], source[1], carried, tuple(lost))
