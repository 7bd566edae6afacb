"""Stored outputs that disagree with our run in a way that moves a check.

Nearly every notebook's stored outputs differ from a fresh run somewhere (timings,
memory addresses, a progress bar, a table printed with other widths), so a flag raised
on any difference was raised on 31 of 34 notebooks, the instructor's solution
included, and meant nothing. ``stale_outputs`` is raised only when a check whose
verdict can be read from outputs (``printed``, ``plot``, ``runs``) gives another
verdict from the outputs the student submitted than from our run, and it names each
such check with both verdicts. Only cells the student ran (with stored outputs or an
execution count) are compared: a cell never run has nothing stored to disagree, which
the ``no_outputs`` flag covers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..rubrics.checks import Check
from ..rubrics.schema import Criterion
from ..sandbox.execution import ExecutionResult
from ..types import CheckResult, Evidence, Flag
from .base import SubmissionContext
from .printed import score_printed

__all__ = ["stale_outputs_flag"]

# (criterion, check, run or None for the stored outputs) -> the runs check's result
RunsVerdict = Callable[[Criterion, Check, ExecutionResult | None], CheckResult]


def stale_outputs_flag(ctx: SubmissionContext, run: ExecutionResult,
                       runs_verdict: RunsVerdict) -> Flag | None:
    """The flag, when a check's verdict from the stored outputs differs from its verdict
    from ``run`` (over the cells the student ran); None when none does."""
    ran = {c.id for c in ctx.submission.code_cells if c.outputs or c.execution_count is not None}
    if not ran:
        return None
    ours = dataclasses.replace(run, cells=[c for c in run.cells if c.cell_id in ran])
    rubric = ctx.assignment.rubric
    moved: list[str] = []
    evidence: list[Evidence] = []
    for crit in rubric.criteria:
        for check in crit.evaluated:
            if check.type in ("printed", "plot"):
                stored = score_printed(crit, dataclasses.replace(check, evidence="stored"),
                                       rubric, ctx.match, None, "")
                fresh = score_printed(crit, dataclasses.replace(check, evidence="rerun"),
                                      rubric, ctx.match, ours, "")
            elif check.type == "runs":
                stored, fresh = runs_verdict(crit, check, None), runs_verdict(crit, check, ours)
            else:
                continue
            if stored.status != "ok" or fresh.status != "ok" or stored.score == fresh.score:
                continue
            moved.append(f"{crit.id}, {check.type} {check.target!r}: {stored.score:.2g} from "
                         f"the submitted outputs, {fresh.score:.2g} from our run")
            evidence.extend(stored.evidence[:2])
            evidence.extend(fresh.evidence[:2])
    if not moved:
        return None
    return Flag("stale_outputs",
                f"the submitted outputs disagree with our run on {len(moved)} check"
                f"{'s' if len(moved) > 1 else ''} ({'; '.join(moved)}): the student's "
                "outputs are not what their code gives in our run (edited, run before a "
                "change, or run with the data elsewhere)",
                tuple(evidence[:10]))
