"""What the model layers (L3, L4) did for one grade, said in words for the instructor.

A grade's page must say what is true: each layer either ran (on a route trusted to judge,
or advisory: its notes move nothing, and show only where they are sentences that agree
with the checks, from a route that agrees often enough: ``grader.views.advisory``), or
failed (why, in plain words, with the consequence: its criteria went to review, the
points stand on the checks), or is queued (the grade was stored first; its model part
fills in later), or did not run, and then why, as the grade records it.

The record, kept by the pipeline in the grade: a model layer that did not run is a
``LayerResult`` whose ``details["not_run"]`` says why (a code of ``WHY_NOT_RUN`` or a
sentence); one still queued has ``details["pending"]`` true. "The models were off" is
said only for ``not_run = "models_off"``. A grade made before that record was kept says
it does not know, with what it can tell: where the other model layer ran, the models
were on, and the layer had nothing of the student's to read (the pipeline sends both
layers' requests together and keeps a layer out only when its prompt is empty).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ..types import GradeReport, LayerResult
from .advisory import RouteAgreement, advisory_notes

__all__ = ["ERROR_WORDS", "LAYER_WHAT", "MODELS_OFF", "WHY_NOT_RUN", "ModelState",
           "model_states"]

LAYER_WHAT = {"L3": "code analysis", "L4": "written feedback"}
MODELS_OFF = "models_off"
# Why a model layer did not run, as the grade records it (``details["not_run"]``).
WHY_NOT_RUN = {
    MODELS_OFF: "the models were off when it was graded",
    "nothing_to_send": "there was nothing of the student's own for it to read",
    "route_down": "no model route could take the request",
    "no_client": "no inference engine was set up for this grading",
}
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
State = Literal["off", "not run", "unknown", "pending", "failed", "advisory", "ran"]


@dataclass(frozen=True, slots=True)
class ModelState:
    layer: str  # "L3" | "L4"
    state: State
    text: str  # one sentence for the instructor


def _not_run(name: str, label: str, lr: LayerResult | None, other: LayerResult | None
             ) -> ModelState | None:
    """The state of a layer that has no result of its own, or None when it has one."""
    if lr is not None and lr.details.get("pending"):
        return ModelState(name, "pending", f"{label}: queued: it runs after the grade was "
                          "stored, and its notes fill in here when it ends. The points stand "
                          "on the checks meanwhile.")
    why = lr.details.get("not_run") if lr is not None else None
    if why:
        words = WHY_NOT_RUN.get(str(why), str(why))
        return ModelState(name, "off" if why == MODELS_OFF else "not run",
                          f"{label}: not run for this grade: {words}.")
    if lr is not None:
        return None
    if other is not None:  # the models were on: this layer's prompt was empty
        return ModelState(name, "not run", f"{label}: not run for this grade: "
                          f"{WHY_NOT_RUN['nothing_to_send']}.")
    return ModelState(name, "unknown", f"{label}: not run for this grade, which does not "
                      "record why (it was graded before the grader kept that): the models "
                      "were off, or there was nothing of the student's own to send them.")


def model_states(r: GradeReport, routes: Iterable[RouteAgreement] | None = None,
                 over: str | None = None) -> list[ModelState]:
    """One state per model layer of ``r``; an empty list for a file that was not graded.
    An advisory layer's state says how often its route agreed with the checks (``routes``:
    measured over its batch or many grades, ``over`` saying which, ``advisory``; else on
    ``r`` alone) and what became of its notes."""
    if r.status != "graded":
        return []
    advice = {a.layer: a for a in advisory_notes(r, routes, over)}
    out = []
    for name, what in LAYER_WHAT.items():
        lr = r.layers.get(name)
        other = r.layers.get("L4" if name == "L3" else "L3")
        label = f"{what.capitalize()} ({name})"
        if (missing := _not_run(name, label, lr, other)) is not None:
            out.append(missing)
            continue
        assert lr is not None
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
