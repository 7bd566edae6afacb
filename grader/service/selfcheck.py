"""The assignment checks itself: its solution and its template graded before any student.

An imported rubric once scored a complete submission 63/100, the same as one with wrong
outputs, because it required assigning variables the template already creates, and
nothing graded the solution to notice. ``check_assignment`` grades the assignment's own
solution and template with its rubric (deterministic layers only) and runs the solution
in the sandbox, then reports, in words an instructor acts on:

- the two percentages: a sound rubric gives the solution (nearly) full marks
  (``SOLUTION_AT_LEAST``) and the template (nearly) nothing (``TEMPLATE_AT_MOST``);
- the solution's cells that raise errors, each with its error, sorted by what it means:
  a package the machine lacks (``No module named 'x'``, ``there is no package called
  'x'``), a function no loaded package provides (``could not find function "month"``:
  tidyverse 1.3 does not attach lubridate), a data file the assignment does not provide,
  or another error;
- data files the solution's code names (``read_csv("data/sales.csv")``) that the
  assignment's data does not hold, found in the source, so also without a kernel;
- the criteria the solution loses points on, with the checks' own messages;
- the points no check could verify (a test or output check the solution fails too, marked
  "environment" and charged to no one), counted apart and said with the reason ("12 of
  20 points could not be checked: data file missing"): the solution's percentage is then
  over the other points only, and the assignment is not sound;
- the value checks whose literal expected value the solution does not give (the key
  disagrees: students are charged against the expected value).

Percentages are written by ``selfcheck_parts.percent_text``, with the precision that
shows a loss ("99.7%", never "100%" when a point is lost).

Data that leads out of the assignment folder (a link to ``/etc/shadow``) is refused
before anything runs, naming the file (``grader.assignment.data_problems``).

An error in the solution's run is the environment's or the instructor's, never a
student's: the instructor sees it here, once, before grading.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, Literal

from ..analysis.template import match_template
from ..assignment import Assignment, data_problems
from ..errors import RubricError
from ..layers.base import AssignmentContext, GradeOptions
from ..layers.values import key_disagreements
from ..packages import run_env, status
from ..pipeline import GradeInput, Grader
from ..points import as_points
from ..rubrics.schema import save_rubric
from ..sandbox.execution import ExecutionResult
from ..sandbox.inspect_code import string_literals
from ..scoring import MANUAL
from ..types import GradeReport
from .selfcheck_parts import percent_text, unverified

log = logging.getLogger(__name__)
REPO = Path(__file__).resolve().parents[2]
NICE = shutil.which("nice")

__all__ = ["SOLUTION_AT_LEAST", "TEMPLATE_AT_MOST", "CheckState", "SelfCheck", "SelfChecks",
           "SolutionProblem", "check_assignment", "problems_of_run"]

SOLUTION_AT_LEAST = 98.0  # percent
TEMPLATE_AT_MOST = 5.0
DATA_SUFFIXES = (".csv", ".tsv", ".txt", ".xlsx", ".xls", ".json", ".parquet", ".feather",
                 ".rds", ".rdata", ".sav", ".dta", ".zip", ".gz")

ProblemKind = Literal["missing_package", "missing_function", "missing_data", "error"]

_PACKAGE = (re.compile(r"No module named '([^']+)'"),
            re.compile(r"there is no package called [‘'`\"]([^’'`\"]+)"))
_FUNCTION = re.compile(r"could not find function [\"“]([^\"”]+)")
_FILE = (re.compile(r"No such file or directory: '([^']+)'"),
         re.compile(r"[‘'\"]([^’'\"]+)[’'\"] does not exist"),
         re.compile(r"cannot open file [‘'\"]([^’'\"]+)"),
         re.compile(r"path[^\n]*[‘'\"]([^’'\"]+)[’'\"][^\n]*does not exist"))


@dataclass(frozen=True, slots=True)
class SolutionProblem:
    kind: ProblemKind
    text: str  # in plain words, with the cell and the error
    cell: int | None = None  # 1-based position in the solution notebook
    name: str = ""  # the package, function or file


@dataclass(frozen=True, slots=True)
class SelfCheck:
    """What the check found, as plain data (``to_dict``/``from_dict`` round-trip it, so
    the app can run the check in a process of its own)."""

    assignment: str
    solution_percent: float | None  # None: the solution could not be graded
    template_percent: float | None
    executed: bool  # the solution ran in the sandbox
    not_executed: str  # why not, when it did not
    problems: tuple[SolutionProblem, ...]
    losses: tuple[str, ...]  # what the solution loses points on
    unverified_points: float = 0.0  # points of checks the solution fails too ("environment")
    total_points: float = 0.0
    unverified_why: str = ""  # "data file missing", ...
    unverified: tuple[str, ...] = ()  # one line per check that could not be verified
    checked_earned: float = 0.0  # the solution's points on the checks that were verified
    key_disagreements: tuple[str, ...] = ()  # expected values the solution does not give
    manual_points: float = 0.0  # points of criteria graded by hand: out of the percentages
    manual: tuple[str, ...] = ()  # their titles

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["sound"] = self.sound
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SelfCheck:
        return cls(str(data["assignment"]), data["solution_percent"], data["template_percent"],
                   bool(data["executed"]), str(data["not_executed"]),
                   tuple(SolutionProblem(**p) for p in data["problems"]),
                   tuple(str(x) for x in data["losses"]),
                   float(data.get("unverified_points", 0.0)),
                   float(data.get("total_points", 0.0)), str(data.get("unverified_why", "")),
                   tuple(str(x) for x in data.get("unverified", ())),
                   float(data.get("checked_earned", 0.0)),
                   tuple(str(x) for x in data.get("key_disagreements", ())),
                   float(data.get("manual_points", 0.0)),
                   tuple(str(x) for x in data.get("manual", ())))

    @property
    def sound(self) -> bool:
        """The rubric and the environment look right: nothing for the instructor to fix."""
        sol, tmpl = self.solution_percent, self.template_percent
        return (sol is not None and sol >= SOLUTION_AT_LEAST and tmpl is not None
                and tmpl <= TEMPLATE_AT_MOST and not self.problems
                and not self.unverified_points)

    def headline(self) -> str:
        """'The solution scores 100% and the template 0%: the rubric tells them apart.',
        or, when checks could not be verified, '12 of 20 points could not be checked:
        data file missing. The solution earns 8 of the 8 points that could be checked,
        ...'."""
        sol, tmpl = self.solution_percent, self.template_percent
        text = f"The solution scores {percent_text(sol)} and the template {percent_text(tmpl)}"
        if self.manual_points:
            text += (f" of the points graded automatically ({self.manual_points:g} points "
                     f"are for you to grade: {', '.join(self.manual)})")
        fixes = []
        judged = True  # the solution's percentage says something
        if self.unverified_points:  # never "scores 100%" over points no check verified
            checked = round(self.total_points - self.unverified_points, 4)
            judged = checked > 0
            sol = 100.0 * self.checked_earned / checked if judged else None
            earned = (f"The solution earns {self.checked_earned:g} of the {checked:g} points "
                      "that could be checked" if judged else "No other point could be checked")
            text = (f"{self.unverified_points:g} of {self.total_points:g} points could not be "
                    f"checked: {self.unverified_why}. {earned}, and the template scores "
                    f"{percent_text(tmpl)}")
            fixes.append("every point should be checked on the solution")
        if self.sound:
            return text + ": the rubric tells them apart."
        if judged and (sol is None or sol < SOLUTION_AT_LEAST):
            fixes.append(f"the solution should score at least {SOLUTION_AT_LEAST:.0f}%")
        if tmpl is None or tmpl > TEMPLATE_AT_MOST:
            fixes.append(f"the template at most {TEMPLATE_AT_MOST:.0f}%")
        if self.problems:
            fixes.append(f"{len(self.problems)} problem{'s' if len(self.problems) > 1 else ''} "
                         "in the solution's run")
        return f"{text}: {'; '.join(fixes)}. Fix this before grading students."

    def lines(self) -> list[str]:
        """The headline, then each problem, disagreement of the key, check that could not
        be verified and loss, one line each."""
        out = [self.headline()]
        if not self.executed:
            out.append(f"The solution was not run ({self.not_executed}): output checks "
                       "were graded from its stored outputs.")
        out += [p.text for p in self.problems]
        out += list(self.key_disagreements)
        out += list(self.unverified)
        out += [f"The solution loses points on {loss}" for loss in self.losses]
        return out


def check_assignment(assignment: Assignment, options: GradeOptions | None = None,
                     shared: AssignmentContext | None = None) -> SelfCheck:
    """Grade the assignment's solution and template with its rubric (no models), and
    read the solution's run for the problems an instructor must fix. ``shared``: the
    context of the grader about to grade the students, so the solution runs once."""
    if unsafe := [p for d in assignment.data for p in data_problems(assignment.root, d)]:
        raise RubricError(str(assignment.root / "assignment.toml"), unsafe)
    options = dataclasses.replace(options or GradeOptions(), use_llm=False, llm_samples=1)
    grader = Grader(assignment, options)
    if shared is not None:
        grader.context = shared
    solution = grader.grade(GradeInput(assignment.solution.name,
                                       assignment.solution.read_bytes()))
    template = grader.grade(GradeInput(assignment.template.name,
                                       assignment.template.read_bytes()))
    run: ExecutionResult | None = grader.context.cache.get("solution_run")
    ctx = grader.context
    prose = {o.cell.index for o in match_template(
        ctx.template, ctx.solution, assignment.rubric.all_placeholders).origins if o.prose}
    state = status(assignment.packages)  # the declared packages a run would lack
    problems = [] if state.ready else [SolutionProblem(
        "missing_package", state.text(), name=", ".join((*state.missing_python, *state.missing_r)))]
    problems += problems_of_run(run, prose) if run is not None else []
    provided = {p.name.lower() for p in assignment.data_files()}
    reported = {p.name.lower() for p in problems if p.kind == "missing_data"}
    for path in _named_data_files(grader.context.solution.cells):
        base = _base_name(path)
        if base.lower() not in provided and base.lower() not in reported:
            reported.add(base.lower())
            problems.append(SolutionProblem(
                "missing_data", f"The solution reads {path!r}, but the assignment's data "
                f"holds no file named {base!r}: add it to the assignment's data.", name=base))
    executed = run is not None and not run.error
    why = "" if executed else (run.error if run is not None else _why_not_run(solution))
    unchecked = unverified(solution, (p.kind for p in problems))
    disagree = key_disagreements(assignment.rubric, run) if run is not None and executed else []
    manual = [c for c in assignment.rubric.criteria if c.manual]
    by_hand = round(sum(c.points for c in manual), 4)
    check = SelfCheck(assignment.name, _percent(solution, by_hand), _percent(template, by_hand),
                      executed, why, tuple(problems), tuple(_losses(solution)),
                      unchecked.points, unchecked.total, unchecked.why, unchecked.checks,
                      unchecked.earned, tuple(d.text() for d in disagree), by_hand,
                      tuple(c.title for c in manual))
    log.info("self-check of %s: solution %s, template %s, %d problems", assignment.name,
             check.solution_percent, check.template_percent, len(problems))
    return check


@dataclass(frozen=True, slots=True)
class CheckState:
    """A background self-check as a page shows it: running, done (``check``) or failed."""

    running: bool
    check: SelfCheck | None = None
    error: str = ""


class SelfChecks:
    """Self-checks run in the background, one per state of an assignment (its rubric in
    force, template, solution and data), kept for the life of the process: a page asks
    on every draw and shows "checking..." until the result is there.

    Each check runs as ``python -m grader check --json`` in a process of its own, not in
    a thread of the app's: CPython 3.11's AST constructor keeps its recursion depth per
    interpreter, and two threads parsing at once (ours grading the solution, Streamlit
    compiling a page) can fail with "AST constructor recursion depth mismatch"
    (python/cpython#106905); a process of its own also keeps the app's GIL free."""

    def __init__(self, options: GradeOptions | None = None, timeout_s: float = 1800) -> None:
        self.options = options or GradeOptions()
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._states: dict[tuple[str, ...], CheckState] = {}

    @staticmethod
    def key(assignment: Assignment) -> tuple[str, ...]:
        digest = hashlib.sha256()
        for path in (assignment.template, assignment.solution, *assignment.data_files()):
            stat = path.stat()
            digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
        # a package installed since changes what the solution can run
        return (str(assignment.root), assignment.rubric.version, digest.hexdigest(),
                str(run_env(assignment.packages)))

    def get(self, assignment: Assignment) -> CheckState:
        """The state of ``assignment``'s self-check, started on the first ask."""
        key = self.key(assignment)
        with self._lock:
            state = self._states.get(key)
            if state is None:
                state = self._states[key] = CheckState(running=True)
                threading.Thread(target=self._run, args=(key, assignment), daemon=True,
                                 name=f"self-check {assignment.name}").start()
            return state

    def _run(self, key: tuple[str, ...], assignment: Assignment) -> None:
        try:
            state = CheckState(False, self._check(assignment))
        except Exception as exc:  # shown to the instructor; grading itself is unaffected
            log.exception("self-check of %s failed", assignment.name)
            state = CheckState(False, error=f"{type(exc).__name__}: {exc}")
        with self._lock:
            self._states[key] = state

    def _check(self, assignment: Assignment) -> SelfCheck:
        with tempfile.TemporaryDirectory(prefix="grader-check-") as tmp:
            rubric = Path(tmp) / "rubric.json"  # the rubric in force, maybe not the folder's
            save_rubric(assignment.rubric, rubric)
            # at low priority: background work must not slow the grading an instructor
            # waits for (its sandboxed runs inherit the niceness)
            nice = [NICE, "-n", "10"] if NICE else []
            argv = [*nice, sys.executable, "-m", "grader", "check", str(assignment.root),
                    "--json", "--rubric", str(rubric)]
            if not self.options.execute:
                argv.append("--no-exec")
            done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True,
                                  timeout=self.timeout_s, check=False)
        if done.returncode not in (0, 1):
            tail = done.stderr.strip().splitlines()[-1:] or ["no message"]
            raise RuntimeError(f"the check ended with status {done.returncode}: {tail[0]}")
        return SelfCheck.from_dict(json.loads(done.stdout))


def problems_of_run(run: ExecutionResult, prose: set[int] | frozenset[int] = frozenset()
                    ) -> list[SolutionProblem]:
    """The solution's failing cells, each said by what it means for the instructor.
    ``prose``: the indexes of code cells that hold only prose (an answer typed into the
    template's code cell): they cannot run, and are no problem."""
    out = []
    for cell in run.cells:
        if cell.ok or not cell.error or cell.index in prose:
            continue
        error = cell.error.splitlines()[0][:300]
        where = f"Cell {cell.index + 1} of the solution"
        if name := _first(_PACKAGE, cell.error):
            out.append(SolutionProblem(
                "missing_package", f"{where} needs the package {name!r}, which this machine "
                f"lacks: declare it in the assignment's packages ([packages] in "
                f"assignment.toml, or a requirements.txt beside the notebooks) and install "
                f"them, or grade without it ({error}).", cell.index + 1, name))
        elif m := _FUNCTION.search(cell.error):
            out.append(SolutionProblem(
                "missing_function", f"{where} calls {m.group(1)}(), which no loaded package "
                f"provides here: load the package it comes from in the solution and the "
                f"template (for example library(lubridate) for month()) ({error}).",
                cell.index + 1, m.group(1)))
        elif name := _first(_FILE, cell.error):
            out.append(SolutionProblem(
                "missing_data", f"{where} cannot open {name!r}: add the file to the "
                f"assignment's data ({error}).", cell.index + 1, _base_name(name)))
        else:
            out.append(SolutionProblem("error", f"{where} raises an error: {error}",
                                       cell.index + 1))
    return out


def _percent(report: GradeReport, by_hand: float = 0.0) -> float | None:
    """The report's share of the points graded automatically (``by_hand``: the points of
    the manual criteria, which earn nothing until the instructor grades them)."""
    automatic = report.max_score - by_hand
    if report.score is None or automatic <= 0:
        return None
    return 100.0 * report.score / automatic


def _first(patterns: tuple[re.Pattern[str], ...], text: str) -> str:
    return next((m.group(1) for p in patterns if (m := p.search(text))), "")


def _base_name(path: str) -> str:
    return (PureWindowsPath(path) if "\\" in path else PurePosixPath(path)).name


def _named_data_files(cells) -> list[str]:
    """The data files the solution's code names, in order, each once."""
    out: list[str] = []
    for cell in cells:
        if cell.kind != "code":
            continue
        for text in string_literals(cell.source):
            if text.lower().endswith(DATA_SUFFIXES) and "\n" not in text and text not in out \
                    and not text.startswith(("http://", "https://")):
                out.append(text)
    return out


def _losses(report: GradeReport) -> list[str]:
    out = []
    for crit in report.criteria:
        lost = [ch for ch in crit.checks if ch.score < 1]
        if crit.review_reasons and crit.review_reasons[0].startswith(MANUAL):
            continue  # graded by hand: said apart
        if crit.points >= crit.max_points or (
                lost and all(ch.status == "environment" for ch in lost)):
            continue  # checks that could not be verified are said apart
        why = "; ".join(f"{ch.check} {ch.target}: {ch.message}" for ch in lost
                        if ch.status != "environment")
        why = why or "; ".join(crit.review_reasons) or (
            "points withheld though no check failed: read the criterion's evidence")
        out.append(f"{crit.id} ({as_points(crit.points)} of {as_points(crit.max_points)}): {why}")
    return out


def _why_not_run(report: GradeReport) -> str:
    l2 = report.layers.get("L2")
    notes = [n for n in (l2.notes if l2 is not None else []) if "stored outputs" in n]
    return notes[0].split(": ", 1)[-1] if notes else "execution was not asked for"
