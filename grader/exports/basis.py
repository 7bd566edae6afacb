"""What a grade's files are built against, taken from the grade itself.

Every stored grade knows its assignment and the rubric version it was graded under
(``GradeReport.assignment``, ``rubric_version``); the store keeps each version's rubric
and each submission's bytes. ``StoredBases`` reads them per report, so a letter quotes
its own assignment's questions, expected values and headings whatever assignment a
page happens to have picked. A rubric the caller passes is used only for the reports
graded under exactly that rubric (a rubric's version is the hash of its content).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import GraderError
from ..rubrics.schema import Rubric, loads
from ..store.database import Store
from ..types import GradeReport

__all__ = ["Basis", "StoredBases", "given_basis"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Basis:
    """One grade's assignment, its title, and the rubric it was graded under (None when
    that rubric is not known: the letter then names what it can without it)."""

    assignment: str
    title: str
    rubric: Rubric | None


BasisOf = Callable[[GradeReport], Basis]


def given_basis(title: str, rubric: Rubric | None) -> BasisOf:
    """The caller's title and rubric, cross-checked: the rubric serves only the reports
    graded under that very version; the others get none rather than another's."""
    def of(r: GradeReport) -> Basis:
        mine = rubric if rubric is not None and rubric.version == r.rubric_version else None
        return Basis(r.assignment, title or (mine.title if mine else "") or r.assignment, mine)
    return of


class StoredBases:
    """Each report's basis from the store, by its own assignment and rubric version.

    ``titles`` (an assignment's name -> its title, as the workspace knows it) names the
    assignment; without it, or when it does not know the name, the rubric's title does.
    ``rubric`` (optional, the caller's) is used for the reports graded under exactly it.
    Read once per assignment and version."""

    def __init__(self, store: Store, titles: Callable[[str], str | None] | None = None,
                 rubric: Rubric | None = None) -> None:
        self.store = store
        self.titles = titles
        self.given = rubric
        self._rubrics: dict[tuple[str, str], Rubric | None] = {}

    def __call__(self, r: GradeReport) -> Basis:
        rubric = self.rubric(r.assignment, r.rubric_version)
        title = (self.titles(r.assignment) if self.titles is not None else None) or \
            (rubric.title if rubric is not None else "") or r.assignment
        return Basis(r.assignment, title, rubric)

    def rubric(self, assignment: str, version: str) -> Rubric | None:
        key = (assignment, version)
        if key not in self._rubrics:
            self._rubrics[key] = self._read(assignment, version)
        return self._rubrics[key]

    def _read(self, assignment: str, version: str) -> Rubric | None:
        if self.given is not None and self.given.version == version:
            return self.given
        try:
            aid = self.store.assignment_id(assignment)
            stored = next((v for v in self.store.rubric_versions(aid) if v.version == version),
                          None) if aid is not None else None
            if stored is None:
                log.warning("rubric version %s of %s is not in the store: letters without it",
                            version, assignment)
                return None
            return loads(stored.rubric_json, f"{assignment} rubric {version}")
        except GraderError as exc:  # the letters are still written, naming what they can
            log.warning("rubric version %s of %s cannot be read: %s", version, assignment, exc)
            return None
