"""The grade store's schema, its migrations, and the typed rows read from it.

The schema version is ``PRAGMA user_version``; ``_MIGRATIONS[i]`` brings a file
from version ``i`` to ``i + 1`` and ``migrate`` applies the missing ones in order
inside one transaction. Never edit a released migration: append a new one.
Kept apart from ``store.py`` so that the shape of the data reads in one place.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ..errors import StoreError

__all__ = [
    "SCHEMA_VERSION",
    "BatchItemRow",
    "BatchRow",
    "BatchStatus",
    "GradeRow",
    "ItemStatus",
    "OverrideRow",
    "migrate",
]

log = logging.getLogger(__name__)

ItemStatus = Literal["pending", "done", "error"]
ITEM_STATUSES = ("pending", "done", "error")
Migration = Callable[[sqlite3.Connection], None]


def _script(sql: str) -> Migration:
    """A migration running ``sql``'s statements (split on ';', so none may contain one).

    ``executescript`` would commit the migration's transaction half-way.
    """

    def run(conn: sqlite3.Connection) -> None:
        for statement in sql.split(";"):
            if statement.strip():
                conn.execute(statement)

    return run


_V1 = _script("""
CREATE TABLE assignments (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
  title TEXT NOT NULL, language TEXT NOT NULL CHECK (language IN ('python', 'r')),
  root TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE rubric_versions (id INTEGER PRIMARY KEY,
  assignment_id INTEGER NOT NULL REFERENCES assignments(id) ON DELETE CASCADE,
  version TEXT NOT NULL, rubric_json TEXT NOT NULL, created_at REAL NOT NULL,
  UNIQUE (assignment_id, version));
CREATE TABLE submissions (id INTEGER PRIMARY KEY,
  assignment_id INTEGER NOT NULL REFERENCES assignments(id) ON DELETE CASCADE,
  sha256 TEXT NOT NULL, file TEXT NOT NULL, student_id TEXT NOT NULL,
  display_name TEXT NOT NULL, created_at REAL NOT NULL,
  UNIQUE (assignment_id, sha256, student_id));
CREATE TABLE grades (id INTEGER PRIMARY KEY,
  submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
  rubric_version_id INTEGER NOT NULL REFERENCES rubric_versions(id) ON DELETE CASCADE,
  report_json TEXT NOT NULL, score REAL, max_score REAL NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('graded', 'error')), needs_review INTEGER NOT NULL,
  created_at REAL NOT NULL, UNIQUE (submission_id, rubric_version_id));
CREATE TABLE criterion_grades (id INTEGER PRIMARY KEY,
  grade_id INTEGER NOT NULL REFERENCES grades(id) ON DELETE CASCADE,
  criterion_id TEXT NOT NULL, points REAL NOT NULL, max_points REAL NOT NULL,
  needs_review INTEGER NOT NULL, overridden INTEGER NOT NULL, evidence_json TEXT NOT NULL,
  UNIQUE (grade_id, criterion_id));
CREATE TABLE overrides (id INTEGER PRIMARY KEY,
  grade_id INTEGER NOT NULL REFERENCES grades(id),
  criterion_id TEXT NOT NULL, old_points REAL NOT NULL, new_points REAL NOT NULL,
  reason TEXT NOT NULL CHECK (length(trim(reason)) > 0), who TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE batches (id INTEGER PRIMARY KEY,
  assignment_id INTEGER NOT NULL REFERENCES assignments(id) ON DELETE CASCADE,
  rubric_version_id INTEGER NOT NULL REFERENCES rubric_versions(id) ON DELETE CASCADE,
  created_at REAL NOT NULL, status TEXT NOT NULL CHECK (status IN ('running', 'done')));
CREATE TABLE batch_items (id INTEGER PRIMARY KEY,
  batch_id INTEGER NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
  file TEXT NOT NULL, sha256 TEXT NOT NULL, error TEXT NOT NULL DEFAULT '',
  status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'error')),
  grade_id INTEGER REFERENCES grades(id), updated_at REAL NOT NULL);
CREATE INDEX grades_submission ON grades(submission_id);
CREATE INDEX overrides_grade ON overrides(grade_id);
CREATE INDEX batch_items_status ON batch_items(batch_id, status)
""")  # overrides.grade_id has no ON DELETE CASCADE: nothing may quietly drop the audit trail


def _v2(conn: sqlite3.Connection) -> None:
    """Pseudonyms for anonymous review; flag codes as rows for the flag filter (backfilled)."""
    _script("""ALTER TABLE submissions ADD COLUMN pseudonym TEXT;
        CREATE TABLE grade_flags (grade_id INTEGER NOT NULL REFERENCES grades(id)
          ON DELETE CASCADE, code TEXT NOT NULL, PRIMARY KEY (grade_id, code));
        CREATE INDEX grade_flags_code ON grade_flags(code)""")(conn)
    for grade_id, text in conn.execute("SELECT id, report_json FROM grades").fetchall():
        codes = sorted({f["code"] for f in json.loads(text).get("flags", [])})
        conn.executemany("INSERT INTO grade_flags VALUES (?, ?)", [(grade_id, c) for c in codes])


# The app's needs: submissions' bytes (to show a notebook beside its grade and to
# regrade it), the rubric version in force per assignment (the editor saves new
# versions without touching the assignment folder), and who saved each version.
_V3 = _script("""CREATE TABLE submission_files (sha256 TEXT PRIMARY KEY,
      data BLOB NOT NULL, created_at REAL NOT NULL);
    ALTER TABLE assignments ADD COLUMN active_rubric_version_id INTEGER
      REFERENCES rubric_versions(id);
    ALTER TABLE rubric_versions ADD COLUMN note TEXT NOT NULL DEFAULT ''""")

# Resuming a batch in the app, after the app itself was stopped: each item keeps whose it
# is (the bytes are kept in submission_files when the batch starts).
_V4 = _script("""ALTER TABLE batch_items ADD COLUMN student_id TEXT NOT NULL DEFAULT '';
    ALTER TABLE batch_items ADD COLUMN display_name TEXT NOT NULL DEFAULT ''""")

# Batches know their owner (the grading process: host, boot, pid namespace, pid and its
# start time) and its last heartbeat, so that a batch whose owner is gone (kill -9, a
# reboot) is marked interrupted, and one that another live grader runs never is
# (grader/store/batch_owner.py). Overrides carried from the grade a regrade replaced keep a
# link to the original entry and a note saying so (grader/store/carry.py).
_V5 = _script("""ALTER TABLE batches ADD COLUMN owner TEXT NOT NULL DEFAULT '';
    ALTER TABLE batches ADD COLUMN heartbeat_at REAL;
    ALTER TABLE batches ADD COLUMN interrupted_at REAL;
    ALTER TABLE overrides ADD COLUMN carried_from INTEGER REFERENCES overrides(id);
    ALTER TABLE overrides ADD COLUMN note TEXT NOT NULL DEFAULT ''""")

# The latest calibration of each model route (grader/service/calibration.py): when, which
# route, server and model, what it ran over, and its figures as JSON
# (``RouteCalibration.to_dict``), so the Dashboard shows the newest per route.
_V6 = _script("""CREATE TABLE calibrations (id INTEGER PRIMARY KEY, created_at REAL NOT NULL,
      role TEXT NOT NULL, route TEXT NOT NULL, server TEXT NOT NULL, model TEXT NOT NULL,
      examples TEXT NOT NULL, fit INTEGER NOT NULL, figures_json TEXT NOT NULL);
    CREATE INDEX calibrations_route ON calibrations(route, created_at)""")

# Grades dropped from the gradebook (a wrong upload), and brought back: an append-only
# trail like the overrides' (grader/store/drops.py); no cascade, so nothing quietly drops it.
_V7 = _script("""CREATE TABLE grade_drops (id INTEGER PRIMARY KEY,
      grade_id INTEGER NOT NULL REFERENCES grades(id),
      action TEXT NOT NULL CHECK (action IN ('drop', 'restore')),
      reason TEXT NOT NULL CHECK (length(trim(reason)) > 0), who TEXT NOT NULL,
      at REAL NOT NULL);
    CREATE INDEX grade_drops_grade ON grade_drops(grade_id)""")

# Grades first, models after (grader/store/model_parts.py): the model part each stored
# grade still waits for, and the grades a model trusted to judge revised (the grade as it
# was kept, with the reason); and the app's settings that outlive a session (settings.py).
_V8 = _script("""CREATE TABLE model_parts (
      grade_id INTEGER PRIMARY KEY REFERENCES grades(id) ON DELETE CASCADE,
      batch_id INTEGER REFERENCES batches(id) ON DELETE SET NULL,
      status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed',
                                             'dropped')),
      options_json TEXT NOT NULL, queued_at REAL NOT NULL, started_at REAL,
      finished_at REAL, owner_json TEXT, error TEXT NOT NULL, moved INTEGER NOT NULL);
    CREATE INDEX model_parts_status ON model_parts(status, queued_at);
    CREATE TABLE grade_revisions (id INTEGER PRIMARY KEY,
      grade_id INTEGER NOT NULL REFERENCES grades(id) ON DELETE CASCADE,
      at REAL NOT NULL, reason TEXT NOT NULL, old_score REAL, new_score REAL,
      old_report_json TEXT NOT NULL);
    CREATE INDEX grade_revisions_grade ON grade_revisions(grade_id);
    CREATE TABLE app_settings (key TEXT PRIMARY KEY, value_json TEXT NOT NULL,
      at REAL NOT NULL)""")

_MIGRATIONS: tuple[Migration, ...] = (_V1, _v2, _V3, _V4, _V5, _V6, _V7, _V8)
SCHEMA_VERSION = len(_MIGRATIONS)


def migrate(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Apply the migrations from the file's ``user_version`` up to ``target`` in one
    transaction; the version is read under the write lock, so two processes opening
    an old file at once do not both migrate it. Returns the version now in force."""
    if not 0 <= target <= SCHEMA_VERSION:
        raise StoreError(f"schema version {target} is not between 0 and {SCHEMA_VERSION}")
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"the database has schema version {current}, newer than this "
                f"grader's {SCHEMA_VERSION}: update the grader"
            )
        for version in range(current + 1, target + 1):
            log.info("migrating the grade store to schema version %d", version)
            _MIGRATIONS[version - 1](conn)
        conn.execute(f"PRAGMA user_version = {max(current, target):d}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return max(current, target)


@dataclass(frozen=True, slots=True)
class GradeRow:
    """One grade as listed; score and needs_review include overrides. Listed anonymously,
    student_id is "" and display_name is the pseudonym."""

    id: int
    submission_id: int
    rubric_version_id: int
    rubric_version: str
    assignment_id: int
    file: str
    sha256: str
    student_id: str
    display_name: str
    score: float | None
    max_score: float
    status: str
    needs_review: bool
    flags: tuple[str, ...]
    overrides: int  # entries in the audit trail
    created_at: float


@dataclass(frozen=True, slots=True)
class OverrideRow:
    """One entry of the audit trail: who changed which points, when, and why."""

    id: int
    grade_id: int
    criterion_id: str
    old_points: float
    new_points: float
    reason: str
    who: str
    at: float  # when the instructor made it (a carried entry keeps the original's time)
    carried_from: int | None = None  # the entry of an earlier grade this one carries over
    note: str = ""  # the store's own remark ("carried from grade 12 ...; capped at 4")


@dataclass(frozen=True, slots=True)
class BatchItemRow:
    id: int
    batch_id: int
    file: str
    sha256: str
    status: ItemStatus
    error: str
    grade_id: int | None
    student_id: str = ""
    display_name: str = ""


BatchStatus = Literal["running", "interrupted", "done"]


@dataclass(frozen=True, slots=True)
class BatchRow:
    id: int
    assignment_id: int
    rubric_version_id: int
    created_at: float
    # "running" while its owner grades it, "interrupted" once the owner is known to be
    # gone (or grading raised) with items left, "done" when no item is pending
    status: BatchStatus
    total: int
    done: int
    errors: int
    pending: int
    owner: str = ""  # the grading process (batch_owner.Owner as JSON); "" before schema 5
    heartbeat_at: float | None = None
    interrupted_at: float | None = None


# The queries that read rows; ``grade_row`` and the dataclasses follow their column order.
GRADE_SELECT = """SELECT g.id, g.submission_id, g.rubric_version_id, rv.version, s.assignment_id,
  s.file, s.sha256, s.student_id, s.display_name, g.score, g.max_score, g.status,
  g.needs_review, (SELECT json_group_array(code) FROM grade_flags WHERE grade_id = g.id),
  (SELECT COUNT(*) FROM overrides WHERE grade_id = g.id), g.created_at, s.pseudonym
FROM grades g JOIN submissions s ON s.id = g.submission_id
JOIN rubric_versions rv ON rv.id = g.rubric_version_id"""
OVERRIDE_SELECT = """SELECT id, grade_id, criterion_id, old_points, new_points, reason, who, at,
  carried_from, note FROM overrides"""
ITEM_SELECT = """SELECT id, batch_id, file, sha256, status, error, grade_id, student_id,
  display_name FROM batch_items"""
BATCH_SELECT = """SELECT b.id, b.assignment_id, b.rubric_version_id, b.created_at,
  CASE WHEN b.status = 'running' AND b.interrupted_at IS NOT NULL THEN 'interrupted'
    ELSE b.status END,
  COUNT(i.id), COALESCE(SUM(i.status = 'done'), 0), COALESCE(SUM(i.status = 'error'), 0),
  COALESCE(SUM(i.status = 'pending'), 0), b.owner, b.heartbeat_at, b.interrupted_at
FROM batches b LEFT JOIN batch_items i ON i.batch_id = b.id"""


def anonymous_file(pseudonym: str, file: str) -> str:
    """The file name shown in place of ``file`` when names are hidden: upload names
    often carry the student's name (Canvas: ``doejane_12345_...``)."""
    suffix = file[file.rfind("."):] if "." in file else ""
    return (pseudonym or "student").lower().replace(" ", "_") + suffix


def grade_row(r: tuple, anonymous: bool) -> GradeRow:
    """A ``GradeRow`` from a ``GRADE_SELECT`` row; ``anonymous`` shows the pseudonym, also
    in place of the file name."""
    row = GradeRow(*r[:12], bool(r[12]), tuple(sorted(json.loads(r[13]))), *r[14:16])
    if not anonymous:
        return row
    return dataclasses.replace(row, student_id="", display_name=r[16] or "",
                               file=anonymous_file(r[16] or "", row.file))
