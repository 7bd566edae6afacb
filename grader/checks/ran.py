"""``ran``: a share of the student's code cells was run by the student without a stored
error. Facts: state ``no_own_code``, ``ran``, ``unrun`` or ``failed``; counts ``ran``,
``cells``, ``never_run``, ``failed``. Evaluated by ``grader.layers.student_work``.
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
    from ..layers.student_work import score_ran

    return score_ran(crit, check, scene.ctx.match)


TYPE = CheckType(
    name="ran", kind="code", layer="L1", rank=105,
    summary="The student ran their code before submitting (outputs stored, no error).",
    scores="1 when that share of the student's code cells was run by the student without a "
    "stored error",
    reads=(Field("min_share", "the share of the student's code cells (default 1)"),),
    target_field=None, target=lambda ch: "cells the student ran",
    evaluate=_evaluate, letter=lazily("grader.letters.level_reading:read_ran"), default_share=1.0,
    produced_by=("rubric file", "editor", "old-system rubric"),
    example="min_share=0.8",
)
