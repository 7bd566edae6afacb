"""What one check found, read for the student: done, missing (and where), next step.

Each check type's result is read from what its layer recorded (see
``grader.layers.structure``, ``grader.layers.outputs`` and ``grader.layers.compare``
for the messages and evidence): ``calls``/``assigns`` name what was and was not
found, ``output`` compares a variable aspect by aspect with the solution (read in
``grader.letters.outputs``), ``runs`` counts the cells that raised errors, ``answer``
counts the words under a question. Only the check's own evidence is quoted. A check
that could not be evaluated says nothing here (the letter says the instructor will
look at it); a hidden check never shows its target or message.
"""

from __future__ import annotations

import re

from ..rubrics.checks import alternatives
from ..types import CheckResult, Evidence
from .levels import answer_extras, read_code, read_documented, read_level, read_ran
from .outputs import read_output
from .reading import Context, Reading
from .tests import read_test
from .text import Code, Quote, codes, cut, phrase, plural
from .values import read_plot, read_printed, read_value

MAX_ERRORS_QUOTED = 3  # distinct errors quoted; every cell is named


def missing_names(ch: CheckResult) -> list[str]:
    """The names a calls/assigns check did not find in the student's code."""
    verb = "called" if ch.check == "calls" else "assigned"
    m = re.search(rf"not {verb} in the student's code: (.*)$", ch.message)
    return [n.strip() for n in m.group(1).split(",")] if m else []


def read_check(ch: CheckResult, ctx: Context) -> Reading:
    if getattr(ch, "hidden", False):
        return _hidden(ch)
    if ch.status != "ok":
        return Reading(unchecked=True)
    if ch.check in NOT_RUN_WITHOUT_CODE and ch.message.startswith(NO_OWN_CODE):
        return _no_own_code(ctx)
    reader = {"calls": _names, "assigns": _names, "output": read_output, "runs": _runs,
              "answer": _answer, "test": read_test, "value": read_value,
              "printed": read_printed, "plot": read_plot, "level": read_level,
              "code": read_code, "documented": read_documented, "ran": read_ran}.get(ch.check)
    return reader(ch, ctx) if reader is not None else _other(ch, ctx)


# What layer 2 records for these checks when the notebook holds no code of the student's
# own (the template, handed in as it came): nothing was run, so nothing can be rerun.
NO_OWN_CODE = "not run: the notebook has no code of the student's own"
NOT_RUN_WITHOUT_CODE = ("test", "value", "printed", "plot")


def _no_own_code(ctx: Context) -> Reading:
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


def _other(ch: CheckResult, ctx: Context) -> Reading:
    """A result this module cannot read in detail: what was looked for, and what was seen."""
    if ch.score >= 1:
        return Reading()
    return Reading(missing=[phrase("Not everything this part asks for was found: ",
                                   Code(cut(ch.target, 60)), ".")],
                   quotes=[Quote(ctx.places.at(ev), cut(ev.text, 100)) for ev in ch.evidence
                           if ev.text.strip()][:2])


# --- calls / assigns -------------------------------------------------------------------

def _names(ch: CheckResult, ctx: Context) -> Reading:
    calls = ch.check == "calls"
    spec = ctx.spec
    wanted = list((spec.functions if calls else spec.names) if spec is not None else ())
    wanted = wanted or [n.strip() for n in ch.target.split(",") if n.strip()]
    missing = missing_names(ch)
    if not missing and ch.score < 1:
        return _other(ch, ctx)
    found = [_used(n, ch) for n in wanted if n not in missing]
    out = Reading()
    if found:
        where = ctx.places.span(ch.evidence)
        out.done.append(phrase("You used " if calls else "You created ",
                               codes(found, call=calls), f" ({where})" if where else "", "."))
    if missing:
        what = codes(missing, call=calls)
        if calls:
            out.missing.append(phrase(what, " does" if len(missing) == 1 else " do",
                                      " not appear in your code yet."))
            out.steps.append(phrase("Use ", what, ctx.part() if ctx.task else " in this part",
                                    "."))
        else:
            one = len(missing) == 1
            out.missing.append(phrase(what, " is" if one else " are",
                                      " not created anywhere in your code."))
            out.steps.append(phrase("Store the result in a variable named " if one else
                                    "Store the results in variables named ", what,
                                    ctx.part(), "."))
    return out


def _used(entry: str, ch: CheckResult) -> str:
    """Of an any-of group, the name the student's code used (the group when unclear)."""
    names = alternatives(entry)
    if len(names) < 2:
        return entry
    used = [n for n in names if any(re.search(rf"(?<!\w){re.escape(n)}(?![\w.])", ev.text)
                                    for ev in ch.evidence)]
    return used[0] if len(used) == 1 else entry


# --- runs -----------------------------------------------------------------------------

def _runs(ch: CheckResult, ctx: Context) -> Reading:
    if ch.message.startswith("no code of the student's own"):
        return Reading(missing=[phrase("There is no code of your own in the notebook yet.")],
                       steps=[phrase("Write your code in the code cells of each part, then run "
                                     "the notebook from top to bottom.")])
    m = re.match(r"(\d+) of the student's (\d+) code cells raised errors", ch.message)
    if m is None:
        ok = re.search(r"ran with (\d+) errors", ch.message)
        n = int(ok.group(1)) if ok else 0
        return Reading(done=[phrase("Your notebook runs from top to bottom without errors."
                                    if n == 0 else f"Your notebook runs with {plural(n, 'error')},"
                                                   " within what this part allows.")])
    n, total = int(m.group(1)), int(m.group(2))
    named = ctx.places.span(Evidence(ev.cell_id, None, "") for ev in ch.evidence)
    out = Reading(missing=[phrase(f"{n} of your {total} code cells stop with an error",
                                  f": {named}." if named else ".")])
    by_error: dict[str, list[Evidence]] = {}  # one quote per error, with all its cells
    for ev in ch.evidence:
        first = next((line for line in ev.text.splitlines() if line.strip()), ev.text)
        by_error.setdefault(cut(first, 120), []).append(ev)
    for text, evs in list(by_error.items())[:MAX_ERRORS_QUOTED]:
        out.quotes.append(Quote(ctx.places.span(Evidence(e.cell_id, None, "") for e in evs),
                                text, "error"))
    first_cell = ctx.places.cell(ch.evidence[0].cell_id) if ch.evidence else ""
    if n > 1 and named and first_cell:
        fix = phrase(f"Fix the errors in {named}, starting with {first_cell} (an error in one "
                     "cell can make the cells after it fail too), then restart the kernel and "
                     "run all cells to check that the notebook runs from top to bottom.")
    else:
        fix = phrase("Fix the error", f" in {named}" if named else "", ", then restart "
                     "the kernel and run all cells to check that the notebook runs from top "
                     "to bottom.")
    out.steps.append(fix)
    return out


# --- answer -----------------------------------------------------------------------------

def _answer(ch: CheckResult, ctx: Context) -> Reading:
    question = f"“{cut(ch.target, 80)}”"
    least = ctx.spec.min_words if ctx.spec is not None and ctx.spec.min_words > 1 else 0
    length = f"at least {least} words" if least else "a few sentences"
    if "not found in the notebook" in ch.message:
        return Reading(missing=[phrase(f"The question {question} was not found in your "
                                       "notebook: its heading may have been removed or "
                                       "changed.")],
                       steps=[phrase(f"Keep the template's heading for {question} and write "
                                     f"your answer below it ({length}).")])
    if ch.message.startswith("unanswered"):
        return Reading(missing=[phrase(f"You have not answered {question} yet.")],
                       steps=[phrase(f"Write your answer below the question: {length}, in your "
                                     "own words, with examples from your work.")])
    m = re.match(r"answered with (\d+) words(?:, below the minimum of (\d+)|, below the "
                 r"(\d+) asked)?", ch.message)
    if m is None:
        return _other(ch, ctx)
    n = int(m.group(1))
    out = Reading(done=[phrase(f"You answered the question ({plural(n, 'word')}).")])
    for ev in ch.evidence[:1]:
        out.quotes.append(Quote(ctx.places.cell(ev.cell_id), cut(ev.text, 100), "text"))
    if m.group(2) or m.group(3):
        want = int(m.group(2) or m.group(3))
        out.missing.append(phrase(f"Your answer has {plural(n, 'word')}; the question asks for "
                                  f"at least {want}."))
        out.steps.append(phrase(f"Develop your answer to at least {want} words: explain your "
                                "reasoning and point to specific results of your work."))
    answer_extras(ch, out, ctx)
    return out
