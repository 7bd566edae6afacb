"""``python -m grader grade``: a class graded from the shell, however large.

    python -m grader grade ASSIGNMENT_DIR NOTEBOOK_OR_ZIP... [--no-llm] [--json]
                           [--out DIR] [--workers N] [--db PATH] [--no-exec] [--regrade]
                           [--chunk N] [--no-wait]

Grades first, models after: each grade is made and printed (stderr) as its notebook's
run ends; the model parts (layers 3 and 4) run after, from a queue of their own
(``grader.service.model_queue``), and the command waits for them before it prints and
exports the grades, unless ``--no-wait``: then the grades are printed and exported at
once, their model parts left queued in ``--db`` for the app (or the next ``grade`` with
that store) to complete; without ``--db`` they are not made, and the command says so.

The uploads are read one notebook at a time (``grader.notebooks.stream``: a ZIP is read
from disk, never whole), each notebook kept in the store (``--db``) as it is read, and the
class is graded as one batch in chunks (``grader.service.chunks``): at most a chunk's
notebooks are in memory at once, ``--chunk`` notebooks at most, fewer where their bytes
pass the budget drawn from the memory available (``grader.service.sizing``). The progress
bar counts the whole class ("812/2087"), the exports cover every student.

SIGTERM (or SIGHUP) in the middle stops the batch: the sandboxes are killed, their run
folders and cgroups removed, the grades made so far printed (and, with --db, saved) with
the notebooks not graded named, and the exit status is 128 + the signal's number.
Grading the same files again with the same --db continues that batch (and a batch whose
grader was killed outright): only the rest is graded, and the output and the exports
cover the whole class. See grader/cli.py for the output and the exit statuses.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from inference import DisaggregatedClient, load_config

from .assignment import load_assignment
from .cli_packages import install_before_grading
from .errors import GraderError, GradingStopped
from .exports.formats import write_exports
from .layers.base import GradeOptions
from .letters.pdf import FontError
from .notebooks.archive import InputProblem, SubmissionFile
from .notebooks.stream import NotebookRef, read_class
from .pipeline import Grader
from .points import points_text
from .scoring import error_report
from .service.batch import BatchResult, grade_class, stop_on_signals, stored_bytes
from .service.model_queue import ModelProgressView, ModelQueue
from .service.selfcheck import SelfCheck, check_assignment
from .store.database import GradeRow, Store
from .types import GradeReport

__all__ = ["add_grade_command", "cmd_grade", "os_error", "summary"]

log = logging.getLogger("grader.cli")
LAYER_FIELDS = ("started_at", "finished_at", "prefill_tps", "decode_tps", "route",
                "prompt_tokens", "cached_tokens", "parallel_efficiency", "pending", "not_run")
Source = SubmissionFile | NotebookRef | InputProblem


def add_grade_command(sub: argparse._SubParsersAction) -> None:
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
    g.add_argument("--chunk", type=_positive, default=None, metavar="N",
                   help="at most N notebooks in memory at once (default: as many as the "
                        "memory available holds, see grader/service/sizing.py)")
    g.add_argument(
        "--allow-unsandboxed",
        action="store_true",
        help="run student code without bubblewrap if it is missing (unsafe)",
    )
    g.add_argument("--no-wait", action="store_true",
                   help="print and export the grades without waiting for the models' notes "
                        "(kept queued in --db for the app to complete)")
    g.add_argument("--no-check", action="store_true",
                   help="skip grading the assignment's own solution and template first")
    g.add_argument("--no-install", action="store_true",
                   help="do not install the packages the assignment declares first")
    g.set_defaults(func=cmd_grade)


def _positive(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text}: give a number of notebooks, 1 or more")
    return n


def cmd_grade(args: argparse.Namespace) -> int:
    assignment = load_assignment(Path(args.assignment))
    if not args.no_install:
        install_before_grading(assignment)
    options = GradeOptions(
        execute=not args.no_exec, use_llm=not args.no_llm,
        allow_unsandboxed=args.allow_unsandboxed, cell_timeout_s=args.cell_timeout,
        total_timeout_s=args.total_timeout, memory_mb=args.memory_mb,
        llm_samples=args.samples,
    )
    out_dir = Path(args.out) if args.out else None
    if out_dir is not None:  # before grading: a typo here must not cost a graded batch
        out_dir.mkdir(parents=True, exist_ok=True)
    client = None if args.no_llm else DisaggregatedClient(load_config())
    for line in client.judging_warnings() if client is not None else ():
        sys.stderr.write(f"warning: {line}\n")
    grader = Grader(assignment, options, client=client)
    store = Store(Path(args.db)) if args.db else None
    made: dict[object, GradeReport] = {}  # without a store: the grades with model parts
    queue = ModelQueue(store, 0 if args.no_wait else 2,  # --no-wait: recorded, not run
                       on_done=lambda work, full: made.__setitem__(work.key, full)
                       ) if grader.llm is not None else None
    try:
        uploads = [(p, Path(p)) for p in args.inputs]
        with read_class(uploads, store.save_file if store is not None else None) as cls:
            try:
                with stop_on_signals():
                    if not args.no_check:
                        _print_check(check_assignment(assignment, options, grader.context))
                    result = grade_class(grader, cls, store, args.workers, _Bar(),
                                         regrade=args.regrade, most=args.chunk, models=queue)
                    if queue is not None:
                        if store is not None and not args.no_wait:  # left by a run before
                            queue.resume(_same_assignment(store, grader))
                        result = _models(queue, result, store, made, args)
            except GradingStopped as stop:
                return _stopped(stop, cls.refs, args)
            problems, refs = cls.problems, cls.refs
            reports = [error_report(assignment.rubric, p.file, assignment.name, p.reason)
                       for p in problems] + result.reports
            for p in problems:
                log.warning("not graded: %s: %s", p.file, p.reason)
            export_error: OSError | FontError | None = None
            if out_dir is not None:
                try:  # the notebooks let each letter name cells by position and heading
                    notebooks = _Notebooks(refs, cls.read if store is None
                                           else stored_bytes(store))
                    written = write_exports(reports, out_dir, assignment.title,
                                            assignment.rubric, notebooks)
                    log.info("wrote %d files to %s", len(written), out_dir)
                except (OSError, FontError) as exc:  # the grades are still printed below
                    export_error = exc
    finally:
        if queue is not None:
            queue.stop()
        if store is not None:
            store.close()
        if client is not None:
            client.close()
    _print_reports(reports, [*problems, *refs], args.json)
    if export_error is not None:
        log.error("cannot write the exports: %s", export_error if isinstance(
            export_error, FontError) else os_error(export_error, out_dir))
        return 2
    return 0 if all(r.status == "graded" for r in reports) else 1


def _models(queue: ModelQueue, result: BatchResult, store: Store | None,
            made: dict[object, GradeReport], args: argparse.Namespace) -> BatchResult:
    """Wait for the batch's model parts (unless ``--no-wait``), showing their progress on
    stderr; the batch's grades with them."""
    left = queue.progress(result.batch)
    if not left.total:
        queue.wait()  # those an earlier run left, if any
        return result
    if args.no_wait:
        where = (f"they stay queued in {args.db}: the app completes them when it starts"
                 if store is not None else "without --db nothing keeps their queue: they are "
                 "not made (grade again without --no-wait, or with --db)")
        sys.stderr.write(f"{len(result.reports)} notebooks graded; the models' notes of "
                         f"{left.total} are not waited for: {where}\n")
        return result

    def tick(p: ModelProgressView) -> None:
        sys.stderr.write(f"{len(result.reports)} of {len(result.reports)} graded · "
                         f"{p.words()}\n")
        sys.stderr.flush()

    queue.wait(result.batch, tick=tick)
    queue.wait()  # and those of this assignment that an earlier run left queued
    if store is not None:
        reports = [store.get_report(g, overrides=False) for g in result.grade_ids]
    else:
        reports = [made.get(i, r) for i, r in enumerate(result.reports)]
    return dataclasses.replace(result, reports=reports)


def _same_assignment(store: Store, grader: Grader) -> Callable[[GradeRow], Grader | None]:
    """The grader of the queued model parts it can make: its assignment's, its version's."""
    a = grader.assignment

    def grader_for(row: GradeRow) -> Grader | None:
        same = store.assignment_name(row.assignment_id) == a.name
        return grader if same and row.rubric_version == a.rubric.version else None
    return grader_for


class _Notebooks(Mapping[str, bytes]):
    """The class's notebooks by content hash, each read when a letter asks for it (none
    is held); one that cannot be read gives its letter no cell positions."""

    def __init__(self, refs: Sequence[NotebookRef], read: Callable[[NotebookRef], bytes]
                 ) -> None:
        self._refs = {r.sha256: r for r in refs}
        self._read = read

    def __getitem__(self, sha256: str) -> bytes:
        ref = self._refs[sha256]
        try:
            return self._read(ref)
        except GraderError as exc:
            log.warning("%s: its letter names cells without their notebook: %s", ref.name, exc)
            raise KeyError(sha256) from exc

    def __iter__(self) -> Iterator[str]:
        return iter(self._refs)

    def __len__(self) -> int:
        return len(self._refs)


def summary(r: GradeReport, source: Source | None = None) -> dict[str, Any]:
    """The per-notebook object of ``--json``; ``source``: the input it was made from."""
    notes = list(source.notes) if isinstance(source, SubmissionFile | NotebookRef) else []
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


def _print_reports(reports: Sequence[GradeReport], sources: Sequence[Source],
                   as_json: bool) -> None:
    if as_json:
        rows = [summary(r, s) for r, s in zip(reports, sources, strict=True)]
        _out(json.dumps(rows, indent=2))
        return
    for r in reports:
        shown = r.error if r.status == "error" else points_text(r.score, r.max_score)
        review = f"  review: {', '.join(r.needs_review)}" if r.needs_review else ""
        flags = f"  flags: {', '.join(sorted({f.code for f in r.flags}))}" if r.flags else ""
        _out(f"{r.file}: {shown}{review}{flags}")


class _Bar:
    """The progress bar on stderr: the whole class, notebooks graded before included."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int, report: GradeReport) -> None:
        width = 30
        filled = int(width * done / max(1, total))
        score = "error" if report.status == "error" else points_text(report.score, report.max_score)
        line = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {report.file}: {score}"
        if self.tty:
            sys.stderr.write("\r\033[K" + line + ("\n" if done == total else ""))
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _stopped(stop: GradingStopped, refs: Sequence[NotebookRef], args: argparse.Namespace
             ) -> int:
    """What a stopped batch graded (and saved) and what it did not, on stdout."""
    graded = {(r.file, r.sha256) for r in stop.reports}
    left = [r.name for r in refs if (r.name, r.sha256) not in graded]
    saved = f" and saved in {args.db}" if args.db else ""
    if args.json:
        _out(json.dumps([summary(r) for r in stop.reports] + [
            {"file": name, "status": "not graded", "error": f"grading was stopped ({stop.why})"}
            for name in left], indent=2))
    else:
        for r in stop.reports:
            shown = r.error if r.status == "error" else points_text(r.score, r.max_score)
            _out(f"{r.file}: {shown}")
        for name in left:
            _out(f"{name}: not graded (grading was stopped: {stop.why})")
        _out(f"grading was stopped ({stop.why}): {len(stop.reports)} of {len(refs)} "
              f"notebooks graded{saved}, {len(left)} not graded"
              + (f"; grade the same files with --db {args.db} to grade the rest" if args.db
                 and left else ""))
    sys.stdout.flush()
    number = getattr(signal.Signals, stop.why, None)
    return 128 + number.value if number is not None else 1


def _out(text: str) -> None:
    """One line (or a JSON document) of the command's output on stdout."""
    sys.stdout.write(text + "\n")


def os_error(exc: OSError, fallback: Path | str | None = None) -> str:
    """An OSError as 'PATH: reason', naming the path it was about."""
    path = exc.filename if exc.filename is not None else fallback
    reason = exc.strerror or str(exc)
    return f"{os.fsdecode(path)}: {reason}" if path is not None else reason


def _print_check(check: SelfCheck) -> None:
    """The assignment's self-check on stderr: one line when sound, every problem if not."""
    lines = check.lines()
    sys.stderr.write("".join(f"assignment check: {line}\n" for line in lines))
    sys.stderr.flush()
