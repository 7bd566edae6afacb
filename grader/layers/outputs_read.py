"""A cell's outputs as evidence: what layer 2's ``printed`` and ``plot`` checks read.

A ``printed`` check looks for a ``pattern`` (a regular expression) or a ``number``
(within ``rtol``/``atol``; ``1,234.5``, ``1.2e3`` and R's ``[1] 178`` read as
numbers) in what the student's cells printed: stdout and the text of results and
displays, never stderr or errors. A ``plot`` check looks for a drawn figure: an
image, or a plotly or vega chart. The cells looked at are those under the check's
``question`` (from the cell that asks it to the next heading or question of the
template), or every cell when no question is given, and only cells holding code of
the student's own: output of the template's given code earns nothing.

``evidence`` says whose outputs count: "stored" (what the student submitted),
"rerun" (our sandboxed run) or "both" (either one). When our run is missing,
"rerun" checks are skipped (review) and "both" reads the stored outputs. The output
of a cell that calls a solution or hint revealer (``solution()``, ``q1.hint()``,
``show_solution(...)``) is never evidence: it prints the instructor's answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

from ..analysis.answer_parts import asks
from ..analysis.template import CellOrigin, TemplateMatch, normalise_markdown
from ..rubrics.check_fields import Check
from ..rubrics.levels import numbers_in
from ..rubrics.schema import Criterion, Rubric
from ..sandbox.execution import ExecutionResult
from ..types import Cell, CheckResult, CheckStatus, Evidence, Facts, Flag, Notebook, Output

__all__ = ["PLOT_MIMES", "no_outputs_flag", "numbers_in", "revealer_cells", "scope",
           "score_printed"]

PLOT_MIMES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif",
              "application/vnd.plotly.v1+json", "application/vnd.vegalite.v4+json",
              "application/vnd.vegalite.v5+json", "application/vnd.vega.v5+json")
_REVEALER = re.compile(r"(?<![\w.])(?:[\w.]*\.)?\w*(?:solution|hint)\w*\s*\(", re.IGNORECASE)
_DEFINITION = re.compile(r"^\s*(?:def\s|\w+\s*<-\s*function)", re.MULTILINE)
SHOWN = 80


def _reveals(source: str) -> bool:
    """A cell that calls a solution or hint revealer (a definition of one is not a call)."""
    code = _DEFINITION.sub("", source)
    return any(not m.group().lstrip().startswith(("def ", "function"))
               for m in _REVEALER.finditer(code))


def revealer_cells(match: TemplateMatch) -> list[str]:
    return [o.cell.id for o in match.origins if o.cell.kind == "code" and _reveals(o.cell.source)]


def _heading(source: str) -> bool:
    return source.lstrip().startswith("#")


def scope(match: TemplateMatch, question: str, others: Sequence[str], *,
          own_only: bool = True) -> list[CellOrigin] | None:
    """The student's code cells under ``question`` (all of them for ""); None when the
    notebook does not ask the question. ``own_only=False``: the template's code cells
    there too."""
    origins = match.origins

    def wanted(o: CellOrigin) -> bool:
        return o.holds_code and (bool(o.student_lines) or not own_only)

    own = [o for o in origins if wanted(o)]
    if not question.strip():
        return own
    key = normalise_markdown(question)
    asked = [i for i, o in enumerate(origins) if o.cell.kind == "markdown" and asks(o, key)]
    if not asked:
        return None
    start = next((i for i in asked if _heading(origins[i].cell.source)), asked[0])
    other_keys = [normalise_markdown(q) for q in others if q.strip() and q != question]
    cells = []
    for o in origins[start + 1:]:
        if o.cell.kind == "markdown" and o.status != "student" and (
                _heading(o.cell.source) or any(asks(o, k) for k in other_keys)):
            break
        if wanted(o):
            cells.append(o)
    return cells


def _printed(outputs: Iterable[Output]) -> str:
    return "\n".join(o.text for o in outputs if o.kind in ("execute_result", "display_data")
                     or (o.kind == "stream" and o.name != "stderr"))


def _drew(outputs: Iterable[Output]) -> bool:
    return any(m in PLOT_MIMES for o in outputs for m in o.mime)


def no_outputs_flag(match: TemplateMatch, nb: Notebook,
                    run: ExecutionResult | None = None) -> Flag | None:
    """A notebook whose own code cells show no outputs: never run before it was submitted,
    or run and then cleared (execution counts kept, outputs gone), which our run, where
    it printed or drew something in those cells, tells apart from cells that print
    nothing."""
    own = [o.cell for o in match.origins if o.holds_code and o.student_lines]
    if not own or any(c.outputs for c in nb.code_cells):
        return None
    if not any(c.execution_count is not None for c in nb.code_cells):
        return Flag("no_outputs", f"submitted without outputs: none of its {len(own)} code "
                    "cell(s) of the student's own was run before submitting, so only our run "
                    "shows what they print and draw")
    ids = {c.id for c in own}
    if run is None or run.error or not any(c.outputs for c in run.cells if c.cell_id in ids):
        return None  # counts without outputs, and nothing to show: cells that print nothing
    return Flag("no_outputs", f"outputs cleared before submitting: the code cells carry "
                f"execution counts but none of the {len(own)} cell(s) of the student's own "
                "shows an output, while our run of them prints or draws; only our run shows "
                "what they give")


def stored_error(cell: Cell) -> str:
    """The error the student's own run of a cell stored ("" when none)."""
    err = next((o for o in cell.outputs if o.kind == "error"), None)
    if err is None:
        return ""
    return (err.text.strip().splitlines() or [err.name or "an error"])[-1][:200]


def questions(rubric: Rubric) -> list[str]:
    return [q for c in rubric.criteria for q in (c.task, *(ch.question for ch in c.evaluated)) if q]


def score_printed(crit: Criterion, check: Check, rubric: Rubric, match: TemplateMatch,
                  run: ExecutionResult | None, reason: str) -> CheckResult:
    """A printed or plot check from the outputs its ``evidence`` allows."""
    def result(score: float, message: str, status: CheckStatus = "ok",
               evidence: tuple[Evidence, ...] = (), state: str = "") -> CheckResult:
        return CheckResult(crit.id, check.type, check.target, score, check.weight, "L2",
                           message, evidence, status, check.hidden, facts=Facts(state))

    where = f"under {check.question!r}" if check.question else "in the notebook"
    cells = scope(match, check.question, questions(rubric))
    if cells is None:
        return result(0.0, f"the notebook does not ask {check.question!r}: nothing to read")
    blocked = set(revealer_cells(match))
    usable = [o for o in cells if o.cell.id not in blocked]
    ran = run is not None and not run.error and not reason
    if check.evidence == "rerun" and not ran:
        return result(0.0, f"not checked: our run is needed ({reason or 'it did not run'})",
                      "skipped")
    sources: list[tuple[str, dict[str, tuple[Output, ...]]]] = []
    if check.evidence in ("stored", "both"):
        sources.append(("the submitted outputs", {o.cell.id: o.cell.outputs for o in usable}))
    if check.evidence in ("rerun", "both") and ran:
        assert run is not None
        fresh = {c.cell_id: c.outputs for c in run.cells}
        sources.append(("our run", {o.cell.id: fresh.get(o.cell.id, ()) for o in usable}))
    # The student's own run is evidence the instructor uses: a cell whose stored output
    # shows an error earns nothing from it, even where our run (data paths mapped) works.
    failed = ({o.cell.id: err for o in usable if (err := stored_error(o.cell))}
              if check.evidence in ("stored", "both") else {})
    refused: list[tuple[str, str]] = []
    for label, outputs in sources:
        for cell_id, outs in outputs.items():
            hit = None
            if check.type == "plot" and _drew(outs):
                hit = (f"a plot is drawn {where} ({label})", "a plot")
            elif check.type == "printed" and (found := _found(check, _printed(outs))):
                hit = (f"printed {where} ({label}): {found}", found)
            if hit is None:
                continue
            if cell_id in failed:
                refused.append((cell_id, failed[cell_id]))
                continue
            return result(1.0, hit[0], evidence=(Evidence(cell_id, None, hit[1]),))
    if refused:
        cell_id, err = refused[0]
        return result(0.0, f"this cell failed when the student ran it: {err} (our run of it "
                      "worked, but the submitted outputs are the evidence)",
                      evidence=(Evidence(cell_id, None, err),), state="failed_for_student")
    what = "no plot is drawn" if check.type == "plot" else (
        f"nothing printed {where} matches" if check.pattern else
        f"no number printed {where} is {check.number:g}")
    if check.type == "printed" and check.pattern:
        what = f"nothing printed {where} matches the expected text"
    if check.type == "plot":
        what += f" {where}"
    notes = []
    if blocked & {o.cell.id for o in cells}:
        notes.append("cells that call a solution or hint function are not evidence")
    if not usable:
        notes.append("no cell there holds code of the student's own")
    read = " and ".join(label for label, _ in sources) or "no outputs"
    shown = next(((cid, _printed(outs)) for _, outputs in sources
                  for cid, outs in outputs.items() if _printed(outs).strip()), None)
    evidence = (Evidence(shown[0], None, f"printed: {_short(shown[1])}"),) if (
        check.type == "printed" and shown) else ()
    return result(0.0, f"{what} (read: {read})" + "".join(f"; {n}" for n in notes),
                  evidence=evidence)


def _found(check: Check, text: str) -> str | None:
    if not text:
        return None
    if check.pattern:
        m = re.search(check.pattern, text, re.MULTILINE)
        return None if m is None else _short(m.group() or text)
    assert check.number is not None
    for x in numbers_in(text):
        if math.isclose(x, check.number, rel_tol=check.rtol, abs_tol=check.atol):
            return f"{x:g}"
    return None


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SHOWN else text[:SHOWN - 1] + "…"
