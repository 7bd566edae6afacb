"""An import report (grader.rubrics.import_items) in the words the app shows: status in
plain words, counts of points pluralised, and each item's advice as a full sentence.

An old rubric can leave dozens of items behind, most with the same advice ("where a
student's work deserves other credit, override the criterion in Review"):
``advice_groups`` says each piece of advice once, with the items it is about, under
where it is done (the Rubrics page, Review, nothing to do). Without Streamlit:
app_pages/import_view.py draws these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..rubrics.import_items import IMPORTED, ImportReport, ImportRow, table_rows

__all__ = ["CARRIED_WORDS", "NOT_CARRIED_WORDS", "WHERE", "Advice", "AdviceGroup",
           "advice_groups", "advice_lines", "advice_markdown", "pluralised", "worded_rows"]

CARRIED_WORDS = "imported"
NOT_CARRIED_WORDS = "not carried over"
_ONE = re.compile(r"(?<![\d.])(1|1\.0) (points|criteria|checks|items|cells|files)\b")
_SINGULAR = {"points": "point", "criteria": "criterion", "checks": "check", "items": "item",
             "cells": "cell", "files": "file"}


def pluralised(text: str) -> str:
    """``text`` with "1 points" (criteria, checks, ...) in the singular."""
    return _ONE.sub(lambda m: f"{m.group(1)} {_SINGULAR[m.group(2)]}", text)


def worded_rows(report: ImportReport) -> list[dict[str, str]]:
    """``table_rows`` with the status in words and counts pluralised."""
    rows = table_rows(report)
    for row in rows:
        row.update({k: pluralised(v) for k, v in row.items() if isinstance(v, str)})
        row["status"] = CARRIED_WORDS if row["status"] == IMPORTED else NOT_CARRIED_WORDS
    return rows


def _md(text: str) -> str:
    """Plain text safe in Markdown: "$" starts no formula (R's df$col), "*" no emphasis."""
    return text.replace("\\", "\\\\").replace("$", "\\$").replace("*", "\\*")


def advice_lines(report: ImportReport) -> list[str]:
    """One Markdown line per item that asks something of the instructor: the item,
    whether it was carried over, and what to do; an item not carried over without advice
    says so."""
    out = []
    for r in [*report.not_carried, *report.carried]:
        if r.carried and not r.todo:
            continue
        todo = r.todo or NO_REASON
        state = NOT_CARRIED_WORDS if not r.carried else CARRIED_WORDS
        out.append(f"**{_md(pluralised(r.item))}** ({state}): {_md(pluralised(todo))}")
    return out


NO_REASON = "the import gave no reason: check this item by hand"
# Where a piece of advice is acted on, in the order the page lists them.
WHERE = ("On the Rubrics page", "In Review, while grading", "To keep in mind",
         "Nothing to do")


def _where(todo: str) -> str:
    if todo.startswith(("Nothing to", "Not needed")):
        return WHERE[3]
    if "Rubrics page" in todo:
        return WHERE[0]
    if "in Review" in todo:
        return WHERE[1]
    return WHERE[2]


@dataclass(frozen=True, slots=True)
class Advice:
    """One piece of advice, said once, and the items of the old file it is about."""

    todo: str  # Markdown-safe
    items: tuple[str, ...]  # Markdown-safe, each "item (imported)" or "item"


@dataclass(frozen=True, slots=True)
class AdviceGroup:
    """The advice acted on in one place (``WHERE``)."""

    where: str
    advice: tuple[Advice, ...]

    @property
    def items(self) -> int:
        return sum(len(a.items) for a in self.advice)


def _advised(report: ImportReport) -> list[ImportRow]:
    return [r for r in [*report.not_carried, *report.carried] if r.todo or not r.carried]


def advice_groups(report: ImportReport) -> list[AdviceGroup]:
    """Every item that asks something of the instructor, grouped by its advice (said
    once) and the advice by where it is acted on, in ``WHERE``'s order; within a place,
    the advice about the most items first. No item is left out or cut short."""
    by_todo: dict[str, list[ImportRow]] = {}
    for r in _advised(report):
        by_todo.setdefault(r.todo or NO_REASON, []).append(r)
    places: dict[str, list[Advice]] = {w: [] for w in WHERE}
    for todo, rows in sorted(by_todo.items(), key=lambda kv: -len(kv[1])):
        items = tuple(_md(pluralised(r.item)) + (f" ({CARRIED_WORDS})" if r.carried else "")
                      for r in rows)
        places[_where(todo)].append(Advice(_md(pluralised(todo)), items))
    return [AdviceGroup(w, tuple(a)) for w, a in places.items() if a]


def advice_markdown(group: AdviceGroup) -> str:
    """A place's advice as a Markdown list: each piece of advice once, its items below."""
    lines = []
    for a in group.advice:
        if len(a.items) == 1:
            lines.append(f"- **{a.items[0]}**: {a.todo}")
            continue
        lines.append(f"- {a.todo} ({len(a.items)} items)")
        lines += [f"    - {item}" for item in a.items]
    return "\n".join(lines)
