"""Grades dropped from the gradebook, with their audit trail. A mixin of ``Store``.

A wrong upload (another assignment's notebook, a lecture's) scores 0 with every criterion
in review; it must not stay in the gradebook. The instructor drops that one grade: it
stays in the store, with its overrides and everything else, but no listing of grades in
force, no export and no count of the gradebook holds it any more
(``grader.service.review.Listing``). Dropping and bringing back are entries of an
append-only trail (``grade_drops``: who, when, why), as overrides are: a grade is
dropped while its newest entry is a drop. Nothing here deletes a row.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal, Protocol

from ..errors import StoreError
from ..safe_text import scrub

__all__ = ["GradeDrop", "StoreDropsMixin"]

_SELECT = "SELECT id, grade_id, action, reason, who, at FROM grade_drops"
# Each grade's newest entry, when it is a drop: the grades dropped now.
_DROPPED = f"""{_SELECT} d WHERE action = 'drop' AND id = (SELECT max(id) FROM grade_drops e
WHERE e.grade_id = d.grade_id)"""


@dataclass(frozen=True, slots=True)
class GradeDrop:
    """One entry of a grade's drop trail."""

    id: int
    grade_id: int
    action: Literal["drop", "restore"]
    reason: str
    who: str
    at: float


class _Tx(Protocol):
    def _tx(self, what: str, write: bool = True
            ) -> AbstractContextManager[sqlite3.Connection]: ...


def _state(c: sqlite3.Connection, grade_id: int) -> str | None:
    """The grade's newest action ("drop", "restore"), None when it has none; StoreError
    when there is no such grade."""
    if c.execute("SELECT 1 FROM grades WHERE id = ?", (grade_id,)).fetchone() is None:
        raise StoreError(f"no grade {grade_id}")
    row = c.execute("SELECT action FROM grade_drops WHERE grade_id = ? ORDER BY id DESC "
                    "LIMIT 1", (grade_id,)).fetchone()
    return None if row is None else str(row[0])


def _entry(store: _Tx, grade_id: int, action: str, reason: str, who: str) -> GradeDrop:
    if not reason.strip():
        raise StoreError(f"grade {grade_id}: a {action} needs a reason (it is kept in the "
                         "audit trail)")
    with store._tx(f"{action} grade {grade_id}") as c:
        state = _state(c, grade_id)
        if action == "drop" and state == "drop":
            raise StoreError(f"grade {grade_id} is dropped already")
        if action == "restore" and state != "drop":
            raise StoreError(f"grade {grade_id} is not dropped: there is nothing to bring back")
        row = c.execute("INSERT INTO grade_drops (grade_id, action, reason, who, at) VALUES "
                        "(?, ?, ?, ?, ?) RETURNING id, grade_id, action, reason, who, at",
                        (grade_id, action, scrub(reason.strip()), scrub(who.strip()),
                         time.time())).fetchone()
    return GradeDrop(*row)


class StoreDropsMixin:
    """Dropping grades from the gradebook and bringing them back; mixed into ``Store``."""

    def drop_grade(self: _Tx, grade_id: int, reason: str, who: str = "") -> GradeDrop:
        """Take grade ``grade_id`` out of the gradebook, saying why (kept in the trail)."""
        return _entry(self, grade_id, "drop", reason, who)

    def restore_grade(self: _Tx, grade_id: int, reason: str, who: str = "") -> GradeDrop:
        """Put a dropped grade back into the gradebook, saying why."""
        return _entry(self, grade_id, "restore", reason, who)

    def dropped(self: _Tx, assignment_id: int) -> dict[int, GradeDrop]:
        """The assignment's grades dropped now: grade id -> the entry that dropped it."""
        with self._tx("read the dropped grades", write=False) as c:
            rows = c.execute(f"{_DROPPED} AND grade_id IN (SELECT g.id FROM grades g JOIN "
                             "submissions s ON s.id = g.submission_id WHERE s.assignment_id "
                             "= ?) ORDER BY id", (assignment_id,)).fetchall()
        return {int(r[1]): GradeDrop(*r) for r in rows}

    def drop_trail(self: _Tx, grade_id: int) -> list[GradeDrop]:
        """Every drop and restore of grade ``grade_id``, oldest first."""
        with self._tx(f"read the drops of grade {grade_id}", write=False) as c:
            rows = c.execute(f"{_SELECT} WHERE grade_id = ? ORDER BY id",
                             (grade_id,)).fetchall()
        return [GradeDrop(*r) for r in rows]
