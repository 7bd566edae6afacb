"""What the model layers (L3, L4) did for one grade, said in words for the instructor.

A grade's page must not say "no model analysis (models off)" when a model failed:
each layer is either off for this grade, failed (and why, in plain words, with the
consequence: its criteria went to review, the points stand on the checks), advisory
(its notes move nothing, and show only where they are sentences that agree with the
checks, from a route that agrees often enough: ``grader.views.advisory``), or ran, with
what it had to leave out of its prompt.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ..types import GradeReport
from .advisory import RouteAgreement, advisory_notes

LAYER_WHAT = {"L3": "code analysis", "L4": "written feedback"}
# Error types as the layers record them ("ContextOverflowError: ..."), in words.
ERROR_WORDS = {
    "ContextOverflowError": "the prompt did not fit in the model's context",
    "ModelLoadError": "the model could not be loaded",
    "BackendUnavailable": "no inference server could take the request",
    "StreamInterrupted": "the model's answer was cut off mid-way",
    "OutputValidationError": "the model's answer was not the JSON asked for, twice",
    "KVTransferError": "moving the prompt's KV cache between the workers failed",
    "BackendError": "the inference backend failed",
    "SchemaError": "the answer format could not be set up for this model",
}


@dataclass(frozen=True, slots=True)
class ModelState:
    layer: str  # "L3" | "L4"
    state: Literal["off", "failed", "advisory", "ran"]
    text: str  # one sentence for the instructor


def model_states(r: GradeReport,
                 routes: Iterable[RouteAgreement] | None = None) -> list[ModelState]:
    """One state per model layer of ``r``; an empty list for a file that was not graded.
    An advisory layer's state says how often its route agreed with the checks (``routes``:
    measured over many grades, ``advisory.route_agreement``; else on ``r`` alone) and
    whether its notes are shown or hidden."""
    if r.status != "graded":
        return []
    advice = {a.layer: a for a in advisory_notes(r, routes)}
    out = []
    for name, what in LAYER_WHAT.items():
        lr = r.layers.get(name)
        label = f"{what.capitalize()} ({name})"
        if lr is None:
            out.append(ModelState(name, "off", f"{label}: not run for this grade (the "
                                               "models were off when it was graded)."))
            continue
        if lr.error:
            kind = lr.error.partition(":")[0].split(" (")[0].strip()
            why = ERROR_WORDS.get(kind, "it failed")
            out.append(ModelState(name, "failed", f"{label} failed: {why} ({lr.error.strip()})."
                                  " Its criteria were sent to review; their points come from "
                                  "the checks alone."))
            continue
        cut = f" Left out to fit its prompt: {'; '.join(lr.notes)}." if lr.notes else ""
        if lr.details.get("advisory"):
            a = advice.get(name)
            told = "" if a is None else (f" Its route ({a.route}) {a.agreement.measured} "
                                         f"over {a.over}: {a.outcome}.")
            out.append(ModelState(name, "advisory", f"{label}: written by a model this "
                                  "configuration does not trust to judge (can_judge = false): "
                                  "shown to you as notes, never to the student, and it moves "
                                  f"no points.{told}{cut}"))
        else:
            out.append(ModelState(name, "ran", f"{label}: ran on a model trusted to judge; "
                                  "what it wrote may reach the student's letter, labelled as "
                                  f"model-written.{cut}"))
    return out
