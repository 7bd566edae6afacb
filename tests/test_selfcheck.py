"""The assignment checks itself before any student is graded.

Assignments are built in the test (nbformat notebooks, a rubric, an assignment.toml)
and really run: a Python solution that lacks a package and a data file, an R solution
that calls month() without loading lubridate (measured: a real course's key failed so
under tidyverse 1.3, and every student lost the points silently), a rubric that asks
the template's own variables (the imported rubric that gave a complete submission
63/100), and the bundled examples, which must be sound. The check does not flatter: a
lost tenth of a point shows ("99.7%"), points a missing data file keeps from being
checked are counted apart, and a key that disagrees with an expected value is named.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.sandbox.execution import CellRun, ExecutionResult
from grader.service.selfcheck import SelfCheck, check_assignment, problems_of_run
from grader.service.selfcheck_parts import percent_text

ROOT = Path(__file__).resolve().parents[1]
PY = {"name": "python3", "language": "python", "display_name": "Python 3"}
R = {"name": "ir", "language": "R", "display_name": "R"}


def write_assignment(root: Path, language: str, template: list, solution: list,
                     criteria: list[dict], data: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    kernel = R if language == "r" else PY
    for name, cells in (("template.ipynb", template), ("solution.ipynb", solution)):
        nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": kernel}), root / name)
    (root / "data").mkdir(exist_ok=True)
    for name, text in (data or {"given.csv": "a,b\n1,2\n"}).items():
        (root / "data" / name).write_text(text, encoding="utf-8")
    total = sum(c["points"] for c in criteria)
    (root / "rubric.json").write_text(json.dumps({
        "schema_version": 2, "title": "Check", "language": language, "total_points": total,
        "criteria": criteria}), encoding="utf-8")
    (root / "assignment.toml").write_text(
        'rubric = "rubric.json"\ntemplate = "template.ipynb"\nsolution = "solution.ipynb"\n'
        'data = ["data"]\n', encoding="utf-8")
    return root


def code_criterion(cid: str, names: list[str], points: float = 5) -> dict:
    return {"id": cid, "title": cid, "kind": "code", "points": points,
            "checks": [{"type": "assigns", "names": names, "weight": 1.0}]}


# -- reading a run ------------------------------------------------------------------------
def run_with(*errors: str) -> ExecutionResult:
    cells = [CellRun(f"c{i}", i, not e, e, (), 0.1) for i, e in enumerate(("", *errors))]
    return ExecutionResult(cells, {}, "ir", "r", 1.0, False, True, "")


@pytest.mark.parametrize(("error", "kind", "name"), [
    ("ModuleNotFoundError: No module named 'seaborn'", "missing_package", "seaborn"),
    ("Error in library(janitor): there is no package called ‘janitor’", "missing_package",
     "janitor"),
    ('Error in month(date): could not find function "month"', "missing_function", "month"),
    ("FileNotFoundError: [Errno 2] No such file or directory: 'data/sales.csv'", "missing_data",
     "sales.csv"),
    ("Error: 'data/raw/x.csv' does not exist in current working directory ('/w').",
     "missing_data", "x.csv"),
    ("Error in file(file, \"rt\"): cannot open file 'orders.csv': No such file or directory",
     "missing_data", "orders.csv"),
    ("ZeroDivisionError: division by zero", "error", ""),
])
def test_each_failing_cell_is_said_by_what_it_means(error, kind, name):
    (problem,) = problems_of_run(run_with(error))
    assert (problem.kind, problem.name, problem.cell) == (kind, name, 2)
    assert problem.text.startswith("Cell 2 of the solution")
    assert error.splitlines()[0][:60] in problem.text


# -- real runs ----------------------------------------------------------------------------
@pytest.mark.slow
def test_a_python_solution_missing_a_package_and_a_data_file(tmp_path):
    root = write_assignment(
        tmp_path / "py", "python",
        template=[new_markdown_cell("## Task 1\nLoad the data."),
                  new_code_cell("import pandas as pd\n# YOUR CODE HERE")],
        solution=[new_markdown_cell("## Task 1\nLoad the data."),
                  new_code_cell("import pandas as pd\ngiven = pd.read_csv('data/given.csv')"),
                  new_code_cell("import no_such_package_here\nextra = 1"),
                  new_code_cell("sales = pd.read_csv('data/sales.csv')")],
        criteria=[code_criterion("load", ["given"]), code_criterion("sales", ["sales"])])
    check = check_assignment(load_assignment(root))
    assert check.executed
    kinds = [(p.kind, p.name, p.cell) for p in check.problems]
    assert ("missing_package", "no_such_package_here", 3) in kinds
    assert ("missing_data", "sales.csv", 4) in kinds
    assert len([k for k in kinds if k[1] == "sales.csv"]) == 1  # said once, not twice
    assert not check.sound
    assert "Fix this before grading students" in check.headline()
    assert check.template_percent == 0


def test_a_data_file_the_solution_names_is_found_without_running_it(tmp_path):
    root = write_assignment(
        tmp_path / "static", "python",
        template=[new_markdown_cell("## Task 1\nLoad."), new_code_cell("# YOUR CODE HERE")],
        solution=[new_markdown_cell("## Task 1\nLoad."),
                  new_code_cell("import pandas as pd\nsales = pd.read_csv('../data/sales.csv')\n"
                                "given = pd.read_csv(\"data/given.csv\")")],
        criteria=[code_criterion("load", ["sales", "given"])])
    check = check_assignment(load_assignment(root), GradeOptions(execute=False))
    assert not check.executed
    assert "execution disabled" in check.not_executed
    missing = [p for p in check.problems if p.kind == "missing_data"]
    assert [p.name for p in missing] == ["sales.csv"]  # given.csv is provided
    assert "no file named 'sales.csv'" in missing[0].text


def test_a_rubric_that_asks_for_the_templates_own_work_is_caught(tmp_path):
    """The template already creates `orders`: a check on it gives the template points."""
    root = write_assignment(
        tmp_path / "template-work", "python",
        template=[new_markdown_cell("## Task 1\nJoin."),
                  new_code_cell("orders = [1, 2, 3]\n# YOUR CODE HERE")],
        solution=[new_markdown_cell("## Task 1\nJoin."),
                  new_code_cell("orders = [1, 2, 3]\ntotal = sum(orders)")],
        criteria=[code_criterion("given", ["orders"]), code_criterion("total", ["total"])])
    check = check_assignment(load_assignment(root), GradeOptions(execute=False))
    assert check.solution_percent == pytest.approx(50.0)  # orders is the template's line
    assert any(loss.startswith("given (0 of 5)") for loss in check.losses)
    assert not check.sound


@pytest.mark.slow
@pytest.mark.r
def test_an_r_solution_calling_a_function_no_loaded_package_provides(tmp_path):
    root = write_assignment(
        tmp_path / "r", "r",
        template=[new_markdown_cell("## Task 1\nThe month of each date."),
                  new_code_cell("library(dplyr)\n# YOUR CODE HERE")],
        solution=[new_markdown_cell("## Task 1\nThe month of each date."),
                  new_code_cell("library(dplyr)\nd <- as.Date('2024-03-05')\nm <- month(d)")],
        criteria=[code_criterion("month", ["m"])])
    check = check_assignment(load_assignment(root))
    assert check.executed
    (problem,) = [p for p in check.problems if p.kind == "missing_function"]
    assert problem.name == "month"
    assert problem.cell == 2
    assert "library(lubridate)" in problem.text


@pytest.mark.slow
@pytest.mark.parametrize("name", ["retail-sales", "r-joins", "r-strings-dates", "py-functions",
                                  "r-sleep-survey", "py-levels"])
def test_the_bundled_examples_are_sound(name):
    check = check_assignment(load_assignment(ROOT / "examples" / name))
    assert check.solution_percent == pytest.approx(100.0)
    assert check.template_percent is not None
    assert check.template_percent <= 5
    assert check.problems == ()
    assert check.sound
    assert check.headline().endswith("the rubric tells them apart.")


@pytest.mark.slow
def test_the_cli_check_command_exits_1_on_a_broken_assignment(tmp_path):
    root = write_assignment(
        tmp_path / "cli", "python",
        template=[new_markdown_cell("## Task 1\nLoad."), new_code_cell("# YOUR CODE HERE")],
        solution=[new_markdown_cell("## Task 1\nLoad."),
                  new_code_cell("import pandas as pd\nsales = pd.read_csv('data/sales.csv')")],
        criteria=[code_criterion("load", ["sales"])])
    done = subprocess.run([sys.executable, "-m", "grader", "check", str(root), "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 1, done.stderr
    out = json.loads(done.stdout)
    assert out["sound"] is False
    assert [p["name"] for p in out["problems"]] == ["sales.csv"]


# -- a self-check that does not flatter ---------------------------------------------------
@pytest.mark.parametrize(("value", "shown"), [
    (100.0, "100%"), (100 * 37.4 / 37.5, "99.7%"), (99.96, "99.96%"), (99.9999999, "99.999999%"),
    (50.4, "50%"), (0.0, "0%"), (0.3, "0.3%"), (1e-9, "0.000001%"), (None, "could not be graded"),
])
def test_a_percentage_shows_a_loss(value, shown):
    assert percent_text(value) == shown


def test_a_solution_that_loses_a_tenth_of_a_point_does_not_score_100(tmp_path):
    root = write_assignment(
        tmp_path / "tenth", "python",
        template=[new_markdown_cell("## Task 1\nSum."), new_code_cell("# YOUR CODE HERE")],
        solution=[new_markdown_cell("## Task 1\nSum."), new_code_cell("total = sum([1, 2])")],
        criteria=[code_criterion("total", ["total"], 37.4),
                  code_criterion("named", ["grand_total"], 0.1)])
    check = check_assignment(load_assignment(root), GradeOptions(execute=False))
    assert check.solution_percent == pytest.approx(100 * 37.4 / 37.5)
    assert check.headline().startswith("The solution scores 99.7% and the template 0%")
    assert "100%" not in "\n".join(check.lines())
    assert "The solution loses points on named (0 of 0.1)" in "\n".join(check.lines())
    assert check.sound  # 99.7% is above the bar; the loss is still shown
    # the CLI prints the same words (the app shows check.headline() and check.lines())
    done = subprocess.run([sys.executable, "-m", "grader", "check", str(root), "--no-exec"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "The solution scores 99.7%" in done.stdout
    assert "100%" not in done.stdout


@pytest.mark.slow
def test_points_a_missing_data_file_keeps_from_being_checked_are_said(tmp_path):
    """Every output check is "environment" (the data file is missing), and the other
    checks of its criterion scale up: the solution "scored 100%"."""
    root = write_assignment(
        tmp_path / "unverified", "python",
        template=[new_markdown_cell("## Task 1\nLoad."), new_code_cell("# YOUR CODE HERE")],
        solution=[new_markdown_cell("## Task 1\nLoad."),
                  new_code_cell("import pandas as pd\ngiven = pd.read_csv('data/given.csv')"),
                  new_code_cell("sales = pd.read_csv('data/sales.csv')")],
        criteria=[code_criterion("load", ["given"], 4),
                  {"id": "sales", "title": "Sales", "kind": "code", "points": 16, "checks": [
                      {"type": "calls", "functions": ["read_csv"], "weight": 0.25},
                      {"type": "output", "variable": "sales", "compare": ["shape"],
                       "weight": 0.75}]}])
    check = check_assignment(load_assignment(root))
    assert check.solution_percent == pytest.approx(100.0)  # what scoring alone would say
    assert (check.unverified_points, check.total_points) == (12, 20)
    assert check.headline().startswith(
        "12 of 20 points could not be checked: data file missing. The solution earns 8 of "
        "the 8 points that could be checked, and the template scores 0%")
    text = "\n".join(check.lines())
    assert "scores 100%" not in text
    assert "Not checked: sales, output sales (12 points)" in text
    assert not any(loss.startswith("sales") for loss in check.losses)  # said once, apart
    assert not check.sound
    again = SelfCheck.from_dict(json.loads(json.dumps(check.to_dict())))
    assert again.lines() == check.lines()  # the app's subprocess gives the same words


@pytest.mark.slow
def test_the_self_check_says_the_key_disagrees_with_an_expected_value(tmp_path):
    root = write_assignment(
        tmp_path / "key", "python",
        template=[new_markdown_cell("## Task 1\nCount."), new_code_cell("# YOUR CODE HERE")],
        solution=[new_markdown_cell("## Task 1\nCount."), new_code_cell("n = 56")],
        criteria=[code_criterion("named", ["n"], 5),
                  {"id": "count", "title": "Count", "kind": "code", "points": 5, "checks": [
                      {"type": "value", "expression": "n", "expected": 57, "weight": 1}]}])
    check = check_assignment(load_assignment(root))
    (line,) = check.key_disagreements
    assert line.startswith("The key disagrees with the expected value of the value check `n` "
                           "(count): the rubric expects 57, the instructor's solution gives 56")
    assert line in check.lines()
    assert check.solution_percent == pytest.approx(50.0)  # charged against 57, like a student
    assert check.unverified_points == 0


def test_points_graded_by_hand_are_said_apart_and_out_of_the_percentages(tmp_path):
    root = write_assignment(
        tmp_path / "manual", "python",
        template=[new_markdown_cell("## Task 1\nSum."), new_code_cell("# YOUR CODE HERE"),
                  new_markdown_cell("## Part E\nExplain your method.")],
        solution=[new_markdown_cell("## Task 1\nSum."), new_code_cell("total = sum([1, 2])"),
                  new_markdown_cell("## Part E\nExplain your method.")],
        criteria=[code_criterion("total", ["total"], 6),
                  {"id": "part-e", "title": "Part E", "kind": "written", "points": 4,
                   "manual": True}])
    check = check_assignment(load_assignment(root), GradeOptions(execute=False))
    assert check.solution_percent == pytest.approx(100.0)  # of the 6 automatic points
    assert check.manual_points == 4
    assert check.headline().startswith(
        "The solution scores 100% and the template 0% of the points graded automatically "
        "(4 points are for you to grade: Part E)")
    assert check.sound
    assert SelfCheck.from_dict(json.loads(json.dumps(check.to_dict()))) == check
