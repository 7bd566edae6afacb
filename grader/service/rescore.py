"""What an edited rubric would do to the grades already given: a preview, before saving.

``preview_rescore`` takes the submissions graded under the rubric in force and
scores them again under the edited one, without storing anything:

- A check the rubric in force had too (same criterion, type and target, same
  fields but its weight) keeps its stored result: changing points or weights,
  removing or reordering criteria only rebuilds the report from the stored layer
  results (``scoring.build_report``), exactly as grading would.
- A check with no stored result (new, moved to another criterion, or with other
  fields) is evaluated again on the stored notebook (``Store.get_file``) by the
  deterministic layers: layer 1 (static, cheap) always, and layer 2 (execution,
  about a second a notebook) only when an ``output`` or ``runs`` check is among
  them, run as the original was (executed again only if it was executed then).
  Other placeholders change what counts as the student's text, so they re-run both.
  The model layers (L3/L4) never run: their stored notes are kept.
- The new score is the rubric's own (``new_score``) and, beside it, the score with the
  instructor's overrides carried over as a regrade carries them (grader/store/carry.py:
  same criterion id, capped at its new points): ``carried_score``. Overrides whose
  criterion the edit removes cannot be carried: they are named (``lost``).

Each row says which layers were re-run for it, and what could not be re-scored
(the notebook's bytes are not stored, the submission could not be graded at all).

What the instructor reads first is ``grader.service.movers``: the students whose score
the edit moves.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from .. import check_types
from ..assignment import Assignment
from ..layers.base import GradeOptions, Layer
from ..layers.outputs import OutputLayer
from ..layers.structure import StructureLayer
from ..pipeline import MODEL_LAYERS, GradeInput, Grader
from ..points import as_points
from ..rubrics.check_fields import Check, check_to_dict
from ..rubrics.schema import Rubric
from ..scoring import build_report
from ..store.database import Store
from ..store.db_schema import GradeRow, OverrideRow
from ..types import GradeReport, LayerResult

__all__ = ["RescorePreview", "RescoreRow", "changed_checks", "changes", "preview_rescore",
           "preview_rows"]

log = logging.getLogger(__name__)

CheckKey = tuple[str, str, str]  # criterion id, check type, target
RescoreProgress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class RescoreRow:
    """One graded submission under the edited rubric."""

    grade_id: int
    name: str  # the pseudonym when names are hidden
    old_score: float | None  # as graded under the rubric in force, without overrides
    new_score: float | None  # under the edited rubric (None: could not be re-scored)
    old_max: float
    new_max: float
    moved: tuple[str, ...] = ()  # "load-data: 1.4 -> 2.8", "q3: new, 0 -> 1", ...
    rerun: tuple[str, ...] = ()  # the layers evaluated again: (), ("L1",), ("L1", "L2")
    overrides: tuple[str, ...] = ()  # the instructor's overrides of the old grade
    current_score: float | None = None  # the old grade with its overrides
    problem: str = ""  # why it could not be re-scored, or what failed on re-running
    carried_score: float | None = None  # new_score with the overrides carried over
    lost: tuple[str, ...] = ()  # overrides a regrade could not carry (criterion removed)

    @property
    def delta(self) -> float | None:
        if self.old_score is None or self.new_score is None:
            return None
        return round(self.new_score - self.old_score, 4)

    @property
    def moves(self) -> bool:
        return bool(self.delta) or bool(self.moved)


@dataclass(frozen=True, slots=True)
class RescorePreview:
    old_version: str
    new_version: str
    rows: tuple[RescoreRow, ...]  # problems first, then movers by size of move, then the rest
    recomputed: tuple[str, ...]  # the checks evaluated again ("criterion: type target")
    seconds: float

    @property
    def movers(self) -> list[RescoreRow]:
        return [r for r in self.rows if r.moves]

    @property
    def rerun(self) -> list[RescoreRow]:
        return [r for r in self.rows if r.rerun]


def changes(old: Rubric, new: Rubric) -> list[str]:
    """What an edit changes, one line each: for the preview and the version's note."""
    out: list[str] = []
    if old.title != new.title:
        out.append(f"title: {old.title!r} -> {new.title!r}")
    if old.total_points != new.total_points:
        out.append(f"total points: {old.total_points:g} -> {new.total_points:g}")
    if old.placeholders != new.placeholders:
        out.append("placeholders changed")
    before = {c.id: c for c in old.criteria}
    after = {c.id: c for c in new.criteria}
    for c in new.criteria:
        o = before.get(c.id)
        if o is None:
            out.append(f"{c.id}: added ({as_points(c.points)} points)")
            continue
        if o.points != c.points:
            out.append(f"{c.id}: points {as_points(o.points)} -> {as_points(c.points)}")
        if [check_to_dict(ch) for ch in o.checks] != [check_to_dict(ch) for ch in c.checks]:
            out.append(f"{c.id}: checks changed")
        if o.levels != c.levels:
            out.append(f"{c.id}: levels changed")
        if dataclasses.replace(o, points=c.points, checks=c.checks, levels=c.levels) != c:
            out.append(f"{c.id}: title, kind or texts changed")
    out.extend(f"{cid}: removed" for cid in before if cid not in after)
    kept = [c.id for c in new.criteria if c.id in before]
    if kept != [c.id for c in old.criteria if c.id in after]:
        out.append("criteria reordered")
    return out


def _key(cid: str, ch: Check) -> CheckKey:
    return (cid, ch.type, ch.target)


def changed_checks(old: Rubric, new: Rubric) -> set[CheckKey]:
    """The checks of ``new`` that grades under ``old`` hold no result for."""
    if old.all_placeholders != new.all_placeholders:
        return {_key(c.id, ch) for c in new.criteria for ch in c.evaluated}
    before = {_key(c.id, ch): dataclasses.replace(ch, weight=0.0)
              for c in old.criteria for ch in c.evaluated}
    return {_key(c.id, ch) for c in new.criteria for ch in c.evaluated
            if before.get(_key(c.id, ch)) != dataclasses.replace(ch, weight=0.0)}


class _Rerunner:
    """Graders for the edited rubric, built when first needed (one per way of running)."""

    def __init__(self, assignment: Assignment, rubric: Rubric, with_l2: bool,
                 options: GradeOptions | None) -> None:
        self.assignment = dataclasses.replace(assignment, rubric=rubric)
        self.with_l2 = with_l2
        self.options = options
        self._graders: dict[tuple[bool, bool], Grader] = {}

    def layers(self, report: GradeReport, data: bytes) -> dict[str, LayerResult]:
        stored = report.layers.get("L2")
        details = stored.details if stored is not None else {}
        opts = self.options or GradeOptions(
            # it was executed then, or meant to be (a run that could not be made is tried
            # again: its stored outputs never stand unchecked)
            execute="kernel" in details or any(f.code == "not_executed" for f in report.flags),
            allow_unsandboxed=details.get("sandboxed") is False)
        opts = dataclasses.replace(opts, use_llm=False)
        key = (opts.execute, opts.allow_unsandboxed)
        grader = self._graders.get(key)
        if grader is None:
            layers: list[Layer] = [StructureLayer()] + ([OutputLayer()] if self.with_l2 else [])
            grader = self._graders[key] = Grader(self.assignment, opts, layers)
        item = GradeInput(report.file, data, report.student_id, report.display_name)
        return {name: lr for name, lr in grader.grade_first(item).layers.items()
                if name not in MODEL_LAYERS}  # the models' stored notes are kept


def _merge(stored: dict[str, LayerResult], fresh: dict[str, LayerResult],
           changed: set[CheckKey]) -> dict[str, LayerResult]:
    """The stored layers with the fresh layer 1 (static: it gives the same results for
    unchanged checks, and knows the new output variables for its hard-coding flags), and
    in layer 2 the fresh results of the changed checks only."""
    out = dict(stored)
    if "L1" in fresh:
        out["L1"] = fresh["L1"]
    if "L2" in fresh:
        old = stored.get("L2") or LayerResult("L2")
        new = fresh["L2"]
        keep = [c for c in old.checks if (c.criterion_id, c.check, c.target) not in changed]
        take = [c for c in new.checks if (c.criterion_id, c.check, c.target) in changed]
        out["L2"] = dataclasses.replace(old, checks=keep + take,
                                        error=old.error or new.error)
    return out


def _moved(old: GradeReport, new: GradeReport) -> tuple[str, ...]:
    """The criteria whose points differ (a criterion added or removed counts when it
    gives or gave points)."""
    before = {c.id: c.points for c in old.criteria}
    after = {c.id: c.points for c in new.criteria}
    out = []
    for cid, points in after.items():
        if cid not in before and points:
            out.append(f"{cid}: new, {points:g}")
        elif cid in before and not math.isclose(before[cid], points, abs_tol=1e-9):
            out.append(f"{cid}: {before[cid]:g} -> {points:g}")
    out.extend(f"{cid}: removed, was {p:g}" for cid, p in before.items()
               if cid not in after and p)
    return tuple(out)


def _name(row: GradeRow) -> str:
    return row.display_name or row.student_id or row.file


def preview_rescore(
    store: Store,
    assignment: Assignment,
    new_rubric: Rubric,
    *,
    anonymous: bool = False,
    options: GradeOptions | None = None,
    progress: RescoreProgress | None = None,
) -> RescorePreview:
    """Every submission graded under ``assignment``'s rubric (the one in force) scored
    under ``new_rubric``; nothing is stored. ``options``: how to run layer 2 when it
    must run (default: as each submission's grade was made)."""
    t0 = time.perf_counter()
    old_rubric = assignment.rubric
    changed = changed_checks(old_rubric, new_rubric)
    with_l2 = any(check_types.of(t).layer == "L2" for _, t, _ in changed)
    rerunner = _Rerunner(assignment, new_rubric, with_l2, options)
    aid = store.assignment_id(assignment.name)
    grades = [] if aid is None else store.list_grades(
        aid, rubric_version=old_rubric.version, anonymous=anonymous)
    rows = []
    for n, grade in enumerate(grades, 1):
        rows.append(_one(store, grade, new_rubric, changed, rerunner, anonymous))
        if progress is not None:
            progress(n, len(grades))
    rows.sort(key=lambda r: (not r.problem, not r.moves, -abs(r.delta or 0.0), r.name))
    seconds = time.perf_counter() - t0
    log.info("re-score preview of %s, rubric %s -> %s: %d grades, %d move, %d re-run, %.1f s",
             assignment.name, old_rubric.version, new_rubric.version, len(rows),
             sum(r.moves for r in rows), sum(bool(r.rerun) for r in rows), seconds)
    return RescorePreview(old_rubric.version, new_rubric.version, tuple(rows),
                          tuple(sorted(f"{c}: {t} {g}" for c, t, g in changed)), seconds)


def _one(store: Store, grade: GradeRow, new_rubric: Rubric, changed: set[CheckKey],
         rerunner: _Rerunner, anonymous: bool) -> RescoreRow:
    report = store.get_report(grade.id, anonymous=anonymous, overrides=False)
    latest = {o.criterion_id: o for o in store.overrides(grade.id)}
    overrides = tuple(f"{o.criterion_id}: {as_points(o.old_points)} -> {as_points(o.new_points)} "
                      f"({o.reason}; {o.who})" for o in latest.values())
    base = RescoreRow(grade.id, _name(grade), report.score, None, report.max_score,
                      new_rubric.total_points, overrides=overrides, current_score=grade.score)
    if report.status != "graded":
        return dataclasses.replace(base, problem=f"not graded: {report.error}")
    layers = report.layers
    rerun: tuple[str, ...] = ()
    problem = ""
    if changed:
        data = store.get_file(grade.sha256)
        if data is None:
            return dataclasses.replace(base, problem="the notebook is not stored, so the "
                                       "changed checks cannot be evaluated: grade it again")
        fresh = rerunner.layers(report, data)
        rerun = tuple(sorted(fresh))
        failed = [f"{lr.layer} failed: {lr.error}" for lr in fresh.values() if lr.error]
        problem = "; ".join(failed)
        layers = _merge(layers, fresh, changed)
    new = build_report(new_rubric, report.file, report.sha256, report.assignment, layers,
                       report.student_id, report.display_name)
    carried, lost = _carried(new, latest)
    return dataclasses.replace(base, new_score=new.score, moved=_moved(report, new),
                               rerun=rerun, problem=problem, carried_score=carried,
                               lost=lost)


def _carried(new: GradeReport, latest: dict[str, OverrideRow]
             ) -> tuple[float | None, tuple[str, ...]]:
    """The new score with the overrides carried over as a regrade would carry them, and
    the overrides it could not carry."""
    if new.score is None or new.status != "graded":
        return None, ()
    points = {c.id: c.points for c in new.criteria}
    for c in new.criteria:
        o = latest.get(c.id)
        if o is not None:
            points[c.id] = min(o.new_points, c.max_points)
    lost = tuple(f"{o.criterion_id}: {as_points(o.old_points)} -> {as_points(o.new_points)} "
                 f"({o.reason}; {o.who})" for cid, o in latest.items() if cid not in points)
    return math.fsum(points.values()), lost


def preview_rows(preview: RescorePreview) -> list[dict[str, object]]:
    """The preview as table rows for the app (movers and problems first)."""
    return [{"student": r.name, "old score": r.old_score, "new score": r.new_score,
             "change": r.delta, "criteria that move": "; ".join(r.moved),
             "re-ran": ", ".join(r.rerun), "overrides of the old grade": "; ".join(r.overrides),
             "score now (with overrides)": r.current_score,
             "new score (with overrides)": r.carried_score,
             "overrides lost (criterion removed)": "; ".join(r.lost), "problem": r.problem}
            for r in preview.rows]
