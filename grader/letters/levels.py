"""Levels, key points, documentation and the student's own run, read for the student.

The messages read here come from ``grader.scoring`` (rule 6: a criterion's ``level``),
``grader.layers.answer_levels`` (an answer's key points and level) and
``grader.layers.student_work`` (``code``, ``documented`` and ``ran`` checks).
"""

from __future__ import annotations

import re

from ..points import percent_text
from ..types import CheckResult
from .reading import Context, Reading
from .text import Code, Quote, cut, phrase, plural


def _sentence(text: str) -> str:
    text = cut(" ".join(text.split()), 200).rstrip(".")
    return f"{text}." if text else ""


def _full_credit(ctx: Context) -> str:
    """The rubric's sentence for full credit ("" when its first level gives less)."""
    top = next(iter(ctx.levels), None)
    return _sentence(top.says) if top is not None and top.credit >= 1 else ""


def read_level(ch: CheckResult, ctx: Context) -> Reading:
    full = _full_credit(ctx)
    if ch.target == "no level":
        out = Reading(missing=[phrase("Your work on this part does not yet meet any of the "
                                      "levels the rubric gives credit for.")])
        if full:
            out.steps.append(phrase(f"For full credit: {full}"))
        return out
    says = _sentence(ch.message)
    if ch.score >= 1:
        return Reading(done=[phrase(says)])
    out = Reading(done=[phrase(f"Your approach earns {percent_text(ch.score, 1)} of this "
                               f"part's points: {says}")])
    if full:
        out.steps.append(phrase(f"For full credit: {full}"))
    return out


def answer_extras(ch: CheckResult, out: Reading, ctx: Context) -> None:
    """The key points an answer makes and misses, and the level it reached."""
    if m := re.search(r"\(mentions: ([^)]*)\)", ch.message):
        out.done.append(phrase(f"Key points your answer makes: {m.group(1)}."))
    if m := re.search(r"\(missing: ([^)]*)\)", ch.message):
        missing = [p.strip() for p in m.group(1).split(";")]
        out.missing.append(phrase(f"Key points a complete answer also makes: {m.group(1)}."))
        cited = {kp.point for kp in (ctx.spec.key_points if ctx.spec is not None else ())
                 if kp.computed}
        if cited & set(missing):
            out.steps.append(phrase("A number you cite counts when it appears in your "
                                    "notebook's outputs: run your code before you submit, "
                                    "and quote the results it printed."))
        else:
            out.steps.append(phrase("Add what your answer leaves out, with the results of "
                                    "your own work as examples."))
    if (m := re.search(r"; level (\d+)%(?:: (.*))?$", ch.message)) and int(m.group(1)) < 100:
        says = f": {_sentence(m.group(2))}" if m.group(2) else "."
        out.missing.append(phrase(f"This answer earns {m.group(1)}% of its points{says}"))
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
    asked = re.search(r"\((\d+)% asked", ch.message)
    need = f"; this part asks for at least {asked.group(1)}% of them" if asked else ""
    cells = [c for c in dict.fromkeys(ctx.places.cell(ev.cell_id) for ev in ch.evidence) if c]
    has = "None" if n == 0 else f"{n}"
    out = Reading(
        missing=[phrase(f"{has} of your {plural(total, 'code cell')} carry a comment or note "
                        f"of your own{need}.")],
        steps=[phrase("Say in a comment what each step of your code does and why, or write "
                      "a short note in a text cell above it.")])
    if cells:
        out.missing.append(phrase(f"Without one: {' and '.join(cells[:4])}."))
    return out


def read_ran(ch: CheckResult, ctx: Context) -> Reading:
    if ch.score >= 1:
        return Reading(done=[phrase("You ran your code before submitting: its outputs are in "
                                    "the notebook.")])
    m = re.match(r"(\d+) of (\d+) cells", ch.message)
    if m is None:
        return Reading(missing=[phrase("There is no code of your own in the notebook yet.")])
    good, total = int(m.group(1)), int(m.group(2))
    never = "never run: " in ch.message and "failed when" not in ch.message and good == 0
    said = ("None of your code cells had been run when you submitted." if never else
            f"When you submitted, {good} of your {plural(total, 'code cell')} had run without "
            "an error.")
    out = Reading(missing=[phrase(said)],
                  steps=[phrase("Restart the kernel and run all cells before you submit, so "
                                "that every result shows in your notebook.")])
    for ev in ch.evidence:
        if ev.text != "never run":
            out.quotes.append(Quote(ctx.places.at(ev),
                                    f"this cell failed when you ran it: {cut(ev.text, 100)}",
                                    "error"))
    out.quotes = out.quotes[:2]
    return out
