"""The model queue: model parts of grades, made after the grades (issue 33: grades first).

A batch grades each notebook deterministically and stores that grade at once
(``grader.pipeline.Grader.grade_first``); its model layers (L3, L4) are queued here and
run in worker threads of their own (``ModelQueue.add``), which yield to deterministic
grading: a worker starts no model part while a notebook of this process is being graded
(``deterministic``), so the grades come first however busy the models are. When a part
ends (``Grader.add_models``), the grade is completed: in place when the points did not
move, as a new revision with the reason when a route trusted to judge moved them
(``grader.store.model_parts``), or, without a store, handed to ``on_done``.

With a store the queue is in the store too, so that nothing is lost when the process
ends: ``resume`` takes up the parts a closed app or a killed command line left (a
``GraderFor`` rebuilds the grader of each grade's assignment and rubric version).
``progress`` counts a batch's parts and estimates the time left from the parts that
ended in this process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from ..errors import GraderError, StoreError
from ..pipeline import GradeInput, Grader
from ..points import as_points
from ..store.batch_owner import current_owner
from ..store.database import GradeRow, Store
from ..types import GradeReport

__all__ = ["GraderFor", "ModelProgressView", "ModelQueue", "ModelWork", "deterministic",
           "moved_reason"]

log = logging.getLogger(__name__)

IDLE_WAIT_S = 0.5  # how often a waiting worker looks again
MADE_KEPT = 256  # model parts kept to give copies of the same notebook (newest kept)
# (grade row) -> the grader its model part runs with, or None when it cannot be made
GraderFor = Callable[[GradeRow], Grader | None]

_busy = 0  # notebooks of this process being graded deterministically now
_busy_lock = threading.Condition()


@contextlib.contextmanager
def deterministic() -> Iterator[None]:
    """Deterministic grading in progress: model parts wait until it ends."""
    global _busy
    with _busy_lock:
        _busy += 1
    try:
        yield
    finally:
        with _busy_lock:
            _busy -= 1
            _busy_lock.notify_all()


def _wait_until_idle(stop: threading.Event) -> None:
    with _busy_lock:
        while _busy > 0 and not stop.is_set():
            _busy_lock.wait(IDLE_WAIT_S)


def moved_reason(first: GradeReport, full: GradeReport) -> str:
    """Why ``full``'s points differ from ``first``'s (a route trusted to judge moved
    them), or "" when they do not."""
    before = {c.id: c.points for c in first.criteria}
    moved = [c for c in full.criteria if not math.isclose(before.get(c.id, c.points),
                                                          c.points, abs_tol=1e-9)]
    same_total = (first.score is None) == (full.score is None) and (
        first.score is None or math.isclose(first.score, full.score or 0.0, abs_tol=1e-9))
    if not moved and same_total:
        return ""
    said = ", ".join(f"{c.title}: {as_points(before.get(c.id, 0.0))} to {as_points(c.points)}"
                     for c in moved[:6])
    return f"a model trusted to judge moved the points ({said})"


@dataclass(slots=True)
class ModelWork:
    """One grade's model part: the grader, the notebook (fetched when the part runs) and
    the grade (``first``: in hand without a store; read from the store by ``grade_id``)."""

    grader: Grader
    fetch: Callable[[], GradeInput]
    grade_id: int | None = None
    first: GradeReport | None = None
    key: object = None  # the caller's name for it (a position, a grade id)
    batch: object = None  # which batch's progress it counts in
    content: str = ""  # the notebook's hash: a part of the same content is made once
    seconds: float = 0.0  # how long it took, once ended
    outcome: str = ""  # "done", "moved", "dropped", "failed: ..." once ended
    asked: bool = False  # a model was asked something (else it ended at once)


@dataclass(frozen=True, slots=True)
class ModelProgressView:
    """A batch's model parts in this process: how many, ended, and the time left."""

    total: int
    ended: int
    failed: int
    moved: tuple[object, ...]  # keys of the grades whose points moved
    running: int
    left_s: float | None  # None: no part has ended yet, nothing to measure from

    def words(self) -> str:
        """'model notes 2 of 6 (about 4 min left)'."""
        if not self.total:
            return ""
        text = f"model notes {self.ended} of {self.total}"
        if self.failed:
            text += f" ({self.failed} could not be made)"
        if self.ended < self.total:
            text += (f" (about {_duration(self.left_s)} left)" if self.left_s is not None
                     else " (no estimate before the first ends)")
        return text


def _duration(seconds: float) -> str:
    s = max(1, round(seconds))
    if s < 60:
        return f"{s} s"
    m = round(s / 60)
    return f"{m} min" if m < 60 else f"{m // 60} h {m % 60} min"


@dataclass
class _Counts:
    total: int = 0
    ended: int = 0
    failed: int = 0
    running: int = 0
    moved: list[object] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


class ModelQueue:
    """Model parts waiting for their turn, run by ``workers`` threads (see the module)."""

    def __init__(self, store: Store | None = None, workers: int = 2,
                 on_done: Callable[[ModelWork, GradeReport], None] | None = None) -> None:
        # workers 0: the parts are only recorded (in the store), for another process to run
        self.store, self.workers, self.on_done = store, max(0, workers), on_done
        self._work: deque[ModelWork] = deque()
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._counts: dict[object, _Counts] = {}
        self._owner = current_owner()
        self._made: dict[tuple[int, str], GradeReport] = {}  # (grader, content) -> made

    # -- adding work ----------------------------------------------------------------------
    def add(self, work: ModelWork, options: dict[str, object] | None = None) -> None:
        """Queue ``work`` (with a store and a grade id, recorded there first)."""
        if self.store is not None and work.grade_id is not None:
            self.store.queue_model_parts([work.grade_id], work.batch if isinstance(
                work.batch, int) else None, options)
        with self._lock:
            self._work.append(work)
            self._counts.setdefault(work.batch, _Counts()).total += 1
            self._lock.notify()
        self._start()

    def resume(self, grader_for: GraderFor) -> int:
        """Take up the store's queued parts (and those a gone process had taken); returns
        how many. A part whose grade's grader cannot be made now is left queued."""
        if self.store is None:
            return 0
        self.store.requeue_model_parts()
        mine = {w.grade_id for w in self._work}
        taken = 0
        for part in self.store.model_parts("queued"):
            if part.grade_id in mine:
                continue
            try:
                row = self.store.get_grade(part.grade_id)
                grader = grader_for(row)
            except (GraderError, OSError) as exc:
                log.warning("model part of grade %d not resumed: %s", part.grade_id, exc)
                continue
            if grader is None:
                continue
            fetch = _stored_input(self.store, row)
            work = ModelWork(grader, fetch, part.grade_id, key=part.grade_id,
                             batch=part.batch_id)
            with self._lock:
                self._work.append(work)
                self._counts.setdefault(work.batch, _Counts()).total += 1
                self._lock.notify()
            taken += 1
        if taken:
            log.info("resumed %d model parts from the store", taken)
            self._start()
        return taken

    # -- progress -------------------------------------------------------------------------
    def progress(self, batch: object) -> ModelProgressView:
        with self._lock:
            c = self._counts.get(batch, _Counts())
            per = sorted(c.seconds)[len(c.seconds) // 2] if c.seconds else None
            left = c.total - c.ended - c.failed
            left_s = None if per is None else per * math.ceil(left / max(1, self.workers))
            return ModelProgressView(c.total, c.ended, c.failed, tuple(c.moved), c.running,
                                     left_s)

    def wait(self, batch: object = None, timeout: float | None = None,
             tick: Callable[[ModelProgressView], None] | None = None) -> bool:
        """Wait until every part of ``batch`` (of all, when None) ended; False on timeout.
        ``tick`` sees the progress each time a part ends."""
        deadline = None if timeout is None else time.monotonic() + timeout
        seen = -1
        while True:
            with self._lock:
                counts = [c for b, c in self._counts.items() if batch is None or b == batch]
                ended = sum(c.ended + c.failed for c in counts)
                done = all(c.ended + c.failed >= c.total for c in counts)
                if not done:
                    self._lock.wait(0.25)
            if tick is not None and ended != seen and batch is not None:
                tick(self.progress(batch))
            seen = ended
            if done:
                return True
            if deadline is not None and time.monotonic() > deadline:
                return False

    def stop(self, timeout: float = 5.0) -> None:
        """Stop taking parts (the one running ends or is abandoned with the process;
        with a store, what is left stays queued there)."""
        self._stop.set()
        with self._lock:
            self._lock.notify_all()
        for t in self._threads:
            t.join(timeout)

    # -- the workers ----------------------------------------------------------------------
    def _start(self) -> None:
        if not self.workers:
            return
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]
            for i in range(self.workers - len(self._threads)):
                t = threading.Thread(target=self._loop, name=f"model-part-{i}", daemon=True)
                self._threads.append(t)
                t.start()

    def _next(self) -> ModelWork | None:
        with self._lock:
            while not self._work and not self._stop.is_set():
                self._lock.wait(IDLE_WAIT_S)
                if not self._work:
                    return None  # idle: the thread ends, started again by the next add
            return self._work.popleft() if self._work else None

    def _loop(self) -> None:
        while not self._stop.is_set():
            _wait_until_idle(self._stop)
            work = self._next()
            if work is None or self._stop.is_set():
                if work is not None:  # stopping: it stays queued in the store
                    with self._lock:
                        self._work.appendleft(work)
                return
            self._one(work)

    def _one(self, work: ModelWork) -> None:
        counts = self._counts.setdefault(work.batch, _Counts())
        with self._lock:
            counts.running += 1
        t0 = time.perf_counter()
        try:
            work.outcome = self._run(work)
        except Exception as exc:  # a part that breaks is said and counted; the queue goes on
            log.exception("the model part of %s could not be made", work.key)
            work.outcome = f"failed: {exc}"
            if self.store is not None and work.grade_id is not None:
                with contextlib.suppress(StoreError):
                    self.store.fail_model_part(work.grade_id, f"{type(exc).__name__}: {exc}")
        work.seconds = time.perf_counter() - t0
        with self._lock:
            counts.running -= 1
            if work.outcome.startswith("failed"):
                counts.failed += 1
            else:
                counts.ended += 1
                if work.asked:  # one with nothing to send tells nothing of the others
                    counts.seconds.append(work.seconds)
            if work.outcome == "moved":
                counts.moved.append(work.key)
            self._lock.notify_all()

    def _made_before(self, work: ModelWork, first: GradeReport) -> GradeReport | None:
        """The model part made here for the same content (another student's copy of the
        notebook), as this grade's own: its file, student and upload notes."""
        with self._lock:
            made = self._made.get((id(work.grader), work.content)) if work.content else None
        if made is None:
            return None
        notes = [f for f in first.flags if f.code == "upload_note"]
        return dataclasses.replace(made, file=first.file, student_id=first.student_id,
                                   display_name=first.display_name, flags=notes + [
                                       f for f in made.flags if f.code != "upload_note"])

    def _run(self, work: ModelWork) -> str:
        store = self.store if work.grade_id is not None else None
        if store is not None:
            part = store.claim_model_part(self._owner, [work.grade_id])  # type: ignore[list-item]
            if part is None:  # taken by another process, or no longer queued
                return "dropped"
            first, text = store.stored_report(work.grade_id)  # type: ignore[arg-type]
        else:
            assert work.first is not None
            first, text = work.first, ""
        if not work.grader.models_pending(first):
            if store is not None:
                store.finish_model_part(work.grade_id, text, first)  # type: ignore[arg-type]
            return "done"
        full = self._made_before(work, first) or work.grader.add_models(work.fetch(), first)
        if work.content:
            with self._lock:
                self._made[(id(work.grader), work.content)] = full
                while len(self._made) > MADE_KEPT:
                    self._made.pop(next(iter(self._made)))
        work.asked = any(not full.layers[n].details.get("not_run") for n in ("L3", "L4")
                         if n in full.layers)
        reason = moved_reason(first, full)
        if store is not None:
            outcome = store.finish_model_part(work.grade_id, text, full,  # type: ignore[arg-type]
                                              reason)
        else:
            outcome = "moved" if reason else "done"
        if self.on_done is not None:
            self.on_done(work, full)
        return outcome


def _stored_input(store: Store, row: GradeRow) -> Callable[[], GradeInput]:
    def fetch() -> GradeInput:
        data = store.get_file(row.sha256)
        if data is None:
            raise StoreError(f"{row.file}: its content was not kept in the store")
        return GradeInput(row.file, data, row.student_id, row.display_name)
    return fetch


def parts_left(queue: ModelQueue | None, batches: Sequence[object]) -> int:
    """How many model parts of ``batches`` have not ended."""
    if queue is None:
        return 0
    return sum(max(0, p.total - p.ended - p.failed) for p in map(queue.progress, batches))
