"""``plot``: a drawn figure (an image, a plotly or vega chart) under a question. Evaluated
by ``grader.layers.outputs_read``; read by ``grader.letters.value_reading``.
"""

from __future__ import annotations

from ..check_types import CheckType, Field
from ._scenes import by_printed, lazily, unless_no_code

TYPE = CheckType(
    name="plot", kind="code", layer="L2", rank=80,
    summary="A figure drawn by the student's code (an image, a plotly or vega chart).",
    scores="1 when a plot is found (below)",
    reads=(Field("question", "only the cells under this question (default: every cell)"),
           Field("evidence", "`stored`, `rerun` or `both` (either counts)"),
           Field("depends_on", "criteria whose values this one uses")),
    target_field="question", target=lambda ch: ch.question or "a plot",
    evaluate=by_printed, letter=unless_no_code(lazily("grader.letters.value_reading:read_plot")),
    no_code="not_run", reads_outputs="cells",
    produced_by=("rubric file", "editor", "old-system rubric"),
    example="question=Question 3; evidence=both",
)
