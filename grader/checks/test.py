"""``test``: the instructor's test (asserts, test functions; R: stopifnot, testthat), run
by the verifier against the student's notebook after it ran, or right after the cell
that holds ``after``. Evaluated by ``grader.layers.instructor_tests``; read by
``grader.letters.verdict_reading``.
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
    from ..layers.instructor_tests import score_test

    return score_test(crit, check, scene.run, scene.solution, scene.reason)


def _validate(ch: Check, where: str, problems: list[str]) -> None:
    from ..rubrics.check_fields import MAX_TEST_TIMEOUT_S

    if not ch.name.strip():
        problems.append(f"{where}: a test check needs `name`")
    if not ch.code.strip():
        problems.append(f"{where}.code: a test check needs code (assert statements or "
                        "test functions; R: stopifnot or testthat expectations)")
    if not 0 < ch.timeout_s <= MAX_TEST_TIMEOUT_S:
        problems.append(f"{where}.timeout_s: must be more than 0 and at most "
                        f"{MAX_TEST_TIMEOUT_S:g} seconds")
    if ch.after and not ch.after.strip():
        problems.append(f"{where}.after: the text of the cell the test runs after "
                        "(leave `after` out to run it after the whole notebook)")


TYPE = CheckType(
    name="test", kind="code", layer="L2", rank=50,
    summary="The instructor's test, run against the student's notebook by the verifier.",
    scores="1 when the instructor's test passes against the student's notebook (below)",
    reads=(Field("name", "what the instructor calls it (unique in its criterion)",
                 required=True),
           Field("code", "assert statements or test functions (Python); stopifnot or "
                 "testthat expectations (R)", required=True),
           Field("message", "what the student reads when it fails"),
           Field("timeout_s", "its time limit (default 30 s)"),
           Field("after", "runs right after the first code cell holding this text"),
           Field("depends_on", "criteria whose values this one uses")),
    target_field="name", target=lambda ch: ch.name,
    evaluate=_evaluate,
    letter=unless_no_code(lazily("grader.letters.verdict_reading:read_test")), validate=_validate,
    no_code="not_run", charged_once="values",
    produced_by=("rubric file", "editor", "nbgrader", "otter"),
    example='name=mean is right; code="assert abs(mean_sales - 64.58) < 0.01"',
)
