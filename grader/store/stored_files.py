"""The grade store's part for the app: submission bytes and rubric versions in force.

A mixin of ``Store`` (it uses the store's transaction helpers), kept apart so
that ``store.py`` stays about grades. Notebook bytes are stored once per content
hash: the review page shows a notebook beside its grade and regrades it without
asking for the file again. The rubric in force per assignment is a pointer to
one of its stored versions, so editing a rubric never rewrites the assignment's
folder (the bundled examples stay as they ship) and every version stays readable.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from ..errors import StoreError


@dataclass(frozen=True, slots=True)
class RubricVersionRow:
    id: int
    assignment_id: int
    version: str
    rubric_json: str
    created_at: float
    note: str
    active: bool


class _Tx(Protocol):
    def _tx(self, what: str, write: bool = True
            ) -> AbstractContextManager[sqlite3.Connection]: ...


class StoreFilesMixin:
    """Submission files and rubric versions; mixed into ``Store``."""

    def save_file(self: _Tx, sha256: str, data: bytes) -> None:
        """Keep a submission's bytes (once per content; saving again changes nothing)."""
        with self._tx("save a submission file") as c:
            c.execute("INSERT INTO submission_files (sha256, data, created_at) VALUES (?, ?, ?) "
                      "ON CONFLICT DO NOTHING", (sha256, data, time.time()))

    def file_sizes(self: _Tx, sha256s: Iterable[str]) -> dict[str, int]:
        """The size of each kept file among ``sha256s`` (those not kept are left out), read
        without reading the files (a batch plans its chunks from them)."""
        wanted = list(dict.fromkeys(sha256s))
        with self._tx("read the sizes of submission files", write=False) as c:
            rows = [c.execute("SELECT length(data) FROM submission_files WHERE sha256 = ?",
                              (sha,)).fetchone() for sha in wanted]
        return {sha: int(row[0]) for sha, row in zip(wanted, rows, strict=True)
                if row is not None}

    def get_file(self: _Tx, sha256: str) -> bytes | None:
        with self._tx("read a submission file", write=False) as c:
            row = c.execute("SELECT data FROM submission_files WHERE sha256 = ?",
                            (sha256,)).fetchone()
        return None if row is None else bytes(row[0])

    def assignment_id(self: _Tx, name: str) -> int | None:
        with self._tx(f"find assignment {name!r}", write=False) as c:
            row = c.execute("SELECT id FROM assignments WHERE name = ?", (name,)).fetchone()
        return None if row is None else int(row[0])

    def assignment_name(self: _Tx, assignment_id: int) -> str:
        with self._tx(f"find assignment {assignment_id}", write=False) as c:
            row = c.execute("SELECT name FROM assignments WHERE id = ?",
                            (assignment_id,)).fetchone()
        if row is None:
            raise StoreError(f"no assignment {assignment_id}")
        return str(row[0])

    def set_active_rubric(self: _Tx, assignment_id: int, rubric_version_id: int,
                          note: str = "") -> None:
        """Put a stored rubric version in force for its assignment (``note``: why)."""
        with self._tx(f"activate rubric version {rubric_version_id}") as c:
            row = c.execute("UPDATE assignments SET active_rubric_version_id = ?1 WHERE id = ?2 "
                            "AND EXISTS (SELECT 1 FROM rubric_versions WHERE id = ?1 AND "
                            "assignment_id = ?2) RETURNING id",
                            (rubric_version_id, assignment_id)).fetchone()
            if row is None:
                raise StoreError(f"rubric version {rubric_version_id} is not of assignment "
                                 f"{assignment_id}")
            if note:
                c.execute("UPDATE rubric_versions SET note = ? WHERE id = ?",
                          (note, rubric_version_id))

    def rubric_versions(self: _Tx, assignment_id: int) -> list[RubricVersionRow]:
        """The assignment's stored rubric versions, newest first; ``active`` marks the one
        in force (none when the folder's rubric was never replaced)."""
        with self._tx("list rubric versions", write=False) as c:
            rows = c.execute(
                "SELECT rv.id, rv.assignment_id, rv.version, rv.rubric_json, rv.created_at, "
                "rv.note, rv.id = a.active_rubric_version_id FROM rubric_versions rv JOIN "
                "assignments a ON a.id = rv.assignment_id WHERE rv.assignment_id = ? "
                "ORDER BY rv.id DESC", (assignment_id,)).fetchall()
        return [RubricVersionRow(*r[:6], bool(r[6])) for r in rows]

    def active_rubric(self: _Tx, assignment_id: int) -> RubricVersionRow | None:
        with self._tx("read the rubric in force", write=False) as c:
            row = c.execute(
                "SELECT rv.id, rv.assignment_id, rv.version, rv.rubric_json, rv.created_at, "
                "rv.note FROM assignments a JOIN rubric_versions rv ON rv.id = "
                "a.active_rubric_version_id WHERE a.id = ?", (assignment_id,)).fetchone()
        return None if row is None else RubricVersionRow(*row, True)

