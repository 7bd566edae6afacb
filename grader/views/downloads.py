"""The download files of the Grade and Review pages: Canvas CSV, full CSV, JSON, and
the feedback letters (one PDF, Markdown and HTML file per student, in one ZIP).

Each file is built from the grades themselves: given the store, every letter is written
against its own grade's assignment and the rubric version it was graded under, with its
own notebook (``grader.exports.basis``), whatever assignment the page has picked. What
a caller passes (title, rubric) is only used where it matches the grades.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..exports.basis import BasisOf, StoredBases, given_basis
from ..exports.formats import (
    Unread,
    canvas_csv,
    feedback_zip,
    json_export,
    letter_for,
    plain_csv,
    safe_stem,
)
from ..rubrics.schema import Rubric
from ..store.database import Store
from ..types import GradeReport

if TYPE_CHECKING:
    from ..letters.text import Letter

__all__ = ["Download", "Reports", "downloads", "grade_letter"]

Reports = Sequence[GradeReport] | Callable[[], Sequence[GradeReport]]


@dataclass(frozen=True, slots=True)
class Download:
    """A download button's file, made when asked (``make``): a class's JSON is megabytes,
    and a page should not build every file on every redraw."""

    label: str
    file_name: str
    make: Callable[[], bytes]
    mime: str
    help: str = ""


def downloads(reports: Reports, title: str, stem: str, rubric: Rubric | None = None,
              files: Callable[[str], bytes | None] | None = None, *,
              store: Store | None = None, titles: Callable[[str], str | None] | None = None,
              hide_names: bool = False, unread: Sequence[Unread] = (),
              not_graded_as_zero: bool = False) -> list[Download]:
    """The files of the download buttons. ``reports`` may be a function that loads them,
    called when a file is made; ``stem`` names the files.

    With ``store``, each report's rubric (the version it was graded under), its
    assignment's title (``titles``, else the rubric's) and its notebook's bytes (cells
    named by position and under their heading) come from the store; ``title`` and
    ``rubric`` then serve only where they match. Without it, ``rubric`` serves the
    reports graded under exactly that version and ``files`` gives the notebooks.
    ``hide_names``: the JSON leaves out each submission's sha256 as well. ``unread``: the
    batch's files that could not be read (``InputProblem``): each gets its letter in the
    ZIP, saying why and what to do. A notebook not graded (unreadable, another
    assignment's: ``exports.formats.not_graded``) is blank in the CSVs, never 0, unless
    ``not_graded_as_zero``."""
    stem = safe_stem(stem)
    basis: BasisOf = StoredBases(store, titles, rubric) if store is not None \
        else given_basis(title, rubric)
    notebook_of = files if files is not None else (store.get_file if store is not None
                                                   else None)

    def load() -> Sequence[GradeReport]:
        return reports() if callable(reports) else reports

    def canvas() -> bytes:
        shown = load()
        named = {basis(r).title for r in shown}
        return canvas_csv(shown, named.pop() if len(named) == 1 else title,
                          not_graded_as_zero).encode()

    def letters() -> bytes:
        shown = load()
        notebooks = {} if notebook_of is None else {
            r.sha256: data for r in shown
            if r.sha256 and (data := notebook_of(r.sha256)) is not None}
        return feedback_zip(shown, title, rubric, notebooks, basis, unread, hide_names)

    return [
        Download("Canvas CSV", f"{stem}-canvas.csv", canvas, "text/csv"),
        Download("Grades CSV", f"{stem}-grades.csv",
                 lambda: plain_csv(load(), not_graded_as_zero).encode(), "text/csv"),
        Download("JSON", f"{stem}-grades.json",
                 lambda: json_export(load(), hide_names).encode(), "application/json",
                 "Without the files' sha256 while names are hidden." if hide_names else ""),
        Download("Feedback letters (ZIP)", f"{stem}-feedback.zip",
                 letters, "application/zip",
                 "One letter per student: a PDF, the same in Markdown and in HTML."),
    ]


def grade_letter(report: GradeReport, store: Store,
                 titles: Callable[[str], str | None] | None = None,
                 rubric: Rubric | None = None) -> Letter:
    """One stored grade's letter, as the feedback ZIP holds it: against the grade's own
    assignment and rubric version (an older grade keeps its older rubric), with its
    notebook from the store. ``rubric`` serves only when it is that version."""
    basis = StoredBases(store, titles, rubric)(report)
    return letter_for(report, basis.rubric, store.get_file(report.sha256), basis.title)
