"""The instructor's answer shown in a submission: flag ``solution_shown``.

Kaggle-style exercises ship hint and solution functions (``q1.hint()``,
``q1.solution()``, ``show_solution(...)``, R's ``hint()``); a student who calls one sees
the instructor's answer in the output. nbgrader and otter leave it to the teacher to
notice; here it is flagged for the instructor, with the cell:

- a cell of the student's that calls a revealer (``grader.layers.outputs_read.revealer_cells``:
  its output is never evidence for a check either);
- a stored output of the student's cells that prints lines of the solution's own code
  (at least two lines the template does not give, each of some length): the solution's
  text pasted or printed in the notebook.
"""

from __future__ import annotations

from ..analysis.template import TemplateMatch
from ..types import Evidence, Flag, Notebook
from .outputs_read import revealer_cells

MIN_LINE = 25  # a solution line this long is the solution's own, not a common idiom
MIN_LINES = 2


def _solution_lines(solution: Notebook, template: Notebook) -> frozenset[str]:
    given = {line.strip() for c in template.code_cells for line in c.source.splitlines()}
    return frozenset(s for c in solution.code_cells for line in c.source.splitlines()
                     if len(s := line.strip()) >= MIN_LINE and s not in given
                     and not s.startswith("#"))


def revealed_flag(match: TemplateMatch, solution: Notebook, template: Notebook) -> Flag | None:
    evidence = []
    students = {o.cell.id for o in match.origins if o.is_students}
    for cid in revealer_cells(match):
        if cid in students:
            evidence.append(Evidence(cid, None, "calls a hint or solution function"))
    lines = _solution_lines(solution, template)
    for o in match.origins:
        if o.cell.kind != "code" or o.cell.id not in students or not lines:
            continue
        shown = [s for out in o.cell.outputs for line in out.text.splitlines()
                 if (s := line.strip()) in lines]
        if len(set(shown)) >= MIN_LINES:
            evidence.append(Evidence(o.cell.id, None,
                                     f"its output prints the solution's code: {shown[0]}"))
    if not evidence:
        return None
    return Flag("solution_shown", "the notebook shows the instructor's answer (a hint or "
                "solution function called, or the solution's code in an output): a revealer's "
                "output is never evidence, and the work around it deserves a look",
                tuple(evidence[:5]))
