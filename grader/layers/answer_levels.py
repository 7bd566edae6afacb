"""A written answer's credit by level: key points found and words written.

The answer check's ``levels`` (or the defaults of ``grader.rubrics.levels``) are read
in order; the first that holds gives the credit. The message names the level, the key
points found and the ones missing, so the letter can say what a complete answer adds.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..analysis.template import TemplateMatch
from ..rubrics.check_fields import Check
from ..rubrics.levels import (
    AnswerLevel,
    default_answer_levels,
    numbers_in,
    points_found,
    word_floor,
)
from ..types import Facts


def printed_numbers(match: TemplateMatch) -> list[float]:
    """The numbers in the stored outputs of the student's own code cells: what the
    student saw their code compute, and may cite."""
    out: list[float] = []
    for origin in match.student_code_cells:
        for o in origin.cell.outputs:
            if o.kind != "error" and o.text:
                out.extend(numbers_in(o.text[:20_000]))
    return out


def _without_question(text: str, question: str) -> str:
    """The answer without the question's own words (a student line that starts with
    the question's label or text), so the question never supplies a key point."""
    q = question.strip()
    return re.sub(re.escape(q), " ", text, flags=re.I) if q else text


def level_of(check: Check, found: int, words: int) -> AnswerLevel | None:
    """The first level of the answer check that ``found`` key points and ``words`` meet."""
    levels = check.levels or default_answer_levels(len(check.key_points), check.min_words)
    floor = word_floor(check.min_words)  # words alone: a quarter of those asked, at least
    return next((lv for lv in levels if lv.holds(found, len(check.key_points), words, floor)),
                None)


def answer_level(check: Check, text: str, words: int,
                 printed: list[float]) -> tuple[float, str, list[str], Facts]:
    """(credit, message, the key points found, the facts) of an answered question."""
    kps = check.key_points
    found = points_found(kps, _without_question(text, check.question), printed) if kps else []
    n = sum(found)
    level = level_of(check, n, words)
    msg = f"answered with {words} words"
    if words < check.min_words:
        msg += f", below the {check.min_words} asked"
    if kps:
        have = [kp.point for kp, ok in zip(kps, found, strict=True) if ok]
        miss = [kp.point for kp, ok in zip(kps, found, strict=True) if not ok]
        msg += f"; key points {n} of {len(kps)}"
        if have:
            msg += f" (mentions: {'; '.join(have)})"
        if miss:
            msg += f" (missing: {'; '.join(miss)})"
    have_points = [kp.point for kp, ok in zip(kps, found, strict=True) if ok]
    counts: list[tuple[str, float]] = [("words", words), ("asked", check.min_words),
                                       ("key_points", len(kps))]
    facts = Facts("answered", found=tuple(have_points),
                  missing=tuple(kp.point for kp, ok in zip(kps, found, strict=True) if not ok))
    if level is None:
        if words < (floor := word_floor(check.min_words)):  # (``level_of``'s floor)
            return 0.0, (f"{msg}; too short for credit without a key point (at least {floor} "
                         "words)"), have_points, replace(
                facts, state="too_short", counts=(*counts, ("floor", floor)))
        return 0.0, f"{msg}; no level of the rubric is met", have_points, replace(
            facts, state="no_level", counts=tuple(counts))
    says = f": {level.says}" if level.says else ""
    return level.credit, f"{msg}; level {level.credit:.0%}{says}", have_points, replace(
        facts, counts=(*counts, ("level", round(level.credit * 100))), quoted=level.says)
