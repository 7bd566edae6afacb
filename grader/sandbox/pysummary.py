"""Summaries of the student's Python values, computed by the verifier from data.

``summarise(value)`` gives the fields of ``grader.sandbox.inspect_code.VariableSummary``
for a value the kernel exported as data (``datacodec``): frames, series, arrays, scalars
and containers as the inspection always summarised them (see that module's docstring for
the conventions), an opaque object of the student's by its type's name and the ``repr``
the kernel gave for it, and a value too big to travel (``Big``) by its type and shape.
The verifier computes these with its own pandas and numpy: no method of the student's
objects runs here. ``summary_of`` is one name's summary in a value check: a variable's,
or an instructor's expression (``=...``) evaluated in the namespace the verifier built
(``pyverify``), where an object of the notebook's own class answers nothing
(``pyremote.Remote``): its type is named with its class's module, or as the notebook's,
so a class named ``Series`` never passes for pandas' ``Series``.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["Big", "summarise", "summary_of"]

MAX_CELLS = 20_000
HEAD_ROWS = 5


class Big:
    """A value the kernel did not send (too many elements): its type and shape only."""

    def __init__(self, tree: dict[str, Any]):
        self.type = str(tree.get("type", ""))
        self.shape = [int(n) for n in tree.get("shape") or ()]
        self.columns = [str(c) for c in tree["columns"]] if tree.get("columns") else None
        self.dtypes = [str(d) for d in tree["dtypes"]] if tree.get("dtypes") else (
            [str(tree["dtype"])] if tree.get("dtype") else None)

    def __repr__(self) -> str:
        return f"<{self.type} of shape {tuple(self.shape)}, too big to inspect>"


def _safe(v: Any) -> Any:
    np, pd = sys.modules.get("numpy"), sys.modules.get("pandas")
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return None if math.isnan(v) else v
    if np is not None and isinstance(v, np.ndarray):
        return _safe(v.tolist())
    if np is not None and isinstance(v, np.generic):
        return _safe(v.item())
    if isinstance(v, (list, tuple)):
        return [_safe(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _safe(x) for k, x in v.items()}
    if isinstance(v, (set, frozenset)):
        return sorted((_safe(x) for x in v), key=repr)
    if pd is not None:
        try:
            if pd.isna(v):
                return None
        except (TypeError, ValueError):
            pass
    return str(v)


def _stats(values: list[Any], prefix: str) -> dict[str, float]:
    nums = [float(x) for x in values if isinstance(x, (int, float))]  # bools count as 0/1
    nums = [x for x in nums if not math.isnan(x)]
    if not nums:
        return {}
    out = {"sum": math.fsum(nums), "mean": math.fsum(nums) / len(nums),
           "min": min(nums), "max": max(nums)}
    return {prefix + k: x for k, x in out.items() if math.isfinite(x)}


def _labelled(index: Any) -> bool:
    pd = sys.modules["pandas"]
    return not (pd.api.types.is_integer_dtype(index.dtype) and index.nlevels == 1)


def _rows(frame: Any) -> list[list[Any]]:
    if _labelled(frame.index):
        frame = frame.reset_index()
    return [[_safe(x) for x in row] for row in frame.astype(object).itertuples(index=False)]


def _numeric(series: Any) -> bool:
    pd = sys.modules["pandas"]
    return pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(
        series.dtype)


def summarise(x: Any, remote_type: str = "", remote_repr: str = "",
              max_cells: int = MAX_CELLS, head_n: int = HEAD_ROWS) -> dict[str, Any]:
    """The summary of one value (``remote_type``/``remote_repr``: an opaque object's)."""
    np, pd = sys.modules.get("numpy"), sys.modules.get("pandas")
    s: dict[str, Any] = {"type": type(x).__name__, "shape": None, "columns": None,
                         "dtypes": None, "values": None, "head": None, "summary": {}}
    if isinstance(x, Big):
        s.update(type=x.type, shape=x.shape or None, columns=x.columns, dtypes=x.dtypes)
    elif remote_type:
        s.update(type=remote_type, head=remote_repr[:500])
    elif pd is not None and isinstance(x, pd.DataFrame):
        s.update(shape=list(x.shape), columns=[str(c) for c in x.columns],
                 dtypes=[str(t) for t in x.dtypes], head=_rows(x.head(head_n)))
        s["values"] = _rows(x) if x.size <= max_cells else None
        for i, col in enumerate(s["columns"]):
            column = x.iloc[:, i]
            if _numeric(column):
                s["summary"].update(_stats(column.astype(float).tolist(), col + ":"))
    elif pd is not None and isinstance(x, pd.Series):
        s.update(shape=[len(x)], dtypes=[str(x.dtype)])
        frame = x.to_frame()
        if _labelled(x.index):
            s["head"] = _rows(frame.head(head_n))
            s["values"] = _rows(frame) if len(x) <= max_cells else None
        else:
            s["head"] = _safe(x.head(head_n).astype(object).tolist())
            s["values"] = _safe(x.astype(object).tolist()) if len(x) <= max_cells else None
        if _numeric(x):
            s["summary"] = _stats(x.astype(float).tolist(), "")
    elif np is not None and isinstance(x, np.ndarray):
        s.update(shape=list(x.shape), dtypes=[str(x.dtype)], head=_safe(x[:head_n]))
        s["values"] = _safe(x) if x.size <= max_cells else None
        if x.dtype.kind in "biuf":
            s["summary"] = _stats(x.astype(float).ravel().tolist(), "")
    elif isinstance(x, (bool, int, float, str)) or (np is not None and isinstance(x, np.generic)):
        plain = x.item() if np is not None and isinstance(x, np.generic) else x
        s.update(type=type(plain).__name__, values=_safe(plain), head=_safe(plain))
    elif isinstance(x, (list, tuple, set, frozenset, dict)):
        s["shape"] = [len(x)]
        if isinstance(x, dict):
            s["columns"] = [str(k) for k in x]
            s["head"] = _safe(dict(list(x.items())[:head_n]))
        else:
            s["head"] = _safe(list(x)[:head_n])
            s["summary"] = _stats(list(x), "")
        s["values"] = _safe(x) if len(x) <= max_cells else None
    else:
        s["head"] = repr(x)[:500]
    return s


def summary_of(name: str, ns: dict[str, Any], unreadable: dict[str, str],
               passthrough: tuple[type[BaseException], ...], student_error: type[Exception],
               shown: Callable[[Any], tuple[str, str] | None]) -> dict[str, Any]:
    """One name's summary: a variable of ``ns`` or an expression (``=...``) evaluated in
    it. ``passthrough``: the errors that end the whole inspection (the kernel stopped,
    the bridge failed); ``student_error``: an error of the student's code, said as it is;
    ``shown``: a reference's (type, repr), None for data."""
    try:
        if name.startswith("="):
            try:
                value = eval(compile(name[1:], "<expression>", "eval"), dict(ns))
            except passthrough:
                raise
            except Exception as exc:
                return {"name": name, "exists": False, "error": f"{type(exc).__name__}: {exc}"}
        elif name in unreadable:
            return {"name": name, "exists": True, "error": unreadable[name]}
        elif name not in ns:
            return {"name": name, "exists": False}
        else:
            value = ns[name]
        described = shown(value)
        summary = summarise(value) if described is None else summarise(value, *described)
        summary.update(name=name, exists=True)
        json.dumps(summary, default=str)
        return summary
    except passthrough:
        raise
    except student_error as exc:  # the student's object failed when asked (its repr)
        return {"name": name, "exists": True, "error": str(exc)}
    except Exception as exc:
        return {"name": name, "exists": True, "error": f"{type(exc).__name__}: {exc}"}
