"""What the self-check reads from the solution's grade, and how it writes a percentage.

- ``percent_text``: the one way a self-check percentage is written, with the precision
  that shows a loss: a solution that loses 0.1 of 37.5 points scores "99.7%", never
  "100%"; a template that earns anything scores more than "0%".
- ``unverified``: the points of the checks that could not be verified on the
  instructor's own solution (status "environment": a test or output check the key
  fails because a data file, a package or a function is missing). Scoring leaves them
  out of every notebook's points (the other checks of a criterion scale up), so a
  solution may "score 100%" with half its points never checked: the self-check says
  instead how many points were not checked and why ("12 of 20 points could not be
  checked: data file missing") and what the solution earns on the others.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..points import as_points
from ..points import percent_text as shown_percent
from ..types import GradeReport

__all__ = ["Unverified", "percent_text", "unverified"]

# a problem of the solution's run (``SolutionProblem.kind``) -> why its checks could not run
WHY = {"missing_data": "data file missing", "missing_package": "package missing",
       "missing_function": "function missing", "error": "the solution's run fails"}


def percent_text(value: float | None) -> str:
    """'100%', '99.7%', '0%', '0.3%': as few decimals as show where the score stands; a
    score under 100 is never written "100%", and one over 0 never "0%" (the one rule of
    ``grader.points.percent_text``, with ``decimals=None``)."""
    if value is None:
        return "could not be graded"
    return shown_percent(value, 100, None)


@dataclass(frozen=True, slots=True)
class Unverified:
    """The points of a grade that its checks could not verify on the solution."""

    points: float  # the unverified checks' share of the points
    total: float  # the rubric's points
    why: str  # "data file missing", ...
    checks: tuple[str, ...]  # one line per check: criterion, check, points, message
    earned: float  # the solution's points on the checks that were verified

    def headline(self) -> str:
        return (f"{as_points(self.points)} of {as_points(self.total)} points could not be checked: "
                f"{self.why}")


def unverified(report: GradeReport, problem_kinds: Iterable[str]) -> Unverified:
    """The checks of ``report`` (the solution's grade) marked "environment", their points
    and why, and the solution's points on the checks that were verified."""
    lost = earned = 0.0
    lines: list[str] = []
    for crit in report.criteria:
        # a criterion scored by its levels (scoring rule 6) earns its points as a whole
        leveled = any(res.check == "level" for res in crit.checks)
        for res in crit.checks:
            points = res.weight * crit.max_points
            if res.check == "level":
                continue
            if res.status == "environment":
                lost += points
                lines.append(f"Not checked: {crit.id}, {res.check} {res.target} "
                             f"({round(points, 4):g} points): {res.message}")
            elif not leveled:
                earned += points * min(1.0, max(0.0, res.score))
        if leveled:
            earned += crit.points
    kinds = list(dict.fromkeys(k for k in problem_kinds if k in WHY))
    why = ", ".join(WHY[k] for k in kinds) or "the instructor's solution fails them too"
    return Unverified(round(lost, 4), report.max_score, why, tuple(lines), round(earned, 4))
