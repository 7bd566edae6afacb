"""The rubric editor's tables: a rubric as rows, rows back to a rubric, problems by row.

The app edits a rubric in three tables (docs/rubric-format.md, "Editing in the app"):

- criteria, one row per criterion: ``order``, ``id``, ``title``, ``kind``, ``points``,
  ``manual`` (graded by hand), ``task``, ``description``, ``expectations``. The
  criteria follow ``order`` (rows without one go last), so rows are reordered by
  renumbering.
- checks, one row per check: ``criterion`` (the id of its criterion), ``type``,
  ``weight``, ``target`` and ``options``. ``target`` is what the check looks for:
  the names of an ``assigns`` check or the functions of a ``calls`` check
  (comma-separated), the variable of an ``output`` check, the question of an
  ``answer`` check, the name of a ``test`` check; a ``runs`` check has none.
- levels (``grader.rubrics.edit_levels``): a criterion's levels, one row each.
  ``options`` holds the check's other
  fields that differ from their defaults as ``key=value`` pairs separated by ``;``
  (``compare=type, shape; rtol=1e-06; partial=type:0.4, shape:0.6``;
  ``hidden=true`` on any check). A text that holds ``,``, ``;`` or ``"``, starts or
  ends with a space, or spans lines (a test's code), is written as a JSON string
  (``"Your answer, here"``, ``code="x = f(2)\\nassert x == 4"``).

``rows_from_rubric`` then ``rubric_from_rows`` gives back the same rubric, version
and all (property-tested). Validation is ``rubric_from_dict``'s, every problem
mapped to the table, rows and field it is about, beside the editor's own (a list
that does not parse, an option that does not exist).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from numbers import Real
from typing import Any, Literal

from .. import check_types as registry
from ..errors import RubricError
from .check_text import (
    OPTION_NAMES,
    TARGET_FIELD,
    finite,
    format_options,
    format_target,
    parse_value,
    split_outside_quotes,
)
from .edit_levels import levels_from_rows
from .schema import SCHEMA_VERSION, Rubric, rubric_from_dict, rubric_to_dict

__all__ = ["APPLIES", "CHECK_COLUMNS", "CRITERIA_COLUMNS", "TARGET_FIELD", "EditProblem",
           "EditResult", "format_options", "format_target", "rows_from_rubric",
           "rubric_from_rows", "target_help", "type_help"]

CRITERIA_COLUMNS = ("order", "id", "title", "kind", "points", "manual", "task",
                    "description", "expectations")
CHECK_COLUMNS = ("criterion", "type", "weight", "target", "options")
# The fields each check type reads (its module's ``reads``); others are kept, with a warning.
APPLIES = {t.name: t.fields for t in registry.types()}
ANY_CHECK = ("hidden",)  # fields every check type reads


def target_help() -> str:
    """The editor's help for the target column: what each check type's target is."""
    said = []
    for t in registry.types():
        field = next((f for f in t.reads if f.name == t.target_field), None)
        said.append(f"{t.name}: {field.says if field is not None else 'none'}")
    return "; ".join(said) + "."


def type_help() -> str:
    """The editor's help for the type column: what each check type checks."""
    return " ".join(f"{t.name}: {t.summary}" for t in registry.types())


Table = Literal["rubric", "criteria", "checks", "levels"]


@dataclass(frozen=True, slots=True)
class EditProblem:
    """One problem of the edited tables: where (table, 0-based rows as edited, field)
    and what. A warning does not stop saving."""

    table: Table
    rows: tuple[int, ...]
    field: str
    message: str
    label: str = ""  # the criterion's id, to name the row
    warning: bool = False

    def __str__(self) -> str:
        where = self.table.capitalize()
        if self.rows:
            s = "s" if len(self.rows) > 1 else ""
            where += f" row{s} " + ", ".join(str(r + 1) for r in self.rows)
        if self.label:
            where += f" ({self.label})"
        if self.field:
            where += f", {self.field}"
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class EditResult:
    """The rubric the tables describe (None while any error stands) and every problem."""

    rubric: Rubric | None
    problems: tuple[EditProblem, ...]
    point_sum: float  # the criteria's points as entered
    total_points: float  # the total the rubric would have

    @property
    def errors(self) -> list[EditProblem]:
        return [p for p in self.problems if not p.warning]

    @property
    def warnings(self) -> list[EditProblem]:
        return [p for p in self.problems if p.warning]

    @property
    def ok(self) -> bool:
        return self.rubric is not None

    def for_table(self, table: Table) -> list[EditProblem]:
        return [p for p in self.problems if p.table == table]


# -- rubric -> rows -----------------------------------------------------------------------
def rows_from_rubric(r: Rubric) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The criteria rows and the check rows of ``r`` (columns as named above)."""
    criteria = [{"order": i + 1, "id": c.id, "title": c.title, "kind": c.kind,
                 "points": c.points, "manual": c.manual, "task": c.task,
                 "description": c.description, "expectations": c.expectations}
                for i, c in enumerate(r.criteria)]
    checks = [{"criterion": c.id, "type": ch.type, "weight": ch.weight,
               "target": format_target(ch), "options": format_options(ch)}
              for c in r.criteria for ch in c.checks]
    return criteria, checks


# -- rows -> rubric -----------------------------------------------------------------------
def _blank(value: Any) -> bool:
    """An empty cell: None, NaN, pandas' NA, or only spaces."""
    return value is None or (isinstance(value, float) and math.isnan(value)) \
        or type(value).__name__ in ("NAType", "NaTType") \
        or (isinstance(value, str) and not value.strip())


def _text(value: Any) -> str:
    """A cell's text as entered (spaces kept); "" for an empty cell."""
    return value if isinstance(value, str) else "" if _blank(value) else str(value)


def _number(value: Any) -> float | None:
    """A number from a cell (numpy scalars included); None when blank; ValueError else."""
    if _blank(value):
        return None
    if isinstance(value, Real) and not isinstance(value, bool):
        value = repr(float(value))  # exact: float(repr(x)) == x
    return finite(str(value))


class _Collector:
    def __init__(self) -> None:
        self.problems: list[EditProblem] = []

    def add(self, table: Table, rows: Sequence[int], field: str, message: str,
            label: str = "", warning: bool = False) -> None:
        self.problems.append(EditProblem(table, tuple(rows), field, message, label, warning))


def _check_dict(row: Mapping[str, Any], i: int, label: str,
                out: _Collector) -> dict[str, Any]:
    ctype = _text(row.get("type")).strip()
    data: dict[str, Any] = {"type": ctype or None}
    try:
        weight = _number(row.get("weight"))
        if weight is not None:
            data["weight"] = weight
    except ValueError as exc:
        out.add("checks", [i], "weight", str(exc), label)
    target_field = TARGET_FIELD.get(ctype)
    target = _text(row.get("target"))
    if target_field is not None:
        try:
            data[target_field] = parse_value(target_field, target)
        except ValueError as exc:
            out.add("checks", [i], "target", str(exc), label)
    elif target.strip() and ctype in APPLIES:
        out.add("checks", [i], "target", f"a {ctype} check has no target; ignored", label,
                warning=True)
    try:
        parts = [p for p in split_outside_quotes(_text(row.get("options")), ";") if p.strip()]
    except ValueError as exc:
        out.add("checks", [i], "options", str(exc), label)
        parts = []
    for part in parts:
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq:
            out.add("checks", [i], "options", f"{part.strip()!r}: write key=value", label)
        elif key not in OPTION_NAMES:
            out.add("checks", [i], "options", f"unknown option {key!r} (valid: "
                    f"{', '.join(APPLIES.get(ctype, OPTION_NAMES))})", label)
        elif key == target_field:
            out.add("checks", [i], "options", f"give {key} in the target column", label)
        elif key in data:
            out.add("checks", [i], "options", f"{key} is given twice", label)
        else:
            try:
                data[key] = parse_value(key, value)
            except ValueError as exc:
                out.add("checks", [i], "options", f"{key}: {exc}", label)
                continue
            if ctype in APPLIES and key not in (*APPLIES[ctype], *ANY_CHECK):
                out.add("checks", [i], "options", f"{key} is not used by a {ctype} check",
                        label, warning=True)
    return data


def rubric_from_rows(
    criteria_rows: Sequence[Mapping[str, Any]],
    check_rows: Sequence[Mapping[str, Any]],
    base: Rubric,
    *,
    title: str | None = None,
    placeholders: Sequence[str] | None = None,
    total_points: float | None = None,
    level_rows: Sequence[Mapping[str, Any]] | None = None,
) -> EditResult:
    """The rubric the edited tables describe, or every problem found, by row.

    ``base`` gives what the tables do not hold (language, each criterion's levels, and
    title and placeholders unless given). ``total_points``: the total to keep (the criteria
    must add up to it); None lets the total follow the criteria's points, keeping ``base``'s total
    when they add up to it.
    """
    out = _Collector()
    # Criteria, in the order of their ``order`` column (blank: last), then as listed.
    keyed = []
    for i, row in enumerate(criteria_rows):
        try:
            order = _number(row.get("order"))
        except ValueError as exc:
            out.add("criteria", [i], "order", str(exc), _text(row.get("id")))
            order = None
        keyed.append((math.inf if order is None else order, i))
    position = [i for _, i in sorted(keyed)]  # rubric position -> editor row
    crit_dicts: list[dict[str, Any]] = []
    row_of_id: dict[str, int] = {}
    point_sum = 0.0
    for pos, i in enumerate(position):
        row = criteria_rows[i]
        cid = _text(row.get("id")).strip()
        d: dict[str, Any] = {"id": cid or None, "kind": _text(row.get("kind")).strip() or None}
        for key in ("title", "task", "description", "expectations"):
            d[key] = _text(row.get(key))
        if row.get("manual") is True or _text(row.get("manual")).strip().lower() in (
                "true", "yes", "1"):
            d["manual"] = True
        try:
            points = _number(row.get("points"))
        except ValueError as exc:
            out.add("criteria", [i], "points", str(exc), cid)
            points = None
        if points is not None:
            d["points"] = points
            point_sum += points
        d["checks"] = []
        crit_dicts.append(d)
        row_of_id.setdefault(cid if cid else f"criterion-{pos}", i)
    for pos, i in enumerate(position):  # as rubric_from_dict names criteria with a bad id
        row_of_id.setdefault(f"criterion-{pos}", i)
    first_of_id = {d["id"]: d for d in reversed(crit_dicts) if d["id"]}
    # Levels: from the levels table when given, else each criterion keeps its own, by id.
    level_rows_of: dict[str, list[int]] = {}
    if level_rows is None:
        for c in rubric_to_dict(base)["criteria"]:
            if c.get("levels") and c["id"] in first_of_id:
                first_of_id[c["id"]]["levels"] = c["levels"]
    else:
        levels, level_rows_of = levels_from_rows(
            level_rows, lambda rows, f, msg, label: out.add("levels", rows, f, msg, label))
        for cid, lv in levels.items():
            if cid in first_of_id:
                first_of_id[cid]["levels"] = lv
            else:
                out.add("levels", level_rows_of[cid], "criterion",
                        f"no criterion {cid!r} in the criteria table", cid)
    check_rows_of: dict[str, list[int]] = {}
    for i, row in enumerate(check_rows):
        cid = _text(row.get("criterion")).strip()
        data = _check_dict(row, i, cid, out)
        if cid not in first_of_id:
            out.add("checks", [i], "criterion",
                    f"no criterion {cid!r} in the criteria table (a renamed criterion: "
                    "rename it here too)" if cid else
                    "name the criterion (its id) this check belongs to", cid)
            continue
        first_of_id[cid]["checks"].append(data)
        check_rows_of.setdefault(cid, []).append(i)
    total = _total(point_sum, base, total_points)
    # Read at the newest version; a version 1 rubric stays 1 unless the edit uses a newer
    # feature, so saving an unchanged rubric keeps its version hash.
    data = {"schema_version": SCHEMA_VERSION,
            "title": base.title if title is None else title,
            "language": base.language, "total_points": total,
            "placeholders": list(base.placeholders if placeholders is None else placeholders),
            "criteria": crit_dicts}
    rubric: Rubric | None = None
    try:
        rubric = rubric_from_dict(data, "the edited rubric")
        rubric = replace(rubric, schema_version=max(base.schema_version,
                                                    rubric.lowest_version()))
    except RubricError as exc:
        for problem in exc.problems:
            if not _map_level(problem, level_rows_of, out):
                _map(problem, position, row_of_id, check_rows_of,
                     [_text(row.get("id")).strip() for row in criteria_rows], out)
    errors = [p for p in out.problems if not p.warning]
    return EditResult(None if errors else rubric, tuple(out.problems), point_sum, total)


def _total(point_sum: float, base: Rubric, total_points: float | None) -> float:
    if total_points is not None:
        return float(total_points)
    if math.isclose(point_sum, base.total_points, abs_tol=1e-6):
        return base.total_points
    return point_sum


_AT_INDEX = re.compile(r"^criteria\[(\d+)\]: (.*)$", re.S)
_AT_CHECK = re.compile(r"^criterion '([^']*)' check (\d+)(?:\.(\w+))?: (.*)$", re.S)
_AT_CRITERION = re.compile(r"^criterion '([^']*)': (.*)$", re.S)
_CHECK_FIELD = (("weight", "weight"), ("check type", "type"), ("needs `", "target"))
_CRITERION_FIELD = (("id ", "id"), ("duplicate id", "id"), ("kind", "kind"),
                    ("points", "points"), ("title", "title"))


_AT_LEVEL = re.compile(r"^criterion '([^']*)' level (\d+)(?: when (\d+))?(?:\.(\w+))?: (.*)$",
                       re.S)


def _map_level(problem: str, level_rows_of: dict[str, list[int]], out: _Collector) -> bool:
    """A problem of a level (its credit, says, or one of its checks), on its row."""
    m = _AT_LEVEL.match(problem)
    if m is None:
        return False
    cid, n, when, sub, message = m[1], int(m[2]), m[3], m[4], m[5]
    rows = level_rows_of.get(cid, [])[n - 1:n]
    field = "when" if when else (sub if sub in ("credit", "says") else "credit"
                                 if "credit" in message else "when")
    out.add("levels", rows, field, f"check {when}: {message}" if when else message, cid)
    return True


def _field(message: str, table: tuple[tuple[str, str], ...], default: str) -> str:
    return next((f for word, f in table if word in message), default)


def _map(problem: str, position: list[int], row_of_id: dict[str, int],
         check_rows_of: dict[str, list[int]], labels: list[str], out: _Collector) -> None:
    """One of ``rubric_from_dict``'s problems, placed on the rows it is about."""
    if m := _AT_INDEX.match(problem):
        i = position[int(m[1])]
        out.add("criteria", [i], _field(m[2], _CRITERION_FIELD, ""), m[2], labels[i])
    elif m := _AT_CHECK.match(problem):
        cid, n, sub, message = m[1], int(m[2]), m[3], m[4]
        rows = check_rows_of.get(cid, [])
        field = ("target" if sub in TARGET_FIELD.values() else "options") if sub \
            else _field(message, _CHECK_FIELD, "options")
        out.add("checks", rows[n - 1:n], field, message, cid)
    elif m := _AT_CRITERION.match(problem):
        cid, message = m[1], m[2]
        if "check weights" in message:
            out.add("checks", check_rows_of.get(cid, []), "weight", message, cid)
        else:
            rows = [row_of_id[cid]] if cid in row_of_id else []
            label = labels[rows[0]] if rows else cid
            if "list of checks" in message:
                message = ("has no checks: add rows for it in the checks table (or levels in "
                           "the levels table)")
            out.add("criteria", rows, _field(message, _CRITERION_FIELD, ""), message, label)
    elif "criteria" in problem and "total_points" not in problem:
        out.add("criteria", [], "", problem)
    else:
        out.add("rubric", [], "total_points" if "total_points" in problem else "", problem)
