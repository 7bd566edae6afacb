"""The one interface every grading layer implements, and the context it reads.

A layer reads a ``SubmissionContext`` and returns a ``LayerResult``. It never
raises into the pipeline: ``run_layer`` turns a crash into a result with the
error attached, and scoring sends that layer's criteria to review instead of
inventing points. ``run_layer`` also keeps one flag per code (``one_per_code``): twelve
cells that do not parse are one ``syntax_error`` flag that says twelve, not twelve flags.
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from ..analysis.template import TemplateMatch
from ..assignment import Assignment
from ..rubrics.schema import Rubric
from ..sandbox.execution import ExecutionResult
from ..types import Flag, LayerResult, Notebook

log = logging.getLogger(__name__)


@dataclass(slots=True)
class GradeOptions:
    execute: bool = True  # run L2 (execution); False grades from stored outputs
    use_llm: bool = False  # L3/L4, when the grader has an inference client
    llm_samples: int = 1  # k > 1: sample each model k times, unstable criteria to review
    cell_timeout_s: int = 60
    total_timeout_s: int = 600
    memory_mb: int = 2048
    allow_unsandboxed: bool = False


@dataclass(slots=True)
class AssignmentContext:
    """What every submission of one assignment shares; built once per batch."""

    assignment: Assignment
    template: Notebook
    solution: Notebook
    solution_raw: Any  # nbformat.NotebookNode, for execution
    cache: dict[str, Any] = field(default_factory=dict)  # e.g. the solution's execution
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def rubric(self) -> Rubric:
        return self.assignment.rubric


@dataclass(slots=True)
class SubmissionContext:
    assignment: AssignmentContext
    submission: Notebook
    raw: Any  # nbformat.NotebookNode of the submission
    match: TemplateMatch
    options: GradeOptions
    execution: ExecutionResult | None = None  # layer 2's run of this notebook, once it ran
    # (cell id, line) of the blocks of text aimed at the grader: never an answer, never in
    # a model's prompt (``grader.integrity.injection_blocks``; set before any layer runs)
    flagged: frozenset[tuple[str, int]] = frozenset()


class Layer(ABC):
    name: str = ""

    @abstractmethod
    def run(self, ctx: SubmissionContext) -> LayerResult:
        """Evaluate this layer's checks for one submission."""


def run_layer(layer: Layer, ctx: SubmissionContext) -> LayerResult:
    t0 = time.perf_counter()
    try:
        result = layer.run(ctx)
    except Exception as exc:  # a crashed layer is a result, never an exception upstream
        log.exception("layer %s crashed on %s", layer.name, ctx.submission.name)
        result = LayerResult(
            layer.name,
            error=f"{type(exc).__name__}: {exc}",
            details={"traceback": traceback.format_exc(limit=5)},
        )
    result.seconds = time.perf_counter() - t0
    result.flags = one_per_code(result.flags)
    return result


SHOWN_MESSAGES = 3  # a merged flag's distinct messages shown; the rest are counted


def one_per_code(flags: list[Flag]) -> list[Flag]:
    """One flag per code, in the order first raised: a code raised n times keeps every
    evidence, its distinct messages (the first ``SHOWN_MESSAGES``, the rest counted) and
    says n ("code does not parse: ... (12 times)")."""
    by_code: dict[str, list[Flag]] = {}
    for f in flags:
        by_code.setdefault(f.code, []).append(f)
    out = []
    for code, same in by_code.items():
        if len(same) == 1:
            out.append(same[0])
            continue
        said = list(dict.fromkeys(f.message for f in same))
        text = "; ".join(said[:SHOWN_MESSAGES])
        if len(said) > SHOWN_MESSAGES:
            text += f"; and {len(said) - SHOWN_MESSAGES} more"
        out.append(Flag(code, f"{text} ({len(same)} times)",
                        tuple(dict.fromkeys(e for f in same for e in f.evidence))))
    return out
