"""A judging model's key points, checked against the ones the rubric's terms found.

An answer check's key points are found by their terms (``grader.layers.answer_levels``):
a student who writes "sales went up" where the terms say "grew, increased" misses a
point a reader would give. A model trusted to judge (``can_judge``) lists the points it
sees (``points_met`` in its reply); its verdict is checked against the terms:

- a point the terms found stands whatever the model says (the words are on the page);
  a model that denies it sends the criterion to review;
- a point only the model saw may lift the answer to the level the points then meet, and
  the criterion goes to review naming those points: the instructor confirms before
  release. The deterministic level is the fallback: an advisory model, a reply without
  ``points_met`` or a failed layer changes nothing.
"""

from __future__ import annotations

from .layers.answer_levels import level_of
from .points import as_points
from .rubrics.schema import Criterion
from .types import CriterionResult, LayerResult


def judge_key_points(crit: CriterionResult, spec: Criterion | None,
                     layers: dict[str, LayerResult], item: dict) -> bool:
    """Apply the model's ``points_met`` to ``crit``; True when it moved the points."""
    check = next((ch for ch in spec.checks if ch.type == "answer"), None) if spec else None
    l1 = layers.get("L1")
    said = item.get("points_met")
    if check is None or not check.key_points or l1 is None or not isinstance(said, list):
        return False
    seen = (l1.details.get("key_points") or {}).get(f"{crit.id}:{check.question}")
    if not isinstance(seen, dict) or len(spec.checks) != 1:
        return False  # unanswered, or several answers in one criterion: the checks stand
    names = [kp.point for kp in check.key_points]
    found = {p for p in seen.get("found", []) if p in names}
    model = {p for p in said if isinstance(p, str) and p in names}
    if denied := sorted(found - model, key=names.index):
        crit.needs_review = True
        crit.review_reasons.append(
            "the feedback model says the answer misses " + "; ".join(denied)
            + ", which its words name: the points stand as the terms found them")
    extra = sorted(model - found, key=names.index)
    if not extra:
        return False
    level = level_of(check, len(found | model), int(seen.get("words", 0)))
    credit = level.credit if level is not None else 0.0
    share = crit.points / crit.max_points if crit.max_points else 0.0
    if credit <= share + 1e-9:
        return False
    before = crit.points
    crit.points = round(crit.max_points * credit, 4)
    crit.needs_review = True
    crit.review_reasons.append(
        f"the feedback model found key points the rubric's terms did not ({'; '.join(extra)}): "
        f"{as_points(before)} -> {as_points(crit.points)} of {as_points(crit.max_points)}; confirm "
        "before release")
    return True
