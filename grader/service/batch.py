"""Batches: grading many submissions with every report stored as soon as it is made.

With a store, each item of a batch is recorded as pending before any grading
starts; each report is saved in the same transaction that marks its item done.
A batch killed half-way (even with kill -9) resumes with ``resume_batch``, or, from
the command line, by grading the same files again (``grade_class`` continues the
interrupted batch of exactly those notebooks: one batch, one count, one set of
exports); content already graded with the same rubric version is reused, not regraded.
Grading goes chunk by chunk (``grader.service.chunks``), so that a class of thousands
never has all its notebooks in memory: ``grade_class`` reads the uploads one notebook
at a time (``grader.notebooks.stream``), the store keeping each, and fetches each
chunk's notebooks from the store (or, without one, from the uploads again).
While a batch is graded its owner (this process) beats a heartbeat in the store; if
grading raises, the batch is marked interrupted at once, so that it is offered for
resuming (grader/store/batch_owner.py says how a batch killed outright is found). A
batch stopped on purpose (SIGTERM: ``grader.sandbox.stopping``) raises GradingStopped
with every report it has (reused or saved); the rest stay pending, to be resumed.
``stop_on_signals`` turns SIGTERM and SIGHUP into such a stop for a command line.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from ..errors import GradingStopped, StoreError
from ..notebooks.archive import InputProblem
from ..notebooks.stream import ClassUploads, NotebookRef
from ..pipeline import GradeInput, Grader, Progress
from ..sandbox.stopping import stop_runs, wait_for_runs
from ..store.batch_owner import HEARTBEAT_S
from ..store.database import Store
from .chunks import BatchResult, ChunkRun, Fetch, store_ids
from .model_queue import ModelQueue
from .sizing import chunk_budget, chunks, memory_available

__all__ = ["BatchResult", "Item", "batch_class", "grade_batch", "grade_class", "grade_items",
           "grade_refs", "resumable_batch", "resume_batch", "stop_on_signals", "stored_bytes"]

log = logging.getLogger(__name__)

Item = NotebookRef | GradeInput  # a notebook to grade: known by its hash, or in hand


def grade_batch(
    grader: Grader,
    items: Sequence[GradeInput],
    store: Store | None = None,
    workers: int = 1,
    progress: Progress | None = None,
    regrade: bool = False,
    models: ModelQueue | None = None,
) -> BatchResult:
    """Grade ``items`` (their bytes in hand) as one batch; with a store, their bytes are
    kept first, so that a batch stopped half-way can resume from the store."""
    refs, data = _refs(items)
    if store is not None:
        for ref in refs:
            store.save_file(ref.sha256, data[(ref.name, ref.sha256)])
    return grade_refs(grader, refs, lambda r: data[(r.name, r.sha256)], store, workers,
                      progress, regrade, models=models)


def resume_batch(
    grader: Grader,
    store: Store,
    batch_id: int,
    inputs: Sequence[GradeInput],
    workers: int = 1,
    progress: Progress | None = None,
    claim: bool = True,
) -> BatchResult:
    """Grade what a batch left pending; ``inputs`` must hold those files' contents. The
    batch is taken over first (``Store.claim_batch``; ``claim=False`` when the caller
    did): a batch that is not interrupted (another grader runs it, or it is done)
    raises StoreError. The reports are those of the notebooks left."""
    pending = store.pending_items(batch_id)
    refs, data = _refs(inputs)
    by_key = {(r.name, r.sha256): r for r in refs}
    missing = [p.file for p in pending if (p.file, p.sha256) not in by_key]
    if missing:
        raise FileNotFoundError(f"batch {batch_id}: cannot resume without {', '.join(missing)}")
    if claim:
        store.claim_batch(batch_id)
    left = [by_key[(p.file, p.sha256)] for p in pending]
    return grade_refs(grader, left, lambda r: data[(r.name, r.sha256)], store, workers,
                      progress, batch_id=batch_id)


def grade_class(grader: Grader, uploads: ClassUploads, store: Store | None = None,
                workers: int = 1, progress: Progress | None = None, regrade: bool = False,
                most: int | None = None, models: ModelQueue | None = None) -> BatchResult:
    """Grade a class read with ``grader.notebooks.stream.read_class`` (with a store, each
    notebook kept there as it was read). An interrupted batch of exactly these notebooks
    under this rubric version is taken over and continued (not with ``regrade``);
    ``most``: at most this many notebooks a chunk."""
    batch_id = None
    if store is not None and not regrade:
        batch_id = resumable_batch(store, grader, uploads.refs)
        if batch_id is not None:
            store.claim_batch(batch_id)
            log.info("continuing batch %d", batch_id)
    fetch = uploads.read if store is None else stored_bytes(store)
    return grade_refs(grader, uploads.refs, fetch, store, workers, progress, regrade,
                      batch_id=batch_id, most=most, models=models)


def grade_items(grader: Grader, items: Sequence[Item], store: Store, workers: int = 1,
                regrade: bool = False, models: ModelQueue | None = None) -> BatchResult:
    """``items`` graded as a new batch: notebooks the store keeps (``NotebookRef``, fetched a
    chunk at a time), or notebooks in hand (``GradeInput``)."""
    refs = [i for i in items if isinstance(i, NotebookRef)]
    if len(refs) == len(items):
        return grade_refs(grader, refs, stored_bytes(store), store, workers, regrade=regrade,
                          models=models)
    return grade_batch(grader, [i for i in items if isinstance(i, GradeInput)], store, workers,
                       regrade=regrade, models=models)


def batch_class(store: Store, batch_id: int) -> tuple[list[NotebookRef], list[InputProblem]]:
    """A stored batch's whole class, to continue it (``grade_refs(..., batch_id=)``): its
    notebooks graded before the stop are done already; one left whose bytes the store did
    not keep is a problem, and its item is marked so."""
    items = store.batch_items(batch_id)
    sizes = store.file_sizes(i.sha256 for i in items)
    refs, problems = [], []
    for i in items:
        if i.status != "done" and i.sha256 not in sizes:
            problems.append(InputProblem(i.file, "its content was not kept: upload it again"))
            store.mark_item(i.id, "error", error="content not kept; upload again")
            continue
        refs.append(NotebookRef(i.file, i.sha256, sizes.get(i.sha256, 0), i.student_id,
                                i.display_name))
    return refs, problems


def resumable_batch(store: Store, grader: Grader, refs: Sequence[NotebookRef]) -> int | None:
    """The newest interrupted batch of the grader's assignment and rubric version that
    ``refs`` continue, or None: each of its items is one of ``refs`` (name and content),
    and each of ``refs`` that is none of its items has a grade of its content under this
    version (it was no item because it had one when the batch started)."""
    aid, rv = store_ids(store, grader)
    version = grader.assignment.rubric.version
    given = Counter((r.name, r.sha256) for r in refs)
    for b in store.batches(aid):  # newest first; batches whose grader is gone are marked
        if b.status != "interrupted" or b.rubric_version_id != rv:
            continue
        items = Counter((i.file, i.sha256) for i in store.batch_items(b.id))
        if not items - given and all(store.find_grade(aid, sha, version) is not None
                                     for _, sha in given - items):
            return b.id
    return None


def grade_refs(grader: Grader, refs: Sequence[NotebookRef], fetch: Fetch,
               store: Store | None = None, workers: int = 1, progress: Progress | None = None,
               regrade: bool = False, *, batch_id: int | None = None,
               chunk_bytes: int | None = None, most: int | None = None,
               models: ModelQueue | None = None) -> BatchResult:
    """Grade ``refs`` in chunks (see the module). ``batch_id``: a batch of the store to
    continue (claimed by the caller), whose items ``refs`` must all be; ``chunk_bytes``:
    the bytes of notebooks a chunk may hold (default ``chunk_budget`` from the memory
    available now); ``most``: at most this many notebooks a chunk; ``models``: grades
    first, their model parts to this queue (without one, each grade is made whole)."""
    run = ChunkRun(grader, refs, fetch, store, workers, progress, regrade, models)
    if chunk_bytes is None:
        execute = grader.options.execute
        chunk_bytes = chunk_budget(memory_available(), workers,
                                   grader.options.memory_mb if execute else 0)
    plan = chunks([r.size for r in refs], chunk_bytes, max(1, workers), most)
    log.info("%d notebooks in %d chunks of at most %.0f MB", len(refs), len(plan),
             chunk_bytes / 2**20)
    if store is None:
        run.chunks(plan)
    else:
        batch_id = run.start(batch_id)
        with _owned(store, batch_id, run.pending):
            run.chunks(plan)
    return BatchResult([r for r in run.reports if r is not None], batch_id, run.reused,
                       [g for g in run.grade_ids if g is not None], run.batch)


def stored_bytes(store: Store) -> Fetch:
    """Fetch a notebook's bytes from the store (StoreError when they were not kept)."""
    def fetch(ref: NotebookRef) -> bytes:
        data = store.get_file(ref.sha256)
        if data is None:
            raise StoreError(f"{ref.name}: its content was not kept in the store")
        return data

    return fetch


def _refs(items: Sequence[GradeInput]
          ) -> tuple[list[NotebookRef], dict[tuple[str, str], bytes]]:
    refs = [NotebookRef(i.name, i.sha256, len(i.data), i.student_id, i.display_name,
                        notes=i.notes) for i in items]
    return refs, {(r.name, r.sha256): i.data for r, i in zip(refs, items, strict=True)}


@contextmanager
def stop_on_signals(signals: Sequence[signal.Signals] = (signal.SIGTERM, signal.SIGHUP)
                    ) -> Iterator[None]:
    """While the body grades (main thread only): ``signals`` stop this process's runs
    (``grader.sandbox.stopping``) instead of ending the process at once, so the batch
    ends in GradingStopped with its grades saved, and no sandbox, run folder or cgroup
    is left behind; then the handlers before are put back."""
    def stop(signum: int, _frame: object) -> None:
        stop_runs(signal.Signals(signum).name)

    before = {s: signal.signal(s, stop) for s in signals}
    try:
        yield
    except GradingStopped:
        if left := wait_for_runs():
            log.warning("run folders still there after the stop: %s", left)
        raise
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


@contextmanager
def _owned(store: Store, batch_id: int, active: bool = True) -> Iterator[None]:
    """While the body grades the batch: a heartbeat in the store every ``HEARTBEAT_S``, and
    the batch marked interrupted if the body raises (the grades saved stay saved)."""
    if not active:
        yield
        return
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_S):
            try:
                store.beat(batch_id)
            except StoreError as exc:  # the next beat tries again; grading goes on
                log.warning("batch %d: heartbeat not recorded: %s", batch_id, exc)

    thread = threading.Thread(target=beat, name=f"batch-{batch_id}-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    except BaseException as exc:
        try:
            store.interrupt_batch(batch_id, f"{type(exc).__name__}: {exc}")
        except StoreError:  # the error that stopped grading is the one to report
            log.exception("batch %d could not be marked interrupted", batch_id)
        raise
    finally:
        stop.set()
        thread.join()
