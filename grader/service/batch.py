"""Batches: grading many submissions with every report stored as soon as it is made.

With a store, each item of a batch is recorded as pending before any grading
starts; each report is saved in the same transaction that marks its item done.
A batch killed half-way (even with kill -9) resumes with ``resume_batch``;
content already graded with the same rubric version is reused, not regraded.
While a batch is graded its owner (this process) beats a heartbeat in the store;
if grading raises, the batch is marked interrupted at once, so that it is offered
for resuming (grader/store/batch_owner.py says how a batch killed outright is found).
A batch stopped on purpose (SIGTERM: ``grader.sandbox.stopping``) raises GradingStopped
with every report it has (reused or saved); the rest stay pending, to be resumed.
``stop_on_signals`` turns SIGTERM and SIGHUP into such a stop for a command line.
"""

from __future__ import annotations

import dataclasses
import logging
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import GradingStopped, StoreError
from ..pipeline import GradeInput, Grader, Progress
from ..rubrics.schema import dumps
from ..sandbox.stopping import stop_runs, wait_for_runs
from ..store.batch_owner import HEARTBEAT_S
from ..store.database import Store
from ..types import GradeReport

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class BatchResult:
    reports: list[GradeReport]
    batch_id: int | None
    reused: int  # reports taken from the store instead of regrading


def _ids(store: Store, grader: Grader) -> tuple[int, int]:
    a = grader.assignment
    aid = store.upsert_assignment(a.name, a.title, a.language, a.root)
    rv = store.add_rubric_version(aid, a.rubric.version, dumps(a.rubric))
    return aid, rv


def grade_batch(
    grader: Grader,
    items: Sequence[GradeInput],
    store: Store | None = None,
    workers: int = 1,
    progress: Progress | None = None,
    regrade: bool = False,
) -> BatchResult:
    if store is None:
        return BatchResult(grader.grade_many(items, workers, progress), None, 0)
    aid, rv = _ids(store, grader)
    version = grader.assignment.rubric.version
    reports: list[GradeReport | None] = [None] * len(items)
    todo: list[int] = []
    for i, item in enumerate(items):
        row = None if regrade else store.find_grade(aid, item.sha256, version, item.student_id)
        if row is None:
            todo.append(i)
        elif row.student_id == item.student_id:
            reports[i] = store.get_report(row.id)
        else:  # another student handed in the same file: same grade, their own record
            report = dataclasses.replace(store.get_report(row.id, overrides=False),
                                         file=item.name, student_id=item.student_id,
                                         display_name=item.display_name)
            sub_id = store.add_submission(aid, item.sha256, item.name, item.student_id,
                                          item.display_name)
            store.save_file(item.sha256, item.data)
            store.carry_overrides(store.save_grade(sub_id, rv, report))  # no batch item
            reports[i] = report
    reused = len(items) - len(todo)
    if reused:
        log.info("%d submissions already graded with rubric %s: reused", reused, version)
    for item, report in zip(items, reports, strict=True):  # live views count them as done
        if report is not None:
            grader.reused(item, report)
    for i in todo:  # kept first, so that a batch stopped half-way can resume from the store
        store.save_file(items[i].sha256, items[i].data)
    batch_id = store.start_batch(aid, rv, [(items[i].name, items[i].sha256, items[i].student_id,
                                            items[i].display_name) for i in todo])
    pending = {(p.file, p.sha256): p.id for p in store.pending_items(batch_id)}
    done = reused

    def saved(n: int, total: int, report: GradeReport) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, len(items), report)

    try:
        with _owned(store, batch_id, bool(todo)):
            fresh = grader.grade_many([items[i] for i in todo], workers,
                                      _saving(store, aid, rv, items, todo, pending, saved))
    except GradingStopped as stop:  # the batch is interrupted: what was saved, reused too
        raise GradingStopped(stop.why, [r for r in reports if r is not None] + stop.reports
                             ) from None
    for i, report in zip(todo, fresh, strict=True):
        reports[i] = report
    return BatchResult([r for r in reports if r is not None], batch_id, reused)


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


def _saving(
    store: Store,
    aid: int,
    rv: int,
    items: Sequence[GradeInput],
    todo: list[int],
    pending: dict[tuple[str, str], int],
    then: Progress,
) -> Progress:
    by_key = {(items[i].name, items[i].sha256): items[i] for i in todo}

    def save(n: int, total: int, report: GradeReport) -> None:
        item = by_key[(report.file, report.sha256)]  # reports carry their input's hash
        sub_id = store.add_submission(
            aid, item.sha256, item.name, item.student_id, item.display_name
        )
        store.save_grade(sub_id, rv, report, pending.get((item.name, item.sha256)))
        then(n, total, report)

    return save


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
    raises StoreError."""
    aid, rv = _ids(store, grader)
    pending = store.pending_items(batch_id)
    by_key = {(i.name, i.sha256): i for i in inputs}
    missing = [p.file for p in pending if (p.file, p.sha256) not in by_key]
    if missing:
        raise FileNotFoundError(f"batch {batch_id}: cannot resume without {', '.join(missing)}")
    if claim:
        store.claim_batch(batch_id)
    items = [by_key[(p.file, p.sha256)] for p in pending]
    ids = {(p.file, p.sha256): p.id for p in pending}
    todo = list(range(len(items)))
    with _owned(store, batch_id):
        reports = grader.grade_many(
            items, workers, _saving(store, aid, rv, items, todo, ids,
                                    progress or (lambda *_: None))
        )
    return BatchResult(reports, batch_id, 0)


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
