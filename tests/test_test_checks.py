"""``test`` checks (schema version 2): the instructor's tests run in the student's kernel.

The schema and the editor's tables (multi-line code survives the round trip exactly),
the store's JSON of a hidden result, the letter (a visible test's message plainly; a
hidden test's name, code and message never), the reading of the harness's results
(controls that misbehave make every result untrusted), and real kernels: Python and R
tests that pass, fail, error, time out, kill the kernel, are hidden, or meet a
notebook that tampers with them; and a test that fails on the solution.
"""

from __future__ import annotations

import dataclasses
import json

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.analysis.template import match_template
from grader.assignment import Assignment
from grader.errors import RubricError
from grader.layers import instructor_tests as layer_tests
from grader.layers.base import AssignmentContext, GradeOptions, SubmissionContext
from grader.layers.outputs import OutputLayer
from grader.letters.build import build_letter, letter_markdown
from grader.notebooks.load import load_notebook
from grader.rubrics.check_fields import Check
from grader.rubrics.check_text import format_options
from grader.rubrics.dependencies import duplicate_tests
from grader.rubrics.edit import rows_from_rubric, rubric_from_rows
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
from grader.store.legacy_facts import legacy_facts
from grader.store.serialize import report_from_json, report_to_json
from grader.types import CheckResult, CriterionResult, Evidence, GradeReport

needs_kernel = pytest.mark.skipif(not sandbox_available() or not kernel_available("python"),
                                  reason="bubblewrap or the Python kernel is missing")
needs_r = pytest.mark.skipif(not sandbox_available() or not kernel_available("r"),
                             reason="bubblewrap or the R kernel is missing")

MULTI = "x = f(2)\nassert x == 4, \"f(2) should be 4; got it?\"\n\n  # indented, trailing  "


def rubric_dict(checks: list[dict], version: int = 2, language: str = "python") -> dict:
    return {"schema_version": version, "title": "Functions", "language": language,
            "total_points": 4, "criteria": [{"id": "fn", "title": "Write f", "kind": "code",
                                             "points": 4, "checks": checks}]}


def a_test(**kw) -> dict:
    return {"type": "test", "name": "doubles", "code": "assert f(2) == 4", "weight": 1.0} | kw


# -- the schema -------------------------------------------------------------------------
def test_a_test_check_is_read_written_and_needs_version_2():
    r = rubric_from_dict(rubric_dict([a_test(code=MULTI, message="f doubles", timeout_s=5,
                                             hidden=True)]))
    check = r.criteria[0].checks[0]
    assert (check.name, check.code, check.message, check.timeout_s, check.hidden) == (
        "doubles", MULTI, "f doubles", 5.0, True)
    assert check.target == "doubles"
    assert r.version_2_features() == ["test checks", "hidden checks"]
    assert loads(dumps(r)) == r
    assert loads(dumps(r)).version == r.version
    with pytest.raises(RubricError) as err:
        rubric_from_dict(rubric_dict([a_test()], version=1))
    assert any("test checks" in p and "schema_version 2" in p for p in err.value.problems)


def test_hidden_on_any_check_needs_version_2():
    with pytest.raises(RubricError) as err:
        rubric_from_dict(rubric_dict([{"type": "runs", "hidden": True, "weight": 1}], 1))
    assert any("hidden checks" in p for p in err.value.problems)
    r = rubric_from_dict(rubric_dict([{"type": "runs", "hidden": True, "weight": 1}]))
    assert r.criteria[0].checks[0].hidden


@pytest.mark.parametrize(("fields", "expected"), [
    ({"name": ""}, "needs `name`"),
    ({"code": "  \n"}, "needs code"),
    ({"timeout_s": 0}, "timeout_s: must be more than 0"),
    ({"timeout_s": 601}, "at most 600"),
    ({"timeout_s": "10"}, "expected a number"),
    ({"hidden": "yes"}, "hidden: expected true or false"),
    ({"code": ["assert x"]}, "code: expected a text"),
])
def test_a_bad_test_check_is_named(fields, expected):
    with pytest.raises(RubricError) as err:
        rubric_from_dict(rubric_dict([a_test(**fields)]), "r.json")
    assert any(expected in p for p in err.value.problems), err.value.problems


def test_a_test_belongs_in_a_code_criterion():
    data = rubric_dict([a_test()])
    data["criteria"][0]["kind"] = "written"
    with pytest.raises(RubricError) as err:
        rubric_from_dict(data)
    assert any("unknown check type 'test' for a written criterion" in p
               for p in err.value.problems)


def test_two_tests_of_one_name_in_a_criterion_are_a_problem():
    one, two = Check("test", 0.5, name="a", code="x"), Check("test", 0.5, name="b", code="y")
    assert duplicate_tests([one, two], "criterion 'fn'") == []
    problems = duplicate_tests([one, dataclasses.replace(two, name="a")], "criterion 'fn'")
    assert problems == ["criterion 'fn': two tests are named 'a'; name each test of a "
                        "criterion differently"]


# -- the editor's tables ------------------------------------------------------------------
def rubric_with(*checks: Check, language: str = "python") -> Rubric:
    return Rubric("T", language, 4.0, (Criterion("fn", "Write f", "code", 4.0, checks),))


def test_multi_line_code_is_one_quoted_option_and_round_trips():
    ch = Check("test", 1.0, name="doubles, twice", code=MULTI, message="f(2); not 4",
               timeout_s=7.5, hidden=True)
    r = rubric_with(ch)
    _, rows = rows_from_rubric(r)
    assert rows[0]["target"] == '"doubles, twice"'
    assert format_options(ch) == ("code=" + json.dumps(MULTI, ensure_ascii=False)
                                  + '; message="f(2); not 4"; timeout_s=7.5; hidden=true')
    criteria, checks = rows_from_rubric(r)
    result = rubric_from_rows(criteria, checks, r)
    assert result.errors == []
    assert result.warnings == []
    assert result.rubric is not None
    assert result.rubric.criteria[0].checks[0] == ch
    assert result.rubric.schema_version == 2


def test_the_editor_writes_version_2_once_a_test_is_typed_in():
    old = rubric_from_dict(rubric_dict([{"type": "runs", "weight": 1}], version=1))
    criteria, checks = rows_from_rubric(old)
    checks[0].update(type="test", target="doubles",
                     options='code="assert f(2) == 4\\nassert f(0) == 0"; hidden=true')
    result = rubric_from_rows(criteria, checks, old)
    assert result.errors == [], [str(p) for p in result.errors]
    assert result.rubric is not None
    assert result.rubric.schema_version == 2
    assert result.rubric.criteria[0].checks[0].code == "assert f(2) == 4\nassert f(0) == 0"


def test_hidden_is_an_option_of_every_check_and_a_missing_code_is_placed():
    r = rubric_with(Check("runs", 1.0, hidden=True))
    criteria, checks = rows_from_rubric(r)
    assert checks[0]["options"] == "hidden=true"
    assert rubric_from_rows(criteria, checks, r).warnings == []
    checks[0].update(type="test", target="t", options="")
    bad = rubric_from_rows(criteria, checks, r)
    assert [(p.rows, p.field) for p in bad.errors] == [((0,), "options")]
    assert "needs code" in bad.errors[0].message


TEXT = st.lists(st.one_of(st.sampled_from(list(' ,;:="\\\n\tab|')),
                          st.characters(blacklist_categories=("Cs",))),
                max_size=16).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(TEXT.filter(str.strip), TEXT.filter(str.strip), TEXT,
                          st.floats(0.5, 600), st.booleans()),
                min_size=1, max_size=3, unique_by=lambda t: t[0]))
def test_any_test_checks_round_trip_through_the_tables(tests):
    checks = tuple(Check("test", 1 / len(tests), name=n, code=c, message=m, timeout_s=t,
                         hidden=h) for n, c, m, t, h in tests)
    r = rubric_from_dict(json.loads(dumps(rubric_with(*checks))))
    result = rubric_from_rows(*rows_from_rubric(r), r)
    assert result.errors == [], [str(p) for p in result.errors]
    assert result.rubric is not None
    assert result.rubric.version == r.version


# -- the store and the letter -----------------------------------------------------------
def graded(check: CheckResult, points: float = 0.0) -> GradeReport:
    crit = CriterionResult("fn", "Write f", "code", 4.0, points, checks=[check])
    return GradeReport("s.ipynb", "sha", "demo", "v", "graded", points, 4.0, "S1", "S1",
                       criteria=[crit])


def result(score: float, message: str, hidden: bool = False, status="ok") -> CheckResult:
    """A test's result as grader.layers.instructor_tests makes it: the state in its facts, what the
    test reported as its evidence."""
    detail = message.partition(": ")[2]
    return CheckResult("fn", "test", "doubles", score, 1.0, "L2", message,
                       (Evidence(None, None, detail),) if detail else (), status, hidden,
                       facts=legacy_facts("test", message))


def test_the_store_keeps_hidden_and_older_records_read_as_visible():
    report = graded(result(0.0, "failed: assert f(2) == 4", hidden=True))
    again = report_from_json(report_to_json(report))
    assert again == report
    assert again.criteria[0].checks[0].hidden is True
    data = json.loads(report_to_json(report))
    del data["criteria"][0]["checks"][0]["hidden"]
    assert report_from_json(json.dumps(data)).criteria[0].checks[0].hidden is False


def letter_of(check: CheckResult, spec: Check, points: float = 0.0) -> str:
    return letter_markdown(build_letter(graded(check, points), rubric_with(spec)))


SPEC = Check("test", 1.0, name="doubles", code="assert f(2) == 4  # SECRET-CODE",
             message="f(2) should give 4: SECRET-MESSAGE")


def test_a_failed_visible_test_shows_the_instructors_message():
    text = letter_of(result(0.0, "failed: assert f(2) == 4"), SPEC)
    assert "`doubles` did not pass: f(2) should give 4: SECRET-MESSAGE" in text


def test_without_a_message_the_letter_quotes_what_failed():
    text = letter_of(result(0.0, "failed: x == 3 is not TRUE"),
                     dataclasses.replace(SPEC, message=""))
    assert "`doubles` did not pass." in text
    assert "x == 3 is not TRUE" in text


def test_a_timed_out_test_says_so():
    text = letter_of(result(0.0, "timed out: did not finish within 5.0 s"), SPEC)
    assert "did not finish within 5 seconds" in text


def test_a_passed_test_is_done():
    text = letter_of(result(1.0, "passed"), SPEC, points=4.0)
    assert "4 / 4" in text
    assert "SECRET" not in text


def test_a_hidden_test_never_shows_its_name_code_or_message():
    spec = dataclasses.replace(SPEC, hidden=True)
    text = letter_of(result(0.0, "failed: assert f(2) == 4 SECRET-DETAIL", hidden=True), spec)
    assert "One more of the instructor's checks of this part did not pass." in text
    for secret in ("SECRET", "doubles", "f(2)"):
        assert secret not in text


def test_a_test_that_fails_on_the_solution_is_not_the_students_in_the_letter():
    text = letter_of(result(0.0, "not charged to the student: the instructor's solution "
                            "does not pass this test either (failed: SECRET-DETAIL)",
                            status="error"), SPEC)
    assert "SECRET" not in text
    assert "instructor" in text.lower()


# -- reading the runner's events ----------------------------------------------------------
def verdicts(plan, outcomes: dict[str, tuple[str, str]]) -> list[dict]:
    """Runner events: for each test, the verifier's (status, detail)."""
    out = []
    for item in plan.items:
        status, detail = outcomes.get(item["id"], ("passed", ""))
        out.append({"event": "test", "id": item["id"], "outcome": "ok", "status": status,
                    "detail": detail, "note": "", "error": "", "seconds": 0.1})
    return out


def test_results_are_read_per_test():
    plan = sandbox_tests.test_plan("python", [InstructorTest("fn/a", "assert 1", 5),
                                              InstructorTest("fn/b", "assert 0", 5)])
    assert plan is not None
    assert plan.keys == ("fn/a", "fn/b")
    assert [i["code"] for i in plan.items] == ["assert 1", "assert 0"]  # no harness around
    runs, faults = sandbox_tests.read_tests(plan, verdicts(plan, {"fn/b": ("failed",
                                                                          "assert 0")}))
    assert faults == []
    assert (runs["fn/a"].status, runs["fn/b"].status, runs["fn/b"].detail) == (
        "passed", "failed", "assert 0")


def test_an_unreliable_verdict_and_the_bridges_findings_are_tampering():
    plan = sandbox_tests.test_plan("r", [InstructorTest("fn/a", "stopifnot(x)", 5)])
    assert plan is not None
    events = verdicts(plan, {"fn/a": ("unreliable", "an answer the binding did not write")})
    events.append({"event": "tampering", "found": ["the notebook replaces jsonlite.toJSON"]})
    runs, faults = sandbox_tests.read_tests(plan, events)
    assert runs["fn/a"].status == "unreliable"
    assert [f.text for f in faults] == ["the notebook replaces jsonlite.toJSON",
                                        "an answer the binding did not write"]


def test_an_unreadable_status_is_unreliable_and_a_missing_event_not_run():
    plan = sandbox_tests.test_plan("python", [InstructorTest("fn/a", "assert 1", 5),
                                              InstructorTest("fn/b", "assert 1", 5)])
    assert plan is not None
    events = [e for e in verdicts(plan, {"fn/a": ("PASSED!!", "")}) if e["id"] != "fn/b"]
    runs, _ = sandbox_tests.read_tests(plan, events)
    assert runs["fn/a"].status == "unreliable"
    assert runs["fn/b"].status == "not run"


# -- real kernels: Python -----------------------------------------------------------------
def py_notebook(*cells: str, language: str = "python") -> nbformat.NotebookNode:
    nb = new_notebook(cells=[new_code_cell(c) for c in cells])
    if language == "r":
        nb.metadata["kernelspec"] = {"name": "ir", "language": "R", "display_name": "R"}
    return nb


def run_tests(tmp_path, cells: list[str], tests: dict[str, str], language: str = "python",
              timeout_s: dict[str, float] | None = None, inspect: list[str] | None = None
              ) -> ExecutionResult:
    timeout_s = timeout_s or {}
    return execute_notebook(
        py_notebook(*cells, language=language), language, [], inspect or [],
        ExecLimits(cell_timeout_s=30, total_timeout_s=120), workdir=tmp_path,
        tests=[InstructorTest(k, code, timeout_s.get(k, 20)) for k, code in tests.items()])


STUDENT_PY = "def f(x):\n    return 2 * x\n\ndata = [1, 2, 3]"


@pytest.mark.slow
@needs_kernel
def test_python_tests_pass_fail_error_time_out_and_leave_the_inspection_alone(tmp_path):
    res = run_tests(tmp_path, [STUDENT_PY], {
        "ok": "assert f(2) == 4\nassert len(data) == 3",
        "message": "assert f(3) == 7, 'f(3) should be 7'",
        "line": "y = f(1)\nassert y == 3",
        "error": "assert g(2) == 4",
        "functions": "def test_one():\n    assert f(0) == 0\n\ndef test_two():\n"
                     "    assert f(1) == 5\n\ndef helper():\n    raise RuntimeError('no')",
        "mutates": "data.append(4)\nz = 1",
        "slow": "while True:\n    pass",
        "after": "assert data == [1, 2, 3] and 'z' not in globals()",
    }, timeout_s={"slow": 3}, inspect=["data"])
    t = res.tests
    assert res.error == ""
    assert res.tampering == []
    assert t["ok"].status == "passed"
    assert (t["message"].status, t["message"].detail) == ("failed", "f(3) should be 7")
    assert (t["line"].status, t["line"].detail) == ("failed", "assert y == 3")
    assert t["error"].status == "failed"
    assert t["error"].detail == "NameError: name 'g' is not defined (assert g(2) == 4)"
    assert (t["functions"].status, t["functions"].detail) == ("failed", "assert f(1) == 5")
    assert t["slow"].status == "timeout"
    assert "within 3" in t["slow"].detail
    # each test sees the student's values as the notebook left them, whatever an earlier
    # test did to its own copy, and after a timeout
    assert t["after"].status == "passed"
    assert res.variables["data"].values == [1, 2, 3]  # inspected before any test ran


@pytest.mark.slow
@needs_kernel
def test_a_test_that_kills_the_kernel_does_not_take_the_others(tmp_path):
    crash = "import os, signal\ndef crash():\n    os.kill(os.getpid(), signal.SIGKILL)"
    res = run_tests(tmp_path, [STUDENT_PY, crash], {
        "before": "assert f(1) == 2",
        "kill": "crash()",  # the student's function kills its kernel when the test calls it
        "after": "assert f(5) == 10 and data == [1, 2, 3]",
    })
    assert res.tests["before"].status == "passed"
    assert res.tests["kill"].status == "dead"
    assert res.tests["after"].status == "passed"
    assert any("run again in a fresh one" in n for n in res.notes), res.notes


@pytest.mark.slow
@needs_kernel
def test_monkeypatched_builtins_do_not_reach_the_verdicts_and_are_flagged(tmp_path):
    res = run_tests(tmp_path, [STUDENT_PY, "import builtins\nbuiltins.abs = lambda x: 0\n"
                               "builtins.divmod = print"],
                    {"abs": "assert abs(-2) == 0", "fails": "assert f(2) == 5",
                     "passes": "assert f(2) == 4"})
    assert res.tests["abs"].status == "failed"  # the verifier's abs is Python's own
    assert res.tests["fails"].status == "failed"
    assert res.tests["passes"].status == "passed"
    found = " ".join(e.text for e in res.check_tampering)
    assert "builtins.abs" in found
    assert "builtins.divmod" in found


@pytest.mark.slow
@needs_kernel
def test_a_compile_that_strips_the_tests_asserts_changes_nothing(tmp_path):
    strip = ("import ast, builtins\n_compile = builtins.compile\n"
             "class NoAsserts(ast.NodeTransformer):\n"
             "    def visit_Assert(self, node):\n        return ast.Pass()\n"
             "def compile(src, filename, mode, flags=0, *a, **k):\n"
             "    if isinstance(src, str) and filename.startswith('<instructor'):\n"
             "        tree = NoAsserts().visit(_compile(src, filename, mode, ast.PyCF_ONLY_AST))\n"
             "        return _compile(ast.fix_missing_locations(tree), filename, mode)\n"
             "    return _compile(src, filename, mode, flags, *a, **k)\n"
             "builtins.compile = compile")
    res = run_tests(tmp_path, [STUDENT_PY, strip], {"fails": "assert f(2) == 5"})
    assert res.tests["fails"].status == "failed"
    assert any("builtins.compile" in e.text for e in res.check_tampering)


@pytest.mark.slow
@needs_kernel
def test_output_rewritten_by_the_notebook_does_not_reach_the_verdicts(tmp_path):
    forge = ("import sys\nclass Forge:\n    def __init__(self, out):\n        self.out = out\n"
             "    def write(self, s):\n"
             "        return self.out.write(s.replace('\"failed\"', '\"passed\"'))\n"
             "    def __getattr__(self, name):\n        return getattr(self.out, name)\n"
             "sys.stdout = Forge(sys.stdout)")
    res = run_tests(tmp_path, [STUDENT_PY, forge], {"fails": "assert f(2) == 5",
                                                    "passes": "assert f(3) == 6"})
    assert res.tests["fails"].status == "failed"
    assert res.tests["passes"].status == "passed"


@pytest.mark.slow
@needs_kernel
def test_a_reset_namespace_leaves_the_checks_working(tmp_path):
    res = run_tests(tmp_path, ["%reset -f\n" + STUDENT_PY],
                    {"ok": "assert f(2) == 4", "bad": "assert f(2) == 5"}, inspect=["data"])
    assert (res.tests["ok"].status, res.tests["bad"].status) == ("passed", "failed")
    assert res.variables["data"].values == [1, 2, 3]
    assert res.check_tampering == []


@pytest.mark.slow
@needs_kernel
def test_a_replaced_binding_makes_the_tests_untrusted_never_passed(tmp_path):
    forge = ("import sys, json\n"
             "def fake(request):\n"
             "    print('@@grader-bridge@@0 ' + json.dumps({'body': {}, 'canary': ''}))\n"
             "for key, module in list(sys.modules.items()):\n"
             "    if hasattr(module, 'handle'):\n"
             "        module.handle = fake")
    res = run_tests(tmp_path, [STUDENT_PY, forge], {"bad": "assert f(2) == 5",
                                                    "good": "assert f(2) == 4"})
    assert {k: r.status for k, r in res.tests.items()} == {"bad": "unreliable",
                                                           "good": "unreliable"}
    assert any("did not write" in e.text or "never arrived" in e.text
               for e in res.check_tampering), res.check_tampering


@pytest.mark.slow
@needs_kernel
def test_a_student_function_named_like_a_builtin_is_hidden_from_the_tests(tmp_path):
    res = run_tests(tmp_path, [STUDENT_PY, "def len(x):\n    return 3"],
                    {"len": "assert len(data + data) == 6"})
    assert res.tests["len"].status == "passed"
    assert "defines len" in res.tests["len"].note


# -- real kernels: R ----------------------------------------------------------------------
STUDENT_R = "f <- function(x) 2 * x\nsales <- data.frame(region = c('a', 'b'), price = c(1, 2))"


@pytest.mark.slow
@pytest.mark.r
@needs_r
def test_r_stopifnot_and_testthat_pass_fail_error_and_time_out(tmp_path):
    res = run_tests(tmp_path, [STUDENT_R], {
        "ok": "stopifnot(f(2) == 4, nrow(sales) == 2)",
        "stop": "stopifnot(\"f(3) should be 7\" = f(3) == 7)",
        "expect": "expect_equal(f(3), 7)",
        "block": "test_that(\"doubles\", {\n  expect_equal(f(1), 2)\n  expect_equal(f(2), 5)\n})",
        "prefixed": "testthat::test_that(\"names\", testthat::expect_named(sales, c('x')))",
        "missing": "stopifnot(g(2) == 4)",
        "quotes": "MAX <- 3; CODE <- ')-\"'\nstopifnot(MAX == 3, nchar(CODE) == 3)",
        "slow": "Sys.sleep(60)",
        "after": "x <- 1\nstopifnot(f(5) == 10, !exists('x', envir = globalenv()))",
    }, language="r", timeout_s={"slow": 3})
    t = res.tests
    assert res.error == ""
    assert res.tampering == [], res.tampering
    assert t["ok"].status == "passed"
    assert (t["stop"].status, t["stop"].detail) == ("failed", "f(3) should be 7")
    assert t["expect"].status == "failed"
    assert "not equal to 7" in t["expect"].detail
    assert t["block"].status == "failed"
    assert t["block"].detail.startswith("doubles: ")
    assert t["prefixed"].status == "failed"
    assert t["prefixed"].detail.startswith("names: ")
    assert t["missing"].status == "failed"
    assert 'could not find function "g"' in \
        t["missing"].detail
    assert t["quotes"].status == "passed", t["quotes"]
    assert t["slow"].status == "timeout"
    assert t["after"].status == "passed"


@pytest.mark.slow
@pytest.mark.r
@needs_r
def test_r_masked_stopifnot_is_not_used_and_a_patched_base_is_flagged(tmp_path):
    masked = run_tests(tmp_path / "a", [STUDENT_R, "stopifnot <- function(...) TRUE\n"
                                        "expect_equal <- function(...) invisible(TRUE)"],
                       {"stop": "stopifnot(f(2) == 5)", "expect": "expect_equal(f(2), 5)"},
                       language="r")
    assert masked.tests["stop"].status == "failed"
    assert "redefines stopifnot" in masked.tests["stop"].note
    assert masked.tests["expect"].status == "failed"
    patched = run_tests(tmp_path / "b", [STUDENT_R, 'unlockBinding("stopifnot", baseenv())\n'
                                         'assign("stopifnot", function(...) invisible(TRUE), '
                                         'envir = baseenv())'],
                        {"stop": "stopifnot(f(2) == 5)"}, language="r")
    assert patched.tests["stop"].status == "failed"  # judged by R's own, outside the kernel
    found = [e.text for e in patched.check_tampering]
    assert "the notebook replaced base::stopifnot" in found
    assert any("rewrites the base package" in t for t in found)


# -- the layer: a test that fails on the solution -----------------------------------------
def loaded(node: nbformat.NotebookNode, name: str):
    return load_notebook(nbformat.writes(node).encode(), name)


@pytest.mark.slow
@needs_kernel
def test_the_layer_scores_tests_and_does_not_charge_what_fails_on_the_solution(tmp_path):
    rubric = rubric_from_dict(rubric_dict([
        a_test(name="doubles", code="assert f(2) == 4", weight=0.25),
        a_test(name="zero", code="assert f(0) == 0", weight=0.25, hidden=True),
        a_test(name="broken key", code="assert f(2) == 5", weight=0.25),
        {"type": "runs", "weight": 0.25, "hidden": True}]))
    intro = new_markdown_cell("Write f")
    template = new_notebook(cells=[intro, new_code_cell("# YOUR CODE HERE")])
    solution = new_notebook(cells=[intro, new_code_cell("def f(x):\n    return 2 * x")])
    student = new_notebook(cells=[intro, new_code_cell("def f(x):\n    return 3 * x")])
    actx = AssignmentContext(Assignment("demo", tmp_path, rubric, tmp_path / "r.json",
                                        tmp_path / "t.ipynb", tmp_path / "s.ipynb"),
                             loaded(template, "t.ipynb"), loaded(solution, "s.ipynb"), solution)
    sub = loaded(student, "student.ipynb")
    ctx = SubmissionContext(actx, sub, student, match_template(actx.template, sub,
                                                               rubric.all_placeholders),
                            GradeOptions(cell_timeout_s=30, total_timeout_s=120))
    result = OutputLayer().run(ctx)
    assert result.error == ""
    by = {c.target: c for c in result.checks}
    assert (by["doubles"].score, by["doubles"].status, by["doubles"].hidden) == (0.0, "ok", False)
    assert by["doubles"].message == "failed: assert f(2) == 4"
    assert (by["zero"].score, by["zero"].hidden) == (1.0, True)
    assert by["broken key"].status == "environment"
    assert by["broken key"].score == 0.0
    assert by["broken key"].message.startswith("not charged to the student")
    assert by["all cells"].hidden is True
    assert layer_tests.instructor_tests(rubric)[0].key == "fn/doubles"
