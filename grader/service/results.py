"""The Grade page's results, as they stand now: each student's grade in force.

A batch's grades are of the rubric version in force when it ran. After a rubric edit
the instructor may regrade (the Rubrics or Review page), and the student's grade in
force is then a newer one. The results table and its downloads show the same grades:
each student's grade in force when there is one, else the batch's own grade, and
every row names its rubric version, so an old grade is never shown as current.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..store.database import Store
from ..types import GradeReport
from ..views.labels import rubric_label
from ..views.reports import result_rows
from .review import Listing, student_key

__all__ = ["ShownResults", "results_in_force"]


@dataclass(frozen=True, slots=True)
class ShownResults:
    graded: list[tuple[int, GradeReport]]  # (grade id, report), as shown, batch order
    version: str  # the rubric version in force ("" when unknown)
    newer: int  # students shown with a grade newer than the batch's (a regrade)
    older: int  # students shown with the batch's grade, of another rubric version
    labels: dict[str, str] = field(default_factory=dict)  # version -> "version 3 (29 Nov)"

    def label(self, version: str) -> str:
        return self.labels.get(version, version)

    def rows(self) -> list[dict[str, Any]]:
        """``result_rows`` with a "rubric" column: the version each grade was made with."""
        out = []
        for row, (_, r) in zip(result_rows(self.graded), self.graded, strict=True):
            at = list(row).index("%") + 1
            items = list(row.items())
            out.append(dict([*items[:at], ("rubric", self.label(r.rubric_version)),
                             *items[at:]]))
        return out

    def note(self) -> str:
        """What the table shows, when it is not simply the batch's grades."""
        parts = []
        if self.newer:
            parts.append(f"{self.newer} student(s) were graded again since this batch: their "
                         f"grade in force (rubric {self.label(self.version)}) is shown, as "
                         "in the "
                         "downloads.")
        if self.older:
            parts.append(f"{self.older} student(s) have no grade under rubric "
                         f"{self.label(self.version)}, "
                         "the rubric in force: their grade from this batch is shown, with its "
                         "rubric version (regrade them on the Review page).")
        return " ".join(parts)


def results_in_force(store: Store, grade_ids: Sequence[int],
                     anonymous: bool = False) -> ShownResults:
    """For each of a batch's grades (of one assignment), the student's grade in force
    (the newest under the rubric version in force), else the batch's grade; a grade
    dropped from the gradebook is never shown (the student's grade in force, if another
    is, stands in for it), as Review leaves it out."""
    if not grade_ids:
        return ShownResults([], "", 0, 0)
    rows = [store.get_grade(gid) for gid in grade_ids]
    aid = rows[0].assignment_id
    dropped = store.dropped(aid)  # out of the gradebook: not shown, not downloaded
    active = store.active_rubric(aid)
    version = active.version if active is not None else rows[0].rubric_version
    force = {student_key(g): g.id for g in Listing.read(store, aid).in_force(version).grades}
    shown, newer, older, seen = [], 0, 0, set()
    for row in rows:
        gid = force.get(student_key(row), None if row.id in dropped else row.id)
        if gid is None or gid in seen:
            continue  # a dropped grade, or two files of one student: their one grade in force
        seen.add(gid)
        newer += gid != row.id and row.id not in dropped
        older += gid == row.id and row.rubric_version != version
        shown.append((gid, store.get_report(gid, anonymous)))
    stored = store.rubric_versions(aid)
    labels = {v.version: rubric_label(v.version, stored) for v in stored}
    return ShownResults(shown, version, newer, older, labels)
