"""``value``, ``printed`` and ``plot`` checks (schema version 2).

The comparison of values (tolerance, several accepted values, R's length-1 vectors),
the reading of printed numbers, the scope of a question's cells, the no-outputs flag,
and real kernels: instructor expressions evaluated in the student's and the
solution's kernels (Python and R), a key that disagrees with the rubric's expected
value (the expected value is the reference: students are charged against it), an
expression the notebook cannot evaluate, printed output from the submitted
outputs or our run, and a cell that prints the solution through a hint function.
"""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from grader.analysis.template import match_template
from grader.assignment import Assignment
from grader.errors import RubricError
from grader.layers.base import AssignmentContext, GradeOptions, SubmissionContext
from grader.layers.outputs import OutputLayer, solution_run
from grader.layers.outputs_read import no_outputs_flag, numbers_in, revealer_cells, scope
from grader.layers.values import key_disagreements, values_equal
from grader.notebooks.load import load_notebook
from grader.rubrics.check_fields import freeze
from grader.rubrics.schema import dumps, loads, rubric_from_dict
from grader.sandbox.execution import ExecLimits, kernel_available, sandbox_available

needs_kernel = pytest.mark.skipif(not sandbox_available() or not kernel_available("python"),
                                  reason="bubblewrap or the Python kernel is missing")
needs_r = pytest.mark.skipif(not sandbox_available() or not kernel_available("r"),
                             reason="bubblewrap or the R kernel is missing")


def rubric(checks: list[dict], language: str = "python"):
    return rubric_from_dict({"schema_version": 2, "title": "t", "language": language,
                             "total_points": 4, "criteria": [
                                 {"id": "q", "title": "Q", "kind": "code", "points": 4,
                                  "checks": checks}]})


# -- comparing values --------------------------------------------------------------------
@pytest.mark.parametrize(("got", "want", "equal"), [
    (178, 178, True), (178.0000001, 178, True), (179, 178, False),
    ([57], 57, True),  # an R length-1 vector
    (57, [57], True), ([1.5, 2.5, 3.5], (1.5, 2.5, 3.5), True),
    ([1.5, 2.5], (1.5, 2.5, 3.5), False),
    ("North", "North", True), ("north", "North", False), (True, 1, False),
    ({"a": 1}, freeze({"a": 1}), True), ({"a": 1}, freeze({"a": 2}), False),
])
def test_values_compare_as_an_instructor_means_them(got, want, equal):
    assert values_equal(got, freeze(want), 1e-6, 1e-9) is equal


def test_a_tolerance_accepts_a_rounded_answer():
    assert values_equal(57.31, 57.3, 0, 0.05)
    assert not values_equal(57.31, 57.3, 0, 0.001)


def test_value_checks_round_trip_and_need_version_2():
    r = rubric([{"type": "value", "expression": "nrow(df)", "accept": [57, 58], "weight": 1}])
    check = r.criteria[0].checks[0]
    assert check.expected == (57, 58)
    assert loads(dumps(r)) == r
    assert "value checks" in r.version_2_features()
    with pytest.raises(RubricError) as err:
        rubric([{"type": "value", "expression": "x", "expected": 1, "accept": [1], "weight": 1}])
    assert any("not both" in p for p in err.value.problems)
    with pytest.raises(RubricError) as err:
        rubric([{"type": "printed", "pattern": "(", "weight": 1}])
    assert any("not a regular expression" in p for p in err.value.problems)


# -- printed output, read without a kernel -------------------------------------------------
def test_printed_numbers_are_read_as_written():
    assert numbers_in("[1] 178") == [1.0, 178.0]
    assert numbers_in("Total: 1,234.5 (1.2e3), share .25") == [1234.5, 1200.0, 0.25]
    assert numbers_in("x_2 and v1.3") == []  # parts of names are not numbers


def loaded(node: nbformat.NotebookNode, name: str):
    return load_notebook(nbformat.writes(node).encode(), name)


def stream(text: str):
    return new_output("stream", name="stdout", text=text)


TEMPLATE = new_notebook(cells=[
    new_markdown_cell("## Question 1\nPrint the mean."), new_code_cell("# YOUR CODE HERE"),
    new_markdown_cell("## Question 2\nPlot it."), new_code_cell("# YOUR CODE HERE")])


def submission(cells: list) -> nbformat.NotebookNode:
    return new_notebook(cells=[TEMPLATE.cells[0], *cells[:1], TEMPLATE.cells[2], *cells[1:]])


def test_a_question_scopes_its_own_cells_and_hint_output_is_not_evidence():
    hinted = new_code_cell("q1.hint()\nprint(57.3)", outputs=[stream("57.3\n")])
    plot = new_code_cell("plt.plot(x)", outputs=[new_output(
        "display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})])
    nb = loaded(submission([hinted, plot]), "s.ipynb")
    match = match_template(loaded(TEMPLATE, "t.ipynb"), nb, ())
    q1 = scope(match, "Question 1", ["Question 2"])
    q2 = scope(match, "Question 2", ["Question 1"])
    assert [o.cell.source for o in q1] == ["q1.hint()\nprint(57.3)"]
    assert [o.cell.source for o in q2] == ["plt.plot(x)"]
    assert scope(match, "Question 9", []) is None
    assert revealer_cells(match) == [nb.cells[1].id]
    assert no_outputs_flag(match, nb) is None


def test_a_notebook_never_run_is_flagged():
    nb = loaded(submission([new_code_cell("print(1)"), new_code_cell("plt.plot(x)")]), "s.ipynb")
    flag = no_outputs_flag(match_template(loaded(TEMPLATE, "t.ipynb"), nb, ()), nb)
    assert flag is not None
    assert flag.code == "no_outputs"
    assert "2 code cell(s)" in flag.message


def test_outputs_cleared_with_execution_counts_kept_are_flagged():
    from grader.sandbox.execution import CellRun, ExecutionResult
    from grader.types import Output
    cells = [new_code_cell("print(1)", execution_count=1),
             new_code_cell("x = 2", execution_count=2)]
    nb = loaded(submission(cells), "s.ipynb")
    match = match_template(loaded(TEMPLATE, "t.ipynb"), nb, ())
    own = [o.cell for o in match.origins if o.holds_code and o.student_lines]

    def run(printed: bool) -> ExecutionResult:
        return ExecutionResult(
            [CellRun(c.id, c.index, True, "", (Output("stream", "1\n", name="stdout"),)
                     if printed and c.source.startswith("print") else (), 0.1) for c in own],
            {}, "python3", "python", 0.2, False, True, "")

    assert no_outputs_flag(match, nb) is None  # counts and no run: cells may print nothing
    assert no_outputs_flag(match, nb, run(printed=False)) is None  # they print nothing
    flag = no_outputs_flag(match, nb, run(printed=True))
    assert flag is not None
    assert flag.message.startswith("outputs cleared before submitting")


# -- real kernels ------------------------------------------------------------------------
def layer(tmp_path, rub, template, solution, student, execute: bool = True):
    actx = AssignmentContext(Assignment("demo", tmp_path, rub, tmp_path / "r.json",
                                        tmp_path / "t.ipynb", tmp_path / "s.ipynb"),
                             loaded(template, "t.ipynb"), loaded(solution, "s.ipynb"), solution)
    sub = loaded(student, "student.ipynb")
    ctx = SubmissionContext(actx, sub, student, match_template(actx.template, sub, ()),
                            GradeOptions(cell_timeout_s=60, total_timeout_s=180,
                                         execute=execute))
    result = OutputLayer().run(ctx)
    assert result.error == ""
    return result, {c.target: c for c in result.checks}


@pytest.mark.slow
@needs_kernel
def test_python_expressions_are_evaluated_in_both_kernels(tmp_path):
    rub = rubric([
        {"type": "value", "expression": 'df["region"].nunique()', "expected": 4, "weight": 0.2},
        {"type": "value", "expression": "round(df.sales.mean(), 1)", "weight": 0.2},
        {"type": "value", "expression": "len(df)", "accept": [5, 6], "weight": 0.2},
        {"type": "value", "expression": "total", "expected": 99, "weight": 0.2},
        {"type": "value", "expression": "undefined_name + 1", "expected": 1, "hidden": True,
         "weight": 0.2}])
    intro = new_markdown_cell("## Question 1")
    template = new_notebook(cells=[intro, new_code_cell("# YOUR CODE HERE")])
    make = ('import pandas as pd\ndf = pd.DataFrame({"region": list("NESWN"), '
            '"sales": [1.0, 2.0, 3.0, 4.0, {last}]})\ntotal = df.sales.sum()')
    solution = new_notebook(cells=[intro, new_code_cell(make.replace("{last}", "5.0"))])
    student = new_notebook(cells=[intro, new_code_cell(make.replace("{last}", "6.0"))])
    _, by = layer(tmp_path, rub, template, solution, student)
    assert by['df["region"].nunique()'].score == 1.0
    mean = by["round(df.sales.mean(), 1)"]
    assert (mean.score, mean.status) == (0.0, "ok")  # 3.2 against the solution's 3.0
    assert by["len(df)"].score == 1.0  # one of the accepted values
    wrong_key = by["total"]  # the key's total is 15, not the rubric's 99: 99 is the reference
    assert (wrong_key.score, wrong_key.status) == (0.0, "ok")
    assert "should be 99" in wrong_key.message
    assert "the instructor's solution gives 15" in wrong_key.message
    broken = by["undefined_name + 1"]
    assert (broken.status, broken.hidden) == ("environment", True)  # fails on the key too


@pytest.mark.slow
@needs_kernel
def test_an_expected_value_the_key_disagrees_with_is_the_reference(tmp_path):
    """The docs say to write `expected` when the key is wrong: a student who repeats the
    key's mistake is charged, one who gives the expected value is not."""
    rub = rubric([{"type": "value", "expression": "total", "accept": [99, 100], "weight": 0.5},
                  {"type": "value", "expression": "count", "expected": 3, "weight": 0.5}])
    intro = new_markdown_cell("## Question 1")
    template = new_notebook(cells=[intro, new_code_cell("# YOUR CODE HERE")])
    solution = new_notebook(cells=[intro, new_code_cell("total = 15\ncount = 3")])
    like_key = new_notebook(cells=[intro, new_code_cell("total = 10 + 5\ncount = 1 + 2")])
    right = new_notebook(cells=[intro, new_code_cell("total = 90 + 9\ncount = 1 + 2")])
    _, by_key = layer(tmp_path, rub, template, solution, like_key)
    assert (by_key["total"].score, by_key["total"].status) == (0.0, "ok")  # charged
    assert "should be 99 (or 100); the notebook gives 15" in by_key["total"].message
    assert by_key["count"].score == 1.0
    _, by_right = layer(tmp_path, rub, template, solution, right)
    assert (by_right["total"].score, by_right["total"].status) == (1.0, "ok")
    assert "the instructor's solution gives 15" in by_right["total"].message
    assert "count" not in by_right["total"].message
    # the self-check's reading: the key disagrees on `total` only, and says both values
    actx = AssignmentContext(Assignment("demo", tmp_path, rub, tmp_path / "r.json",
                                        tmp_path / "t.ipynb", tmp_path / "s.ipynb"),
                             loaded(template, "t.ipynb"), loaded(solution, "s.ipynb"), solution)
    (disagreement,) = key_disagreements(rub, solution_run(actx, ExecLimits()))
    assert (disagreement.criterion, disagreement.expression) == ("q", "total")
    assert (disagreement.expected, disagreement.key) == ("99 (or 100)", "15")
    assert "The key disagrees with the expected value of the value check `total`" in \
        disagreement.text()


@pytest.mark.slow
@needs_kernel
def test_printed_and_plot_evidence_from_stored_outputs_or_our_run(tmp_path):
    rub = rubric([
        {"type": "printed", "question": "Question 1", "number": 3.0, "weight": 0.25},
        {"type": "printed", "question": "Question 1", "pattern": r"mean is \d", "weight": 0.25,
         "evidence": "stored"},
        {"type": "plot", "question": "Question 2", "weight": 0.25, "evidence": "rerun"},
        {"type": "value", "expression": "m", "weight": 0.25}])
    code = "m = sum([1, 2, 3, 4, 5]) / 5\nprint(f'The mean is {m}')"
    plot = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()"
    solution = submission([new_code_cell(code), new_code_cell(plot)])
    unrun = submission([new_code_cell(code), new_code_cell(plot)])  # never run: no outputs
    result, by = layer(tmp_path, rub, TEMPLATE, solution, unrun)
    assert by["3"].score == 1.0
    assert "our run" in by["3"].message
    assert by[r"mean is \d"].score == 0.0  # only the (missing) stored outputs count
    assert by["Question 2"].score == 1.0  # the inline backend draws into our run's outputs
    assert "no_outputs" in {f.code for f in result.flags}
    # the same notebook graded without running it: only what it stored counts
    _, by = layer(tmp_path, rub, TEMPLATE, solution, unrun, execute=False)
    assert by["3"].score == 0.0
    assert by["Question 2"].status == "skipped"


@pytest.mark.slow
@pytest.mark.r
@needs_r
def test_r_expressions_and_plots(tmp_path):
    rub = rubric([
        {"type": "value", "expression": "nrow(clean)", "expected": 3, "weight": 0.4},
        {"type": "value", "expression": "names(clean)", "expected": ["x", "y"], "weight": 0.3},
        {"type": "plot", "question": "Question 1", "weight": 0.3}], language="r")
    intro = new_markdown_cell("## Question 1")
    template = new_notebook(cells=[intro, new_code_cell("# YOUR CODE HERE")])
    template.metadata["kernelspec"] = {"name": "ir", "language": "R", "display_name": "R"}
    body = ("d <- data.frame(x = c(1, 2, NA, 4), y = c(2, 4, 6, 8))\n"
            "clean <- PICK\nplot(clean$x, clean$y)")
    solution = new_notebook(cells=[intro, new_code_cell(body.replace("PICK", "d[!is.na(d$x), ]"))],
                            metadata=template.metadata)
    student = new_notebook(cells=[intro, new_code_cell(body.replace("PICK", "d"))],
                           metadata=template.metadata)
    _, by = layer(tmp_path, rub, template, solution, student)
    assert by["nrow(clean)"].score == 0.0
    assert "should be 3" in by["nrow(clean)"].message
    assert "gives 4" in by["nrow(clean)"].message
    assert by["names(clean)"].score == 1.0
    assert by["Question 1"].score == 1.0


def test_the_instructors_answer_shown_in_a_notebook_is_flagged():
    from grader.layers.revealed import revealed_flag
    template = loaded(TEMPLATE, "t.ipynb")
    solution = loaded(submission([new_code_cell(
        "totals = df.groupby('station')['rides'].sum()\n"
        "busiest = totals.sort_values(ascending=False).index[0]")]), "sol.ipynb")
    hinted = loaded(submission([new_code_cell("q1.solution()\nprint(57.3)")]), "s.ipynb")
    flag = revealed_flag(match_template(template, hinted, ()), solution, template)
    assert flag is not None
    assert flag.code == "solution_shown"
    pasted = new_code_cell("print(open('answers.txt').read())", outputs=[stream(
        "totals = df.groupby('station')['rides'].sum()\n"
        "busiest = totals.sort_values(ascending=False).index[0]\n")])
    nb = loaded(submission([pasted]), "s.ipynb")
    flag = revealed_flag(match_template(template, nb, ()), solution, template)
    assert flag is not None
    assert "prints the solution's code" in flag.evidence[0].text
    honest = loaded(submission([new_code_cell("print(57.3)", outputs=[stream("57.3\n")])]),
                    "s.ipynb")
    assert revealed_flag(match_template(template, honest, ()), solution, template) is None
