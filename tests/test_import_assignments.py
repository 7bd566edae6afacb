"""nbgrader source notebooks and otter's OK-format tests imported as our assignments.

Built here with nbformat in the formats the two projects document (nbgrader's cell
metadata, schema version 3; otter's OK-format ``test = {...}`` files with doctest
cases), then imported with the CLI, checked by the assignment's self-check and graded
for real: a correct function ranks above a wrong one that passes the visible tests.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.analysis.answer_labels import find_text
from grader.analysis.template import normalise_markdown
from grader.assignment import load_assignment
from grader.errors import RubricError
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from grader.rubrics.import_nbgrader import import_nbgrader, is_nbgrader, question_line
from grader.rubrics.import_otter import doctest_code, read_ok_test
from grader.sandbox.execution import kernel_available, sandbox_available
from tests.import_cli import import_and_check

needs_kernel = pytest.mark.skipif(not sandbox_available() or not kernel_available("python"),
                                  reason="bubblewrap or the Python kernel is missing")
PY = {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}


def graded_cell(cell, **meta):
    cell.metadata["nbgrader"] = {"schema_version": 3, "grade": False, "solution": False,
                                 "locked": False, **meta}
    return cell


SOLUTION = '''def squares(n):
    """The squares of 1..n."""
    ### BEGIN SOLUTION
    if n < 1:
        raise ValueError("n must be positive")
    return [i * i for i in range(1, n + 1)]
    ### END SOLUTION'''
TESTS = '''assert squares(1) == [1]
assert squares(3) == [1, 4, 9]
### BEGIN HIDDEN TESTS
assert squares(5) == [1, 4, 9, 16, 25]
try:
    squares(0)
except ValueError:
    pass
else:
    raise AssertionError("squares(0) should raise ValueError")
### END HIDDEN TESTS'''


def nbgrader_source() -> nbformat.NotebookNode:
    return new_notebook(metadata=PY, cells=[
        new_markdown_cell("# Squares\n\nWrite `squares(n)`."),
        graded_cell(new_code_cell(SOLUTION), solution=True, grade_id="squares"),
        graded_cell(new_code_cell(TESTS), grade=True, grade_id="test_squares", points=2,
                    locked=True),
        new_markdown_cell("## Question 2\nWhy do the squares grow faster than n?"),
        graded_cell(new_markdown_cell("Each square multiplies n by itself, so it grows with "
                                      "n twice over."), grade=True, solution=True,
                    grade_id="why", points=1),
        graded_cell(new_markdown_cell("## Task 3\nDescribe the squares' growth."), task=True,
                    grade_id="plot_task", points=1),
        graded_cell(new_markdown_cell("They grow ever faster: each step adds the next odd "
                                      "number."), solution=True, grade_id="growth"),
        graded_cell(new_code_cell("print('the end')"), locked=True, grade_id="footer"),
    ])


def test_an_nbgrader_notebook_becomes_template_solution_and_rubric():
    nb = nbgrader_source()
    assert is_nbgrader(nb)
    imported = import_nbgrader(nb, "squares.ipynb")
    rubric = imported.report.rubric
    assert [(c.id, c.kind, c.points) for c in rubric.criteria] == [
        ("test_squares", "code", 2.0), ("why", "written", 1.0),
        ("plot_task", "written", 1.0)]
    tests = rubric.criteria[0].checks
    assert [(t.name, t.hidden, t.weight) for t in tests] == [
        ("test_squares", False, 0.5), ("test_squares (hidden)", True, 0.5)]
    assert "squares(5)" in tests[1].code
    assert "squares(5)" not in tests[0].code
    assert rubric.criteria[1].checks[0].question == "Question 2"
    template = [c.source for c in imported.template.cells]
    assert "# YOUR CODE HERE\n    raise NotImplementedError()" in template[1]
    assert "range(1, n + 1)" not in template[1]
    assert "HIDDEN" not in template[2]
    assert "squares(5)" not in template[2]
    assert template[4] == "YOUR ANSWER HERE"
    assert "BEGIN SOLUTION" not in imported.solution.cells[1].source
    assert "range(1, n + 1)" in imported.solution.cells[1].source
    # only a locked cell keeps nbgrader's mark, as nbgrader releases it (edits are flagged)
    assert all(c.metadata.get("nbgrader", {"locked": True}).get("locked") is True
               and set(c.metadata.get("nbgrader", {})) <= {"grade_id", "locked"}
               for c in imported.template.cells)
    assert rubric.criteria[2].checks[0].question == "Task 3"
    assert any(r.item.startswith("task 'plot_task'") for r in imported.report.carried)
    assert any("all or nothing" in r.todo for r in imported.report.carried)


def test_a_notebook_nbgrader_did_not_mark_is_refused_by_name():
    plain = new_notebook(metadata=PY, cells=[new_code_cell("x = 1")])
    with pytest.raises(RubricError) as err:
        import_nbgrader(plain, "plain.ipynb")
    assert "plain.ipynb" in str(err.value)
    assert "no graded cells" in str(err.value)


OK_TEST = '''test = {
    "name": "q1",
    "points": 2,
    "suites": [{"cases": [
        {"code": ">>> square(3)\\n9", "hidden": False, "locked": False},
        {"code": ">>> [square(i) for i in range(4)]\\n[0, 1, 4, 9]", "hidden": True,
         "locked": False}],
        "scored": True, "setup": "", "teardown": "", "type": "doctest"}],
}
'''


def test_otter_cases_run_as_doctests_and_say_what_came():
    test = read_ok_test(OK_TEST, "q1.py")
    assert test["points"] == 2
    code = doctest_code([test["suites"][0]["cases"][0]["code"]])
    passes, fails = {"square": lambda x: x * x}, {"square": lambda x: x * 3}
    exec(code, passes)  # our own generated test code, on our own function
    with pytest.raises(AssertionError) as err:
        exec(code, {"square": lambda x: x + 1})
    assert "Expected" in str(err.value)
    assert "4" in str(err.value)
    exec(code, fails)  # 3 * 3 == 9: the visible case cannot tell
    with pytest.raises(RubricError):
        read_ok_test("test = {'name': __import__('os').name}", "evil.py")  # never run
    with pytest.raises(ValueError, match="lacks blank after >>>"):
        doctest_code([">>>square(3)\n9"])  # a case doctest cannot read: the importer says so


def otter_files(root: Path) -> tuple[Path, Path, Path]:
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "q1.py").write_text(OK_TEST, encoding="utf-8")
    given = [new_markdown_cell("# Squares\n\n**Question 1.** Write `square(x)`.")]
    student = new_notebook(metadata=PY, cells=[*given, new_code_cell("def square(x):\n    ...")])
    key = new_notebook(metadata=PY, cells=[*given,
                                           new_code_cell("def square(x):\n    return x * x")])
    nbformat.write(student, root / "hw.ipynb")
    nbformat.write(key, root / "key.ipynb")
    return root / "hw.ipynb", root / "key.ipynb", root / "tests"


def grade(folder: Path, bodies: dict[str, str], tmp: Path) -> dict[str, float]:
    a = load_assignment(folder)
    grader = Grader(a, GradeOptions(execute=True, use_llm=False))
    items = []
    for name, body in bodies.items():
        nb = nbformat.read(a.template, as_version=4)
        code = next(c for c in nb.cells if c.cell_type == "code" and body[0] in c.source)
        code.source = body[1]
        path = tmp / f"{name}.ipynb"
        nbformat.write(nb, path)
        items.append(GradeInput.from_path(path))
    return {Path(r.file).stem: r.score for r in grader.grade_many(items, workers=1)}


@pytest.mark.slow
@needs_kernel
def test_imported_otter_tests_rank_a_correct_function_above_a_wrong_one(tmp_path):
    hw, key, tests = otter_files(tmp_path / "src")
    said = import_and_check("otter", hw, tmp_path / "squares", "--solution", str(key),
                            "--tests", str(tests))
    assert "tests of q1 (2 points, 2 cases): carried" in said
    scores = grade(tmp_path / "squares", {
        "right": ("def square", "def square(x):\n    return x ** 2"),
        "wrong": ("def square", "def square(x):\n    return x * 3")}, tmp_path)
    assert scores == {"right": 2.0, "wrong": 1.0}  # the hidden case tells them apart


@pytest.mark.slow
@needs_kernel
def test_an_imported_nbgrader_assignment_checks_itself_and_grades(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    nbformat.write(nbgrader_source(), src / "squares.ipynb")
    (src / "numbers.csv").write_text("n\n1\n2\n", encoding="utf-8")
    out = import_and_check("nbgrader", src / "squares.ipynb", tmp_path / "sq")
    assert "locked_cell_modified" in out  # the locked cell: kept locked, its edits flagged
    assert (tmp_path / "sq" / "numbers.csv").is_file()  # the data beside it came along
    scores = grade(tmp_path / "sq", {
        "right": ("def squares", "\n".join(line for line in SOLUTION.splitlines()
                                            if "SOLUTION" not in line)),
        "wrong": ("def squares", "def squares(n):\n    return [i * i for i in range(1, n + 1)]"),
    }, tmp_path)
    # the wrong one passes the visible tests, not the hidden squares(0) one; no answer to Q2
    assert scores["right"] == pytest.approx(2.0)
    assert scores["wrong"] == pytest.approx(1.0)


def test_an_nbgrader_notebook_uploaded_alone_creates_the_assignment_in_the_app(tmp_path):
    from grader.service.workspace import Upload, Workspace
    from grader.store.database import Store

    source = nbformat.writes(nbgrader_source()).encode()
    with Store(tmp_path / "grader.db") as store:
        ws = Workspace(store, tmp_path / "assignments")
        made, parsed = ws.create("Squares homework", Upload("squares.ipynb", source), None,
                                 None)
        assert made.title == "Squares homework"
        assert [c.id for c in made.rubric.criteria] == ["test_squares", "why", "plot_task"]
        assert parsed.report is not None
        assert any(r.item.startswith("locked cell") and r.carried  # kept locked, listed
                   for r in parsed.report.rows)
        template = nbformat.read(made.template, as_version=4)
        assert "raise NotImplementedError()" in template.cells[1].source
        solution = nbformat.read(made.solution, as_version=4)
        assert "range(1, n + 1)" in solution.cells[1].source
        with pytest.raises(RubricError) as err:  # an ordinary template alone still needs the rest
            ws.create("Plain", Upload("plain.ipynb", nbformat.writes(
                new_notebook(metadata=PY, cells=[new_code_cell("x = 1")])).encode()), None, None)
        assert any("no solution notebook uploaded" in p for p in err.value.problems)


# -- otter assign's master notebook ----------------------------------------------------------
def raw(text: str):
    return nbformat.v4.new_raw_cell(text)


def shown(text: str, value: str):
    cell = new_code_cell(text)
    cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": value},
                                           execution_count=1)]
    return cell


def otter_master() -> nbformat.NotebookNode:
    return new_notebook(metadata=PY, cells=[
        raw("# ASSIGNMENT CONFIG\nexport_cell: false\ngenerate: true"),
        new_markdown_cell("# Squares"),
        raw("# BEGIN QUESTION\nname: q1\npoints: 2"),
        new_markdown_cell("**Question 1.** Write `square(x)`."),
        raw("# BEGIN SOLUTION"),
        new_code_cell("def square(x):\n    return x * x  # SOLUTION"),
        raw("# END SOLUTION"),
        raw("# BEGIN TESTS"),
        shown("square(3)", "9"),
        shown('""" # BEGIN TEST CONFIG\nhidden: true\npoints: 1\n'
              'failure_message: not every square\n""" # END TEST CONFIG\n'
              "[square(i) for i in range(4)]", "[0, 1, 4, 9]"),
        new_code_cell("# HIDDEN\nassert square(-2) == 4"),
        raw("# END TESTS"),
        raw("# END QUESTION"),
        raw("# BEGIN QUESTION\nname: q2\npoints: 1\nmanual: true"),
        new_markdown_cell("**Question 2.** Why is a square never negative?"),
        raw("# BEGIN SOLUTION"),
        new_markdown_cell("A number times itself has the same sign twice, so the product "
                          "is positive or zero."),
        raw("# END SOLUTION"),
        raw("# END QUESTION"),
    ])


def test_an_otter_master_notebook_becomes_template_solution_and_rubric():
    from grader.rubrics.import_otter_assign import MD_STUB, import_otter_assign, is_otter_assign

    nb = otter_master()
    assert is_otter_assign(nb)
    assert not is_nbgrader(nb)
    imported = import_otter_assign(nb, "master.ipynb")
    rubric = imported.report.rubric
    assert [(c.id, c.kind, c.points) for c in rubric.criteria] == [
        ("q1", "code", 2.0), ("q2", "written", 1.0)]
    tests = rubric.criteria[0].checks
    assert [(t.name, t.hidden) for t in tests] == [
        ("q1 - 1", False), ("q1 - 2 (hidden)", True), ("q1 - 3 (hidden)", True)]
    assert rubric.criteria[1].checks[0].question == "Question 2. Why is a square never negative?"
    template = [c.source for c in imported.template.cells]
    assert "def square(x):\n    ..." in template
    assert MD_STUB in template
    assert not any("BEGIN" in s or "square(3)" in s for s in template)  # no raw cells, tests
    assert "def square(x):\n    return x * x" in [c.source for c in imported.solution.cells]
    passes, fails = {"square": lambda x: x * x}, {"square": lambda x: x * 3}
    for t in tests:
        exec(t.code, dict(passes))
    exec(tests[0].code, dict(fails))  # 3 * 3 == 9: the visible test cannot tell
    with pytest.raises(AssertionError, match="expected"):
        exec(tests[1].code, dict(fails))
    assert any("assignment config" in r.item for r in imported.report.not_carried)
    broken = otter_master()
    broken.cells = broken.cells[:-1]  # the last question is never closed
    with pytest.raises(RubricError, match="no # END QUESTION"):
        import_otter_assign(broken, "broken.ipynb")


@pytest.mark.slow
@needs_kernel
def test_an_imported_otter_master_ranks_a_correct_function_above_a_wrong_one(tmp_path):
    nbformat.write(otter_master(), tmp_path / "master.ipynb")
    import_and_check("otter", tmp_path / "master.ipynb", tmp_path / "sq")
    scores = grade(tmp_path / "sq", {
        "right": ("def square", "def square(x):\n    return x ** 2"),
        "wrong": ("def square", "def square(x):\n    return x * 3")}, tmp_path)
    assert scores["right"] == pytest.approx(2.0)
    # otter's points: test 2 has 1 of q1's 2, tests 1 and 3 share the other (0.5 each)
    assert scores["wrong"] == pytest.approx(0.5, abs=0.01)


@pytest.mark.parametrize(("markdown", "shown"), [
    ("**Question 1.** Sort `v` into `sorted_v` and count it in `n`.",
     "Question 1. Sort v into sorted_v and count it in n."),
    ("## __Task 3__: describe _why_ it grows", "Task 3: describe why it grows"),
    ("Q2. What is `df.shape`? Explain.", "Q2. What is df.shape? Explain."),
])
def test_an_imported_question_reads_as_written_and_is_found_in_its_cell(markdown, shown):
    # The question an answer check looks for: a name keeps its underscore (the student
    # reads "sorted_v", not "sortedv"), and the check finds it in the markdown it came from.
    assert question_line(markdown) == shown
    assert find_text(normalise_markdown(markdown), normalise_markdown(shown)) >= 0


def test_an_import_report_names_what_was_imported():
    imported = import_nbgrader(nbgrader_source(), "squares.ipynb")
    assert "items of the nbgrader notebook;" in imported.report.summary()
    assert imported.report.retitled("Squares").origin == "the nbgrader notebook"
