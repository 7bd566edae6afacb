"""A grading job in the background, followed live by a page.

The Grade page hands over the uploaded files and gets a ``GradeJob``: the job
reads the uploads one notebook at a time into the store (``grader.notebooks.stream``:
ZIPs, notebooks; a bad file becomes a problem that names it, and the others go on),
grades them in a worker thread as one batch in chunks (``grader.service.batch.grade_refs``:
each chunk's notebooks fetched from the store, each report saved as soon as it is made,
so that a class of thousands is never all in memory), and folds the pipeline's progress
events into a ``ProgressBoard`` that the page draws from snapshots (``wait`` returns when
the board changed). A resumed batch counts its whole class, the notebooks graded before
the stop as done, and its results and downloads cover every student of it. If the
page goes away (the browser tab is closed, the user clicks elsewhere), the job
still finishes and every grade is in the store: nothing done is lost.

Starting is idempotent: asking again for the same work (the same files for the
same assignment and options, the same grades to regrade, the same batch to
resume) while a job does it gives that job, not a second batch (two quick
clicks on Grade). A notebook with little in common with the assignment's template
(the pipeline's ``unlike_template`` flag) is named in ``JobResult.unlike``.

A process that exits with jobs running (the app stopped with SIGTERM) stops them first
(``stop_jobs``, registered with ``atexit`` when the first job starts): their sandboxes
are killed, their run folders and cgroups removed, the grades made so far stay saved
and each batch is left interrupted, to be resumed.
"""

from __future__ import annotations

import atexit
import dataclasses
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inference import DisaggregatedClient

from ..errors import StoreError
from ..layers.base import GradeOptions
from ..notebooks.archive import InputProblem
from ..notebooks.stream import NotebookRef, read_class
from ..pipeline import GradeInput, Grader
from ..rubrics.schema import Rubric, loads
from ..sandbox.stopping import allow_runs, stop_runs, wait_for_runs
from ..store.database import BatchRow, GradeRow, Store
from ..types import GradeReport
from ..views.progress import BoardSnapshot, ProgressBoard
from .batch import BatchResult, Item, batch_class, grade_items, grade_refs, stored_bytes
from .model_runs import model_queue_for
from .unread import record_unread
from .workspace import Upload, Workspace

log = logging.getLogger(__name__)


@dataclass(slots=True)
class JobResult:
    assignment: str
    reports: list[GradeReport] = field(default_factory=list)
    grade_ids: list[int] = field(default_factory=list)  # one per report, same order
    problems: list[InputProblem] = field(default_factory=list)  # files not graded, and why
    reused: int = 0
    error: str = ""  # the job itself failed (the assignment could not be loaded, ...)
    seconds: float = 0.0
    # Regrades: for each notebook graded, the grade it was graded again from, as it was
    # then: (grade id, rubric version, score).
    before: list[tuple[int, str, float | None]] = field(default_factory=list)
    title: str = ""  # the assignment's title (for the downloads)
    # Notebooks with little in common with the assignment's template: (grade id, fit)
    unlike: list[tuple[int, str]] = field(default_factory=list)  # (grade id, why)
    batch: object = None  # the batch, as the model queue counts its model parts

    def stored(self, store: Store, anonymous: bool = False) -> list[tuple[int, GradeReport]]:
        """The job's grades as stored now: with overrides, and pseudonyms when asked."""
        return [(gid, store.get_report(gid, anonymous)) for gid in self.grade_ids]


Collect = Callable[[], tuple[Sequence[Item], list[InputProblem]]]
RunBatch = Callable[[Grader, Sequence[Item]], BatchResult]

_LIVE: set[GradeJob] = set()  # jobs running in this process
_LIVE_LOCK = threading.Lock()
_AT_EXIT: list[bool] = []  # stop_jobs registered with atexit


def _store_file(store: Store) -> str:
    """The store's file, resolved: two Store objects over one file are one store."""
    return str(store.path) if str(store.path) == ":memory:" else \
        str(Path(store.path).resolve())


def _work_key(store: Store, *parts: object) -> str:
    """What a job does, as a key: the store's file and the job's parts."""
    return hashlib.sha256(repr((_store_file(store), *parts)).encode()).hexdigest()


class GradeJob:
    def __init__(self, workspace: Workspace, assignment: str, collect: Collect,
                 options: GradeOptions, client: DisaggregatedClient | None,
                 workers: int = 1, regrade: bool = False, run: RunBatch | None = None,
                 rubric: Rubric | None = None, key: str = "",
                 holds: int | None = None, kind: str = "grade") -> None:
        """``collect`` gives the notebooks to grade and the files that cannot be (it runs
        in the job's thread: expanding a large ZIP does not hold the page up); ``run``
        grades them (default: a new batch in the store); ``rubric`` replaces the one in
        force (a resumed batch keeps the version it started with); ``key`` names the
        work, so that starting it again while this job runs gives this job; ``holds``: a
        batch taken over for this job, marked interrupted again if the job fails; ``kind``:
        "grade", "regrade" or "resume" (what a page that finds the job says it does)."""
        self.key = key
        self.kind = kind
        self.started_at = time.time()
        self.holds = holds
        self.workspace = workspace
        self.assignment = assignment
        self.collect = collect
        self.options = options
        self.client = client if options.use_llm else None
        self.workers = workers
        self.rubric = rubric
        # grades first: with the models on, each grade's model part goes to the process's
        # model queue (``model_queue_for``) and this job ends with the grades
        self.models = model_queue_for(workspace, self.client) if self.client is not None \
            else None
        self.run = run or (lambda grader, items: grade_items(
            grader, items, workspace.store, workers, regrade, models=self.models))
        self.result = JobResult(assignment)
        self.board = ProgressBoard(models=self.client is not None,
                                   replies=_replies(self.client, self.started_at))
        self._thread = threading.Thread(target=self._run, name="grade-job", daemon=True)

    def start(self) -> GradeJob:
        """Start grading; if a job of this process does the same work (same ``key``), that
        job is returned instead and this one never runs."""
        with _LIVE_LOCK:
            same = next((j for j in _LIVE if self.key and j.key == self.key), None)
            if same is not None:
                log.info("grading job for %s already running: not started twice",
                         self.assignment)
                return same
            _LIVE.add(self)
            if not _AT_EXIT:
                _AT_EXIT.append(True)
                atexit.register(stop_jobs, "the grader is stopping")
            self._thread.start()
        return self

    @property
    def running(self) -> bool:
        return self._thread.ident is not None and self._thread.is_alive()

    @property
    def finished(self) -> bool:
        return self._thread.ident is not None and not self._thread.is_alive()

    def _run(self) -> None:
        t0 = time.perf_counter()
        try:
            items, self.result.problems = self.collect()
            self.board.set_total(len(items))
            assignment = self.workspace.load(self.assignment)
            if self.rubric is not None:
                assignment = dataclasses.replace(assignment, rubric=self.rubric)
            self.result.title = assignment.title
            grader = Grader(assignment, self.options, client=self.client,
                            events=self.board.apply)
            batch = self.run(grader, items)
            ids = batch.grade_ids
            if len(ids) != len(items):  # every report is saved as it is made: this is a bug
                raise StoreError(f"{len(items)} notebooks graded, {len(ids)} grades stored")
            self.result.reports, self.result.grade_ids = batch.reports, ids
            self.result.reused = batch.reused
            self.result.batch = batch.batch
            # the files not read, as items of the batch in error (the Dashboard counts them)
            record_unread(self.workspace.store, batch.batch_id, self.result.problems)
            self.result.unlike = _unlike(batch.reports, items, ids)
        except Exception as exc:  # shown on the page; grades already saved stay saved
            log.exception("grading job for %s failed", self.assignment)
            self.result.error = f"{type(exc).__name__}: {exc}"
            if self.holds is not None:
                self._release(self.result.error)
        finally:
            self.result.seconds = time.perf_counter() - t0
            with _LIVE_LOCK:
                _LIVE.discard(self)

    def _release(self, why: str) -> None:
        """Leave the batch this job took over as interrupted, to be resumed later."""
        try:
            self.workspace.store.interrupt_batch(self.holds, why)
        except StoreError:
            log.exception("batch %s could not be marked interrupted", self.holds)

    def wait(self, since_version: int, timeout: float = 0.25) -> BoardSnapshot:
        """The board once it changed after ``since_version``, the job ended, or the
        timeout passed (a page's redraw loop)."""
        deadline = time.monotonic() + timeout
        while True:
            snap = self.board.snapshot()
            if snap.version != since_version or self.finished or time.monotonic() > deadline:
                return snap
            time.sleep(0.02)


_ROLE_LAYERS = {"code": "L3", "feedback": "L4"}  # the model layers' roles


def _replies(client: DisaggregatedClient | None, since: float
             ) -> Callable[[], list[tuple[str, float]]] | None:
    """The model replies that ended since ``since`` (layer, epoch seconds), from the
    client's request history: the board says "replied" for a model done writing while
    the other still writes (the pipeline reports both layers once both have ended)."""
    if client is None:
        return None

    def ended() -> list[tuple[str, float]]:
        return [(_ROLE_LAYERS[m.role], m.finished_at) for m in client.history.recent(64)
                if m.role in _ROLE_LAYERS and m.finished_at >= since]

    return ended


def stop_jobs(why: str, timeout_s: float = 60.0) -> list[GradeJob]:
    """Stop every grading job of this process: their sandboxes killed (``grader.sandbox.
    stopping``), each job ended with its batch interrupted and the grades made so far
    saved; then runs may start again. The jobs still running after ``timeout_s``."""
    with _LIVE_LOCK:
        jobs = list(_LIVE)
    if not jobs:
        return []
    stop_runs(why)
    deadline = time.monotonic() + timeout_s
    try:
        for job in jobs:
            job._thread.join(max(0.0, deadline - time.monotonic()))
        wait_for_runs(max(0.0, deadline - time.monotonic()))
    finally:
        allow_runs()
    left = [j for j in jobs if j.running]
    log.warning("stopped %d grading jobs (%s); %d still running", len(jobs), why, len(left))
    return left


def _unlike(reports: Sequence[GradeReport], items: Sequence[Item],
            grade_ids: Sequence[int]) -> list[tuple[int, str]]:
    """(grade id, the flag's message) of the notebooks that have little in common with
    the assignment's template (the pipeline's ``unlike_template`` flag)."""
    ids = {(i.sha256, i.student_id): g for i, g in zip(items, grade_ids, strict=True)}
    return [(ids[(r.sha256, r.student_id)], f.message) for r in reports
            for f in r.flags if f.code == "unlike_template" and (r.sha256, r.student_id) in ids]


def start_grading(workspace: Workspace, assignment: str, uploads: Sequence[Upload],
                  options: GradeOptions, client: DisaggregatedClient | None,
                  workers: int = 1, regrade: bool = False) -> GradeJob:
    """Start grading ``uploads`` (notebooks and ZIPs) for ``assignment`` in the background.
    The same uploads for the same assignment and options, asked for again while they are
    graded, give the running job (one batch per upload set)."""

    def collect() -> tuple[list[NotebookRef], list[InputProblem]]:
        keep = workspace.store.save_file  # each notebook kept as it is read, then let go
        with read_class([(u.name, u.data) for u in uploads], keep) as cls:
            return cls.refs, cls.problems

    return GradeJob(workspace, assignment, collect, options, client, workers, regrade,
                    key=grading_key(workspace, assignment, uploads, options, regrade)).start()


def grading_key(workspace: Workspace, assignment: str, uploads: Sequence[Upload],
                options: GradeOptions, regrade: bool = False) -> str:
    """What ``start_grading`` does, as a ``GradeJob.key``: the store, the assignment, the
    uploads' names and contents (in any order), the options."""
    files = sorted((u.name, hashlib.sha256(u.data).hexdigest()) for u in uploads)
    return _work_key(workspace.store, "grade", assignment, files, options, regrade)


def stored_input(store: Store, grade: GradeRow) -> GradeInput:
    """A graded submission as the grader takes it, from the bytes the store kept (with the
    student's real id and name). Raises StoreError when they were not kept."""
    data = store.get_file(grade.sha256)
    if data is None:
        raise StoreError(f"{grade.file}: its content was not kept (graded before the store "
                         "kept notebooks); upload it on the Grade page")
    return GradeInput(grade.file, data, grade.student_id, grade.display_name)


def start_regrading(workspace: Workspace, grade_ids: Sequence[int], options: GradeOptions,
                    client: DisaggregatedClient | None, workers: int = 1) -> GradeJob:
    """Grade stored submissions again, from their stored bytes, with the rubric now in force
    (after a rubric edit, say). All grades must be of one assignment; several grades of
    one submission (its rubric versions) grade it once. ``result.before`` holds, for each
    notebook graded, the grade it was graded again from. The overrides of the grades
    replaced are carried over (grader/store/carry.py)."""
    store = workspace.store
    if not grade_ids:
        raise StoreError("no grades to regrade")
    rows: list[GradeRow] = []
    for gid in grade_ids:  # a notebook once, however many of its grades are given
        row = store.get_grade(gid)
        if all(r.submission_id != row.submission_id for r in rows):
            rows.append(row)
    if len({r.assignment_id for r in rows}) != 1:
        raise StoreError("regrading grades of several assignments at once")
    name = store.assignment_name(rows[0].assignment_id)
    job: GradeJob

    def collect() -> tuple[list[NotebookRef], list[InputProblem]]:
        refs, problems, before = [], [], []
        sizes = store.file_sizes(r.sha256 for r in rows)
        for r in rows:
            if r.sha256 not in sizes:
                problems.append(InputProblem(r.file, f"{r.file}: its content was not kept "
                                             "(graded before the store kept notebooks); "
                                             "upload it on the Grade page"))
                continue
            refs.append(NotebookRef(r.file, r.sha256, sizes[r.sha256], r.student_id,
                                    r.display_name))
            before.append((r.id, r.rubric_version, r.score))
        job.result.before = before
        return refs, problems

    key = _work_key(store, "regrade", sorted(r.submission_id for r in rows), options)
    job = GradeJob(workspace, name, collect, options, client, workers, regrade=True, key=key,
                   kind="regrade")
    return job.start()


def running_jobs(workspace: Workspace, assignment: str | None = None,
                 kinds: Sequence[str] = ("grade", "regrade", "resume")) -> list[GradeJob]:
    """Jobs of this process grading now into ``workspace``'s store (for ``assignment``
    when given), oldest first: a page drawn afresh (a reload, a second tab) finds the
    batches that run on without it."""
    where = _store_file(workspace.store)
    with _LIVE_LOCK:
        jobs = [j for j in _LIVE if _store_file(j.workspace.store) == where and j.kind in kinds
                and (assignment is None or j.assignment == assignment)]
    return sorted(jobs, key=lambda j: j.started_at)


def interrupted_batches(workspace: Workspace, assignment: str) -> list[BatchRow]:
    """Batches of ``assignment`` that stopped with notebooks left to grade: their grader
    is gone (the app was stopped or killed, the machine restarted) or its grading
    failed. A batch that a live grader runs, here or in another process, is not one."""
    aid = workspace.store.assignment_id(assignment)
    if aid is None:
        return []
    return [b for b in workspace.store.batches(aid) if b.status == "interrupted"]


def start_resuming(workspace: Workspace, batch_id: int, options: GradeOptions,
                   client: DisaggregatedClient | None, workers: int = 1) -> GradeJob:
    """Grade what an interrupted batch left, from the notebooks the store kept when it
    started, with the rubric version it started with. The batch is taken over at once
    (StoreError if it is not interrupted); asked again while its job runs, that job."""
    store = workspace.store
    key = _work_key(store, "resume", batch_id)
    with _LIVE_LOCK:
        same = next((j for j in _LIVE if j.key == key), None)
    if same is not None:
        return same
    batch = store.get_batch(batch_id)
    name = store.assignment_name(batch.assignment_id)
    version = next(v for v in store.rubric_versions(batch.assignment_id)
                   if v.id == batch.rubric_version_id)
    rubric = loads(version.rubric_json, f"{name} rubric {version.version}")
    store.claim_batch(batch_id)

    def collect() -> tuple[list[NotebookRef], list[InputProblem]]:
        return batch_class(store, batch_id)

    def run(grader: Grader, refs: Sequence[Item]) -> BatchResult:
        return grade_refs(grader, refs, stored_bytes(store), store, workers,
                          batch_id=batch_id, models=model_queue_for(workspace, client)
                          if options.use_llm and client is not None else None)

    return GradeJob(workspace, name, collect, options, client, workers, run=run,
                    rubric=rubric, key=key, holds=batch_id, kind="resume").start()


def job_rows(jobs: Iterable[GradeJob]) -> list[dict[str, Any]]:
    """One row per grading job running in this process (``jobs.running_jobs``): counts
    only, no file names."""
    rows = []
    for job in jobs:
        snap = job.board.snapshot()
        rows.append({"job": job.kind, "assignment": job.assignment,
                     "started": time.strftime("%Y-%m-%d %H:%M:%S",
                                              time.localtime(job.started_at)),
                     "notebooks": snap.total, "done": snap.done,
                     "grading now": sum(n.state == "grading" for n in snap.notebooks),
                     "files not read": len(job.result.problems),
                     "resumes batch": job.holds})
    return rows
