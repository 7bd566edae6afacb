"""Parallel efficiency per graded notebook counts the requests' own service time: the
seconds a request waited in a queue (for the engine, behind the other layer's request)
are not busy seconds. The LLM layers compute it so and keep each layer's queued
seconds; a grade made before they were kept shows its efficiency as unknown."""

from __future__ import annotations

import hashlib
from pathlib import Path

from grader.layers.llm import parallel_figures
from grader.store.database import Store
from grader.types import GradeReport, LayerResult
from grader.views.model_timings import efficiency_figure, notebook_llm_stats, stats_rows

CODE, FEEDBACK = "code:embedded/smollm2-135m", "feedback:embedded/smollm2-135m"


def layer(name: str, route: str, total: float, wall: float, eff: float,
          **extra: float) -> LayerResult:
    return LayerResult(name, details={"route": route, "total_s": total,
                                      "parallel_wall_s": wall, "parallel_efficiency": eff,
                                      **extra})


def save(store: Store, student: str, layers: dict[str, LayerResult]) -> None:
    a = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
    rv = store.add_rubric_version(a, "v1", "{}")
    sha = hashlib.sha256(student.encode()).hexdigest()
    sub = store.add_submission(a, sha, f"{student}.ipynb", student_id=student)
    store.save_grade(sub, rv, GradeReport(
        file=f"{student}.ipynb", sha256=sha, assignment="hw1", rubric_version="v1",
        status="graded", score=1.0, max_score=1.0, layers=layers))


def test_a_grade_with_its_queued_seconds_shows_them_and_its_efficiency(tmp_path: Path):
    with Store(tmp_path / "grader.db") as store:
        # L3 served in 3 s; L4 waited those 3 s for the engine, then took 2 s: 5 s wall,
        # (3 + 5 - 3) / 5 = 1.0, as the layers now compute it.
        save(store, "s1", {"L3": layer("L3", CODE, 3.0, 5.0, 1.0, queue_s=0.0),
                           "L4": layer("L4", FEEDBACK, 5.0, 5.0, 1.0, queue_s=3.0)})
        (stats,) = notebook_llm_stats(store)
    assert (stats.queued_seconds, stats.efficiency) == (3.0, 1.0)
    row = stats_rows([stats])[0]
    assert (row["queued (s)"], row["parallel efficiency"]) == (3.0, 1.0)


def test_a_grade_made_before_queue_time_was_kept_shows_no_efficiency(tmp_path: Path):
    with Store(tmp_path / "grader.db") as store:
        # its 1.6 counted the 3 s L4 waited as busy: not a measurement to show
        save(store, "s2", {"L3": layer("L3", CODE, 3.0, 5.0, 1.6),
                           "L4": layer("L4", FEEDBACK, 5.0, 5.0, 1.6)})
        (stats,) = notebook_llm_stats(store)
    assert (stats.queued_seconds, stats.efficiency) == (None, None)
    assert stats_rows([stats])[0]["parallel efficiency"] is None
    assert list(efficiency_figure([stats]).data[0].y) == []


def test_the_layers_leave_queue_time_out_of_busy_time():
    out = {"L3": LayerResult("L3", details={"total_s": 3.0, "queue_s": 0.0}),
           "L4": LayerResult("L4", details={"total_s": 5.0, "queue_s": 3.0})}
    parallel_figures(out, 5.0)
    assert [lr.details["parallel_efficiency"] for lr in out.values()] == [1.0, 1.0]
    assert [lr.seconds for lr in out.values()] == [3.0, 5.0]
