"""Layer 2's ``test`` checks: the instructor's tests, run in the student's kernel and in
the solution's (``grader.sandbox.judged_tests`` runs them: after the notebook, or, for a test
with ``after``, right after the cell that holds that text, as nbgrader and otter do).

A test scores 1 when it passes in the student's kernel and 0 when it fails (an
assertion, an error, its time limit, the kernel killed), with what failed as the
message. A test that does not pass on the instructor's solution is the instructor's
or the machine's problem, not the student's: the check is marked "error", so the
criterion goes to review, and its message says it is not charged to the student. A
result that cannot be believed (the notebook tampers with the tests) or a test that
could not run is "error" too. A hidden test counts like any other; its result is
marked ``hidden`` so that only the instructor sees its name, code and message.

The names a test takes from outside the notebook (Python's built-ins, the solution's
imports, R's base and the solution's packages: ``grader.sandbox.clean_names``) are the
verifier's own, never the student's; a notebook binding that shadows one is reported as
tampering with the checks (the ``check_tampering`` flag sends the grade to review).
"""

from __future__ import annotations

from ..rubrics.check_fields import Check
from ..rubrics.schema import Criterion, Rubric
from ..sandbox.clean_names import CleanNames, clean_names
from ..sandbox.execution import ExecutionResult, InstructorTest, TestRun
from ..types import CheckResult, CheckStatus, Evidence, Facts
from .base import AssignmentContext

__all__ = ["assignment_names", "assignment_tests", "instructor_tests", "key_of_test", "score_test"]


def key_of_test(criterion_id: str, name: str) -> str:
    return f"{criterion_id}/{name}"


def instructor_tests(rubric: Rubric, clean: CleanNames | None = None) -> list[InstructorTest]:
    """The rubric's tests, in rubric order, as the sandbox runs them; ``clean``: the names
    they take from outside the notebook (``grader.sandbox.clean_names``, read off the
    solution)."""
    return [InstructorTest(key_of_test(c.id, ch.name), ch.code, ch.timeout_s, ch.after, clean)
            for c in rubric.criteria for ch in c.evaluated if ch.type == "test"]


def assignment_names(actx: AssignmentContext) -> CleanNames:
    """The clean namespace of the assignment's tests and value checks, read off its
    solution once per assignment (``grader.sandbox.clean_names``). No lock: the solution's
    run asks for it while it holds ``actx.lock``, and reading it twice does no harm."""
    names = actx.cache.get("clean_names")
    if names is None:
        names = clean_names(actx.assignment.language, actx.solution_raw)
        actx.cache["clean_names"] = names
    return names


def assignment_tests(actx: AssignmentContext) -> list[InstructorTest]:
    """The assignment's tests as the sandbox runs them, with their clean namespace."""
    return instructor_tests(actx.rubric, assignment_names(actx))


def describe(run: TestRun) -> str:
    """What happened to a test, for the instructor (the letter reads its first words)."""
    return {"passed": "passed",
            "failed": f"failed: {run.detail}",
            "timeout": f"timed out: {run.detail}",
            "dead": f"the kernel died: {run.detail}",
            "not run": f"not run: {run.detail}",
            "unreliable": f"not trusted: {run.detail}"}[run.status]


def score_test(crit: Criterion, check: Check, run: ExecutionResult | None,
                sol: ExecutionResult | None, reason: str) -> CheckResult:
    def result(score: float, message: str, status: CheckStatus = "ok",
               detail: str = "", state: str = "") -> CheckResult:
        evidence = (Evidence(None, None, detail),) if detail else ()
        return CheckResult(crit.id, "test", check.name, score, check.weight, "L2", message,
                           evidence, status, check.hidden, facts=Facts(state))

    if reason or run is None or sol is None:
        return result(0.0, f"not checked: {reason or 'the notebook did not run'}", "skipped")
    key = key_of_test(crit.id, check.name)
    on_solution = sol.tests.get(key)
    if on_solution is None or on_solution.status != "passed":
        why = describe(on_solution) if on_solution is not None else "it did not run"
        return result(0.0, "not charged to the student: the instructor's solution does not "
                      f"pass this test either ({why}); check the test and the packages the "
                      "machine has", "environment")
    got = run.tests.get(key)
    if got is None:
        return result(0.0, "the test did not run in the student's kernel", "error")
    note = f" ({got.note})" if got.note else ""
    if got.status == "passed":
        return result(1.0, "passed" + note, state="passed")
    status: CheckStatus = "error" if got.status in ("not run", "unreliable") else "ok"
    return result(0.0, describe(got) + note, status, got.detail, got.status)
