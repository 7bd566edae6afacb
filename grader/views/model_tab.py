"""What a grade's Model tab shows the instructor (Grade and Review pages): each model
layer's state, the notes shown, and every advisory note that is not, folded, never
dropped.

An advisory route (``can_judge = false``) writes a note per criterion; its notes never
reach the student's letter and move no points. The instructor sees the ones that are
sentences agreeing with the checks from a route that agrees often enough
(``grader.views.advisory``); the rest are listed folded, under a label that says how
often the route agreed with the checks on the grade's batch ("advisory: this route
agreed with the checks 32% of the time on this batch"), with how many notes were kept
from the letter and why. "Wrote nothing" is said of a layer only when it ran and wrote
no note at all; "the models were off" only when the grade records that they were
(``grader.views.model_state``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..rubrics.model_notes import check_note
from ..types import CriterionResult, GradeReport
from .advisory import (
    LAYER_KIND,
    LAYER_WHAT,
    MIN_AGREEMENT,
    Agreement,
    RouteAgreement,
    advisory_notes,
    shown_notes,
)
from .labels import criterion_labels
from .model_state import ModelState, model_states
from .reports import model_rows

__all__ = ["FoldedNotes", "ModelTab", "advisory_label", "model_tab"]


@dataclass(frozen=True, slots=True)
class FoldedNotes:
    """One advisory layer's notes that are not shown: listed folded, with why."""

    layer: str  # "L3" | "L4"
    label: str  # the fold's label: the layer, the count, the route's agreement
    why: str  # why they are kept from the letter, and why folded here
    rows: list[dict[str, Any]]  # the notes as the model wrote them, one row a criterion

    @property
    def count(self) -> int:
        return len(self.rows)


@dataclass(frozen=True, slots=True)
class ModelTab:
    states: list[ModelState]  # one per model layer (none for a file not graded)
    shown: list[dict[str, Any]]  # the notes shown unfolded (``reports.model_rows``)
    folded: list[FoldedNotes]  # advisory notes not shown, per layer
    silent: list[str]  # "Code analysis (L3) ran and wrote no note ...", per such layer

    @property
    def all_off(self) -> bool:
        """Whether the grade records that every model layer was off."""
        return bool(self.states) and all(s.state == "off" for s in self.states)


def _on(over: str) -> str:
    return "on this batch" if over == "this batch" else f"over {over}"


def advisory_label(stat: RouteAgreement, over: str) -> str:
    """"advisory: this route agreed with the checks 32% of the time on this batch"."""
    if stat.rate is None:
        return f"advisory: this route gave no verdict to compare with the checks {_on(over)}"
    return f"advisory: this route agreed with the checks {stat.rate:.0%} of the time {_on(over)}"


def _noted(r: GradeReport, layer: str) -> list[CriterionResult]:
    kind = LAYER_KIND[layer]
    return [c for c in r.criteria if c.model_notes
            and ("code" if c.kind == "code" else "written") == kind]


def _why_note(crit: CriterionResult, route_trusted: bool) -> str:
    """Why one note is folded rather than shown."""
    note = check_note(crit)
    if note is None:
        return ""
    if not route_trusted:
        return "the route agrees too seldom to show it"
    if note.agrees is None:
        return "it gives no verdict to compare with the checks"
    if not note.agrees:
        return f"it disagrees with the checks (model: {note.judgement}; checks: {note.expected})"
    return "it holds no sentence, only labels or numbers"


def _named(rows: list[dict[str, Any]], r: GradeReport) -> list[dict[str, Any]]:
    """``model_rows`` with each criterion named by its title (``labels``)."""
    names = criterion_labels(r.criteria)
    return [{**row, "criterion": names.get(row["criterion"], row["criterion"])}
            for row in rows]


def _folded(r: GradeReport, layer: str, stat: RouteAgreement, over: str,
            shown: set[str]) -> FoldedNotes | None:
    hidden = [c for c in _noted(r, layer) if c.id not in shown]
    if not hidden:
        return None
    rows = []
    for row, crit in zip(_named(model_rows(dataclasses.replace(r, criteria=hidden)), r),
                         hidden, strict=True):
        rows.append({**row, "folded because": _why_note(crit, stat.trusted)})
    n = len(hidden)
    label = (f"{LAYER_WHAT[layer]} ({layer}): {n} note{'s' if n != 1 else ''} kept from the "
             f"student's letter · {advisory_label(stat, over)}")
    why = ("Kept from the student's letter: this route's model is not trusted to judge "
           "(can_judge = false in the configuration), so what it writes never reaches a "
           "letter and moves no points. ")
    if not stat.trusted:
        why += (f"Folded here: {_on(over)} it {stat.measured}, under the "
                f"{MIN_AGREEMENT:.0%} at which its notes are shown; read them as a small "
                "model's guesses.")
    else:
        why += ("Folded here: these notes are not sentences that agree with the checks "
                "(those that are, are shown above).")
    return FoldedNotes(layer, label, why, rows)


def _silent(r: GradeReport, states: list[ModelState]) -> list[str]:
    """The layers that ran and wrote no note on any criterion (nor any output)."""
    out = []
    for s in states:
        if s.state not in ("ran", "advisory"):
            continue
        lr = r.layers.get(s.layer)
        if lr is None or _noted(r, s.layer) or lr.details.get("output"):
            continue
        out.append(f"{LAYER_WHAT[s.layer]} ({s.layer}) ran and wrote nothing on this "
                   "student's work.")
    return out


def model_tab(r: GradeReport, agreement: Agreement) -> ModelTab:
    """The Model tab of ``r``: ``agreement`` is its routes' agreement with the checks over
    its batch (``advisory.batch_agreement``)."""
    states = model_states(r, agreement.routes, agreement.over)
    if r.status != "graded":
        return ModelTab(states, [], [], [])
    advice = advisory_notes(r, agreement.routes, agreement.over)
    shown = _named(model_rows(shown_notes(r, agreement.routes, agreement.over)), r)
    folded = [f for a in advice
              if (f := _folded(r, a.layer, a.agreement, a.over, set(a.shown))) is not None]
    return ModelTab(states, shown, folded, _silent(r, states))
