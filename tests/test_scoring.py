"""Scoring rules: bounded, monotonic, hard-coded outputs, crashed layers go to review."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.rubric import Check, Criterion, Rubric
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
