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
3b. A check the instructor's own solution fails too (status ``environment``: a
   test the key does not pass, a variable the key's run does not define, because
   of a broken key, or a package or data file this machine lacks) is not charged:
   the criterion's points come from its other checks, their weights scaled to add
   up to 1, and it goes to review saying so. With no other check it scores 0 and
   goes to review: never an invented score.
4. The wrong-notebook gate: a notebook with too little in common with the
   template (flag ``unlike_template``: most likely another assignment's or the
   lecture's notebook, which earns points for calling the same functions) scores 0
   on every criterion and goes to review; each reason says what the checks gave,
   so the instructor who finds it is the right notebook knows what to restore.
5. Consequential errors are charged once. A check that names criteria in
   ``depends_on`` (transitively: their own ``depends_on`` too), when one of them
   failed (a check of it ran and scored below 1), is judged on its method only:
   an output check keeps its type, shape and columns (``method_score``), and
   value, test and printed checks, and output checks of values alone, are not
   charged (the criterion's other checks scale up, as in 3b). The reason says
   which upstream criterion is charged instead. Only a check that saw the
   student's own result is relieved (work left undone is charged); one that met
   its target is left as it is; without ``depends_on`` nothing changes.
6. Levels (a criterion's ``levels``, as rubrics give credit by approach and level):
   the first level whose checks all pass gives ``points x credit``; its sentence is
   the criterion's result ("level" in the checks). When no level holds, rules 1-5
   stand (no credit for a criterion with levels only). A condition that could not be
   evaluated decides nothing and sends the criterion to review.
7. A manual criterion (``manual``: graded by hand, as nbgrader's manually graded
   answers and tasks) earns no automatic points: it goes to review "for you to grade"
   until the instructor's override gives its points; no model moves them.
8. Points are kept to the gradebook's 2 decimals, last (``grader.points``); the total is their sum.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from . import check_types
from .judged_points import judge_key_points
from .points import as_points, gradebook, total
from .rubrics.check_fields import Check
from .rubrics.schema import Criterion, Rubric
from .types import CheckResult, CriterionResult, Facts, GradeReport, LayerResult

GATES = ("unlike_template",)  # flags that score a notebook 0 and send it to review


def _find(results: list[CheckResult], crit: Criterion, check: Check) -> CheckResult | None:
    return next((r for r in results if r.criterion_id == crit.id and r.check == check.type
                 and r.target == check.target), None)


MANUAL = "for you to grade"  # the review reason of a manual criterion, said first


def score_criterion(crit: Criterion, layers: dict[str, LayerResult],
                    failed_upstream: Callable[[Check], list[str]] | None = None
                    ) -> CriterionResult:
    """Rules 1-3b for one criterion; ``failed_upstream(check)``: the criteria a check
    depends on (transitively) that failed (rule 5)."""
    l1 = layers.get("L1")
    hardcoded = set(l1.details.get("hardcoded", ())) if l1 is not None else set()
    all_checks = [c for lr in layers.values() for c in lr.checks]
    out = CriterionResult(crit.id, crit.title, crit.kind, crit.points, 0.0)
    fraction = charged = relieved = 0.0
    for check in crit.checks:
        layer = check_types.of(check.type).layer
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
        if check_types.of(check.type).zero_when_typed_in and check.target in hardcoded \
                and res.score > 0:
            res = dataclasses.replace(
                res, score=0.0,
                message=f"{res.message}; scored 0: {check.target} is hard-coded, not computed",
                facts=dataclasses.replace(res.facts, counts=(*res.facts.counts,
                                                             ("hardcoded", 1))))
        if check.hidden and not res.hidden:  # the rubric's word, whichever layer evaluated it
            res = dataclasses.replace(res, hidden=True)
        upstream = failed_upstream(check) if failed_upstream and check.depends_on else []
        if upstream and res.status == "ok" and res.score < 1 and res.evidence:
            res, uncharged = _charged_once(res, upstream)
            if uncharged:
                out.checks.append(res)
                relieved += check.weight
                continue  # rule 5: the slip was charged upstream
        if res.status != "ok":
            out.needs_review = True
            out.review_reasons.append(f"{check.type} {check.target}: {res.message}")
        out.checks.append(res)
        if res.status == "environment":
            continue  # rule 3b: not charged
        charged += check.weight
        fraction += check.weight * min(1.0, max(0.0, res.score))
    if charged and charged < sum(ch.weight for ch in crit.checks):
        fraction /= charged  # rules 3b, 5: the other checks' weights scaled to add up to 1
    elif relieved and not charged:
        out.needs_review = True
        out.review_reasons.append("every check compares values that follow from a criterion "
                                  "that failed upstream: nothing is left to judge the method by")
    out.points = round(min(crit.points, max(0.0, crit.points * fraction)), 4)
    if crit.levels:
        _apply_levels(crit, out, all_checks, fraction if crit.checks else 0.0)
    if crit.manual:  # rule 7: graded by hand; its checks, if any, are what the grader saw
        out.points = 0.0
        out.needs_review = True
        out.review_reasons.insert(0, f"{MANUAL}: {crit.title} ({as_points(crit.points)} points) is "
                                  "graded by hand; override it with the points you give")
    return out


def _apply_levels(crit: Criterion, out: CriterionResult, results: list[CheckResult],
                  fraction: float) -> None:
    """Rule 6: the first level whose checks all pass gives the criterion its credit;
    when none does, the weighted checks' share stands (0 without checks). A condition
    that could not be evaluated decides nothing and sends the criterion to review; one
    the solution fails too (environment) holds, and is reviewed."""
    for n, level in enumerate(crit.levels, 1):
        got = [(ch, _find(results, crit, ch)) for ch in level.when]
        unknown = [ch for ch, r in got if r is None or r.status in ("error", "skipped")]
        if unknown:
            out.needs_review = True
            out.review_reasons.append(
                f"level {n} ({level.says or f'{level.credit:.0%}'}) could not be decided: "
                + "; ".join(f"{ch.type} {ch.target} was not evaluated" for ch in unknown))
            continue
        if not all(r is not None and (r.status == "environment" or r.score >= 1 - 1e-9)
                   for _, r in got):
            continue
        unverified = [r for _, r in got if r is not None and r.status == "environment"]
        if unverified:
            out.needs_review = True
            out.review_reasons.append(
                f"level {n} holds only because the solution fails "
                + "; ".join(f"{r.check} {r.target}" for r in unverified) + " too")
        evidence = tuple(e for _, r in got if r is not None for e in r.evidence)[:3]
        out.checks.append(CheckResult(
            crit.id, "level", f"level {n}", level.credit, 1.0, "L1",
            level.says or f"level {n} of {len(crit.levels)}", evidence,
            facts=Facts("level", counts=(("level", n), ("levels", len(crit.levels))),
                        quoted=level.says)))
        out.points = round(crit.points * level.credit, 4)
        return
    said = "; ".join(f"{lv.credit:.0%} {lv.says}".strip() for lv in crit.levels)
    how = "scored from its checks" if crit.checks else "no credit"
    out.checks.append(CheckResult(crit.id, "level", "no level", fraction, 1.0, "L1",
                                  f"none of the rubric's levels is met ({said}): {how}"))


def _charged_once(res: CheckResult, upstream: list[str]) -> tuple[CheckResult, bool]:
    """Rule 5: a check whose values follow from failed criteria. An output check keeps
    its method part (type, shape, columns); value, test and printed checks are not
    charged. Returns the result as reported, and whether it is left out."""
    names = ", ".join(f"`{u}`" for u in upstream)
    how = check_types.of(res.check).charged_once
    if how == "method" and res.method_score is not None:
        return dataclasses.replace(res, score=res.method_score, message=(
            f"{res.message}; charged once: {names} failed upstream, so the values are not "
            "charged again, only the method (type, shape, columns)")), False
    if how != "none":  # values only (a method check without a method part: values too)
        return dataclasses.replace(res, message=(
            f"{res.message}; not charged: its values follow from {names}, which failed "
            "upstream and is charged there")), True
    return res, False


def failed_criteria(results: list[CriterionResult]) -> set[str]:
    """Criteria whose own evidence fell short: a check that ran and scored below 1."""
    return {c.id for c in results
            if any(r.status == "ok" and r.score < 1 for r in c.checks)}


def upstream_of(rubric: Rubric) -> Callable[[Check], set[str]]:
    """A check's ``depends_on`` criteria and theirs, transitively (the rubric refuses
    cycles)."""
    deps = {c.id: {d for ch in c.checks for d in ch.depends_on} for c in rubric.criteria}

    def closure(check: Check) -> set[str]:
        seen: set[str] = set()
        todo = list(check.depends_on)
        while todo:
            d = todo.pop()
            if d not in seen:
                seen.add(d)
                todo.extend(deps.get(d, ()))
        return seen

    return closure


def score_criteria(rubric: Rubric, layers: dict[str, LayerResult]) -> list[CriterionResult]:
    """Every criterion by rules 1-3b, then rule 5 for the checks that depend on a
    criterion that failed."""
    first = [score_criterion(c, layers) for c in rubric.criteria]
    if not any(ch.depends_on for c in rubric.criteria for ch in c.checks):
        return first
    failed = failed_criteria(first)
    closure = upstream_of(rubric)

    def failed_upstream(check: Check) -> list[str]:
        return sorted(closure(check) & failed)

    return [score_criterion(c, layers, failed_upstream)
            if any(ch.depends_on for ch in c.checks) else r
            for c, r in zip(rubric.criteria, first, strict=True)]


UNSTABLE_SPREAD = 1 / 3  # code: share of samples off the majority; written: max - min score
DISAGREE = {"met": 0.25, "not met": 0.75}  # verdict -> deterministic share that contradicts it
JUDGE_BAND = 0.5  # written: how far below the checks' share a model's judgement may go


def reconcile(crit: CriterionResult, layers: dict[str, LayerResult], injected: bool,
              spec: Criterion | None = None) -> None:
    """Fold the LLM layers into a criterion, within what the evidence allows.

    Code criteria (L3): the deterministic points stand. A verdict that
    contradicts them ("not met" where the checks gave >= 75%, "met" where they
    gave <= 25%) sends the criterion to review with the model's issue; the
    model never moves the points.
    Written criteria (L4): the model judges quality inside the deterministic
    bounds: an unanswered question stays at 0, a short answer stays capped at
    its word share, and the model's score may confirm the deterministic share or
    bring it down by at most JUDGE_BAND (of the points): ``points x min(share,
    max(model score, share - JUDGE_BAND))``. A judgement further from the share
    than the band, either way, goes to review with both figures and moves the points
    no further than the band's edge: the model never lifts a score past the evidence,
    and a judgement talked up or down by the student's text cannot reach past it.
    A layer that failed (even after its repair attempt) leaves the deterministic
    points and sends the criterion to review. With text aimed at the grader in
    the notebook, every criterion goes to review, with models or without.
    With k samples per model (``--samples``), a criterion whose samples spread
    more than a third (code: a third off the majority verdict; written: scores a
    third apart) is unstable and goes to review.
    A model its configuration does not trust to judge (``can_judge = false``:
    the bundled tiny models) is advisory: what it said is kept as notes, and
    neither the points nor the review status move.
    An answer with key points (``spec``: the rubric's criterion) is also judged by the
    points the model lists, checked against the ones the terms found
    (``grader.judged_points``); when that lifts the level, the band does not apply.
    """
    layer = layers.get("L3" if crit.kind == "code" else "L4")
    if layer is not None and (layer.details.get("pending") or layer.details.get("not_run")):
        layer = None  # queued behind the grade, or not run (and why): no model read it yet
    if spec is not None and spec.manual:
        return  # a manual criterion's points are the instructor's alone
    if layer is None:  # no model read it (--no-llm): text aimed at the grader still is seen
        if injected:
            crit.needs_review = True
            crit.review_reasons.append("the notebook holds text aimed at the grader")
        return
    if layer.error:
        crit.needs_review = True
        crit.review_reasons.append(f"{layer.layer} model failed: {layer.error}")
        return
    item = (layer.details.get("output") or {}).get(crit.id)
    if not isinstance(item, dict):
        return
    share = crit.points / crit.max_points if crit.max_points else 0.0
    advisory = bool(layer.details.get("advisory"))
    if crit.kind == "code":
        verdict = str(item.get("verdict", ""))
        crit.model_notes = {"verdict": verdict, "issue": str(item.get("issue", "")),
                            "cells": ", ".join(item.get("cells", []))}
        for key in ("confidence", "quote", "suggestion"):
            if item.get(key) not in (None, ""):
                crit.model_notes[key] = str(item[key])
        limit = DISAGREE.get(verdict)
        contradicts = limit is not None and (
            share >= limit if verdict == "not met" else share <= limit)
        if contradicts and not advisory:
            crit.needs_review = True
            crit.review_reasons.append(
                f"the code model says {verdict!r} ({item.get('issue') or 'no reason given'}) "
                f"but the checks gave {share:.0%}")
    else:
        score = min(1.0, max(0.0, float(item.get("score", 0.0))))
        crit.model_notes = {k: str(item.get(k, "")) for k in ("strength", "improve",
                                                              "next_step")}
        crit.model_notes["score"] = f"{score:.2f}"
        if not advisory and judge_key_points(crit, spec, layers, item):
            pass  # the model's key points lifted the level: reviewed, the band is moot
        elif share > 0 and not advisory:
            floor = max(0.0, share - JUDGE_BAND)
            crit.points = round(crit.max_points * min(share, max(score, floor)), 4)
            if abs(score - share) > JUDGE_BAND:
                crit.needs_review = True
                kept = ("kept" if score > share else
                        f"lowered only to {as_points(crit.points)} of {as_points(crit.max_points)}")
                crit.review_reasons.append(
                    f"the feedback model's judgement ({score:.2f}) disagrees with what the "
                    f"checks gave ({share:.2f}) by more than a model may move a score "
                    f"({JUDGE_BAND:.2f}): the points are {kept} until reviewed")
    spread = (layer.details.get("spread") or {}).get(crit.id)
    if spread is not None:
        crit.model_notes["spread"] = f"{spread:.2f}"
        if spread > UNSTABLE_SPREAD and not advisory:
            crit.needs_review = True
            crit.review_reasons.append(
                f"unstable: the model's {layer.details.get('samples')} samples disagree "
                f"(spread {spread:.2f})")
    if injected:
        crit.needs_review = True
        crit.review_reasons.append("the notebook holds text aimed at the grader")


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
    criteria = score_criteria(rubric, layers)
    injected = any(f.code == "prompt_injection" for f in flags)
    specs = {c.id: c for c in rubric.criteria}
    for crit in criteria:
        reconcile(crit, layers, injected, specs.get(crit.id))
    if gate := next((f for f in flags if f.code in GATES), None):
        for crit in criteria:
            _gate(crit, gate.message)
    for crit in criteria:  # rule 8, after reconciliation: the numbers every reader sees
        crit.points = gradebook(crit.points, crit.max_points)
    return GradeReport(
        file=file,
        sha256=sha256,
        assignment=assignment,
        rubric_version=rubric.version,
        status="graded",
        score=total(c.points for c in criteria),  # the criteria shown add up to it
        max_score=rubric.total_points,
        student_id=student_id,
        display_name=display_name,
        criteria=criteria,
        flags=flags,
        layers=layers,
        created_at=time.time(),
    )


def _gate(crit: CriterionResult, why: str) -> None:
    """Rule 4: the criterion scores 0 and goes to review, saying what the checks gave."""
    gave = f"the checks gave {as_points(crit.points)} of {as_points(crit.max_points)}"
    crit.points = 0.0
    crit.needs_review = True
    crit.review_reasons.insert(0, f"scored 0 until reviewed: {why} ({gave})")


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
