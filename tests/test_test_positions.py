"""A test at its position (issue 20, where tests run): ``after`` on a ``test`` check.

nbgrader runs each test cell in notebook order, in the student's namespace as it is at
that point; otter checks a question at its ``grader.check("q1")`` cell. A test with
``after`` runs right after the first code cell holding that text, before the cells
below it: it sees a value before a later cell reassigns it, and what it deletes (``del``,
R's ``rm``) the later cells no longer have, while a test that restores what it deleted
(nbgrader's ``finally: squares = orig_squares``) leaves the notebook as it was. Without
a cell holding the text it runs after the notebook, with a note. The verdicts are still
the verifier's: a notebook that forges the bridge's answers, before the position or
during the test, gets an untrusted result, never a pass. And the importers write it:
nbgrader's released test cell, otter's ``grader.check("qN")`` (R: ``ottr::check``).
"""

from __future__ import annotations

import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.errors import RubricError
from grader.layers.instructor_tests import instructor_tests
from grader.rubrics.check_fields import Check
from grader.rubrics.edit import rows_from_rubric, rubric_from_rows
from grader.rubrics.import_nbgrader import import_nbgrader
from grader.rubrics.import_otter import check_call, otter_criteria
from grader.rubrics.import_otter_assign import import_otter_assign
from grader.rubrics.schema import Criterion, Rubric, dumps, loads, rubric_from_dict
from grader.sandbox import judged_tests as sandbox_tests
from grader.sandbox.execution import (
    ExecLimits,
    ExecutionResult,
    InstructorTest,
    execute_notebook,
    kernel_available,
    sandbox_available,
)

needs_kernel = pytest.mark.skipif(not sandbox_available() or not kernel_available("python"),
                                  reason="bubblewrap or the Python kernel is missing")
needs_r = pytest.mark.skipif(not sandbox_available() or not kernel_available("r"),
                             reason="bubblewrap or the R kernel is missing")
PY = {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}
R = {"kernelspec": {"name": "ir", "language": "R", "display_name": "R"}}


# -- the rubric ---------------------------------------------------------------------------
def rubric(**fields) -> dict:
    check = {"type": "test", "name": "hundred", "code": "assert hundred == 100", **fields}
    return {"schema_version": 2, "title": "T", "language": "python", "total_points": 1,
            "criteria": [{"id": "h", "title": "Hundred", "kind": "code", "points": 1,
                          "checks": [check]}]}


def test_after_is_read_written_edited_and_planned():
    r = rubric_from_dict(rubric(after='grader.check("q1")'))
    check = r.criteria[0].checks[0]
    assert check.after == 'grader.check("q1")'
    assert "test positions (`after`)" in r.version_2_features()
    assert loads(dumps(r)) == r
    assert json.loads(dumps(r))["criteria"][0]["checks"][0]["after"] == 'grader.check("q1")'
    assert "after" not in json.loads(dumps(rubric_from_dict(rubric())))["criteria"][0][
        "checks"][0]  # without it, the file (and its hash) is as before
    criteria, checks = rows_from_rubric(r)
    assert 'after="grader.check(\\"q1\\")"' in checks[0]["options"]
    edited = rubric_from_rows(criteria, checks, r)
    assert (edited.errors, edited.warnings) == ([], [])
    assert edited.rubric is not None
    assert edited.rubric.criteria[0].checks[0] == check
    [test] = instructor_tests(r)
    assert test.after == 'grader.check("q1")'
    plan = sandbox_tests.test_plan("python", [test, InstructorTest("h/end", "assert 1", 5)])
    assert plan is not None
    assert [i.get("after") for i in plan.items] == ['grader.check("q1")', None]


@pytest.mark.parametrize(("fields", "expected"), [
    ({"after": "  \n"}, "after: the text of the cell"),
    ({"after": 3}, "after: expected a text"),
])
def test_a_bad_position_is_named(fields, expected):
    with pytest.raises(RubricError) as err:
        rubric_from_dict(rubric(**fields))
    assert any(expected in p for p in err.value.problems), err.value.problems


def test_only_a_test_has_a_position():
    data = rubric(after="x")
    data["criteria"][0]["checks"] = [{"type": "runs", "after": "x"}]
    with pytest.raises(RubricError) as err:
        rubric_from_dict(data)
    assert any("only a test check runs at a position" in p for p in err.value.problems)
    r = Rubric("T", "python", 1.0, (Criterion("h", "H", "code", 1.0, (Check("runs", 1.0),)),))
    criteria, checks = rows_from_rubric(r)
    checks[0]["options"] = "after=x"
    warned = rubric_from_rows(criteria, checks, r)
    assert any("after is not used by a runs check" in p.message for p in warned.warnings)


# -- real kernels -------------------------------------------------------------------------
def run(tmp_path, cells: list[str], tests: list[tuple[str, str, str]], language="python",
        inspect: list[str] | None = None, cell_timeout_s: int = 30) -> ExecutionResult:
    nb = new_notebook(metadata=R if language == "r" else PY,
                      cells=[new_code_cell(c) for c in cells])
    return execute_notebook(nb, language, [], inspect or [],
                            ExecLimits(cell_timeout_s=cell_timeout_s, total_timeout_s=120),
                            workdir=tmp_path,
                            tests=[InstructorTest(k, code, 20, after) for k, code, after in tests])


SQUARES = "def squares(n):\n    return [i * i for i in range(1, n + 1)]\n\nhundred = 10 ** 2"
TOTAL = "def total(n):\n    return sum(squares(n))"
# nbgrader's idiom (its user guide's ps1): delete, check the function needs it, restore
RESTORED = ("orig_squares = squares\ndel squares\ntry:\n    total(1)\nexcept NameError:\n"
            "    pass\nelse:\n    raise AssertionError('total does not use squares')\n"
            "finally:\n    squares = orig_squares")
DELETED = ("del squares\ntry:\n    total(1)\nexcept NameError:\n    pass\nelse:\n"
           "    raise AssertionError")


@pytest.mark.slow
@needs_kernel
def test_a_python_test_runs_at_its_cell_in_the_live_namespace(tmp_path):
    res = run(tmp_path, [
        SQUARES, "assert  hundred == 100   # visible test", TOTAL, "# check: restored",
        "kept = 'squares' in globals()", "# check: deleted", "gone = 'squares' not in globals()",
        "total(2)", "hundred = 0  # reused the name after the answer",
    ], [
        ("h/at", "assert hundred == 100", "assert hundred == 100 # visible test"),
        ("h/end", "assert hundred == 100", ""),
        ("s/restored", RESTORED, "# check: restored"),
        ("s/deleted", DELETED, "# check: deleted"),
        ("s/lost", "assert 'squares' not in dir()", ""),
        ("h/nowhere", "assert hundred == 0", 'grader.check("q9")'),
    ], inspect=["kept", "gone", "hundred"])
    t = {k: (r.status, r.note) for k, r in res.tests.items()}
    assert t["h/at"] == ("passed", "")  # before `hundred = 0`, as nbgrader sees it
    assert t["h/end"][0] == "failed"  # no position: after the notebook, as before
    assert t["s/restored"] == ("passed", "")
    assert t["s/deleted"] == ("passed", "")
    assert t["s/lost"][0] == "passed"  # the kernel lost what the test deleted
    assert t["h/nowhere"][0] == "passed"
    assert "is not in this notebook: run after the whole notebook" in t["h/nowhere"][1]
    assert res.variables["kept"].values is True  # restored by the test: still there
    assert res.variables["gone"].values is True  # deleted by the test: gone for the cells
    assert "NameError" in res.cells[7].error  # total(2) after squares was deleted
    assert res.variables["hundred"].values == 0
    assert (res.tampering, res.check_tampering) == ([], [])


@pytest.mark.slow
@needs_kernel
def test_a_test_that_kills_the_kernel_at_its_cell_leaves_the_rest_of_the_notebook(tmp_path):
    crash = "import os, signal\ndef crash():\n    os.kill(os.getpid(), signal.SIGKILL)\nx = 1"
    res = run(tmp_path, [crash, "# here", "y = x + 1", "import time\ntime.sleep(30)",
                         "# never reached"], [
        ("k/kill", "crash()", "# here"),
        ("k/next", "assert x == 1 and 'y' not in dir()", "# here"),  # in the fresh kernel
        ("k/late", "assert y == 2", "# never reached"),
    ], inspect=["y"], cell_timeout_s=3)
    t = {k: (r.status, r.note) for k, r in res.tests.items()}
    assert t["k/kill"][0] == "dead"
    assert t["k/next"] == ("passed", "")
    assert [c.ok for c in res.cells] == [True, True, True, False]  # went on, then timed out
    assert res.variables["y"].values == 2
    assert any("again in a fresh one for the cells and tests after it" in n
               for n in res.notes), res.notes
    assert t["k/late"][0] == "passed"
    assert "the notebook stopped (timeout) before the cell it runs after" in t["k/late"][1]


@pytest.mark.slow
@needs_kernel
def test_a_python_notebook_cannot_forge_a_positional_verdict(tmp_path):
    forge = ("import sys, json\n"
             "def fake(request):\n"
             "    print('@@grader-bridge@@0 ' + json.dumps({'body': {}, 'canary': ''}))\n"
             "def hijack():\n"
             "    for key, module in list(sys.modules.items()):\n"
             "        if hasattr(module, 'handle'):\n"
             "            module.handle = fake\n"
             "    return 2")
    res = run(tmp_path, [SQUARES, forge, "# one", "hijack()\n# two", "hundred = 0"], [
        # the student's function, called by the test, replaces the binding mid-test: the
        # deletions that follow cannot be made by it, and the verdict is not trusted
        ("h/mid", "del squares\nassert hijack() == 2", "# one"),
        ("h/after", "assert hundred == 100", "# two"),
        ("h/wrong", "assert hundred == 5", "# two"),
    ])
    assert {k: r.status for k, r in res.tests.items()} == {
        "h/mid": "unreliable", "h/after": "unreliable", "h/wrong": "unreliable"}
    assert any("did not write" in e.text or "never arrived" in e.text
               for e in res.check_tampering), res.check_tampering


R_CELLS = ["sq <- function(n) (1:n)^2\ntotal <- function(n) sum(sq(n))\nhundred <- 100",
           "stopifnot(hundred == 100)", "kept <- exists('sq')", "# check: deleted",
           "gone <- !exists('sq')", "hundred <- 0"]


@pytest.mark.slow
@pytest.mark.r
@needs_r
def test_an_r_test_runs_at_its_cell_and_what_it_removes_is_gone(tmp_path):
    res = run(tmp_path, R_CELLS, [
        ("h/at", "testthat::expect_equal(hundred, 100)", "stopifnot(hundred == 100)"),
        ("h/end", "stopifnot(hundred == 100)", ""),
        ("s/rm", "rm(sq)\nstopifnot(inherits(try(total(2), silent = TRUE), 'try-error'))",
         "# check: deleted"),
        ("h/nowhere", "stopifnot(hundred == 0)", 'ottr::check("tests/q9.R")'),
    ], language="r", inspect=["kept", "gone", "hundred"])
    t = {k: (r.status, r.note) for k, r in res.tests.items()}
    assert t["h/at"] == ("passed", "")
    assert t["h/end"][0] == "failed"
    assert t["s/rm"] == ("passed", "")
    assert t["h/nowhere"][0] == "passed"
    assert "not in this notebook" in t["h/nowhere"][1]
    assert res.variables["kept"].values is True
    assert res.variables["gone"].values is True
    assert res.variables["hundred"].values == 0
    assert res.check_tampering == []


@pytest.mark.slow
@pytest.mark.r
@needs_r
def test_an_r_notebook_cannot_forge_a_positional_verdict(tmp_path):
    masks = ("stopifnot <- function(...) invisible(TRUE)\n"
             "assignInNamespace('toJSON', function(...) '{\"status\":\"passed\"}', 'jsonlite')")
    res = run(tmp_path, [R_CELLS[0], masks, "# here", "hundred <- 100"], [
        ("h/wrong", "stopifnot(hundred == 5)", "# here"),
        ("h/expect", "testthat::expect_equal(total(2), 6)", "# here"),
    ], language="r")
    assert res.tests["h/wrong"].status == "failed"  # R's own stopifnot, outside the kernel
    assert res.tests["h/expect"].status == "failed"  # 1 + 4 is 5
    assert any("jsonlite::toJSON" in e.text for e in res.check_tampering), res.check_tampering


# -- the importers ------------------------------------------------------------------------
def graded(c, **meta):
    c.metadata["nbgrader"] = {"schema_version": 3, "grade": False, "solution": False,
                              "locked": False, **meta}
    return c


def nbgrader_source(*tests: str) -> nbformat.NotebookNode:
    cells = [graded(new_code_cell("### BEGIN SOLUTION\nhundred = 100\n### END SOLUTION"),
                    solution=True, grade_id="answer")]
    cells += [graded(new_code_cell(code), grade=True, grade_id=f"t{i}", points=1, locked=True)
              for i, code in enumerate(tests)]
    return new_notebook(metadata=PY, cells=cells)


def test_nbgrader_tests_run_after_their_released_cell():
    middle = ("assert hundred > 0\n### BEGIN HIDDEN TESTS\nassert hundred == 100\n"
              "### END HIDDEN TESTS\nassert hundred < 1000")
    imported = import_nbgrader(nbgrader_source(
        middle, "### BEGIN HIDDEN TESTS\nassert hundred % 2 == 0\n### END HIDDEN TESTS",
        "assert hundred > 0"), "h.ipynb")
    visible, hidden = imported.report.rubric.criteria[0].checks
    assert visible.after == hidden.after == "assert hundred > 0\nassert hundred < 1000"
    assert imported.template.cells[1].source == visible.after  # what the student gets
    # the solution's cell holds the released text whole, its hidden tests after it
    assert imported.solution.cells[1].source.startswith(visible.after + "\n")
    assert "assert hundred == 100" in imported.solution.cells[1].source
    # a cell of hidden tests only shows nothing to find it by; a text an earlier cell
    # holds too would find that one: both run after the notebook, and the report says so
    for crit in imported.report.rubric.criteria[1:]:
        assert all(c.after == "" for c in crit.checks)
    todo = [r.todo for r in imported.report.rows if "autograded tests" in r.item]
    assert all("runs after the whole notebook" in t for t in todo[1:])
    assert "runs after the whole notebook" not in todo[0]


OK_TEST = repr({"name": "q1", "points": 1, "suites": [{"type": "doctest", "cases": [
    {"code": ">>> hundred\n100", "hidden": False}]}]})


def test_otter_tests_run_after_the_notebooks_grader_check():
    assert check_call("q1") == 'grader.check("q1")'  # otter's spelling, no notebook given
    assert check_call("q1", ["x = 1", "grader.check( 'q1' )", 'grader.check("q10")']) == \
        "grader.check( 'q1' )"
    assert check_call("q1", ['grader.check("q10")']) == ""
    [crit], _ = otter_criteria([("tests/q1.py", f"test = {OK_TEST}")], set(),
                               ["hundred = 100", 'grader.check("q1")'])
    assert [c.after for c in crit.checks] == ['grader.check("q1")']
    [crit], [row] = otter_criteria([("tests/q1.py", f"test = {OK_TEST}")], set(), ["x = 1"])
    assert [c.after for c in crit.checks] == [""]
    assert "no grader.check('q1')" in row.todo


def test_otter_assign_tests_run_after_the_released_check_cell():
    def master(lang: str, test: str) -> nbformat.NotebookNode:
        meta = R if lang == "r" else PY
        return new_notebook(metadata=meta, cells=[
            nbformat.v4.new_raw_cell("# BEGIN QUESTION\nname: q1\npoints: 1"),
            new_markdown_cell("**Question 1.** Store 100 in `hundred`."),
            nbformat.v4.new_raw_cell("# BEGIN SOLUTION"), new_code_cell("hundred = 100"),
            nbformat.v4.new_raw_cell("# END SOLUTION"), nbformat.v4.new_raw_cell("# BEGIN TESTS"),
            new_code_cell(test), nbformat.v4.new_raw_cell("# END TESTS"),
            nbformat.v4.new_raw_cell("# END QUESTION")])

    py = import_otter_assign(master("python", "assert hundred == 100"), "m.ipynb")
    assert [c.after for c in py.report.rubric.criteria[0].checks] == ['grader.check("q1")']
    r = import_otter_assign(master("r", "stopifnot(hundred == 100)"), "m.ipynb")
    assert [c.after for c in r.report.rubric.criteria[0].checks] == [
        'ottr::check("tests/q1.R")']
    # the template and the solution carry the check call where otter's release does, in a
    # comment cell, so a notebook made from either runs the test there
    for imported, call in ((py, 'grader.check("q1")'), (r, 'ottr::check("tests/q1.R")')):
        for nb in (imported.template, imported.solution):
            sources = [c.source for c in nb.cells]
            at = next(i for i, s in enumerate(sources) if call in s)
            assert sources[at].startswith("# The grader checks q1 here")
            assert any("hundred" in s for s in sources[:at])  # after the answer's cell
