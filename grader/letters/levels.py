"""Levels, key points, documentation and the student's own run, read for the student.

The messages read here come from ``grader.scoring`` (rule 6: a criterion's ``level``),
``grader.layers.answer_levels`` (an answer's key points and level) and
``grader.layers.student_work`` (``code``, ``documented`` and ``ran`` checks).
"""

from __future__ import annotations

import re

from ..types import CheckResult
from .reading import Context, Reading
from .text import Code, Quote, cut, phrase, plural


def read_level(ch: CheckResult, ctx: Context) -> Reading:
    if ch.target == "no level":
        return Reading(missing=[phrase("Your work on this part does not yet take any of the "
                                       "approaches the rubric gives credit for.")])
    says = cut(ch.message, 200)
    if ch.score >= 1:
        return Reading(done=[phrase(says if says.endswith(".") else f"{says}.")])
    return Reading(done=[phrase(f"Your approach: {says.rstrip('.')} ({ch.score:.0%} of this "
                                "part's points).")],
                   steps=[phrase("Ask your instructor which approach earns full credit for "
                                 "this part, and compare it with yours.")])


def answer_extras(ch: CheckResult, out: Reading) -> None:
    """The key points an answer mentions and misses, and the level it reached."""
    if m := re.search(r"\(mentions: ([^)]*)\)", ch.message):
        out.done.append(phrase(f"Your answer covers: {m.group(1)}."))
    if m := re.search(r"\(missing: ([^)]*)\)", ch.message):
        out.missing.append(phrase(f"A complete answer also covers: {m.group(1)}."))
        out.steps.append(phrase("Add what your answer leaves out, with the results of your "
                                "own work as examples."))
    if (m := re.search(r"; level (\d+)%(?:: (.*))?$", ch.message)) and int(m.group(1)) < 100:
        says = f" ({m.group(2)})" if m.group(2) else ""
        out.missing.append(phrase(f"This answer earns {m.group(1)}% of its points{says}."))
    if "no level of the rubric is met" in ch.message:
        out.missing.append(phrase("This answer does not yet meet what the rubric asks of it."))


def read_code(ch: CheckResult, ctx: Context) -> Reading:
    if ch.score >= 1:
        return Reading()
    if ch.target.startswith("no /"):
        return Reading(missing=[phrase("Your code uses an approach this part asks you not to "
                                       "use.")],
                       quotes=[Quote(ctx.places.at(ev), cut(ev.text, 100))
                               for ev in ch.evidence[:1]])
    return Reading(missing=[phrase("Your code does not yet show what this part asks for: ",
                                   Code(cut(ch.target, 60)), ".")])


def read_documented(ch: CheckResult, ctx: Context) -> Reading:
    m = re.match(r"(\d+) of (\d+) cells", ch.message)
    if ch.score >= 1:
        return Reading(done=[phrase("Your code is documented with comments and notes of your "
                                    "own.")])
    if m is None:
        return Reading(missing=[phrase("There is no code of your own to document yet.")])
    n, total = int(m.group(1)), int(m.group(2))
    cells = [c for c in dict.fromkeys(ctx.places.cell(ev.cell_id) for ev in ch.evidence) if c]
    where = f" (for example {' and '.join(cells[:3])})" if cells else ""
    return Reading(
        missing=[phrase(f"{n} of your {plural(total, 'code cell')} carry a comment or note of "
                        f"your own{where}.")],
        steps=[phrase("Say in a comment what each step of your code does and why, or write "
                      "a short note in a text cell above it.")])


def read_ran(ch: CheckResult, ctx: Context) -> Reading:
    if ch.score >= 1:
        return Reading(done=[phrase("You ran your code before submitting: its outputs are in "
                                    "the notebook.")])
    m = re.match(r"(\d+) of (\d+) cells", ch.message)
    if m is None:
        return Reading(missing=[phrase("There is no code of your own in the notebook yet.")])
    out = Reading(missing=[phrase(f"When you submitted, {m.group(1)} of your "
                                  f"{plural(int(m.group(2)), 'code cell')} had run without an "
                                  "error.")],
                  steps=[phrase("Restart the kernel and run all cells before you submit, so "
                                "that every result shows in your notebook.")])
    for ev in ch.evidence:
        if ev.text != "never run":
            out.quotes.append(Quote(ctx.places.at(ev),
                                    f"this cell failed when you ran it: {cut(ev.text, 100)}",
                                    "error"))
    out.quotes = out.quotes[:2]
    return out
