"""Client-side health of remote servers: a prober, one circuit breaker per server,
passive health from real requests, and a bounded event log for the dashboard.

States: ``up`` (probe ok, breaker closed); ``degraded`` (usable with a caveat: the
canary marked it, or its breaker is half-open and lets one trial at a time);
``loading`` (answers, model not ready); ``down`` (breaker open after failed probes or
requests or one decisive failure such as a refused connection; or never probed).

A probe whose connection is refused opens the breaker at once, as a refused request
does; so does one whose connection broke while a fresh one is refused (a killed server,
``http_errors.gone``): whatever the load, a dead server is known from its port. A slow
probe is not a dead server: a probe that timed out (``Probe.slow``) is recorded but not
counted while it is the first of a run; each further slow probe in a row counts as one
failure, so a server that stops answering is still opened after ``failures + 1`` slow
probes, and a busy machine's one late answer opens nothing. A successful probe of a
down server moves its breaker to half-open; a real request that succeeds, or the next
successful probe, closes it. Without probes an open breaker lets one trial through
after ``reset_seconds``. Servers start ``down`` ("not probed yet"): call ``probe_all()``
at start-up.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from ..endpoint import Endpoint, Probe, ServerStatus, Transport
from ..errors import ConfigError
from .breaker import BreakerSettings, CircuitBreaker, CircuitState

log = logging.getLogger(__name__)

HealthState = Literal["up", "degraded", "down", "loading"]
Clock = Callable[[], float]
EventCallback = Callable[["HealthEvent"], None]

DEFAULT_INTERVAL_S = 2.0
EVENT_RING_SIZE = 1000
LATENCY_EWMA_ALPHA = 0.2
MAX_PROBE_THREADS = 32


@dataclass(frozen=True, slots=True)
class ServerState:
    """A snapshot of one server's health. Times are epoch seconds."""

    endpoint: Endpoint
    state: HealthState
    circuit: CircuitState
    last_probe: Probe | None
    probe_latency_s: float | None
    last_error: str
    last_error_at: float | None
    since: float
    outstanding: int
    requests: int
    errors: int
    status: ServerStatus | None
    degraded_reason: str
    request_latency_s: float | None = None  # EWMA of successful real requests
    pending_s: float = 0.0  # predicted seconds of this client's work in flight there
    # this client's requests there when ``status`` was read: its queue_depth counted them
    status_outstanding: int = 0

    @property
    def name(self) -> str:
        return self.endpoint.name


@dataclass(frozen=True, slots=True)
class HealthEvent:
    """Something that happened to a server (or a pair: callers choose ``server``).

    Kinds set here: up, degraded, loading, down, circuit_open, circuit_half_open,
    circuit_closed. Callers add their own (failover, canary_ok, canary_fail, route).
    """

    at: float
    server: str
    kind: str
    detail: str = ""


@dataclass(slots=True)
class _Entry:
    """Mutable per-server record; only touched under the monitor's lock."""

    transport: Transport
    breaker: CircuitBreaker
    since: float
    base: Literal["up", "loading", "down"] = "down"  # what probes and requests said
    state: HealthState = "down"
    circuit: CircuitState = "closed"
    last_probe: Probe | None = None
    status: ServerStatus | None = None
    last_error: str = "not probed yet"
    last_error_at: float | None = None
    outstanding: int = 0
    status_outstanding: int = 0
    pending_s: float = 0.0
    requests: int = 0
    errors: int = 0
    degraded_reason: str = ""
    latency_s: float | None = None
    probing: bool = False
    slow_run: int = 0  # probes in a row that timed out

    def derive(self) -> HealthState:
        if self.base == "loading":
            return "loading"
        if self.base == "down" or self.breaker.state == "open":
            return "down"
        if self.degraded_reason or self.breaker.state == "half_open":
            return "degraded"
        return "up"


class HealthMonitor:
    """Watches a set of servers. Thread-safe; ``on_event`` is called outside the lock
    (an exception there is logged, never propagated into the prober)."""

    def __init__(self, transports: Mapping[str, Transport], interval: float = DEFAULT_INTERVAL_S,
                 breaker: BreakerSettings | None = None, clock: Clock = time.monotonic,
                 on_event: EventCallback | None = None, event_ring: int = EVENT_RING_SIZE) -> None:
        if not interval > 0:
            raise ConfigError(f"health probe interval must be > 0 seconds, not {interval!r}")
        self.interval = interval
        self.breaker_settings = breaker or BreakerSettings()
        self.on_event = on_event
        self._lock = threading.Lock()
        now = time.time()
        self._entries = {name: _Entry(t, CircuitBreaker(self.breaker_settings, clock), since=now)
                         for name, t in transports.items()}
        self._events: deque[HealthEvent] = deque(maxlen=event_ring)
        self._pool: ThreadPoolExecutor | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._probed_at: float | None = None  # when probe_all last finished

    @property
    def names(self) -> list[str]:
        return list(self._entries)

    def start(self) -> None:
        """Probe every server every ``interval`` seconds in a daemon thread."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="health-monitor", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the prober; probes still in flight finish in the background."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def probe_all(self, timeout: float | None = None) -> dict[str, ServerState]:
        """One round, in parallel; returns when every probe answered (or ``timeout``).
        A server whose previous probe is still in flight is not probed again."""
        wait(self._submit_round(), timeout)
        self._probed_at = time.monotonic()
        return self.snapshots()

    def _run(self) -> None:
        if self._probed_at is not None:  # a synchronous round has just run: wait
            self._stop.wait(max(0.0, self._probed_at + self.interval - time.monotonic()))
        while not self._stop.is_set():
            self._submit_round()
            self._stop.wait(self.interval)

    def _submit_round(self) -> list[Future[None]]:
        futures: list[Future[None]] = []
        with self._lock:
            if self._pool is None:
                size = max(1, min(MAX_PROBE_THREADS, len(self._entries)))
                self._pool = ThreadPoolExecutor(size, thread_name_prefix="health-probe")
            for name, entry in self._entries.items():
                if entry.probing:  # a hanging server holds one thread, not the round
                    continue
                entry.probing = True
                future = self._pool.submit(self._probe_one, name, entry)
                future.add_done_callback(lambda f, e=entry: self._probe_done(f, e))
                futures.append(future)
        return futures

    def _probe_one(self, name: str, entry: _Entry) -> None:
        started = time.perf_counter()
        try:
            probe = entry.transport.probe()
        except Exception as exc:  # the interface says probe() never raises; record it
            log.warning("probe of %s raised %s", name, exc, exc_info=exc)
            probe = Probe(ok=False, latency_s=time.perf_counter() - started,
                          error=f"probe raised {type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                entry.probing = False
        self._apply_probe(name, entry, probe)

    def _probe_done(self, future: Future[None], entry: _Entry) -> None:
        if future.cancelled():  # stop() dropped it before it ran
            with self._lock:
                entry.probing = False
        elif (exc := future.exception()) is not None:
            log.error("health probe task crashed", exc_info=exc)

    def _apply_probe(self, name: str, entry: _Entry, probe: Probe) -> None:
        with self._lock:
            entry.last_probe = probe
            if probe.status is not None:
                entry.status = probe.status
                entry.status_outstanding = entry.outstanding
            entry.slow_run = entry.slow_run + 1 if probe.slow and not probe.ok else 0
            if probe.ok:
                entry.base = "up"
                if entry.breaker.state == "open":
                    entry.breaker.half_open()
                else:
                    entry.breaker.record_success()
                detail = f"probe ok in {probe.latency_s * 1000:.0f} ms"
            elif probe.loading:
                entry.base = "loading"
                detail = "the server is loading its model"
            else:
                if entry.base == "loading":
                    entry.base = "down"
                entry.last_error = probe.error or "probe failed"
                entry.last_error_at = probe.at
                if entry.slow_run == 1 and not probe.refused:  # slow, not dead (module doc)
                    detail = f"probe slow, not counted: {entry.last_error}"
                else:
                    entry.breaker.record_failure(decisive=probe.refused)
                    detail = (f"probe failed ({entry.breaker.consecutive_failures} in a row"
                              f"{', decisive' if probe.refused else ''}): {entry.last_error}")
            events = self._settle(name, entry, detail)
        self._emit(events)

    def usable(self, name: str, claim: bool = True) -> bool:
        """Up or degraded, and the breaker allows a request now. With ``claim`` (the
        default) a half-open breaker's one trial is taken by this call."""
        with self._lock:
            entry = self._entry(name)
            if entry.base != "up":
                return False
            ok = entry.breaker.allow(claim)
            events = self._settle(name, entry, "trial request allowed")
        self._emit(events)
        return ok

    def report_success(self, name: str, latency_s: float) -> None:
        """A real request succeeded: closes the breaker; a real answer beats a stale probe."""
        with self._lock:
            entry = self._entry(name)
            entry.requests += 1
            entry.latency_s = latency_s if entry.latency_s is None else (
                (1 - LATENCY_EWMA_ALPHA) * entry.latency_s + LATENCY_EWMA_ALPHA * latency_s)
            entry.base = "up"
            entry.slow_run = 0
            entry.breaker.record_success()
            events = self._settle(name, entry, f"request ok in {latency_s:.2f} s")
        self._emit(events)

    def report_failure(self, name: str, error: str, decisive: bool = False) -> None:
        """A real request failed. ``decisive`` (refused, reset, unreachable): the server
        is down and its breaker open at once, so the very next request avoids it."""
        with self._lock:
            entry = self._entry(name)
            entry.requests += 1
            entry.errors += 1
            entry.last_error, entry.last_error_at = error, time.time()
            entry.breaker.record_failure(decisive)
            events = self._settle(
                name, entry, f"request failed{' (decisive)' if decisive else ''}: {error}")
        self._emit(events)

    @contextmanager
    def track(self, name: str, work_s: float = 0.0) -> Iterator[None]:
        """Count one outstanding request on ``name`` for the duration of the block, and
        ``work_s``: the seconds of work the router predicted it gives ``name``."""
        with self._lock:
            entry = self._entry(name)
            entry.outstanding += 1
            entry.pending_s += work_s
        try:
            yield
        finally:
            with self._lock:
                entry = self._entries[name]
                entry.outstanding -= 1
                entry.pending_s = max(0.0, entry.pending_s - work_s)

    def mark_degraded(self, name: str, reason: str) -> None:
        self._set_degraded(name, reason or "marked degraded")

    def clear_degraded(self, name: str) -> None:
        self._set_degraded(name, "")

    def _set_degraded(self, name: str, reason: str) -> None:
        with self._lock:
            entry = self._entry(name)
            entry.degraded_reason = reason
            events = self._settle(name, entry, reason or "degraded mark cleared")
        self._emit(events)

    def snapshot(self, name: str) -> ServerState:
        with self._lock:
            return self._snapshot(self._entry(name))

    def snapshots(self) -> dict[str, ServerState]:
        with self._lock:
            return {name: self._snapshot(e) for name, e in self._entries.items()}

    def record_event(self, server: str, kind: str, detail: str = "") -> HealthEvent:
        event = HealthEvent(at=time.time(), server=server, kind=kind, detail=detail)
        with self._lock:
            self._events.append(event)
        self._emit([event])
        return event

    def events(self, limit: int = 200) -> list[HealthEvent]:
        """The newest ``limit`` events, oldest first."""
        with self._lock:
            items = list(self._events)
        return items[-limit:] if limit > 0 else []

    def _entry(self, name: str) -> _Entry:
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"unknown server {name!r}: known servers are "
                           f"{', '.join(self._entries) or '(none)'}") from None

    def _settle(self, name: str, entry: _Entry, detail: str) -> list[HealthEvent]:
        """After a change (under the lock): record circuit and state transitions."""
        now = time.time()
        events: list[HealthEvent] = []
        circuit = entry.breaker.state
        if circuit != entry.circuit:
            log.info("server %s: circuit %s -> %s (%s)", name, entry.circuit, circuit, detail)
            entry.circuit = circuit
            events.append(HealthEvent(now, name, f"circuit_{circuit}", detail))
        state = entry.derive()
        if state != entry.state:
            shown = (state == "degraded" and entry.degraded_reason) or detail
            log.info("server %s: %s -> %s (%s)", name, entry.state, state, shown)
            entry.state, entry.since = state, now
            events.append(HealthEvent(now, name, state, shown))
        self._events.extend(events)
        return events

    def _emit(self, events: list[HealthEvent]) -> None:
        callback = self.on_event
        if callback is None:
            return
        for event in events:
            try:
                callback(event)
            except Exception:  # a dashboard hook must not break health tracking
                log.exception("health on_event callback failed for %s", event)

    @staticmethod
    def _snapshot(entry: _Entry) -> ServerState:
        probe = entry.last_probe
        return ServerState(
            endpoint=entry.transport.endpoint, state=entry.state, circuit=entry.circuit,
            last_probe=probe, probe_latency_s=probe.latency_s if probe else None,
            last_error=entry.last_error, last_error_at=entry.last_error_at, since=entry.since,
            outstanding=entry.outstanding, requests=entry.requests, errors=entry.errors,
            status=entry.status, degraded_reason=entry.degraded_reason,
            request_latency_s=entry.latency_s, pending_s=entry.pending_s,
            status_outstanding=entry.status_outstanding)

