"""The grade store: one SQLite file for assignments, grades, overrides and batches.

SQLite because the grader runs on the instructor's own machine: a term's grading
must survive restarts, crashes and ``kill -9`` without a server. The file also
holds the inference package's ``inference_requests`` table; neither side touches
the other's. WAL, ``synchronous=NORMAL``, foreign keys on; one connection for all
threads under a lock; each write is one ``BEGIN IMMEDIATE`` transaction, so a
grade, its criterion and flag rows and its batch item's ``done`` mark commit
together or not at all. ``grades.report_json`` is the report as the grader made
it; overrides are an append-only audit trail applied on read, their effect
copied into ``grades``/``criterion_grades`` for the filters. Schema and
migrations: ``store_schema``. Every ``sqlite3.Error`` leaves as ``StoreError``.
Text that SQLite cannot encode (a lone UTF-16 surrogate in a name or a report)
is stored with U+FFFD in its place (``safe_text.scrub``), never refused.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..anonymity import name_parts, redact_report
from ..errors import StoreError
from ..safe_text import scrub
from ..types import GradeReport
from .batches import StoreBatchesMixin
from .calibrations import CalibrationRow, StoreCalibrationsMixin
from .db_schema import (
    GRADE_SELECT,
    OVERRIDE_SELECT,
    SCHEMA_VERSION,
    BatchItemRow,
    BatchRow,
    GradeRow,
    OverrideRow,
    anonymous_file,
    grade_row,
    migrate,
)
from .drops import GradeDrop, StoreDropsMixin
from .model_parts import ModelPartRow, ModelProgress, RevisionRow, StoreModelPartsMixin
from .serialize import report_from_json, report_to_json
from .settings import StoreSettingsMixin
from .stored_files import RubricVersionRow, StoreFilesMixin

__all__ = ["SCHEMA_VERSION", "BatchItemRow", "BatchRow", "CalibrationRow", "GradeDrop",
           "GradeRow", "ModelPartRow", "ModelProgress", "OverrideRow", "RevisionRow",
           "RubricVersionRow", "Store", "apply_overrides", "migrate"]

log = logging.getLogger(__name__)

_LANGUAGES = ("python", "r")


def apply_overrides(report: GradeReport, overrides: Iterable[OverrideRow]) -> GradeReport:
    """A copy of ``report`` with each criterion's latest override applied: new points,
    out of review (the instructor decided), the reason in ``review_reasons``; the
    score becomes the sum of the criteria's points."""
    latest = {o.criterion_id: o for o in overrides}
    if not latest:
        return report
    criteria = []
    for c in report.criteria:
        o = latest.pop(c.id, None)
        criteria.append(c if o is None else dataclasses.replace(
            c, points=o.new_points, needs_review=False,
            review_reasons=[*c.review_reasons, f"overridden by instructor: {o.reason}"]))
    for o in latest.values():
        log.warning("override %d is of criterion %r, which grade %d no longer has",
                    o.id, o.criterion_id, o.grade_id)
    return dataclasses.replace(report, criteria=criteria,
                               score=math.fsum(c.points for c in criteria))


class Store(StoreFilesMixin, StoreBatchesMixin, StoreCalibrationsMixin, StoreDropsMixin,
            StoreModelPartsMixin, StoreSettingsMixin):
    """The grade store over one SQLite file (``":memory:"`` for a throwaway one)."""

    def __init__(self, path: Path | str, timeout: float = 30.0) -> None:
        self.path = path
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        conn: sqlite3.Connection | None = None
        try:
            conn = sqlite3.connect(str(path), timeout=timeout, check_same_thread=False,
                                   isolation_level=None)
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode != "wal" and str(path) != ":memory:":
                log.warning("grade store %s is not in WAL mode", path)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            migrate(conn)
        except BaseException as exc:
            if conn is not None:
                conn.close()
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"cannot open the grade store {path}: {exc}") from exc
            raise
        self._conn: sqlite3.Connection | None = conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self, what: str, write: bool = True) -> Iterator[sqlite3.Connection]:
        """One transaction under the lock; a sqlite3 error leaves as StoreError."""
        with self._lock:
            if self._conn is None:
                raise StoreError(f"{what}: the store is closed")
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield conn
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise StoreError(f"{what}: {exc}") from exc

    def _query(self, sql: str, args: tuple, what: str, write: bool = False) -> list[tuple]:
        with self._tx(what, write) as c:
            return c.execute(sql, args).fetchall()

    def upsert_assignment(self, name: str, title: str, language: str, root: Path | str) -> int:
        """The id of assignment ``name``, created or updated with the other fields."""
        if not name.strip() or language not in _LANGUAGES:
            raise StoreError(f"assignment {name!r}: needs a name and a language out of "
                             f"{', '.join(_LANGUAGES)} (got {language!r})")
        rows = self._query(
            "INSERT INTO assignments (name, title, language, root, created_at) VALUES (?, ?, ?, "
            "?, ?) ON CONFLICT (name) DO UPDATE SET title = excluded.title, language = "
            "excluded.language, root = excluded.root RETURNING id",
            (name, title, language, str(root), time.time()), f"save assignment {name!r}", True)
        return int(rows[0][0])

    def add_rubric_version(self, assignment_id: int, version: str, rubric_json: str) -> int:
        """The id of rubric ``version`` of the assignment; adding it again changes nothing."""
        try:
            json.loads(rubric_json)
        except ValueError as exc:
            raise StoreError(f"rubric version {version!r} is not valid JSON: {exc}") from exc
        with self._tx(f"save rubric version {version!r}") as c:
            c.execute("INSERT INTO rubric_versions (assignment_id, version, rubric_json, "
                      "created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                      (assignment_id, version, rubric_json, time.time()))
            rv_id, stored = c.execute("SELECT id, rubric_json FROM rubric_versions WHERE "
                                      "assignment_id = ? AND version = ?",
                                      (assignment_id, version)).fetchone()
        if json.loads(stored) != json.loads(rubric_json):
            log.warning("rubric version %s was stored with other content; kept that", version)
        return int(rv_id)

    def add_submission(self, assignment_id: int, sha256: str, file: str, student_id: str = "",
                       display_name: str = "") -> int:
        """The id of this student's submission with this content (idempotent).

        Two students who hand in identical files (say, the untouched template) are
        two submissions: each keeps their own name and grade.
        """
        file, student_id, display_name = scrub(file), scrub(student_id), scrub(display_name)
        with self._tx(f"save submission {file!r}") as c:
            c.execute("INSERT INTO submissions (assignment_id, sha256, file, student_id, "
                      "display_name, created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT "
                      "DO NOTHING", (assignment_id, sha256, file, student_id, display_name,
                                     time.time()))
            (sub_id,) = c.execute("SELECT id FROM submissions WHERE assignment_id = ? AND "
                                  "sha256 = ? AND student_id = ?",
                                  (assignment_id, sha256, student_id)).fetchone()
        return int(sub_id)

    def set_display_name(self, submission_id: int, name: str) -> None:
        if not self._query("UPDATE submissions SET display_name = ? WHERE id = ? RETURNING id",
                           (scrub(name), submission_id), "rename submission", write=True):
            raise StoreError(f"no submission {submission_id}")

    def anonymise(self, assignment_id: int) -> dict[str, str]:
        """Display name -> pseudonym ("Student 001", ... by first appearance). Pseudonyms
        are stored beside the names (which are kept), so they never change and new
        submissions get the next numbers. Without a display name: student id, else file."""
        with self._tx(f"anonymise assignment {assignment_id}") as c:
            rows = c.execute("SELECT id, coalesce(nullif(display_name, ''), nullif(student_id, "
                             "''), file), pseudonym FROM submissions WHERE assignment_id = ? "
                             "ORDER BY id", (assignment_id,)).fetchall()
            mapping = {name: pseudonym for _, name, pseudonym in rows if pseudonym}
            used = set(mapping.values())
            for sub_id, name, pseudonym in rows:
                if pseudonym is None:
                    if name not in mapping:
                        n = len(used) + 1
                        while f"Student {n:03d}" in used:
                            n += 1
                        mapping[name] = f"Student {n:03d}"
                        used.add(mapping[name])
                    c.execute("UPDATE submissions SET pseudonym = ? WHERE id = ?",
                              (mapping[name], sub_id))
        return mapping

    def save_grade(self, submission_id: int, rubric_version_id: int, report: GradeReport,
                   batch_item_id: int | None = None) -> int:
        """Store ``report``; regrading the same content under the same rubric version replaces
        it (same id, overrides kept). ``batch_item_id`` is marked done in the same
        transaction, so after a crash the grade and the mark exist both or neither."""
        try:
            text = report_to_json(report)  # lone surrogates become U+FFFD (serialize)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"report for {report.file} cannot be stored: {exc}") from exc
        with self._tx(f"save grade of {report.file}") as c:
            row = c.execute("SELECT s.sha256, rv.version, (SELECT sha256 FROM batch_items WHERE "
                            "id = ?) FROM submissions s JOIN rubric_versions rv ON "
                            "rv.assignment_id = s.assignment_id WHERE s.id = ? AND rv.id = ?",
                            (batch_item_id, submission_id, rubric_version_id)).fetchone()
            if row is None:
                raise StoreError(f"submission {submission_id} and rubric version "
                                 f"{rubric_version_id} are not of one stored assignment")
            sha256, version, item_sha256 = row
            if report.sha256 not in ("", sha256) or item_sha256 not in (None, "", sha256):
                raise StoreError(f"report or batch item for {report.file} is of other content "
                                 f"than submission {submission_id}")
            if report.rubric_version not in ("", version):
                raise StoreError(f"report for {report.file} is of rubric version "
                                 f"{report.rubric_version}, not {version}")
            grade_id = c.execute(
                "INSERT INTO grades (submission_id, rubric_version_id, report_json, score, "
                "max_score, status, needs_review, created_at) VALUES (?, ?, ?, 0, 0, 'graded', "
                "0, ?) ON CONFLICT (submission_id, rubric_version_id) DO UPDATE SET report_json "
                "= excluded.report_json, created_at = excluded.created_at RETURNING id",
                (submission_id, rubric_version_id, text, time.time())).fetchone()[0]
            c.execute("DELETE FROM grade_flags WHERE grade_id = ?", (grade_id,))
            c.executemany("INSERT INTO grade_flags (grade_id, code) VALUES (?, ?)",
                          [(grade_id, code) for code in sorted({f.code for f in report.flags})])
            self._refresh(c, grade_id)
            if batch_item_id is not None:
                self._mark(c, batch_item_id, "done", grade_id, "")
        log.debug("saved grade %d of %s", grade_id, report.file)
        return int(grade_id)

    def _refresh(self, c: sqlite3.Connection, grade_id: int) -> None:
        """Copy a grade's effective (overridden) values to where the filters read them."""
        report = self._effective(c, grade_id)
        overridden = {o.criterion_id for o in self._overrides(c, grade_id)}
        c.execute("UPDATE grades SET score = ?, max_score = ?, status = ?, needs_review = ? "
                  "WHERE id = ?", (report.score, report.max_score, report.status,
                                   report.status == "error" or bool(report.needs_review),
                                   grade_id))
        c.execute("DELETE FROM criterion_grades WHERE grade_id = ?", (grade_id,))
        c.executemany(
            "INSERT INTO criterion_grades (grade_id, criterion_id, points, max_points, "
            "needs_review, overridden, evidence_json) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(grade_id, cr.id, cr.points, cr.max_points, cr.needs_review, cr.id in overridden,
              json.dumps([dataclasses.asdict(e) for e in cr.evidence])) for cr in report.criteria])

    def _effective(self, c: sqlite3.Connection, grade_id: int,
                   overrides: bool = True) -> GradeReport:
        row = c.execute("SELECT report_json FROM grades WHERE id = ?", (grade_id,)).fetchone()
        if row is None:
            raise StoreError(f"no grade {grade_id}")
        try:
            report = report_from_json(row[0])
        except ValueError as exc:
            raise StoreError(f"grade {grade_id}: the stored report is unreadable: {exc}") from exc
        return apply_overrides(report, self._overrides(c, grade_id)) if overrides else report

    @staticmethod
    def _overrides(c: sqlite3.Connection, grade_id: int) -> list[OverrideRow]:
        rows = c.execute(f"{OVERRIDE_SELECT} WHERE grade_id = ? ORDER BY id", (grade_id,))
        return [OverrideRow(*r) for r in rows]

    def get_report(self, grade_id: int, anonymous: bool = False,
                   overrides: bool = True) -> GradeReport:
        """The stored report with overrides applied and the submission's current names.

        ``overrides=False`` gives the report as the grader made it (to copy it
        for another student who handed in the same file).
        """
        with self._tx(f"read grade {grade_id}", write=False) as c:
            report = self._effective(c, grade_id, overrides)
            sid, name, pseudonym, aid, file = c.execute(
                "SELECT s.student_id, s.display_name, s.pseudonym, s.assignment_id, s.file FROM "
                "grades g JOIN submissions s ON s.id = g.submission_id WHERE g.id = ?",
                (grade_id,)).fetchone()
        if anonymous and pseudonym is None:  # assign pseudonyms first, as list_grades does
            pseudonym = self.anonymise(aid)[name or sid or file]
        if anonymous:  # the student's own text says no name either (evidence, notes)
            report = redact_report(report, name_parts(name or "", sid or "", file),
                                   pseudonym or "")
            return dataclasses.replace(report, student_id="", display_name=pseudonym or "",
                                       file=anonymous_file(pseudonym or "", report.file))
        return dataclasses.replace(report, student_id=sid, display_name=name)

    def get_grade(self, grade_id: int, anonymous: bool = False) -> GradeRow:
        rows = self._query(f"{GRADE_SELECT} WHERE g.id = ?", (grade_id,), "read grade")
        if not rows:
            raise StoreError(f"no grade {grade_id}")
        return grade_row(rows[0], anonymous)

    def find_grade(self, assignment_id: int, sha256: str, rubric_version: str,
                   student_id: str | None = None) -> GradeRow | None:
        """A grade of this content under this rubric version, if it was graded already.

        With ``student_id``, that student's grade is preferred; otherwise any
        grade of the same content (the caller copies it for the new student).
        """
        rows = self._query(f"{GRADE_SELECT} WHERE s.assignment_id = ? AND s.sha256 = ? AND "
                           "rv.version = ?", (assignment_id, sha256, rubric_version), "find grade")
        found = [grade_row(r, False) for r in rows]
        student_id = None if student_id is None else scrub(student_id)  # as add_submission
        mine = [g for g in found if student_id is not None and g.student_id == student_id]
        chosen = mine or found
        return chosen[0] if chosen else None

    def list_grades(self, assignment_id: int, min_score: float | None = None,
                    max_score: float | None = None, needs_review: bool | None = None,
                    flag: str | None = None, *, rubric_version: str | None = None,
                    anonymous: bool = False) -> list[GradeRow]:
        """An assignment's grades in order of submission, filtered (a grade without a score
        never meets a score bound). ``anonymous`` shows pseudonyms, assigning missing ones."""
        if anonymous:
            self.anonymise(assignment_id)
        filters = {"g.score >= ?": min_score, "g.score <= ?": max_score,
                   "g.needs_review = ?": needs_review, "rv.version = ?": rubric_version,
                   "EXISTS (SELECT 1 FROM grade_flags f WHERE f.grade_id = g.id AND f.code = ?)":
                   flag}
        where = ["s.assignment_id = ?", *(k for k, v in filters.items() if v is not None)]
        args = (assignment_id, *(v for v in filters.values() if v is not None))
        rows = self._query(f"{GRADE_SELECT} WHERE {' AND '.join(where)} ORDER BY s.id, g.id",
                           args, "list grades")
        return [grade_row(r, anonymous) for r in rows]

    def override(self, grade_id: int, criterion_id: str, new_points: float, reason: str,
                 who: str) -> OverrideRow:
        """Set a criterion's points by hand, recorded in the audit trail with the reason."""
        if not reason.strip() or not who.strip():
            raise StoreError("an override needs a reason and the name of who made it")
        with self._tx(f"override grade {grade_id}") as c:
            row = c.execute("SELECT points, max_points FROM criterion_grades WHERE grade_id = ? "
                            "AND criterion_id = ?", (grade_id, criterion_id)).fetchone()
            if row is None:
                raise StoreError(f"grade {grade_id} has no criterion {criterion_id!r}")
            if not (math.isfinite(new_points) and 0 <= new_points <= row[1]):
                raise StoreError(f"{criterion_id}: {new_points} points is outside [0, {row[1]}]")
            out = OverrideRow(*c.execute(
                "INSERT INTO overrides (grade_id, criterion_id, old_points, new_points, reason, "
                "who, at) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING *",
                (grade_id, criterion_id, float(row[0]), float(new_points), reason.strip(),
                 who.strip(), time.time())).fetchone())
            self._refresh(c, grade_id)
        log.info("grade %d, %s: %s -> %s points by %s", grade_id, criterion_id, out.old_points,
                 out.new_points, out.who)
        return out

    def overrides(self, grade_id: int) -> list[OverrideRow]:
        """The audit trail of a grade, oldest first."""
        with self._tx(f"read overrides of grade {grade_id}", write=False) as c:
            return self._overrides(c, grade_id)
