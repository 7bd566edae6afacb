"""Grades that must not go wrong: overrides carried through a regrade, one grade per
student in force and in exports, one job per piece of work, notebooks of another
assignment named."""

from __future__ import annotations

import csv
import dataclasses
import io
from pathlib import Path

import pytest

from grader.analysis.template import match_template
from grader.assignment import load_assignment
from grader.integrity.template_fit import template_fit
from grader.layers.base import GradeOptions
from grader.notebooks.load import load_notebook
from grader.rubrics.schema import with_criteria
from grader.service.jobs import start_grading, start_regrading
from grader.service.rescore import preview_rescore
from grader.service.review import (
    ReviewFilter,
    export_ids,
    find_grades,
    in_force,
    regrade_not_carried,
    regrade_rows,
)
from grader.service.workspace import Upload, Workspace
from grader.views.reports import downloads

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
SUBS = EXAMPLES / "retail-sales" / "submissions"
NO_EXEC = GradeOptions(execute=False)



def _up(kind: str, name: str) -> Upload:
    return Upload(name, (SUBS / f"{kind}.ipynb").read_bytes())


def _done(job):
    while not job.finished:
        job.wait(-1, timeout=1)
    assert job.result.error == "", job.result.error
    return job


def _points(report, criterion_id: str) -> float:
    return next(c.points for c in report.criteria if c.id == criterion_id)


def _edit(ws: Workspace, points: dict[str, float], drop: tuple[str, ...] = ()) -> str:
    """Save an edited retail-sales rubric (criteria's points, some removed); its version."""
    rubric = ws.load("retail-sales").rubric
    criteria = [dataclasses.replace(c, points=points.get(c.id, c.points))
                for c in rubric.criteria if c.id not in drop]
    return ws.save_rubric("retail-sales", with_criteria(rubric, criteria), "edited").version


def test_a_regrade_carries_overrides_capped_and_names_those_it_cannot(ws: Workspace):
    job = _done(start_grading(ws, "retail-sales", [_up("partial", "student043.ipynb")],
                              NO_EXEC, None))
    (old,) = job.result.grade_ids
    assert _points(ws.store.get_report(old), "monthly-trend") == 0
    trend = ws.store.override(old, "monthly-trend", 3.0, "plot checked by hand", "instructor-a")
    ws.store.override(old, "q2-trend-products", 2.0, "answered in a comment", "instructor-a")
    version = _edit(ws, {"monthly-trend": 2.0}, drop=("q2-trend-products",))

    again = _done(start_regrading(ws, [old], NO_EXEC, None))
    (new,) = again.result.grade_ids
    assert new != old
    (carried,) = ws.store.overrides(new)
    assert (carried.criterion_id, carried.new_points, carried.carried_from) == (
        "monthly-trend", 2.0, trend.id)  # capped at the criterion's new 2 points
    assert (carried.reason, carried.who, carried.at) == (trend.reason, trend.who, trend.at)
    assert f"carried from grade {old}" in carried.note
    assert "capped at 2 points" in carried.note
    auto = ws.store.get_report(new, overrides=False)
    grade = ws.store.get_grade(new)
    assert grade.rubric_version == version
    assert grade.score == pytest.approx(auto.score - _points(auto, "monthly-trend") + 2)
    assert grade.overrides == 1
    (lost,) = regrade_not_carried(ws.store, again.result)
    assert "q2-trend-products" in lost
    assert f"is not in rubric {version}" in lost
    (row,) = regrade_rows(ws.store, again.result)
    assert (row["overrides carried"], row["overrides not carried"]) == (1, "q2-trend-products")

    _done(start_regrading(ws, [old], NO_EXEC, None))  # again: nothing carried twice
    assert len(ws.store.overrides(new)) == 1
    mine = ws.store.override(new, "monthly-trend", 1.0, "second look", "instructor-b")
    _done(start_regrading(ws, [old], NO_EXEC, None))  # an override of the new grade stays
    assert ws.store.overrides(new)[-1] == mine
    assert _points(ws.store.get_report(new), "monthly-trend") == 1.0


def test_the_preview_shows_the_score_a_regrade_would_give_with_overrides(ws: Workspace):
    job = _done(start_grading(ws, "retail-sales", [_up("partial", "student043.ipynb")],
                              NO_EXEC, None))
    (gid,) = job.result.grade_ids
    ws.store.override(gid, "monthly-trend", 3.0, "plot checked by hand", "instructor-a")
    ws.store.override(gid, "q2-trend-products", 2.0, "answered in a comment", "instructor-a")
    a = ws.load("retail-sales")
    criteria = [dataclasses.replace(c, points=2.0) if c.id == "monthly-trend" else c
                for c in a.rubric.criteria if c.id != "q2-trend-products"]
    (row,) = preview_rescore(ws.store, a, with_criteria(a.rubric, criteria)).rows
    assert row.carried_score == pytest.approx(row.new_score + 2.0)  # capped: 2, not 3
    (lost,) = row.lost
    assert lost.startswith("q2-trend-products: 0 -> 2")


def test_one_grade_per_student_in_force_and_in_exports(ws: Workspace):
    first = _done(start_grading(ws, "retail-sales", [_up("complete", "student042.ipynb"),
                                                     _up("partial", "student043.ipynb")],
                                NO_EXEC, None))
    aid = ws.assignment_id("retail-sales")
    v1 = ws.load("retail-sales").rubric.version
    v2 = _edit(ws, {"load-data": 4.0})
    only_042 = _done(start_regrading(ws, first.result.grade_ids[:1], NO_EXEC, None))
    (new_042,) = only_042.result.grade_ids

    now = in_force(ws.store, aid, v2)
    assert [g.id for g in now.grades] == [new_042]
    assert [(g.student_id, g.rubric_version) for g in now.missing] == [("student043", v1)]
    every = find_grades(ws.store, aid, ReviewFilter())
    assert len(every) == 3  # older versions stay in the store
    shown = find_grades(ws.store, aid, ReviewFilter(rubric_version=v2, in_force=True))
    assert [g.id for g in shown] == [new_042]
    assert export_ids(ws.store, aid, every, v2) == [new_042]  # one per student, one version

    # a second notebook of the same student, graded later: it is the one in force
    later = _done(start_grading(ws, "retail-sales", [_up("hardcoded", "student042_v2.ipynb")],
                                NO_EXEC, None))
    ws.store.set_display_name(ws.store.get_grade(later.result.grade_ids[0]).submission_id,
                              "student042")
    every = find_grades(ws.store, aid, ReviewFilter())
    assert len(every) == 4
    anonymous = in_force(ws.store, aid, v2, anonymous=True)
    assert len(anonymous.grades) == 2  # student042_v2 has its own id: another student
    assert all(g.student_id == "" for g in anonymous.grades + anonymous.missing)

    reports = [ws.store.get_report(i) for i in export_ids(ws.store, aid, every, v2)]
    canvas = list(csv.reader(io.StringIO(next(
        d for d in downloads(reports, "Retail", "retail") if d.label == "Canvas CSV").make(
    ).decode())))
    assert canvas[1][-1] == "22"  # Points Possible: the rubric in force
    students = [row[1] for row in canvas[2:]]
    assert sorted(students) == ["student042", "student042_v2"]  # each once


def test_regrading_a_students_two_versions_grades_the_notebook_once(ws: Workspace):
    first = _done(start_grading(ws, "retail-sales", [_up("complete", "student042.ipynb")],
                                NO_EXEC, None))
    _edit(ws, {"load-data": 4.0})
    second = _done(start_regrading(ws, first.result.grade_ids, NO_EXEC, None))
    both = first.result.grade_ids + second.result.grade_ids
    _edit(ws, {"load-data": 6.0})
    third = _done(start_regrading(ws, both, NO_EXEC, None))
    assert len(third.result.before) == 1
    (batch, *_) = ws.store.batches(ws.assignment_id("retail-sales"))
    assert (batch.total, batch.status) == (1, "done")


def test_the_same_work_asked_twice_is_one_job_and_one_batch(ws: Workspace):
    ups = [_up("complete", "student042.ipynb"), _up("partial", "student043.ipynb")]
    one = start_grading(ws, "retail-sales", ups, NO_EXEC, None)
    two = start_grading(ws, "retail-sales", ups[::-1], NO_EXEC, None)  # a second click
    assert two is one
    _done(one)
    aid = ws.assignment_id("retail-sales")
    assert len(ws.store.batches(aid)) == 1
    regrade = start_regrading(ws, one.result.grade_ids, NO_EXEC, None)
    assert start_regrading(ws, one.result.grade_ids[::-1], NO_EXEC, None) is regrade
    other = start_grading(ws, "retail-sales", ups, dataclasses.replace(NO_EXEC, use_llm=False),
                          None)
    assert other is not regrade  # other work
    _done(other)
    _done(regrade)
    last = start_grading(ws, "retail-sales", ups, NO_EXEC, None)
    assert last is not one  # once it ended, the same files make a new job
    _done(last)


@pytest.mark.parametrize("assignment", ["retail-sales", "r-joins", "r-strings-dates"])
def test_template_fit_tells_notebooks_of_another_assignment(assignment: str):
    a = load_assignment(EXAMPLES / assignment)
    template = load_notebook(a.template)
    for folder in ("retail-sales", "r-joins", "r-strings-dates"):
        for path in sorted((EXAMPLES / folder / "submissions").glob("*.ipynb")):
            nb = dataclasses.replace(load_notebook(path.read_bytes(), path.name),
                                     language=a.language)
            fit = template_fit(template, nb, match_template(template, nb,
                                                            a.rubric.all_placeholders))
            assert fit.unlike == (folder != assignment), (path, fit)


def test_a_notebook_of_another_assignment_is_named_after_grading(ws: Workspace):
    strings = EXAMPLES / "r-strings-dates" / "submissions" / "complete.ipynb"
    joins = EXAMPLES / "r-joins" / "submissions" / "complete.ipynb"
    job = _done(start_grading(ws, "r-joins", [Upload("student042.ipynb", strings.read_bytes()),
                                              Upload("student043.ipynb", joins.read_bytes())],
                              NO_EXEC, None))
    ((gid, why),) = job.result.unlike
    assert ws.store.get_grade(gid).student_id == "student042"
    assert "is it a notebook of another assignment?" in why
    assert "unlike_template" in {f.code for f in ws.store.get_report(gid).flags}
