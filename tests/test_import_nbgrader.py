"""nbgrader imports: in R, nbgrader's R stub in the template, testthat/stopifnot test
cells with hidden tests, tasks answered in code or in words, and the imported
assignment's self-check in the R kernel; on nbgrader's own user-guide problem set
(tests/fixtures/nbgrader_ps1), what each item is named and what it becomes."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.analysis.answer_labels import find_text
from grader.analysis.template import normalise_markdown
from grader.rubrics.import_nbgrader import STUB_PATTERNS, STUBS, import_nbgrader, question_line
from grader.rubrics.import_nbgrader_names import findable, plain
from grader.sandbox.execution import kernel_available, sandbox_available
from tests.import_cli import import_and_check

R = {"kernelspec": {"name": "ir", "language": "R", "display_name": "R"}}
PY = {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}


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
    assert rubric.criteria[1].manual  # a task: graded by hand, as in nbgrader
    template = [c.source for c in imported.template.cells]
    assert template[3] == STUBS["r"]
    assert "fail()" in template[3]
    assert template[6] == STUBS["r"]  # a solution cell without markers: the whole cell
    assert template[4] == "testthat::expect_equal(avg, 5)"
    assert imported.solution.cells[3].source == "avg <- mean(x)"
    rows = {r.item.split(" (")[0]: r for r in imported.report.rows}
    assert rows["task 'task_plot'"].carried
    assert "for you to grade" in rows["task 'task_plot'"].imported_as
    assert rows["locked cell 'given'"].carried


@pytest.mark.slow
@pytest.mark.skipif(not sandbox_available() or not kernel_available("r"),
                    reason="bubblewrap or the R kernel is missing")
def test_an_imported_r_nbgrader_assignment_checks_itself(tmp_path):
    nbformat.write(r_source(), tmp_path / "means.ipynb")
    import_and_check("nbgrader", tmp_path / "means.ipynb", tmp_path / "m")


# -- nbgrader's own user-guide problem set: names and kinds (issue 20) ------------------
PS1 = Path(__file__).parent / "fixtures" / "nbgrader_ps1"  # BSD 3-Clause: LICENSE there


def ps1(name: str):
    return import_nbgrader(nbformat.read(PS1 / f"{name}.ipynb", as_version=4), f"{name}.ipynb")


def test_nbgraders_problem_set_is_named_by_its_headings_never_by_markup():
    imported = ps1("problem1")
    rubric = imported.report.rubric
    assert [(c.id, c.title) for c in rubric.criteria] == [
        # a heading's point count that is not the criterion's own is left out of its title
        ("correct_squares", "Part A: tests (correct_squares)"),
        ("squares_invalid_input", "Part A: tests (squares_invalid_input)"),
        ("correct_sum_of_squares", "Part B: tests (correct_sum_of_squares)"),
        ("sum_of_squares_uses_squares", "Part B: tests (sum_of_squares_uses_squares)"),
        ("sum_of_squares_equation", "Part C (1 point)"),
        ("sum_of_squares_application", "Part D (2 points)"),
        ("cell-938593c4a215c6cc", "Part E (4 points)")]
    titles = [c.title for c in rubric.criteria]
    assert len(set(titles)) == len(titles)
    for text in [*titles, *(c.task for c in rubric.criteria),
                 *(ch.question for c in rubric.criteria for ch in c.checks)]:
        assert not re.search(r"^-+$|\$|::|\*\*|`|^#", text), text
    # each question and task is found in the released template's markdown, as written
    shown = [normalise_markdown(c.source) for c in imported.template.cells
             if c.cell_type == "markdown"]
    for crit in rubric.criteria:
        assert any(find_text(md, normalise_markdown(crit.task)) >= 0 for md in shown), crit.task


def test_nbgraders_manually_graded_answers_are_graded_by_hand_and_stubs_are_not_done():
    rubric = ps1("problem1").report.rubric
    by_id = {c.id: c for c in rubric.criteria}
    written = by_id["sum_of_squares_equation"]
    assert (written.kind, written.manual) == ("written", True)  # by hand, never by its words
    assert [(ch.type, ch.question) for ch in written.checks] == [("answer", "Part C (1 point)")]
    code = by_id["sum_of_squares_application"]
    assert code.kind == "code"
    assert code.checks == ()  # no level met (the stub still there): no credit
    full, ran_not = code.levels
    assert (full.credit, ran_not.credit) == (1.0, 0.5)
    gone = full.when[0]
    assert (gone.type, gone.absent, gone.pattern) == ("code", True, STUB_PATTERNS["python"])
    assert [ch.type for ch in full.when] == ["code", "runs"]
    # half when it does not run, and only with code of the student's own: never the template
    assert [(ch.type, ch.pattern, ch.absent) for ch in ran_not.when] == [
        ("code", gone.pattern, True), ("code", r"\S", False)]
    assert re.search(gone.pattern, STUBS["python"])
    assert re.search(STUB_PATTERNS["r"], STUBS["r"])
    assert not re.search(gone.pattern, "def pyramidal_number(n):\n    return sum_of_squares(n)")
    assert by_id["cell-938593c4a215c6cc"].kind == "written"  # Part E: a task, read by hand
    rows = {r.item: r for r in ps1("problem1").report.rows}
    assert "0 while the stub is in it" in rows[
        "manually graded code answer 'sum_of_squares_application'"].imported_as
    part_c = rows["manually graded markdown answer 'sum_of_squares_equation'"].imported_as
    assert "answer under 'Part C (1 point)'" in part_c
    assert "graded by hand" in part_c
    problem2 = ps1("problem2").report.rubric
    assert [(c.title, c.kind, c.manual, c.checks[0].type) for c in problem2.criteria] == [
        ("Part A (1 point)", "written", True, "answer"),
        ("Part B (2 points)", "written", True, "answer")]


def test_a_manual_markdown_answer_without_a_question_above_stays_written():
    nb = new_notebook(metadata=PY, cells=[
        new_markdown_cell("---"),
        cell(new_markdown_cell("It grows."), grade=True, solution=True, grade_id="why",
             points=1)])
    imported = import_nbgrader(nb, "bare.ipynb")
    crit = imported.report.rubric.criteria[0]
    assert (crit.kind, crit.title, crit.checks[0].type) == ("written", "why", "answer")
    assert "write the question's text" in imported.report.rows[0].todo


@pytest.mark.parametrize(("line", "words", "found"), [
    ("Your function should print `[1, 4]` for $n=10$. Check that it does:",
     "Your function should print [1, 4] for. Check that it does:",
     "Your function should print [1, 4] for"),
    ("Write out the equation: $\\sum_i i^2$", "Write out the equation:",
     "Write out the equation"),
    ("**Question 1.** Why? See [the notes](notes.html).", "Question 1. Why? See the notes.",
     "Question 1. Why?"),
    ("---", "", ""), ("![](jupyter.png)", "", ""), ("<hr/>", "", ""), ("$x^2$", "", ""),
])
def test_an_instruction_line_loses_its_markup(line, words, found):
    # plain: the words a reader sees; findable: the words before any markup, which the
    # grader finds in the template's markdown as written
    assert plain(line) == words
    assert findable(line) == found
    if found:
        assert find_text(normalise_markdown(line), normalise_markdown(found)) >= 0
    assert question_line(f"{line}\n## Part B") == (question_line(line) or "Part B")


def test_nbgrader_is_a_tool_of_the_tests_only():
    # requirements-tools.txt installs it in .venv-tools, for the differential tests: the
    # grader reads nbgrader's format itself and never imports the tool
    root = Path(__file__).resolve().parents[1]
    for path in [*root.glob("grader/**/*.py"), *root.glob("inference/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] in {"nbgrader", "otter"} for n in names), path


def test_a_changed_locked_cell_is_flagged_as_nbgraders_checksums_would():
    import copy

    from grader.analysis.template import match_template
    from grader.notebooks.load import load_notebook
    imported = ps1("problem1")
    template = load_notebook(nbformat.writes(imported.template).encode(), "t.ipynb")
    assert any(c.locked for c in template.cells)
    student = copy.deepcopy(imported.template)
    kept = load_notebook(nbformat.writes(student).encode(), "s.ipynb")
    assert not [f for f in match_template(template, kept, ()).flags
                if f.code == "locked_cell_modified"]
    locked = next(c for c in student.cells
                  if (c.metadata.get("nbgrader") or {}).get("locked"))
    locked.source += "\nI changed the instructions."
    edited = load_notebook(nbformat.writes(student).encode(), "s.ipynb")
    (flag,) = [f for f in match_template(template, edited, ()).flags
               if f.code == "locked_cell_modified"]
    assert "1 locked (read-only) cell" in flag.message
