"""Every bundled submission graded as the snapshot in tests/golden/ says (issue 34).

A change to the grader's internals keeps each bundled submission's grade (scores,
points, statuses, targets, messages, facts, evidence, flags) and its letter. A change
that means to change one regenerates the snapshot in the same commit
(``python -m tests.golden_reports``), so its diff lists every sentence and number it
changed. Graded for real: our sandboxed run, both languages, no models.
"""

from __future__ import annotations

import pytest

from tests.golden_reports import NAMES, differences, grade_example

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.r] if n.startswith("r-")
                                               else []) for n in NAMES])
def test_every_bundled_submission_grades_as_the_snapshot_says(name: str) -> None:
    diffs = differences(name, grade_example(name))
    assert not diffs, "\n".join(diffs)[:20_000]


def _without_facts(value):
    if isinstance(value, dict):
        return {k: _without_facts(v) for k, v in value.items() if k != "facts"}
    if isinstance(value, list):
        return [_without_facts(v) for v in value]
    return value


@pytest.mark.parametrize("name", ["retail-sales", "py-levels"])
def test_a_grade_stored_before_results_had_facts_gives_the_same_letter(name: str) -> None:
    """The store holds grades made before results carried facts: loaded, they get their
    facts from their sentences (grader.store.legacy_facts), and their letters are the ones a
    fresh grade gives."""
    from grader.assignment import load_assignment
    from grader.layers.base import GradeOptions
    from grader.letters.build import letter_for
    from grader.letters.render import letter_markdown
    from grader.pipeline import GradeInput, Grader
    from grader.store.serialize import report_from_dict, report_to_dict
    from tests.golden_reports import EXAMPLES

    assignment = load_assignment(EXAMPLES / name)
    assert assignment.submissions is not None
    paths = sorted(assignment.submissions.glob("*.ipynb"))
    reports = Grader(assignment, GradeOptions(execute=True, use_llm=False)).grade_many(
        [GradeInput.from_path(p) for p in paths], workers=2)
    compared = 0
    for path, report in zip(paths, reports, strict=True):
        old = report_from_dict(_without_facts(report_to_dict(report)))
        assert all(not c.facts.parts or c.check == "output"
                   for crit in old.criteria for c in crit.checks)
        now = letter_markdown(letter_for(report, assignment.rubric, path.read_bytes()))
        then = letter_markdown(letter_for(old, assignment.rubric, path.read_bytes()))
        assert then == now, path.name
        compared += 1
    assert compared == len(paths) >= 6
