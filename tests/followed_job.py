"""A real grading job that a page is sure to find running: it grades only once a page
follows it (``wait``), however slowly the app starts. Used by the tests of a page drawn
afresh (a reload) while a batch runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from grader.layers.base import GradeOptions
from grader.notebooks.archive import expand_uploads
from grader.pipeline import GradeInput
from grader.service.batch import grade_batch
from grader.service.jobs import GradeJob
from grader.service.workspace import Workspace
from grader.store.database import Store


class FollowedJob(GradeJob):
    followed = threading.Event()

    def wait(self, since_version: int, timeout: float = 0.25):
        self.followed.set()
        return super().wait(since_version, timeout)


@contextmanager
def followed_job(app_data: Path, assignment: str, notebook: Path,
                 file: str = "student042.ipynb") -> Iterator[tuple[FollowedJob, Workspace]]:
    """``notebook`` uploaded as ``file`` and graded against ``assignment`` (no execution,
    no models) once a page follows the job; waits for it to end on the way out."""
    store = Store(app_data / "grader.db")
    ws = Workspace(store)
    data = notebook.read_bytes()

    def collect():
        files, problems = expand_uploads([(file, data)])
        return [GradeInput.from_submission(f) for f in files], problems

    def run(grader, items):
        assert FollowedJob.followed.wait(120), "no page followed the job"
        return grade_batch(grader, items, store, 1)

    FollowedJob.followed.clear()
    job = FollowedJob(ws, assignment, collect, GradeOptions(execute=False, use_llm=False),
                      None, run=run).start()
    try:
        yield job, ws
    finally:
        FollowedJob.followed.set()
        while not job.finished:
            time.sleep(0.05)
        store.close()
