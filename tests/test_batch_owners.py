"""Batches cut short: a batch whose grader is gone is interrupted, one a live grader runs
(in this process or another) never is; resuming takes a batch over, once."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.errors import StoreError
from grader.layers.base import GradeOptions, Layer, SubmissionContext
from grader.layers.structure import StructureLayer
from grader.pipeline import GradeInput, Grader
from grader.service.batch import grade_batch
from grader.service.jobs import interrupted_batches, start_resuming
from grader.service.workspace import Workspace
from grader.store.batch_owner import STALE_AFTER_S, current_owner, owner_gone
from grader.types import LayerResult
from tests.killed_grader import OtherGrader, killed_batch, stored_batch_items

ROOT = Path(__file__).resolve().parents[1]
SUBS = ROOT / "examples" / "retail-sales" / "submissions"




def _wait(job) -> None:
    while not job.finished:
        job.wait(-1, timeout=1)


@pytest.mark.slow
def test_a_batch_of_a_live_grader_is_never_marked_and_once_killed_it_is(ws: Workspace):
    items = stored_batch_items(ws, {"student042": "complete", "student043": "partial"})
    with OtherGrader(ws.store.path, *items) as other:
        assert interrupted_batches(ws, "retail-sales") == []
        assert ws.store.reap_batches() == []
        assert ws.store.get_batch(other.batch).status == "running"
        with pytest.raises(StoreError, match="another grader is grading it"):
            start_resuming(ws, other.batch, GradeOptions(execute=False), None)
        other.kill()
    (b,) = interrupted_batches(ws, "retail-sales")
    assert (b.id, b.status, b.pending, b.done) == (other.batch, "interrupted", 2, 0)
    assert b.interrupted_at is not None
    job = start_resuming(ws, b.id, GradeOptions(execute=False), None)
    assert start_resuming(ws, b.id, GradeOptions(execute=False), None) is job  # one resume
    assert ws.store.get_batch(b.id).status == "running"  # taken over at once
    _wait(job)
    assert job.result.error == ""
    assert ws.store.get_batch(b.id).status == "done"
    assert interrupted_batches(ws, "retail-sales") == []
    with pytest.raises(StoreError, match="it is done"):
        ws.store.claim_batch(b.id)


def test_a_killed_batch_is_claimed_by_one_grader_only(ws: Workspace):
    batch = killed_batch(ws.store.path, *stored_batch_items(ws, {"student042": "complete"}))
    ws.store.claim_batch(batch)
    with pytest.raises(StoreError, match="another grader is grading it"):
        ws.store.claim_batch(batch)  # a second app asking to resume it too
    assert interrupted_batches(ws, "retail-sales") == []


class _Stop(Exception):
    pass


def test_grading_that_raises_leaves_the_batch_interrupted_for_resuming(ws: Workspace):
    a = ws.load("retail-sales")
    items = [GradeInput(f"student04{i}.ipynb", (SUBS / f"{kind}.ipynb").read_bytes(),
                        f"student04{i}", "") for i, kind in enumerate(["complete", "partial"])]

    def stop_after_one(done: int, total: int, report) -> None:
        raise _Stop

    with pytest.raises(_Stop):
        grade_batch(Grader(a, GradeOptions(execute=False)), items, ws.store,
                    progress=stop_after_one)
    (b,) = interrupted_batches(ws, "retail-sales")  # this process lives, the batch stopped
    assert (b.done, b.pending) == (1, 1)
    job = start_resuming(ws, b.id, GradeOptions(execute=False), None)
    _wait(job)
    # the whole batch's class (issue 32): the grade made before the stop kept, not regraded
    assert [ws.store.get_grade(g).student_id for g in job.result.grade_ids] == [
        "student040", "student041"]
    assert job.result.reused == 1
    assert ws.store.get_batch(b.id).status == "done"


class _Slow(Layer):
    name = "L2"

    def run(self, ctx: SubmissionContext) -> LayerResult:
        time.sleep(0.4)
        return LayerResult("L2")


def test_the_owner_beats_while_grading(ws: Workspace, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("grader.service.batch.HEARTBEAT_S", 0.05)
    a = ws.load("retail-sales")
    grader = Grader(a, GradeOptions(execute=False), layers=[StructureLayer(), _Slow()])
    result = grade_batch(grader, [GradeInput.from_path(SUBS / "complete.ipynb")], ws.store)
    b = ws.store.get_batch(result.batch_id)
    assert b.status == "done"
    assert b.heartbeat_at is not None
    assert b.heartbeat_at - b.created_at >= 0.3  # beats went on while the notebook was graded
    assert b.owner == current_owner().to_json()


def test_when_an_owner_is_gone():
    me = current_owner()
    now = time.time()
    assert not owner_gone(me.to_json(), now - 3600, now)  # this process: alive, however quiet
    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True).stdout)
    assert owner_gone(dataclasses.replace(me, pid=dead, started="").to_json(), now, now)
    assert owner_gone(dataclasses.replace(me, started=me.started + "0").to_json(), now, now)
    parent = dataclasses.replace(me, pid=os.getppid(), started="")  # alive, start unknown
    assert not owner_gone(parent.to_json(), now - 3600, now)
    rebooted = dataclasses.replace(me, boot_id="another-boot")
    assert owner_gone(rebooted.to_json(), now, now)
    elsewhere = dataclasses.replace(me, host="lab-machine-2", boot_id="b", pid_ns="pid:[1]")
    assert not owner_gone(elsewhere.to_json(), now - 60, now)  # beats: alive
    assert owner_gone(elsewhere.to_json(), now - STALE_AFTER_S - 1, now)  # silent: gone
    for unknown in ("", "{not json"):  # before owners were recorded, or unreadable
        assert not owner_gone(unknown, now - 60, now)
        assert owner_gone(unknown, now - STALE_AFTER_S - 1, now)
