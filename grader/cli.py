"""Command line: batch grading from the shell.

    python -m grader grade ASSIGNMENT_DIR NOTEBOOK_OR_ZIP... [--no-llm] [--json]
                           [--out DIR] [--workers N] [--db PATH] [--no-exec] [--regrade]
                           [--chunk N]
    python -m grader check ASSIGNMENT_DIR [--no-exec] [--json] [--rubric RUBRIC.json]
                           [--calibrate [--grades CSV] [--limit N] [--db PATH]]
    python -m grader calibrate [ASSIGNMENT_DIR...] [--notebooks DIR] [--grades CSV]
                               [--limit N] [--no-exec] [--json] [--db PATH]
    python -m grader packages ASSIGNMENT_DIR [--install]
    python -m grader import-rubric OLD_RUBRIC.json OUT.json [--language r]
    python -m grader import nbgrader SOURCE.ipynb --out DIR
    python -m grader import otter MASTER.ipynb --out DIR
    python -m grader import otter STUDENT.ipynb --solution KEY.ipynb --tests TESTS/ --out DIR

Before grading, ``grade`` installs the packages the assignment declares and this
machine lacks (not with ``--no-install``), then checks the assignment itself (``check``
does only that): its solution and its template are graded with the rubric and the
solution is run; the percentages and any problem of the solution's run (a missing
package, function or data file, an error) go to stderr, before any student is graded.

Progress goes to stderr; with --json, stdout holds exactly one JSON list (an object per
notebook). Files that cannot be graded are listed with status "error" and the reason;
the others are graded regardless. Files are named by their paths as given
(``path/to/upload.zip/entry.ipynb`` inside a ZIP), shown with control and bidi
characters escaped; ``archive`` and ``entry`` keep the names as they were, and
``notes`` says what was noticed about an input (a duplicate name, text that had to be
replaced). Every error names the path it is about. Exit status: 0 when every input was
graded, 1 when some were not, 2 for a bad command line, a broken assignment folder, or a
path that cannot be read or written (grades already made are printed first). No class is
too large: thousands of notebooks are graded as one batch in chunks that the memory
holds (grader/cli_grade.py). ``check`` exits 0 when the assignment is sound, 1 when not.
``calibrate`` (and ``check --calibrate``) measures the model routes before they are trusted
to judge: see grader/cli_check.py.

SIGTERM (or SIGHUP) in the middle of ``grade`` stops the batch: the sandboxes are
killed, their run folders and cgroups removed, the grades made so far printed (and,
with --db, saved: grading the same files again continues that batch and grades only the
rest) with the notebooks not graded named, and the exit status is 128 + the signal's
number.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from .cli_check import add_check_commands
from .cli_grade import add_grade_command, os_error
from .cli_packages import add_command as add_packages_command
from .errors import GraderError, NotebookError, RubricError
from .rubrics.import_seed import import_seed_file, report_lines
from .rubrics.schema import save_rubric
from .service.import_fit import fit_to_folder
from .service.imports import import_nbgrader_folder, import_otter_folder, import_otter_master
from .views.agreement import cmd_agreement, parse_step

log = logging.getLogger("grader.cli")


def cmd_import(args: argparse.Namespace) -> int:
    report = import_seed_file(Path(args.source), args.language)
    if args.assignment:  # fit to the assignment's own solution
        try:
            report = fit_to_folder(report, Path(args.assignment))
        except NotebookError as exc:
            print(f"cannot fit to {args.assignment}: {exc}", file=sys.stderr)
            return 2
    save_rubric(report.rubric, Path(args.dest))
    print(
        f"wrote {args.dest}: {len(report.rubric.criteria)} criteria, "
        f"{report.rubric.total_points:g} points"
    )
    print("\n".join(report_lines(report)))
    return 0


def cmd_import_assignment(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if args.format == "nbgrader":
        report = import_nbgrader_folder(Path(args.source), out)
    elif not args.tests:  # otter assign's master notebook holds everything
        report = import_otter_master(Path(args.source), out)
    else:
        if not args.solution:
            print("otter with --tests: give --solution (the instructor's notebook) too",
                  file=sys.stderr)
            return 2
        report = import_otter_folder(Path(args.source), Path(args.solution), Path(args.tests),
                                     out)
    print(f"wrote {out}: {len(report.rubric.criteria)} criteria, "
          f"{report.rubric.total_points:g} points")
    for row in report.rows:
        mark = "carried" if row.carried else "NOT carried"
        print(f"- {row.item}: {mark}" + (f" as {row.imported_as}" if row.imported_as else "")
              + (f"; {row.todo}" if row.todo else ""))
    print(f"check it: python -m grader check {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m grader", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    add_grade_command(sub)
    add_check_commands(sub)  # check, calibrate
    add_packages_command(sub)
    i = sub.add_parser("import-rubric", help="convert an old-system rubric to our format")
    i.add_argument("source")
    i.add_argument("dest")
    i.add_argument("--language", default="r", choices=["python", "r"])
    i.add_argument("--assignment", help="a folder with template.ipynb and solution.ipynb: drop "
                                        "what the solution does not pass, each said")
    i.set_defaults(func=cmd_import)
    n = sub.add_parser("import", help="make an assignment folder from an nbgrader source "
                                      "notebook or otter's tests")
    n.add_argument("format", choices=["nbgrader", "otter"])
    n.add_argument("source", help="nbgrader: the source notebook (with solutions and hidden "
                                  "tests); otter: the master notebook, or with --tests the "
                                  "student notebook")
    n.add_argument("--out", required=True, help="the assignment folder to write")
    n.add_argument("--solution", help="otter: the instructor's solution notebook")
    n.add_argument("--tests", help="otter: the folder of OK-format test files (q1.py, ...)")
    n.set_defaults(func=cmd_import_assignment)
    a = sub.add_parser("agreement", help="compare grades with an instructor's CSV")
    a.add_argument("grades", help="JSON list from `grade --json` (or full reports)")
    a.add_argument("human", help="CSV: student_id and/or file, score (or total), criterion ids")
    a.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    a.add_argument("--step", type=parse_step, default=1.0,
                   help="points per QWK category (default 1)")
    a.set_defaults(func=cmd_agreement)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for stream in (sys.stdout, sys.stderr):  # a name the terminal cannot take never kills us
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    logging.basicConfig(
        level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    try:
        return int(args.func(args))
    except OSError as exc:
        print(f"error: {os_error(exc)}", file=sys.stderr)
        return 2
    except RubricError as exc:
        print(f"error: {exc.file}:", file=sys.stderr)
        for p in exc.problems:
            print(f"  - {p}", file=sys.stderr)
        return 2
    except GraderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
