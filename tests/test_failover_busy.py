"""Failover that holds on a busy machine (issue 21): a dead server is known from its
refused port at once, a slow probe is not a dead server, and a request in flight on a
killed server moves on as soon as its connection breaks. Real HTTP servers on
127.0.0.1 (``tests.fake_kvserver`` processes, killed with SIGKILL), the real client."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.busy import busy_core
from inference import DisaggregatedClient, GenerationRequest
from inference.cluster.breaker import BreakerSettings
from inference.cluster.health import HealthMonitor
from inference.cluster.http_errors import gone, timed_out
from inference.cluster.kvclient import KVServerTransport
from inference.config import parse_config
from inference.endpoint import Endpoint, Timeouts
from tests.server_procs import free_port

ROOT = Path(__file__).resolve().parents[1]
REQUEST = GenerationRequest.chat("code", "Answer briefly.", "What does a left join keep?",
                                 max_tokens=3, temperature=0.0)


class Fake:
    """One ``tests.fake_kvserver`` process."""

    def __init__(self, role: str, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fake_kvserver", "--role", role, *args], cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        self.proc.stdout.close()
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        if found is None:
            self.kill()
            raise RuntimeError(f"fake kvserver did not start: {line!r}")
        self.url = found.group(1)

    def count(self) -> dict[str, int]:
        return dict(httpx.get(self.url + "/count").json())

    def control(self, **settings: float) -> None:
        httpx.post(self.url + "/control", json=settings).raise_for_status()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def fakes() -> Iterator[Callable[..., Fake]]:
    started: list[Fake] = []

    def start(role: str, *args: str) -> Fake:
        started.append(Fake(role, *args))
        return started[-1]

    try:
        yield start
    finally:
        for fake in started:
            fake.kill()


def client_for(tmp: Path, servers: dict[str, tuple[str, str]],
               probe_interval: float = 60.0) -> DisaggregatedClient:
    """A kvserver route over ``servers``; every timeout long (60 s), so that only a
    broken or refused connection can end a request early."""
    return DisaggregatedClient(parse_config({
        "engine": {"threads": 2, "history_db": str(tmp / "history.db")},
        "servers": {n: {"url": url, "role": role} for n, (url, role) in servers.items()},
        "roles": {"code": {"backend": "kvserver", "servers": list(servers),
                           "embedded_fallback": False, "options": {"handoff": "always"}}},
        "health": {"probe_interval": probe_interval, "breaker_failures": 3,
                   "breaker_reset_seconds": 60, "canary_interval": 0},
        "timeouts": {"connect": 1.0, "prefill": 60.0, "kv_pull": 60.0, "first_token": 60.0,
                     "token_gap": 60.0, "probe": 2.0}}))


def trio(fakes: Callable[..., Fake], *hold: str) -> tuple[Fake, Fake, Fake]:
    """A prefill server and two decode servers; d's seeded speed ranks p -> d first."""
    return (fakes("prefill"), fakes("decode", "--decode-tps", "500", *hold),
            fakes("decode", "--decode-tps", "5"))


def after(events: list[Any], server: str, at: float) -> list[Any]:
    return [e for e in events if e.server == server and e.at >= at]


def test_a_decode_server_killed_in_flight_is_down_at_once_and_another_pulls_the_kv(
        fakes: Callable[..., Fake], tmp_path: Path) -> None:
    # d sends its headers, then holds the reply for 60 s (a long KV pull) and is
    # killed meanwhile; the prober is 60 s away, so only the request can notice.
    p, d, d2 = trio(fakes, "--hold", "60")
    killed: dict[str, float] = {}

    def kill_when_decoding() -> None:
        deadline = time.monotonic() + 30
        while d.count()["decode"] < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        killed["at"] = time.time()
        d.kill()

    with client_for(tmp_path, {"p": (p.url, "prefill"), "d": (d.url, "decode"),
                               "d2": (d2.url, "decode")}) as client:
        backend = client.backend("code")
        assert backend.options(REQUEST)[0].pair == ("p", "d")
        killer = threading.Thread(target=kill_when_decoding)
        killer.start()
        result = client.generate(REQUEST)
        took = time.time() - killed["at"]
        killer.join()
        events = backend.cluster.monitor.events()
        state = backend.cluster.monitor.snapshot("d")
    m = result.metrics
    assert (m.prefill_worker, m.decode_worker, m.method) == ("p", "d2", "fallback")
    assert "decode server d: BackendUnavailable" in m.failover
    assert "connection broke" in m.failover
    assert p.count()["prefill"] == 1  # d2 pulled the same KV: no second prefill
    kinds = [e.kind for e in after(events, "d", killed["at"])]
    assert kinds == ["circuit_open", "down"]  # decisive at once, and never back up
    assert "(decisive)" in after(events, "d", killed["at"])[0].detail
    assert (state.state, state.circuit) == ("down", "open")
    assert took < 30  # d held its answer for 60 s: the broken connection ended it


def test_a_killed_server_is_known_down_from_its_refused_port_with_a_busy_core(
        fakes: Callable[..., Fake], tmp_path: Path) -> None:
    p, d, d2 = trio(fakes)
    with busy_core(), client_for(tmp_path, {"p": (p.url, "prefill"), "d": (d.url, "decode"),
                                            "d2": (d2.url, "decode")}) as client:
        monitor = client.backend("code").cluster.monitor
        killed_at = time.time()
        d.kill()
        # The prober is 60 s away: the request finds d refusing, d2 pulls the KV, and
        # the pair's success does not bring d back up.
        first = client.generate(REQUEST)
        assert [e.kind for e in after(monitor.events(), "d", killed_at)] == \
            ["circuit_open", "down"]
        monitor.probe_all(timeout=30)  # the prober agrees, from one refused probe
        state = monitor.snapshot("d")
        assert state.last_probe is not None
        assert state.last_probe.refused
        assert {n: (s.state, s.circuit) for n, s in monitor.snapshots().items()} == \
            {"p": ("up", "closed"), "d": ("down", "open"), "d2": ("up", "closed")}
        second = client.generate(REQUEST)  # straight to d2: nothing to fail over
    assert (first.metrics.decode_worker, first.metrics.method) == ("d2", "fallback")
    assert (second.metrics.decode_worker, second.metrics.method) == ("d2", "disaggregated")
    assert p.count()["prefill"] == 2  # one a request: d's refusal cost no prefill


def test_the_prober_has_a_killed_server_down_within_two_intervals_on_a_busy_core(
        fakes: Callable[..., Fake], tmp_path: Path) -> None:
    interval = 0.5
    p, d, d2 = trio(fakes)
    with busy_core(), client_for(tmp_path, {"p": (p.url, "prefill"), "d": (d.url, "decode"),
                                            "d2": (d2.url, "decode")}, interval) as client:
        monitor = client.backend("code").cluster.monitor
        killed_at = time.time()
        d.kill()
        deadline = killed_at + 2 * interval + 1.0
        while monitor.snapshot("d").state != "down" and time.time() < deadline + 5:
            time.sleep(0.02)
        down = [e for e in after(monitor.events(), "d", killed_at) if e.kind == "down"]
    assert down, "the killed server was never marked down"
    assert "decisive" in down[0].detail
    assert "refused" in down[0].detail
    assert down[0].at <= deadline, f"{down[0].at - killed_at:.2f} s after the kill"


def test_a_slow_probe_is_not_a_dead_server(fakes: Callable[..., Fake]) -> None:
    s = fakes("both")
    transport = KVServerTransport(Endpoint("s", s.url, role="both"),
                                  Timeouts(connect=1.0, probe=0.3))
    monitor = HealthMonitor({"s": transport}, interval=60.0,
                            breaker=BreakerSettings(failures=2, reset_seconds=60.0))
    try:
        monitor.probe_all()
        s.control(health_delay=3.0)  # answers, but after the probe gave up
        rounds = []
        for _ in range(3):
            monitor.probe_all(timeout=10)
            snap = monitor.snapshot("s")
            assert snap.last_probe is not None
            assert snap.last_probe.slow
            assert not snap.last_probe.refused
            rounds.append((snap.state, snap.circuit))
        s.control(health_delay=0.0)
        for _ in range(2):
            monitor.probe_all(timeout=10)
            rounds.append((monitor.snapshot("s").state, monitor.snapshot("s").circuit))
        events = monitor.events()
    finally:
        monitor.stop()
        transport.close()
    # The first slow probe counts for nothing, the next two for one failure each.
    assert rounds == [("up", "closed"), ("up", "closed"), ("down", "open"),
                      ("degraded", "half_open"), ("up", "closed")]
    opened = next(e for e in events if e.kind == "circuit_open")
    assert "2 in a row" in opened.detail
    assert "decisive" not in opened.detail
    assert "Timeout" in opened.detail


def test_a_broken_connection_is_decisive_only_when_the_port_refuses() -> None:
    cut = httpx.RemoteProtocolError("peer closed connection without sending complete "
                                    "message body (incomplete chunked read)")
    with socket.create_server(("127.0.0.1", 0)) as listening:
        alive = f"http://127.0.0.1:{listening.getsockname()[1]}"
        assert not gone(cut, alive, 1.0)  # a blip: the port still takes connections
    dead = f"http://127.0.0.1:{free_port()}"
    assert gone(cut, dead, 1.0)
    assert gone(httpx.ConnectError("[Errno 111] Connection refused"), alive, 1.0)
    slow = httpx.ReadTimeout("timed out")
    assert timed_out(slow)
    assert not gone(slow, dead, 1.0)
