"""The rubric editor's levels table: a criterion's levels as rows, and rows back.

One row per level, in the order they are tried, with columns ``criterion`` (its id),
``credit`` (the fraction of the criterion's points, 0 to 1), ``when`` (the checks that
must all pass, as a JSON list written like the rubric file's checks:
``[{"type": "code", "pattern": "parse_date_time"}]``; empty: always holds) and ``says``
(the sentence the student's letter gives). Rows of one criterion keep their order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .check_fields import check_to_dict
from .schema import Rubric

LEVEL_COLUMNS = ("criterion", "credit", "when", "says")


def level_rows(r: Rubric) -> list[dict[str, Any]]:
    """The levels rows of ``r``, criterion by criterion, each in its order."""
    rows = []
    for c in r.criteria:
        for lv in c.levels:
            when = [{k: v for k, v in check_to_dict(ch).items() if k != "weight"}
                    for ch in lv.when]
            rows.append({"criterion": c.id, "credit": lv.credit,
                         "when": json.dumps(when, ensure_ascii=False) if when else "",
                         "says": lv.says})
    return rows


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value) or (
        isinstance(value, str) and not value.strip())


def levels_from_rows(rows: Sequence[Mapping[str, Any]],
                     add: Any) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[int]]]:
    """Level dicts by criterion id, and the editor rows of each criterion's levels.
    ``add(rows, field, message, label)`` records a problem of the table."""
    out: dict[str, list[dict[str, Any]]] = {}
    rows_of: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        if all(_blank(row.get(k)) for k in LEVEL_COLUMNS):
            continue  # an empty row the editor added
        cid = "" if _blank(row.get("criterion")) else str(row["criterion"]).strip()
        if not cid:
            add([i], "criterion", "name the criterion (its id) this level belongs to", "")
            continue
        level: dict[str, Any] = {}
        credit = row.get("credit")
        try:
            level["credit"] = None if _blank(credit) else float(credit)
        except (TypeError, ValueError):
            add([i], "credit", f"{credit!r} is not a number (a fraction of the points, 0 "
                "to 1)", cid)
            continue
        when = row.get("when")
        if not _blank(when):
            try:
                level["when"] = json.loads(str(when))
            except json.JSONDecodeError as exc:
                add([i], "when", f"not a JSON list of checks ({exc.msg})", cid)
                continue
        if not _blank(row.get("says")):
            level["says"] = str(row["says"])
        out.setdefault(cid, []).append(level)
        rows_of.setdefault(cid, []).append(i)
    return out, rows_of
