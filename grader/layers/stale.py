"""Stored outputs that disagree with our run, and stored outputs nothing could check.

Nearly every notebook's stored outputs differ from a fresh run somewhere (timings,
memory addresses, a progress bar, a table printed with other widths), so a flag raised
on any difference was raised on 31 of 34 notebooks, the instructor's solution
included, and meant nothing. ``stale_outputs`` is raised only when a check whose
verdict can be read from outputs (``printed``, ``plot``, ``runs``) gives another
verdict from the outputs the student submitted than from our run, and it names each
such check with both verdicts. Only cells the student ran (with stored outputs or an
execution count) are compared: a cell never run has nothing stored to disagree, which
the ``no_outputs`` flag covers.

Stored outputs are the student's word, and a file anyone can edit. Where they move
points they are held for review (``held``): a check whose grade came from the
submitted outputs and disagrees with our run keeps the lower of the two verdicts (an
output our run did not produce earns nothing) and goes to review, naming both. When
our run could not be made (the run's setup failed, no kernel, no sandbox: never the
student's doing) the checks read from outputs could not be verified (``unverified``):
they earn nothing until reviewed, and the grade is flagged ``not_executed``. Only an
instructor who turned execution off grades from the stored outputs as they are.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from .. import check_types
from ..rubrics.check_fields import Check
from ..rubrics.schema import Criterion
from ..sandbox.execution import ExecutionResult
from ..types import CheckResult, Flag
from .base import SubmissionContext
from .outputs_read import score_printed

__all__ = ["Moved", "held", "not_executed_flag", "stale_checks",
           "stale_outputs_flag", "unverified"]

# (criterion, check, run or None for the stored outputs) -> the runs check's result
RunsVerdict = Callable[[Criterion, Check, ExecutionResult | None], CheckResult]


@dataclass(frozen=True)
class Moved:
    """One check that gives another verdict from the stored outputs than from our run."""

    criterion: Criterion
    check: Check
    stored: CheckResult
    fresh: CheckResult  # our run, over the same cells
    ours: CheckResult  # our run, over every cell (what the check reads from our run)

    def said(self) -> str:
        return (f"{self.criterion.id}, {self.check.type} {self.check.target!r}: "
                f"{self.stored.score:.2g} from the submitted outputs, {self.fresh.score:.2g} "
                "from our run")


def stale_checks(ctx: SubmissionContext, run: ExecutionResult,
                 runs_verdict: RunsVerdict) -> list[Moved]:
    """The checks whose verdict from the stored outputs differs from their verdict from
    ``run`` (over the cells the student ran)."""
    ran = {c.id for c in ctx.submission.code_cells if c.outputs or c.execution_count is not None}
    if not ran:
        return []
    ours = dataclasses.replace(run, cells=[c for c in run.cells if c.cell_id in ran])
    rubric = ctx.assignment.rubric
    moved: list[Moved] = []
    for crit in rubric.criteria:
        for check in crit.evaluated:
            kind = check_types.of(check.type)
            if not kind.reads_outputs:
                continue
            if kind.reads_outputs == "cells":  # what a cell printed or drew
                rerun = dataclasses.replace(check, evidence="rerun")
                stored = score_printed(crit, dataclasses.replace(check, evidence="stored"),
                                       rubric, ctx.match, None, "")
                fresh = score_printed(crit, rerun, rubric, ctx.match, ours, "")
                whole = score_printed(crit, rerun, rubric, ctx.match, run, "")
            else:  # the errors cells raised
                stored, fresh = runs_verdict(crit, check, None), runs_verdict(crit, check, ours)
                whole = runs_verdict(crit, check, run)
            if stored.status == "ok" and fresh.status == "ok" and stored.score != fresh.score:
                moved.append(Moved(crit, check, stored, fresh, whole))
    return moved


def stale_outputs_flag(moved: list[Moved]) -> Flag | None:
    """The flag naming each check in ``moved``; None when none moved."""
    if not moved:
        return None
    evidence = [e for m in moved for e in (*m.stored.evidence[:2], *m.fresh.evidence[:2])]
    return Flag("stale_outputs",
                f"the submitted outputs disagree with our run on {len(moved)} check"
                f"{'s' if len(moved) > 1 else ''} ({'; '.join(m.said() for m in moved)}): the "
                "student's outputs are not what their code gives in our run (edited, run "
                "before a change, or run with the data elsewhere)",
                tuple(evidence[:10]))


def held(results: list[CheckResult], moved: list[Moved]) -> list[CheckResult]:
    """``results`` with each check graded from the submitted outputs against our run's
    verdict held for review: the lower of the two verdicts, status "skipped"."""
    out = list(results)
    for m in moved:
        for i, res in enumerate(out):
            if (res.criterion_id, res.check, res.target) != (m.criterion.id, m.check.type,
                                                              m.check.target):
                continue
            if res.status != "ok" or m.ours.status != "ok" or res.score == m.ours.score:
                break  # graded from our run (or already for review): the points did not move
            out[i] = dataclasses.replace(
                res, score=min(res.score, m.ours.score), status="skipped",
                message=f"held for review: the submitted outputs give {m.stored.score:.2g} "
                f"({m.stored.message}), our run {m.ours.score:.2g} ({m.ours.message}); the "
                "submitted outputs alone earn nothing",
                evidence=(*res.evidence, *m.ours.evidence)[:4])
            break
    return out


def unverified(result: CheckResult, reason: str) -> CheckResult:
    """A check read from outputs when our run could not be made: it earns nothing until
    reviewed, and says what the submitted outputs would have given."""
    if result.status != "ok":
        return result
    return dataclasses.replace(
        result, score=0.0, status="skipped",
        message=f"could not be verified: our run could not be made ({reason}); the "
        f"submitted outputs alone would give {result.score:.2g} ({result.message})")


def not_executed_flag(reason: str) -> Flag:
    """Our run of the notebook could not be made, for a reason that is not the student's."""
    return Flag("not_executed",
                f"our run of the notebook could not be made ({reason}): the checks that need "
                "it could not be verified and are held for review; the submitted outputs "
                "earned nothing on their own")
