"""``runs``: the student's code cells run without errors.

Facts: state ``no_own_code``, ``ran`` (within ``max_errors``) or ``errors``; counts
``errors``, ``cells`` (the student's code cells), ``allowed`` and ``fresh`` (1: from our
run, 0: from the stored outputs); the evidence names each failing cell and its error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..check_types import CheckType, Field

if TYPE_CHECKING:
    from ..letters.reading import Context, Reading
    from ..rubrics.check_fields import Check
    from ..rubrics.schema import Criterion
    from ..types import CheckResult

MAX_ERRORS_QUOTED = 3  # distinct errors quoted; every cell is named


def _evaluate(crit: Criterion, check: Check, scene: Any) -> CheckResult:
    from ._scenes import marked

    return marked(check, scene.runs_verdict(crit, check, scene.run))


def _letter(ch: CheckResult, ctx: Context) -> Reading:
    from ..letters.reading import Reading
    from ..letters.text import Quote, cut, phrase, plural
    from ..types import Evidence

    facts = ch.facts
    if facts.state == "no_own_code":
        return Reading(missing=[phrase("There is no code of your own in the notebook yet.")],
                       steps=[phrase("Write your code in the code cells of each part, then run "
                                     "the notebook from top to bottom.")])
    if facts.state not in ("ran", "errors"):
        from ..letters.check_reading import other_reading

        return other_reading(ch, ctx)  # no facts to read: what was looked for, no more
    n = int(facts.count("errors"))
    if facts.state == "ran":
        return Reading(done=[phrase("Your notebook runs from top to bottom without errors."
                                    if n == 0 else f"Your notebook runs with {plural(n, 'error')},"
                                                   " within what this part allows.")])
    total = int(facts.count("cells"))
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


def _validate(ch: Check, where: str, problems: list[str]) -> None:
    if ch.depends_on:
        problems.append(f"{where}.depends_on: a runs check uses no other criterion's values")


TYPE = CheckType(
    name="runs", kind="code", layer="L2", version=1, rank=40,
    summary="The student's code cells run without errors (our run, else the stored outputs).",
    scores="1 when the student's cells ran with at most `max_errors` errors, else the share "
    "of cells that ran",
    reads=(Field("max_errors", "errors allowed (default 0)"),),
    target_field=None, target=lambda ch: "all cells",
    evaluate=_evaluate, letter=_letter, validate=_validate,
    no_code="evaluate", reads_outputs="errors",
    produced_by=("rubric file", "editor", "old-system rubric"),
    example="max_errors=1",
)
