"""An import report (grader.rubrics.import_items) in the words the app shows: status in
plain words, counts of points pluralised, and each item's advice as a full sentence.

Without Streamlit: app_pages/import_view.py draws these.
"""

from __future__ import annotations

import re

from ..rubrics.import_items import IMPORTED, ImportReport, table_rows

__all__ = ["CARRIED_WORDS", "NOT_CARRIED_WORDS", "advice_lines", "pluralised", "worded_rows"]

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
        todo = r.todo or "the import gave no reason: check this item by hand"
        state = NOT_CARRIED_WORDS if not r.carried else CARRIED_WORDS
        out.append(f"**{_md(pluralised(r.item))}** ({state}): {_md(pluralised(todo))}")
    return out
