"""One batch graded in chunks: a class of thousands with one identity, never all in memory.

A ``ChunkRun`` (driven by ``grader.service.batch.grade_refs``) grades notebooks known by
name and content hash (``NotebookRef``), their bytes fetched only when their chunk comes
(``fetch``: from the store, or read again from the upload). With a store, the batch is
recorded first with every notebook pending (or an interrupted one is continued), so that
its progress, resume and exports cover the whole class; each chunk
(``grader.service.sizing.chunks``) is then fetched, graded with ``workers`` threads, each
report saved as it is made (in the transaction that marks its item done), and let go
before the next chunk is fetched. Once the process stops its runs (SIGTERM), no chunk
starts: GradingStopped, with every report the batch has.

Nothing is graded twice: a notebook whose content has a grade under this rubric version
(from an earlier batch, unless ``regrade``; or from an earlier notebook of this batch)
takes that grade, as its own record (its own student, file and upload notes) when it is
another student's; a notebook whose item of a continued batch is done keeps its grade.
Such notebooks count as done from the start of their chunk, and the live views hear of
them as reused (``Grader.reused``). ``progress(done, total, report)`` counts the whole
batch ("812 of 2,087"), reused notebooks included.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import GradingStopped, StoreError
from ..notebooks.stream import NotebookRef
from ..pipeline import GradeInput, Grader, Progress
from ..rubrics.schema import dumps
from ..sandbox.stopping import stopping
from ..store.database import GradeRow, Store
from ..types import Flag, GradeReport
from .model_queue import ModelQueue, ModelWork, deterministic

__all__ = ["BatchResult", "ChunkRun", "Fetch", "store_ids"]

log = logging.getLogger(__name__)

Fetch = Callable[[NotebookRef], bytes]


@dataclass(frozen=True, slots=True)
class BatchResult:
    reports: list[GradeReport]  # one per notebook, in the order given
    batch_id: int | None
    reused: int  # reports taken from the store (or an earlier notebook) instead of grading
    grade_ids: list[int] = field(default_factory=list)  # with a store: each report's grade
    batch: object = None  # the batch as the model queue counts it (its id with a store)


def store_ids(store: Store, grader: Grader) -> tuple[int, int]:
    """The store's ids of the grader's assignment and of its rubric version."""
    a = grader.assignment
    aid = store.upsert_assignment(a.name, a.title, a.language, a.root)
    rv = store.add_rubric_version(aid, a.rubric.version, dumps(a.rubric))
    return aid, rv


class ChunkRun:
    """The state of one batch being graded: reports and grades so far, by position."""

    def __init__(self, grader: Grader, refs: Sequence[NotebookRef], fetch: Fetch,
                 store: Store | None, workers: int, progress: Progress | None,
                 regrade: bool, models: ModelQueue | None = None) -> None:
        self.grader, self.refs, self.fetch, self.store = grader, refs, fetch, store
        self.workers, self.progress, self.regrade = workers, progress, regrade
        self.models = models  # grades first: the model parts go there, after the grades
        self.batch: object = object()  # the batch, as the model queue counts it
        self.reports: list[GradeReport | None] = [None] * len(refs)
        self.grade_ids: list[int | None] = [None] * len(refs)
        self.done = self.reused = 0
        self.made: dict[str, int] = {}  # content graded in this batch -> its first position
        # by position: (its batch item, the item's grade when done); (None, None): no item
        self.items: list[tuple[int | None, int | None]] = [(None, None)] * len(refs)
        self.before: dict[int, GradeRow] = {}  # by position: a grade found at the start
        self.aid = self.rv = 0
        self.pending = bool(refs)

    def start(self, batch_id: int | None) -> int:
        """Record the batch (or read the one continued): an item per notebook to grade,
        pending; a notebook whose content was graded before under this rubric version is
        no item (it takes that grade in its chunk, and a rate of the batch never counts
        it). In a batch continued, a notebook without an item is such a notebook; its
        items not among ``refs`` are left as they are."""
        assert self.store is not None
        self.aid, self.rv = store_ids(self.store, self.grader)
        if batch_id is None:
            if not self.regrade:
                version = self.grader.assignment.rubric.version
                for i, r in enumerate(self.refs):
                    if row := self.store.find_grade(self.aid, r.sha256, version, r.student_id):
                        self.before[i] = row
            if self.before:
                log.info("%d notebooks already graded with rubric %s: reused",
                         len(self.before), self.grader.assignment.rubric.version)
            batch_id = self.store.start_batch(self.aid, self.rv, [
                (r.name, r.sha256, r.student_id, r.display_name)
                for i, r in enumerate(self.refs) if i not in self.before])
        rows = self.store.batch_items(batch_id)
        queues: dict[tuple[str, str], list[tuple[int, int | None]]] = defaultdict(list)
        for row in rows:  # two notebooks of one name and content are two items
            queues[(row.file, row.sha256)].append(
                (row.id, row.grade_id if row.status == "done" else None))
        self.items = [queues[(r.name, r.sha256)].pop(0) if queues.get((r.name, r.sha256))
                      else (None, None) for r in self.refs]
        self.pending = any(i.status != "done" for i in rows)
        self.batch = batch_id
        return batch_id

    def chunks(self, plan: Sequence[range]) -> None:
        for positions in plan:
            if why := stopping():  # the process stops its runs: no chunk starts
                raise GradingStopped(why, [r for r in self.reports if r is not None])
            self.chunk(positions)

    def chunk(self, positions: range) -> None:
        """Take the grades there are, fetch and grade the rest (one notebook per content),
        then give the notebooks of the same content as one graded here its grade."""
        todo: list[int] = []
        later: list[int] = []
        first: set[str] = set()
        for i in positions:
            if self.take(i):
                continue
            sha256 = self.refs[i].sha256
            (later if sha256 in first else todo).append(i)
            first.add(sha256)
        if todo:
            self.grade(todo)
        for i in later:
            if not self.take(i):  # its twin's grade is in hand or stored: never missing
                raise StoreError(f"{self.refs[i].name}: the grade of its content is missing")

    def grade(self, todo: list[int]) -> None:
        inputs = [self.input(i) for i in todo]
        at = {(inputs[k].name, self.refs[i].sha256): i for k, i in enumerate(todo)}

        def saved(_n: int, _total: int, report: GradeReport) -> None:
            i = at[(report.file, report.sha256)]  # reports carry their input's hash
            grade_id = None
            if self.store is not None:
                grade_id = self.save(self.refs[i], report, self.items[i][0])
            self.made.setdefault(self.refs[i].sha256, i)
            self.finish(i, report, grade_id, reused=False)

        try:
            with deterministic():  # the model parts wait while grades are made
                self.grader.grade_many(inputs, self.workers, saved, models=self.models is None)
        except GradingStopped as stop:  # the batch is interrupted: every report it has
            raise GradingStopped(stop.why, [r for r in self.reports if r is not None]
                                 ) from None

    def input(self, i: int) -> GradeInput:
        ref = self.refs[i]
        return GradeInput(ref.name, self.fetch(ref), ref.student_id, ref.display_name,
                          ref.notes)

    def take(self, i: int) -> bool:
        """Give notebook ``i`` a grade it already has, or that its content has; False when
        it is to be graded."""
        ref = self.refs[i]
        first = self.made.get(ref.sha256)  # its content, graded in this batch
        if self.store is None:
            if first is None:
                return False
            return self.copy(i, None, self.graded(first))
        item, grade_id = self.items[i]
        if grade_id is not None:  # done in the batch continued
            self.finish(i, self.store.get_report(grade_id), grade_id, reused=True)
            return True
        row = self.before.pop(i, None)  # graded before the batch
        if row is None and first is not None and self.refs[first].student_id != ref.student_id:
            return self.copy(i, item, self.graded(first))  # in hand: not read back
        if row is None and (first is not None or not self.regrade):
            version = self.grader.assignment.rubric.version
            row = self.store.find_grade(self.aid, ref.sha256, version, ref.student_id)
        if row is None:
            return False
        if row.student_id != ref.student_id:
            return self.copy(i, item, self.store.get_report(row.id, overrides=False))
        if item is not None:
            self.store.mark_item(item, "done", row.id)
        self.finish(i, self.store.get_report(row.id), row.id, reused=True)
        return True

    def graded(self, i: int) -> GradeReport:
        report = self.reports[i]
        assert report is not None  # ``made`` holds positions graded
        return report

    def copy(self, i: int, item: int | None, report: GradeReport) -> bool:
        """Notebook ``i`` takes ``report`` (another student's, of the same content) as a
        grade of its own; with a store, saved with its batch item ``item`` marked done."""
        ref = self.refs[i]
        report = _as_theirs(report, ref)
        grade_id = None
        if self.store is not None:
            grade_id = self.save(ref, report, item)
        self.finish(i, report, grade_id, reused=True)
        return True

    def save(self, ref: NotebookRef, report: GradeReport, item: int | None) -> int:
        """Store ``ref``'s grade, its batch item marked done with it; without an item, the
        overrides of the grade it replaces are carried over here (with one, by the mark)."""
        assert self.store is not None
        sub = self.store.add_submission(self.aid, ref.sha256, ref.name, ref.student_id,
                                        ref.display_name)
        grade_id = self.store.save_grade(sub, self.rv, report, item)
        if item is None:
            self.store.carry_overrides(grade_id)
        return grade_id

    def queue_models(self, i: int, report: GradeReport, grade_id: int | None) -> None:
        """Grades first: notebook ``i``'s model part to the model queue, when it waits for
        one (its notebook is fetched again when the part runs)."""
        if self.models is None or not self.grader.models_pending(report):
            return
        ref = self.refs[i]
        self.models.add(ModelWork(
            self.grader, lambda: GradeInput(ref.name, self.fetch(ref), ref.student_id,
                                            ref.display_name, ref.notes),
            grade_id, None if grade_id is not None else report, key=i, batch=self.batch,
            content=ref.sha256), {"samples": self.grader.options.llm_samples})

    def finish(self, i: int, report: GradeReport, grade_id: int | None, reused: bool) -> None:
        if not reused or self.made.get(self.refs[i].sha256) is not None:
            self.queue_models(i, report, grade_id)  # made here, or a copy of one made here
        self.reports[i], self.grade_ids[i] = report, grade_id
        self.done += 1
        if reused:
            self.reused += 1
            self.grader.reused(GradeInput(self.refs[i].name, b""), report)
        if self.progress is not None:
            self.progress(self.done, len(self.refs), report)


def _as_theirs(report: GradeReport, ref: NotebookRef) -> GradeReport:
    """Another notebook's grade for ``ref`` (the same content): its file, student and upload
    notes in place of the other's."""
    flags = [Flag("upload_note", note) for note in ref.notes]
    flags += [f for f in report.flags if f.code != "upload_note"]
    return dataclasses.replace(report, file=ref.name, student_id=ref.student_id,
                               display_name=ref.display_name, flags=flags)
