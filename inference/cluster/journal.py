"""The cluster's journal: what happened to the servers, kept in SQLite beside the
request history, so that another process sees it (the app's Dashboard after a CLI
batch, or after a restart).

Three tables in the engine's ``history_db`` (the grade store's file by default):
``cluster_events`` (the health monitor's events: state and circuit changes, failovers,
canary results, KV errors), ``cluster_links`` (every KV transfer the link table
measured: bytes and seconds) and ``cluster_decisions`` (each routing decision: the
option chosen with its predicted seconds and parts, the options it was chosen over,
and, once the request is done, the seconds it really took).

Writes come from the hooks of the health monitor, the link table and the cost model, on
the threads that probe servers and serve requests. They are queued and written by one
background thread, so a slow or locked file never holds up a request; a write that
fails is logged and dropped: the journal never breaks grading. ``flush`` waits for the
queue, ``close`` drains it. Each table keeps its newest rows only (``MAX_ROWS``).

Reads (``events``, ``link_estimates``, ``decisions``, ``since``) go through their own
connection and see what every process wrote; one that fails is logged, returns
nothing and leaves its reason in ``read_error``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import queue
import sqlite3
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .health import HealthEvent
from .measure import LINK_WINDOW, LinkEstimate, LinkTable
from .routing import Decision, RouteOption

__all__ = ["DECISIONS", "EVENTS", "LINKS", "MAX_ROWS", "ClusterJournal"]

log = logging.getLogger(__name__)

EVENTS, LINKS, DECISIONS = "cluster_events", "cluster_links", "cluster_decisions"
MAX_ROWS = {EVENTS: 20_000, LINKS: 5_000, DECISIONS: 10_000}
QUEUE_SIZE = 10_000  # entries waiting for the writer; more are dropped (and counted)
BATCH = 256  # entries written in one transaction
PRUNE_EVERY = 500  # entries written between two prunes
OPEN_DECISIONS = 4096  # decisions whose outcome may still come

_SCHEMA = (
    f"CREATE TABLE IF NOT EXISTS {EVENTS} (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "at REAL NOT NULL, server TEXT NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {EVENTS}_at ON {EVENTS}(at)",
    f"CREATE INDEX IF NOT EXISTS {EVENTS}_server ON {EVENTS}(server, at)",
    f"CREATE TABLE IF NOT EXISTS {LINKS} (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "at REAL NOT NULL, src TEXT NOT NULL, dst TEXT NOT NULL, nbytes REAL NOT NULL, "
    "seconds REAL NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {LINKS}_pair ON {LINKS}(src, dst, id)",
    f"CREATE TABLE IF NOT EXISTS {DECISIONS} (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "key TEXT NOT NULL UNIQUE, at REAL NOT NULL, label TEXT NOT NULL, "
    "predicted_s REAL NOT NULL, actual_s REAL, option TEXT NOT NULL, "
    "alternatives TEXT NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS {DECISIONS}_at ON {DECISIONS}(at)",
)

# Per server state: the events that agree with it (``since`` walks back over them).
_AGREE = {"down": {"down", "circuit_open"}, "up": {"up", "circuit_closed"},
          "degraded": {"degraded", "circuit_half_open"}, "loading": {"loading"}}
_STATEFUL = sorted(set().union(*_AGREE.values()))

Op = tuple[str, tuple[Any, ...]]


def _option_json(o: RouteOption, full: bool = True) -> dict[str, Any]:
    if not full:  # an alternative: what the Dashboard shows of it
        return {"method": o.method, "prefill": o.prefill, "decode": o.decode,
                "predicted_s": o.predicted_s}
    out = dataclasses.asdict(o)
    out["guessed"] = list(o.guessed)
    return out


def _option(data: Mapping[str, Any]) -> RouteOption:
    return RouteOption(
        method=data.get("method", "self"), prefill=data.get("prefill"),
        decode=str(data.get("decode", "")), predicted_s=float(data.get("predicted_s", 0.0)),
        parts={str(k): float(v) for k, v in (data.get("parts") or {}).items()},
        guessed=tuple(data.get("guessed") or ()), explore=bool(data.get("explore", False)),
        reason=str(data.get("reason", "")))


class ClusterJournal:
    """The journal in the SQLite file ``path`` (created on the first write).
    Thread-safe; nothing touches the file before the first write or read."""

    def __init__(self, path: Path | str, max_rows: Mapping[str, int] | None = None,
                 queue_size: int = QUEUE_SIZE) -> None:
        self.path = Path(path)
        self.max_rows = {**MAX_ROWS, **(max_rows or {})}
        self.read_error = ""  # why the last read failed ("" when it did not)
        self.dropped = 0  # entries not written (queue full, or the write failed)
        self._queue: queue.Queue[Op | None] = queue.Queue(queue_size)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._warned = False
        self._open: OrderedDict[int, tuple[RouteOption, str]] = OrderedDict()
        self._prefix = uuid.uuid4().hex[:12]
        self._count = 0
        self._reader: sqlite3.Connection | None = None
        self._read_lock = threading.Lock()

    # -- writing (the hooks) ------------------------------------------------------
    def record_event(self, event: HealthEvent) -> None:
        """A health monitor's event (its ``on_event``)."""
        self._put(("event", (event.at, event.server, event.kind, event.detail)))

    def record_link(self, src: str, dst: str, nbytes: float, seconds: float,
                    at: float) -> None:
        """A KV transfer the link table measured (its ``on_record``)."""
        self._put(("link", (at, src, dst, float(nbytes), float(seconds))))

    def record_decision(self, decision: Decision) -> None:
        """A routing decision (the cost model's ``on_decision``)."""
        with self._lock:
            self._count += 1
            key = f"{self._prefix}-{self._count}"
            self._open[id(decision.option)] = (decision.option, key)
            while len(self._open) > OPEN_DECISIONS:
                self._open.popitem(last=False)
        self._put(("decision", self._decision_row(key, decision)))

    def record_outcome(self, decision: Decision) -> None:
        """What a decision's request took (the cost model's ``on_outcome``)."""
        with self._lock:
            known = self._open.pop(id(decision.option), None)
        if known is not None and known[0] is decision.option:
            self._put(("outcome", (decision.actual_s, known[1])))
        else:  # a decision this journal never saw (or forgot): written whole
            self.record_decision(decision)

    def _decision_row(self, key: str, d: Decision) -> tuple[Any, ...]:
        o = d.option
        return (key, d.at, o.label, o.predicted_s, d.actual_s, json.dumps(_option_json(o)),
                json.dumps([_option_json(a, full=False) for a in d.alternatives]))

    def _put(self, op: Op) -> None:
        with self._lock:
            if self._closed:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="cluster-journal",
                                                daemon=True)
                self._thread.start()
        try:
            self._queue.put_nowait(op)
        except queue.Full:
            self._drop(1, "the writer is behind")

    def _drop(self, n: int, why: str) -> None:
        with self._lock:
            self.dropped += n
            first, self._warned = not self._warned, True
        (log.warning if first else log.debug)(
            "cluster journal %s: %d entries not written (%s); %d in all", self.path, n, why,
            self.dropped)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every entry queued so far is written (or dropped); False when
        ``timeout`` seconds passed first."""
        deadline = time.monotonic() + timeout
        done = self._queue.all_tasks_done
        with done:
            while self._queue.unfinished_tasks:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                done.wait(left)
        return True

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued (for at most ``timeout`` seconds), then stop."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        if thread is not None:
            try:
                self._queue.put(None, timeout=timeout)
            except queue.Full:
                log.warning("cluster journal %s: closed with its queue full", self.path)
            thread.join(timeout)
            if thread.is_alive():
                log.warning("cluster journal %s: entries still queued at close", self.path)
        with self._read_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None

    # -- the writer thread ----------------------------------------------------------
    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        written = 0
        stop = False
        while not stop:
            batch = [self._queue.get()]
            while len(batch) < BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            stop = None in batch
            ops = [op for op in batch if op is not None]
            try:
                if ops:
                    conn = conn or self._connect()
                    with conn:
                        for kind, args in ops:
                            self._apply(conn, kind, args)
                    written += len(ops)
                    if written >= PRUNE_EVERY:
                        self._prune(conn)
                        written = 0
            except (sqlite3.Error, OSError) as exc:  # never into grading: logged, dropped
                self._drop(len(ops), f"{type(exc).__name__}: {exc}")
                if conn is not None:
                    conn.close()
                    conn = None
            except Exception:  # a bug here must not stop the writer (flush would hang)
                log.exception("cluster journal %s: %d entries not written", self.path,
                              len(ops))
                self._drop(len(ops), "a bug in the journal")
            finally:
                for _ in batch:
                    self._queue.task_done()
        if conn is not None:
            conn.close()

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=30)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            with conn:
                for statement in _SCHEMA:
                    conn.execute(statement)
        except sqlite3.Error:
            conn.close()
            raise
        return conn

    @staticmethod
    def _apply(conn: sqlite3.Connection, kind: str, args: tuple[Any, ...]) -> None:
        if kind == "event":
            conn.execute(f"INSERT INTO {EVENTS} (at, server, kind, detail) VALUES (?, ?, ?, ?)",
                         args)
        elif kind == "link":
            conn.execute(f"INSERT INTO {LINKS} (at, src, dst, nbytes, seconds) "
                         "VALUES (?, ?, ?, ?, ?)", args)
        elif kind == "decision":
            conn.execute(f"INSERT OR REPLACE INTO {DECISIONS} (key, at, label, predicted_s, "
                         "actual_s, option, alternatives) VALUES (?, ?, ?, ?, ?, ?, ?)", args)
        elif kind == "outcome":
            conn.execute(f"UPDATE {DECISIONS} SET actual_s = ? WHERE key = ?", args)
        else:
            raise ValueError(f"unknown journal entry {kind!r}")

    def _prune(self, conn: sqlite3.Connection) -> None:
        with conn:
            for table, keep in self.max_rows.items():
                conn.execute(f"DELETE FROM {table} WHERE id <= "
                             f"(SELECT max(id) FROM {table}) - ?", (keep,))

    # -- reading ------------------------------------------------------------------------
    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._read_lock:
            try:
                if self._reader is None:
                    if not self.path.exists():  # nothing written yet: nothing to read
                        return []
                    self._reader = sqlite3.connect(self.path, check_same_thread=False,
                                                   timeout=10)
                rows = self._reader.execute(sql, args).fetchall()
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):  # no process has written one yet
                    return []
                return self._read_failed(exc)
            except sqlite3.Error as exc:
                return self._read_failed(exc)
        self.read_error = ""
        return rows

    def _read_failed(self, exc: sqlite3.Error) -> list[tuple[Any, ...]]:
        self.read_error = f"{type(exc).__name__}: {exc}"
        log.warning("cluster journal %s: could not read: %s", self.path, self.read_error)
        return []

    def events(self, limit: int = 200) -> list[HealthEvent]:
        """The newest ``limit`` events of every process, oldest first."""
        rows = self._read(f"SELECT at, server, kind, detail FROM {EVENTS} "
                          "ORDER BY at DESC, id DESC LIMIT ?", (limit,))
        return [HealthEvent(float(at), server, kind, detail)
                for at, server, kind, detail in reversed(rows)]

    def link_estimates(self) -> dict[tuple[str, str], LinkEstimate]:
        """Per (prefill, decode) pair: the link fitted to its newest transfers, as a
        ``LinkTable`` fits them (``updated_at``: the newest transfer's time)."""
        rows = self._read(
            "SELECT src, dst, at, nbytes, seconds FROM (SELECT *, row_number() OVER "
            f"(PARTITION BY src, dst ORDER BY id DESC) AS n FROM {LINKS}) "
            "WHERE n <= ? AND nbytes > 0 AND seconds > 0 ORDER BY id", (LINK_WINDOW,))
        now = [0.0]
        table = LinkTable(window=LINK_WINDOW, clock=lambda: now[0])
        for src, dst, at, nbytes, seconds in rows:
            now[0] = float(at)
            table.record(src, dst, float(nbytes), float(seconds))
        return table.estimates()

    def decisions(self, limit: int = 200) -> list[Decision]:
        """The newest ``limit`` routing decisions of every process, oldest first."""
        rows = self._read(f"SELECT at, option, alternatives, actual_s FROM {DECISIONS} "
                          "ORDER BY at DESC, id DESC LIMIT ?", (limit,))
        out = []
        for at, option, alternatives, actual in reversed(rows):
            try:
                chosen = _option(json.loads(option))
                others = tuple(_option(a) for a in json.loads(alternatives))
            except (ValueError, TypeError, AttributeError) as exc:
                log.warning("cluster journal %s: a decision of %s is unreadable: %s",
                            self.path, at, exc)
                continue
            out.append(Decision(float(at), chosen, others,
                                None if actual is None else float(actual)))
        return out

    def since(self, server: str, state: str, live_since: float) -> float:
        """Since when ``server`` has been ``state`` as far as anyone recorded: the oldest
        of the newest run of events that agree with that state (a server found down by
        a batch an hour ago and by this process at its start has been down an hour),
        else ``live_since`` (what this process saw)."""
        agree = _AGREE.get(state)
        if agree is None:
            return live_since
        marks = ", ".join("?" for _ in _STATEFUL)
        rows = self._read(f"SELECT at, kind FROM {EVENTS} WHERE server = ? AND kind IN "
                          f"({marks}) ORDER BY at DESC, id DESC LIMIT 500",
                          (server, *_STATEFUL))
        earliest = live_since
        for at, kind in rows:
            if kind not in agree:
                break
            earliest = min(earliest, float(at))
        return earliest
