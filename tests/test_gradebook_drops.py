"""A wrong upload cannot stay in the gradebook (issue 33): a grade dropped with who, when
and why (grader.store.drops) leaves every listing and export; "not graded" is never
exported as 0 unless asked (grader.exports.formats); what to know before an export is
said (grader.views.export_choices); and what the store holds is counted as an instructor
counts it (grader.service.shelf)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.errors import StoreError
from grader.exports.formats import canvas_csv, not_graded, plain_csv
from grader.service.results import results_in_force
from grader.service.review import Listing
from grader.service.shelf import grades_held
from grader.store.database import Store
from grader.types import Flag
from grader.views.export_choices import canvas_id_line, not_graded_line, not_graded_rows
from grader.views.labels import across, assignment_label, criterion_labels
from tests.test_store import make_report

WRONG = Flag("unlike_template", "the notebook has little in common with the template")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "grader.db")
    yield s
    s.close()


def _grade(store: Store, aid: int, version: str, sha: str, student: str, **kw) -> int:
    rv = store.add_rubric_version(aid, version, "{}")
    sub = store.add_submission(aid, sha, f"{student}.ipynb", student, student)
    report = make_report(sha, version, file=f"{student}.ipynb", **kw)
    return store.save_grade(sub, rv, report)


def test_a_dropped_grade_leaves_the_gradebook_and_the_earlier_one_is_in_force(store):
    aid = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
    earlier = _grade(store, aid, "v1", "a" * 64, "12345")
    wrong = _grade(store, aid, "v1", "b" * 64, "12345", points=(0.0, 0.0))  # a wrong upload
    other = _grade(store, aid, "v1", "c" * 64, "12346")
    before = Listing.read(store, aid).in_force("v1")
    assert [g.id for g in before.grades] == [wrong, other]  # the newest of student 12345

    entry = store.drop_grade(wrong, "  another assignment's notebook ", "instructor-a")
    assert (entry.action, entry.reason, entry.who) == ("drop", "another assignment's notebook",
                                                       "instructor-a")
    listing = Listing.read(store, aid, anonymous=True)
    assert wrong not in {g.id for g in listing.real} | {g.id for g in listing.shown}
    assert [g.id for g in listing.in_force("v1").grades] == [earlier, other]
    assert listing.export_ids(listing.shown, "v1") == [earlier, other]
    assert [gid for gid, _ in results_in_force(store, [wrong, other]).graded] == [earlier, other]
    assert list(store.dropped(aid)) == [wrong]
    assert store.get_grade(wrong).id == wrong  # kept in the store, with its report

    with pytest.raises(StoreError, match="dropped already"):
        store.drop_grade(wrong, "again")
    with pytest.raises(StoreError, match="needs a reason"):
        store.restore_grade(wrong, "  ")
    with pytest.raises(StoreError, match="not dropped"):
        store.restore_grade(other, "by mistake")
    store.restore_grade(wrong, "it was the right notebook after all", "instructor-b")
    assert store.dropped(aid) == {}
    assert [e.action for e in store.drop_trail(wrong)] == ["drop", "restore"]
    assert wrong in {g.id for g in Listing.read(store, aid).real}


def test_the_trail_of_drops_survives_a_regrade_of_the_same_file(store):
    aid = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
    gid = _grade(store, aid, "v1", "a" * 64, "12345")
    store.drop_grade(gid, "wrong file")
    again = _grade(store, aid, "v1", "a" * 64, "12345")  # the same content and version
    assert again == gid  # replaced in place: still dropped
    assert list(store.dropped(aid)) == [gid]


def test_not_graded_is_blank_in_the_gradebook_unless_asked(store):
    wrong = make_report("b" * 64, points=(0.0, 0.0), file="12345.ipynb")
    wrong.flags.append(WRONG)
    wrong.student_id = "12345"
    unreadable = make_report("c" * 64, status="error", file="12346.ipynb")
    fine = make_report("d" * 64, points=(3.0, 2.5), file="12347.ipynb")
    zero = make_report("e" * 64, points=(0.0, 0.0), file="12348.ipynb")  # graded: a real 0
    assert [not_graded(r) for r in (wrong, unreadable, fine, zero)] == [True, True, False,
                                                                         False]
    rows = list(csv.reader(io.StringIO(canvas_csv([wrong, unreadable, fine, zero], "HW 1"))))
    assert [r[5] for r in rows[2:]] == ["", "", "5.5", "0"]
    asked = list(csv.reader(io.StringIO(canvas_csv([wrong, unreadable], "HW 1", True))))
    assert [r[5] for r in asked[2:]] == ["0", "0"]
    plain = list(csv.DictReader(io.StringIO(plain_csv([wrong, fine]))))
    assert [(r["status"], r["score"]) for r in plain] == [("not graded", ""), ("graded", "5.5")]
    overridden = make_report("f" * 64, points=(2.0, 0.0))  # the instructor gave it points
    overridden.flags.append(WRONG)
    assert not not_graded(overridden)


def test_before_an_export_the_page_names_what_is_not_graded_and_ids_canvas_cannot_match(
        store):
    aid = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
    _grade(store, aid, "v1", "a" * 64, "12345")
    _grade(store, aid, "v1", "b" * 64, "student042", points=(0.0, 0.0),
           flags=("unlike_template",))
    rows = store.list_grades(aid)
    assert [g.student_id for g in not_graded_rows(rows)] == ["student042"]
    line = not_graded_line(rows, as_zero=False)
    assert line.startswith("1 notebook was not graded (unreadable, or another assignment's "
                           "notebook): student042. ")
    assert "leave them blank, never 0" in line
    assert "give them 0, as you asked" in not_graded_line(rows, as_zero=True)
    assert not_graded_line(rows[:1], as_zero=False) == ""

    ids = canvas_id_line(["12345", "student042"], ["a_12345_1_hw.ipynb", "student042.ipynb"])
    assert ids.startswith("1 of 2 rows of the Canvas CSV carries no Canvas user id: its ID "
                          "column holds a name taken from the file (student042.ipynb)")
    assert canvas_id_line(["12345"], ["x"]) == ""
    assert canvas_id_line(["a", "b"], ["a.ipynb", "b.ipynb"]).startswith(
        "All 2 rows of the Canvas CSV carry no Canvas user id: their ID column")
    assert canvas_id_line(["a"], ["a.ipynb"]).startswith("The one row of the Canvas CSV carries")


def test_the_store_s_grades_are_counted_by_student(store, tmp_path: Path):
    aid = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
    for i in range(10):
        _grade(store, aid, "v1", f"{i:064x}", f"s{i}")
    for i in range(6):  # six of them graded again under a new rubric version
        _grade(store, aid, "v2", f"{i:064x}", f"s{i}")

    class Ws:
        user_dir = tmp_path
        def __init__(self, s: Store) -> None:
            self.store = s

    held = grades_held(Ws(store), "hw1")
    assert held.words == "10 students, 16 grades with older rubric versions"
    assert grades_held(Ws(store), "nothing").words == "no grades"


def test_pages_name_assignments_and_criteria_alike():
    class Entry:
        name, title, language, bundled = "retail-sales", "Retail sales", "python", True

    assert assignment_label(Entry()) == "Retail sales (retail-sales, Python, example)"
    report = make_report("a" * 64, points=(1.0, 2.0, 3.0), review=(False,) * 3)
    report.criteria[0].id = "cell-938593c4a215c6cc"
    report.criteria[0].title = "Part E (4 points)"
    report.criteria[2].title = report.criteria[1].title
    labels = criterion_labels(report.criteria)
    assert labels == {"cell-938593c4a215c6cc": "Part E (4 points)",
                      "c2": "Criterion 2 [c2]", "c3": "Criterion 2 [c3]"}
    assert across("retail-sales", "student_001.ipynb") == "retail-sales/student_001.ipynb"
