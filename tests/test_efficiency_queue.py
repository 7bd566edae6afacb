"""Parallel efficiency per graded notebook counts the requests' own service time: the
seconds a request waited in a queue (for the engine, behind the other layer's request)
are not busy seconds. A real grade store and request history in one file."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.store.database import Store
from grader.types import GradeReport, LayerResult
from grader.views.model_timings import notebook_llm_stats, stats_rows
from inference import MetricsHistory, RequestMetrics

T0 = 1_800_000_000.0
CODE, FEEDBACK = "code:embedded/smollm2-135m", "feedback:embedded/smollm2-135m"


def served(rid: str, route: str, start: float, total: float, queued: float
           ) -> RequestMetrics:
    return RequestMetrics(request_id=rid, role=route.split(":")[0], route=route,
                          queue_seconds=queued, total_seconds=total, started_at=start,
                          finished_at=start + total)


def layer(name: str, route: str, start: float, total: float, wall: float,
          **extra: float) -> LayerResult:
    return LayerResult(name, details={
        "route": route, "total_s": total, "started_at": start, "finished_at": start + total,
        "requests": 1, "parallel_wall_s": wall, "parallel_efficiency": round(8.0 / wall, 3),
        **extra})


def save(store: Store, student: str, layers: dict[str, LayerResult]) -> None:
    a = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
    rv = store.add_rubric_version(a, "v1", "{}")
    sha = hashlib.sha256(student.encode()).hexdigest()
    sub = store.add_submission(a, sha, f"{student}.ipynb", student_id=student)
    store.save_grade(sub, rv, GradeReport(
        file=f"{student}.ipynb", sha256=sha, assignment="hw1", rubric_version="v1",
        status="graded", score=1.0, max_score=1.0, layers=layers))


@pytest.fixture
def db(tmp_path: Path) -> Iterator[tuple[Store, MetricsHistory]]:
    path = tmp_path / "grader.db"
    store, history = Store(path), MetricsHistory(path)
    yield store, history
    history.close()
    store.close()


def test_queue_time_is_not_busy_time(db: tuple[Store, MetricsHistory]):
    store, history = db
    # L3 served in 3 s; L4 sent beside it waited those 3 s for the engine, then took 2 s:
    # one after the other, 5 s of wall time. The reports say 8 busy seconds: 1.6.
    history.record(served("l3", CODE, T0, 3.0, 0.0))
    history.record(served("l4", FEEDBACK, T0, 5.0, 3.0))
    # Another notebook's request on the same route inside the window (a batch worker).
    history.record(served("other", FEEDBACK, T0 + 0.5, 2.0, 0.0))
    save(store, "s1", {"L3": layer("L3", CODE, T0, 3.0, 5.0),
                       "L4": layer("L4", FEEDBACK, T0, 5.0, 5.0)})
    (reported,) = notebook_llm_stats(store)  # without the history: the report's figure
    assert (reported.efficiency, reported.queued_seconds) == (1.6, None)
    (stats,) = notebook_llm_stats(store, history=history)
    assert stats.queued_seconds == 3.0
    assert stats.efficiency == 1.0  # (3 + 5 - 3) / 5: no overlap at all
    row = stats_rows([stats])[0]
    assert (row["queued (s)"], row["parallel efficiency"]) == (3.0, 1.0)


def test_queued_seconds_in_the_report_come_first(db: tuple[Store, MetricsHistory]):
    store, _ = db
    save(store, "s2", {"L3": layer("L3", CODE, T0, 3.0, 4.0, queue_s=0.0),
                       "L4": layer("L4", FEEDBACK, T0, 5.0, 4.0, queue_s=1.0)})
    (stats,) = notebook_llm_stats(store)
    assert (stats.queued_seconds, stats.efficiency) == (1.0, 1.75)


def test_requests_that_do_not_add_up_leave_the_queue_unknown(
        db: tuple[Store, MetricsHistory]):
    store, history = db
    history.record(served("l3", CODE, T0, 2.9, 0.0))  # not the layer's 3.0 s
    history.record(served("l4", FEEDBACK, T0, 5.0, 3.0))
    save(store, "s3", {"L3": layer("L3", CODE, T0, 3.0, 5.0),
                       "L4": layer("L4", FEEDBACK, T0, 5.0, 5.0)})
    (stats,) = notebook_llm_stats(store, history=history)
    assert (stats.queued_seconds, stats.efficiency) == (None, 1.6)
