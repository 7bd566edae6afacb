"""Typed values the grader passes between its parts.

A notebook is read into a ``Notebook`` of ``Cell``s; each layer returns a
``LayerResult`` of ``CheckResult``s carrying ``Evidence``; scoring turns them
into ``CriterionResult``s and one ``GradeReport`` per submission.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

Language = Literal["python", "r"]
CellKind = Literal["code", "markdown", "raw"]
# "environment": the instructor's own solution fails the check too (a broken key, a package
# or data file the machine lacks): not charged to the student (see grader.scoring, rule 3b)
CheckStatus = Literal["ok", "skipped", "error", "environment"]


@dataclass(frozen=True, slots=True)
class Output:
    """One output of a code cell, normalised to plain text (ANSI escapes removed)."""

    kind: str  # "stream" | "execute_result" | "display_data" | "error"
    text: str  # stream text, text/plain, or "ename: evalue" for errors
    mime: tuple[str, ...] = ()  # mime types present (image/png, text/html, ...)
    name: str = ""  # stream name (stdout / stderr) or error name
    rich: tuple[tuple[str, str], ...] = ()  # (mime, text) of HTML, Markdown, SVG, ... of a run


@dataclass(frozen=True, slots=True)
class Cell:
    id: str
    index: int  # position in the notebook
    kind: CellKind
    source: str
    outputs: tuple[Output, ...] = ()
    execution_count: int | None = None
    locked: str = ""  # nbgrader's grade id of a read-only (locked) cell; "" otherwise

    @property
    def has_error(self) -> bool:
        return any(o.kind == "error" for o in self.outputs)

    @property
    def output_text(self) -> str:
        return "\n".join(o.text for o in self.outputs if o.text)


@dataclass(frozen=True, slots=True)
class Notebook:
    name: str  # the file name, for messages
    language: Language
    cells: tuple[Cell, ...]
    sha256: str  # of the file's bytes
    kernel_name: str = ""
    nbformat: str = "4.5"

    @property
    def code_cells(self) -> tuple[Cell, ...]:
        return tuple(c for c in self.cells if c.kind == "code")

    @property
    def markdown_cells(self) -> tuple[Cell, ...]:
        return tuple(c for c in self.cells if c.kind == "markdown")

    def cell(self, cell_id: str) -> Cell | None:
        return next((c for c in self.cells if c.id == cell_id), None)


@dataclass(frozen=True, slots=True)
class Evidence:
    """What a finding rests on: a place in the notebook and what was seen there."""

    cell_id: str | None
    line: int | None  # 1-based line within the cell's source
    text: str


@dataclass(frozen=True, slots=True)
class Flag:
    """Something the instructor should see (hard-coded output, tampered cell, ...)."""

    code: str  # e.g. "hardcoded_output", "template_modified", "stale_outputs"
    message: str
    evidence: tuple[Evidence, ...] = ()


@dataclass(frozen=True, slots=True)
class Part:
    """One aspect of a comparison with the solution (an ``output`` check's type, shape,
    columns, rows or values), as data: whether it matched, which way it differs
    (``how``), what the student's variable has (``got``) and what is expected
    (``want``), the columns ``missing`` and ``extra`` (or the solution's, in order), and
    where values first differ (``at``: "row 3"; ``column`` or ``position``; ``stat``
    when summaries were compared) with the ``counts`` ``differ`` and ``of``."""

    name: str
    ok: bool
    how: str = ""
    got: str = ""
    want: str = ""
    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    at: str = ""
    column: str = ""
    position: str = ""
    stat: str = ""  # values compared by summary: the statistic that differs (sum, mean, ...)
    counts: tuple[tuple[str, float], ...] = ()

    def count(self, name: str, default: float = 0) -> float:
        return next((v for k, v in self.counts if k == name), default)


@dataclass(frozen=True, slots=True)
class Facts:
    """What a check found, as data: the letters and pages say it from these, never by
    reading ``CheckResult.message`` (the sentence the JSON keeps for the instructor).

    ``state`` is one word for what the check met (each type's module lists its own:
    ``missing``, ``no_own_code``, ``not_found``, ``unanswered``, ``errors``, ...);
    ``expected``, ``found`` and ``missing`` name what it looked for, saw and did not
    see; ``counts`` holds its numbers by name (``errors``, ``cells``, ``words``, ...).
    """

    state: str = ""
    expected: tuple[str, ...] = ()
    found: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    counts: tuple[tuple[str, float], ...] = ()
    quoted: str = ""  # a text of the rubric's the result stands on (a level's sentence)
    parts: tuple[Part, ...] = ()  # output: each compared aspect

    def count(self, name: str, default: float = 0) -> float:
        return next((v for k, v in self.counts if k == name), default)

    def has(self, name: str) -> bool:
        return any(k == name for k, _ in self.counts)


NO_FACTS = Facts()


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of one rubric check for one submission.

    ``score`` is the fraction of the check satisfied (0..1); ``weight`` is the
    fraction of its criterion's points the check is worth (from the rubric).
    ``status`` is "skipped" when the check could not run (e.g. no kernel) and
    "error" when evaluating it failed: both send the criterion to review.
    "environment" when the solution fails it too: left out of the points, and reviewed.
    ``hidden`` (from the rubric's check): the result counts, but its target and
    message are the instructor's only (never in the letter or a model's prompt).
    """

    criterion_id: str
    check: str  # the check's type: assigns, calls, output, runs, answer
    target: str  # what it looked for: a name, a function, a variable, a question
    score: float
    weight: float
    layer: str  # "L1" or "L2"
    message: str
    evidence: tuple[Evidence, ...] = ()
    status: CheckStatus = "ok"
    hidden: bool = False
    # output checks: the share of the method aspects (type, shape, columns) met, on
    # their own; None when the check compares values only. Scoring uses it when an
    # upstream slip is charged once (``depends_on``).
    method_score: float | None = None
    facts: Facts = NO_FACTS  # what it found, as data (``Facts``)


@dataclass(slots=True)
class LayerResult:
    layer: str
    checks: list[CheckResult] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. "graded from stored outputs"
    error: str = ""  # set when the layer crashed: its criteria go to review
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class CriterionResult:
    id: str
    title: str
    kind: str  # "code" | "written"
    max_points: float
    points: float
    checks: list[CheckResult] = field(default_factory=list)
    needs_review: bool = False
    review_reasons: list[str] = field(default_factory=list)
    # What a model said about this criterion (L3 verdict/issue, L4 feedback), labelled
    # as model-written wherever it is shown; it never raises the points.
    model_notes: dict[str, str] = field(default_factory=dict)

    @property
    def evidence(self) -> list[Evidence]:
        return [e for c in self.checks for e in c.evidence]


@dataclass(slots=True)
class GradeReport:
    file: str
    sha256: str
    assignment: str
    rubric_version: str
    status: Literal["graded", "error"]
    score: float | None
    max_score: float
    student_id: str = ""
    display_name: str = ""
    criteria: list[CriterionResult] = field(default_factory=list)
    flags: list[Flag] = field(default_factory=list)
    layers: dict[str, LayerResult] = field(default_factory=dict)
    error: str = ""
    created_at: float = 0.0

    @property
    def needs_review(self) -> list[str]:
        return [c.id for c in self.criteria if c.needs_review]

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["needs_review"] = self.needs_review
        return out
