"""Request history: a bounded in-memory ring for the live view, SQLite for the record.

Every request the client serves (failed ones too) is recorded here, so the
dashboard can show history after a restart. The numbers are the ones measured
by the engine (see ``RequestMetrics``); nothing is derived from text length.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import sqlite3
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .types import RequestMetrics

log = logging.getLogger(__name__)

TABLE = "inference_requests"
_FIELDS = [f for f in dataclasses.fields(RequestMetrics)]
_SQL_TYPES = {"int": "INTEGER", "float": "REAL"}


def _sql_type(field: dataclasses.Field[Any]) -> str:
    # With postponed annotations the field types are strings ("int", "float", ...).
    return _SQL_TYPES.get(str(field.type), "TEXT")


class MetricsHistory:
    def __init__(self, db_path: Path | None = None, maxlen: int = 10_000) -> None:
        self.db_path = db_path
        self._ring: deque[RequestMetrics] = deque(maxlen=maxlen)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        if db_path is not None:
            db_path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(db_path, check_same_thread=False, timeout=30)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
            self._ring.extend(reversed(self.query(limit=maxlen)))

    def _migrate(self) -> None:
        """Create the table, or add the columns a newer RequestMetrics has."""
        assert self._conn is not None
        cols = ", ".join(f"{f.name} {_sql_type(f)}" for f in _FIELDS)
        with self._conn:
            self._conn.execute(f"CREATE TABLE IF NOT EXISTS {TABLE} "
                               f"(id INTEGER PRIMARY KEY AUTOINCREMENT, {cols})")
            have = {row[1] for row in self._conn.execute(f"PRAGMA table_info({TABLE})")}
            for f in _FIELDS:
                if f.name not in have:
                    self._conn.execute(f"ALTER TABLE {TABLE} ADD COLUMN {f.name} {_sql_type(f)}")
            self._conn.execute(
                f"CREATE INDEX IF NOT EXISTS {TABLE}_started ON {TABLE}(started_at)")

    def record(self, metrics: RequestMetrics) -> None:
        with self._lock:
            self._ring.append(metrics)
            if self._conn is None:
                return
            row = dataclasses.asdict(metrics)
            names = ", ".join(row)
            marks = ", ".join("?" for _ in row)
            try:
                with self._conn:
                    self._conn.execute(f"INSERT INTO {TABLE} ({names}) VALUES ({marks})",
                                       list(row.values()))
            except sqlite3.Error:
                log.exception("could not write request %s to %s", metrics.request_id,
                              self.db_path)
                raise

    def recent(self, n: int | None = None) -> list[RequestMetrics]:
        """Newest last, from memory."""
        with self._lock:
            items = list(self._ring)
        return items if n is None else items[-n:]

    def query(self, limit: int = 1000, role: str | None = None,
              since: float | None = None) -> list[RequestMetrics]:
        """Newest first, from SQLite (or memory when there is no database)."""
        if self._conn is None:
            items = [m for m in reversed(self.recent())
                     if (role is None or m.role == role)
                     and (since is None or m.started_at >= since)]
            return items[:limit]
        where, args = [], []
        if role is not None:
            where.append("role = ?")
            args.append(role)
        if since is not None:
            where.append("started_at >= ?")
            args.append(since)
        sql = f"SELECT {', '.join(f.name for f in _FIELDS)} FROM {TABLE}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC LIMIT ?"
        args.append(limit)
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        names = [f.name for f in _FIELDS]
        return [RequestMetrics.from_dict(dict(zip(names, r, strict=True))) for r in rows]

    def count(self) -> int:
        if self._conn is None:
            return len(self._ring)
        with self._lock:
            return int(self._conn.execute(f"SELECT COUNT(*) FROM {TABLE}").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in [0, 100]); NaN for no values."""
    if not values:
        return math.nan
    xs = sorted(values)
    k = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def summarize(items: Iterable[RequestMetrics]) -> dict[str, float]:
    """p50/p95 of TTFT and TPOT and medians of the speeds, over successful requests."""
    ok = [m for m in items if m.ok]
    ttft = [m.ttft_seconds for m in ok if m.ttft_seconds > 0]
    tpot = [m.tpot_seconds for m in ok if m.tpot_seconds > 0]
    pre = [m.prefill_tps for m in ok if m.prefill_tps > 0]
    dec = [m.decode_tps for m in ok if m.decode_tps > 0]
    return {
        "requests": float(len(ok)),
        "ttft_p50": percentile(ttft, 50), "ttft_p95": percentile(ttft, 95),
        "tpot_p50": percentile(tpot, 50), "tpot_p95": percentile(tpot, 95),
        "prefill_tps_p50": percentile(pre, 50), "decode_tps_p50": percentile(dec, 50),
        "cached_share": (sum(m.cached_tokens for m in ok) / total
                         if (total := sum(m.prompt_tokens for m in ok)) else 0.0),
    }
