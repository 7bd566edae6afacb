"""What a check type is, and the registry of them: the bottom of every check type.

A check type (``assigns``, ``printed``, ``plot_labels``, ...) is one module of
``grader.checks`` that defines ``TYPE = CheckType(...)``: the fields it reads (with the
help the rubric editor and the docs show), how its target is said, the problems of its
fields, which layer evaluates it and how, what it does on a notebook with no code of the
student's own, whether its verdict can be read from the stored outputs (and so can go
stale), how a slip upstream is charged, how the student's letter reads its result (from
its ``grader.types.Facts``), and what may produce it.

The rooms that deal with check types (the rubric's parser and editor, the layers,
scoring, the letters) read them here, from the bottom; ``grader.checks`` (at the top:
its modules reach into the layers and the letters to evaluate and to say) registers
its modules when the ``grader`` package loads. So a new check type is one module, its
test and its row in the docs' table, and no room below imports the one above it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # for the type checker only: this module imports nothing of ours at run time
    from .layers.base import SubmissionContext
    from .letters.reading import Context, Reading
    from .rubrics.check_fields import Check
    from .rubrics.schema import Criterion
    from .sandbox.execution import ExecutionResult
    from .types import CheckResult

Kind = Literal["code", "written"]
Layer = Literal["L1", "L2"]
# What a run-based check gives on a notebook with no code of the student's own:
# "evaluate" (it is evaluated as usual), "zero" (nothing computes the target: 0),
# "not_run" (nothing was run, so nothing can be checked: 0, said so).
NoCode = Literal["evaluate", "zero", "not_run"]
# Rule 5 of scoring (a slip upstream charged once): "method" keeps the check's method
# part, "values" leaves it uncharged, "none" charges it as it is.
ChargedOnce = Literal["method", "values", "none"]
ReadsOutputs = Literal["", "cells", "errors"]
EVIDENCE_SOURCES = ("both", "stored", "rerun")


@dataclass(frozen=True, slots=True)
class Field:
    """One field a check type reads, as the editor's help and the docs say it."""

    name: str
    says: str
    required: bool = False


@dataclass(frozen=True, slots=True)
class L1Scene:
    """What layer 1 gives a check to evaluate: the submission and its own code's facts."""

    ctx: SubmissionContext
    facts: list[tuple[str, Any]]  # (cell id, grader.analysis CodeFacts) of the student's cells
    details: dict[str, Any]  # the layer's details (an answer's key points are kept there)


@dataclass(frozen=True, slots=True)
class L2Scene:
    """What layer 2 gives a check to evaluate: our run and the solution's."""

    ctx: SubmissionContext
    run: ExecutionResult | None  # None: graded from the stored outputs
    solution: ExecutionResult
    reason: str  # why there is no run of ours ("" when there is)
    runs_verdict: Callable[[Criterion, Check, ExecutionResult | None], CheckResult]
    output_verdict: Callable[[Criterion, Check], CheckResult]


Validate = Callable[["Check", str, list[str]], None]
Evaluate = Callable[["Criterion", "Check", Any], "CheckResult"]
Letter = Callable[["CheckResult", "Context"], "Reading"]


def no_problems(check: Check, where: str, problems: list[str]) -> None:
    """A check type whose fields need no checking beyond their types."""


@dataclass(frozen=True, slots=True)
class CheckType:
    """Every facet of one check type (see the module's docstring)."""

    name: str
    kind: Kind
    layer: Layer
    summary: str  # what it checks, one sentence (the editor's help, the docs)
    scores: str  # how it scores (the docs' table)
    reads: tuple[Field, ...]  # the fields it reads, besides type, weight and hidden
    target_field: str | None  # the field the editor's target column shows (None: none)
    target: Callable[[Check], str]  # what it looked for, as results and reviews say it
    evaluate: Evaluate  # (criterion, check, L1Scene or L2Scene) -> its result
    letter: Letter  # its result read for the student, from the result's facts
    validate: Validate = no_problems  # problems of its fields, each with ``where``
    version: int = 2  # the rubric schema version that introduced it
    no_code: NoCode = "evaluate"  # layer 2: on a notebook with no code of the student's own
    # What of the stored outputs its verdict can be read from, so that it can go stale
    # (``grader.layers.stale``): "cells" (what cells printed or drew), "errors" (the
    # errors cells raised), "" (none: it reads the code, or only our run).
    reads_outputs: ReadsOutputs = ""
    charged_once: ChargedOnce = "none"
    # Its target is a variable, and one the student only ever assigns literals to
    # (layer 1's ``hardcoded_output``) earns it nothing: typed in, not computed.
    zero_when_typed_in: bool = False
    produced_by: tuple[str, ...] = ("rubric file", "editor")  # importers that may make it
    example: str = ""  # a target or options line, for the editor's help
    default_share: float | None = None  # min_share's default, for the types that read it
    rank: int = 100  # where it is listed (the editor's menu, the docs, parse errors)

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.reads)

    def docs_row(self) -> str:
        """This type's row of docs/rubric-format.md's table of check types."""
        said = "; ".join(f"`{f.name}`{' (required)' if f.required else ''}: {f.says}"
                         for f in self.reads) or "none"
        since = "" if self.version == 1 else f"version {self.version}: "
        cells = (f"`{self.name}`", self.kind, since + said, self.scores)
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


_REGISTERED: dict[str, CheckType] = {}  # in the order the editor and the docs list them


def register(kind: CheckType) -> None:
    """Add a check type (``grader.checks`` registers each of its modules'); a second
    type of the same name is refused."""
    if kind.name in _REGISTERED and _REGISTERED[kind.name] is not kind:
        raise TypeError(f"two check types are named {kind.name!r}")
    ordered = sorted({**_REGISTERED, kind.name: kind}.values(), key=lambda t: (t.rank, t.name))
    _REGISTERED.clear()
    _REGISTERED.update((t.name, t) for t in ordered)


def _registry() -> dict[str, CheckType]:
    if not _REGISTERED:
        raise RuntimeError("no check type is registered: grader.checks registers them when "
                           "the grader package loads")
    return _REGISTERED


def types() -> tuple[CheckType, ...]:
    """Every check type, in the order the editor and the docs list them."""
    return tuple(_registry().values())


def names(kind: Kind | None = None) -> tuple[str, ...]:
    """The check types' names (of one kind: ``code`` or ``written``)."""
    return tuple(t.name for t in types() if kind is None or t.kind == kind)


def get(name: str) -> CheckType | None:
    return _registry().get(name)


def of(name: str) -> CheckType:
    """The check type ``name``; KeyError naming the known ones when there is none."""
    found = _registry().get(name)
    if found is None:
        raise KeyError(f"no check type {name!r} (known: {', '.join(_registry())})")
    return found


DOCS_HEADER = "| type | kind | fields | scores |\n|---|---|---|---|"


def docs_table() -> str:
    """docs/rubric-format.md's table of check types, one row per registered type."""
    return "\n".join([DOCS_HEADER, *(t.docs_row() for t in types())])
