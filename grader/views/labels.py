"""How an assignment and a criterion are named in pickers and tables, the same on every page.

An assignment is its title, then its short name and language ("Retail sales (retail-sales,
Python, example)"): the picker of the Grade, Rubrics and Review pages says it alike, so a
choice made on one page reads the same on the next. A criterion is its title as the rubric
writes it ("Part E (4 points)"), never an nbgrader cell id ("cell-938593c4a215c6cc");
its id is added only where two criteria share a title, or where it has none. With names
hidden, a page that lists several assignments (the Dashboard) names a file with its
assignment (``across``): pseudonyms are numbered per assignment, so "student_001.ipynb"
of two assignments are two students.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Protocol

__all__ = ["across", "assignment_label", "criterion_label", "criterion_labels",
           "language_name", "rubric_label"]

_LANGUAGES = {"python": "Python", "r": "R"}


class _Assignment(Protocol):
    """What of a workspace entry (grader.service.workspace.AssignmentEntry) a label reads."""

    name: str
    title: str
    language: str
    bundled: bool


class _Criterion(Protocol):
    id: str
    title: str


def language_name(language: str) -> str:
    """"python" -> "Python", "r" -> "R"."""
    return _LANGUAGES.get(language, language)


def assignment_label(entry: _Assignment) -> str:
    """The assignment in a picker: "Title (name, Python)", ", example" for a bundled one;
    a title that is its name is not said twice."""
    kind = language_name(entry.language) + (", example" if entry.bundled else "")
    if not entry.title or entry.title == entry.name:
        return f"{entry.name} ({kind})"
    return f"{entry.title} ({entry.name}, {kind})"


def criterion_labels(criteria: Iterable[_Criterion]) -> dict[str, str]:
    """Each criterion's id -> how pages name it: its title, with the id where the title is
    missing or shared ("Part A: tests (x)", "Quality [quality-2]")."""
    listed = list(criteria)
    titles = Counter(c.title.strip() for c in listed if c.title.strip())
    out = {}
    for c in listed:
        title = c.title.strip()
        if not title:
            out[c.id] = c.id
        elif titles[title] > 1 and c.id != title:
            out[c.id] = f"{title} [{c.id}]"
        else:
            out[c.id] = title
    return out


def criterion_label(labels: Mapping[str, str], criterion_id: str) -> str:
    """A criterion named by ``labels`` (``criterion_labels``), or its id when a grade no
    longer has it (an override of a criterion the rubric dropped)."""
    return labels.get(criterion_id, criterion_id)


class _Version(Protocol):
    """What of a stored rubric version (grader.store.stored_files.RubricVersionRow) a label
    reads."""

    version: str
    created_at: float


def rubric_label(version: str, stored: Iterable[_Version]) -> str:
    """A rubric version as an instructor counts them: "version 3 (29 Nov 2026)", its
    number in the order the versions were stored; a version not stored yet (never graded
    with) is "as in the assignment's folder", and one the store lost, its hash."""
    ordered = sorted(stored, key=lambda v: v.created_at)
    for number, v in enumerate(ordered, 1):
        if v.version == version:
            day = time.strftime("%d %b %Y", time.localtime(v.created_at)).lstrip("0")
            return f"version {number} ({day})"
    return "as in the assignment's folder" if not ordered else f"version {version}"


def across(assignment: str, shown: str) -> str:
    """A file's name (a pseudonym's, with names hidden) on a page of several assignments:
    "retail-sales/student_001.ipynb"."""
    return f"{assignment}/{shown}"
