"""Scoring rule 5: one early slip is charged once (``depends_on``).

Pure scoring over constructed layer results of a chain of three criteria
(load -> totals -> report); the bundled examples (tests/test_examples_grading.py)
show the same rule end to end on real runs, in Python and R."""

from __future__ import annotations

import pytest

from grader.rubrics.check_fields import Check
from grader.rubrics.schema import Criterion, Rubric
from grader.scoring import build_report, failed_criteria, upstream_of
from grader.types import CheckResult, Evidence, LayerResult

SEEN = (Evidence(None, None, "the student's value"),)

LOAD = Criterion("load", "Load", "code", 4.0, (
    Check("calls", 0.5, functions=("read_csv",)),
    Check("value", 0.5, expression="len(df)", expected=(100,)),
))
TOTALS = Criterion("totals", "Totals", "code", 6.0, (
    Check("calls", 0.25, functions=("groupby",)),
    Check("output", 0.75, variable="totals", compare=("type", "shape", "values"),
          partial=(("type", 0.2), ("shape", 0.3), ("values", 0.5)), depends_on=("load",)),
))
REPORT = Criterion("report", "Report", "code", 2.0, (
    Check("printed", 0.5, pattern="Best: North", depends_on=("totals",)),
    Check("plot", 0.5),
))
RUBRIC = Rubric("t", "python", 12.0, (LOAD, TOTALS, REPORT), schema_version=2)


def results(load_value: float, totals: CheckResult, printed: CheckResult) -> dict:
    return {
        "L1": LayerResult("L1", checks=[
            CheckResult("load", "calls", "read_csv", 1.0, 0.5, "L1", "called"),
            CheckResult("totals", "calls", "groupby", 1.0, 0.25, "L1", "called"),
        ]),
        "L2": LayerResult("L2", checks=[
            CheckResult("load", "value", "len(df)", load_value, 0.5, "L2", "len", SEEN),
            totals, printed,
            CheckResult("report", "plot", "a plot", 1.0, 0.5, "L2", "drawn"),
        ]),
    }


def totals(score: float, method: float | None, evidence=SEEN) -> CheckResult:
    return CheckResult("totals", "output", "totals", score, 0.75, "L2",
                       "type: ok; shape: ok; values: 4 differ", evidence, method_score=method)


def printed(score: float, evidence=SEEN) -> CheckResult:
    return CheckResult("report", "printed", "Best: North", score, 0.5, "L2", "nothing matches",
                       evidence)


def points(report) -> dict[str, float]:
    return {c.id: c.points for c in report.criteria}


def grade(layers):
    return build_report(RUBRIC, "s.ipynb", "0" * 64, "a", layers)


def test_the_slip_is_charged_where_it_happened_and_nowhere_after():
    report = grade(results(0.0, totals(0.5, 1.0), printed(0.0)))
    assert points(report) == {"load": 2.0, "totals": 6.0, "report": 2.0}
    totals_check = next(c for c in report.criteria if c.id == "totals").checks[1]
    assert "charged once: `load` failed upstream" in totals_check.message
    printed_check = next(c for c in report.criteria if c.id == "report").checks[0]
    assert "not charged" in printed_check.message  # transitively: load -> totals -> report
    assert "`load`" in printed_check.message


def test_without_a_slip_upstream_every_check_is_charged():
    report = grade(results(1.0, totals(0.5, 1.0), printed(1.0)))
    assert points(report) == {"load": 4.0, "totals": pytest.approx(6 * (0.25 + 0.75 * 0.5)),
                              "report": 2.0}
    report = grade(results(1.0, totals(1.0, 1.0), printed(0.0)))
    assert points(report) == {"load": 4.0, "totals": 6.0, "report": 1.0}


def test_the_method_still_counts_when_the_values_are_relieved():
    report = grade(results(0.0, totals(0.2, 0.4), printed(1.0)))
    # the method part (type ok, shape wrong: 0.2 of 0.5) is what totals is charged for
    assert points(report)["totals"] == pytest.approx(6 * (0.25 + 0.75 * 0.4))


def test_work_left_undone_is_charged_even_after_a_slip():
    undone = totals(0.0, None, evidence=())  # the variable was never created
    report = grade(results(0.0, undone, printed(0.0, evidence=())))
    assert points(report) == {"load": 2.0, "totals": 1.5, "report": 1.0}


def test_a_criterion_left_with_nothing_to_judge_goes_to_review():
    only = Criterion("only", "Only", "code", 3.0, (
        Check("value", 1.0, expression="total", depends_on=("load",)),))
    rubric = Rubric("t", "python", 7.0, (LOAD, only), schema_version=2)
    layers = {"L1": LayerResult("L1", checks=[
        CheckResult("load", "calls", "read_csv", 1.0, 0.5, "L1", "called")]),
        "L2": LayerResult("L2", checks=[
            CheckResult("load", "value", "len(df)", 0.0, 0.5, "L2", "len", SEEN),
            CheckResult("only", "value", "total", 0.0, 1.0, "L2", "total", SEEN)])}
    report = build_report(rubric, "s.ipynb", "0" * 64, "a", layers)
    crit = next(c for c in report.criteria if c.id == "only")
    assert crit.points == 0
    assert crit.needs_review
    assert any("nothing is left to judge" in r for r in crit.review_reasons)


def test_failed_and_upstream_read_the_rubric():
    report = grade(results(0.0, totals(0.5, 1.0), printed(1.0)))
    first = [c for c in report.criteria]
    assert "load" in failed_criteria(first)
    closure = upstream_of(RUBRIC)
    assert closure(REPORT.checks[0]) == {"totals", "load"}
    assert closure(LOAD.checks[0]) == set()
