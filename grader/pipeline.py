"""The grading pipeline: one submission through the layers to a GradeReport.

    grader = Grader(load_assignment(Path("examples/retail-sales")))
    report = grader.grade_file(Path("submission.ipynb"))

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
from .sandbox.runs import stopping
from .scoring import build_report, error_report
from .types import Flag, GradeReport, LayerResult

log = logging.getLogger(__name__)

Progress = Callable[[int, int, GradeReport], None]


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
        self._emit(GradeEvent(item.name, "start"))
        report = self._grade(item)
        self._emit(GradeEvent(item.name, "done", report=report))
        return report

    def _run_layer(self, layer: Layer, ctx: SubmissionContext, name: str) -> LayerResult:
        result = run_layer(layer, ctx)
        self._emit_layer(name, result)
        return result

    def _emit_layer(self, name: str, result: LayerResult) -> None:
        ok = [c for c in result.checks if c.status == "ok"]
        text = result.error or (f"{len(ok)} of {len(result.checks)} checks evaluated"
                                if result.checks else "; ".join(result.notes[:1]))
        self._emit(GradeEvent(name, "layer", result.layer, text, result.seconds,
                              bool(result.error)))

    def _grade(self, item: GradeInput) -> GradeReport:
        rubric = self.assignment.rubric
        try:
            loaded = load_checked(item.data, item.name)
        except NotebookError as exc:
            log.info("refused %s: %s", item.name, exc.reason)
            return error_report(
                rubric,
                item.name,
                self.assignment.name,
                str(exc),
                item.sha256,
                item.student_id,
                item.display_name,
            )
        nb, raw = loaded.notebook, loaded.node
        flags = [Flag("upload_note", note) for note in item.notes]
        if (replaced := loaded.flag()) is not None:
            flags.append(replaced)
        if nb.language != rubric.language:
            flags.append(
                Flag(
                    "language_mismatch",
                    f"the notebook looks like {nb.language} but "
                    f"the assignment is {rubric.language}; graded as "
                    f"{rubric.language}",
                )
            )
            nb = dataclasses.replace(nb, language=rubric.language)
        match = match_template(
            self.context.template, nb, self.placeholders, self.context.solution
        )
        fit = template_fit(self.context.template, nb, match)
        unlike = unlike_template_flag(fit, self.assignment.name)
        ctx = SubmissionContext(self.context, nb, raw, match, self.options)
        # Every place a model or an instructor reads: cells (template cells by what the
        # student added), metadata and attachments now, so that the blocks of text aimed
        # at the grader are set aside before any layer reads an answer; stored outputs and
        # our run's once layer 2 ran.
        hits = scan_context_sources(ctx)
        ctx.flagged = injection_blocks(nb, hits)
        layers = {layer.name: self._run_layer(layer, ctx, item.name) for layer in self.layers}
        if unlike is not None:  # likely another assignment's notebook: scoring gates it
            (layers["L1"].flags if "L1" in layers else flags).append(unlike)
        hits += scan_context_outputs(ctx, fresh_outputs(ctx.execution) if ctx.execution
                                     else None)
        flag = injection_flag(hits)
        if flag is not None and "L1" in layers:  # a layer-1 finding: scoring sees it
            layers["L1"].flags.append(flag)
        if self.llm is not None and "L1" in layers and "L2" in layers:
            # Text aimed at the grader is flagged for the instructor and left out of
            # what the models read, block by block.
            excluded = set(ctx.flagged)
            def tokens(layer: str, piece: str) -> None:
                self._emit(GradeEvent(item.name, "tokens", layer, piece))

            llm = self.llm.run(ctx, layers["L1"], layers["L2"], excluded,
                               tokens if self.events is not None else None)
            for result in llm.values():
                self._emit_layer(item.name, result)
            layers.update(llm)
        report = build_report(
            rubric,
            item.name,
            nb.sha256,
            self.assignment.name,
            layers,
            item.student_id,
            item.display_name,
        )
        report.flags[:0] = flags
        log.info(
            "graded %s: %s/%s, %d flags, review: %s",
            item.name,
            report.score,
            report.max_score,
            len(report.flags),
            report.needs_review or "none",
        )
        return report

    def grade_file(self, path: Path) -> GradeReport:
        return self.grade(GradeInput.from_path(path))

    def grade_many(
        self, items: Sequence[GradeInput], workers: int = 1, progress: Progress | None = None
    ) -> list[GradeReport]:
        """Grade in ``workers`` threads; reports in input order; progress after each.
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
            report = self.grade(items[i])
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
