"""Routes over real server processes on 127.0.0.1: KV moved between our servers,
refused between different models, and failover when a server is killed, hangs,
answers garbage or truncates the KV. Every request here goes through the real
client, the real servers and real llama.cpp."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from bench.tcp_proxy import ThrottlingProxy
from inference import (
    DisaggregatedClient,
    GenerationRequest,
    KVIncompatibleError,
    StreamInterrupted,
)
from inference.config import parse_config
from tests.conftest import FILLER
from tests.server_procs import ServerProcess, free_port, start_server

pytestmark = [pytest.mark.slow, pytest.mark.llm]

FAST = {"probe_interval": 0.5, "breaker_failures": 2, "breaker_reset_seconds": 30,
        "canary_interval": 0}
SHORT = {"connect": 1.0, "prefill": 120.0, "kv_pull": 10.0, "first_token": 10.0,
         "token_gap": 30.0, "probe": 1.0}
PATIENT = {"connect": 2.0, "prefill": 300.0, "kv_pull": 60.0, "first_token": 300.0,
           "token_gap": 60.0, "probe": 2.0}  # the machine is shared: slow is not broken


def request(text: str = "What does a left join keep?", n: int = 16) -> GenerationRequest:
    return GenerationRequest.chat("code", "Answer in one sentence.", text, max_tokens=n,
                                  temperature=0.0)


def client_for(tmp: Path, servers: dict[str, tuple[str, str]], *, handoff: str = "always",
               fallback: bool = True, embedded: bool = False,
               timeouts: dict[str, float] | None = None) -> DisaggregatedClient:
    """A client whose `code` role is a kvserver route over ``servers`` (name -> url, role)."""
    return DisaggregatedClient(parse_config({
        "engine": {"threads": 2, "history_db": str(tmp / "history.db")},
        "servers": {n: {"url": url, "role": role} for n, (url, role) in servers.items()},
        "roles": {"code": {"backend": "kvserver", "servers": list(servers),
                           "fallback": fallback, "embedded_fallback": embedded,
                           "options": {"handoff": handoff}}},
        "health": FAST, "timeouts": timeouts or SHORT}))


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[ServerProcess, ServerProcess, ServerProcess]]:
    """A prefill server, a decode server and a both server, all SmolLM2."""
    procs = [start_server(role=r, extra_args=("--prefix-cache-mb", "0"))
             for r in ("prefill", "decode", "both")]
    try:
        yield procs[0], procs[1], procs[2]
    finally:
        for p in procs:
            p.stop()


def test_kv_moves_between_two_servers_and_the_reply_is_the_one_server_reply(pair, tmp_path):
    p, d, _b = pair
    with client_for(tmp_path, {"p": (p.url, "prefill"), "d": (d.url, "decode")},
                    fallback=False, timeouts=PATIENT) as client:
        shipped = client.generate(request())
        alone = client.cluster.transports["d"].generate(request())
        long_text = " ".join(FILLER.format(i=i) for i in range(40))
        long_shipped = client.generate(request(long_text + "\nSummarise.", 24))
        long_alone = client.cluster.transports["d"].generate(request(long_text + "\nSummarise.",
                                                                     24))
    m = shipped.metrics
    assert (m.method, m.route_choice, m.prefill_worker, m.decode_worker) == \
        ("disaggregated", "ship", "p", "d")
    assert m.kv_bytes > 100_000
    assert m.kv_transfer_seconds > 0
    assert not m.failover
    assert shipped.tokens == alone.tokens
    assert shipped.text == alone.text
    assert long_shipped.metrics.prompt_tokens > 1400
    assert long_shipped.metrics.method == "disaggregated"
    assert long_shipped.tokens == long_alone.tokens


def test_a_decode_server_on_another_model_is_refused_by_name_with_no_tokens(pair, tmp_path):
    p, _d, _b = pair
    gemma = start_server(model="gemma3-270m", role="decode")
    try:
        with client_for(tmp_path, {"p": (p.url, "prefill"), "g": (gemma.url, "decode")},
                        fallback=False) as client:
            seen: list[str] = []
            with pytest.raises(KVIncompatibleError) as info:
                client.generate(request(), seen.append)
            # The decode server's own handshake refuses too, before any byte moves.
            pre = client.cluster.transports["p"].prefill(request())
            with pytest.raises(KVIncompatibleError) as direct:
                client.cluster.transports["g"].decode(request(), pre,
                                                       client.cluster.endpoints["p"],
                                                       seen.append)
    finally:
        gemma.stop()
    assert seen == []
    for message in (str(info.value), str(direct.value)):
        assert "smollm2-135m" in message
        assert "gemma3-270m" in message


def test_killing_the_prefill_server_mid_batch_loses_no_request(tmp_path):
    p = start_server(role="prefill")
    d = start_server(role="decode")
    try:
        with client_for(tmp_path, {"p": (p.url, "prefill"), "d": (d.url, "decode")}) as client:
            results = []
            for i in range(5):
                if i == 2:
                    p.kill()
                results.append(client.generate(request(f"Name {i + 2} SQL joins.", 8)))
            states = {h.name: h.state for h in client.health()}
            history = client.history.recent()
    finally:
        p.stop()
        d.stop()
    methods = [r.metrics.method for r in results]
    assert methods[:2] == ["disaggregated", "disaggregated"]
    assert methods[2:] == ["fallback"] * 3
    assert all(r.text for r in results)
    assert all("prefill" in r.metrics.failover or " p " in f" {r.metrics.failover} "
               for r in results[2:])
    assert states["p"] == "down"
    assert states["d"] == "up"
    assert [m.failover != "" for m in history[-5:]].count(True) == 3


def test_a_decode_server_that_dies_is_replaced_by_another_before_or_mid_stream(tmp_path):
    # Fresh decode servers have no measured speed yet, so the router's order among
    # them is the listed one: p -> d first, then p -> b.
    p, d1, d2, d3, b, b3 = (start_server(role=r) for r in
                            ("prefill", "decode", "decode", "decode", "decode", "decode"))
    try:
        slow_probes = {**FAST, "probe_interval": 60.0}
        # Before the first token: d1 is dead but the prober has not noticed yet.
        with _client(tmp_path / "a", {"p": (p.url, "prefill"), "d1": (d1.url, "decode"),
                                      "b": (b.url, "decode")}, slow_probes) as client:
            client.backend("code")  # the first probes see d1 up
            d1.kill()
            before = client.generate(request(n=8))
        # Mid-stream, and the caller cannot show a restart: a typed error, no retry.
        with _client(tmp_path / "b", {"p": (p.url, "prefill"), "d2": (d2.url, "decode")},
                     slow_probes) as client, pytest.raises(StreamInterrupted) as cut:
            client.generate(request(n=24), lambda _piece: d2.kill())
        # Mid-stream, and the caller can (the grader can): restarted on b.
        seen: list[str] = []

        def kill_d3(piece: str) -> None:
            seen.append(piece)
            d3.kill()

        with _client(tmp_path / "c", {"p": (p.url, "prefill"), "d3": (d3.url, "decode"),
                                      "b": (b3.url, "decode")}, FAST) as client:
            restarted = client.generate(request(n=24), kill_d3, restartable=True)
    finally:
        for proc in (p, d1, d2, d3, b, b3):
            proc.stop()
    assert before.text
    assert before.metrics.method == "fallback"
    assert before.metrics.decode_worker == "b"
    assert "d1" in before.metrics.failover
    assert cut.value.partial
    assert "d2" in str(cut.value)
    assert restarted.text
    assert restarted.metrics.decode_worker == "b"
    assert restarted.metrics.attempts >= 2
    assert "restarted after a cut stream" in restarted.metrics.failover
    assert any("restarting on another server" in s for s in seen)


def _client(tmp: Path, servers: dict[str, tuple[str, str]], health: dict[str, Any],
            timeouts: dict[str, float] | None = None) -> DisaggregatedClient:
    return DisaggregatedClient(parse_config({
        "engine": {"threads": 2, "history_db": str(tmp / "history.db")},
        "servers": {n: {"url": url, "role": role} for n, (url, role) in servers.items()},
        "roles": {"code": {"backend": "kvserver", "servers": list(servers),
                           "embedded_fallback": False, "options": {"handoff": "always"}}},
        "health": health, "timeouts": timeouts or SHORT}))


class _Garbage(BaseHTTPRequestHandler):
    """Healthy to probes (it copies a real server's /status), garbage to requests."""

    status: ClassVar[dict[str, Any]] = {}

    def do_GET(self) -> None:
        body = json.dumps({"status": "ok"} if self.path == "/health" else self.status)
        self._send(200, body.encode(), "application/json")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send(200, b"\x00\xffnot json at all\n", "application/json")

    def _send(self, code: int, body: bytes, kind: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_hanging_garbage_and_truncating_servers_are_failed_over(pair, tmp_path):
    _p, d, _b = pair
    # KV over HTTP only (no data port), so that it passes through the proxies.
    p = start_server(role="prefill", extra_args=("--kv-port", "-1"))
    _Garbage.status = httpx.get(p.url + "/status").json()
    garbage = ThreadingHTTPServer(("127.0.0.1", 0), _Garbage)
    threading.Thread(target=garbage.serve_forever, daemon=True).start()
    p_port = int(p.url.rsplit(":", 1)[1])
    timeouts = {**SHORT, "prefill": 3.0}
    results = {}
    try:
        with ThrottlingProxy("127.0.0.1", p_port) as hanging, \
                ThrottlingProxy("127.0.0.1", p_port) as cutting:
            cases = {
                "hanging": hanging.url,
                "garbage": f"http://127.0.0.1:{garbage.server_port}",
                "cutting": cutting.url,
            }
            for name, url in cases.items():
                with _client(tmp_path / name, {name: (url, "prefill"), "d": (d.url, "decode")},
                             FAST, timeouts) as client:
                    if name == "hanging":
                        hanging.hang()
                    if name == "cutting":
                        cutting.cut_after(200_000)  # the KV pull stops after 200 kB
                    results[name] = client.generate(request())
    finally:
        garbage.shutdown()
        garbage.server_close()
        p.stop()
    for name, result in results.items():
        m = result.metrics
        assert result.text, name
        assert (m.method, m.decode_worker) == ("fallback", "d"), name
        assert name in m.failover, (name, m.failover)
    assert "not JSON" in results["garbage"].metrics.failover
    assert "kv_truncated" in results["cutting"].metrics.failover


def test_a_slow_link_stops_the_router_shipping_kv_and_a_fast_one_ships(tmp_path):
    # The prefill server keeps the prompt in its prefix cache after the first request
    # (as it keeps an assignment's shared head while grading); the decode server keeps
    # none and prefills on one thread. Shipping the cached KV wins on a fast link and
    # loses when the link is slow. The router learns both from real requests, not from
    # the two machines' core counts (two threads are no faster than one on a 2-core CI).
    # KV over HTTP only (no data port), so that it passes through the throttled link.
    # The prompt and the slow rate keep both contrasts near 5x, each path is measured
    # twice, and the timeouts and leases are patient: on a busy CI machine one noisy
    # sample or a slow pull must not decide the test.
    p = start_server(role="prefill", extra_args=("--kv-port", "-1", "--lease-seconds", "300"))
    d = start_server(role="decode", extra_args=("--prefix-cache-mb", "0", "--threads", "1"))
    text = " ".join(FILLER.format(i=i) for i in range(20)) + "\nSummarise."
    try:
        choices, prefill = {}, {}
        with ThrottlingProxy("127.0.0.1", int(p.url.rsplit(":", 1)[1])) as link:
            for label, rate in (("fast", None), ("slow", 2_000_000)):
                link.set_rate(rate)
                with client_for(tmp_path / label, {"p": (link.url, "prefill"),
                                                   "d": (d.url, "decode")},
                                handoff="auto", timeouts=PATIENT) as client:
                    backend = client.backend("code")
                    # Measure each path (two prompt sizes for the link's fit).
                    for _ in range(2):
                        for req in (request("Hi there.", 4), request(text, 4)):
                            for opt in backend.options(req):
                                if opt.choice in ("ship", "self"):
                                    backend.run_option(opt, req)
                    ranked = backend.options(request(text, 4))
                    choices[label] = ranked[0].choice
                    prefill[label] = {o.choice: o.route_option.parts["prefill"]
                                      for o in ranked if o.route_option is not None}
    except Exception as exc:  # what the two servers saw, for a failure on a busy machine
        raise AssertionError(f"{exc}\n--- prefill server ---\n{p.log_text()[-4000:]}\n"
                             f"--- decode server ---\n{d.log_text()[-4000:]}") from exc
    finally:
        p.stop()
        d.stop()
    assert choices == {"fast": "ship", "slow": "self"}, (choices, prefill)
    assert prefill["fast"]["ship"] < prefill["fast"]["self"]  # the cached head counted


def test_a_dead_address_is_down_and_requests_go_to_the_embedded_engine(tmp_path):
    dead = f"http://127.0.0.1:{free_port()}"
    config = parse_config({
        "engine": {"threads": 2, "history_db": str(tmp_path / "h.db")},
        "servers": {"gone": {"url": dead, "role": "both"}},
        "roles": {"code": {"backend": "kvserver", "servers": ["gone"], "mode": "single"}},
        "health": FAST, "timeouts": SHORT})
    with DisaggregatedClient(config) as client:
        result = client.generate(request(n=4))
        cards = {h.name: h for h in client.health()}
    assert result.text
    assert result.metrics.method == "fallback"
    assert "embedded engine" in result.metrics.failover
    assert cards["gone"].state == "down"
