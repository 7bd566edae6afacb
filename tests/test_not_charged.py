"""Scoring rule 3b: a check the instructor's own solution fails is not charged."""

from __future__ import annotations

import pytest

from grader.rubrics.check_fields import Check
from grader.rubrics.schema import Criterion
from grader.scoring import score_criterion
from grader.types import CheckResult, LayerResult

CRIT = Criterion("c", "Part", "code", 10.0, (
    Check("test", 0.5, name="t1", code="assert x == 1"),
    Check("test", 0.25, name="t2", code="assert y == 2"),
    Check("calls", 0.25, functions=("mean",)),
))


def layers(t1: tuple[float, str], t2: tuple[float, str], calls: float) -> dict[str, LayerResult]:
    return {
        "L1": LayerResult("L1", checks=[CheckResult("c", "calls", "mean", calls, 0.25, "L1",
                                                    "called")]),
        "L2": LayerResult("L2", checks=[
            CheckResult("c", "test", "t1", t1[0], 0.5, "L2", "m1", status=t1[1]),  # type: ignore[arg-type]
            CheckResult("c", "test", "t2", t2[0], 0.25, "L2", "m2", status=t2[1]),  # type: ignore[arg-type]
        ]),
    }


def test_a_check_the_solution_fails_is_left_out_and_the_rest_scale_up():
    out = score_criterion(CRIT, layers((0.0, "environment"), (1.0, "ok"), 1.0))
    assert out.points == pytest.approx(10.0)  # t2 and calls: all of what is charged
    assert out.needs_review
    assert any("m1" in r for r in out.review_reasons)


def test_the_charged_checks_still_decide():
    out = score_criterion(CRIT, layers((0.0, "environment"), (0.0, "ok"), 1.0))
    assert out.points == pytest.approx(5.0)  # calls (0.25) of the 0.5 charged


def test_an_error_still_costs_until_review_and_nothing_charged_scores_0():
    error = score_criterion(CRIT, layers((0.0, "error"), (1.0, "ok"), 1.0))
    assert error.points == pytest.approx(5.0)
    crit = Criterion("c", "Part", "code", 10.0, (Check("test", 1.0, name="t1", code="x"),))
    only = {"L2": LayerResult("L2", checks=[
        CheckResult("c", "test", "t1", 0.0, 1.0, "L2", "m", status="environment")])}
    alone = score_criterion(crit, only)
    assert alone.points == 0
    assert alone.needs_review


def test_every_check_ok_is_unchanged():
    out = score_criterion(CRIT, layers((1.0, "ok"), (0.0, "ok"), 1.0))
    assert out.points == pytest.approx(7.5)
    assert not out.needs_review
