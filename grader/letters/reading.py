"""A check read for the student (``Reading``) and what a reading may use (``Context``).

Shared by the readers of ``grader.letters.check_reading`` and ``grader.letters.output_reading``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..rubrics.check_fields import Check
from ..types import Evidence
from .places import Places
from .text import Phrase, Quote, cut, phrase


@dataclass(slots=True)
class Reading:
    """A check in the student's words."""

    done: list[Phrase] = field(default_factory=list)
    missing: list[Phrase] = field(default_factory=list)
    steps: list[Phrase] = field(default_factory=list)
    quotes: list[Quote] = field(default_factory=list)
    unchecked: bool = False  # could not be evaluated: the instructor looks at it


@dataclass(frozen=True, slots=True)
class Context:
    """What a reading may use besides the check: where things are, the rubric's check,
    the template heading of the criterion's part."""

    places: Places
    spec: Check | None = None
    task: str = ""
    evidence: tuple[Evidence, ...] = ()  # the criterion's own (to locate assignments)
    unassigned: frozenset[str] = frozenset()  # names its assigns checks found missing
    levels: tuple[Any, ...] = ()  # the criterion's levels (grader.rubrics.levels.Level)

    def part(self) -> Phrase:
        """' under the heading “Task 3” (cell 12)', or '' when the rubric names none."""
        if not self.task.strip():
            return phrase()
        cell = self.places.heading(self.task)
        return phrase(f" under the heading “{cut(self.task, 80)}”", f" ({cell})" if cell else "")
