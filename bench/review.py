"""Benchmark of the Review page with a class's grades: one redraw against a one-second budget.

    .venv/bin/python -m bench.review --quick --json

Grades one bundled submission for real, stores it for ``--students`` synthetic
students (student000, ...) of retail-sales, then reruns the Review page in
Streamlit's AppTest: every interaction with a widget there redraws the page, so
its rerun time is what an instructor waits for at each click. Prints, as the last
line of stdout, one JSON object:

- ``review_rerun_seconds``: median rerun with names shown; ``budget_ratio`` is it
  over 1 s (target well under 1);
- ``review_anonymous_rerun_seconds``: the same with names hidden;
- ``students``: the grades listed (checked against the table the page drew).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from grader.rubrics.schema import dumps
from grader.service.batch import grade_batch
from grader.service.workspace import Workspace
from grader.store.database import Store

from .report import emit, parser

log = logging.getLogger("bench.review")
ROOT = Path(__file__).resolve().parents[1]


def fill_store(data: Path, students: int) -> None:
    with Store(data / "grader.db") as store:
        ws = Workspace(store, data / "assignments")
        a = ws.load("retail-sales")
        item = GradeInput.from_path(ROOT / "examples/retail-sales/submissions/partial.ipynb")
        report = grade_batch(Grader(a, GradeOptions()), [item], store).reports[0]
        aid = ws.assignment_id(a.name)
        rv = store.add_rubric_version(aid, a.rubric.version, dumps(a.rubric))
        for i in range(students - 1):
            sid = f"student{i:03d}"
            sub = store.add_submission(aid, item.sha256, f"{sid}.ipynb", sid, sid)
            store.save_grade(sub, rv, dataclasses.replace(
                report, file=f"{sid}.ipynb", student_id=sid, display_name=sid))


def timed_reruns(at, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t0)
        if at.exception:
            raise RuntimeError(f"the page failed: {at.exception}")
    return times


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "5 repetitions instead of 15")
    ap.add_argument("--students", type=int, default=300)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="[bench] %(message)s")
    repeat = 5 if args.quick else 15
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        os.environ["GRADER_DATA_DIR"] = str(data)
        os.environ.pop("GRADER_CONFIG", None)
        log.info("grading one notebook and storing it for %d students...", args.students)
        fill_store(data, args.students)
        import streamlit as st

        from .apptest import open_page

        at = open_page("review")  # once the models, loading in the background, are ready
        shown = timed_reruns(at, repeat)
        listed = len(at.dataframe[0].value)
        at.toggle(key="_anonymise_switch").set_value(True).run()
        hidden = timed_reruns(at, repeat)
        st.cache_resource.clear()
    out = {"students": listed, "review_rerun_seconds": statistics.median(shown),
           "review_rerun_max_seconds": max(shown),
           "review_anonymous_rerun_seconds": statistics.median(hidden)}
    out["budget_ratio"] = out["review_rerun_seconds"] / 1.0
    if listed != args.students:
        raise RuntimeError(f"the page listed {listed} grades, not {args.students}")
    emit(out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
