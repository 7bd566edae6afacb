"""Layer 2's ``value`` checks: an instructor's expression, evaluated in the student's
kernel and in the solution's after each notebook ran (``grader.sandbox.inspect_code``
summarises its value like a variable's).

With ``expected`` (one or several accepted values, from the rubric), the student's
value must equal one of them: numbers within ``rtol``/``atol``, lists element by
element, text exactly; a one-element list equals its element (R's length-1 vectors).
The rubric's literal ``expected`` is the reference even when the instructor's solution
(the key) gives another value: the docs say to write ``expected`` when the key is
wrong, so students are charged against it, the result's message names the key's
value for the instructor, and the self-check says that the key disagrees
(``key_disagreements``). Without ``expected`` the student's value is compared with
the solution's value of the same expression, as output checks compare variables. An
expression that fails in the student's kernel (a name the notebook never defined)
scores 0 and says why; one that fails on the solution is "environment" (the
machine, not the student, most likely lacks what it needs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..rubrics.check_fields import Check, FrozenObject, show_value, thaw
from ..rubrics.schema import Criterion, Rubric
from ..sandbox.execution import ExecutionResult
from ..sandbox.inspect_code import VariableSummary, expression_key
from ..types import CheckResult, CheckStatus, Evidence
from .compare import compare_variables

__all__ = ["KeyDisagreement", "inspected_names", "key_disagreements", "score_value",
           "values_equal"]


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
    # the rubric's expected value is the reference, whatever the key gives: say it once
    key_note = "" if not check.expected or _matches(on_solution, check) else (
        f" (the instructor's solution gives {_shown(on_solution)}: the rubric's expected "
        "value is the reference)")
    got = run.variables.get(key)
    if got is None or not got.exists:
        why = got.error if got is not None and got.error else "it could not be evaluated"
        return result(0.0, f"`{expr}` fails in the student's notebook: {why}")
    if got.error:
        return result(0.0, f"`{expr}` could not be inspected: {got.error}", "error")
    found = show_value(got.values if got.values is not None else got.head)
    if check.expected:
        if _matches(got, check):
            return result(1.0, f"`{expr}` is {found}, as expected{key_note}", found=found)
        return result(0.0, f"`{expr}` should be {_accepted(check)}; the notebook gives "
                      f"{found}{key_note}", found=found)
    aspects = compare_variables(got, on_solution, ["values"], check.rtol, check.atol)
    ok, message = aspects["values"]
    if ok:
        return result(1.0, f"`{expr}` matches the solution ({found})", found=found)
    return result(0.0, f"`{expr}` differs from the solution: {message}", found=found)


def _shown(var: VariableSummary) -> str:
    return show_value(var.values if var.values is not None else var.head)


@dataclass(frozen=True, slots=True)
class KeyDisagreement:
    """A value check whose literal ``expected``/``accept`` the instructor's solution does
    not give: students are charged against the rubric's value, and the instructor is
    told."""

    criterion: str
    expression: str
    expected: str  # the accepted value(s), as shown
    key: str  # what the solution gives

    def text(self) -> str:
        return (f"The key disagrees with the expected value of the value check `{self.expression}` "
                f"({self.criterion}): the rubric expects {self.expected}, the instructor's "
                f"solution gives {self.key}. Students are charged against the expected value; "
                "if the key is right, correct the rubric.")


def key_disagreements(rubric: Rubric, sol: ExecutionResult) -> list[KeyDisagreement]:
    """The value checks with a literal expected value that the solution's run does not
    give (an expression that fails on the solution is not one: it is "environment")."""
    out = []
    for crit in rubric.criteria:
        for check in crit.evaluated:
            if check.type != "value" or not check.expected:
                continue
            var = sol.variables.get(expression_key(check.expression.strip()))
            if var is None or not var.exists or var.error or _matches(var, check):
                continue
            out.append(KeyDisagreement(crit.id, check.expression.strip(), _accepted(check),
                                       _shown(var)))
    return out
