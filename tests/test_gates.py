"""The wrong-notebook gate: another assignment's notebook scores 0 and goes to review.

Measured on a real class: a student uploaded the lecture's notebook instead of the
homework, and it earned points for calling select() and filter(). Graded here from the
notebooks' text alone (no kernel): the bundled strings-and-dates submission uploaded
under the joins assignment, against the joins submission itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.letters.build import build_letter, letter_markdown
from grader.pipeline import GradeInput, Grader
from grader.scoring import build_report

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture(scope="module")
def joins_grader() -> Grader:
    return Grader(load_assignment(EXAMPLES / "r-joins"), GradeOptions(execute=False))


def grade(grader: Grader, folder: str, name: str = "complete.ipynb"):
    path = EXAMPLES / folder / "submissions" / name
    return grader.grade(GradeInput(f"{folder}-{name}", path.read_bytes()))


def test_another_assignments_notebook_scores_0_and_every_criterion_goes_to_review(joins_grader):
    report = grade(joins_grader, "r-strings-dates")
    assert "unlike_template" in {f.code for f in report.flags}
    assert report.score == 0
    assert all(c.points == 0 for c in report.criteria)
    assert report.needs_review == [c.id for c in report.criteria]
    reasons = [c.review_reasons[0] for c in report.criteria]
    assert all(r.startswith("scored 0 until reviewed: the notebook holds ") for r in reasons)
    assert all("the checks gave" in r for r in reasons)
    # the evidence stays for the instructor: the checks themselves are kept
    assert any(ch.score > 0 for c in report.criteria for ch in c.checks)


def test_the_right_notebook_is_not_gated(joins_grader):
    report = grade(joins_grader, "r-joins")
    assert "unlike_template" not in {f.code for f in report.flags}
    assert report.score is not None
    assert report.score > 0
    assert not any(r.startswith("scored 0 until reviewed") for c in report.criteria
                   for r in c.review_reasons)


def test_the_gate_holds_when_a_report_is_rebuilt_from_its_layers(joins_grader):
    """A rubric preview or a regrade rebuilds reports from the stored layers."""
    report = grade(joins_grader, "r-strings-dates")
    rubric = joins_grader.assignment.rubric
    again = build_report(rubric, report.file, report.sha256, report.assignment, report.layers)
    assert again.score == 0
    assert again.needs_review == report.needs_review


def test_the_student_reads_why_it_was_not_graded(joins_grader):
    report = grade(joins_grader, "r-strings-dates")
    text = letter_markdown(build_letter(report, joins_grader.assignment.rubric, None, "Joins"))
    assert "little in common with this assignment's notebook" in text
    assert "Score" not in text
    assert "unlike_template" not in text
    assert "the checks gave" not in text  # instructor-only detail
