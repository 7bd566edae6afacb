"""Command line: batch grading from the shell.

    python -m grader grade ASSIGNMENT_DIR NOTEBOOK_OR_ZIP... [--no-llm] [--json]
                           [--out DIR] [--workers N] [--db PATH] [--no-exec] [--regrade]
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
path that cannot be read or written (grades already made are printed first), 2 for a
batch of more notebooks than ``--max-notebooks`` allows (300 unless raised; the error
names the archive and the count). ``check`` exits 0 when the assignment is sound, 1 when not.
``calibrate`` (and ``check --calibrate``) measures the model routes before they are trusted
to judge: see grader/cli_check.py.

SIGTERM (or SIGHUP) in the middle of ``grade`` stops the batch: the sandboxes are
killed, their run folders and cgroups removed, the grades made so far printed (and,
with --db, saved: grading the same files again grades only the rest) with the
notebooks not graded named, and the exit status is 128 + the signal's number.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from inference import DisaggregatedClient, load_config

from .assignment import load_assignment
from .cli_check import add_check_commands
from .cli_packages import add_command as add_packages_command
from .cli_packages import install_before_grading
from .errors import GraderError, GradingStopped, NotebookError, RubricError
from .exports.formats import write_exports
from .layers.base import GradeOptions
from .letters.pdf import FontError
from .notebooks.archive import InputProblem, SubmissionFile, expand_inputs
from .pipeline import GradeInput, Grader
from .rubrics.import_seed import import_seed_file, report_lines
from .rubrics.schema import save_rubric
from .scoring import error_report
from .service.batch import grade_batch, stop_on_signals
from .service.import_fit import fit_to_folder
from .service.imports import import_nbgrader_folder, import_otter_folder, import_otter_master
from .service.selfcheck import SelfCheck, check_assignment
from .service.sizing import MAX_NOTEBOOKS, batch_size, check_batch_size
from .store.database import Store
from .types import GradeReport
from .views.agreement import cmd_agreement, parse_step

log = logging.getLogger("grader.cli")
LAYER_FIELDS = ("started_at", "finished_at", "prefill_tps", "decode_tps", "route",
                "prompt_tokens", "cached_tokens", "parallel_efficiency")


def summary(r: GradeReport, source: SubmissionFile | InputProblem | None = None) -> dict[str, Any]:
    """The per-notebook object of ``--json``; ``source``: the input it was made from."""
    notes = list(source.notes) if isinstance(source, SubmissionFile) else []
    return {
        "file": r.file,
        "archive": source.archive if source is not None else "",
        "entry": source.entry if source is not None else "",
        "student_id": r.student_id,
        "status": r.status,
        "score": r.score,
        "max_score": r.max_score,
        "needs_review": r.needs_review,
        "criteria": [
            {
                "id": c.id,
                "points": c.points,
                "max": c.max_points,
                "needs_review": c.needs_review,
                "checks": [
                    {
                        "check": ch.check,
                        "target": ch.target,
                        "score": ch.score,
                        "message": ch.message,
                        "status": ch.status,
                    }
                    for ch in c.checks
                ],
                "evidence": [
                    {"cell_id": e.cell_id, "line": e.line, "text": e.text} for e in c.evidence
                ],
            }
            for c in r.criteria
        ],
        "flags": [f.code for f in r.flags],
        "flag_details": [{"code": f.code, "message": f.message} for f in r.flags],
        "notes": notes + [n for lr in r.layers.values() for n in lr.notes],
        "layers": {
            name.lower(): {k: lr.details.get(k) for k in LAYER_FIELDS if k in lr.details}
            | ({"error": lr.error} if lr.error else {})
            for name, lr in r.layers.items()
            if name in ("L3", "L4")
        },
        "error": r.error,
    }


class _Bar:
    def __init__(self, total: int) -> None:
        self.total = total
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int, report: GradeReport) -> None:
        width = 30
        filled = int(width * done / max(1, total))
        score = "error" if report.status == "error" else f"{report.score:g}/{report.max_score:g}"
        line = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {report.file}: {score}"
        if self.tty:
            sys.stderr.write("\r\033[K" + line + ("\n" if done == total else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def cmd_grade(args: argparse.Namespace) -> int:
    assignment = load_assignment(Path(args.assignment))
    if not args.no_install:
        install_before_grading(assignment)
    options = GradeOptions(
        execute=not args.no_exec,
        use_llm=not args.no_llm,
        allow_unsandboxed=args.allow_unsandboxed,
        cell_timeout_s=args.cell_timeout,
        total_timeout_s=args.total_timeout,
        memory_mb=args.memory_mb,
        llm_samples=args.samples,
    )
    out_dir = Path(args.out) if args.out else None
    if out_dir is not None:  # before grading: a typo here must not cost a graded batch
        out_dir.mkdir(parents=True, exist_ok=True)
    inputs = [Path(p) for p in args.inputs]
    check_batch_size(batch_size(_readable(inputs), args.max_notebooks))
    client = None if args.no_llm else DisaggregatedClient(load_config())
    for line in client.judging_warnings() if client is not None else ():
        print(f"warning: {line}", file=sys.stderr)
    grader = Grader(assignment, options, client=client)
    files, problems = expand_inputs(inputs)
    items = [GradeInput.from_submission(f) for f in files]
    store = Store(Path(args.db)) if args.db else None
    try:
        with stop_on_signals():
            if not args.no_check:
                _print_check(check_assignment(assignment, options, grader.context))
            result = grade_batch(
                grader, items, store, args.workers, _Bar(len(items)), regrade=args.regrade
            )
    except GradingStopped as stop:
        return _stopped(stop, items, args)
    finally:
        if store is not None:
            store.close()
        if client is not None:
            client.close()
    reports = [
        error_report(assignment.rubric, p.file, assignment.name, p.reason) for p in problems
    ] + result.reports
    sources: list[SubmissionFile | InputProblem] = [*problems, *files]
    for p in problems:
        log.warning("not graded: %s: %s", p.file, p.reason)
    export_error: OSError | FontError | None = None
    if out_dir is not None:
        try:  # the notebooks let each letter name cells by position and heading
            written = write_exports(reports, out_dir, assignment.title, assignment.rubric,
                                    {i.sha256: i.data for i in items})
            log.info("wrote %d files to %s", len(written), out_dir)
        except (OSError, FontError) as exc:  # the grades are still printed below
            export_error = exc
    if args.json:
        rows = [summary(r, s) for r, s in zip(reports, sources, strict=True)]
        print(json.dumps(rows, indent=2))
    else:
        for r in reports:
            shown = r.error if r.status == "error" else f"{r.score:g}/{r.max_score:g}"
            review = f"  review: {', '.join(r.needs_review)}" if r.needs_review else ""
            flags = f"  flags: {', '.join(sorted({f.code for f in r.flags}))}" if r.flags else ""
            print(f"{r.file}: {shown}{review}{flags}")
    if export_error is not None:
        log.error("cannot write the exports: %s", export_error if isinstance(
            export_error, FontError) else _os_error(export_error, out_dir))
        return 2
    return 0 if all(r.status == "graded" for r in reports) else 1


def _readable(paths: list[Path]) -> list[tuple[str, bytes]]:
    """(path, bytes) of the inputs that can be read (the others are named when expanded)."""
    out = []
    for path in paths:
        try:
            out.append((str(path), path.read_bytes()))
        except OSError:
            continue
    return out


def _stopped(stop: GradingStopped, items: list[GradeInput], args: argparse.Namespace) -> int:
    """What a stopped batch graded (and saved) and what it did not, on stdout."""
    graded = {(r.file, r.sha256) for r in stop.reports}
    left = [i.name for i in items if (i.name, i.sha256) not in graded]
    saved = f" and saved in {args.db}" if args.db else ""
    if args.json:
        print(json.dumps([summary(r) for r in stop.reports] + [
            {"file": name, "status": "not graded", "error": f"grading was stopped ({stop.why})"}
            for name in left], indent=2))
    else:
        for r in stop.reports:
            shown = r.error if r.status == "error" else f"{r.score:g}/{r.max_score:g}"
            print(f"{r.file}: {shown}")
        for name in left:
            print(f"{name}: not graded (grading was stopped: {stop.why})")
        print(f"grading was stopped ({stop.why}): {len(stop.reports)} of {len(items)} "
              f"notebooks graded{saved}, {len(left)} not graded"
              + (f"; grade the same files with --db {args.db} to grade the rest" if args.db
                 and left else ""))
    sys.stdout.flush()
    number = getattr(signal.Signals, stop.why, None)
    return 128 + number.value if number is not None else 1


def _os_error(exc: OSError, fallback: Path | str | None = None) -> str:
    """An OSError as 'PATH: reason', naming the path it was about."""
    path = exc.filename if exc.filename is not None else fallback
    reason = exc.strerror or str(exc)
    return f"{os.fsdecode(path)}: {reason}" if path is not None else reason


def _print_check(check: SelfCheck) -> None:
    """The assignment's self-check on stderr: one line when sound, every problem if not."""
    lines = check.lines()
    sys.stderr.write("".join(f"assignment check: {line}\n" for line in lines))
    sys.stderr.flush()


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
    g = sub.add_parser("grade", help="grade notebooks or ZIPs against an assignment folder")
    g.add_argument("assignment", help="folder with assignment.toml (docs/rubric-format.md)")
    g.add_argument("inputs", nargs="+", help=".ipynb files and/or .zip archives")
    g.add_argument("--no-llm", action="store_true", help="deterministic layers only")
    g.add_argument(
        "--no-exec", action="store_true", help="do not execute notebooks; grade from stored outputs"
    )
    g.add_argument("--json", action="store_true", help="print one JSON list on stdout")
    g.add_argument("--out", help="write CSV/JSON exports and feedback files here")
    g.add_argument("--workers", type=int, default=(os.cpu_count() or 1) + 1,
                   help="notebooks graded at once (default: cores + 1)")
    g.add_argument("--db", help="SQLite store: reuse unchanged grades, record the batch")
    g.add_argument("--regrade", action="store_true", help="regrade even unchanged content")
    g.add_argument("--samples", type=int, default=1,
                   help="sample each model k times; unstable criteria go to review")
    g.add_argument("--cell-timeout", type=int, default=60, help="seconds per cell (60)")
    g.add_argument("--total-timeout", type=int, default=600, help="seconds per notebook (600)")
    g.add_argument("--memory-mb", type=int, default=2048,
                   help="memory cap per process of a run, and (plus 512 for the runner) of "
                        "all its processes together where a cgroup can be made (2048)")
    g.add_argument("--max-notebooks", type=int, default=MAX_NOTEBOOKS,
                   help=f"grade at most this many notebooks in one batch ({MAX_NOTEBOOKS})")
    g.add_argument(
        "--allow-unsandboxed",
        action="store_true",
        help="run student code without bubblewrap if it is missing (unsafe)",
    )
    g.add_argument("--no-check", action="store_true",
                   help="skip grading the assignment's own solution and template first")
    g.add_argument("--no-install", action="store_true",
                   help="do not install the packages the assignment declares first")
    g.set_defaults(func=cmd_grade)
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
        print(f"error: {_os_error(exc)}", file=sys.stderr)
        return 2
    except RubricError as exc:
        print(f"error: {exc.file}:", file=sys.stderr)
        for p in exc.problems:
            print(f"  - {p}", file=sys.stderr)
        return 2
    except GraderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
