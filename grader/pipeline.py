"""The grading pipeline: one submission through the layers to a GradeReport.

    grader = Grader(load_assignment(Path("examples/retail-sales")))
    report = grader.grade_file(Path("submission.ipynb"))

Grades first, models after: ``grade_first`` makes the deterministic grade (layers 1 and 2,
the points, the letter's evidence) and, when the grader has models, marks layers 3 and 4
*queued* in it (``details["pending"]``); ``add_models`` then runs the model layers for
that grade, from the notebook's bytes and the grade's own layer 1 and 2 results (so a
queue can run it later, after a restart), and returns the grade with its model parts.
``grade`` does both at once. A model layer that does not run says why in the grade
(``details["not_run"]``: the models were off, no engine was set up). Scoring never lets a
queued or unrun layer count as a model's reading.

Bad input (not a notebook, too large, ...) becomes a report with status
"error" naming the file and the reason; it never stops a batch. A layer that
crashes becomes a layer result with the error attached (see layers.base), and
its criteria go to review. With a store, each report is saved as soon as it is
made, and an interrupted batch resumes where it stopped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference import DisaggregatedClient

from .analysis.template import match_template
from .assignment import Assignment
from .errors import GradingStopped, NotebookError, RubricError
from .events import EventSink, GradeEvent
from .integrity.injection import injection_flag
from .integrity.injection_blocks import injection_blocks
from .integrity.injection_places import (
    fresh_outputs,
    scan_context_outputs,
    scan_context_sources,
)
from .integrity.template_fit import template_fit, unlike_template_flag
from .layers.base import (
    AssignmentContext,
    GradeOptions,
    Layer,
    SubmissionContext,
    run_layer,
)
from .layers.llm import LLMLayers
from .layers.outputs import OutputLayer
from .layers.structure import StructureLayer
from .notebooks.archive import SubmissionFile
from .notebooks.load import load_checked, load_notebook, load_notebook_node
from .safe_text import shown_name
from .sandbox.run_folders import stopping
from .scoring import build_report, error_report
from .types import Flag, GradeReport, LayerResult

log = logging.getLogger(__name__)

Progress = Callable[[int, int, GradeReport], None]
MODEL_LAYERS = ("L3", "L4")


@dataclass(frozen=True, slots=True)
class GradeInput:
    name: str
    data: bytes
    student_id: str = ""
    display_name: str = ""
    notes: tuple[str, ...] = ()  # what reading the upload noticed (a duplicate name, ...)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @classmethod
    def from_path(cls, path: Path) -> GradeInput:
        name = shown_name(path.name)
        return cls(name, path.read_bytes(), Path(name).stem, Path(name).stem)

    @classmethod
    def from_submission(cls, sub: SubmissionFile) -> GradeInput:
        return cls(sub.name, sub.data, sub.student_id, sub.display_name, sub.notes)


@dataclass(frozen=True, slots=True)
class _Read:
    """A notebook read for grading (``Grader._context``)."""

    ctx: SubmissionContext
    flags: list[Flag]  # raised by reading it (upload notes, replaced text, language)
    unlike: Flag | None  # little in common with the template
    hits: list[Any]  # text aimed at the grader in its sources


def default_layers() -> list[Layer]:
    return [StructureLayer(), OutputLayer()]


class Grader:
    def __init__(
        self,
        assignment: Assignment,
        options: GradeOptions | None = None,
        layers: Sequence[Layer] | None = None,
        client: DisaggregatedClient | None = None,
        events: EventSink | None = None,
    ) -> None:
        """``client``: the inference client for layers 3 and 4 (none: deterministic only);
        ``events``: a thread-safe sink for live progress (see grader.events)."""
        self.assignment = assignment
        self.events = events
        self.options = options or GradeOptions()
        self.layers = list(layers) if layers is not None else default_layers()
        self.llm = LLMLayers(client) if client is not None and self.options.use_llm else None
        self.context = self._prepare()

    def _prepare(self) -> AssignmentContext:
        a = self.assignment
        try:
            template = load_notebook(a.template)
            solution = load_notebook(a.solution)
            solution_raw = load_notebook_node(a.solution)
        except NotebookError as exc:
            raise RubricError(str(a.root), [f"assignment notebook unusable: {exc}"]) from exc
        return AssignmentContext(a, template, solution, solution_raw)

    @property
    def placeholders(self) -> tuple[str, ...]:
        return self.assignment.rubric.all_placeholders

    def _emit(self, ev: GradeEvent) -> None:
        if self.events is not None:
            try:
                self.events(ev)
            except Exception:  # a broken progress view must not cost a grade
                log.exception("progress sink failed on %s", ev.kind)

    def reused(self, item: GradeInput, report: GradeReport) -> None:
        """Tell the live views that ``item``'s stored grade is reused, not graded again."""
        self._emit(GradeEvent(item.name, "reused", report=report))

    def grade(self, item: GradeInput) -> GradeReport:
        """The complete grade: deterministic, then the model layers (when it has them)."""
        first = self.grade_first(item)
        return self.add_models(item, first) if self.models_pending(first) else first

    def grade_first(self, item: GradeInput) -> GradeReport:
        """The deterministic grade; the model layers queued in it when the grader has them."""
        self._emit(GradeEvent(item.name, "start"))
        report = self._grade(item)
        self._emit(GradeEvent(item.name, "done", report=report))
        return report

    def models_pending(self, report: GradeReport) -> bool:
        """Whether ``report`` waits for its model parts (``add_models``)."""
        return self.llm is not None and report.status == "graded" and any(
            lr.details.get("pending") for name, lr in report.layers.items()
            if name in MODEL_LAYERS)

    def add_models(self, item: GradeInput, first: GradeReport) -> GradeReport:
        """``first`` (``grade_first``'s grade of ``item``) with its model parts: layers 3
        and 4 run on the notebook and on ``first``'s own layer 1 and 2 results, and the
        points are reconciled again (they move only where a route is trusted to judge).
        Never raises for the models: a failed layer is in the grade, with its error."""
        if self.llm is None or "L1" not in first.layers or "L2" not in first.layers:
            return first
        self._emit(GradeEvent(item.name, "models"))
        made = self._context(item)
        if isinstance(made, GradeReport):  # read once, so read again: cannot happen
            return first
        ctx, flags = made.ctx, made.flags
        l1, l2 = first.layers["L1"], first.layers["L2"]

        def tokens(layer: str, piece: str) -> None:
            self._emit(GradeEvent(item.name, "tokens", layer, piece))

        llm = self.llm.run(ctx, l1, l2, set(ctx.flagged),
                           tokens if self.events is not None else None,
                           lambda layer: self._emit(GradeEvent(item.name, "sent", layer)))
        for name in MODEL_LAYERS:  # a layer with nothing to read: said, not left out
            llm.setdefault(name, LayerResult(name, details={"not_run": "nothing_to_send"}))
        for result in llm.values():
            self._emit_layer(item.name, result)
        layers = {k: v for k, v in first.layers.items() if k not in MODEL_LAYERS} | llm
        report = self._report(item, ctx, layers, flags)
        report.created_at = first.created_at or report.created_at
        self._emit(GradeEvent(item.name, "models_done", report=report))
        return report

    def _run_layer(self, layer: Layer, ctx: SubmissionContext, name: str) -> LayerResult:
        result = run_layer(layer, ctx)
        self._emit_layer(name, result)
        return result

    def _emit_layer(self, name: str, result: LayerResult) -> None:
        ok = [c for c in result.checks if c.status == "ok"]
        text = result.error or (f"{len(ok)} of {len(result.checks)} checks evaluated"
                                if result.checks else "; ".join(result.notes[:1]))
        if why := result.details.get("not_run"):
            text = f"not run: {why}"  # the code, said in words by the views
        self._emit(GradeEvent(name, "layer", result.layer, text, result.seconds,
                              bool(result.error)))

    def _context(self, item: GradeInput) -> _Read | GradeReport:
        """The notebook read, matched to the template and scanned for text aimed at the
        grader (set aside before any layer reads an answer), with the flags reading it
        raised; or the error report of a file that is no notebook."""
        rubric = self.assignment.rubric
        try:
            loaded = load_checked(item.data, item.name)
        except NotebookError as exc:
            log.info("refused %s: %s", item.name, exc.reason)
            return error_report(rubric, item.name, self.assignment.name, str(exc),
                                item.sha256, item.student_id, item.display_name)
        nb, raw = loaded.notebook, loaded.node
        flags = [Flag("upload_note", note) for note in item.notes]
        if (replaced := loaded.flag()) is not None:
            flags.append(replaced)
        if nb.language != rubric.language:
            flags.append(Flag("language_mismatch", f"the notebook looks like {nb.language} "
                              f"but the assignment is {rubric.language}; graded as "
                              f"{rubric.language}"))
            nb = dataclasses.replace(nb, language=rubric.language)
        match = match_template(self.context.template, nb, self.placeholders,
                               self.context.solution)
        unlike = unlike_template_flag(template_fit(self.context.template, nb, match),
                                      self.assignment.name)
        ctx = SubmissionContext(self.context, nb, raw, match, self.options)
        # Every place a model or an instructor reads: cells (template cells by what the
        # student added), metadata and attachments now; stored outputs and our run's once
        # layer 2 ran.
        hits = scan_context_sources(ctx)
        ctx.flagged = injection_blocks(nb, hits)
        return _Read(ctx, flags, unlike, hits)

    def _grade(self, item: GradeInput) -> GradeReport:
        made = self._context(item)
        if isinstance(made, GradeReport):
            return made
        ctx, flags, unlike = made.ctx, made.flags, made.unlike
        layers = {layer.name: self._run_layer(layer, ctx, item.name) for layer in self.layers}
        if unlike is not None:  # likely another assignment's notebook: scoring gates it
            (layers["L1"].flags if "L1" in layers else flags).append(unlike)
        hits = made.hits + scan_context_outputs(ctx, fresh_outputs(ctx.execution)
                                                if ctx.execution else None)
        flag = injection_flag(hits)
        if flag is not None and "L1" in layers:  # a layer-1 finding: scoring sees it
            layers["L1"].flags.append(flag)
        for name in MODEL_LAYERS:  # what the model layers will do, or why they will not
            layers[name] = LayerResult(name, details=self._model_plan())
        return self._report(item, ctx, layers, flags)

    def _model_plan(self) -> dict[str, object]:
        if self.llm is not None:
            return {"pending": True}
        return {"not_run": "models_off" if not self.options.use_llm else "no_client"}

    def _report(self, item: GradeInput, ctx: SubmissionContext,
                layers: dict[str, LayerResult], flags: list[Flag]) -> GradeReport:
        report = build_report(self.assignment.rubric, item.name, ctx.submission.sha256,
                              self.assignment.name, layers, item.student_id,
                              item.display_name)
        report.flags[:0] = flags
        log.info("graded %s: %s/%s, %d flags, review: %s", item.name, report.score,
                 report.max_score, len(report.flags), report.needs_review or "none")
        return report

    def grade_file(self, path: Path) -> GradeReport:
        return self.grade(GradeInput.from_path(path))

    def grade_many(
        self, items: Sequence[GradeInput], workers: int = 1, progress: Progress | None = None,
        models: bool = True,
    ) -> list[GradeReport]:
        """Grade in ``workers`` threads; reports in input order; progress after each.
        ``models`` false: the deterministic grades only (``grade_first``), their model
        layers queued in them for ``add_models`` (a model queue runs them after).
        Once the process stops its runs (SIGTERM, ``grader.sandbox.stopping``), no notebook
        starts and a report made during the stop is dropped (its run may have been
        killed): GradingStopped, holding the reports made before."""
        done = 0
        lock = threading.Lock()
        results: list[GradeReport | None] = [None] * len(items)

        def one(i: int) -> None:
            nonlocal done
            if stopping():
                return
            report = self.grade(items[i]) if models else self.grade_first(items[i])
            with lock:
                if stopping():
                    return
                results[i] = report
                done += 1
                if progress is not None:
                    progress(done, len(items), report)

        if workers <= 1:
            for i in range(len(items)):
                one(i)
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="grade") as pool:
                list(pool.map(one, range(len(items))))
        if why := stopping():
            raise GradingStopped(why, [r for r in results if r is not None])
        return [r for r in results if r is not None]
