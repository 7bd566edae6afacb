"""``value``: an instructor's expression evaluated in the student's kernel and the
solution's, compared with the expected value (or the solution's). Evaluated by
``grader.layers.values``; read by ``grader.letters.value_reading``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..check_types import CheckType, Field
from ._scenes import lazily, unless_no_code

if TYPE_CHECKING:
    from ..rubrics.check_fields import Check
    from ..rubrics.schema import Criterion
    from ..types import CheckResult


def _evaluate(crit: Criterion, check: Check, scene: Any) -> CheckResult:
    from ..layers.values import score_value

    return score_value(crit, check, scene.run, scene.solution, scene.reason)


def _validate(ch: Check, where: str, problems: list[str]) -> None:
    if not ch.expression.strip():
        problems.append(f"{where}: a value check needs `expression` (evaluated in the "
                        "student's kernel, e.g. `nrow(sales_clean)` or "
                        "`df[\"region\"].nunique()`)")


TYPE = CheckType(
    name="value", kind="code", layer="L2", rank=60,
    summary="An expression evaluated after the student's notebook ran, compared with the "
    "expected value or the solution's.",
    scores="1 when the expression's value is accepted (below)",
    reads=(Field("expression", "evaluated in the student's kernel and the solution's",
                 required=True),
           Field("expected", "the value to expect (JSON; without `expected` or `accept`, "
                 "the solution's value)"),
           Field("accept", "several accepted values, a list"),
           Field("rtol", "relative tolerance"), Field("atol", "absolute tolerance"),
           Field("depends_on", "criteria whose values this one uses")),
    target_field="expression", target=lambda ch: ch.expression,
    evaluate=_evaluate,
    letter=unless_no_code(lazily("grader.letters.value_reading:read_value")), validate=_validate,
    no_code="not_run", charged_once="values",
    produced_by=("rubric file", "editor", "old-system rubric", "nbgrader", "otter"),
    example="expression=nrow(sales_clean); expected=178",
)
