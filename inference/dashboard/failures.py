"""A failed model request or model load, said in words an instructor understands.

The engine records an error as ``"OutputValidationError: model output is not valid JSON:
Invalid control character at: line 1 column 48"``: right for a log, meaningless to the
person grading. ``explain`` turns it into a ``Failure``: a headline in plain words (what
happened, and what it means for the grades) and the recorded text as ``details``, for
the page to fold away. The words come from a table keyed by the exception tree
(``inference.errors``): an error type not in it takes the words of its nearest base.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import errors
from ..metrics import MetricsHistory

if TYPE_CHECKING:
    from ..warmup import RoleWarmth

__all__ = ["CONSEQUENCE", "WORDS", "Failure", "explain", "in_words", "last_failure",
           "load_failure"]

WORDS: dict[type[errors.InferenceError], str] = {
    errors.ContextOverflowError: "the student's work was longer than the model can read at once",
    errors.SchemaError: "the answer format could not be set up for this model",
    errors.UnknownRoleError: "no model is configured for this kind of request",
    errors.ConfigError: "the model configuration has a mistake",
    errors.InvalidRequestError: "the request could not be sent to the model as it was",
    errors.ModelLoadError: "the model could not be loaded (its file is missing or damaged)",
    errors.KVIncompatibleError: "the two servers of a route run different models",
    errors.KVTransferError: "handing the prompt from one model worker to the other failed",
    errors.BackendUnavailable: "no model server could take the request (down, unreachable "
                               "or busy)",
    errors.StreamInterrupted: "the model's answer was cut off mid-way",
    errors.BackendError: "the model server failed while answering",
    errors.OutputValidationError: "the model's answer was not in the form the grader asked "
                                  "for (small models do this now and then)",
    errors.InferenceError: "the model request failed",
}
CONSEQUENCE = ("Grading goes on: the grader asks a model again once, and when it fails "
               "again its criteria go to review, with the points from the checks alone.")
ROLE_WORDS = {"code": "code-analysis model", "feedback": "feedback model"}
UNKNOWN = "the model request failed"


@dataclass(frozen=True, slots=True)
class Failure:
    """``headline``: plain words for the page; ``details``: what the engine recorded."""

    headline: str
    details: str


def _type_name(error: str) -> str:
    """"OutputValidationError (criteria a, b): ..." -> "OutputValidationError"."""
    head = error.partition(":")[0].split(" (")[0].strip()
    return head if head.isidentifier() else ""


def in_words(error: str) -> str:
    """What the recorded ``error`` means, in words ("" text: the generic words)."""
    cls = getattr(errors, _type_name(error), None)
    if not (isinstance(cls, type) and issubclass(cls, errors.InferenceError)):
        return UNKNOWN
    return next((WORDS[c] for c in cls.__mro__ if c in WORDS), UNKNOWN)


def _role(role: str) -> str:
    return ROLE_WORDS.get(role, f"model for {role!r}" if role else "model")


def explain(error: str, role: str = "", when: str = "", grading: bool = True) -> Failure:
    """A failed request of ``role`` (``when``: "2 min ago") as a ``Failure``; ``grading``:
    say what it means for the grades (not for a test prompt)."""
    words = in_words(error)
    subject = f"A request to the {_role(role)}" + (f" {when}" if when else "")
    return Failure(f"{subject} failed: {words}." + (f" {CONSEQUENCE}" if grading else ""),
                   error.strip() or UNKNOWN)


def _ago(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s} s ago" if s < 120 else f"{s // 60} min ago"


def last_failure(history: MetricsHistory, within_s: float = 900.0,
                 now: float | None = None, skip_prefix: str = "") -> Failure | None:
    """The newest failed model request of the last ``within_s`` seconds, explained;
    None when none failed. The details also count the other failures of the window.
    ``skip_prefix``: requests whose id starts so are not counted (the Dashboard's test
    prompts, whose failure the Dashboard shows where it was asked)."""
    now = time.time() if now is None else now
    failed = [m for m in history.recent(200)
              if m.error and now - (m.finished_at or m.started_at) <= within_s
              and not (skip_prefix and m.request_id.startswith(skip_prefix))]
    if not failed:
        return None
    m = failed[-1]
    note = explain(m.error, m.role, _ago(now - (m.finished_at or m.started_at)))
    more = (f"\n\n{len(failed)} model requests failed in the last {int(within_s // 60)} "
            "minutes; the newest is shown.") if len(failed) > 1 else ""
    where = f"request {m.request_id}, route {m.route}\n" if m.request_id else ""
    return Failure(note.headline, f"{where}{note.details}{more}")


def load_failure(roles: Iterable[RoleWarmth]) -> Failure | None:
    """The models that could not be loaded at start-up, explained; None when none."""
    failed = [w for w in roles if w.state == "failed"]
    if not failed:
        return None
    which = ", ".join(_role(w.role) for w in failed)
    words = "; ".join(dict.fromkeys(in_words(w.error) for w in failed))
    return Failure(f"Could not load the {which}: {words}. Grading goes on without it (its "
                   "criteria go to review, with the points from the checks); the next "
                   "request tries to load it again.",
                   "\n".join(f"{w.role}: {w.error}" for w in failed))
