"""``calls``: functions the student's own code must call.

Facts: ``found``/``missing`` entries of ``functions`` (an entry may be an any-of group,
``"read_csv | read.csv"``), ``expected`` all of them; state ``found`` or ``missing``.
"""

from __future__ import annotations

from ..check_types import CheckType, Field
from ._names import evaluate_names, names_letter, names_problems

TYPE = CheckType(
    name="calls", kind="code", layer="L1", version=1, rank=20,
    summary="Functions the student's own code calls.",
    scores="share of the functions called",
    reads=(Field("functions", "functions that must be called (`read_csv` matches "
                 "`pd.read_csv(...)` and `df.read_csv(...)`; `dplyr::filter` matches only "
                 "that; `read_csv | read.csv` accepts either)", required=True),
           Field("depends_on", "criteria whose values this one uses")),
    target_field="functions", target=lambda ch: ", ".join(ch.functions),
    evaluate=evaluate_names, letter=names_letter(calls=True), validate=names_problems("functions"),
    produced_by=("rubric file", "editor", "old-system rubric", "nbgrader", "otter"),
    example="functions=read_csv | read.csv, groupby",
)
