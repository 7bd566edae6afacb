"""``stale_outputs``: raised only when the stored outputs move a check.

Real runs (the Python kernel in the sandbox): stored outputs that differ from our run
only where no check looks (an object's address, a timing) are not flagged; a stored
output edited to show another number than the code prints, which moves a ``printed``
check, is flagged and the flag names the check; a cell whose stored output is an error
that our run does not raise moves the ``runs`` check. The bundled solutions and
complete submissions are checked in tests/test_examples_grading.py.
"""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from grader.analysis.template import match_template
from grader.assignment import Assignment
from grader.layers.base import AssignmentContext, GradeOptions, SubmissionContext
from grader.layers.outputs import OutputLayer
from grader.notebooks.load import load_notebook
from grader.rubrics.schema import rubric_from_dict
from grader.sandbox.execution import kernel_available, sandbox_available
from grader.types import Flag

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sandbox_available() or not kernel_available("python"),
                                 reason="bubblewrap or the Python kernel is missing")]

RUBRIC = rubric_from_dict({
    "schema_version": 2, "title": "t", "language": "python", "total_points": 4, "criteria": [
        {"id": "mean", "title": "Mean", "kind": "code", "points": 3, "checks": [
            {"type": "printed", "question": "Question 1", "number": 3.0, "weight": 0.5},
            {"type": "value", "expression": "m", "weight": 0.5}]},
        {"id": "clean", "title": "Runs", "kind": "code", "points": 1, "checks": [
            {"type": "runs", "weight": 1.0}]}]})
INTRO = new_markdown_cell("## Question 1\nPrint the mean.")
TEMPLATE = new_notebook(cells=[INTRO, new_code_cell("# YOUR CODE HERE")])
MEAN = "m = sum([1, 2, 3, 4, 5]) / 5\nprint(f'The mean is {m}')"
ADDRESS = "print(object())"


def stream(text: str):
    return new_output("stream", name="stdout", text=text)


def ran(source: str, *outputs, count: int = 1):
    cell = new_code_cell(source, outputs=list(outputs))
    cell.execution_count = count
    return cell


def loaded(node: nbformat.NotebookNode, name: str):
    return load_notebook(nbformat.writes(node).encode(), name)


SOLUTION = new_notebook(cells=[INTRO, ran(MEAN, stream("The mean is 3.0\n")),
                               ran(ADDRESS, stream("<object object at 0x7f00dfeed>\n"), count=2)])


@pytest.fixture(scope="module")
def stale(tmp_path_factory):
    """stale(student) -> the stale_outputs flag of ``student``, or None; the solution
    runs once."""
    root = tmp_path_factory.mktemp("stale")
    solution = SOLUTION
    actx = AssignmentContext(Assignment("demo", root, RUBRIC, root / "r.json",
                                        root / "t.ipynb", root / "s.ipynb"),
                             loaded(TEMPLATE, "t.ipynb"), loaded(solution, "s.ipynb"), solution)

    def flag(student: nbformat.NotebookNode) -> Flag | None:
        sub = loaded(student, "student.ipynb")
        ctx = SubmissionContext(actx, sub, student, match_template(actx.template, sub, ()),
                                GradeOptions(cell_timeout_s=60, total_timeout_s=180))
        result = OutputLayer().run(ctx)
        assert result.error == ""
        assert result.details.get("sandboxed") is True
        return next((f for f in result.flags if f.code == "stale_outputs"), None)

    return flag


def test_outputs_that_differ_where_no_check_looks_are_not_stale(stale):
    # the address printed differs from our run's: the old flag was raised on this
    assert stale(SOLUTION) is None


def test_an_edited_output_that_moves_a_printed_check_is_stale_and_named(stale):
    edited = new_notebook(cells=[INTRO, ran(MEAN, stream("The mean is 4.0\n")),
                                 ran(ADDRESS, stream("<object object at 0x1>\n"), count=2)])
    flag = stale(edited)
    assert flag is not None
    assert "disagree with our run on 1 check (mean, printed '3'" in flag.message
    assert "0 from the submitted outputs, 1 from our run" in flag.message
    assert any("4.0" in e.text for e in flag.evidence)  # what was stored
    assert "runs" not in flag.message  # the runs check did not move


def test_a_stored_error_our_run_does_not_raise_moves_the_runs_check(stale):
    errored = new_notebook(cells=[INTRO, ran(MEAN, stream("The mean is 3.0\n")), ran(
        ADDRESS, new_output("error", ename="NameError", evalue="name 'objet' is not defined",
                            traceback=[]), count=2)])
    flag = stale(errored)
    assert flag is not None
    assert "clean, runs" in flag.message
    assert "printed" not in flag.message


def test_cells_never_run_are_not_stale(stale):
    unrun = new_notebook(cells=[INTRO, new_code_cell(MEAN), new_code_cell(ADDRESS)])
    assert stale(unrun) is None  # no_outputs says so instead
