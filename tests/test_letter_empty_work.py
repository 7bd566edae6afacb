"""A letter for empty work says what is missing (issue 22, item 16): the template handed
in as it came is told there is no code of the student's own under each question, never
to "run your code again"."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.letters.build import build_letter, letter_markdown
from grader.notebooks.load import load_notebook
from grader.pipeline import GradeInput, Grader
from grader.types import CheckResult, CriterionResult, Evidence, Facts, GradeReport

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
RERUN = "Run your code for this part again"


@pytest.fixture(scope="module")
def template_only():
    """py-functions' template handed in untouched (nothing of the student's runs)."""
    a = load_assignment(EXAMPLES / "py-functions")
    path = a.submissions / "template_only.ipynb"
    r = Grader(a, GradeOptions()).grade(GradeInput.from_path(path))
    return a, r, load_notebook(path)


def test_template_only_letter_says_what_is_missing_not_run_again(template_only):
    a, r, nb = template_only
    assert any(ch.check == "test" and ch.message.startswith("not run: the notebook has no "
                                                            "code of the student's own")
               for c in r.criteria for ch in c.checks)
    md = letter_markdown(build_letter(r, a.rubric, nb, a.title))
    assert RERUN not in md
    assert "could not be computed from your notebook" not in md
    first = a.rubric.criteria[0]
    heading = next(c for c in nb.markdown_cells if first.task in c.source)
    assert (f"There is no code of your own under the heading “{first.task}” "
            f"(cell {heading.index + 1}) yet") in md
    assert "Write the code this part asks for" in md


def test_a_failed_test_of_real_work_still_says_run_it_again():
    ch = CheckResult("q1", "test", "sums", 0.0, 1.0, "L2", "failed: AssertionError",
                     (Evidence(None, None, "AssertionError"),), facts=Facts("failed"))
    crit = CriterionResult("q1", "Sums", "code", 2, 0.0, checks=[ch])
    r = GradeReport("s.ipynb", "x", "demo", "v1", "graded", 0.0, 2, display_name="Student 001",
                    criteria=[crit])
    md = letter_markdown(build_letter(r))
    assert RERUN in md
    assert "no code of your own" not in md


def test_a_test_failing_on_the_templates_stub_says_the_placeholder_is_still_there():
    ch = CheckResult("q1", "test", "sums", 0.0, 1.0, "L2", "failed: NotImplementedError: ",
                     (Evidence(None, None, "NotImplementedError: "),), "ok",
                     facts=Facts("failed"))
    crit = CriterionResult("q1", "Sums", "code", 2, 0.0, checks=[ch])
    r = GradeReport("s.ipynb", "x", "demo", "v1", "graded", 0.0, 2, display_name="Student 001",
                    criteria=[crit])
    md = letter_markdown(build_letter(r))
    assert RERUN not in md
    assert "still the template's placeholder" in md
    assert "Replace the placeholder in this part with your own code" in md
