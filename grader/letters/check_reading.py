"""What one check found, read for the student: done, missing (and where), next step.

Each check type's module (``grader.checks``) says how its result reads, from the
result's facts (``grader.types.Facts``), never from its message; a criterion's ``level``
is read by ``grader.letters.level_reading``. Only the check's own evidence is quoted. A check
that could not be evaluated says nothing here (the letter says the instructor will look
at it); a hidden check never shows its target or message.
"""

from __future__ import annotations

from .. import check_types
from ..types import CheckResult
from .level_reading import read_level
from .reading import Context, Reading
from .text import Code, Quote, cut, phrase


def read_check(ch: CheckResult, ctx: Context) -> Reading:
    if getattr(ch, "hidden", False):
        return _hidden(ch)
    if ch.status != "ok":
        return Reading(unchecked=True)
    if ch.check == "level":
        return read_level(ch, ctx)
    kind = check_types.get(ch.check)
    return kind.letter(ch, ctx) if kind is not None else other_reading(ch, ctx)


def no_own_code_reading(ctx: Context) -> Reading:
    """Empty work: what is missing (code of the student's own, and where), never "run
    your code again"."""
    question = ctx.spec.question.strip() if ctx.spec is not None else ""
    if question:
        cell = ctx.places.heading(question)
        where = phrase(f" under “{cut(question, 80)}”", f" ({cell})" if cell else "")
    elif ctx.task.strip():
        where = ctx.part()
    else:
        where = phrase(" for this part")
    return Reading(missing=[phrase("There is no code of your own", where, " yet: the "
                                   "notebook has only the template's code, so there was "
                                   "nothing of yours to check.")],
                   steps=[phrase("Write the code this part asks for", where, ", then run the "
                                 "whole notebook from top to bottom before you submit.")])


def _hidden(ch: CheckResult) -> Reading:
    if ch.status != "ok":
        return Reading(unchecked=True)
    if ch.score >= 1:
        return Reading()
    return Reading(missing=[phrase("One more of the instructor's checks of this part did "
                                   "not pass.")],
                   steps=[phrase("Compare this part of your work with the assignment's "
                                 "instructions once more.")])


def other_reading(ch: CheckResult, ctx: Context) -> Reading:
    """A result this module cannot read in detail: what was looked for, and what was seen."""
    if ch.score >= 1:
        return Reading()
    return Reading(missing=[phrase("Not everything this part asks for was found: ",
                                   Code(cut(ch.target, 60)), ".")],
                   quotes=[Quote(ctx.places.at(ev), cut(ev.text, 100)) for ev in ch.evidence
                           if ev.text.strip()][:2])
