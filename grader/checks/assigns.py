"""``assigns``: variables the student's own code must assign.

Facts: ``found``/``missing`` entries of ``names`` (an entry may be an any-of group,
``"df | data"``), ``expected`` all of them; state ``found`` or ``missing``.
"""

from __future__ import annotations

from ..check_types import CheckType, Field
from ._names import evaluate_names, names_letter, names_problems

TYPE = CheckType(
    name="assigns", kind="code", layer="L1", version=1, rank=10,
    summary="Variables the student's own code assigns (template code does not count).",
    scores="share of the names assigned",
    reads=(Field("names", "variables that must be assigned in the student's own code "
                 "(`df | data` accepts either)", required=True),
           Field("depends_on", "criteria whose values this one uses (a slip there is "
                 "charged there)")),
    target_field="names", target=lambda ch: ", ".join(ch.names),
    evaluate=evaluate_names, letter=names_letter(calls=False), validate=names_problems("names"),
    produced_by=("rubric file", "editor", "old-system rubric", "nbgrader", "otter"),
    example="names=sales_clean, monthly | by_month",
)
