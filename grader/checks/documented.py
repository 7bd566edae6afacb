"""``documented``: a share of the student's code cells carries comments or notes of the
student's own. Facts: state ``no_own_code``, ``documented`` or ``bare``; counts
``documented``, ``cells``, ``asked`` (percent). Evaluated by ``grader.layers.student_work``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..check_types import CheckType, Field
from ._scenes import lazily

if TYPE_CHECKING:
    from ..rubrics.check_fields import Check
    from ..rubrics.schema import Criterion
    from ..types import CheckResult


def _evaluate(crit: Criterion, check: Check, scene: Any) -> CheckResult:
    from ..layers.student_work import score_documented

    ctx = scene.ctx
    return score_documented(crit, check, ctx.match, ctx.submission.language,
                            ctx.assignment.rubric.all_placeholders, ctx.flagged)


TYPE = CheckType(
    name="documented", kind="code", layer="L1", rank=100,
    summary="Comments and notes of the student's own beside their code.",
    scores="1 when that share of the student's code cells carries the student's own "
    "comments or notes",
    reads=(Field("min_share", "the share of the student's code cells (default 0.5)"),),
    target_field=None, target=lambda ch: "comments and notes of the student's own",
    evaluate=_evaluate,
    letter=lazily("grader.letters.level_reading:read_documented"), default_share=0.5,
    produced_by=("rubric file", "editor", "old-system rubric"),
    example="min_share=0.6",
)
