"""The re-score preview as the instructor reads it: the students who move, by how much, in
points and in percent of the total (the total may change too)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import pytest

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from grader.rubrics.schema import Rubric
from grader.service.batch import grade_batch
from grader.service.movers import mover_rows, movers, movers_summary, score_text, unmoved_line
from grader.service.rescore import RescorePreview, RescoreRow, preview_rescore
from grader.store.database import Store

RETAIL = Path(__file__).resolve().parents[1] / "examples" / "retail-sales"


def row(gid: int, name: str, old: float | None, new: float | None, old_max: float = 20,
        new_max: float = 20, **kw) -> RescoreRow:
    return RescoreRow(gid, name, old, new, old_max, new_max, **kw)


def preview(*rows: RescoreRow) -> RescorePreview:
    return RescorePreview("a", "b", rows, (), 0.1)


def test_score_text_rounds_as_a_person_reads_it():
    assert score_text(31.5, 37.5) == "31.5 / 37.5 (84%)"
    assert score_text(33, 40) == "33 / 40 (83%)"  # 82.5 rounds up
    assert score_text(10, 19, 1) == "10 / 19 (52.6%)"
    assert score_text(2 / 3, 1) == "0.67 / 1 (67%)"
    assert score_text(0, 0) == "0 / 0"


def test_the_total_changes_too_so_both_points_and_percent_are_shown():
    (m,) = movers(preview(row(1, "student001", 31.5, 33, 37.5, 40)))
    assert (m.before, m.after) == ("31.5 / 37.5 (84%)", "33 / 40 (83%)")
    assert m.points == 1.5
    assert m.percent == -1.5
    assert m.change == "+1.5 points, -1.5 percentage points"


def test_movers_are_sorted_by_the_size_of_the_change():
    p = preview(row(1, "small", 10, 11), row(2, "big-down", 18, 12), row(3, "still", 5, 5),
                row(4, "big-up", 4, 9), row(5, "lost", 7, None, problem="not stored"))
    assert [m.name for m in movers(p)] == ["big-down", "big-up", "small"]
    assert movers(p)[0].change == "-6 points, -30 percentage points"
    assert unmoved_line(p) == "1 student does not move: still."
    assert movers_summary(p) == "3 of 5 graded students would move; 1 could not be re-scored."


def test_a_move_in_percent_alone_is_a_move():
    """Points unchanged, total raised: the student's percentage falls."""
    (m,) = movers(preview(row(1, "student001", 10, 10, 19, 20), row(2, "zero", 0, 0, 19, 20)))
    assert m.name == "student001"
    assert m.change == "no change in points, -2.6 percentage points"
    assert (m.before, m.after) == ("10 / 19 (53%)", "10 / 20 (50%)")
    (small,) = movers(preview(row(1, "student001", 10, 10, 20, 20.1)))
    assert (small.before, small.after) == ("10 / 20 (50.0%)", "10 / 20.1 (49.8%)")  # 1 decimal
    assert small.change == "no change in points, -0.2 percentage points"


def test_a_criterion_move_that_nets_out_is_listed():
    p = preview(row(1, "student001", 10, 10, moved=("q1: 1 -> 2", "q2: 1 -> 0")))
    (m,) = movers(p)
    assert m.change == "no change in points, no change in percentage points"
    assert m.criteria == "q1: 1 -> 2; q2: 1 -> 0"


def test_unmoved_line_lists_a_few_names_and_counts_the_rest():
    p = preview(*[row(i, f"student{i:03d}", 5, 5) for i in range(1, 12)])
    assert movers(p) == []
    line = unmoved_line(p, limit=3)
    assert line == "11 students do not move: student001, student002, student003 and 8 more."
    assert unmoved_line(preview(row(1, "a", 1, 2))) == ""


def test_overrides_column_only_when_a_grade_has_overrides():
    plain = mover_rows(preview(row(1, "a", 10, 12)))
    assert list(plain[0]) == ["student", "before", "after", "change", "criteria that move"]
    with_o = mover_rows(preview(row(1, "a", 10, 12, overrides=("q1: 0 -> 1 (ok; me)",),
                                    current_score=11, carried_score=13), row(2, "b", 4, 6)))
    assert with_o[0]["with your overrides"] == "11 -> 13 / 20 (65%)"
    assert with_o[1]["with your overrides"] == ""


# -- over real grades ---------------------------------------------------------------------
@pytest.fixture
def graded(tmp_path):
    a = load_assignment(RETAIL)
    stems = ["complete", "partial", "template_only"]
    items = [GradeInput(f"{s}.ipynb", (RETAIL / "submissions" / f"{s}.ipynb").read_bytes(),
                        f"student{i:03d}", f"student{i:03d}") for i, s in enumerate(stems, 1)]
    store = Store(tmp_path / "grader.db")
    grade_batch(Grader(a, GradeOptions(execute=False, use_llm=False)), items, store)
    yield store, a
    store.close()


def raised(r: Rubric, cid: str, points: float) -> Rubric:
    crits = tuple(dataclasses.replace(c, points=points) if c.id == cid else c
                  for c in r.criteria)
    return dataclasses.replace(r, criteria=crits, total_points=math.fsum(c.points
                                                                          for c in crits))


def test_movers_over_real_grades_show_old_and_new_totals(graded):
    store, a = graded
    p = preview_rescore(store, a, raised(a.rubric, "load-data", 12))  # 20 -> 30 points
    moves = movers(p)
    by_name = {m.name: m for m in moves}
    assert set(by_name) == {"student001", "student002"}  # the template earns nothing
    for m in moves:
        assert " / 20 (" in m.before
        assert " / 30 (" in m.after
        assert m.points > 0
    assert [abs(m.percent) for m in moves] == sorted((abs(m.percent) for m in moves),
                                                     reverse=True)
    assert unmoved_line(p) == "1 student does not move: student003."
    assert movers_summary(p) == "2 of 3 graded students would move."


def test_movers_are_pseudonymised_when_names_are_hidden(graded):
    store, a = graded
    p = preview_rescore(store, a, raised(a.rubric, "load-data", 12), anonymous=True)
    names = {m.name for m in movers(p)} | {r["student"] for r in mover_rows(p)}
    assert names
    assert all(n.startswith("Student ") for n in names)
    assert "student003" not in unmoved_line(p)
