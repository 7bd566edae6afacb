"""An advisory model's notes, and how often its route agrees with the checks.

A model its configuration does not trust to judge (``can_judge = false``: the bundled
tiny ones) still writes a note per criterion; the points never move for it. Those notes
are shown to the instructor only where they are well-formed sentences that agree with
the checks (``grader.rubrics.model_notes``), and only from a route that agrees with the
checks often enough (``MIN_AGREEMENT`` of the criteria it judged): a route that says
"not met" on every criterion agrees now and then by chance, and a note that happens to
agree is no evidence then. Otherwise the page says in one line why, with the route's
measured agreement. The notes not shown are never dropped: the page lists them folded,
saying how often the route agreed with the checks and why they are kept from the letter
(``grader.views.model_tab``).

Agreement is measured per route and layer (a route serves one role: code for L3,
feedback for L4) over the grades of one batch (``batch_agreement``: what a grade's page
says, "on this batch"), over the newest graded reports in the store
(``route_agreement``: the Dashboard's), or over one report when nothing else is at
hand. Trusted routes are measured too (the Dashboard lists them); their notes are left
as they are.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..rubrics.model_notes import check_note
from ..store.database import Store
from ..store.serialize import report_from_json
from ..types import CriterionResult, GradeReport, LayerResult

__all__ = ["MIN_AGREEMENT", "TOO_SMALL", "AdvisoryNotes", "Agreement", "RouteAgreement",
           "advisory_notes", "agreement_rows", "batch_agreement", "measure", "route_agreement",
           "shown_notes"]

log = logging.getLogger(__name__)

MIN_AGREEMENT = 0.8  # share of its judged criteria a route must agree on for notes to show
GRADES = 50  # the newest grades with a model layer that the store's measure reads
TOO_SMALL = "the bundled model is too small to judge this; its notes are folded away"
LAYER_KIND = {"L3": "code", "L4": "written"}
LAYER_WHAT = {"L3": "Code analysis", "L4": "Written feedback"}
_MARK = '"advisory":'  # as stored (compact JSON); student text inside is escaped
_SQL = """SELECT report_json FROM grades WHERE status = 'graded' AND instr(report_json, ?) > 0
ORDER BY created_at DESC, id DESC LIMIT ?"""


@dataclass(frozen=True, slots=True)
class RouteAgreement:
    """How one route's notes for one layer compared with the checks."""

    route: str
    layer: str  # "L3" | "L4"
    advisory: bool  # its notes move nothing (can_judge = false)
    grades: int  # grades whose layer ran on this route
    notes: int  # criteria it wrote a note on
    judged: int  # of those, notes with a verdict or score to compare
    agreed: int  # of those, the ones that agree with the checks
    well_formed: int  # notes with at least one well-formed sentence

    @property
    def rate(self) -> float | None:
        return self.agreed / self.judged if self.judged else None

    @property
    def trusted(self) -> bool:
        """Whether its agreeing, well-formed notes may be shown."""
        return self.rate is not None and self.rate >= MIN_AGREEMENT - 1e-9

    @property
    def measured(self) -> str:
        """How often it agreed, in words ("7 of 9 criteria (78%)")."""
        if self.rate is None:
            return "gave no verdict to compare with the checks"
        return (f"agreed with the checks on {self.agreed} of {self.judged} "
                f"criteri{'on' if self.judged == 1 else 'a'} ({self.rate:.0%})")

    @property
    def bundled(self) -> bool:
        return "embedded" in self.route

    def row(self) -> dict[str, Any]:
        return {"route": self.route, "layer": self.layer,
                "trusted to judge": "no (advisory)" if self.advisory else "yes",
                "grades": self.grades, "criteria judged": self.judged,
                "agreed with the checks": self.agreed,
                "agreement": "—" if self.rate is None else f"{self.rate:.0%}",
                "notes that are sentences": f"{self.well_formed} of {self.notes}",
                "its notes": ("shown where they agree" if self.trusted else "folded away")
                if self.advisory else "shown (trusted)"}


def _ran(lr: LayerResult) -> bool:
    """Whether a model layer ran: not one the grade records as not run (models off,
    nothing to send) or as still queued (grades first, models after)."""
    return not lr.details.get("not_run") and not lr.details.get("pending")


def _route(lr: LayerResult) -> str:
    return str(lr.details.get("route") or "unknown route")


def _noted(r: GradeReport, layer: str) -> list[CriterionResult]:
    kind = LAYER_KIND[layer]
    return [c for c in r.criteria if c.model_notes
            and ("code" if c.kind == "code" else "written") == kind]


def measure(reports: Iterable[GradeReport]) -> list[RouteAgreement]:
    """Per (route, layer), over ``reports``: how many notes, judged, agreeing, well-formed.
    Layers that failed, did not run or are still queued are left out; routes in order of
    first sight."""
    counts: dict[tuple[str, str], list[int]] = {}
    advisory: dict[tuple[str, str], bool] = {}
    for r in reports:
        if r.status != "graded":
            continue
        for layer in LAYER_KIND:
            lr = r.layers.get(layer)
            if lr is None or lr.error or not _ran(lr):
                continue
            key = (_route(lr), layer)
            c = counts.setdefault(key, [0, 0, 0, 0, 0])
            advisory[key] = bool(lr.details.get("advisory"))
            c[0] += 1
            for crit in _noted(r, layer):
                note = check_note(crit)
                if note is None:
                    continue
                c[1] += 1
                c[2] += note.judged
                c[3] += bool(note.agrees)
                c[4] += bool(note.sentences)
    return [RouteAgreement(route, layer, advisory[(route, layer)], *c)
            for (route, layer), c in counts.items()]


def route_agreement(store: Store, grades: int = GRADES) -> list[RouteAgreement]:
    """``measure`` over the newest ``grades`` graded reports that ran a model layer."""
    rows = store._query(_SQL, (_MARK, grades), "read the model layers' notes")
    out = measure(report_from_json(text) for (text,) in rows)
    log.debug("route agreement over %d grades: %d routes", len(rows), len(out))
    return out


_BATCH_SQL = """SELECT g.report_json FROM batch_items i JOIN grades g ON g.id = i.grade_id
WHERE i.batch_id = ? AND i.status = 'done' AND g.status = 'graded'
AND instr(g.report_json, ?) > 0 ORDER BY i.id DESC LIMIT ?"""
BATCH_GRADES = 200  # at most this many of a batch's grades are read (its newest)


@dataclass(frozen=True, slots=True)
class Agreement:
    """The routes' agreement and what it was measured over, in words ("this batch")."""

    routes: list[RouteAgreement]
    over: str  # "this batch", "the 50 newest grades"


def batch_agreement(store: Store, grade_id: int | None) -> Agreement:
    """``measure`` over the grades of the batch that made grade ``grade_id`` (its newest
    batch, for a grade a later batch reused; its ``BATCH_GRADES`` newest grades with a
    model layer, in a class larger than that); over the store's newest grades
    (``route_agreement``) for a grade no batch made, or without a grade id."""
    rows = [] if grade_id is None else store._query(
        "SELECT batch_id FROM batch_items WHERE grade_id = ? ORDER BY id DESC LIMIT 1",
        (grade_id,), "find a grade's batch")
    if rows:
        texts = store._query(_BATCH_SQL, (rows[0][0], _MARK, BATCH_GRADES),
                             "read a batch's model notes")
        over = "this batch" if len(texts) < BATCH_GRADES else \
            f"the {BATCH_GRADES} newest grades of this batch"
        return Agreement(measure(report_from_json(t) for (t,) in texts), over)
    routes = route_agreement(store)
    n = max((r.grades for r in routes), default=0)
    return Agreement(routes, f"the {n} newest grade{'s' if n != 1 else ''} with model notes")


def agreement_rows(stats: Iterable[RouteAgreement]) -> list[dict[str, Any]]:
    return [s.row() for s in stats]


@dataclass(frozen=True, slots=True)
class AdvisoryNotes:
    """One advisory layer of one grade: its route's agreement and which notes show."""

    layer: str
    route: str
    agreement: RouteAgreement
    over: str  # what the agreement was measured on: "this grade", "40 recent grades"
    shown: tuple[str, ...]  # the criteria whose notes are shown
    notes: int  # the criteria it wrote a note on, in this grade

    @property
    def hidden(self) -> bool:
        return not self.shown

    @property
    def outcome(self) -> str:
        """What became of its notes, in words."""
        if self.shown:
            return (f"its notes are shown only where they are sentences that agree with the "
                    f"checks: {len(self.shown)} of {self.notes} here")
        if not self.agreement.trusted:
            return TOO_SMALL if self.agreement.bundled else \
                "this route's model is too small to judge this; its notes are folded away"
        return (f"none of its {self.notes} notes here is a sentence that agrees with the "
                "checks; they are folded away")

    @property
    def line(self) -> str:
        """One line for the page, e.g. "Code analysis (L3), route code:embedded/...:
        agreed with the checks on 2 of 9 criteria (22%) over 3 recent grades: the
        bundled model is too small to judge this; its notes are folded away."."""
        return (f"{LAYER_WHAT[self.layer]} ({self.layer}), route {self.route}: "
                f"{self.agreement.measured} over {self.over}: {self.outcome}.")


def advisory_notes(r: GradeReport, routes: Iterable[RouteAgreement] | None = None,
                   over: str | None = None) -> list[AdvisoryNotes]:
    """Per advisory layer of ``r`` that wrote notes: which are shown and the page's line.
    ``routes``: the routes' agreement over many grades (``route_agreement``, or
    ``batch_agreement`` with ``over`` saying what they were measured on: "this batch"); a
    route not among them (or all, without ``routes``) is measured on ``r`` alone."""
    known = {(s.route, s.layer): s for s in routes or ()}
    out = []
    for layer in LAYER_KIND:
        lr = r.layers.get(layer)
        if lr is None or lr.error or not lr.details.get("advisory"):
            continue
        noted = _noted(r, layer)
        if not noted:
            continue
        stat = known.get((_route(lr), layer))
        if stat is None:
            (stat,) = measure([dataclasses.replace(r, layers={layer: lr})])
            measured = "this grade"
        else:
            measured = over or f"{stat.grades} recent grade{'s' if stat.grades != 1 else ''}"
        checks = [n for c in noted if (n := check_note(c)) is not None]
        shown = tuple(n.criterion for n in checks if n.shown) if stat.trusted else ()
        out.append(AdvisoryNotes(layer, _route(lr), stat, measured, shown, len(noted)))
    return out


def _kept(crit: CriterionResult) -> dict[str, str]:
    """A shown note: its judgement and its well-formed sentences, nothing else of text."""
    note = check_note(crit)
    if note is None or not note.shown:
        return {}
    n = crit.model_notes
    keep = ("verdict", "cells", "confidence", "quote", "spread") if note.kind == "code" \
        else ("score", "spread")
    return {**{k: n[k] for k in keep if n.get(k)}, **note.sentences}


def shown_notes(r: GradeReport, routes: Iterable[RouteAgreement] | None = None,
                over: str | None = None) -> GradeReport:
    """A copy of ``r`` whose advisory notes are only those to show, each with only its
    well-formed sentences; trusted layers' notes, points and all else as they are. The
    Grade and Review pages pass it to ``reports.model_rows``."""
    show = {cid for a in advisory_notes(r, routes, over) for cid in a.shown}
    advisory = {LAYER_KIND[name] for name, lr in r.layers.items()
                if name in LAYER_KIND and lr.details.get("advisory")}
    criteria = []
    for c in r.criteria:
        kind = "code" if c.kind == "code" else "written"
        if c.model_notes and kind in advisory:
            c = dataclasses.replace(c, model_notes=_kept(c) if c.id in show else {})
        criteria.append(c)
    return dataclasses.replace(r, criteria=criteria)
