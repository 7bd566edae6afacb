"""Progress events of a grade, for live views (the app's Grade page).

The pipeline reports each submission's start, each layer's end and its deterministic
grade ("done"); then, grades first and models after, the start of its model layers
("models"), each model layer whose requests are sent ("sent": it is reading), the
models' tokens as they are decoded, each model layer's end and the grade
with its model parts ("models_done"); a batch also reports each
submission whose stored grade it reuses ("reused": graded before with this rubric
version, not graded again), before any grading starts. Sinks may be called from
several threads at once (layers 3 and 4 run in parallel): a sink must be
thread-safe, e.g. ``queue.Queue.put``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from .letters.numbers import points_text
from .types import GradeReport

EventKind = Literal["start", "layer", "tokens", "done", "reused", "models", "sent",
                    "models_done"]


@dataclass(frozen=True, slots=True)
class GradeEvent:
    file: str
    kind: EventKind
    layer: str = ""  # "L1" .. "L4" for layer and tokens events
    text: str = ""  # a layer's outcome, or the decoded piece of a tokens event
    seconds: float = 0.0  # how long the layer took
    error: bool = False  # the layer crashed (its criteria go to review)
    report: GradeReport | None = None  # with "done", "models_done" and "reused"


EventSink = Callable[[GradeEvent], None]

LAYER_NAMES = {"L1": "structure", "L2": "execution", "L3": "code analysis (model)",
               "L4": "written feedback (model)"}


def describe(ev: GradeEvent) -> str:
    """One line for a progress log."""
    if ev.kind == "start":
        return f"{ev.file}: started"
    if ev.kind == "layer":
        what = LAYER_NAMES.get(ev.layer, ev.layer)
        state = f"failed: {ev.text}" if ev.error else (ev.text or "done")
        return f"{ev.file}: {ev.layer} {what} {state} ({ev.seconds:.1f} s)"
    if ev.kind == "done" and ev.report is not None:
        r = ev.report
        if r.status == "error":
            return f"{ev.file}: not graded: {r.error}"
        review = f", {len(r.needs_review)} criteria to review" if r.needs_review else ""
        return f"{ev.file}: {points_text(r.score, r.max_score)}{review}"
    if ev.kind == "models":
        return f"{ev.file}: the models read it"
    if ev.kind == "sent":
        return f"{ev.file}: {LAYER_NAMES.get(ev.layer, ev.layer)}: request sent"
    if ev.kind == "models_done" and ev.report is not None:
        return f"{ev.file}: model notes added"
    if ev.kind == "reused" and ev.report is not None:
        r = ev.report
        score = points_text(r.score, r.max_score) if r.score is not None else "not graded"
        return f"{ev.file}: graded before with this rubric ({score}): stored grade reused"
    return f"{ev.file}: {ev.kind}"
