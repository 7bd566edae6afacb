"""Comparing a student's variable with the solution's, aspect by aspect.

``compare_variables`` answers, for each aspect a rubric's ``output`` check asks for
(``type``, ``shape``, ``columns``, ``rows``, ``values``), whether the student's
``VariableSummary`` matches the solution's, with a message that says exactly what
differs. Rules:
- type: class names compare by family across languages (DataFrame ~ data.frame ~
  tbl_df; int ~ float ~ numeric ~ integer; str ~ character; bool ~ logical);
- columns: ordered, or as a set when ``ignore_order``;
- values: numbers with ``math.isclose(rtol, atol)``, strings exact after strip(),
  missing (NaN, NA, None) equal to missing; frame rows are aligned by column name when
  both have the same columns; ``ignore_order`` sorts rows (or elements) first. When
  either side is too large to carry its values, the numeric summaries (sum, mean,
  min, max per column) are compared instead, and the message says so.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..sandbox.inspect_code import VariableSummary
from ..types import Part

Compared = tuple[bool, str, Part]  # (matched, what differs for the instructor, as data)

ASPECTS = ("type", "shape", "columns", "values", "rows")

_FAMILY = {
    "DataFrame": "data frame",
    "data.frame": "data frame",
    "tbl_df": "data frame",
    "tbl": "data frame",
    "grouped_df": "data frame",
    "rowwise_df": "data frame",
    "data.table": "data frame", "spec_tbl_df": "data frame",
    "int": "number",
    "float": "number",
    "numeric": "number",
    "integer": "number",
    "double": "number",
    "str": "text",
    "character": "text",
    "bool": "logical",
    "logical": "logical",
    "list": "list",
    "tuple": "list",
}


def compare_variables(*args: Any, **kwargs: Any) -> dict[str, tuple[bool, str]]:
    """aspect -> (passed, message) for each aspect in ``compare``; the arguments are
    ``compare_aspects``'s."""
    return {aspect: (ok, message) for aspect, (ok, message, _) in compare_aspects(
        *args, **kwargs).items()}


def compare_aspects(
    student: VariableSummary,
    solution: VariableSummary,
    compare: list[str],
    rtol: float = 1e-6,
    atol: float = 1e-9,
    ignore_order: bool = False,
) -> dict[str, Compared]:
    """aspect -> (passed, message, the ``Part`` that says it as data), for each aspect
    in ``compare``."""
    unknown = [a for a in compare if a not in ASPECTS]
    if unknown:
        raise ValueError(f"unknown aspects {unknown}; choose from {list(ASPECTS)}")
    problem = _unusable(student, "the student's notebook") or _unusable(solution, "the solution")
    if problem:
        how = ("undefined" if not student.exists else "uninspectable" if student.error
               else "no_key")
        return {aspect: (False, problem, Part(aspect, False, how)) for aspect in compare}
    checks = {"type": _type, "shape": _shape, "columns": _columns, "rows": _rows, "values": _values}
    return {
        aspect: checks[aspect](student, solution, rtol, atol, ignore_order) for aspect in compare
    }


def _unusable(var: VariableSummary, whose: str) -> str:
    if not var.exists:
        return f"`{var.name}` is not defined in {whose}" + (f" ({var.error})" if var.error else "")
    if var.error:
        return f"`{var.name}` in {whose} could not be inspected: {var.error}"
    return ""


def _type(st: VariableSummary, so: VariableSummary, *_: Any) -> Compared:
    part = Part("type", True, got=st.type, want=so.type)
    if st.type == so.type:
        return True, f"type {st.type} matches the solution", part
    family = _FAMILY.get(st.type, st.type)
    if family == _FAMILY.get(so.type, so.type):
        return True, f"type {st.type} ~ solution {so.type} (both {family}s)", part
    return False, f"type {st.type} != solution {so.type}", Part("type", False, "differ",
                                                                  st.type, so.type)


def _fmt(shape: tuple[int, ...] | None) -> str:
    return "none (a scalar)" if shape is None else str(tuple(shape))


def _shape(st: VariableSummary, so: VariableSummary, *_: Any) -> Compared:
    ok = st.shape == so.shape
    part = Part("shape", ok, "" if ok else "differ", _fmt(st.shape), _fmt(so.shape))
    if ok:
        return True, f"shape {_fmt(st.shape)} matches the solution", part
    return False, f"shape {_fmt(st.shape)} != solution {_fmt(so.shape)}", part


def _rows(st: VariableSummary, so: VariableSummary, *_: Any) -> Compared:
    ok = st.rows == so.rows
    part = Part("rows", ok, "" if ok else "differ", str(st.rows), str(so.rows))
    if ok:
        return True, f"{st.rows} rows, as in the solution", part
    return False, f"rows {st.rows} != solution {so.rows}", part


def _columns(
    st: VariableSummary, so: VariableSummary, _r: float, _a: float, ignore_order: bool
) -> Compared:
    mine = tuple(str(c) for c in st.columns or ())
    theirs = tuple(str(c) for c in so.columns or ())
    if so.columns is None:
        if st.columns is None:
            return True, "no columns, as in the solution", Part("columns", True)
        return False, f"has columns {list(st.columns)} but the solution has none", Part(
            "columns", False, "not_table", extra=mine)
    if st.columns is None:
        return False, f"no columns; the solution has {list(so.columns)}", Part(
            "columns", False, "none", missing=theirs)
    missing = [c for c in so.columns if c not in st.columns]
    extra = [c for c in st.columns if c not in so.columns]
    if missing or extra:
        parts = [f"missing {missing}" if missing else "", f"unexpected {extra}" if extra else ""]
        return False, "columns differ: " + ", ".join(p for p in parts if p), Part(
            "columns", False, "differ", missing=tuple(str(c) for c in missing),
            extra=tuple(str(c) for c in extra))
    if not ignore_order and tuple(st.columns) != tuple(so.columns):
        return False, (
            f"columns in a different order: {list(st.columns)} != solution {list(so.columns)}"
        ), Part("columns", False, "order", missing=theirs)
    return True, f"columns {list(st.columns)} match the solution", Part("columns", True)


def _close(a: Any, b: Any, rtol: float, atol: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)
    if isinstance(a, str) and isinstance(b, str):
        return a.strip() == b.strip()
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, rtol, atol) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], rtol, atol) for k in a)
    return bool(a == b)


def _key(value: Any) -> tuple[int, Any]:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return (0, 0)
    if isinstance(value, (int, float)):
        return (1, float(value))
    if isinstance(value, str):
        return (2, value.strip())
    if isinstance(value, list):
        return (3, tuple(_key(v) for v in value))
    return (4, json.dumps(value, sort_keys=True, default=str))


def _aligned(st: VariableSummary, so: VariableSummary) -> Any:
    """The student's rows with their cells in the solution's column order, when possible."""
    values = st.values
    if (
        not st.columns
        or not so.columns
        or sorted(st.columns) != sorted(so.columns)
        or st.columns == so.columns
        or len(set(st.columns)) != len(st.columns)
        or not isinstance(values, list)
        or not all(isinstance(r, list) and len(r) == len(st.columns) for r in values)
    ):
        return values
    order = [st.columns.index(c) for c in so.columns]
    return [[row[i] for i in order] for row in values]


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _values(
    st: VariableSummary, so: VariableSummary, rtol: float, atol: float, ignore_order: bool
) -> Compared:
    if st.values is None or so.values is None:
        return _summaries(st, so, rtol, atol)
    mine, theirs = _aligned(st, so), so.values
    tol = f"(rtol {rtol:g}, atol {atol:g})"
    if not (isinstance(mine, list) and isinstance(theirs, list)):
        part = Part("values", True, "value", _show(mine), _show(theirs))
        if _close(mine, theirs, rtol, atol):
            return True, f"value {_show(mine)} matches the solution {tol}", part
        return False, f"value {_show(mine)} != solution {_show(theirs)} {tol}", Part(
            "values", False, "value", _show(mine), _show(theirs))
    if ignore_order:
        mine, theirs = sorted(mine, key=_key), sorted(theirs, key=_key)
    if len(mine) != len(theirs):
        return False, f"{len(mine)} rows/elements != solution {len(theirs)}", Part(
            "values", False, "count", str(len(mine)), str(len(theirs)))
    bad = [
        i for i, (a, b) in enumerate(zip(mine, theirs, strict=True)) if not _close(a, b, rtol, atol)
    ]
    order = " (order ignored)" if ignore_order else ""
    if not bad:
        return True, f"all {len(mine)} rows/elements match the solution {tol}{order}", Part(
            "values", True)
    i = bad[0]
    where, a, b = f"row {i + 1}", mine[i], theirs[i]
    column = position = ""
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        j = next(
            j for j, (x, y) in enumerate(zip(a, b, strict=True)) if not _close(x, y, rtol, atol)
        )
        names = so.columns if so.columns and len(so.columns) == len(b) else None
        if names:
            column = str(names[j])
        else:
            position = f"position {j + 1}"
        a, b = a[j], b[j]
    at = f"row {i + 1}"
    where = f"{at}, column {column!r}" if column else f"{at}, {position}" if position else at
    return False, (
        f"{len(bad)} of {len(mine)} rows/elements differ{order}; first at {where}: "
        f"{_show(a)} != solution {_show(b)} {tol}"
    ), Part("values", False, "differ", _show(a), _show(b), at=at, column=column,
            position=position, counts=(("differ", len(bad)), ("of", len(mine))))


def _summaries(
    st: VariableSummary, so: VariableSummary, rtol: float, atol: float
) -> Compared:
    how = "compared summary statistics (values too large to compare cell by cell)"
    if not so.summary and not st.summary:
        return False, "cannot compare values: too large and no numeric columns to summarise", \
            Part("values", False, "uncomparable")
    missing = sorted(set(so.summary) - set(st.summary))
    if missing:
        return False, f"{how}: the student's variable lacks {missing}", Part(
            "values", False, "summary_missing", missing=tuple(missing))
    bad = [k for k in so.summary if not _close(st.summary[k], so.summary[k], rtol, atol)]
    if bad:
        k = bad[0]
        column, _, stat = k.rpartition(":")
        return False, (
            f"{how}: {len(bad)} of {len(so.summary)} differ; {k} {st.summary[k]:g} "
            f"!= solution {so.summary[k]:g}"
        ), Part("values", False, "summary", f"{st.summary[k]:g}", f"{so.summary[k]:g}",
                column=column, stat=stat,
                counts=(("differ", len(bad)), ("of", len(so.summary))))
    return True, f"{how}: all {len(so.summary)} match the solution", Part("values", True)
