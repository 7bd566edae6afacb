"""A judging model for tests, at the boundary: a Backend registered in the real registry.

``FakeJudge`` answers every criterion of a request under its JSON schema; a subclass says
when the student's part of a prompt fools it (``fooled``), and a fooled judge gives the
full written score (1.0, and "met" where ``meets`` is set) instead of 0.5. The prompts it
received are kept per class. ``judging_grader`` is a Grader whose code and feedback routes
are that judge, configured ``can_judge = true``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.pipeline import Grader
from inference import (
    Backend,
    DisaggregatedClient,
    EngineConfig,
    GenerationResult,
    ModelSpec,
    RequestMetrics,
    RouteConfig,
    WorkerHealth,
    register_backend,
)


class FakeJudge(Backend):
    prompts: ClassVar[list[str]] = []
    meets: ClassVar[bool] = False  # a fooled judge also says code criteria are met

    def fooled(self, user: str) -> bool:
        raise NotImplementedError

    def prefill(self, request):
        raise NotImplementedError

    def decode(self, handle, on_token=None):
        raise NotImplementedError

    def generate(self, request, on_token=None):
        user = request.messages[-1].content
        type(self).prompts.append(user)
        fooled = self.fooled(user)
        parsed = {}
        for cid, spec in request.json_schema["properties"].items():
            if request.role == "code":
                item = {"verdict": "met" if fooled and self.meets else "partial", "cells": [],
                        "issue": "", "confidence": 0.9, "quote": "", "suggestion": ""}
            else:
                item = {"score": 1.0 if fooled else 0.5, "strength": "clear",
                        "improve": "more detail", "next_step": "cite numbers"}
            parsed[cid] = {k: item[k] for k in spec["properties"]}
        m = RequestMetrics(role=request.role, route=self.route.name, started_at=time.time(),
                           finished_at=time.time(), method="single")
        return GenerationResult(json.dumps(parsed), "stop", m, parsed=parsed)

    def health(self):
        return [WorkerHealth(type(self).__name__, self.route.role, self.route.name,
                             "generate", "up")]


@contextmanager
def judging_grader(name: str, judge: type[FakeJudge], assignment: Path,
                   folder: Path) -> Iterator[Grader]:
    """A Grader (no execution) whose model routes are ``judge``, trusted to judge."""
    register_backend(name, judge)
    spec = ModelSpec(name="judge", path="/nonexistent.gguf", can_judge=True)
    cfg = EngineConfig(routes={r: RouteConfig(r, backend=name, mode="single", model="judge")
                               for r in ("code", "feedback")},
                       models={"judge": spec}, history_db=folder / "h.db")
    with DisaggregatedClient(cfg) as client:
        yield Grader(load_assignment(assignment), GradeOptions(execute=False, use_llm=True),
                     client=client)
