"""``output``: a variable after the student's notebook ran, compared with the solution's.

Evaluated by layer 2 (``grader.layers.outputs`` and ``grader.layers.compare``): type,
shape, columns, rows and values, each worth its share (``partial``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..check_types import CheckType, Field
from ._scenes import lazily

if TYPE_CHECKING:
    from ..rubrics.check_fields import Check
    from ..rubrics.schema import Criterion
    from ..types import CheckResult



def _evaluate(crit: Criterion, check: Check, scene: Any) -> CheckResult:
    from ._scenes import marked

    return marked(check, scene.output_verdict(crit, check))


def _validate(ch: Check, where: str, problems: list[str]) -> None:
    from ..rubrics.check_fields import ASPECTS

    if not ch.variable:
        problems.append(f"{where}: an output check needs `variable`")
    bad = [a for a in ch.compare if a not in ASPECTS]
    if bad:
        problems.append(f"{where}: unknown compare aspects {bad} (valid: {', '.join(ASPECTS)})")
    if ch.partial:
        keys = {k for k, _ in ch.partial}
        if not keys <= set(ch.compare or ("values",)):
            problems.append(f"{where}: partial names aspects that are not compared")
        total = sum(v for _, v in ch.partial)
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            problems.append(f"{where}: partial fractions add up to {total:g}, not 1")


TYPE = CheckType(
    name="output", kind="code", layer="L2", version=1, rank=30,
    summary="A variable after the notebook ran in the sandbox, compared with the solution's.",
    scores="after executing both notebooks, the student's variable is compared with the "
    "solution's",
    reads=(Field("variable", "the variable compared", required=True),
           Field("compare", "subset of `type`, `shape`, `columns`, `values`, `rows`"),
           Field("rtol", "relative tolerance for numbers"),
           Field("atol", "absolute tolerance for numbers"),
           Field("ignore_order", "rows compared in any order"),
           Field("partial", "fraction per compared aspect, adding up to 1 (default: equal "
                 "shares)"),
           Field("depends_on", "criteria whose values this one uses")),
    target_field="variable", target=lambda ch: ch.variable,
    evaluate=_evaluate,
    letter=lazily("grader.letters.output_reading:read_output"), validate=_validate,
    no_code="zero", charged_once="method", zero_when_typed_in=True,
    produced_by=("rubric file", "editor", "old-system rubric"),
    example="variable=sales_clean; compare=type, shape, values; partial=type:0.2, "
    "shape:0.3, values:0.5",
)
