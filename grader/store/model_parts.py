"""The grade store's model queue: grades whose model parts come after them, and revisions.

Grades first, models after (``grader.pipeline``): a grade is stored as soon as its
deterministic part is made, its model layers marked queued in it; a row of
``model_parts`` says so (``queue_model_parts``), so that the queue survives the process:
closing the app mid-way loses no grade, and the next start resumes the queue
(``requeue_model_parts`` gives back the parts a dead process had taken).

When a grade's model part ends, ``finish_model_part`` puts the grade with its model parts
in the place of the grade it was made from, in one transaction with the row's end:
- the points are the same (the models only advise, or agree): the grade is completed in
  place (same id, overrides kept);
- the points moved (a route trusted to judge): the grade as it was is kept in
  ``grade_revisions`` with the reason, old and new score, and the new one takes its place,
  so that what the instructor saw first is never lost and the page can say which moved.
A grade regraded meanwhile (its report is no longer the one the part was made from) is
left alone: the part is dropped, said in its row.
A mixin of ``Store``.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Literal, Protocol

from ..errors import StoreError
from ..types import GradeReport
from .batch_owner import Owner, owner_gone
from .serialize import report_from_json, report_to_json

__all__ = ["ModelPartRow", "ModelProgress", "RevisionRow", "StoreModelPartsMixin"]

PartStatus = Literal["queued", "running", "done", "failed", "dropped"]
_SELECT = ("SELECT grade_id, batch_id, status, options_json, queued_at, started_at, "
           "finished_at, error, moved FROM model_parts")


@dataclass(frozen=True, slots=True)
class ModelPartRow:
    grade_id: int
    batch_id: int | None
    status: PartStatus
    options: dict[str, object]  # how the grade's models were asked (samples)
    queued_at: float
    started_at: float | None
    finished_at: float | None
    error: str
    moved: bool  # the points moved when it ended (a route trusted to judge)


@dataclass(frozen=True, slots=True)
class ModelProgress:
    """A batch's model parts: how many there are, ended, and ended in failure."""

    total: int
    done: int
    failed: int
    moved: tuple[int, ...]  # grades whose points the models moved
    seconds: tuple[float, ...]  # how long each ended part took, in order of ending

    @property
    def left(self) -> int:
        return self.total - self.done - self.failed


@dataclass(frozen=True, slots=True)
class RevisionRow:
    id: int
    grade_id: int
    at: float
    reason: str
    old_score: float | None
    new_score: float | None


def _row(r: tuple) -> ModelPartRow:
    return ModelPartRow(int(r[0]), r[1], r[2], json.loads(r[3]), float(r[4]), r[5], r[6],
                        r[7], bool(r[8]))


class _Tx(Protocol):
    def _tx(self, what: str, write: bool = True
            ) -> AbstractContextManager[sqlite3.Connection]: ...

    def _refresh(self, c: sqlite3.Connection, grade_id: int) -> None: ...


class StoreModelPartsMixin:
    """The queue of model parts and the revisions they made; mixed into ``Store``."""

    def queue_model_parts(self: _Tx, grade_ids: list[int], batch_id: int | None = None,
                          options: dict[str, object] | None = None) -> None:
        """Queue the model parts of ``grade_ids`` (again, when one was queued before)."""
        now, text = time.time(), json.dumps(options or {})
        with self._tx("queue model parts") as c:
            c.executemany(
                "INSERT INTO model_parts (grade_id, batch_id, status, options_json, queued_at,"
                " error, moved) VALUES (?, ?, 'queued', ?, ?, '', 0) ON CONFLICT (grade_id) "
                "DO UPDATE SET batch_id = excluded.batch_id, status = 'queued', options_json "
                "= excluded.options_json, queued_at = excluded.queued_at, started_at = NULL, "
                "finished_at = NULL, owner_json = NULL, error = '', moved = 0",
                [(g, batch_id, text, now) for g in grade_ids])

    def claim_model_part(self: _Tx, owner: Owner,
                         grade_ids: list[int] | None = None) -> ModelPartRow | None:
        """The oldest queued part (among ``grade_ids`` when given), now running for
        ``owner``; None when none is queued."""
        where = "status = 'queued'"
        args: tuple = ()
        if grade_ids is not None:
            if not grade_ids:
                return None
            where += f" AND grade_id IN ({', '.join('?' * len(grade_ids))})"
            args = tuple(grade_ids)
        with self._tx("take a model part") as c:
            got = c.execute(f"{_SELECT} WHERE {where} ORDER BY queued_at, grade_id LIMIT 1",
                            args).fetchone()
            if got is None:
                return None
            c.execute("UPDATE model_parts SET status = 'running', started_at = ?, owner_json = "
                      "? WHERE grade_id = ?", (time.time(), owner.to_json(), got[0]))
        return _row(got)

    def requeue_model_parts(self: _Tx) -> int:
        """Give back to the queue the parts taken by processes that are gone (a closed app,
        a killed command line); returns how many."""
        with self._tx("requeue model parts") as c:
            rows = c.execute("SELECT grade_id, owner_json, started_at FROM model_parts WHERE "
                             "status = 'running'").fetchall()
            now = time.time()
            gone = [g for g, text, started in rows if owner_gone(text or "", started or 0.0,
                                                                 now)]
            c.executemany("UPDATE model_parts SET status = 'queued', started_at = NULL, "
                          "owner_json = NULL WHERE grade_id = ?", [(g,) for g in gone])
        return len(gone)

    def stored_report(self: _Tx, grade_id: int) -> tuple[GradeReport, str]:
        """The grade's report as the grader made it (no override, no name of now), and
        its stored text (``finish_model_part`` checks it is still the one in place)."""
        with self._tx(f"read grade {grade_id}", write=False) as c:
            got = c.execute("SELECT report_json FROM grades WHERE id = ?",
                            (grade_id,)).fetchone()
        if got is None:
            raise StoreError(f"no grade {grade_id}")
        return report_from_json(got[0]), got[0]

    def finish_model_part(self: _Tx, grade_id: int, first: str, full: GradeReport,
                          reason: str = "") -> str:
        """Put ``full`` (the grade stored as ``first``, its text from ``stored_report``,
        with its model parts) in its place: in place, or, with ``reason`` (the points
        moved), as a new revision that keeps ``first``. Returns "done", "moved" or
        "dropped" (the grade was made again since: left alone)."""
        try:
            text = report_to_json(full)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"the model part of grade {grade_id} cannot be stored: {exc}"
                             ) from exc
        with self._tx(f"complete grade {grade_id} with its model part") as c:
            now = c.execute("SELECT report_json, score FROM grades WHERE id = ?",
                            (grade_id,)).fetchone()
            if now is None or now[0] != first:
                c.execute("UPDATE model_parts SET status = 'dropped', finished_at = ?, error ="
                          " ? WHERE grade_id = ?", (time.time(), "the grade was made again "
                                                    "before its model part ended", grade_id))
                return "dropped"
            if reason:
                c.execute("INSERT INTO grade_revisions (grade_id, at, reason, old_score, "
                          "new_score, old_report_json) VALUES (?, ?, ?, ?, ?, ?)",
                          (grade_id, time.time(), reason, report_from_json(now[0]).score,
                           full.score, now[0]))
            c.execute("UPDATE grades SET report_json = ? WHERE id = ?", (text, grade_id))
            c.execute("DELETE FROM grade_flags WHERE grade_id = ?", (grade_id,))
            c.executemany("INSERT INTO grade_flags (grade_id, code) VALUES (?, ?)",
                          [(grade_id, code) for code in sorted({f.code for f in full.flags})])
            self._refresh(c, grade_id)
            c.execute("UPDATE model_parts SET status = 'done', finished_at = ?, moved = ? "
                      "WHERE grade_id = ?", (time.time(), int(bool(reason)), grade_id))
        return "moved" if reason else "done"

    def fail_model_part(self: _Tx, grade_id: int, error: str) -> None:
        """The part could not be made (not the models' answers: those are in the grade):
        said in its row; the grade keeps its points."""
        with self._tx(f"mark the model part of grade {grade_id} failed") as c:
            c.execute("UPDATE model_parts SET status = 'failed', finished_at = ?, error = ? "
                      "WHERE grade_id = ?", (time.time(), error[:2000], grade_id))

    def model_part(self: _Tx, grade_id: int) -> ModelPartRow | None:
        with self._tx("read a model part", write=False) as c:
            got = c.execute(f"{_SELECT} WHERE grade_id = ?", (grade_id,)).fetchone()
        return None if got is None else _row(got)

    def model_parts(self: _Tx, status: PartStatus | None = None,
                    batch_id: int | None = None) -> list[ModelPartRow]:
        where, args = [], []
        if status is not None:
            where.append("status = ?")
            args.append(status)
        if batch_id is not None:
            where.append("batch_id = ?")
            args.append(batch_id)
        sql = _SELECT + (f" WHERE {' AND '.join(where)}" if where else "")
        with self._tx("list model parts", write=False) as c:
            return [_row(r) for r in c.execute(sql + " ORDER BY queued_at, grade_id", args)]

    def model_progress(self: _Tx, grade_ids: list[int]) -> ModelProgress:
        """How the model parts of ``grade_ids`` stand (grades without one are not counted)."""
        rows: list[tuple] = []
        with self._tx("read the model parts' progress", write=False) as c:
            for start in range(0, len(grade_ids), 500):
                part = grade_ids[start:start + 500]
                rows += c.execute(
                    "SELECT grade_id, status, started_at, finished_at, moved FROM model_parts "
                    f"WHERE grade_id IN ({', '.join('?' * len(part))})", part).fetchall()
        ended = sorted((r for r in rows if r[1] in ("done", "dropped") and r[3] and r[2]),
                       key=lambda r: r[3])
        return ModelProgress(len(rows), sum(r[1] in ("done", "dropped") for r in rows),
                             sum(r[1] == "failed" for r in rows),
                             tuple(r[0] for r in rows if r[4]),
                             tuple(round(r[3] - r[2], 3) for r in ended))

    def revisions(self: _Tx, grade_id: int) -> list[RevisionRow]:
        with self._tx("read a grade's revisions", write=False) as c:
            rows = c.execute("SELECT id, grade_id, at, reason, old_score, new_score FROM "
                             "grade_revisions WHERE grade_id = ? ORDER BY at, id",
                             (grade_id,)).fetchall()
        return [RevisionRow(int(r[0]), int(r[1]), float(r[2]), r[3], r[4], r[5]) for r in rows]

