"""The LLM layers' timings per graded notebook, read from the grade store.

Layers L3 and L4 send their requests together (``LLMLayers.run``) and record in
their details the engine-measured seconds of each request (``total_s``), the
wall time of the pair (``parallel_wall_s``) and ``parallel_efficiency``: busy
seconds over wall seconds, 1.0 when the requests ran one after the other and 2.0
when they overlapped fully. Grades without those details (graded without the
LLM layers) are left out.

Busy seconds are the requests' own service time, queue time left out
(``grader.layers.llm`` computes the efficiency so and keeps each layer's queued seconds,
``queue_s``). A grade made before the queued seconds were kept has an efficiency that
counted them as busy: it is shown as unknown (a dash), never as measured.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import plotly.graph_objects as go

from ..store.database import Store
from ..store.db_schema import anonymous_file
from .labels import across

__all__ = ["NotebookLLMStats", "efficiency_figure", "notebook_llm_stats", "stats_rows"]

log = logging.getLogger(__name__)

_KEYS = ("details.total_s", "details.parallel_wall_s", "details.parallel_efficiency", "error",
         "details.route", "details.queue_s")
_PATHS = [f"$.layers.{layer}.{key}" for layer in ("L3", "L4") for key in _KEYS]
# The key as it appears in the JSON text: student text inside the report is escaped,
# so it cannot fake this (a cheap pre-filter before json_extract parses the report).
_MARK = '"parallel_wall_s":'
_SQL = f"""SELECT g.id, a.name, s.assignment_id, s.file, s.pseudonym, g.created_at,
  json_extract(g.report_json, {", ".join(f"'{p}'" for p in _PATHS)})
FROM grades g JOIN submissions s ON s.id = g.submission_id
JOIN assignments a ON a.id = s.assignment_id
WHERE instr(g.report_json, ?) > 0
ORDER BY g.created_at DESC, g.id DESC LIMIT ?"""


@dataclass(frozen=True, slots=True)
class NotebookLLMStats:
    grade_id: int
    assignment: str
    notebook: str  # the submitted file's name; names hidden: the pseudonym's, with its assignment
    graded_at: float  # epoch seconds
    l3_seconds: float | None  # the L3 request's total seconds, as the engine measured it
    l4_seconds: float | None
    wall_seconds: float | None  # both requests, sent together, wall clock
    efficiency: float | None  # busy seconds (queue time excluded) / wall; None: unknown
    routes: str
    errors: str  # the layers' errors, if one failed
    queued_seconds: float | None = None  # the requests' time in a queue; None: unknown

    @property
    def label(self) -> str:
        return f"#{self.grade_id} {self.notebook}"


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def _first(*xs: Any) -> float | None:
    return next((v for x in xs if (v := _num(x)) is not None), None)


@dataclass(frozen=True, slots=True)
class _Layer:
    """One layer's timing details as the report holds them (None: not there)."""

    total: Any
    wall: Any
    eff: Any
    error: Any
    route: Any
    queue: Any


def _queued(layers: Sequence[_Layer]) -> float | None:
    """The queued seconds of every layer that has a total, or None if one is unknown."""
    out = 0.0
    for layer in layers:
        if _num(layer.total) is None:
            continue
        q = _num(layer.queue)
        if q is None:
            return None
        out += q
    return out


def _stats(row: tuple, anonymous: bool) -> NotebookLLMStats | None:
    grade_id, assignment, _, file, pseudonym, created_at, extracted = row
    values = json.loads(extracted)
    l3, l4 = _Layer(*values[:len(_KEYS)]), _Layer(*values[len(_KEYS):])
    wall, eff = _first(l3.wall, l4.wall), _first(l3.eff, l4.eff)
    if wall is None:
        return None
    queued = _queued((l3, l4))
    if queued is None:  # graded before queue time was kept: its figure counted it as busy
        eff = None
    errors = "; ".join(f"{n}: {x.error}" for n, x in (("L3", l3), ("L4", l4)) if x.error)
    routes = ", ".join(dict.fromkeys(x.route for x in (l3, l4) if x.route))
    return NotebookLLMStats(int(grade_id), assignment,
                            across(assignment, anonymous_file(pseudonym or "", file))
                            if anonymous else file,
                            float(created_at), _num(l3.total), _num(l4.total), wall, eff,
                            routes, errors, queued)


def notebook_llm_stats(store: Store, limit: int = 50,
                       anonymous: bool = False) -> list[NotebookLLMStats]:
    """The newest ``limit`` grades that ran the LLM layers, newest first. ``anonymous``
    names each notebook after its submission's pseudonym (assigned if missing, as
    ``Store.list_grades`` does)."""
    rows = store._query(_SQL, (_MARK, limit), "list the LLM layers' timings")
    if anonymous:
        missing = sorted({r[2] for r in rows if r[4] is None})
        for assignment_id in missing:
            store.anonymise(assignment_id)
        if missing:
            rows = store._query(_SQL, (_MARK, limit), "list the LLM layers' timings")
    out = [s for r in rows if (s := _stats(r, anonymous)) is not None]
    log.debug("%d graded notebooks with LLM timings", len(out))
    return out


def _round(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)


def stats_rows(stats: Iterable[NotebookLLMStats]) -> list[dict[str, Any]]:
    return [{
        "grade": s.grade_id, "assignment": s.assignment, "notebook": s.notebook,
        "graded at": datetime.fromtimestamp(s.graded_at).strftime("%Y-%m-%d %H:%M:%S"),
        "L3 (s)": _round(s.l3_seconds), "L4 (s)": _round(s.l4_seconds),
        "wall (s)": _round(s.wall_seconds), "queued (s)": _round(s.queued_seconds),
        "parallel efficiency": _round(s.efficiency, 2),
        "routes": s.routes, "errors": s.errors,
    } for s in stats]


def efficiency_figure(stats: Sequence[NotebookLLMStats]) -> go.Figure:
    """Parallel efficiency per graded notebook, oldest on the left; dotted lines at 1.0
    (one request after the other) and 2.0 (the two fully overlapped). Grades whose
    efficiency is unknown are left out (their row says so)."""
    ordered = [s for s in reversed(stats) if s.efficiency is not None]
    fig = go.Figure(go.Bar(
        x=[s.label for s in ordered], y=[s.efficiency for s in ordered],
        customdata=[[s.l3_seconds, s.l4_seconds, s.wall_seconds] for s in ordered],
        hovertemplate="%{x}<br>efficiency %{y:.2f}<br>L3 %{customdata[0]:.2f} s, "
                      "L4 %{customdata[1]:.2f} s, wall %{customdata[2]:.2f} s<extra></extra>"))
    for y, text in ((1.0, "one after the other"), (2.0, "full overlap")):
        fig.add_hline(y=y, line_dash="dot", line_color="gray", annotation_text=text,
                      annotation_position="top left")
    fig.update_layout(height=320, margin={"t": 30, "b": 20, "l": 10, "r": 10},
                      yaxis={"title": "busy s / wall s", "rangemode": "tozero"},
                      xaxis={"type": "category"})
    return fig
