"""The files of an upload that could not be read, recorded with their batch.

A notebook that does not read (damaged JSON, a PDF renamed ``.ipynb``, a notebook over
the size limit) never becomes a grade: reading the uploads turns it into an
``InputProblem`` that the Grade page names. Without a record the Dashboard would say of
that batch "failed 0" and "Failed files: none recorded". ``record_unread`` keeps each as
an item of its batch in error, with the reason (the batch's "failed" count and the
Dashboard's failed files read them: ``grader.views.grading``). Called once the batch has
run: its other items are done by then, so the batch's status stays what grading made it,
and a batch resumed later never takes these items for notebooks left to grade.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from ..notebooks.archive import InputProblem
from ..safe_text import scrub
from ..store.database import Store

__all__ = ["record_unread"]

log = logging.getLogger(__name__)


def record_unread(store: Store, batch_id: int | None, problems: Sequence[InputProblem]) -> int:
    """Keep each of ``problems`` as an item of batch ``batch_id`` in error (its file as the
    upload named it, its reason); returns how many were kept (0 without a batch)."""
    if batch_id is None or not problems:
        return 0
    now = time.time()
    rows = [(batch_id, scrub(p.file), scrub(p.reason or "could not be read"), now)
            for p in problems]
    with store._tx(f"record the unreadable files of batch {batch_id}") as c:
        c.executemany("INSERT INTO batch_items (batch_id, file, sha256, status, error, "
                      "updated_at) VALUES (?, ?, '', 'error', ?, ?)", rows)
    log.info("batch %d: %d unreadable files recorded", batch_id, len(rows))
    return len(rows)
