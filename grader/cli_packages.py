"""``python -m grader packages FOLDER [--install]``, and the install ``grade`` does first.

``packages`` lists what the assignment declares and what a run would lack; with
``--install`` it installs that (progress on stderr). Exit status: 0 when nothing is
missing, 1 when something is, 2 when an installer failed (the error names the
declaration and gives the installer's last lines).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .assignment import Assignment, load_assignment
from .packages import install, run_env, status

__all__ = ["add_command", "install_before_grading"]


def _say(line: str) -> None:
    sys.stderr.write(f"  {line}\n")


def _out(line: str) -> None:
    sys.stdout.write(line + "\n")


def add_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("packages", help="list the packages an assignment declares and what is "
                                        "missing here; --install installs them")
    p.add_argument("assignment", help="folder with assignment.toml (docs/rubric-format.md)")
    p.add_argument("--install", action="store_true",
                   help="install what is missing into the assignment's own environment")
    p.set_defaults(func=cmd_packages)


def cmd_packages(args: argparse.Namespace) -> int:
    assignment = load_assignment(Path(args.assignment))
    packages = assignment.packages
    if not packages:
        _out("This assignment declares no packages ([packages] in assignment.toml): its "
             "notebooks run with the grader's own.")
        return 0
    _out(f"Declared in {packages.source}: {packages.describe()}")
    state = install(packages, _say) if args.install else status(packages)
    env = run_env(packages)
    if env is not None:
        _out("Its environment: " + ", ".join(str(f) for f in env.folders()))
    _out(state.text() or "Every declared package is installed: runs of this assignment "
                         "have them.")
    return 0 if state.ready else 1


def install_before_grading(assignment: Assignment) -> None:
    """Install what the assignment declares and this machine lacks (said on stderr)."""
    if assignment.packages and not (state := status(assignment.packages)).ready:
        _say(f"installing the assignment's packages first: "
             f"{', '.join((*state.missing_python, *state.missing_r))}")
        install(assignment.packages, _say)
