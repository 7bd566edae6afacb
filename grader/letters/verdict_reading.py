"""A ``test`` check read for the student: the instructor's test, passed or not, and why.

The result's facts (``grader.layers.instructor_tests``) say what happened (state ``passed``,
``failed``, ``timeout``, ``dead``), and its evidence what the test reported (the
assertion's message, the failing line or the error; a time limit). A failed test shows
the message the instructor wrote for it (the rubric's ``message``), plainly; without
one, what failed, quoted. A test that fails on the template's own stub
(``NotImplementedError``) says the placeholder is still there; an empty notebook's "not
run" is read in ``grader.checks._scenes``. Hidden tests never come here
(``grader.letters.check_reading`` reads them as "one more check").
"""

from __future__ import annotations

import re

from ..types import CheckResult
from .reading import Context, Reading
from .text import Code, Quote, cut, phrase

__all__ = ["read_test"]

_SECONDS = re.compile(r"within (\d+(?:\.\d+)?) s")
# A template's stub left in place ("raise NotImplementedError()"): nothing of the
# student's ran, so "run your code again" would be beside the point.
_STUB = re.compile(r"\bNotImplementedError\b")


def read_test(ch: CheckResult, ctx: Context) -> Reading:
    name = Code(cut(ch.target, 60))
    if ch.score >= 1:
        return Reading(done=[phrase("Your work passes the instructor's test ", name, ".")])
    said = " ".join(ctx.spec.message.split()) if ctx.spec is not None else ""
    what = ch.facts.state
    detail = ch.evidence[0].text if ch.evidence else ""
    if what == "failed" and _STUB.search(detail):
        where = ctx.part() if ctx.task.strip() else phrase(" in this part")
        return Reading(missing=[phrase("The code", where, " is still the template's "
                                       "placeholder (it raises ", Code("NotImplementedError"),
                                       "), so the instructor's test ", name, " did not pass.")],
                       steps=[phrase("Replace the placeholder", where, " with your own code, "
                                     "then run the whole notebook from top to bottom.")])
    out = Reading(steps=[phrase("Run your code for this part again, compare its result with "
                                "what the test expects, then rerun the whole notebook.")])
    if what == "timeout":
        m = _SECONDS.search(detail)
        limit = f" within {float(m.group(1)):g} seconds" if m else " in the time allowed"
        out.missing.append(phrase("The instructor's test ", name, " did not finish", limit,
                                  ": your code may be very slow or never end",
                                  f" ({said})" if said else "", "."))
    elif what == "dead":
        out.missing.append(phrase("The instructor's test ", name, " stopped the notebook "
                                  "(it ran out of memory or crashed)",
                                  f": {said}" if said else "."))
    elif said:
        out.missing.append(phrase("The instructor's test ", name, " did not pass: ", said))
    else:
        out.missing.append(phrase("The instructor's test ", name, " did not pass."))
        first = next((line for line in detail.splitlines() if line.strip()), "")
        if first:
            out.quotes.append(Quote("", cut(first, 160), "error"))
    return out
