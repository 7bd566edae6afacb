"""The Dashboard's grading numbers, over a real grade store in a temporary folder.

Grades are real ``GradeReport``s saved through ``Store.save_grade`` with their batch
items; the batches are then placed in time by setting their timestamps in the SQLite
file, so that the rates are exact. Names are invented.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader.events import GradeEvent
from grader.layers.base import GradeOptions
from grader.service.jobs import GradeJob, job_rows, running_jobs
from grader.service.workspace import Workspace
from grader.store.database import Store
from grader.types import GradeReport, LayerResult
from grader.views import grading as gs

T0 = 1_700_000_000.0


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "grader.db")
    yield s
    s.close()


@dataclass
class Hw:
    store: Store
    assignment: int
    rubric: int


@pytest.fixture
def hw(store: Store) -> Hw:
    a = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
    return Hw(store, a, store.add_rubric_version(a, "v1", "{}"))


def report(file: str, sha: str, l2: float = 2.0, error: str = "",
           llm_s: float | None = None) -> GradeReport:
    """A graded report with L1 and L2 seconds (and the model layers' engine seconds), or,
    with ``error``, one that could not be graded."""
    if error:
        return GradeReport(file=file, sha256=sha, assignment="hw1", rubric_version="v1",
                           status="error", score=None, max_score=5.0, error=error)
    layers = {"L1": LayerResult("L1", seconds=0.05), "L2": LayerResult("L2", seconds=l2)}
    if llm_s is not None:  # as LLMLayers leaves them: seconds 0, the engine's total_s
        layers["L3"] = LayerResult("L3", details={"total_s": llm_s})
    return GradeReport(file=file, sha256=sha, assignment="hw1", rubric_version="v1",
                       status="graded", score=4.0, max_score=5.0, layers=layers)


def batch(hw: Hw, files: list[str], graded: int, start: float, every: float = 60.0,
          fail: dict[str, str] | None = None) -> int:
    """A batch of ``files`` started at ``start``, the first ``graded`` saved as grades one
    every ``every`` seconds; ``fail`` marks items failed before grading (file -> why)."""
    s = hw.store
    items = [(f, hashlib.sha256(f.encode()).hexdigest(), f.split(".")[0], "") for f in files]
    bid = s.start_batch(hw.assignment, hw.rubric, items)
    pending = s.pending_items(bid)
    for i, item in enumerate(pending[:graded]):
        sub = s.add_submission(hw.assignment, item.sha256, item.file, item.student_id)
        s.save_grade(sub, hw.rubric, report(item.file, item.sha256, l2=1.0 + i),
                     batch_item_id=item.id)
    for item in pending:
        if item.file in (fail or {}):
            s.mark_item(item.id, "error", error=(fail or {})[item.file])
    with sqlite3.connect(s.path) as c:  # place the batch in time
        c.execute("UPDATE batches SET created_at = ? WHERE id = ?", (start, bid))
        for i, item in enumerate(pending):
            at = start + every * (i + 1) if i < graded else start
            c.execute("UPDATE batch_items SET updated_at = ? WHERE id = ?", (at, item.id))
            c.execute("UPDATE grades SET created_at = ? WHERE id = (SELECT grade_id FROM "
                      "batch_items WHERE id = ?)", (at, item.id))
    return bid


def test_busy_seconds_is_the_union_of_the_intervals_clipped():
    assert gs.busy_seconds([(0, 10), (5, 15), (20, 30)]) == 25
    assert gs.busy_seconds([(0, 10), (5, 15), (20, 30)], since=8, until=25) == 12
    assert gs.busy_seconds([(0, 100), (10, 20)]) == 100  # one inside the other
    assert gs.busy_seconds([(0, 10)], since=20, until=30) == 0
    assert gs.busy_seconds([]) == 0


def test_an_empty_store_says_nothing_was_graded(store: Store):
    view = gs.grading_view(store, now=T0)
    assert view.empty
    assert view.grades == 0
    assert view.recent.per_minute is None
    assert view.overall.per_minute is None
    assert not view.layers
    assert not view.failed
    assert not view.running
    values = [c.value for c in gs.metric_cards(view)]
    assert values == ["none graded", "no batches yet", "no runs yet", "no runs yet"]


def test_rates_leave_out_the_idle_time_between_batches(hw: Hw):
    # 4 notebooks in 4 minutes; an hour later 3 notebooks in 1 minute (20 s apart).
    old = batch(hw, [f"student{i:03d}.ipynb" for i in range(4)], 4, T0)
    new = batch(hw, [f"student{i:03d}.ipynb" for i in range(10, 13)], 3, T0 + 3600, every=20)
    view = gs.grading_view(hw.store, now=T0 + 3600 + 300)
    assert [b.id for b in view.batches] == [new, old]  # newest first
    rates = {b.id: b.rate for b in view.batches}
    assert rates[old].per_minute == pytest.approx(1.0)  # 4 in 240 s
    assert rates[new].per_minute == pytest.approx(3.0)  # 3 in 60 s
    assert all(b.status == "done" for b in view.batches)
    # Both batches: 7 notebooks in 300 s of grading, not in the 3660 s from first to last.
    assert view.overall.notebooks == 7
    assert view.overall.seconds == pytest.approx(300)
    assert view.overall.per_minute == pytest.approx(1.4)
    # The last ten minutes hold only the new batch: 3 notebooks over its 60 s.
    assert view.recent.notebooks == 3
    assert view.recent.per_minute == pytest.approx(3.0)
    rows = gs.batch_rows(view.batches)
    assert rows[1]["notebooks / min"] == 1.0
    assert rows[1]["wall (s)"] == 240.0
    assert (rows[0]["done"], rows[0]["total"]) == (3, 3)


def test_a_window_without_grades_has_no_rate_and_batches_side_by_side_count_once(hw: Hw):
    batch(hw, ["a.ipynb", "b.ipynb"], 2, T0)
    batch(hw, ["c.ipynb", "d.ipynb"], 2, T0 + 30)  # overlaps the first
    view = gs.grading_view(hw.store, now=T0 + 7200)
    assert view.recent.notebooks == 0
    assert view.recent.per_minute is None
    assert gs.metric_cards(view)[0].value == "none graded"
    assert view.overall.seconds == pytest.approx(150)  # T0 .. T0 + 150, once
    assert view.overall.per_minute == pytest.approx(4 * 60 / 150)
    assert gs.metric_cards(view)[1].value == "1.60"


def test_running_and_interrupted_batches_are_the_queue(hw: Hw):
    now = time.time()
    running = batch(hw, ["s1.ipynb", "s2.ipynb", "s3.ipynb", "s4.ipynb"], 1, now - 60,
                    every=30, fail={"s2.ipynb": "content not kept; upload again"})
    stopped = batch(hw, ["s5.ipynb", "s6.ipynb"], 1, now - 600)
    assert hw.store.interrupt_batch(stopped, "RuntimeError: the machine went to sleep")
    view = gs.grading_view(hw.store, now=now)
    assert [b.id for b in view.running] == [running]
    b = view.running[0]
    assert (b.status, b.total, b.done, b.failed, b.pending) == ("running", 4, 1, 1, 2)
    assert b.grader == "this process"
    assert b.rate.seconds == pytest.approx(60)  # to now: it runs
    assert view.interrupted == 1
    (row,) = gs.queue_rows(view.running)
    assert (row["pending"], row["done"], row["total"]) == (2, 1, 4)
    assert row["started"].endswith(time.strftime("%H:%M:%S", time.localtime(now - 60)))
    # the interrupted batch's wall time ends at its last grade, not now
    (gone,) = [x for x in view.batches if x.id == stopped]
    assert gone.status == "interrupted"
    assert gone.rate.seconds == pytest.approx(60)


def test_layer_seconds_median_and_p90_over_the_newest_grades(hw: Hw):
    s = hw.store
    for i in range(12):  # L2: 1 .. 12 s; the newest ten are 3 .. 12 s
        sha = f"{i:064x}"
        sub = s.add_submission(hw.assignment, sha, f"n{i}.ipynb", f"n{i}")
        s.save_grade(sub, hw.rubric, report(f"n{i}.ipynb", sha, l2=1.0 + i,
                                            llm_s=4.0 if i % 2 else None))
    sub = s.add_submission(hw.assignment, "e" * 64, "broken.ipynb", "broken")
    s.save_grade(sub, hw.rubric, report("broken.ipynb", "e" * 64, error="not a notebook"))
    view = gs.grading_view(s, now=T0, grades=10)
    sandbox = view.layer("L2")
    assert sandbox is not None
    assert sandbox.notebooks == 10
    assert sandbox.median == pytest.approx(7.5)
    assert sandbox.p90 == pytest.approx(11.1)
    assert sandbox.max == 12.0
    assert [x.layer for x in view.layers] == ["L1", "L2", "L3"]  # no grade ran L4
    assert view.layer("L3").median == 4.0  # type: ignore[union-attr]
    assert view.layer("L3").notebooks == 5  # type: ignore[union-attr]
    cards = {c.label: c.value for c in gs.metric_cards(view)}
    assert cards["Sandbox s, median"] == "7.5 s"
    assert cards["Sandbox s, p90"] == "11.1 s"
    rows = gs.layer_rows(view.layers)
    assert rows[1]["layer"] == "Run in the sandbox (L2)"
    assert rows[1]["p90 (s)"] == 11.1
    assert view.grades == 13
    assert not view.empty


def test_failed_files_name_the_file_and_the_reason_and_hide_names(hw: Hw):
    s = hw.store
    sub = s.add_submission(hw.assignment, "e" * 64, "doejane_1234.ipynb", "1234", "Jane Doe")
    s.save_grade(sub, hw.rubric, report("doejane_1234.ipynb", "e" * 64,
                                        error="doejane_1234.ipynb: not valid JSON"))
    bid = batch(hw, ["roesmith_5678.ipynb"], 0, time.time() + 10,
                fail={"roesmith_5678.ipynb": "content not kept; upload again"})
    view = gs.grading_view(s)
    assert [(f.file, f.reason) for f in view.failed] == [
        ("roesmith_5678.ipynb", "content not kept; upload again"),  # newest first
        ("doejane_1234.ipynb", "doejane_1234.ipynb: not valid JSON")]
    rows = gs.failed_rows(view.failed)
    assert rows[0]["recorded as"] == f"batch {bid}"
    assert rows[1]["recorded as"].startswith("grade ")
    hidden = gs.grading_view(s, anonymous=True)
    text = repr(gs.failed_rows(hidden.failed))
    for name in ("doejane", "roesmith", "Jane"):
        assert name not in text
    assert [f.file for f in hidden.failed][1] == "student_001.ipynb"
    assert hidden.failed[1].reason == "student_001.ipynb: not valid JSON"
    assert hidden.failed[0].file.startswith("item_")  # no submission: numbered


def test_job_rows_show_the_jobs_running_in_this_process(tmp_path: Path, store: Store):
    ws = Workspace(store, tmp_path / "assignments")
    release = threading.Event()

    def collect():  # holds the job in its first step until the test lets it go
        release.wait(30)
        return [], []

    job = GradeJob(ws, "hw1", collect, GradeOptions(use_llm=False), None, key="t").start()
    try:
        job.board.set_total(3)
        job.board.apply(GradeEvent("a.ipynb", "start"))
        job.board.apply(GradeEvent("b.ipynb", "start"))
        job.board.apply(GradeEvent("b.ipynb", "done", report=report("b.ipynb", "b" * 64)))
        (row,) = job_rows(running_jobs(ws))
        assert (row["job"], row["assignment"], row["notebooks"], row["done"],
                row["grading now"]) == ("grade", "hw1", 3, 1, 1)
        assert "a.ipynb" not in repr(row)  # counts only, no file names
    finally:
        release.set()
        deadline = time.monotonic() + 30
        while not job.finished and time.monotonic() < deadline:
            time.sleep(0.02)
    assert job.finished
    assert job_rows(running_jobs(ws)) == []


def test_a_hidden_name_leaves_no_part_of_its_path_in_the_reason(hw: Hw):
    s = hw.store
    file = "canvas/roesmith_5678.ipynb"
    sub = s.add_submission(hw.assignment, "f" * 64, file, "5678")
    s.save_grade(sub, hw.rubric, report(file, "f" * 64,
                                        error=f"{file}: too large; roesmith_5678.ipynb "
                                              "has 90000 cells"))
    (failed,) = gs.grading_view(s, anonymous=True).failed
    assert failed.file == "student_001.ipynb"
    assert failed.reason == "student_001.ipynb: too large; student_001.ipynb has 90000 cells"
