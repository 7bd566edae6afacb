"""``printed``: a pattern or a number in what the student's cells printed (stored
outputs, our run, or either). Evaluated by ``grader.layers.outputs_read``; read by
``grader.letters.value_reading``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..check_types import CheckType, Field
from ._scenes import by_printed, lazily, unless_no_code

if TYPE_CHECKING:
    from ..rubrics.check_fields import Check


def _target(ch: Check) -> str:
    return ch.pattern or ("" if ch.number is None else f"{ch.number:g}")


def _validate(ch: Check, where: str, problems: list[str]) -> None:
    if bool(ch.pattern) == (ch.number is not None):
        problems.append(f"{where}: a printed check needs `pattern` (a regular "
                        "expression) or `number`, one of the two")
    if ch.pattern:
        try:
            re.compile(ch.pattern)
        except re.error as exc:
            problems.append(f"{where}.pattern: not a regular expression ({exc})")


TYPE = CheckType(
    name="printed", kind="code", layer="L2", rank=70,
    summary="A pattern or a number in what the student's code printed.",
    scores="1 when the output is found (below)",
    reads=(Field("pattern", "a regular expression searched in the printed text"),
           Field("number", "a number that must appear (within `rtol`/`atol`)"),
           Field("question", "only the cells under this question (default: every cell)"),
           Field("evidence", "`stored`, `rerun` or `both` (either counts)"),
           Field("rtol", "relative tolerance"), Field("atol", "absolute tolerance"),
           Field("depends_on", "criteria whose values this one uses")),
    target_field="pattern", target=_target,
    evaluate=by_printed,
    letter=unless_no_code(lazily("grader.letters.value_reading:read_printed")), validate=_validate,
    no_code="not_run", reads_outputs="cells", charged_once="values",
    produced_by=("rubric file", "editor", "old-system rubric"),
    example="number=57.3; question=Question 2; evidence=both",
)
