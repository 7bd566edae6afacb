"""The grader package's one exception tree.

    GraderError
    ├── InputError            a file the instructor gave cannot be used
    │   ├── NotebookError     not JSON, not a notebook, too large, too many cells, binary
    │   ├── ArchiveError      bad ZIP: zip-slip, zip bomb, corrupt
    │   └── RubricError       rubric invalid: lists every problem found
    ├── SandboxError          the sandbox could not be set up (not the student's fault)
    ├── GradingStopped        the grader was told to stop (SIGTERM) in the middle of a batch
    └── StoreError            the SQLite store failed

Every InputError names the file and the reason; layers never raise into the
pipeline's caller (a crashed layer becomes a result with the error attached).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .types import GradeReport


class GraderError(Exception):
    """Base class for every error the grader package raises."""


class InputError(GraderError):
    def __init__(self, file: str, reason: str) -> None:
        self.file = file
        self.reason = reason
        super().__init__(f"{file}: {reason}")


class NotebookError(InputError):
    pass


class ArchiveError(InputError):
    pass


class RubricError(InputError):
    def __init__(self, file: str, problems: list[str]) -> None:
        self.problems = list(problems)
        super().__init__(file, "; ".join(self.problems))


class SandboxError(GraderError):
    pass


class GradingStopped(GraderError):
    """Grading stopped before the batch's end: ``reports`` holds the notebooks graded (and,
    with a store, saved) before the stop; the others were not graded."""

    def __init__(self, why: str, reports: Sequence[GradeReport] = ()) -> None:
        self.why = why
        self.reports = list(reports)
        super().__init__(f"grading was stopped ({why}) after {len(self.reports)} notebooks")


class PromptBudgetError(GraderError):
    """A prompt cannot fit its route's context, whatever is cut from the student's part."""


class StoreError(GraderError):
    pass
