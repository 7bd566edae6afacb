"""Circuit breaker and health monitor, with transports that subclass the real
`Transport` and answer probes as scripted (no network)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from inference.cluster.health import (
    BreakerSettings,
    CircuitBreaker,
    HealthEvent,
    HealthMonitor,
)
from inference.endpoint import Endpoint, Probe, ServerStatus, Timeouts, Transport
from inference.errors import BackendUnavailable, ConfigError
from inference.types import GenerationRequest, GenerationResult


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class ScriptedTransport(Transport):
    """Probes answer per ``mode``: ok, fail, refused, slow (timed out), loading, hang
    (until ``release``), raise."""

    def __init__(self, name: str, mode: str = "ok") -> None:
        super().__init__(Endpoint(name, f"http://{name}.invalid:8090"), Timeouts())
        self.mode = mode
        self.release = threading.Event()
        self.calls = 0

    def probe(self) -> Probe:
        self.calls += 1
        if self.mode == "hang":
            self.release.wait(30)
            return Probe(ok=False, latency_s=30.0, error="timed out")
        if self.mode == "raise":
            raise RuntimeError("transport bug")
        if self.mode == "loading":
            return Probe(ok=False, latency_s=0.001, loading=True, error="loading")
        if self.mode == "fail":
            return Probe(ok=False, latency_s=0.001, error="connection refused")
        if self.mode in ("refused", "slow"):
            return Probe(ok=False, latency_s=2.0, error=f"{self.mode}",
                         refused=self.mode == "refused", slow=self.mode == "slow")
        return Probe(ok=True, latency_s=0.001, status=ServerStatus(model="m", decode_tps=80.0))

    def generate(self, request: GenerationRequest, on_token: object = None) -> GenerationResult:
        raise BackendUnavailable("a scripted transport serves no requests")


@pytest.fixture
def servers() -> Iterator[dict[str, ScriptedTransport]]:
    transports = {name: ScriptedTransport(name) for name in ("a", "b")}
    try:
        yield transports
    finally:
        for t in transports.values():
            t.release.set()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def monitor(servers: dict[str, ScriptedTransport], clock: FakeClock) -> Iterator[HealthMonitor]:
    mon = HealthMonitor(servers, interval=0.05, clock=clock)
    try:
        yield mon
    finally:
        mon.stop()


# ---- the breaker -----------------------------------------------------------------

def test_breaker_opens_after_threshold_and_recovers_through_half_open(clock: FakeClock) -> None:
    breaker = CircuitBreaker(BreakerSettings(failures=3, reset_seconds=10), clock)
    breaker.record_failure()
    breaker.record_failure()
    assert (breaker.state, breaker.consecutive_failures, breaker.allow()) == ("closed", 2, True)
    breaker.record_failure()
    assert breaker.state == "open"
    assert breaker.opened_at == clock.now
    clock.now += 9.9
    assert not breaker.allow()
    clock.now += 0.1
    assert breaker.allow(claim=False)
    assert breaker.state == "open"  # a look claims nothing
    assert breaker.allow()
    assert breaker.state == "half_open"
    assert not breaker.allow()  # one trial at a time
    breaker.record_success()
    assert (breaker.state, breaker.consecutive_failures, breaker.opened_at) == ("closed", 0, None)


def test_breaker_half_open_failure_reopens_and_restarts_the_wait(clock: FakeClock) -> None:
    breaker = CircuitBreaker(BreakerSettings(failures=1, reset_seconds=5), clock)
    breaker.record_failure()
    clock.now += 5
    assert breaker.allow()
    breaker.record_failure()
    assert breaker.state == "open"
    assert breaker.opened_at == clock.now
    clock.now += 4
    assert not breaker.allow()


def test_breaker_decisive_failure_opens_at_once(clock: FakeClock) -> None:
    breaker = CircuitBreaker(BreakerSettings(failures=5), clock)
    breaker.record_failure(decisive=True)
    assert breaker.state == "open"
    assert not breaker.allow()


def test_breaker_gives_up_a_trial_that_never_reports(clock: FakeClock) -> None:
    breaker = CircuitBreaker(BreakerSettings(failures=1, reset_seconds=10), clock)
    breaker.record_failure()
    breaker.half_open()
    assert breaker.allow()
    assert not breaker.allow()
    clock.now += 10
    assert breaker.allow()


@pytest.mark.parametrize(("failures", "reset"), [(0, 10.0), (True, 10.0), (3, 0.0), (2.5, 1.0)])
def test_breaker_settings_are_validated(failures: object, reset: float) -> None:
    with pytest.raises(ConfigError, match="breaker"):
        BreakerSettings(failures=failures, reset_seconds=reset)  # type: ignore[arg-type]


# ---- the monitor -----------------------------------------------------------------

def test_servers_are_down_until_probed(monitor: HealthMonitor) -> None:
    state = monitor.snapshot("a")
    assert (state.state, state.last_error, state.last_probe) == ("down", "not probed yet", None)
    assert not monitor.usable("a")


def test_probe_round_marks_servers_up(monitor: HealthMonitor) -> None:
    states = monitor.probe_all()
    assert {n: s.state for n, s in states.items()} == {"a": "up", "b": "up"}
    assert states["a"].status is not None
    assert states["a"].status.decode_tps == 80.0
    assert states["a"].probe_latency_s == 0.001
    assert monitor.usable("a")
    assert monitor.usable("b")
    assert sorted((e.server, e.kind) for e in monitor.events()) == [("a", "up"), ("b", "up")]


def test_failing_server_is_down_in_the_round_that_reaches_the_threshold(
        monitor: HealthMonitor, servers: dict[str, ScriptedTransport]) -> None:
    monitor.probe_all()
    servers["a"].mode = "fail"
    monitor.probe_all()
    monitor.probe_all()
    assert monitor.snapshot("a").state == "up"  # two failures: not yet
    assert monitor.snapshot("a").last_error == "connection refused"
    monitor.probe_all()
    a = monitor.snapshot("a")
    assert (a.state, a.circuit) == ("down", "open")
    assert not monitor.usable("a")
    assert monitor.snapshot("b").state == "up"
    kinds = [e.kind for e in monitor.events() if e.server == "a"]
    assert kinds[-2:] == ["circuit_open", "down"]


def test_a_refused_probe_opens_at_once_and_a_lone_slow_probe_opens_nothing(
        servers: dict[str, ScriptedTransport], clock: FakeClock) -> None:
    mon = HealthMonitor(servers, breaker=BreakerSettings(failures=1), clock=clock)
    try:
        mon.probe_all()
        servers["a"].mode, servers["b"].mode = "refused", "slow"
        mon.probe_all()
        assert [(s.state, s.circuit) for s in mon.snapshots().values()] == \
            [("down", "open"), ("up", "closed")]  # even at failures=1: b is only slow
        assert mon.snapshot("b").last_error == "slow"
        mon.report_success("b", 0.1)  # a real answer ends the run of slow probes
        mon.probe_all()
        assert mon.snapshot("b").state == "up"
        mon.probe_all()  # the second slow probe in a row counts
        assert (mon.snapshot("b").state, mon.snapshot("b").circuit) == ("down", "open")
    finally:
        mon.stop()


def test_decisive_request_failure_marks_down_at_once(monitor: HealthMonitor) -> None:
    monitor.probe_all()
    monitor.report_failure("a", "connection refused", decisive=True)
    a = monitor.snapshot("a")
    assert (a.state, a.circuit, a.errors, a.requests) == ("down", "open", 1, 1)
    assert not monitor.usable("a")
    assert a.last_error == "connection refused"
    assert a.last_error_at is not None


def test_passive_failures_open_the_breaker_after_the_threshold(monitor: HealthMonitor) -> None:
    monitor.probe_all()
    for _ in range(2):
        monitor.report_failure("a", "500 internal")
    assert monitor.usable("a")
    monitor.report_failure("a", "500 internal")
    assert monitor.snapshot("a").state == "down"
    assert not monitor.usable("a")


def test_recovery_goes_through_half_open(
        monitor: HealthMonitor, servers: dict[str, ScriptedTransport]) -> None:
    monitor.probe_all()
    monitor.report_failure("a", "connection refused", decisive=True)
    monitor.probe_all()  # the server answers again
    a = monitor.snapshot("a")
    assert (a.state, a.circuit) == ("degraded", "half_open")
    assert monitor.usable("a")  # the one trial ...
    assert not monitor.usable("a")  # ... and no second one while it runs
    monitor.report_success("a", 0.5)
    a = monitor.snapshot("a")
    assert (a.state, a.circuit, a.request_latency_s) == ("up", "closed", 0.5)
    kinds = [e.kind for e in monitor.events() if e.server == "a"]
    assert kinds == ["up", "circuit_open", "down", "circuit_half_open", "degraded",
                     "circuit_closed", "up"]


def test_the_next_probe_also_closes_a_half_open_breaker(monitor: HealthMonitor) -> None:
    monitor.probe_all()
    monitor.report_failure("a", "reset", decisive=True)
    monitor.probe_all()
    assert monitor.snapshot("a").circuit == "half_open"
    monitor.probe_all()
    assert (monitor.snapshot("a").state, monitor.snapshot("a").circuit) == ("up", "closed")


def test_without_probes_an_open_breaker_allows_a_trial_after_reset(
        servers: dict[str, ScriptedTransport], clock: FakeClock) -> None:
    mon = HealthMonitor(servers, breaker=BreakerSettings(failures=1, reset_seconds=10),
                        clock=clock)
    try:
        mon.probe_all()
        mon.report_failure("a", "500")
        assert not mon.usable("a")
        clock.now += 10
        assert mon.usable("a")
        assert mon.snapshot("a").state == "degraded"
    finally:
        mon.stop()


def test_loading_server_is_not_usable_until_ready(
        monitor: HealthMonitor, servers: dict[str, ScriptedTransport]) -> None:
    servers["a"].mode = "loading"
    monitor.probe_all()
    assert monitor.snapshot("a").state == "loading"
    assert not monitor.usable("a")
    servers["a"].mode = "ok"
    monitor.probe_all()
    assert monitor.snapshot("a").state == "up"


def test_a_loading_server_that_stops_answering_is_down(
        monitor: HealthMonitor, servers: dict[str, ScriptedTransport]) -> None:
    servers["a"].mode = "loading"
    monitor.probe_all()
    servers["a"].mode = "fail"
    monitor.probe_all()
    assert monitor.snapshot("a").state == "down"


def test_a_raising_probe_counts_as_a_failed_probe(
        monitor: HealthMonitor, servers: dict[str, ScriptedTransport]) -> None:
    servers["a"].mode = "raise"
    monitor.probe_all()
    assert "RuntimeError: transport bug" in monitor.snapshot("a").last_error


def test_a_hanging_probe_does_not_delay_the_others(
        monitor: HealthMonitor, servers: dict[str, ScriptedTransport]) -> None:
    servers["a"].mode = "hang"
    started = time.perf_counter()
    states = monitor.probe_all(timeout=0.3)
    assert time.perf_counter() - started < 2
    assert states["b"].state == "up"
    monitor.start()
    deadline = time.monotonic() + 5
    while servers["b"].calls < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert servers["b"].calls >= 5
    assert servers["a"].calls == 1  # still in flight: never stacked up
    servers["a"].release.set()
    deadline = time.monotonic() + 5
    while monitor.snapshot("a").last_probe is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert monitor.snapshot("a").last_error == "timed out"


def test_start_probes_in_the_background(
        monitor: HealthMonitor, servers: dict[str, ScriptedTransport]) -> None:
    monitor.start()
    deadline = time.monotonic() + 5
    while monitor.snapshot("a").state != "up" and time.monotonic() < deadline:
        time.sleep(0.02)
    assert monitor.snapshot("a").state == "up"
    monitor.stop()
    calls = servers["a"].calls
    time.sleep(0.2)
    assert servers["a"].calls == calls


def test_track_counts_outstanding_requests(monitor: HealthMonitor) -> None:
    with monitor.track("a"):
        with monitor.track("a"):
            assert monitor.snapshot("a").outstanding == 2
        assert monitor.snapshot("a").outstanding == 1
    with pytest.raises(ValueError, match="boom"), monitor.track("a"):
        raise ValueError("boom")
    assert monitor.snapshot("a").outstanding == 0
    assert monitor.snapshot("b").outstanding == 0


def test_mark_degraded_keeps_the_server_usable_and_says_why(monitor: HealthMonitor) -> None:
    monitor.probe_all()
    monitor.mark_degraded("a", "canary: output differs from single-server greedy")
    a = monitor.snapshot("a")
    assert (a.state, a.degraded_reason) == ("degraded", "canary: output differs from "
                                                        "single-server greedy")
    assert monitor.usable("a")
    monitor.probe_all()
    assert monitor.snapshot("a").state == "degraded"  # a probe does not clear it
    monitor.clear_degraded("a")
    assert monitor.snapshot("a").state == "up"
    assert [e.kind for e in monitor.events() if e.server == "a"] == ["up", "degraded", "up"]


def test_events_are_a_bounded_ring_and_reach_the_callback(
        servers: dict[str, ScriptedTransport]) -> None:
    seen: list[HealthEvent] = []
    mon = HealthMonitor(servers, event_ring=5, on_event=seen.append)
    try:
        for i in range(8):
            mon.record_event("a->b", "route", f"decision {i}")
        events = mon.events()
        assert [e.detail for e in events] == [f"decision {i}" for i in range(3, 8)]
        assert [e.detail for e in mon.events(limit=2)] == ["decision 6", "decision 7"]
        assert len(seen) == 8
        assert seen[0].kind == "route"
        assert seen[0].server == "a->b"
    finally:
        mon.stop()


def test_a_failing_callback_does_not_break_health_tracking(
        servers: dict[str, ScriptedTransport], caplog: pytest.LogCaptureFixture) -> None:
    def broken(event: HealthEvent) -> None:
        raise RuntimeError("dashboard bug")

    mon = HealthMonitor(servers, on_event=broken)
    try:
        mon.probe_all()
        assert mon.snapshot("a").state == "up"
        assert "on_event callback failed" in caplog.text
    finally:
        mon.stop()


def test_state_changes_are_logged_at_info(
        monitor: HealthMonitor, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="inference.cluster.health")
    monitor.probe_all()
    assert "server a: down -> up" in caplog.text


def test_unknown_server_names_the_known_ones(monitor: HealthMonitor) -> None:
    with pytest.raises(KeyError, match="known servers are a, b"):
        monitor.snapshot("c")


def test_interval_is_validated(servers: dict[str, ScriptedTransport]) -> None:
    with pytest.raises(ConfigError, match="interval"):
        HealthMonitor(servers, interval=0)
