"""Grades first, models after (issue 33, item 1): a grade is stored whole before its
model part, which a queue of its own fills in later; points move only where a route is
trusted to judge, and then the grade as it was is kept; the queue survives the process.

The models are a judge at the boundary (``tests.fake_judge``: a Backend in the real
registry), advisory or trusted; notebooks are graded for real (no sandbox run: these
tests are about the queue, and the sandbox's run is tested elsewhere).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

import pytest

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from grader.service.batch import grade_batch
from grader.service.model_queue import ModelQueue, deterministic
from grader.store.database import Store
from grader.views.model_state import model_states
from inference import DisaggregatedClient, EngineConfig, ModelSpec, RouteConfig, register_backend
from tests.fake_judge import FakeJudge

ROOT = Path(__file__).resolve().parents[1]
RETAIL = ROOT / "examples" / "retail-sales"


class Judge(FakeJudge):
    """Writes 0.5 for every answer (below what the checks give a good one)."""

    prompts: ClassVar[list[str]] = []
    started: ClassVar[list[float]] = []

    def fooled(self, user: str) -> bool:
        type(self).started.append(time.monotonic())
        return False


@contextmanager
def graders(folder: Path, assignment: Path, trusted: bool) -> Iterator[Grader]:
    register_backend("grades-first-judge", Judge)
    spec = ModelSpec(name="judge", path="/nonexistent.gguf", can_judge=trusted)
    cfg = EngineConfig(routes={r: RouteConfig(r, backend="grades-first-judge", mode="single",
                                              model="judge") for r in ("code", "feedback")},
                       models={"judge": spec}, history_db=folder / "h.db")
    with DisaggregatedClient(cfg) as client:
        yield Grader(load_assignment(assignment), GradeOptions(execute=False, use_llm=True),
                     client=client)


def items(folder: Path, *names: str) -> list[GradeInput]:
    return [GradeInput.from_path(folder / "submissions" / f"{n}.ipynb") for n in names]


def test_a_grade_is_whole_before_its_models_and_they_fill_it_in_place(tmp_path: Path) -> None:
    Judge.prompts.clear()
    with graders(tmp_path, RETAIL, trusted=False) as grader, Store(tmp_path / "g.db") as store:
        queue = ModelQueue(store)
        with deterministic():  # the queue waits while grades are made
            result = grade_batch(grader, items(RETAIL, "partial", "complete"), store, 1,
                                 models=queue)
            firsts = [store.get_report(g) for g in result.grade_ids]
            assert all(r.layers["L3"].details == {"pending": True} for r in firsts)
            assert {p.status for p in store.model_parts()} == {"queued"}
            assert Judge.prompts == []  # no model read anything before the grades were in
            states = {s.layer: s.state for s in model_states(firsts[0])}
            assert states == {"L3": "pending", "L4": "pending"}
        assert queue.wait(result.batch, timeout=60)
        progress = queue.progress(result.batch)
        assert (progress.total, progress.ended, progress.failed) == (2, 2, 0)
        for gid, first in zip(result.grade_ids, firsts, strict=True):
            full = store.get_report(gid)
            assert full.score == first.score  # advisory: the points stand on the checks
            assert "output" in full.layers["L3"].details
            assert not full.layers["L3"].details.get("pending")
            assert store.revisions(gid) == []
        assert {p.status for p in store.model_parts()} == {"done"}
        assert len(Judge.prompts) >= 2
        queue.stop()


def test_a_trusted_judge_that_moves_points_keeps_the_grade_it_moved(tmp_path: Path) -> None:
    with graders(tmp_path, RETAIL, trusted=True) as grader, Store(tmp_path / "g.db") as store:
        queue = ModelQueue(store)
        result = grade_batch(grader, items(RETAIL, "complete"), store, 1, models=queue)
        first = store.get_report(result.grade_ids[0])
        assert queue.wait(result.batch, timeout=60)
        full = store.get_report(result.grade_ids[0])
        revisions = store.revisions(result.grade_ids[0])
        assert full.score is not None
        assert first.score is not None
        assert full.score < first.score  # a judge trusted to judge lowered a written answer
        assert len(revisions) == 1
        assert revisions[0].old_score == first.score
        assert revisions[0].new_score == full.score
        assert "moved the points" in revisions[0].reason
        assert queue.progress(result.batch).moved == (0,)  # the page names the grade
        queue.stop()


def test_the_queue_outlives_the_process_that_made_the_grades(tmp_path: Path) -> None:
    with graders(tmp_path, RETAIL, trusted=False) as grader, Store(tmp_path / "g.db") as store:
        gone = ModelQueue(store, workers=0)  # records the parts and never runs them
        result = grade_batch(grader, items(RETAIL, "partial"), store, 1, models=gone)
        gid = result.grade_ids[0]
        with store._tx("a process that died while it made the part") as c:
            c.execute("UPDATE model_parts SET status = 'running', owner_json = ? WHERE "
                      "grade_id = ?", ('{"host": "h", "boot_id": "", "pid_ns": "", "pid": 1, '
                                       '"started": ""}', gid))
            c.execute("UPDATE model_parts SET started_at = 0")
        assert store.model_part(gid).status == "running"
        again = ModelQueue(store)
        assert again.resume(lambda row: grader) == 1
        assert again.wait(timeout=60)
        assert store.model_part(gid).status == "done"
        assert "output" in store.get_report(gid).layers["L4"].details
        again.stop()


def test_model_parts_wait_while_notebooks_are_graded(tmp_path: Path) -> None:
    Judge.started.clear()
    with graders(tmp_path, RETAIL, trusted=False) as grader:
        queue = ModelQueue()
        release = threading.Event()

        def hold() -> None:
            with deterministic():
                release.wait(10)

        holder = threading.Thread(target=hold)
        with deterministic():
            result = grade_batch(grader, items(RETAIL, "partial"), None, 1, models=queue)
            holder.start()  # another notebook still grading after this batch's
        time.sleep(1.0)
        assert Judge.started == []  # none started while a grade was being made
        released = time.monotonic()
        release.set()
        holder.join()
        assert queue.wait(result.batch, timeout=60)
        assert Judge.started
        assert min(Judge.started) >= released
        queue.stop()


def test_models_off_sends_nothing_and_says_they_were_off(tmp_path: Path) -> None:
    Judge.prompts.clear()
    with graders(tmp_path, RETAIL, trusted=False) as grader:
        off = Grader(grader.assignment, GradeOptions(execute=False, use_llm=False),
                     client=grader.llm.client if grader.llm else None)
        report = off.grade(items(RETAIL, "partial")[0])
    assert Judge.prompts == []
    assert report.layers["L3"].details == {"not_run": "models_off"}
    assert [s.state for s in model_states(report)] == ["off", "off"]
    assert all("models were off" in s.text for s in model_states(report))


@pytest.mark.parametrize("samples", [1])
def test_the_whole_grade_is_the_grade_plus_its_models(tmp_path: Path, samples: int) -> None:
    with graders(tmp_path, RETAIL, trusted=False) as grader:
        item = items(RETAIL, "partial")[0]
        first = grader.grade_first(item)
        assert grader.models_pending(first)
        whole = grader.add_models(item, first)
        assert not grader.models_pending(whole)
        assert grader.grade(item).criteria == whole.criteria
        assert [c.points for c in whole.criteria] == [c.points for c in first.criteria]
