"""Downloads are built from the grades themselves (issue 22, items 1, 7 and 17).

Every letter is written against its own grade's assignment and the rubric version it
was graded under, read from the store, whatever assignment the page passes; the JSON
of a class with hidden names carries no file hashes; every file writes a percentage
as the letter does.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import pytest

from grader.exports.basis import StoredBases
from grader.exports.formats import feedback_zip
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from grader.service.batch import grade_batch
from grader.service.workspace import Workspace
from grader.store.database import Store
from grader.types import GradeReport
from grader.views.reports import downloads

SUBS = Path(__file__).resolve().parents[1] / "examples" / "retail-sales" / "submissions"
ZIP = "Feedback letters (ZIP)"


@pytest.fixture
def graded(tmp_path: Path):
    """Two retail-sales notebooks graded into a store (from their text, no kernel)."""
    store = Store(tmp_path / "grader.db")
    ws = Workspace(store, tmp_path / "assignments")
    a = ws.load("retail-sales")
    items = [GradeInput(f"{sid}.ipynb", (SUBS / f"{kind}.ipynb").read_bytes(), sid, sid)
             for sid, kind in (("student043", "partial"), ("student045", "wrong_outputs"))]
    grade_batch(Grader(a, GradeOptions(execute=False)), items, store)
    yield ws, a
    store.close()


def _reports(ws: Workspace, a, anonymous: bool = False) -> list[GradeReport]:
    aid = ws.assignment_id(a.name)
    return [ws.store.get_report(g.id, anonymous) for g in ws.store.list_grades(aid)]


def _members(data: bytes) -> dict[str, bytes]:
    """The letters' Markdown and HTML by name (a PDF carries the time it was made)."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {n: z.read(n) if not n.endswith(".pdf") else b"%PDF"
                for n in sorted(z.namelist())}


def _made(files, label: str) -> bytes:
    return next(d for d in files if d.label == label).make()


def test_the_zip_is_the_grades_own_whatever_assignment_the_caller_passes(graded):
    ws, a = graded
    other = ws.load("py-functions")  # the picker reset to another assignment
    reports = _reports(ws, a)
    store = ws.store
    right = _made(downloads(reports, a.title, a.name, a.rubric, store=store), ZIP)
    wrong = _made(downloads(reports, other.title, other.name, other.rubric, store=store), ZIP)
    blind = _made(downloads(reports, other.title, other.name, None, store=store), ZIP)
    assert _members(wrong) == _members(right) == _members(blind)
    # and it is the letter Review always made: the assignment's rubric and notebooks
    notebooks = {r.sha256: store.get_file(r.sha256) for r in reports}
    assert _members(right) == _members(feedback_zip(reports, a.title, a.rubric, notebooks))
    # the Grade page's old ZIP (no rubric) was another letter, even under the right title
    assert _members(right) != _members(feedback_zip(reports, a.title, None, notebooks))
    text = b"".join(v for k, v in _members(wrong).items() if k.endswith(".md")).decode()
    assert a.title in text
    assert other.title not in text


def test_the_canvas_title_is_the_grades_assignment(graded):
    ws, a = graded
    other = ws.load("py-functions")
    canvas = _made(downloads(_reports(ws, a), other.title, other.name, other.rubric,
                             store=ws.store), "Canvas CSV").decode()
    assert next(csv.reader(io.StringIO(canvas)))[-1] == a.title


def test_a_caller_rubric_serves_only_the_grades_of_that_version(graded):
    ws, a = graded
    other = ws.load("py-functions")
    r = _reports(ws, a)[0]
    bases = StoredBases(ws.store, rubric=other.rubric)
    assert bases(r).rubric == a.rubric  # from the store, by the grade's own version
    assert bases(r).title == a.rubric.title
    assert StoredBases(ws.store, titles={a.name: "Retail, fall term"}.get)(r).title == \
        "Retail, fall term"


def test_hidden_names_leave_the_file_hashes_out_of_the_json(graded):
    ws, a = graded
    reports = _reports(ws, a, anonymous=True)
    hashes = {r.sha256 for r in reports}
    assert all(len(h) == 64 for h in hashes)
    hidden = _made(downloads(reports, a.title, a.name, store=ws.store, hide_names=True),
                   "JSON").decode()
    assert [g["sha256"] for g in json.loads(hidden)] == ["", ""]
    assert not any(h in hidden for h in hashes)
    shown = _made(downloads(reports, a.title, a.name, store=ws.store), "JSON").decode()
    assert {g["sha256"] for g in json.loads(shown)} == hashes
    # the letters still find their notebooks: hiding the hashes changes the JSON only
    letters = _members(_made(downloads(reports, a.title, a.name, store=ws.store,
                                       hide_names=True), ZIP))
    assert letters == _members(_made(downloads(reports, a.title, a.name, store=ws.store), ZIP))


def test_every_file_writes_the_percentage_as_the_letter_does(graded):
    ws, a = graded
    reports = _reports(ws, a)
    files = downloads(reports, a.title, a.name, store=ws.store)
    rows = list(csv.DictReader(io.StringIO(_made(files, "Grades CSV").decode())))
    letters = _members(_made(files, ZIP))
    for r, row in zip(reports, rows, strict=True):
        md = letters[f"feedback/{r.display_name}.md"].decode()
        assert f"({row['percent']}%)" in md
        assert "." not in row["percent"]
