"""Reviewing stored grades: filters, the notebook beside its grade, overrides, regrades.

What the Review page calls; no Streamlit. Names follow the anonymisation switch
everywhere: listings and reports come from the store with pseudonyms, and the
notebook's own text has the student's name and id replaced by the pseudonym.

A student may hold several grades: one per rubric version their notebook was graded
under, and one per notebook they handed in. The grade *in force* is their newest
grade under the rubric version in force; the page shows those by default, and every
export holds exactly one grade per student, under one rubric version
(``Listing``: ``in_force``, ``export_ids``). Students with no grade under the rubric in force
yet are named (``InForce.missing``), never silently left out or mixed in. A grade the
instructor dropped from the gradebook (a wrong upload, ``Store.drop_grade``, audited) is in
no listing; the page lists the dropped ones apart, each with a way back.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from inference import DisaggregatedClient

from ..anonymity import name_parts, redact
from ..errors import StoreError
from ..layers.base import GradeOptions
from ..notebooks.load import load_notebook
from ..pipeline import Grader
from ..points import as_points, gradebook
from ..store.carry import CarryResult
from ..store.database import GradeRow, OverrideRow, Store
from ..types import GradeReport
from ..views.reports import CellView, notebook_cells, percent, percent_text, points_text
from .batch import grade_batch
from .jobs import JobResult, stored_input
from .workspace import Workspace

log = logging.getLogger(__name__)

REVIEW_CHOICES = ("all", "needs review", "no review needed")


@dataclass(frozen=True, slots=True)
class ReviewFilter:
    min_score: float | None = None
    max_score: float | None = None
    review: str = "all"  # one of REVIEW_CHOICES
    flags: tuple[str, ...] = ()  # any of these
    rubric_version: str | None = None  # only grades under this version (None: any)
    in_force: bool = False  # only each student's newest grade under ``rubric_version``


def student_key(g: GradeRow) -> str:
    """Who a grade is of (listed with real names): id, else name, else file."""
    return g.student_id or g.display_name or g.file


def newest_per_student(rows: Sequence[GradeRow]) -> list[GradeRow]:
    """Each student's newest grade among ``rows`` (real names), in order of first
    appearance."""
    best: dict[str, GradeRow] = {}
    for g in rows:
        k = student_key(g)
        if k not in best or (g.created_at, g.id) > (best[k].created_at, best[k].id):
            best[k] = g
    return list(best.values())


@dataclass(frozen=True, slots=True)
class InForce:
    version: str  # the rubric version in force
    grades: tuple[GradeRow, ...]  # each student's grade in force
    missing: tuple[GradeRow, ...]  # students with no grade under it: their newest grade


def _kept(r: GradeRow, f: ReviewFilter, needs: bool | None) -> bool:
    """Whether ``r`` passes ``f``'s filters (a grade without a score meets no bound)."""
    return not (
        (f.min_score is not None and (r.score is None or r.score < f.min_score))
        or (f.max_score is not None and (r.score is None or r.score > f.max_score))
        or (needs is not None and r.needs_review != needs)
        or (f.rubric_version is not None and r.rubric_version != f.rubric_version)
        or (f.flags and not set(r.flags) & set(f.flags)))


@dataclass(frozen=True, slots=True)
class Listing:
    """An assignment's grades, read once per page draw: with real names (students are
    told apart by their real ids) and as shown (with pseudonyms when names are hidden);
    the same grades in the same order."""

    real: tuple[GradeRow, ...]
    shown: tuple[GradeRow, ...]

    @classmethod
    def read(cls, store: Store, assignment_id: int, anonymous: bool = False) -> Listing:
        """The assignment's grades, but those dropped from the gradebook
        (``Store.drop_grade``: a wrong upload), which no listing, export or count holds."""
        dropped = store.dropped(assignment_id)
        real = tuple(g for g in store.list_grades(assignment_id) if g.id not in dropped)
        return cls(real, tuple(g for g in store.list_grades(assignment_id, anonymous=True)
                               if g.id not in dropped) if anonymous else real)

    def _as_shown(self, rows: Sequence[GradeRow]) -> tuple[GradeRow, ...]:
        if self.shown is self.real:
            return tuple(rows)
        by_id = {g.id: g for g in self.shown}
        return tuple(by_id[g.id] for g in rows)

    def _newest(self, version: str) -> set[int]:
        return {g.id for g in newest_per_student([g for g in self.real
                                                  if g.rubric_version == version])}

    def in_force(self, version: str) -> InForce:
        """The grades in force (each student's newest under ``version``) and the students
        who have none under it yet (with their newest grade)."""
        current = newest_per_student([g for g in self.real if g.rubric_version == version])
        have = {student_key(g) for g in current}
        missing = [g for g in newest_per_student(self.real) if student_key(g) not in have]
        return InForce(version, self._as_shown(current), self._as_shown(missing))

    def find(self, f: ReviewFilter) -> list[GradeRow]:
        """The grades shown that pass the filter, in order of submission."""
        if f.review not in REVIEW_CHOICES:
            raise ValueError(f"review filter {f.review!r} is not one of "
                             f"{', '.join(REVIEW_CHOICES)}")
        if f.in_force and f.rubric_version is None:
            raise ValueError("the grades in force need the rubric version in force")
        needs = {"all": None, "needs review": True, "no review needed": False}[f.review]
        keep = self._newest(f.rubric_version) if f.in_force and f.rubric_version else None
        return [r for r in self.shown if _kept(r, f, needs) and (keep is None or r.id in keep)]

    def export_ids(self, rows: Sequence[GradeRow], version: str) -> list[int]:
        """The grades an export of ``rows`` holds: of each student among them, the grade
        in force under ``version`` (their newest under it), if it is among ``rows``. One
        grade per student, all under one rubric version, so one "Points Possible"."""
        ids = self._newest(version)
        return [g.id for g in rows if g.id in ids]


def in_force(store: Store, assignment_id: int, version: str,
             anonymous: bool = False) -> InForce:
    return Listing.read(store, assignment_id, anonymous).in_force(version)


def find_grades(store: Store, assignment_id: int, f: ReviewFilter,
                anonymous: bool = False) -> list[GradeRow]:
    return Listing.read(store, assignment_id, anonymous).find(f)


def export_ids(store: Store, assignment_id: int, shown: Sequence[GradeRow],
               version: str) -> list[int]:
    return Listing.read(store, assignment_id).export_ids(shown, version)


def one_grade_per_student(store: Store, grade_ids: Sequence[int]) -> list[int]:
    """Of ``grade_ids`` (a batch's), each student's newest, in the order given."""
    keep = {g.id for g in newest_per_student([store.get_grade(i) for i in grade_ids])}
    return [i for i in grade_ids if i in keep]


def grade_rows(rows: Sequence[GradeRow]) -> list[dict[str, Any]]:
    return [{
        "grade": r.id, "student": r.display_name or r.student_id or r.file, "file": r.file,
        "score": None if r.score is None else gradebook(r.score, r.max_score),
        "max": r.max_score,
        "%": percent(r.score, r.max_score),
        "needs review": r.needs_review, "flags": ", ".join(r.flags), "overrides": r.overrides,
        "rubric": r.rubric_version, "status": r.status,
        "graded": datetime.fromtimestamp(r.created_at).strftime("%Y-%m-%d %H:%M"),
    } for r in rows]


def override_saved(o: OverrideRow, grade: GradeRow) -> str:
    """The confirmation of a saved override: the criterion's points before and after,
    the reason, and the grade's new total ("... now 14 / 20 (70%)")."""
    pct = percent_text(grade.score, grade.max_score)
    return (f"Override saved: {o.criterion_id} {as_points(o.old_points)} -> "
            f"{as_points(o.new_points)} points "
            f"(why: {o.reason}). The grade is now {points_text(grade.score, grade.max_score)}"
            + (f" ({pct})." if pct else "."))


def audit_rows(trail: Sequence[OverrideRow],
               labels: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The audit trail, oldest first, each entry's reason and note in full; criteria named
    by ``labels`` (``views.labels.criterion_labels``: their titles), points written as
    the gradebook writes them ("1.32 -> 2.5", never "1.3200")."""
    return [{"when": datetime.fromtimestamp(o.at).strftime("%Y-%m-%d %H:%M:%S"), "who": o.who,
             "criterion": (labels or {}).get(o.criterion_id, o.criterion_id),
             "old": as_points(o.old_points), "new": as_points(o.new_points),
             "why": o.reason, "note": o.note} for o in trail]


def not_carried_lines(carry: CarryResult, student: str = "") -> list[str]:
    """One line per override the new grade could not carry over, and why."""
    who = f"{student}: " if student else ""
    return [f"{who}the override of {n.override.criterion_id} ({as_points(n.override.old_points)}"
            f" -> {as_points(n.override.new_points)} by {n.override.who}: {n.override.reason}) "
            f"on grade {carry.source_grade} was not carried over: {n.reason}"
            for n in carry.not_carried]


def submission_cells(store: Store, workspace: Workspace, grade_id: int,
                     anonymous: bool = False) -> list[CellView]:
    """The graded notebook's cells, labelled against the template; with names hidden,
    the student's name and id in the text become the pseudonym. Raises StoreError when
    the file was not kept."""
    real = store.get_grade(grade_id)
    item = stored_input(store, real)
    a = workspace.load(store.assignment_name(real.assignment_id))
    cells = notebook_cells(item.data, real.file, load_notebook(a.template),
                           a.rubric.all_placeholders)
    if not anonymous:
        return cells
    pseudonym = store.get_report(grade_id, anonymous=True).display_name
    names = name_parts(real.display_name, real.student_id, real.file)
    return [CellView(c.index, c.kind, redact(c.source, names, pseudonym, c.kind == "code"),
                     redact(c.outputs, names, pseudonym), c.origin, c.has_error, c.images)
            for c in cells]


@dataclass(frozen=True, slots=True)
class Regrade:
    before: GradeReport
    after: GradeReport
    grade_id: int  # the new grade (the same id when the rubric version did not change)
    carry: CarryResult  # the overrides the new grade carries over, and those it could not


def regrade(store: Store, workspace: Workspace, grade_id: int, options: GradeOptions,
            client: DisaggregatedClient | None = None, anonymous: bool = False) -> Regrade:
    """Grade a stored submission again with the rubric in force, from its stored bytes."""
    real = store.get_grade(grade_id)
    item = stored_input(store, real)
    name = store.assignment_name(real.assignment_id)
    a = workspace.load(name)
    before = store.get_report(grade_id, anonymous)
    grader = Grader(a, options, client=client if options.use_llm else None)
    grade_batch(grader, [item], store, regrade=True)
    new = store.find_grade(real.assignment_id, real.sha256, a.rubric.version, real.student_id)
    if new is None:
        raise StoreError(f"{real.file}: the regrade was not stored")
    log.info("regraded grade %d of %s as grade %d", grade_id, name, new.id)
    return Regrade(before, store.get_report(new.id, anonymous), new.id,
                   store.carry_status(new.id))


def regrade_rows(store: Store, result: JobResult, anonymous: bool = False) -> list[dict[str, Any]]:
    """What a regrade job changed, per student: rubric version and score before and after
    (with the overrides carried over), and the overrides that could not be carried."""
    rows = []
    for (old_id, old_version, old_score), new_id in zip(result.before, result.grade_ids,
                                                        strict=True):
        new = store.get_grade(new_id, anonymous)
        old_max = store.get_grade(old_id).max_score
        carry = store.carry_status(new_id)
        pct_a, pct_b = percent(old_score, old_max), percent(new.score, new.max_score)
        rows.append({"student": new.display_name or new.student_id or new.file,
                     "rubric before": old_version, "before": points_text(old_score, old_max),
                     "rubric after": new.rubric_version,
                     "after": points_text(new.score, new.max_score),
                     "change (points)": None if old_score is None or new.score is None
                     else gradebook(new.score - old_score),
                     "before %": pct_a, "after %": pct_b,
                     "change (% points)": None if pct_a is None or pct_b is None
                     else round(pct_b - pct_a, 1),
                     "overrides carried": len(carry.carried),
                     "overrides not carried": ", ".join(n.override.criterion_id
                                                        for n in carry.not_carried),
                     "grade before": old_id, "grade after": new_id})
    return rows


def regrade_not_carried(store: Store, result: JobResult, anonymous: bool = False) -> list[str]:
    """For a regrade job: each override that its new grade could not carry over."""
    lines = []
    for new_id in result.grade_ids:
        carry = store.carry_status(new_id)
        if carry.not_carried:
            g = store.get_grade(new_id, anonymous)
            lines += not_carried_lines(carry, g.display_name or g.student_id or g.file)
    return lines
