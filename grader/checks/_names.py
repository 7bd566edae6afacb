"""What ``assigns`` and ``calls`` share: finding names in the student's own code, and
saying which were found and which are missing."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..letters.reading import Context, Reading
    from ..rubrics.check_fields import Check
    from ..rubrics.schema import Criterion
    from ..types import CheckResult


def evaluate_names(crit: Criterion, check: Check, scene: Any) -> CheckResult:
    from ..layers.structure import StructureLayer

    return StructureLayer.names(crit, check, scene.facts)


def names_problems(field: str) -> Callable[[Check, str, list[str]], None]:
    def validate(check: Check, where: str, problems: list[str]) -> None:
        if not getattr(check, field):
            problems.append(f"{where}: a{'n' if check.type[0] in 'aeiou' else ''} "
                            f"{check.type} check needs `{field}`")
    return validate


def names_letter(calls: bool) -> Callable[[CheckResult, Context], Reading]:
    """The letter's reading of a calls (``calls``) or an assigns check."""
    return lambda ch, ctx: _names_letter(ch, ctx, calls)


def _names_letter(ch: CheckResult, ctx: Context, calls: bool) -> Reading:
    """What was used or created (and where), what does not appear yet, and the step."""
    from ..letters.check_reading import other_reading
    from ..letters.reading import Reading
    from ..letters.text import codes, phrase

    missing = list(ch.facts.missing)
    if not missing and ch.score < 1:
        return other_reading(ch, ctx)
    found = [_used(n, ch) for n in ch.facts.found]
    out = Reading()
    if found:
        where = ctx.places.span(ch.evidence)
        out.done.append(phrase("You used " if calls else "You created ",
                               codes(found, call=calls), f" ({where})" if where else "", "."))
    if missing:
        what = codes(missing, call=calls)
        if calls:
            out.missing.append(phrase(what, " does" if len(missing) == 1 else " do",
                                      " not appear in your code yet."))
            out.steps.append(phrase("Use ", what, ctx.part() if ctx.task else " in this part",
                                    "."))
        else:
            one = len(missing) == 1
            out.missing.append(phrase(what, " is" if one else " are",
                                      " not created anywhere in your code."))
            out.steps.append(phrase("Store the result in a variable named " if one else
                                    "Store the results in variables named ", what,
                                    ctx.part(), "."))
    return out


def _used(entry: str, ch: CheckResult) -> str:
    """Of an any-of group, the name the student's code used (the group when unclear)."""
    from ..rubrics.check_fields import alternatives

    names = alternatives(entry)
    if len(names) < 2:
        return entry
    used = [n for n in names if any(re.search(rf"(?<!\w){re.escape(n)}(?![\w.])", ev.text)
                                    for ev in ch.evidence)]
    return used[0] if len(used) == 1 else entry
