"""Layer 2's ``value`` checks: an instructor's expression, evaluated in the student's
kernel and in the solution's after each notebook ran (``grader.sandbox.inspect_code``
summarises its value like a variable's).

With ``expected`` (one or several accepted values, from the rubric), the student's
value must equal one of them: numbers within ``rtol``/``atol``, lists element by
element, text exactly; a one-element list equals its element (R's length-1 vectors).
The solution must give an accepted value too, or the check is the instructor's
problem: "environment", not charged. Without ``expected`` the student's value is
compared with the solution's value of the same expression, as output checks compare
variables. An expression that fails in the student's kernel (a name the notebook
never defined) scores 0 and says why; one that fails on the solution is
"environment".
"""

from __future__ import annotations

import math
from typing import Any

from ..rubrics.checks import Check, FrozenObject, show_value, thaw
from ..rubrics.schema import Criterion, Rubric
from ..sandbox.execution import ExecutionResult
from ..sandbox.inspect_code import VariableSummary, expression_key
from ..types import CheckResult, CheckStatus, Evidence
from .compare import compare_variables

__all__ = ["inspected_names", "score_value", "values_equal"]

def inspected_names(rubric: Rubric) -> list[str]:
    """What the sandbox inspects after a run: the output checks' variables and the
    value checks' expressions."""
    return rubric.output_variables() + [expression_key(e) for e in rubric.value_expressions()]


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def values_equal(got: Any, want: Any, rtol: float, atol: float) -> bool:
    """``got`` (a summary's JSON value) equals ``want`` (an expected value, frozen)."""
    want = thaw(want) if isinstance(want, tuple | FrozenObject) else want
    if isinstance(got, list) and len(got) == 1 and not isinstance(want, list):
        got = got[0]
    if isinstance(want, list) and len(want) == 1 and not isinstance(got, list):
        want = want[0]
    if _number(got) and _number(want):
        return math.isclose(float(got), float(want), rel_tol=rtol, abs_tol=atol)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(
            values_equal(g, w, rtol, atol) for g, w in zip(got, want, strict=True))
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(
            values_equal(got[k], want[k], rtol, atol) for k in got)
    return type(got) is type(want) and got == want


def _accepted(check: Check) -> str:
    shown = [show_value(v) for v in check.expected]
    return shown[0] + (f" (or {', '.join(shown[1:])})" if len(shown) > 1 else "")


def _matches(var: VariableSummary, check: Check) -> bool:
    return var.values is not None and any(
        values_equal(var.values, want, check.rtol, check.atol) for want in check.expected)


def score_value(crit: Criterion, check: Check, run: ExecutionResult | None,
                sol: ExecutionResult | None, reason: str) -> CheckResult:
    expr = check.expression.strip()

    def result(score: float, message: str, status: CheckStatus = "ok",
               found: str = "") -> CheckResult:
        evidence = (Evidence(None, None, f"{expr} = {found}"),) if found else ()
        return CheckResult(crit.id, "value", check.target, score, check.weight, "L2",
                           message, evidence, status, check.hidden)

    if reason or run is None or sol is None:
        return result(0.0, f"not checked: {reason or 'the notebook did not run'}", "skipped")
    key = expression_key(expr)
    on_solution = sol.variables.get(key)
    if on_solution is None or not on_solution.exists or on_solution.error:
        why = on_solution.error if on_solution is not None else "it was not evaluated"
        return result(0.0, "not charged to the student: the expression fails on the "
                      f"instructor's solution too ({why or 'no value'}); check the "
                      "expression and the packages the machine has", "environment")
    if check.expected and not _matches(on_solution, check):
        return result(0.0, "not charged to the student: the instructor's solution gives "
                      f"{show_value(on_solution.values)}, not the expected "
                      f"{_accepted(check)}; check the rubric's expected value",
                      "environment")
    got = run.variables.get(key)
    if got is None or not got.exists:
        why = got.error if got is not None and got.error else "it could not be evaluated"
        return result(0.0, f"`{expr}` fails in the student's notebook: {why}")
    if got.error:
        return result(0.0, f"`{expr}` could not be inspected: {got.error}", "error")
    found = show_value(got.values if got.values is not None else got.head)
    if check.expected:
        if _matches(got, check):
            return result(1.0, f"`{expr}` is {found}, as expected", found=found)
        return result(0.0, f"`{expr}` should be {_accepted(check)}; the notebook gives "
                      f"{found}", found=found)
    aspects = compare_variables(got, on_solution, ["values"], check.rtol, check.atol)
    ok, message = aspects["values"]
    if ok:
        return result(1.0, f"`{expr}` matches the solution ({found})", found=found)
    return result(0.0, f"`{expr}` differs from the solution: {message}", found=found)
