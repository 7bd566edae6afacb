"""The app's model queue: one per store and inference client, resumed when first made.

Grades first, models after (``grader.service.model_queue``): a job of the Grade page hands
its grades' model parts to ``model_queue_for(workspace, client)``, which the process keeps
for as long as it runs. Made for the first time (the app's first grading after a start), it
takes up the parts the store kept queued, with the grader of each grade's assignment and
rubric version (``_stored_grader``), so that closing the app mid-way loses nothing.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from pathlib import Path

from inference import DisaggregatedClient

from ..errors import GraderError
from ..layers.base import GradeOptions
from ..pipeline import Grader
from ..rubrics.schema import loads
from ..store.database import GradeRow, Store
from .model_queue import ModelQueue
from .workspace import Workspace

__all__ = ["model_queue_for"]

log = logging.getLogger(__name__)
_LOCK = threading.Lock()


def _store_file(store: Store) -> str:
    return str(store.path) if str(store.path) == ":memory:" else \
        str(Path(store.path).resolve())


_QUEUES: dict[tuple[str, int], ModelQueue] = {}


def model_queue_for(workspace: Workspace, client: DisaggregatedClient) -> ModelQueue:
    """This process's model queue for ``workspace``'s store and ``client``: made once,
    when it first takes up the parts the store kept queued (a closed app, a killed command
    line) for the assignments the workspace has."""
    key = (_store_file(workspace.store), id(client))
    with _LOCK:
        queue = _QUEUES.get(key)
        if queue is None:
            queue = _QUEUES[key] = ModelQueue(workspace.store)
            fresh = True
        else:
            fresh = False
    if fresh:
        queue.resume(lambda row: _stored_grader(workspace, client, row))
    return queue


def _stored_grader(workspace: Workspace, client: DisaggregatedClient, row: GradeRow
                   ) -> Grader | None:
    """The grader of a stored grade's assignment and rubric version, with the models, to
    make its model part; None when its assignment is no longer in the workspace."""
    store = workspace.store
    name = store.assignment_name(row.assignment_id)
    try:
        assignment = workspace.load(name)
    except (GraderError, OSError) as exc:
        log.warning("the model part of grade %d waits: assignment %s: %s", row.id, name, exc)
        return None
    version = next((v for v in store.rubric_versions(row.assignment_id)
                    if v.id == row.rubric_version_id), None)
    if version is not None and version.version != assignment.rubric.version:
        assignment = dataclasses.replace(assignment, rubric=loads(
            version.rubric_json, f"{name} rubric {version.version}"))
    return Grader(assignment, GradeOptions(use_llm=True), client=client)
