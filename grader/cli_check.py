"""``python -m grader check`` and ``python -m grader calibrate``: what to know before
grading, about the assignment and about the models.

    python -m grader check ASSIGNMENT_DIR [--no-exec] [--json] [--rubric RUBRIC.json]
                           [--calibrate [--grades CSV] [--limit N] [--db PATH]]
    python -m grader calibrate [ASSIGNMENT_DIR...] [--notebooks DIR] [--grades CSV]
                               [--limit N] [--no-exec] [--json] [--db PATH]

``check`` grades the assignment's own solution and template with its rubric
(``grader.service.selfcheck``); with ``--calibrate`` it then calibrates the model routes
on the assignment's graded notebooks (its ``submissions``), as ``calibrate`` does.

``calibrate`` measures the configured model routes before anyone trusts them to judge
(``can_judge``; ``grader.service.calibration``): each route grades graded examples as if
trusted, and is compared with the deterministic checks and the instructor's points. By
default the bundled examples, ``--limit`` (3) notebooks of each; or the assignment
folders named, each with its graded notebooks (``--notebooks``, default its
``submissions``; all of them unless ``--limit``) and the instructor's points (``--grades``,
default ``grades.csv`` beside the notebooks: a ``file`` column, ``score`` or ``total``,
and optionally a column per criterion id; see docs/configuration.md). It prints the
configuration's judging warnings, each route's figures and its verdict; with ``--json``
one JSON object on stdout. Progress goes to stderr. Each route's figures are kept in the
grade store (``--db``, default the app's), where the Dashboard shows the latest per route;
no grade is changed. Exit status: 0 when every route measured is fit to judge, 1 when one
is not or measured too little to tell (``check``: or the assignment is not sound), 2 for a
bad command line or input.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from inference import data_dir, load_config

from .assignment import load_assignment
from .errors import InputError
from .layers.base import GradeOptions
from .rubrics.schema import load_rubric
from .service.batch import stop_on_signals
from .service.calibration import (
    DEFAULT_LIMIT,
    Calibration,
    CalibrationSet,
    bundled_sets,
    calibrate,
    graded_set,
)
from .service.selfcheck import check_assignment
from .store.database import Store

__all__ = ["add_check_commands", "cmd_calibrate", "cmd_check"]


def add_check_commands(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("check", help="grade an assignment's own solution and template, and "
                                     "report what would make its grades wrong")
    c.add_argument("assignment", help="folder with assignment.toml (docs/rubric-format.md)")
    c.add_argument("--no-exec", action="store_true", help="do not run the solution")
    c.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    c.add_argument("--rubric", help="check this rubric file instead of the folder's")
    c.add_argument("--calibrate", action="store_true",
                   help="also measure the model routes on the assignment's graded notebooks")
    _calibration_options(c)
    c.set_defaults(func=cmd_check)
    k = sub.add_parser("calibrate", help="measure the model routes on graded examples before "
                                         "trusting them to judge (can_judge)")
    k.add_argument("assignments", nargs="*", metavar="ASSIGNMENT_DIR",
                   help="assignment folders with graded notebooks (default: the bundled "
                        "examples)")
    k.add_argument("--notebooks", help="the graded notebooks of the one assignment named "
                                       "(default: its submissions folder)")
    k.add_argument("--no-exec", action="store_true",
                   help="do not run the notebooks; grade from their stored outputs")
    k.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    _calibration_options(k)
    k.set_defaults(func=cmd_calibrate)


def _calibration_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--grades", help="the instructor's points: a CSV with a file column, score "
                                    "or total, and criterion ids (default: grades.csv beside "
                                    "the notebooks)")
    p.add_argument("--limit", type=int, default=None,
                   help=f"at most N notebooks per assignment (bundled: {DEFAULT_LIMIT}; "
                        "your own: all; 0: all)")
    p.add_argument("--db", help="keep the figures in this grade store (default: the app's)")


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")


def _err(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def _progress(done: int, total: int, what: str) -> None:
    _err(f"calibrating [{done}/{total}] {what}")


def _run(sets: list[CalibrationSet], args: argparse.Namespace) -> Calibration:
    config = load_config()
    db = Path(args.db) if args.db else config.history_db or data_dir() / "grader.db"
    with Store(db) as store, stop_on_signals():  # SIGTERM: no sandbox left behind
        return calibrate(sets, config, GradeOptions(execute=not args.no_exec), store,
                         _progress)


def cmd_check(args: argparse.Namespace) -> int:
    assignment = load_assignment(Path(args.assignment))
    if args.rubric:
        assignment = dataclasses.replace(assignment, rubric=load_rubric(Path(args.rubric)))
    calibrating = args.calibrate or args.grades or args.limit is not None or args.db
    if calibrating and not args.calibrate:
        _err("--grades, --limit and --db are for --calibrate")
        return 2
    check = check_assignment(assignment, GradeOptions(execute=not args.no_exec))
    calibration = _run([graded_set(assignment, None, _path(args.grades), args.limit or 0)],
                       args) if args.calibrate else None
    if args.json:
        extra = {"calibration": calibration.to_dict()} if calibration is not None else {}
        _out(json.dumps(check.to_dict() | extra, indent=2))
    else:
        _out("\n".join(check.lines() + (calibration.lines() if calibration else [])))
    return 0 if check.sound and (calibration is None or calibration.fit) else 1


def cmd_calibrate(args: argparse.Namespace) -> int:
    if (args.notebooks or args.grades) and len(args.assignments) != 1:
        _err("--notebooks and --grades are for one assignment folder")
        return 2
    if args.limit is not None and args.limit < 0:
        _err(f"--limit must be 0 or more, not {args.limit}")
        return 2
    if args.assignments:
        sets = [graded_set(load_assignment(Path(a)), _path(args.notebooks),
                           _path(args.grades), args.limit or 0) for a in args.assignments]
    else:
        sets = bundled_sets(DEFAULT_LIMIT if args.limit is None else args.limit)
    if not any(s.notebooks for s in sets):
        raise InputError(", ".join(args.assignments) or "examples", "no notebook to calibrate on")
    calibration = _run(sets, args)
    if args.json:
        _out(json.dumps(calibration.to_dict(), indent=2))
    else:
        _out("\n".join(calibration.lines()))
    return 0 if calibration.fit else 1


def _path(text: str | None) -> Path | None:
    return Path(text) if text else None
