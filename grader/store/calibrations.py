"""The grade store's calibrations: how each model route judged graded examples, kept so
that the Dashboard shows the latest per route. A mixin of ``Store``, kept apart so that
``store.py`` stays about grades.

A row is one route of one calibration run: when it ran, the role, the route's name
("code:embedded/smollm2-135m"), the servers and model that served it, what it ran over
("bundled examples: py-levels (2 notebooks)") and its figures as one JSON object
(``grader.service.calibration_figures.RouteCalibration.to_dict``: the store keeps them
without reading them). A calibration changes no grade; nothing here touches ``grades``.
"""

from __future__ import annotations

import json
import math
import sqlite3
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import StoreError
from ..safe_text import scrub

__all__ = ["CalibrationRow", "StoreCalibrationsMixin"]

_SELECT = """SELECT id, created_at, role, route, server, model, examples, fit, figures_json
FROM calibrations"""


@dataclass(frozen=True, slots=True)
class CalibrationRow:
    id: int
    created_at: float
    role: str
    route: str
    server: str
    model: str
    examples: str
    fit: bool
    figures: dict[str, Any]


def _row(r: tuple) -> CalibrationRow:
    return CalibrationRow(int(r[0]), float(r[1]), r[2], r[3], r[4], r[5], r[6], bool(r[7]),
                          json.loads(r[8]))


class _Tx(Protocol):
    def _tx(self, what: str, write: bool = True
            ) -> AbstractContextManager[sqlite3.Connection]: ...


class StoreCalibrationsMixin:
    """Calibrations of the model routes; mixed into ``Store``."""

    def add_calibration(self: _Tx, created_at: float, role: str, route: str, server: str,
                        model: str, examples: str, fit: bool, figures: dict[str, Any]) -> int:
        """Keep one route's calibration; returns its id."""
        if not route.strip() or not math.isfinite(created_at):
            raise StoreError(f"a calibration needs a route and a time (got {route!r}, "
                             f"{created_at!r})")
        try:
            text = json.dumps(figures, allow_nan=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise StoreError(f"the calibration of {route} cannot be stored: {exc}") from exc
        with self._tx(f"save the calibration of {route}") as c:
            (row_id,) = c.execute(
                "INSERT INTO calibrations (created_at, role, route, server, model, examples, "
                "fit, figures_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (created_at, scrub(role), scrub(route), scrub(server), scrub(model),
                 scrub(examples), int(fit), scrub(text))).fetchone()
        return int(row_id)

    def latest_calibrations(self: _Tx) -> list[CalibrationRow]:
        """The newest calibration of each route, newest first."""
        with self._tx("read the calibrations", write=False) as c:
            rows = c.execute(f"{_SELECT} c WHERE id = (SELECT id FROM calibrations d WHERE "
                             "d.route = c.route ORDER BY d.created_at DESC, d.id DESC LIMIT 1) "
                             "ORDER BY created_at DESC, id DESC").fetchall()
        return [_row(r) for r in rows]

    def calibrations(self: _Tx, route: str | None = None, limit: int = 50
                     ) -> list[CalibrationRow]:
        """The calibrations kept (of ``route``, when given), newest first."""
        where, args = ("WHERE route = ?", (route, limit)) if route else ("", (limit,))
        with self._tx("read the calibrations", write=False) as c:
            rows = c.execute(f"{_SELECT} {where} ORDER BY created_at DESC, id DESC LIMIT ?",
                             args).fetchall()
        return [_row(r) for r in rows]
