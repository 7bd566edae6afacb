"""The grade store's batches: each item recorded pending before grading starts, marked
done in the same transaction as its grade, so a batch stopped at any point (kill -9
included) resumes with what is left. A mixin of ``Store``, kept apart so that
``store.py`` stays about grades.

Each batch records its owner, the grading process, and a heartbeat
(grader/store/batch_owner.py). Listing batches marks *interrupted* those that are not
finished and whose owner is gone; a batch whose grading raised is marked so at once
(``interrupt_batch``); resuming one takes it over (``claim_batch``), and only one
grader can. Marking an item done with its grade also carries the overrides of the
grade it replaces (grader/store/carry.py), in the same transaction.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterable

from ..errors import StoreError
from ..safe_text import scrub
from .batch_owner import Owner, current_owner, owner_gone
from .carry import CarryResult, carry_overrides, carry_status
from .db_schema import BATCH_SELECT, ITEM_SELECT, ITEM_STATUSES, BatchItemRow, BatchRow, ItemStatus

log = logging.getLogger(__name__)


class StoreBatchesMixin:
    """Batches and their items; mixed into ``Store``."""

    def start_batch(self, assignment_id: int, rubric_version_id: int,
                    items: Iterable[tuple[str, str] | tuple[str, str, str, str]],
                    owner: Owner | None = None) -> int:
        """Record a batch with all its items pending, up front; returns its id. An item is
        (file, sha256) or (file, sha256, student id, display name). ``owner``: the process
        that grades it (default: this one)."""
        rows = [tuple(scrub(str(v)) for v in (*item, "", "")[:4]) for item in items]
        who = (owner or current_owner()).to_json()
        with self._tx(f"start a batch of assignment {assignment_id}") as c:
            now = time.time()
            row = c.execute("INSERT INTO batches (assignment_id, rubric_version_id, created_at, "
                            "status, owner, heartbeat_at) SELECT ?, id, ?, ?, ?, ? FROM "
                            "rubric_versions WHERE id = ? AND assignment_id = ? RETURNING id",
                            (assignment_id, now, "running" if rows else "done", who, now,
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

    def _mark(self, c: sqlite3.Connection, item_id: int, status: str, grade_id: int | None,
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
                  "batch_id = ?1 AND status = 'pending') THEN 'running' ELSE 'done' END, "
                  "heartbeat_at = ?2 WHERE id = ?1", (row[0], time.time()))
        if grade_id is not None and carry_overrides(c, grade_id):
            self._refresh(c, grade_id)  # Store._refresh

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
        """The assignment's batches, newest first, with their item counts; those whose
        owner is gone are marked interrupted first."""
        self.reap_batches(assignment_id)
        return [BatchRow(*r) for r in self._query(
            f"{BATCH_SELECT} WHERE b.assignment_id = ? GROUP BY b.id ORDER BY b.id DESC",
            (assignment_id,), "list batches")]

    # -- owners -------------------------------------------------------------------------
    def reap_batches(self, assignment_id: int | None = None) -> list[int]:
        """Mark interrupted the running batches (of one assignment, or all) whose owner is
        gone (grader/store/batch_owner.py); returns their ids. Batches a live grader runs, here
        or in another process, are left alone."""
        running = self._query(
            "SELECT b.id, b.owner, max(coalesce(b.heartbeat_at, 0), b.created_at, "
            "coalesce((SELECT max(updated_at) FROM batch_items WHERE batch_id = b.id), 0)) "
            "FROM batches b WHERE b.status = 'running' AND b.interrupted_at IS NULL AND "
            "b.assignment_id = coalesce(?, b.assignment_id)", (assignment_id,),
            "list running batches")
        now = time.time()
        gone = [(bid, owner) for bid, owner, seen in running if owner_gone(owner, seen, now)]
        if not gone:
            return []
        marked = []
        with self._tx("mark batches interrupted") as c:
            for bid, owner in gone:  # unless claimed since: the owner is part of the match
                if c.execute("UPDATE batches SET interrupted_at = ? WHERE id = ? AND status = "
                             "'running' AND interrupted_at IS NULL AND owner = ? RETURNING id",
                             (now, bid, owner)).fetchone():
                    marked.append(bid)
        for bid in marked:
            log.warning("batch %d: its grader is gone with notebooks left; marked interrupted",
                        bid)
        return marked

    def interrupt_batch(self, batch_id: int, why: str) -> bool:
        """Mark a batch interrupted now (its grading raised: ``why``) if items are left;
        returns whether it was marked."""
        rows = self._query("UPDATE batches SET interrupted_at = ? WHERE id = ? AND status = "
                           "'running' AND interrupted_at IS NULL RETURNING id",
                           (time.time(), batch_id), f"interrupt batch {batch_id}", write=True)
        if rows:
            log.warning("batch %d interrupted: %s", batch_id, why)
        return bool(rows)

    def claim_batch(self, batch_id: int, owner: Owner | None = None) -> None:
        """Take an interrupted batch over to resume it (``owner``: default this process).
        Raises StoreError when it is not interrupted: done, or graded by a live grader
        (another one may have claimed it first)."""
        self.reap_batches(self.get_batch(batch_id).assignment_id)
        who = (owner or current_owner()).to_json()
        rows = self._query("UPDATE batches SET owner = ?, heartbeat_at = ?, interrupted_at = "
                           "NULL WHERE id = ? AND status = 'running' AND interrupted_at IS NOT "
                           "NULL RETURNING id", (who, time.time(), batch_id),
                           f"claim batch {batch_id}", write=True)
        if not rows:
            state = self.get_batch(batch_id).status
            raise StoreError(f"batch {batch_id} cannot be resumed: it is {state}"
                             + (" (another grader is grading it)" if state == "running" else ""))
        log.info("batch %d claimed to resume it", batch_id)

    def beat(self, batch_id: int) -> None:
        """The owner's heartbeat: it is still grading this batch."""
        self._query("UPDATE batches SET heartbeat_at = ? WHERE id = ? RETURNING id",
                    (time.time(), batch_id), f"heartbeat of batch {batch_id}", write=True)

    # -- overrides carried to a new grade ---------------------------------------------------
    def carry_overrides(self, grade_id: int) -> CarryResult:
        """Carry the overrides of the grade ``grade_id`` replaces (grader/store/carry.py);
        done by itself when a batch item is marked done with its grade, so needed only for
        a grade saved without a batch item. Carrying twice changes nothing."""
        with self._tx(f"carry overrides to grade {grade_id}") as c:
            if carry_overrides(c, grade_id):
                self._refresh(c, grade_id)  # Store._refresh
            return carry_status(c, grade_id)

    def carry_status(self, grade_id: int) -> CarryResult:
        """What grade ``grade_id`` carries from the grade it replaced, and what it could not
        (criterion gone)."""
        with self._tx(f"read overrides carried to grade {grade_id}", write=False) as c:
            return carry_status(c, grade_id)
