"""nbgrader imports in R: nbgrader's R stub in the template, testthat/stopifnot test
cells with hidden tests, tasks answered in code or in words, and the imported
assignment's self-check in the R kernel."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.rubrics.import_nbgrader import STUBS, import_nbgrader
from grader.sandbox.execution import kernel_available, sandbox_available
from tests.import_cli import import_and_check

R = {"kernelspec": {"name": "ir", "language": "R", "display_name": "R"}}


def cell(c, **meta):
    c.metadata["nbgrader"] = {"schema_version": 3, "grade": False, "solution": False,
                              "locked": False, **meta}
    return c


def r_source():
    return new_notebook(metadata=R, cells=[
        new_markdown_cell("# Means in R"),
        cell(new_code_cell("x <- c(2, 4, 9)"), locked=True, grade_id="given"),
        new_markdown_cell("**1.** Store the mean of `x` in `avg`."),
        cell(new_code_cell("### BEGIN SOLUTION\navg <- mean(x)\n### END SOLUTION"),
             solution=True, grade_id="avg"),
        cell(new_code_cell("testthat::expect_equal(avg, 5)\n### BEGIN HIDDEN TESTS\n"
                           "stopifnot(is.numeric(avg), length(avg) == 1)\n"
                           "### END HIDDEN TESTS"),
             grade=True, grade_id="test_avg", points=3, locked=True),
        cell(new_markdown_cell("## Task 2\nPlot `x` as a bar chart."), task=True,
             grade_id="task_plot", points=2),
        cell(new_code_cell("barplot(x)"), solution=True, grade_id="plot"),
    ])


def test_an_r_nbgrader_notebook_gets_the_r_stub_and_a_code_task():
    imported = import_nbgrader(r_source(), "means.ipynb")
    rubric = imported.report.rubric
    assert rubric.language == "r"
    assert [(c.id, c.kind, c.points) for c in rubric.criteria] == [
        ("test_avg", "code", 3.0), ("task_plot", "code", 2.0)]
    visible, hidden = rubric.criteria[0].checks
    assert visible.code == "testthat::expect_equal(avg, 5)"
    assert hidden.hidden
    assert "stopifnot" in hidden.code
    assert [c.type for c in rubric.criteria[1].checks] == ["runs"]  # answered in code
    template = [c.source for c in imported.template.cells]
    assert template[3] == STUBS["r"]
    assert "fail()" in template[3]
    assert template[6] == STUBS["r"]  # a solution cell without markers: the whole cell
    assert template[4] == "testthat::expect_equal(avg, 5)"
    assert imported.solution.cells[3].source == "avg <- mean(x)"
    rows = {r.item.split(" (")[0]: r for r in imported.report.rows}
    assert rows["task 'task_plot'"].carried
    assert "review" in rows["task 'task_plot'"].todo
    assert not rows["locked cell 'given'"].carried


@pytest.mark.slow
@pytest.mark.skipif(not sandbox_available() or not kernel_available("r"),
                    reason="bubblewrap or the R kernel is missing")
def test_an_imported_r_nbgrader_assignment_checks_itself(tmp_path):
    nbformat.write(r_source(), tmp_path / "means.ipynb")
    import_and_check("nbgrader", tmp_path / "means.ipynb", tmp_path / "m")
