"""Every bundled submission's grade and letter, as a snapshot the behaviour test compares.

    .venv/bin/python -m tests.golden_reports            # write tests/golden/ again
    .venv/bin/python -m tests.golden_reports --check    # compare, print what differs

The snapshot is what a change to the grader's internals must keep (issue 34, "behaviour
stays"): per bundled assignment, each sample submission and the solution graded with our
run and without the models, as the JSON's scores, points, statuses, targets, messages,
evidence and flags (timings, dates and the run's own paths left out) and the student's
letter in Markdown. A change that means to improve a sentence updates the snapshot in the
same commit, so the diff shows every sentence it changed.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import sys
from pathlib import Path
from typing import Any

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.letters.build import letter_for
from grader.letters.render import letter_markdown
from grader.pipeline import GradeInput, Grader
from grader.store.serialize import report_to_dict
from grader.types import GradeReport

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).resolve().parent / "golden"
NAMES = ("retail-sales", "py-functions", "py-levels", "r-joins", "r-strings-dates",
         "r-sleep-survey")
VOLATILE = {"created_at", "seconds", "elapsed_s", "wall_s", "started_at", "ended_at"}
# What a run writes that is not the notebook's: sandbox folders, memory addresses, timings.
NOISE = [(re.compile(r"/tmp/[\w./-]+"), "/tmp/…"),
         (re.compile(r"0x[0-9a-f]{6,}"), "0x…"),
         (re.compile(r"\buid \d+"), "uid N"),
         (re.compile(r"\b\d+(?:\.\d+)? ?(?:s|ms|seconds)\b(?= |\)|,|$)"), "T")]


def _steady(value: Any) -> Any:
    """``value`` with timings and a run's own paths left out."""
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    if isinstance(value, str):
        for pattern, said in NOISE:
            value = pattern.sub(said, value)
        return value
    if isinstance(value, float):
        return round(value, 6)
    return value


def snapshot(report: GradeReport) -> dict[str, Any]:
    """The parts of a report the snapshot keeps: no layer details (model and run
    bookkeeping), everything a score and a letter rest on."""
    data = report_to_dict(report)
    keep = {k: data[k] for k in ("file", "status", "score", "max_score", "criteria", "flags",
                                 "error")}
    keep["checks"] = {name: layer["checks"] for name, layer in sorted(data["layers"].items())}
    keep["notes"] = {name: layer["notes"] for name, layer in sorted(data["layers"].items())
                     if layer["notes"]}
    return _steady(keep)


def grade_example(name: str) -> dict[str, tuple[str, str]]:
    """``{submission stem: (JSON text, letter Markdown)}`` for one bundled assignment."""
    assignment = load_assignment(EXAMPLES / name)
    assert assignment.submissions is not None
    grader = Grader(assignment, GradeOptions(execute=True, use_llm=False))
    paths = [*sorted(assignment.submissions.glob("*.ipynb")), assignment.solution]
    reports = grader.grade_many([GradeInput.from_path(p) for p in paths], workers=2)
    out = {}
    for path, report in zip(paths, reports, strict=True):
        text = json.dumps(snapshot(report), indent=1, sort_keys=True, ensure_ascii=False)
        letter = letter_markdown(letter_for(report, assignment.rubric, path.read_bytes()))
        out[path.stem] = (text + "\n", _steady(letter))
    return out


def paths_of(name: str, stem: str) -> tuple[Path, Path]:
    return GOLDEN / name / f"{stem}.json", GOLDEN / name / f"{stem}.md"


def differences(name: str, graded: dict[str, tuple[str, str]]) -> list[str]:
    """Unified diffs of what changed from the snapshot (empty: the same)."""
    out = []
    kept = {p.stem for p in (GOLDEN / name).glob("*.json")}
    for stem in sorted(kept - set(graded)):
        out.append(f"{name}/{stem}: in the snapshot, not graded now")
    for stem, texts in sorted(graded.items()):
        for path, now in zip(paths_of(name, stem), texts, strict=True):
            if not path.exists():
                out.append(f"{name}/{path.name}: not in the snapshot")
                continue
            was = path.read_text(encoding="utf-8")
            if was != now:
                out.append("".join(difflib.unified_diff(
                    was.splitlines(True), now.splitlines(True),
                    f"snapshot/{name}/{path.name}", f"now/{name}/{path.name}", n=1)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare; write nothing")
    ap.add_argument("names", nargs="*", default=list(NAMES))
    args = ap.parse_args(argv)
    changed = 0
    for name in args.names:
        graded = grade_example(name)
        if args.check:
            diffs = differences(name, graded)
            changed += len(diffs)
            for d in diffs:
                sys.stdout.write(d + "\n")
            continue
        (GOLDEN / name).mkdir(parents=True, exist_ok=True)
        for old in (GOLDEN / name).glob("*"):
            old.unlink()
        for stem, texts in graded.items():
            for path, text in zip(paths_of(name, stem), texts, strict=True):
                path.write_text(text, encoding="utf-8")
        sys.stdout.write(f"{name}: {len(graded)} notebooks written to {GOLDEN / name}\n")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
