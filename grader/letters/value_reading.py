"""``value``, ``printed`` and ``plot`` checks read for the student.

A value check names the instructor's expression and, when it failed, what it should
give and what the notebook gave (``grader.layers.values`` puts the value found in
the evidence). A printed check says where the output was expected and, for a
number, which one; an instructor's regular expression is never shown (it is not
for students to read). A plot check says where a plot was expected. Hidden checks
never come here (``grader.letters.check_reading`` reads them as "one more check").
"""

from __future__ import annotations

from ..rubrics.check_fields import show_value
from ..types import CheckResult
from .reading import Context, Reading
from .text import Code, Quote, cut, phrase

__all__ = ["read_plot", "read_printed", "read_value"]


def _where(ctx: Context) -> str:
    question = ctx.spec.question.strip() if ctx.spec is not None else ""
    return f"under {question}" if question else "in your notebook"


def read_value(ch: CheckResult, ctx: Context) -> Reading:
    expr = Code(cut(ch.target, 80))
    found = next((ev.text.partition(" = ")[2] for ev in ch.evidence if " = " in ev.text), "")
    if ch.score >= 1:
        return Reading(done=[phrase(expr, " gives ", Code(cut(found, 60)), ", as it should.")]
                       if found else [phrase(expr, " gives the expected result.")])
    spec = ctx.spec
    out = Reading(steps=[phrase("Check the steps that compute ", expr, " and run the whole "
                                "notebook again before you submit.")])
    if not found:
        out.missing.append(phrase(expr, " could not be computed from your notebook (a name "
                                  "it uses is not defined when the notebook has run)."))
        return out
    if spec is not None and spec.expected:
        wanted = " or ".join(show_value(v) for v in spec.expected[:3])
        out.missing.append(phrase(expr, " should be ", Code(cut(wanted, 80)),
                                  "; your notebook gives ", Code(cut(found, 60)), "."))
    else:
        out.missing.append(phrase(expr, " gives ", Code(cut(found, 60)), ", which is not "
                                  "what the instructor's solution gives."))
    return out


def _failed_for_student(ch: CheckResult, ctx: Context) -> Reading | None:
    """The cell gave the result in our run but stopped with an error in the student's."""
    if ch.facts.state != "failed_for_student":
        return None
    ev = ch.evidence[0] if ch.evidence else None
    return Reading(
        missing=[phrase("This cell failed when you ran it, so your submitted notebook does "
                        "not show its result.")],
        steps=[phrase("Fix the error, then restart the kernel and run all cells before you "
                      "submit.")],
        quotes=[Quote(ctx.places.at(ev), f"this cell failed when you ran it: "
                      f"{cut(ev.text, 100)}", "error")] if ev is not None else [])


def read_printed(ch: CheckResult, ctx: Context) -> Reading:
    where = _where(ctx)
    if ch.score >= 1:
        return Reading(done=[phrase(f"Your code prints the expected result {where}.")])
    if (failed := _failed_for_student(ch, ctx)) is not None:
        return failed
    spec = ctx.spec
    if spec is not None and spec.number is not None:
        wanted = phrase(f"Your code {where} should print ", Code(f"{spec.number:g}"),
                        " (the result it asks for); ")
    else:
        wanted = phrase(f"Your code {where} should print the result the task asks for; ")
    seen = [ev for ev in ch.evidence if ev.text.startswith("printed: ")]
    out = Reading(steps=[phrase("Print the result as the task asks, then run the whole "
                                "notebook again before you submit.")])
    if seen:
        out.missing.append(phrase(wanted, "what it prints is different."))
        out.quotes.append(Quote(ctx.places.at(seen[0]),
                                cut(seen[0].text.removeprefix("printed: "), 120), "text"))
    else:
        out.missing.append(phrase(wanted, "nothing there printed it."))
    return out


def read_plot(ch: CheckResult, ctx: Context) -> Reading:
    where = _where(ctx)
    if ch.score >= 1:
        return Reading(done=[phrase(f"You drew the plot {where}.")])
    if (failed := _failed_for_student(ch, ctx)) is not None:
        return failed
    return Reading(missing=[phrase(f"A plot was expected {where}, and none was drawn there.")],
                   steps=[phrase("Draw the plot in the cell under the question (and show it), "
                                 "then run the whole notebook again.")])
