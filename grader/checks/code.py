"""``code``: a regular expression in the student's own code (under a ``question``), at
least ``min_count`` times, or (``absent``) nowhere. Evaluated by
``grader.layers.student_work``; read by ``grader.letters.level_reading``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..check_types import CheckType, Field
from ._scenes import lazily

if TYPE_CHECKING:
    from ..rubrics.check_fields import Check
    from ..rubrics.schema import Criterion
    from ..types import CheckResult


def _evaluate(crit: Criterion, check: Check, scene: Any) -> CheckResult:
    from ..layers.outputs_read import questions
    from ..layers.student_work import score_code

    ctx = scene.ctx
    return score_code(crit, check, ctx.match, ctx.submission.language,
                      questions(ctx.assignment.rubric))


def _target(ch: Check) -> str:
    if ch.absent:
        return f"no /{ch.pattern}/"
    times = f" {ch.min_count} times" if ch.min_count > 1 else ""
    return f"/{ch.pattern}/{times}{' (distinct)' if ch.distinct else ''}"


def _validate(ch: Check, where: str, problems: list[str]) -> None:
    if not ch.pattern:
        problems.append(f"{where}: a code check needs `pattern` (a regular expression "
                        "searched in the student's own code)")
    else:
        try:
            re.compile(ch.pattern)
        except re.error as exc:
            problems.append(f"{where}.pattern: not a regular expression ({exc})")
    if ch.min_count < 1:
        problems.append(f"{where}.min_count: must be >= 1")


TYPE = CheckType(
    name="code", kind="code", layer="L1", rank=90,
    summary="A regular expression in the student's own code (comments and strings aside).",
    scores="1 when the student's own code matches (below)",
    reads=(Field("pattern", "a regular expression", required=True),
           Field("min_count", "at least this many matches (default 1)"),
           Field("distinct", "count distinct matched texts"),
           Field("absent", "passes when the pattern is not found"),
           Field("question", "only the cells under this question"),
           Field("depends_on", "criteria whose values this one uses")),
    target_field="pattern", target=_target,
    evaluate=_evaluate, letter=lazily("grader.letters.level_reading:read_code"), validate=_validate,
    produced_by=("rubric file", "editor", "old-system rubric"),
    example=r"pattern=%>%; min_count=10",
)
