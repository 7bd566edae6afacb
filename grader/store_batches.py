"""The grade store's batches: each item recorded pending before grading starts, marked
done in the same transaction as its grade, so a batch stopped at any point (kill -9
included) resumes with what is left. A mixin of ``Store``, kept apart so that
``store.py`` stays about grades.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterable

from .errors import StoreError
from .store_schema import (
    BATCH_SELECT,
    ITEM_SELECT,
    ITEM_STATUSES,
    BatchItemRow,
    BatchRow,
    ItemStatus,
)

log = logging.getLogger(__name__)


class StoreBatchesMixin:
    """Batches and their items; mixed into ``Store``."""

    def start_batch(self, assignment_id: int, rubric_version_id: int,
                    items: Iterable[tuple[str, str] | tuple[str, str, str, str]]) -> int:
        """Record a batch with all its items pending, up front; returns its id. An item is
        (file, sha256) or (file, sha256, student id, display name)."""
        rows = [(*item, "", "")[:4] for item in items]
        with self._tx(f"start a batch of assignment {assignment_id}") as c:
            now = time.time()
            row = c.execute("INSERT INTO batches (assignment_id, rubric_version_id, created_at, "
                            "status) SELECT ?, id, ?, ? FROM rubric_versions WHERE id = ? AND "
                            "assignment_id = ? RETURNING id",
                            (assignment_id, now, "running" if rows else "done",
                             rubric_version_id, assignment_id)).fetchone()
            if row is None:
                raise StoreError(f"rubric version {rubric_version_id} is not of assignment "
                                 f"{assignment_id}")
            c.executemany("INSERT INTO batch_items (batch_id, file, sha256, student_id, "
                          "display_name, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                          [(row[0], *r, now) for r in rows])
        log.info("batch %d: %d items pending", row[0], len(rows))
        return int(row[0])

    def mark_item(self, item_id: int, status: ItemStatus, grade_id: int | None = None,
                  error: str = "") -> None:
        """Set a batch item's status; "done" needs a grade and "error" a message."""
        with self._tx(f"mark batch item {item_id}") as c:
            self._mark(c, item_id, status, grade_id, error)

    @staticmethod
    def _mark(c: sqlite3.Connection, item_id: int, status: str, grade_id: int | None,
              error: str) -> None:
        if status not in ITEM_STATUSES:
            raise StoreError(f"item status {status!r} is not one of {', '.join(ITEM_STATUSES)}")
        if (status == "done") != (grade_id is not None) or (status == "error") != bool(error):
            raise StoreError(f"batch item {item_id}: a done item needs a grade, an item in "
                             "error a message, and no other item either")
        row = c.execute("UPDATE batch_items SET status = ?, grade_id = ?, error = ?, updated_at "
                        "= ? WHERE id = ? RETURNING batch_id",
                        (status, grade_id, error, time.time(), item_id)).fetchone()
        if row is None:
            raise StoreError(f"no batch item {item_id}")
        c.execute("UPDATE batches SET status = CASE WHEN EXISTS (SELECT 1 FROM batch_items WHERE "
                  "batch_id = ?1 AND status = 'pending') THEN 'running' ELSE 'done' END WHERE "
                  "id = ?1", (row[0],))

    def pending_items(self, batch_id: int) -> list[BatchItemRow]:
        """What is left of a batch: after a crash, what to grade on resuming."""
        return self.batch_items(batch_id, "pending")

    def batch_items(self, batch_id: int, status: ItemStatus | None = None) -> list[BatchItemRow]:
        return [BatchItemRow(*r) for r in self._query(
            f"{ITEM_SELECT} WHERE batch_id = ? AND status = coalesce(?, status) ORDER BY id",
            (batch_id, status), f"read batch {batch_id}")]

    def get_batch(self, batch_id: int) -> BatchRow:
        rows = self._query(f"{BATCH_SELECT} WHERE b.id = ? GROUP BY b.id", (batch_id,),
                           "read batch")
        if not rows:
            raise StoreError(f"no batch {batch_id}")
        return BatchRow(*rows[0])

    def batches(self, assignment_id: int) -> list[BatchRow]:
        """The assignment's batches, newest first, with their item counts."""
        return [BatchRow(*r) for r in self._query(
            f"{BATCH_SELECT} WHERE b.assignment_id = ? GROUP BY b.id ORDER BY b.id DESC",
            (assignment_id,), "list batches")]
