"""What several check types share: evaluating through layer 2's scene, and the letter
of a check that found no code of the student's own to run."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..letters.reading import Context, Reading
    from ..rubrics.check_fields import Check
    from ..rubrics.schema import Criterion
    from ..types import CheckResult

Reader = Callable[["CheckResult", "Context"], "Reading"]


def lazily(where: str) -> Callable[..., Any]:
    """The function ``"module:name"``, imported when first called: a type's module names
    the room that says or evaluates it without loading that room when types register."""
    module, _, name = where.partition(":")

    def call(*args: Any) -> Any:
        return getattr(importlib.import_module(module), name)(*args)
    return call


def marked(check: Check, result: CheckResult) -> CheckResult:
    """``result`` marked hidden when its rubric check is."""
    return replace(result, hidden=True) if check.hidden and not result.hidden else result


def unless_no_code(reader: Reader) -> Reader:
    """``reader``, except for a check that found no code of the student's own: then the
    letter says what is missing (code of their own, and where), never "run it again"."""
    def read(ch: CheckResult, ctx: Context) -> Reading:
        from ..letters.check_reading import no_own_code_reading

        if ch.facts.state == "no_own_code":
            return no_own_code_reading(ctx)
        return reader(ch, ctx)
    return read


def by_printed(crit: Criterion, check: Check, scene: Any) -> CheckResult:
    """A check read from a cell's outputs (``printed``, ``plot``)."""
    from ..layers.outputs_read import score_printed

    return score_printed(crit, check, scene.ctx.assignment.rubric, scene.ctx.match,
                         scene.run, scene.reason)

