"""Scoring rules: bounded, monotonic, hard-coded outputs, crashed layers go to review."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.rubrics.check_fields import Check
from grader.rubrics.schema import Criterion, Rubric
from grader.scoring import build_report, score_criterion
from grader.types import CheckResult, LayerResult

CRIT = Criterion(
    "rev",
    "Revenue",
    "code",
    6.0,
    (
        Check("assigns", 0.2, names=("revenue",)),
        Check("calls", 0.2, functions=("groupby",)),
        Check("output", 0.6, variable="revenue", compare=("shape", "values")),
    ),
)


def layers_with(s1: float, s2: float, s3: float, l2_error: str = "") -> dict[str, LayerResult]:
    l1 = LayerResult(
        "L1",
        checks=[
            CheckResult("rev", "assigns", "revenue", s1, 0.2, "L1", "m"),
            CheckResult("rev", "calls", "groupby", s2, 0.2, "L1", "m"),
        ],
    )
    l2 = (
        LayerResult("L2", error=l2_error)
        if l2_error
        else LayerResult("L2", checks=[CheckResult("rev", "output", "revenue", s3, 0.6, "L2", "m")])
    )
    return {"L1": l1, "L2": l2}


unit = st.floats(0, 1)


@settings(max_examples=300, deadline=None)
@given(a=st.tuples(unit, unit, unit), b=st.tuples(unit, unit, unit))
def test_points_are_bounded_and_monotonic(a, b):
    lo = tuple(min(x, y) for x, y in zip(a, b, strict=True))
    hi = tuple(max(x, y) for x, y in zip(a, b, strict=True))
    p_lo = score_criterion(CRIT, layers_with(*lo)).points
    p_hi = score_criterion(CRIT, layers_with(*hi)).points
    assert 0 <= p_lo <= p_hi <= CRIT.points


def test_weights_give_the_points():
    r = score_criterion(CRIT, layers_with(1, 0, 0.5))
    assert r.points == pytest.approx(6 * (0.2 + 0.6 * 0.5))
    assert not r.needs_review


def test_crashed_layer_sends_criterion_to_review_without_inventing_points():
    r = score_criterion(CRIT, layers_with(1, 1, 1, l2_error="RuntimeError: kernel died"))
    assert r.points == pytest.approx(6 * 0.4)  # only what L1 established
    assert r.needs_review
    assert "kernel died" in r.review_reasons[0]


def test_skipped_check_goes_to_review():
    layers = layers_with(1, 1, 0)
    layers["L2"].checks[0] = CheckResult(
        "rev", "output", "revenue", 0, 0.6, "L2", "not checked: no r kernel", status="skipped"
    )
    r = score_criterion(CRIT, layers)
    assert r.needs_review
    assert "no r kernel" in r.review_reasons[0]


def test_hardcoded_output_scores_zero():
    layers = layers_with(1, 1, 1)
    layers["L1"].details["hardcoded"] = ["revenue"]
    r = score_criterion(CRIT, layers)
    assert r.points == pytest.approx(6 * 0.4)
    assert "hard-coded" in r.checks[2].message


def test_report_totals():
    rubric = Rubric("T", "python", 6.0, (CRIT,))
    report = build_report(rubric, "a.ipynb", "abc", "demo", layers_with(1, 1, 1))
    assert report.score == 6.0
    assert report.max_score == 6.0
    assert report.status == "graded"
    assert report.needs_review == []


# -- reconciliation with the model layers ------------------------------------------
from grader.scoring import reconcile  # noqa: E402
from grader.types import CriterionResult  # noqa: E402


def crit(kind: str, points: float, max_points: float = 4.0) -> CriterionResult:
    return CriterionResult("c", "C", kind, max_points, points)


def model_layer(name: str, item: dict, advisory: bool = False, error: str = "") -> dict:
    return {name: LayerResult(name, error=error,
                              details={"output": {"c": item}, "advisory": advisory})}


@pytest.mark.parametrize(("points", "verdict", "review"), [
    (4.0, "not met", True),   # the model contradicts full marks: a person looks
    (0.0, "met", True),       # the model says met, the checks found nothing: never raised
    (4.0, "met", False),
    (2.0, "partial", False),
])
def test_code_verdicts_never_move_points(points, verdict, review):
    c = crit("code", points)
    reconcile(c, model_layer("L3", {"verdict": verdict, "cells": [], "issue": "x"}), False)
    assert c.points == points
    assert c.needs_review is review
    assert c.model_notes["verdict"] == verdict


@pytest.mark.parametrize(("points", "score", "expected", "review"), [
    (4.0, 0.6, 2.4, False),  # answered in full: the model judges quality, within its band
    (4.0, 1.0, 4.0, False),  # it confirms
    (4.0, 0.4, 2.0, True),   # further below than the band: the band's edge, and review
    (4.0, 0.0, 2.0, True),
    (0.0, 1.0, 0.0, False),  # unanswered stays 0 whatever the model says
    (2.0, 0.9, 2.0, False),  # short answer capped at its word share
    (1.0, 1.0, 1.0, True),   # a model far above a short answer's share never lifts it
    (2.0, 0.25, 1.0, False),
])
def test_written_scores_stay_inside_deterministic_bounds(points, score, expected, review):
    c = crit("written", points)
    reconcile(c, model_layer("L4", {"score": score, "strength": "s", "improve": "i",
                                    "next_step": "n"}), False)
    assert c.points == pytest.approx(expected)
    assert c.points <= points
    assert c.needs_review is review
    if review:
        assert "disagrees with what the checks gave" in c.review_reasons[-1]


@pytest.mark.parametrize("points", [0.5, 1.0, 2.0, 3.0, 4.0])
def test_a_higher_judgement_never_scores_lower(points):
    """The points only rise with the model's score, so a judgement talked up or down by
    the student's text can never help them past the band: monotone, bounded by the share."""
    got = []
    for score in [i / 20 for i in range(21)]:
        c = crit("written", points)
        reconcile(c, model_layer("L4", {"score": score, "strength": "s", "improve": "i",
                                        "next_step": "n"}), False)
        got.append(c.points)
    assert got == sorted(got)
    assert max(got) == pytest.approx(points)
    assert min(got) == pytest.approx(max(0.0, points - 2.0))  # the band: half of 4 points


def test_advisory_model_moves_nothing():
    c = crit("written", 4.0)
    reconcile(c, model_layer("L4", {"score": 0.1, "strength": "s", "improve": "i",
                                    "next_step": "n"}, advisory=True), False)
    assert c.points == 4.0
    assert not c.needs_review
    assert c.model_notes["score"] == "0.10"


def test_failed_model_layer_keeps_points_and_asks_for_review():
    c = crit("code", 3.0)
    reconcile(c, model_layer("L3", {}, error="OutputValidationError: bad"), False)
    assert c.points == 3.0
    assert c.needs_review


def test_injection_sends_judged_criteria_to_review():
    c = crit("code", 4.0)
    reconcile(c, model_layer("L3", {"verdict": "met", "cells": [], "issue": ""}), True)
    assert c.needs_review
    assert "aimed at the grader" in c.review_reasons[-1]
