"""An old rubric's parts shared out in proportion at the old rubric's own step
(grader.rubrics.import_points), and the import report saying how
(grader.rubrics.import_formats)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.rubrics.import_points import apportion, file_step, own_step
from grader.rubrics.import_seed import import_seed_rubric

OLD = Path(__file__).resolve().parents[2] / "shared" / "course-r" / "old-rubrics"


def test_the_old_rubric_s_step_is_the_coarsest_its_points_fit():
    assert own_step([5, 12, 40]) == 1.0
    assert own_step([2.5, 1.25, 5]) == 0.25
    assert own_step([0.67, 2.0]) == 0.01
    assert file_step({"a": {"points": 1.5, "x": [{"max_points": 3}]}, "total_points": 10}) == 0.5


def test_whole_points_that_cannot_share_in_proportion_give_tenths_not_hundredths():
    """Issue 33: 45 points of parts inside a category of 40 read 4.44, 2.66, 1.77, 0.89."""
    raw = [5.0] + [3.0] * 4 + [2.0] * 12 + [1.0] * 4
    shares = apportion(raw, 40.0, 1.0)
    assert sorted(set(shares.points), reverse=True) == [4.4, 2.6, 1.8, 0.9]
    assert sum(shares.points) == pytest.approx(40)
    assert shares.step == 0.1
    assert shares.words(1.0, 40.0) == (
        "rounded to tenths of a point (4.4, 2.6, 1.8, 0.9): whole points, the old rubric's "
        "step, cannot share 40 points in proportion")


def test_the_old_step_is_kept_where_it_can_be_and_parts_that_add_up_are_left_alone():
    shares = apportion([10.0, 20.0, 30.0], 30.0, 1.0)
    assert (shares.points, shares.step) == ([5.0, 10.0, 15.0], 1.0)
    assert shares.words(1.0, 30.0).endswith("as the old rubric writes its points")
    same = apportion([2.5, 7.5], 10.0, 0.5)
    assert (same.points, same.scaled, same.words(0.5, 10.0)) == ([2.5, 7.5], False, "")


def test_equal_parts_that_cannot_be_equal_say_so():
    shares = apportion([5.0, 5.0, 5.0], 10.0, 1.0)
    assert sorted(shares.points) == [3.33, 3.33, 3.34]
    assert not shares.even
    assert "cannot share 10 points equally" in shares.words(1.0, 10.0)


@given(st.lists(st.integers(1, 12), min_size=1, max_size=12), st.integers(1, 60),
       st.sampled_from([1.0, 0.5, 0.25]))
def test_shares_add_up_keep_order_and_stay_above_zero(raw, target, step):
    shares = apportion([float(r) for r in raw], float(target), step).points
    assert sum(shares) == pytest.approx(target, abs=1e-6)
    for a, pa in zip(raw, shares, strict=True):
        assert pa > 0
        for b, pb in zip(raw, shares, strict=True):
            if a > b:
                assert pa >= pb
            if a == b:
                assert abs(pa - pb) <= 0.01 + 1e-9


@pytest.mark.skipif(not OLD.is_dir(), reason="the course's old rubrics are not here")
def test_the_imported_joins_rubric_reads_in_tenths_and_the_report_says_so():
    data = json.loads((OLD / "assignment_6_rubric.json").read_text(encoding="utf-8"))
    report = import_seed_rubric(data, "r", "assignment_6_rubric.json")
    points = {c.points for c in report.rubric.criteria}
    assert {4.4, 2.6, 1.8, 0.9} <= points
    assert not points & {4.44, 2.67, 2.66, 1.78, 1.77, 0.89}
    assert report.rubric.total_points == 100
    (joins,) = [r for r in report.rows if r.item.startswith("Join operations: its parts'")]
    assert "rounded to tenths of a point (4.4, 2.6, 1.8, 0.9)" in joins.imported_as
    (tasks,) = [r for r in report.rows if r.item.startswith("Part 2: Four basic join types")
                and "tasks' points" in r.item]
    assert "2.6 points a task" in tasks.imported_as
