"""Inspecting student code: what the verifier saw of variables, and paths in the source.

``VariableSummary`` is one variable's summary as the runner's verifier computed it from
the data the kernel exported (``grader.sandbox.pysummary`` for Python, ``rverify.R`` for
R; ``grader.sandbox.bridge``), and ``read_summaries`` reads the runner's list of them. A
name that starts with ``=`` is an instructor's expression (``value`` checks:
``=nrow(sales_clean)``), evaluated by the verifier with the language's own functions
over the student's values; one that fails gives ``exists`` false and the error it raised.

Conventions shared by both languages, so that summaries compare:
- frames: ``values`` is a list of rows (cells JSON-safe; missing values are null),
  ``head`` the first rows; ``summary`` holds ``"<column>:sum|mean|min|max"`` for
  numeric and logical columns, non-missing values only, finite results only;
- a pandas index of labels (not integers) becomes the leading cell(s) of each row,
  so ``groupby(...).sum()`` and ``groupby(..., as_index=False).sum()`` compare equal;
  R row names are ignored;
- vectors, Series and arrays: ``values`` is a list (``summary`` keys ``sum``, ...);
  a length-1 R vector and a Python scalar give a scalar;
- ``values`` is null when there are more than 20,000 cells (``pysummary.MAX_CELLS``).

``string_literals`` and ``chdir_targets`` scan source text (Python or R, no parsing, so
broken cells and magics are fine) for the paths the execution layer maps data to.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

_BODY = r"""(?P<q>["'])(?P<body>(?:\\.|(?!(?P=q))[^\\\n])*)(?P=q)"""
_STRING = re.compile(r"(?P<raw>\b[rR])?" + _BODY)
_CHDIR = re.compile(r"(?:\bsetwd|\bchdir)\s*\(\s*(?P<raw>[rR])?" + _BODY)
_CD_MAGIC = re.compile(r"^\s*%cd\s+(?P<q>[\"']?)(?P<body>[^\"'\n]+)(?P=q)\s*$", re.MULTILINE)

EXPRESSION = "="  # the prefix of an expression among the names to inspect


def expression_key(expression: str) -> str:
    """The name under which an expression's value is inspected and reported."""
    return EXPRESSION + expression.strip()


@dataclass(frozen=True)
class VariableSummary:
    """What the inspection cell saw of one variable in the kernel's namespace."""

    name: str
    exists: bool
    type: str = ""  # DataFrame, Series, ndarray, int, float, str, list, dict; data.frame, ...
    shape: tuple[int, ...] | None = None
    columns: tuple[str, ...] | None = None
    dtypes: tuple[str, ...] | None = None
    values: Any = None  # JSON-safe full values; None when too big
    head: Any = None  # first rows / elements, JSON-safe
    summary: dict[str, float] = field(default_factory=dict)  # "<col>:sum" ... for big frames
    error: str = ""  # inspection failure message

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> VariableSummary:
        def strings(value: Any) -> tuple[str, ...] | None:
            return None if value is None else tuple(str(v) for v in value)

        summary = data.get("summary")
        return cls(
            name=str(data.get("name", "")),
            exists=bool(data.get("exists", False)),
            type=str(data.get("type", "")),
            shape=None if data.get("shape") is None else tuple(int(n) for n in data["shape"]),
            columns=strings(data.get("columns")),
            dtypes=strings(data.get("dtypes")),
            values=data.get("values"),
            head=data.get("head"),
            summary={str(k): float(v) for k, v in summary.items() if isinstance(v, (int, float))}
            if isinstance(summary, dict)
            else {},
            error=str(data.get("error", "")),
        )

    @property
    def rows(self) -> int | None:
        return self.shape[0] if self.shape else None



def missing(names: Sequence[str], why: str) -> dict[str, VariableSummary]:
    """Summaries for variables that were not inspected, saying why."""
    return {n: VariableSummary(name=n, exists=False, error=why) for n in names}


def read_summaries(values: Any, names: Sequence[str], error: str = ""
                   ) -> dict[str, VariableSummary]:
    """One summary per name from what the runner's verifier computed (``values``: a list
    of ``VariableSummary`` JSON objects; ``error``: why there are none)."""
    if not isinstance(values, list) or (not values and names):
        return missing(names, "not inspected: " + (error or "no summary came back"))
    try:
        found = {d["name"]: VariableSummary.from_json(d) for d in values}
    except (ValueError, KeyError, TypeError) as exc:
        return missing(names, f"not inspected: unreadable summary ({exc})")
    return {n: found.get(n) or VariableSummary(n, False, error="not inspected") for n in names}


def _bodies(pattern: re.Pattern[str], source: str) -> list[str]:
    return [m.group("body") if m.groupdict().get("raw") else re.sub(r"\\(.)", r"\1", m["body"])
            for m in pattern.finditer(source)]


def string_literals(source: str) -> list[str]:
    """The single-line string literals of Python or R source, escapes undone."""
    return _bodies(_STRING, source)


def chdir_targets(source: str) -> list[str]:
    """Folders named in ``setwd("...")``, ``os.chdir("...")`` and ``%cd ...``."""
    return _bodies(_CHDIR, source) + [m["body"] for m in _CD_MAGIC.finditer(source)]
