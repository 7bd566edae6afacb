"""otter-grader imports: points resolved as otter resolves them, OK-format cases as
otter runs them (hidden unless they say not, compared exactly as doctest compares),
and otter assign's R master notebooks (testthat tests, R placeholders, prompts,
ignored lines), down to the imported assignment's self-check."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell

from grader.errors import RubricError
from grader.rubrics.import_otter import otter_criteria, resolve_points
from grader.rubrics.import_otter_assign import import_otter_assign
from grader.sandbox.execution import kernel_available, sandbox_available
from tests.import_cli import import_and_check

R = {"kernelspec": {"name": "ir", "language": "R", "display_name": "R"}}


def test_points_resolve_as_otter_resolves_them():
    assert resolve_points(None, [None, None]) == [0.5, 0.5]
    assert resolve_points(None, [2, None]) == [2.0, 0.0]
    assert resolve_points(4, [1, None, None]) == [1.0, 1.5, 1.5]
    assert resolve_points([1, 3], [None, None]) == [1.0, 3.0]
    assert resolve_points({"each": 2}, [None, None, None]) == [2.0, 2.0, 2.0]
    with pytest.raises(ValueError, match="exceed"):
        resolve_points(1, [2, None])
    with pytest.raises(ValueError, match="2 points for 3 cases"):
        resolve_points([1, 1], [None, None, None])
    with pytest.raises(ValueError, match="each must be a number"):
        resolve_points({"each": None}, [None])
    assert resolve_points(None, [0, None]) == [0.0, 1.0]  # only zeros: 1 for the rest


OK = '''OK_FORMAT = True

test = {
    "name": "q2",
    "points": 3,
    "suites": [{"cases": [
        {"code": ">>> spaced('a', 'b')\\n'a b'", "hidden": False, "points": 2,
         "failure_message": "join them with one space"},
        {"code": ">>> print(spaced('x', 'y'))\\nx y"},
    ], "scored": True, "setup": "", "teardown": "", "type": "doctest"}],
}
'''


def test_ok_cases_carry_their_points_hidden_flags_and_exact_output():
    [crit], rows = otter_criteria([("tests/q2.py", OK)], set())
    assert crit.points == 3.0
    visible, hidden = crit.checks
    assert (visible.hidden, visible.weight, visible.message) == (
        False, pytest.approx(2 / 3), "join them with one space")
    assert (hidden.hidden, hidden.weight) == (True, pytest.approx(1 / 3))  # otter's default
    assert "1 visible and 1 hidden" in rows[0].imported_as
    right = {"spaced": lambda a, b: f"{a} {b}"}
    for check in crit.checks:
        exec(check.code, dict(right))
    two_spaces = {"spaced": lambda a, b: f"{a}  {b}"}  # doctest compares exactly
    for check in crit.checks:
        with pytest.raises(AssertionError, match="Expected"):
            exec(check.code, dict(two_spaces))


def test_an_all_or_nothing_file_is_one_check_and_bad_points_are_refused():
    whole = OK.replace('"points": 3,', '"points": 3, "all_or_nothing": True,')
    [crit], _ = otter_criteria([("q2.py", whole)], set())
    assert [(c.weight, c.hidden) for c in crit.checks] == [(1.0, True)]
    with pytest.raises(RubricError, match="exceed"):
        otter_criteria([("q2.py", OK.replace('"points": 3,', '"points": 1,'))], set())


def raw(text):
    return new_raw_cell(text)


def r_master():
    return new_notebook(metadata=R, cells=[
        raw("# ASSIGNMENT CONFIG\nexport_cell: false"),
        new_markdown_cell("# Vectors in R"),
        new_code_cell("library(testthat) # IGNORE\nv <- c(3, 1, 2)"),
        raw("# BEGIN QUESTION\nname: q1\npoints: 2"),
        new_markdown_cell("**Question 1.** Sort `v` into `sorted_v` and count it in `n`."),
        raw("# BEGIN SOLUTION"),
        new_code_cell("sorted_v <- sort(v) # SOLUTION\n# BEGIN SOLUTION\nn <- length(v)\n"
                      "# END SOLUTION"),
        raw("# END SOLUTION"),
        raw("# BEGIN TESTS"),
        new_code_cell('testthat::expect_equal(sorted_v, c(1, 2, 3))'),
        new_code_cell('. = " # BEGIN TEST CONFIG\nhidden: true\npoints: 1.5\n'
                      '" # END TEST CONFIG\ntestthat::expect_equal(n, 3)'),
        raw("# END TESTS"),
        raw("# END QUESTION"),
        raw("# BEGIN QUESTION\nname: q2\npoints: 1"),
        new_markdown_cell("**Question 2.** Make `m`, the largest value of `v`."),
        raw("# BEGIN PROMPT"),
        new_code_cell("m <- NULL  # use max()"),
        raw("# END PROMPT"),
        raw("# BEGIN SOLUTION"),
        new_code_cell("# BEGIN SOLUTION NO PROMPT\nm <- max(v)\n# END SOLUTION"),
        raw("# END SOLUTION"),
        raw("# BEGIN TESTS"),
        new_code_cell("# HIDDEN\nstopifnot(identical(m, 3))"),
        raw("# END TESTS"),
        raw("# END QUESTION"),
    ])


def test_a_manual_question_with_points_for_tests_it_does_not_have_is_refused():
    nb = r_master()
    nb.cells[13].source = "# BEGIN QUESTION\nname: q2\nmanual: true\npoints: [1, 2]"
    with pytest.raises(RubricError, match=r"q2.*2 points for 1 cases"):
        import_otter_assign(nb, "master.ipynb")


def test_an_r_master_notebook_becomes_testthat_checks_and_r_placeholders():
    imported = import_otter_assign(r_master(), "master.ipynb")
    rubric = imported.report.rubric
    assert rubric.language == "r"
    assert [(c.id, c.points) for c in rubric.criteria] == [("q1", 2.0), ("q2", 1.0)]
    q1 = rubric.criteria[0].checks
    assert [(t.hidden, t.weight) for t in q1] == [(False, 0.25), (True, 0.75)]
    assert q1[1].code == "testthat::expect_equal(n, 3)"  # the config is gone
    assert rubric.criteria[1].checks[0].hidden  # "# HIDDEN"
    template = [c.source for c in imported.template.cells]
    solution = [c.source for c in imported.solution.cells]
    assert "sorted_v <- NULL # YOUR CODE HERE\n# YOUR CODE HERE" in template
    assert "m <- NULL  # use max()" in template  # the prompt: the student's only
    assert "m <- NULL  # use max()" not in solution
    assert "" in template
    assert "m <- max(v)" not in "\n".join(template)
    assert "sorted_v <- sort(v)\nn <- length(v)" in solution
    assert "v <- c(3, 1, 2)" in template
    assert "v <- c(3, 1, 2)" in solution
    assert not any("IGNORE" in s or "library(testthat)" in s for s in template + solution)
    assert not any("expect_equal" in s for s in template + solution)


@pytest.mark.slow
@pytest.mark.skipif(not sandbox_available() or not kernel_available("r"),
                    reason="bubblewrap or the R kernel is missing")
def test_an_imported_r_master_checks_itself(tmp_path):
    nbformat.write(r_master(), tmp_path / "master.ipynb")
    assert "testthat" in import_and_check("otter", tmp_path / "master.ipynb", tmp_path / "vec")


def test_manual_code_is_for_the_instructor_and_titles_are_words():
    nb = r_master()
    nb.cells[4].source = "**Question 1.** Sort $v$ into `sorted_v` ([docs](https://x.org))."
    nb.cells[13].source = "# BEGIN QUESTION\nname: q2\nmanual: true\npoints: 2"
    imported = import_otter_assign(nb, "master.ipynb")
    q1, q2 = imported.report.rubric.criteria
    assert q1.title == "Question 1. Sort into sorted_v (docs)."
    assert not q1.manual
    assert (q2.manual, q2.kind, q2.points) == (True, "code", 2.0)
    row = next(r for r in imported.report.rows if "manually graded question 'q2'" in r.item)
    assert "for you to grade" in row.imported_as
