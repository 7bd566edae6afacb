"""Exports: Canvas gradebook CSV, plain CSV, JSON, and per-student feedback letters.

Each student's feedback is the letter of ``grader.letters.build`` (points, what was done,
what is missing and where, the next step; nothing for the instructor only), as
Markdown, HTML and PDF (``grader.letters.pdf``); student text is always escaped.
Names come from the reports, so an anonymised batch exports pseudonyms only, and its
JSON leaves out each file's sha256 (``hide_names``), which would name the student to
whoever holds the file. Points and percentages are the gradebook's, written as the
letter writes them (``grader.points``): the Canvas CSV, the CSV, the JSON and the letter
of one grade say the same 8.64.

Every export is text any UTF-8 writer takes (a lone surrogate that reached a
report becomes U+FFFD, see ``grader.safe_text``), and files are named from
``safe_stem``: short ASCII stems, unique even on a file system that ignores case.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from ..letters.build import letter_for, letter_html, letter_markdown, student_name
from ..letters.numbers import cell_name, cell_number
from ..letters.pdf import letter_pdf
from ..points import as_points, gradebook, percent_text, points_text, whole_percent
from ..rubrics.schema import Rubric
from ..safe_text import STEM_LIMIT, file_stem, scrub, utf8
from ..scoring import GATES
from ..store.serialize import report_to_dict
from ..types import GradeReport, Notebook
from .basis import BasisOf, given_basis

__all__ = [
    "as_points",
    "canvas_csv",
    "cell_name",
    "cell_number",
    "feedback_html",
    "feedback_markdown",
    "feedback_pdf",
    "feedback_stems",
    "feedback_zip",
    "gradebook",
    "json_export",
    "letter_for",
    "not_graded",
    "percent_text",
    "plain_csv",
    "points_text",
    "safe_stem",
    "student_name",
    "unread_reports",
    "whole_percent",
    "write_exports",
]


def _pct(r: GradeReport) -> str:
    """The percentage as the letter writes it, without the sign ("83")."""
    return percent_text(r.score, r.max_score).removesuffix("%")


def _fmt(x: float | None, full: float | None = None) -> str:
    """Points as the gradebook exports them (``grader.points``); blank for none."""
    return "" if x is None else as_points(x, full)


def not_graded(r: GradeReport) -> bool:
    """Whether the student's letter says the notebook was not graded: it could not be
    read, or the wrong-notebook gate (``grader.scoring.GATES``: another assignment's
    notebook) scored it 0 and no override has given it points since."""
    return r.status == "error" or r.score is None or (
        not r.score and any(f.code in GATES for f in r.flags))


def _score(r: GradeReport, not_graded_as_zero: bool) -> str:
    """A grade's points as the gradebook exports them; a notebook not graded is left
    blank, never given a 0, unless the instructor asks for 0."""
    if not_graded(r):
        return "0" if not_graded_as_zero else ""
    return _fmt(r.score, r.max_score)


def canvas_csv(reports: Sequence[GradeReport], assignment_title: str,
               not_graded_as_zero: bool = False) -> str:
    """A CSV for Canvas's gradebook import (Grades > Import).

    Canvas matches rows by ``ID`` (its user id, which Canvas download file
    names carry); a notebook not graded (``not_graded``: unreadable, or another
    assignment's) is left blank, never given a 0, unless ``not_graded_as_zero``.
    """
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment_title])
    w.writerow(["Points Possible", "", "", "", "", _fmt(reports[0].max_score) if reports else ""])
    for r in reports:
        w.writerow([student_name(r), r.student_id, "", "", "", _score(r, not_graded_as_zero)])
    return scrub(buf.getvalue())


def plain_csv(reports: Sequence[GradeReport], not_graded_as_zero: bool = False) -> str:
    """Every grade with its criteria's points; a notebook not graded has status "not
    graded" and a blank score (0 with ``not_graded_as_zero``), as in the Canvas CSV."""
    crit_ids = list(dict.fromkeys(c.id for r in reports for c in r.criteria))
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(
        [
            "file",
            "student_id",
            "name",
            "status",
            "score",
            "max_score",
            "percent",
            *crit_ids,
            "needs_review",
            "flags",
            "error",
        ]
    )
    for r in reports:
        by_id = {c.id: c for c in r.criteria}
        w.writerow(
            [
                r.file,
                r.student_id,
                student_name(r),
                "not graded" if not_graded(r) else r.status,
                _score(r, not_graded_as_zero),
                _fmt(r.max_score),
                _pct(r),
                *[_fmt(by_id[c].points, by_id[c].max_points) if c in by_id else ""
                  for c in crit_ids],
                " ".join(r.needs_review),
                " ".join(sorted({f.code for f in r.flags})),
                r.error,
            ]
        )
    return scrub(buf.getvalue())


def json_export(reports: Sequence[GradeReport], hide_names: bool = False) -> str:
    """Every report in full. ``hide_names``: without each submission's sha256 too (the
    hash of the original file names its student to whoever holds the file)."""
    if hide_names:
        reports = [dataclasses.replace(r, sha256="") for r in reports]
    return scrub(json.dumps([_gradebook_numbers(report_to_dict(r)) for r in reports], indent=2,
                            ensure_ascii=False))


def _gradebook_numbers(d: dict) -> dict:
    """A report's points at the gradebook's precision, as the letter and the CSVs show
    them (a grade stored before points were kept to 2 decimals reads the same)."""
    if d.get("score") is not None:
        d["score"] = gradebook(d["score"], d.get("max_score"))
    for c in d.get("criteria", []):
        c["points"] = gradebook(c["points"], c.get("max_points"))
    return d


NotebookSource = Notebook | bytes


def feedback_markdown(r: GradeReport, assignment_title: str, rubric: Rubric | None = None,
                      notebook: NotebookSource | None = None) -> str:
    """The student's letter (``grader.letters.build``) as Markdown; student text made inert."""
    return letter_markdown(letter_for(r, rubric, notebook, assignment_title))


def feedback_html(r: GradeReport, assignment_title: str, rubric: Rubric | None = None,
                  notebook: NotebookSource | None = None) -> str:
    """The student's letter as one self-contained, printable HTML page (all text escaped)."""
    return letter_html(letter_for(r, rubric, notebook, assignment_title))


def feedback_pdf(r: GradeReport, assignment_title: str, rubric: Rubric | None = None,
                 notebook: NotebookSource | None = None) -> bytes:
    """The student's letter as one A4 PDF. Raises ``letter_pdf.FontError`` without fonts."""
    return letter_pdf(letter_for(r, rubric, notebook, assignment_title))


def _feedback_files(r: GradeReport, basis: BasisOf,
                    notebooks: Mapping[str, NotebookSource] | None) -> list[tuple[str, bytes]]:
    """(extension, bytes) of one student's letter: PDF, Markdown and HTML, written against
    the report's ``basis`` (its assignment's title and the rubric it was graded under)."""
    b = basis(r)
    letter = letter_for(r, b.rubric, (notebooks or {}).get(r.sha256), b.title)
    return [("pdf", letter_pdf(letter)), ("md", utf8(letter_markdown(letter))),
            ("html", utf8(letter_html(letter)))]


def safe_stem(text: str) -> str:
    """``text`` as a file name's stem: ASCII letters, digits, '.', '_' and '-' only, at most
    ``STEM_LIMIT`` bytes (see ``safe_text.file_stem``)."""
    return file_stem(text)


def feedback_stems(reports: Sequence[GradeReport]) -> list[str]:
    """One distinct file stem per report, from the student's name (as the report shows it:
    pseudonyms in an anonymised batch). Distinct ignoring case, as on macOS and Windows:
    a second "student042" (or "Student042") is "student042-2"."""
    used: set[str] = set()
    stems = []
    for r in reports:
        base = stem = safe_stem(student_name(r))
        n = 1
        while stem.casefold() in used:
            n += 1
            stem = f"{base[: STEM_LIMIT - len(str(n)) - 1]}-{n}"
        used.add(stem.casefold())
        stems.append(stem)
    return stems


class Unread(Protocol):
    """A file of a batch that could not be read or was refused (``InputProblem``)."""

    file: str
    reason: str


def unread_reports(unread: Sequence[Unread], assignment_title: str,
                   hide_names: bool = False) -> list[GradeReport]:
    """One ungraded report per file that could not be read, so that its student gets
    the short letter saying why and what to do (``grader.letters.build``'s letter of a
    submission that could not be graded). ``hide_names``: "Unreadable file 1", ...,
    never the file's name (which names its student)."""
    return [GradeReport(p.file, "", assignment_title, "", "error", None, 0.0,
                        display_name=f"Unreadable file {i}" if hide_names else "",
                        error=p.reason) for i, p in enumerate(unread, 1)]


def feedback_zip(reports: Sequence[GradeReport], assignment_title: str,
                 rubric: Rubric | None = None,
                 notebooks: Mapping[str, NotebookSource] | None = None,
                 bases: BasisOf | None = None, unread: Sequence[Unread] = (),
                 hide_names: bool = False) -> bytes:
    """Each student's letter in one ZIP: feedback/<student>.pdf, .md and .html.
    ``notebooks`` (by the submission's sha256) name cells by position. ``bases`` (e.g.
    ``StoredBases``) gives each report its own title and rubric; without it,
    ``assignment_title`` and ``rubric`` serve, the rubric only for the reports graded
    under that very version (``given_basis``). ``unread``: the batch's files that could
    not be read, each with its letter saying why and what to do (``unread_reports``,
    named by number with ``hide_names``)."""
    given = given_basis(assignment_title, rubric)
    basis = bases or given
    every = [*reports, *unread_reports(unread, assignment_title, hide_names)]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for k, (r, stem) in enumerate(zip(every, feedback_stems(every), strict=True)):
            for ext, data in _feedback_files(r, basis if k < len(reports) else given,
                                             notebooks):
                z.writestr(f"feedback/{stem}.{ext}", data)
    return buf.getvalue()


def write_exports(
    reports: Sequence[GradeReport], out_dir: Path, assignment_title: str,
    rubric: Rubric | None = None, notebooks: Mapping[str, NotebookSource] | None = None,
    bases: BasisOf | None = None, hide_names: bool = False,
) -> list[Path]:
    """Write every export into ``out_dir`` (the letters as feedback/<student>.pdf, .md and
    .html); returns the files written. Raises ``OSError`` (naming the path) when the
    folder cannot be made or a file cannot be written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    fb = out_dir / "feedback"
    fb.mkdir(exist_ok=True)
    written = []
    for name, text in (
        ("canvas.csv", canvas_csv(reports, assignment_title)),
        ("grades.csv", plain_csv(reports)),
        ("grades.json", json_export(reports, hide_names)),
    ):
        (out_dir / name).write_bytes(utf8(text))
        written.append(out_dir / name)
    basis = bases or given_basis(assignment_title, rubric)
    for r, stem in zip(reports, feedback_stems(reports), strict=True):
        for ext, data in _feedback_files(r, basis, notebooks):
            path = fb / f"{stem}.{ext}"
            path.write_bytes(data)
            written.append(path)
    return written
