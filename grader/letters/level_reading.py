"""Levels, key points, documentation and the student's own run, read for the student.

Each is read from the result's facts (``grader.types.Facts``), made by ``grader.scoring``
(rule 6: a criterion's ``level``), ``grader.layers.answer_levels`` (an answer's key
points and level) and ``grader.layers.student_work`` (``code``, ``documented`` and
``ran`` checks); never from its message.
"""

from __future__ import annotations

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
    facts = ch.facts
    says = _sentence(facts.quoted or f"level {int(facts.count('level'))} of "
                                     f"{int(facts.count('levels'))}")
    if ch.score >= 1:
        return Reading(done=[phrase(says)])
    out = Reading(done=[phrase(f"Your approach earns {percent_text(ch.score, 1)} of this "
                               f"part's points: {says}")])
    if full:
        out.steps.append(phrase(f"For full credit: {full}"))
    return out


def answer_extras(ch: CheckResult, out: Reading, ctx: Context) -> None:
    """The key points an answer makes and misses, and the level it reached (its facts)."""
    facts = ch.facts
    if facts.found:
        out.done.append(phrase(f"Key points your answer makes: {'; '.join(facts.found)}."))
    if facts.missing:
        missing = list(facts.missing)
        out.missing.append(phrase(f"Key points a complete answer also makes: "
                                  f"{'; '.join(missing)}."))
        cited = {kp.point for kp in (ctx.spec.key_points if ctx.spec is not None else ())
                 if kp.computed}
        if cited & set(missing):
            out.steps.append(phrase("A number you cite counts when it appears in your "
                                    "notebook's outputs: run your code before you submit, "
                                    "and quote the results it printed."))
        else:
            out.steps.append(phrase("Add what your answer leaves out, with the results of "
                                    "your own work as examples."))
    if facts.has("level") and (level := int(facts.count("level"))) < 100:
        says = f": {_sentence(facts.quoted)}" if facts.quoted else "."
        out.missing.append(phrase(f"This answer earns {level}% of its points{says}"))
    if facts.state == "no_level":
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
    if ch.score >= 1:
        return Reading(done=[phrase("Your code is documented with comments and notes of your "
                                    "own.")])
    facts = ch.facts
    if not facts.has("cells"):
        return Reading(missing=[phrase("There is no code of your own to document yet.")])
    n, total = int(facts.count("documented")), int(facts.count("cells"))
    need = f"; this part asks for at least {int(facts.count('asked'))}% of them"
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
    facts = ch.facts
    if not facts.has("cells"):
        return Reading(missing=[phrase("There is no code of your own in the notebook yet.")])
    good, total = int(facts.count("ran")), int(facts.count("cells"))
    never = facts.state == "unrun" and good == 0
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
