"""Measure a model route before trusting it to judge: a calibration run.

``can_judge = true`` lets a route's model move written scores and send criteria to
review (``grader.scoring.reconcile``). Whether it should is measured, not read from the
configuration: ``calibrate`` grades graded examples with the configured routes (every
layer, the models through the configured client), each route trusted to judge for the
run whatever its ``can_judge`` says, and reports per route how often its judgement
agreed with the deterministic checks and with the instructor, what it would move and
send to review, and a verdict (``grader.service.calibration_figures``). The checks stay
the authority: a calibration stores its figures, never a grade.

Graded examples are assignment folders with notebooks and, where known, the
instructor's points:

- the bundled examples (``examples/``, ``bundled_sets``): each folder's submissions;
  the instructor's totals from its ``expected.toml`` ``[points]`` where it gives them
  (``py-levels``); at most ``limit`` notebooks per assignment, spread over the folder;
- an instructor's own (``graded_set``): an assignment folder, the graded notebooks (its
  ``submissions`` folder or another) and their points in a CSV beside them,
  ``grades.csv`` by default: the format ``grader agreement`` reads
  (``grader.views.agreement.load_human``): a ``file`` column (the notebook's name)
  and/or ``student_id`` (the notebook's name without ``.ipynb``), the total in
  ``score`` or ``total``, and optionally one column per criterion id with its points.
  A notebook without a row is measured against the checks only.

Each route's figures go to the store (``Store.add_calibration``), where the Dashboard
reads the latest per route (``latest``), and the judging warnings of the configuration
as it is (``inference.trust``) go with the result.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference import DisaggregatedClient, EngineConfig, WorkerHealth

from ..assignment import Assignment, load_assignment
from ..errors import InputError
from ..layers.base import GradeOptions
from ..pipeline import GradeInput, Grader
from ..points import points_text
from ..store.database import Store
from ..views.agreement import load_human
from .calibration_figures import (
    LAYER_ROLES,
    Example,
    Instructor,
    RouteCalibration,
    RouteIdentity,
    measure_routes,
)

__all__ = ["BUNDLED", "DEFAULT_LIMIT", "GRADES_CSV", "Calibration", "CalibrationSet",
           "GradedNotebook", "bundled_sets", "calibrate", "calibration_rows", "graded_set",
           "judging_config", "latest", "save", "trusted_now"]

log = logging.getLogger(__name__)
BUNDLED = Path(__file__).resolve().parents[2] / "examples"
DEFAULT_LIMIT = 3  # notebooks per assignment, unless asked otherwise (0: all)
GRADES_CSV = "grades.csv"
EXPECTED = "expected.toml"  # the bundled examples' own: [points], totals by notebook
AUTHORITY = "A calibration changes no grade: the deterministic checks stay the authority."
Progress = Callable[[int, int, str], None]  # (done, total, "assignment/notebook: score")


@dataclass(frozen=True, slots=True)
class GradedNotebook:
    path: Path
    instructor: Instructor | None = None


@dataclass(frozen=True, slots=True)
class CalibrationSet:
    """One assignment's graded notebooks, and where the instructor's points came from."""

    assignment: Assignment
    notebooks: tuple[GradedNotebook, ...]
    grades: str = ""  # "expected.toml [points]", "grades.csv", or "" (none)
    problems: tuple[str, ...] = ()  # rows of the grades that name no notebook

    def describe(self) -> str:
        n = len(self.notebooks)
        by = sum(nb.instructor is not None for nb in self.notebooks)
        mine = f", {by} with the instructor's points from {self.grades}" if by else ""
        return f"{self.assignment.name} ({n} notebook{'s' if n != 1 else ''}{mine})"


def pick(paths: Sequence[Path], limit: int) -> list[Path]:
    """At most ``limit`` of ``paths`` (0: all), spread evenly from first to last."""
    if limit <= 0 or len(paths) <= limit:
        return list(paths)
    if limit == 1:
        return [paths[0]]
    return [paths[round(i * (len(paths) - 1) / (limit - 1))] for i in range(limit)]


def _notebooks(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.ipynb") if p.is_file())


def bundled_sets(limit: int = DEFAULT_LIMIT, names: Iterable[str] = (),
                 root: Path = BUNDLED) -> list[CalibrationSet]:
    """The bundled examples (``names`` of them, or all), ``limit`` notebooks each."""
    wanted = list(names)
    folders = [root / n for n in wanted] if wanted else sorted(
        p for p in root.iterdir() if (p / "assignment.toml").is_file())
    return [graded_set(load_assignment(folder), limit=limit) for folder in folders]


def graded_set(assignment: Assignment, notebooks: Path | None = None,
               grades: Path | None = None, limit: int = 0) -> CalibrationSet:
    """The graded notebooks of ``assignment`` (in ``notebooks``, default its
    ``submissions``) with the instructor's points from ``grades``: by default
    ``grades.csv`` beside the notebooks, else (for its own submissions) the totals of
    ``[points]`` in its ``expected.toml``, as the bundled examples give them. ``limit``: at
    most so many notebooks (0: all), those with the instructor's points first, spread."""
    folder = notebooks or assignment.submissions
    if folder is None or not folder.is_dir():
        raise InputError(str(folder or assignment.root), "no folder of graded notebooks: "
                         "name one, or `submissions` in assignment.toml")
    paths = _notebooks(folder)
    if not paths:
        raise InputError(str(folder), "holds no .ipynb notebook to calibrate on")
    grades = grades or (folder / GRADES_CSV if (folder / GRADES_CSV).is_file() else None)
    mine, problems, source = ({}, [], "")
    if grades is not None:
        (mine, problems), source = _instructor_points(assignment, paths, grades), grades.name
    elif folder == assignment.submissions and (assignment.root / EXPECTED).is_file():
        mine, source = _expected_points(assignment.root / EXPECTED, paths), f"{EXPECTED} [points]"
    with_points = pick([p for p in paths if p in mine], limit)
    room = limit - len(with_points) if limit else 0  # 0: all of them
    others = [p for p in paths if p not in mine]
    rest = [] if limit and room <= 0 else pick(others, room)
    chosen = [p for p in paths if p in set(with_points) | set(rest)]
    return CalibrationSet(assignment, tuple(GradedNotebook(p, mine.get(p)) for p in chosen),
                          source if mine else "", tuple(problems))


def _expected_points(path: Path, paths: list[Path]) -> dict[Path, Instructor]:
    """The totals of an ``expected.toml``'s ``[points]``, by notebook name without .ipynb."""
    try:
        points = tomllib.loads(path.read_text(encoding="utf-8")).get("points", {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InputError(str(path), f"cannot be read: {exc}") from exc
    return {p: Instructor(float(points[p.stem])) for p in paths if p.stem in points}


def _instructor_points(assignment: Assignment, paths: list[Path], grades: Path
                       ) -> tuple[dict[Path, Instructor], list[str]]:
    """Each notebook's row of the instructor's CSV, checked against the rubric."""
    rubric = assignment.rubric
    maxima = {c.id: c.points for c in rubric.criteria}
    human = load_human(grades, maxima)
    by_name = {p.name: p for p in paths}
    by_stem = {p.stem: p for p in paths}
    out: dict[Path, Instructor] = {}
    problems = []
    for row in human.rows:
        name = Path(row.file).name if row.file else ""
        path = by_name.get(name) or by_stem.get(Path(name).stem if name else row.student_id)
        if path is None:
            problems.append(f"{grades.name}: no notebook for the row of {row.name!r}")
            continue
        if path in out:
            raise InputError(str(grades), f"two rows for {path.name}")
        for cid, points in [(c, p) for c, p in row.criteria.items() if p is not None]:
            if not 0 <= points <= maxima[cid] + 1e-9:
                raise InputError(str(grades), f"{row.name}: {cid} has {points:g} points, "
                                 f"outside 0..{maxima[cid]:g}")
        if row.score is not None and not 0 <= row.score <= rubric.total_points + 1e-9:
            raise InputError(str(grades), f"{row.name}: a total of {row.score:g} is outside "
                             f"0..{rubric.total_points:g}")
        out[path] = Instructor(row.score, {c: p for c, p in row.criteria.items()
                                           if p is not None})
    return out, problems


@dataclass(frozen=True, slots=True)
class Calibration:
    """A calibration run: what it ran over and each route's figures and verdict."""

    created_at: float
    examples: str  # what it ran over, in words
    notebooks: int
    routes: tuple[RouteCalibration, ...]
    warnings: tuple[str, ...] = ()  # the configuration's judging warnings (inference.trust)
    problems: tuple[str, ...] = ()  # notebooks not graded, grade rows matching none

    @property
    def fit(self) -> bool:
        """Every route it measured is fit to judge."""
        return bool(self.routes) and all(r.fit for r in self.routes)

    def headline(self) -> str:
        """One line: "Calibrated on 12 notebooks: the code role is not fit to judge (agrees
        with the checks on 41% of 30 criteria); ..."."""
        said = "; ".join(
            f"the {r.role} role is {'fit' if r.fit else 'not fit'} to judge ("
            + (f"agrees with the checks on {r.rate:.0%} of {r.judged} criteria)"
               if r.rate is not None else "no criterion judged)") for r in self.routes)
        skipped = [p for p in self.problems if ": not graded" in p]
        apart = (f" ({len(skipped)} of them not graded, so not counted: {skipped[0]}"
                 + (f", and {len(skipped) - 1} more" if len(skipped) > 1 else "") + ")"
                 if skipped else "")
        return (f"Calibrated on {self.notebooks} notebooks{apart}: "
                f"{said or 'no model route ran'}.")

    def lines(self) -> list[str]:
        out = [f"Warning: {w}" for w in self.warnings]
        out.append(f"Calibrated on {self.notebooks} graded notebooks: {self.examples}.")
        for r in self.routes:
            now = "true" if r.can_judge else "false"
            out.append(f"The {r.role} role (route {r.route}; {r.server}, {r.model}; "
                       f"can_judge = {now} now): {r.figures}.")
            out.append(f"  Verdict: {r.verdict}.")
        out += [f"Not counted: {p}" for p in self.problems]
        out.append(AUTHORITY)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"created_at": self.created_at, "examples": self.examples,
                "notebooks": self.notebooks, "fit": self.fit,
                "routes": [r.to_dict() for r in self.routes], "warnings": list(self.warnings),
                "problems": list(self.problems)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibration:
        return cls(float(data["created_at"]), str(data["examples"]), int(data["notebooks"]),
                   tuple(RouteCalibration.from_dict(r) for r in data["routes"]),
                   tuple(str(w) for w in data.get("warnings", ())),
                   tuple(str(p) for p in data.get("problems", ())))


def judging_config(config: EngineConfig) -> EngineConfig:
    """``config`` with every route trusted to judge: how a calibration grades."""
    return dataclasses.replace(config, routes={
        role: dataclasses.replace(route, can_judge=True)
        for role, route in config.routes.items()})


def trusted_now(config: EngineConfig) -> str:
    """Which roles the configuration trusts to judge now, in one sentence."""
    roles = [r for r in LAYER_ROLES.values() if r in config.routes]
    trusted = [r for r in roles if config.can_judge(r)]
    advisory = [r for r in roles if r not in trusted]
    return (f"Trusted to judge now (can_judge = true): {', '.join(trusted) or 'no role'}; "
            f"advisory: {', '.join(advisory) or 'no role'}.")


def _identities(config: EngineConfig, health: list[WorkerHealth]) -> list[RouteIdentity]:
    out = []
    for layer, role in LAYER_ROLES.items():
        route = config.routes.get(role)
        if route is None:
            continue
        if route.remote:
            served = [h for h in health if h.kind != "route"
                      and role in {r.strip() for r in h.role.split(",")}]
            server = ", ".join(dict.fromkeys(h.name for h in served)) or \
                ", ".join(route.servers)
            model = ", ".join(dict.fromkeys(h.model for h in served if h.model)) or route.model
        else:
            server, model = f"{route.backend} (in-process)", config.model(route.model).name
        out.append(RouteIdentity(role, layer, route.name, server, model,
                                 config.can_judge(role)))
    return out


def calibrate(sets: Sequence[CalibrationSet], config: EngineConfig,
              options: GradeOptions | None = None, store: Store | None = None,
              progress: Progress | None = None, workers: int = 2) -> Calibration:
    """Grade ``sets`` with ``config``'s routes, each trusted to judge for the run, and
    measure them; with ``store``, keep each route's figures there."""
    options = dataclasses.replace(options or GradeOptions(), use_llm=True, llm_samples=1)
    with DisaggregatedClient(config) as configured:
        warnings = tuple(configured.judging_warnings())
    total = sum(len(s.notebooks) for s in sets)
    examples: list[Example] = []
    problems = [p for s in sets for p in s.problems]
    done = 0
    with DisaggregatedClient(judging_config(config)) as client:
        for s in sets:
            grader = Grader(s.assignment, options, client=client)
            items = [GradeInput.from_path(nb.path) for nb in s.notebooks]

            def step(_: int, __: int, report: Any, name: str = s.assignment.name) -> None:
                nonlocal done
                done += 1
                shown = report.error if report.status == "error" else \
                    points_text(report.score, report.max_score)
                if progress is not None:
                    progress(done, total, f"{name}/{report.file}: {shown}")

            reports = grader.grade_many(items, workers, step)
            for nb, report in zip(s.notebooks, reports, strict=True):
                if report.status != "graded":
                    problems.append(f"{s.assignment.name}/{report.file}: not graded "
                                    f"({report.error})")
                examples.append(Example(report, s.assignment.rubric, nb.instructor))
        identities = _identities(config, client.health())
    now = time.time()
    described = "; ".join(s.describe() for s in sets)
    routes = tuple(measure_routes(examples, identities, described, now))
    result = Calibration(now, described, total, routes, warnings, tuple(problems))
    log.info("calibration over %d notebooks: %s", total,
             ", ".join(f"{r.route} {'fit' if r.fit else 'not fit'}" for r in routes))
    if store is not None:
        save(result, store)
    return result


def save(calibration: Calibration, store: Store) -> list[int]:
    """Keep each route that judged a notebook; returns the rows' ids."""
    return [store.add_calibration(calibration.created_at, r.role, r.route, r.server, r.model,
                                  calibration.examples, r.fit, r.to_dict())
            for r in calibration.routes if r.notebooks]


def latest(store: Store) -> list[RouteCalibration]:
    """The newest calibration of each route in the store, newest first."""
    return [dataclasses.replace(RouteCalibration.from_dict(row.figures),
                                created_at=row.created_at, examples=row.examples)
            for row in store.latest_calibrations()]


def calibration_rows(routes: Iterable[RouteCalibration], in_use: Iterable[str] = ()
                     ) -> list[dict[str, Any]]:
    """The Dashboard's table: one row per route. ``in_use``: the configured routes' names."""
    using = set(in_use)
    rows = []
    for r in routes:
        mae = (f"{r.instructor_mae:.2f} trusted, {r.checks_mae:.2f} checks alone "
               f"(per {r.mae_over})") if r.instructor_mae is not None and \
            r.checks_mae is not None else None
        rows.append({
            "route": r.route, "in use": "yes" if r.route in using else "no",
            "server": r.server, "model": r.model,
            "calibrated": time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_at)),
            "notebooks": r.notebooks, "criteria judged": r.judged,
            "agreement with the checks": None if r.rate is None else f"{r.rate:.0%}",
            "agreement with the instructor": None if r.instructor_rate is None
            else f"{r.instructor_rate:.0%} of {r.instructor_judged}",
            "off the instructor's points": mae,
            "would move": r.moved, "would send to review": r.reviewed,
            "fit to judge": "yes" if r.fit else "no", "verdict": r.verdict,
            "examples": r.examples})
    return rows
