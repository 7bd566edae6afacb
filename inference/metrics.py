"""Request history: a bounded in-memory ring for the live view, SQLite for the record.

Every request the client serves (failed ones too) is recorded here, so the
dashboard can show history after a restart. The numbers are the ones measured
by the engine (see ``RequestMetrics``); nothing is derived from text length.

Each row also carries ``at``: when the request started, or, for one that failed
before it started (no timestamps of its own), when it was recorded. Time windows
and time series use ``at``, so such failures still show up in "the last hour".
``search``, ``count``, ``distinct`` and ``samples`` take a ``HistoryFilter`` and
run as SQL on the file; without a file (or once closed) they read the ring. TTFT and
total seconds are the caller's, from its first attempt (see ``client`` and ``cluster.pooled``). The
servers' own history (events, KV links, route decisions) is ``cluster.journal``'s,
in the same file.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

from .types import RequestMetrics

log = logging.getLogger(__name__)

TABLE = "inference_requests"
_FIELDS = [f for f in dataclasses.fields(RequestMetrics)]
_SQL_TYPES = {"int": "INTEGER", "float": "REAL"}
_NAMES = [f.name for f in _FIELDS]
_DISTINCT = ("role", "route", "method", "model", "prefill_worker", "decode_worker")
Status = Literal["ok", "error"]


def _sql_type(field: dataclasses.Field[Any]) -> str:
    # With postponed annotations the field types are strings ("int", "float", ...).
    return _SQL_TYPES.get(str(field.type), "TEXT")


def _at(m: RequestMetrics, recorded: float) -> float:
    return m.started_at if m.started_at > 0 else recorded


@dataclass(frozen=True, slots=True)
class HistoryFilter:
    """Which requests to read. ``None`` or ``""`` means "any"; times are epoch seconds
    compared with ``at`` (``since`` inclusive, ``until`` exclusive); ``text`` is looked
    for, case-insensitively, in the request id and the error message; ``server`` is the
    prefill or the decode worker (a remote server's name, or an embedded worker's)."""

    role: str | None = None
    route: str | None = None
    status: Status | None = None
    since: float | None = None
    until: float | None = None
    text: str = ""
    server: str | None = None

    def __post_init__(self) -> None:
        if self.status not in (None, "ok", "error"):
            raise ValueError(f"status {self.status!r} is not one of ok, error (or None)")

    def sql(self) -> tuple[str, list[Any]]:
        """A WHERE clause (``""`` for no condition) and its arguments."""
        where: list[str] = []
        args: list[Any] = []
        for column, value in (("role", self.role), ("route", self.route)):
            if value:
                where.append(f"{column} = ?")
                args.append(value)
        if self.server:
            where.append("(prefill_worker = ? OR decode_worker = ?)")
            args += [self.server, self.server]
        if self.status is not None:
            where.append("coalesce(error, '') " + ("= ''" if self.status == "ok" else "!= ''"))
        if self.since is not None:
            where.append("at >= ?")
            args.append(self.since)
        if self.until is not None:
            where.append("at < ?")
            args.append(self.until)
        if self.text.strip():
            where.append("(instr(lower(request_id), ?) > 0 OR instr(lower(error), ?) > 0)")
            args += [self.text.strip().lower()] * 2
        return (" WHERE " + " AND ".join(where)) if where else "", args

    def matches(self, at: float, m: RequestMetrics) -> bool:
        """The same test in Python, for the history without a database."""
        text = self.text.strip().lower()
        return ((not self.role or m.role == self.role)
                and (not self.route or m.route == self.route)
                and (not self.server or self.server in (m.prefill_worker, m.decode_worker))
                and (self.status is None or m.ok == (self.status == "ok"))
                and (self.since is None or at >= self.since)
                and (self.until is None or at < self.until)
                and (not text or text in m.request_id.lower() or text in m.error.lower()))


class HistoryEntry(NamedTuple):
    at: float
    metrics: RequestMetrics


class Sample(NamedTuple):
    """The measured numbers of one request that charts need, nothing else."""

    at: float
    role: str
    ok: bool
    ttft_seconds: float
    tpot_seconds: float
    prefill_tokens: int
    prefill_seconds: float
    decode_evals: int
    decode_seconds: float

    @classmethod
    def of(cls, at: float, m: RequestMetrics) -> Sample:
        return cls(at, m.role, m.ok, m.ttft_seconds, m.tpot_seconds, m.prefill_tokens,
                   m.prefill_seconds, m.decode_evals, m.decode_seconds)


_SAMPLE_SQL = ("SELECT at, role, coalesce(error, '') = '', ttft_seconds, CASE WHEN "
               "decode_evals > 0 THEN decode_seconds / decode_evals ELSE 0.0 END, "
               f"prefill_tokens, prefill_seconds, decode_evals, decode_seconds FROM {TABLE}")


class MetricsHistory:
    def __init__(self, db_path: Path | None = None, maxlen: int = 10_000) -> None:
        self.db_path = db_path
        self._ring: deque[HistoryEntry] = deque(maxlen=maxlen)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        # The dashboard's reads go through their own connection (WAL lets it read while
        # the other writes), so a long read never holds up recording a request.
        self._reader: sqlite3.Connection | None = None
        self._read_lock = threading.Lock()
        if db_path is not None:
            db_path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(db_path, check_same_thread=False, timeout=30)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
            self._reader = sqlite3.connect(db_path, check_same_thread=False, timeout=30)
            self._ring.extend(reversed(self.search(limit=maxlen)))

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
            if "at" not in have:  # before ``at``: a row's own times, else unknown (0)
                self._conn.execute(f"ALTER TABLE {TABLE} ADD COLUMN at REAL")
                self._conn.execute(f"UPDATE {TABLE} SET at = coalesce(nullif(started_at, 0), "
                                   "nullif(finished_at, 0), 0)")
            self._conn.execute(
                f"CREATE INDEX IF NOT EXISTS {TABLE}_started ON {TABLE}(started_at)")
            self._conn.execute(f"CREATE INDEX IF NOT EXISTS {TABLE}_at ON {TABLE}(at)")

    def record(self, metrics: RequestMetrics) -> None:
        at = _at(metrics, time.time())
        with self._lock:
            self._ring.append(HistoryEntry(at, metrics))
            if self._conn is None:
                return
            row = {**dataclasses.asdict(metrics), "at": at}
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
            items = [e.metrics for e in self._ring]
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
        return [RequestMetrics.from_dict(dict(zip(_NAMES, r, strict=True))) for r in rows]

    def _rows(self, sql: str, args: Sequence[Any]) -> list[tuple[Any, ...]] | None:
        """The rows of ``sql``, or None when there is no database to ask."""
        with self._read_lock:
            if self._reader is None:
                return None
            return self._reader.execute(sql, args).fetchall()

    def _memory(self, flt: HistoryFilter) -> list[HistoryEntry]:
        """The ring's entries that match, oldest first."""
        with self._lock:
            items = list(self._ring)
        return [e for e in items if flt.matches(e.at, e.metrics)]

    def search(self, flt: HistoryFilter | None = None, limit: int = 1000) -> list[HistoryEntry]:
        """The requests that match ``flt``, newest first, at most ``limit``."""
        flt = flt or HistoryFilter()
        where, args = flt.sql()
        rows = self._rows(f"SELECT at, {', '.join(_NAMES)} FROM {TABLE}{where} "
                          "ORDER BY id DESC LIMIT ?", [*args, limit])
        if rows is None:
            return self._memory(flt)[::-1][:limit]
        return [HistoryEntry(r[0] or 0.0, RequestMetrics.from_dict(
            dict(zip(_NAMES, r[1:], strict=True)))) for r in rows]

    def count(self, flt: HistoryFilter | None = None) -> int:
        """How many requests match ``flt`` (all of them without one)."""
        if flt is None:
            if self._conn is None:
                return len(self._ring)
            flt = HistoryFilter()
        where, args = flt.sql()
        rows = self._rows(f"SELECT COUNT(*) FROM {TABLE}{where}", args)
        return len(self._memory(flt)) if rows is None else int(rows[0][0])

    def distinct(self, column: str) -> list[str]:
        """The values ``column`` (role, route, method, ...) takes, sorted (for filters)."""
        if column not in _DISTINCT:
            raise ValueError(f"cannot list {column!r}; one of {', '.join(_DISTINCT)}")
        rows = self._rows(f"SELECT DISTINCT {column} FROM {TABLE} WHERE {column} != ''", ())
        if rows is None:
            values = {getattr(e.metrics, column) for e in self._memory(HistoryFilter())}
            return sorted(v for v in values if v)
        return sorted(r[0] for r in rows)

    def samples(self, flt: HistoryFilter | None = None) -> list[Sample]:
        """The measured numbers of every matching request, oldest first (``at`` order)."""
        flt = flt or HistoryFilter()
        where, args = flt.sql()
        rows = self._rows(f"{_SAMPLE_SQL}{where} ORDER BY at, id", args)
        if rows is None:
            return sorted((Sample.of(*e) for e in self._memory(flt)), key=lambda s: s.at)
        return [Sample(r[0] or 0.0, r[1], bool(r[2]), *r[3:]) for r in rows]

    def close(self) -> None:
        with self._lock, self._read_lock:
            for conn in (self._conn, self._reader):
                if conn is not None:
                    conn.close()
            self._conn = self._reader = None


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
