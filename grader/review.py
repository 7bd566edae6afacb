"""Reviewing stored grades: filters, the notebook beside its grade, overrides, regrades.

What the Review page calls; no Streamlit. Names follow the anonymisation switch
everywhere: listings and reports come from the store with pseudonyms, and the
notebook's own text has the student's name and id replaced by the pseudonym.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from inference import DisaggregatedClient

from .batch import grade_batch
from .errors import StoreError
from .jobs import JobResult, stored_input
from .layers.base import GradeOptions
from .notebook import load_notebook
from .pipeline import Grader
from .report_views import CellView, notebook_cells, percent
from .store import GradeRow, OverrideRow, Store
from .types import GradeReport
from .workspace import Workspace

log = logging.getLogger(__name__)

REVIEW_CHOICES = ("all", "needs review", "no review needed")


@dataclass(frozen=True, slots=True)
class ReviewFilter:
    min_score: float | None = None
    max_score: float | None = None
    review: str = "all"  # one of REVIEW_CHOICES
    flags: tuple[str, ...] = ()  # any of these
    rubric_version: str | None = None


def find_grades(store: Store, assignment_id: int, f: ReviewFilter,
                anonymous: bool = False) -> list[GradeRow]:
    if f.review not in REVIEW_CHOICES:
        raise ValueError(f"review filter {f.review!r} is not one of {', '.join(REVIEW_CHOICES)}")
    needs = {"all": None, "needs review": True, "no review needed": False}[f.review]
    rows = store.list_grades(assignment_id, f.min_score, f.max_score, needs,
                             rubric_version=f.rubric_version, anonymous=anonymous)
    if f.flags:
        rows = [r for r in rows if set(r.flags) & set(f.flags)]
    return rows


def grade_rows(rows: Sequence[GradeRow]) -> list[dict[str, Any]]:
    return [{
        "grade": r.id, "student": r.display_name or r.student_id or r.file, "file": r.file,
        "score": r.score, "max": r.max_score,
        "%": percent(r.score, r.max_score),
        "needs review": r.needs_review, "flags": ", ".join(r.flags), "overrides": r.overrides,
        "rubric": r.rubric_version, "status": r.status,
        "graded": datetime.fromtimestamp(r.created_at).strftime("%Y-%m-%d %H:%M"),
    } for r in rows]


def audit_rows(trail: Sequence[OverrideRow]) -> list[dict[str, Any]]:
    return [{"when": datetime.fromtimestamp(o.at).strftime("%Y-%m-%d %H:%M:%S"), "who": o.who,
             "criterion": o.criterion_id, "old": o.old_points, "new": o.new_points,
             "why": o.reason} for o in trail]


# A line where a student signs their work: "Name: ...", "**Student:** ...", "Author = ...";
# in code only as a comment ("# Name: ..."), so that `name = ...` stays code.
_SIGNATURE = (r"(?:student(?:'s)?\s+|full\s+)?(?:name|student|author)[\s*_]*[:=][\s*_]*)"
              r"(\S.*?)\s*$")
_SIGNED_TEXT = re.compile(r"^([\s>#*_-]*" + _SIGNATURE, re.IGNORECASE | re.MULTILINE)
_SIGNED_COMMENT = re.compile(r"^(\s*#+\s*" + _SIGNATURE, re.IGNORECASE | re.MULTILINE)


def _redact(text: str, names: Sequence[str], pseudonym: str, code: bool = False) -> str:
    """``text`` with the student's known names and ids, and whatever follows a "Name:"
    (or "Student:", "Author:") at the start of a line, replaced by the pseudonym."""
    for name in sorted({n for n in names if len(n) >= 3}, key=len, reverse=True):
        text = re.sub(re.escape(name), pseudonym, text, flags=re.IGNORECASE)
    signed = _SIGNED_COMMENT if code else _SIGNED_TEXT
    return signed.sub(lambda m: m.group(1) + pseudonym, text)


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
    names = [real.display_name, real.student_id, real.file.rsplit(".", 1)[0]]
    return [CellView(c.index, c.kind, _redact(c.source, names, pseudonym, c.kind == "code"),
                     _redact(c.outputs, names, pseudonym), c.origin, c.has_error, c.images)
            for c in cells]


@dataclass(frozen=True, slots=True)
class Regrade:
    before: GradeReport
    after: GradeReport
    grade_id: int  # the new grade (the same id when the rubric version did not change)


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
    return Regrade(before, store.get_report(new.id, anonymous), new.id)


def regrade_rows(store: Store, result: JobResult, anonymous: bool = False) -> list[dict[str, Any]]:
    """What a regrade job changed, per student: rubric version and score before and after."""
    rows = []
    for (old_id, old_version, old_score), new_id in zip(result.before, result.grade_ids,
                                                        strict=True):
        new = store.get_grade(new_id, anonymous)
        rows.append({"student": new.display_name or new.student_id or new.file,
                     "rubric before": old_version, "before": old_score,
                     "rubric after": new.rubric_version, "after": new.score,
                     "change": None if old_score is None or new.score is None
                     else round(new.score - old_score, 4),
                     "grade before": old_id, "grade after": new_id})
    return rows
