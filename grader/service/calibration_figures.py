"""How a model route judges, measured on graded notebooks: the figures of a calibration.

A calibration grades each notebook once with every model route trusted to judge (as
``can_judge = true`` would have it). From that grade's layers two more views of it are
rebuilt with ``grader.scoring.build_report``, without asking a model again:

- the checks' view: every model layer advisory, so the points and the review status are
  the deterministic checks' own, with the models' notes beside them;
- per model layer (L3: the ``code`` role's route; L4: the ``feedback`` role's), the
  trusted view: that layer judging and the other advisory: what the route would do to
  the grade if it were trusted.

Per route, over the notebooks:

- agreement with the checks: ``grader.views.advisory.measure`` over the checks' views,
  the one notion the Dashboard and the advisory notes use (``grader.rubrics.model_notes``:
  a code verdict is the checks' verdict; a written score lies within ``SCORE_BAND`` of the
  checks' share of the points);
- agreement with the instructor, where their points name criteria: the same rule, with
  the instructor's share of a criterion's points in place of the checks';
- how far the points are from the instructor's (mean absolute difference): per criterion
  of the route's kind where the instructor gave them, else per notebook total; with the
  route trusted and, beside it, with the checks alone;
- moved: criteria whose points the route, trusted, would change; reviewed: criteria it
  would send to review that the checks alone do not; failed: notebooks whose layer gave
  no judgement (a failed request or a reply that failed its schema twice).

The verdict: a route is fit to judge when it agrees with the checks on at least
``FIT_AGREEMENT`` of ``MIN_CRITERIA`` or more criteria, gave a judgement on all but
``MAX_FAILED`` of the notebooks, agrees with the instructor on ``FIT_AGREEMENT`` of the
criteria they graded (where they did), and does not take the points further from the
instructor's than the checks alone. None of this changes a grade.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..rubrics.model_notes import check_note
from ..rubrics.schema import Rubric
from ..scoring import build_report
from ..types import CriterionResult, GradeReport
from ..views.advisory import LAYER_KIND, MIN_AGREEMENT, measure

__all__ = ["FIT_AGREEMENT", "LAYER_ROLES", "MAX_FAILED", "MIN_CRITERIA", "Example",
           "Instructor", "RouteCalibration", "RouteIdentity", "measure_routes", "views"]

FIT_AGREEMENT = MIN_AGREEMENT  # 0.8: the share of its criteria a route must agree on
MIN_CRITERIA = 10  # fewer judged criteria than this tell nothing either way
MAX_FAILED = 1 - FIT_AGREEMENT  # the share of notebooks whose layer may fail
LAYER_ROLES = {"L3": "code", "L4": "feedback"}
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Instructor:
    """The instructor's points for one notebook: its total, and per criterion id."""

    total: float | None = None
    criteria: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Example:
    """One graded notebook: its grade with every route trusted, and the instructor's."""

    report: GradeReport
    rubric: Rubric
    instructor: Instructor | None = None


@dataclass(frozen=True, slots=True)
class RouteIdentity:
    """Which route served a layer, where and with which model, and whether the
    configuration trusted it to judge when it was measured."""

    role: str
    layer: str
    route: str
    server: str
    model: str
    can_judge: bool


@dataclass(frozen=True, slots=True)
class RouteCalibration:
    """One route's figures over a calibration's notebooks, and its verdict."""

    role: str
    layer: str
    route: str
    server: str
    model: str
    can_judge: bool  # as configured when it was measured
    notebooks: int = 0  # graded notebooks whose layer ran on this route
    failed: int = 0  # of those, the ones whose layer gave no judgement
    judged: int = 0  # criteria with a judgement to compare with the checks
    agreed: int = 0  # of those, the ones agreeing with the checks
    moved: int = 0  # criteria whose points it would change, trusted
    reviewed: int = 0  # criteria it would send to review that the checks alone do not
    instructor_judged: int = 0  # criteria the instructor graded that it judged
    instructor_agreed: int = 0
    instructor_mae: float | None = None  # mean |points with it trusted - the instructor's|
    checks_mae: float | None = None  # the same with the checks alone
    mae_over: str = ""  # "criterion" | "notebook" | "" (the instructor gave no points)
    mae_n: int = 0  # criteria or notebooks the two means are over
    examples: str = ""  # what it was measured on, in words
    created_at: float = 0.0

    @property
    def rate(self) -> float | None:
        return self.agreed / self.judged if self.judged else None

    @property
    def instructor_rate(self) -> float | None:
        return self.instructor_agreed / self.instructor_judged if self.instructor_judged \
            else None

    @property
    def further_from_instructor(self) -> bool:
        """Trusted, it takes the points further from the instructor's than the checks."""
        return (self.instructor_mae is not None and self.checks_mae is not None
                and self.instructor_mae > self.checks_mae + _EPS)

    @property
    def fit(self) -> bool:
        """Fit to judge: see the module's docstring."""
        rate, mine = self.rate, self.instructor_rate
        return (self.judged >= MIN_CRITERIA and rate is not None
                and rate >= FIT_AGREEMENT - _EPS
                and self.failed <= MAX_FAILED * self.notebooks + _EPS
                and (mine is None or mine >= FIT_AGREEMENT - _EPS)
                and not self.further_from_instructor)

    @property
    def figures(self) -> str:
        """What was measured, in one sentence."""
        out = [f"{self.notebooks} notebook{'s' if self.notebooks != 1 else ''}",
               f"{self.judged} criteri{'on' if self.judged == 1 else 'a'} judged"]
        if self.rate is not None:
            out.append(f"agreed with the checks on {self.agreed} ({self.rate:.0%})")
        if self.instructor_rate is not None:
            out.append(f"with the instructor on {self.instructor_agreed} of "
                       f"{self.instructor_judged} ({self.instructor_rate:.0%})")
        if self.instructor_mae is not None and self.checks_mae is not None:
            out.append(f"off the instructor's points by {self.instructor_mae:.2f} a "
                       f"{self.mae_over} trusted, {self.checks_mae:.2f} with the checks alone "
                       f"(over {self.mae_n})")
        out.append(f"trusted, it would move the points of {self.moved} criteri"
                   f"{'on' if self.moved == 1 else 'a'} and send {self.reviewed} to review")
        if self.failed:
            out.append(f"no judgement on {self.failed} notebook{'s' if self.failed > 1 else ''}")
        return "; ".join(out)

    @property
    def verdict(self) -> str:
        """The verdict in words, e.g. "agrees with the checks on 41% of 48 criteria: not fit
        to judge; keep can_judge = false for the code role"."""
        keep = f"not fit to judge; keep can_judge = false for the {self.role} role"
        rate, mine = self.rate, self.instructor_rate
        if self.judged < MIN_CRITERIA:
            return (f"judged {self.judged} criteri{'on' if self.judged == 1 else 'a'}, too "
                    f"few to tell (at least {MIN_CRITERIA}): calibrate on more notebooks; "
                    f"until then, {keep}")
        said = f"agrees with the checks on {rate:.0%} of {self.judged} criteria"
        if rate is None or rate < FIT_AGREEMENT - _EPS:
            return f"{said} (fit from {FIT_AGREEMENT:.0%}): {keep}"
        if self.failed > MAX_FAILED * self.notebooks + _EPS:
            return (f"{said}, but gave no judgement on {self.failed} of {self.notebooks} "
                    f"notebooks: {keep}")
        if mine is not None and mine < FIT_AGREEMENT - _EPS:
            return (f"{said}, but with the instructor on only {mine:.0%} of "
                    f"{self.instructor_judged}: {keep}")
        if self.further_from_instructor:
            return (f"{said}, but trusted it takes the points further from the instructor's "
                    f"({self.instructor_mae:.2f} a {self.mae_over} against "
                    f"{self.checks_mae:.2f} with the checks alone): {keep}")
        with_you = f" and with the instructor on {mine:.0%} of {self.instructor_judged}" \
            if mine is not None else ""
        return (f"{said}{with_you}: fit to judge; you may set can_judge = true for the "
                f"{self.role} role")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"fit": self.fit, "verdict": self.verdict}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RouteCalibration:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def views(example: Example, trusted: str | None) -> GradeReport:
    """The notebook's grade rebuilt from its layers with only the model layer ``trusted``
    ("L3", "L4") judging, or none (None: the checks' view)."""
    r = example.report
    layers = {name: dataclasses.replace(lr, details={**lr.details, "advisory": name != trusted})
              if name in LAYER_KIND else lr for name, lr in r.layers.items()}
    return build_report(example.rubric, r.file, r.sha256, r.assignment, layers, r.student_id,
                        r.display_name)


def _kind(crit: CriterionResult) -> str:
    return "code" if crit.kind == "code" else "written"


@dataclass(slots=True)
class _Tally:
    notebooks: int = 0
    failed: int = 0
    moved: int = 0
    reviewed: int = 0
    instructor_judged: int = 0
    instructor_agreed: int = 0
    by_criterion: list[tuple[float, float]] = field(default_factory=list)  # (trusted, checks)
    by_notebook: list[tuple[float, float]] = field(default_factory=list)

    def add(self, layer: str, checks: GradeReport, trusted: GradeReport,
            instructor: Instructor | None) -> None:
        mine = instructor.criteria if instructor is not None else {}
        graded_here = False
        for before, after in zip(checks.criteria, trusted.criteria, strict=True):
            if _kind(before) != LAYER_KIND[layer]:
                continue
            self.moved += abs(after.points - before.points) > _EPS
            self.reviewed += after.needs_review and not before.needs_review
            if before.id not in mine:
                continue
            graded_here = True
            points = mine[before.id]
            note = check_note(dataclasses.replace(before, points=points))
            if note is not None and note.judged:
                self.instructor_judged += 1
                self.instructor_agreed += bool(note.agrees)
            self.by_criterion.append((abs(after.points - points), abs(before.points - points)))
        if not graded_here and instructor is not None and instructor.total is not None \
                and trusted.score is not None and checks.score is not None:
            self.by_notebook.append((abs(trusted.score - instructor.total),
                                     abs(checks.score - instructor.total)))

    def means(self) -> dict[str, Any]:
        over, pairs = ("criterion", self.by_criterion) if self.by_criterion else (
            "notebook", self.by_notebook)
        if not pairs:
            return {}
        return {"instructor_mae": round(math.fsum(t for t, _ in pairs) / len(pairs), 4),
                "checks_mae": round(math.fsum(c for _, c in pairs) / len(pairs), 4),
                "mae_over": over, "mae_n": len(pairs)}


def measure_routes(examples: Iterable[Example], routes: Iterable[RouteIdentity],
                   described: str = "", created_at: float = 0.0) -> list[RouteCalibration]:
    """Each route's figures over ``examples`` (graded with every route trusted); one per
    identity, in the order given. Notebooks that could not be graded are left out."""
    ids = list(routes)
    graded = [e for e in examples if e.report.status == "graded"]
    tallies = {i.layer: _Tally() for i in ids}
    checked: list[GradeReport] = []
    for example in graded:
        checks = views(example, None)
        checked.append(checks)
        for layer, tally in tallies.items():
            lr = example.report.layers.get(layer)
            if lr is None:
                continue  # the layer had nothing to judge (no code, no answer)
            tally.notebooks += 1
            if lr.error:
                tally.failed += 1
                continue
            tally.add(layer, checks, views(example, layer), example.instructor)
    agreement: dict[str, list[int]] = {}
    for stat in measure(checked):
        counts = agreement.setdefault(stat.layer, [0, 0])
        counts[0] += stat.judged
        counts[1] += stat.agreed
    out = []
    for ident in ids:
        t = tallies[ident.layer]
        judged, agreed = agreement.get(ident.layer, (0, 0))
        out.append(RouteCalibration(
            ident.role, ident.layer, ident.route, ident.server, ident.model, ident.can_judge,
            t.notebooks, t.failed, judged, agreed, t.moved, t.reviewed, t.instructor_judged,
            t.instructor_agreed, examples=described, created_at=created_at, **t.means()))
    return out
