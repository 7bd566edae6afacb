"""Scoring: per-criterion points from the layers' check results, by explicit rules.

Rules (the deterministic part; the LLM layers are reconciled in a later step):

1. Each rubric check contributes ``weight x score`` of its criterion's points,
   where ``score`` in [0, 1] comes from the layer that evaluated it. A
   criterion's points are ``points x sum(weight x score)``, bounded to
   [0, points]. Each score only rises with more correct work, so the total is
   monotonic (property-tested).
2. An output check on a variable that the student only ever assigns literal
   values (flag ``hardcoded_output``) scores 0: the result was typed in, not
   computed.
3. A check that could not be evaluated (its layer crashed, was skipped, or
   reported an error) scores 0 *and* sends the criterion to review, with the
   reason: never an invented score.
"""

from __future__ import annotations

import time

from .rubric import Check, Criterion, Rubric
from .types import CheckResult, CriterionResult, GradeReport, LayerResult

CHECK_LAYER = {"assigns": "L1", "calls": "L1", "answer": "L1", "output": "L2", "runs": "L2"}


def _find(results: list[CheckResult], crit: Criterion, check: Check) -> CheckResult | None:
    return next(
        (
            r
            for r in results
            if r.criterion_id == crit.id and r.check == check.type and r.target == check.target
        ),
        None,
    )


def score_criterion(crit: Criterion, layers: dict[str, LayerResult]) -> CriterionResult:
    l1 = layers.get("L1")
    hardcoded = set(l1.details.get("hardcoded", ())) if l1 is not None else set()
    all_checks = [c for lr in layers.values() for c in lr.checks]
    out = CriterionResult(crit.id, crit.title, crit.kind, crit.points, 0.0)
    fraction = 0.0
    for check in crit.checks:
        layer = CHECK_LAYER[check.type]
        res = _find(all_checks, crit, check)
        if res is None:
            lr = layers.get(layer)
            why = (
                f"layer {layer} crashed: {lr.error}"
                if lr is not None and lr.error
                else f"layer {layer} did not evaluate this check"
            )
            res = CheckResult(
                crit.id, check.type, check.target, 0.0, check.weight, layer, why, status="error"
            )
        if check.type == "output" and check.variable in hardcoded and res.score > 0:
            res = CheckResult(
                res.criterion_id,
                res.check,
                res.target,
                0.0,
                res.weight,
                res.layer,
                f"{res.message}; scored 0: {check.variable} is hard-coded, not computed",
                res.evidence,
                res.status,
            )
        if res.status != "ok":
            out.needs_review = True
            out.review_reasons.append(f"{check.type} {check.target}: {res.message}")
        out.checks.append(res)
        fraction += check.weight * min(1.0, max(0.0, res.score))
    out.points = round(min(crit.points, max(0.0, crit.points * fraction)), 4)
    return out


def build_report(
    rubric: Rubric,
    file: str,
    sha256: str,
    assignment: str,
    layers: dict[str, LayerResult],
    student_id: str = "",
    display_name: str = "",
) -> GradeReport:
    flags = [f for lr in layers.values() for f in lr.flags]
    criteria = [score_criterion(c, layers) for c in rubric.criteria]
    return GradeReport(
        file=file,
        sha256=sha256,
        assignment=assignment,
        rubric_version=rubric.version,
        status="graded",
        score=round(sum(c.points for c in criteria), 4),
        max_score=rubric.total_points,
        student_id=student_id,
        display_name=display_name,
        criteria=criteria,
        flags=flags,
        layers=layers,
        created_at=time.time(),
    )


def error_report(
    rubric: Rubric,
    file: str,
    assignment: str,
    error: str,
    sha256: str = "",
    student_id: str = "",
    display_name: str = "",
) -> GradeReport:
    """A submission that could not be graded at all (e.g. not a notebook): no score."""
    return GradeReport(
        file=file,
        sha256=sha256,
        assignment=assignment,
        rubric_version=rubric.version,
        status="error",
        score=None,
        max_score=rubric.total_points,
        student_id=student_id,
        display_name=display_name,
        error=error,
        created_at=time.time(),
    )
