"""What a peer can make a server hold (issue 23): bounded handshake replies, KV memory
committed as bytes arrive (not as announced), a stalled source timed out, a budget for
the KV pulled at once, a capped and timed KV data port, and deep JSON refused with 400.
Real sockets and HTTP servers on 127.0.0.1; the real puller, data server and app."""

from __future__ import annotations

import asyncio
import contextlib
import json
import mmap
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import httpx
import pytest

from inference.errors import KVFormatError
from inference.kvwire import write_frames
from inference.server import dataplane
from inference.server.errors import KVSourceUnreachable, OverloadedError
from inference.server.kvbudget import KVBudget
from inference.server.pull import KVPuller
from tests.test_kvwire import SMOL

MiB = 1 << 20


def rss_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


class _Source(BaseHTTPRequestHandler):
    """A hostile KV source: a huge handshake reply, or a KV stream that announces
    ``announce`` bytes, sends its header and one chunk, then stalls."""

    mode: ClassVar[str] = "huge"
    announce: ClassVar[int] = 0
    stall_s: ClassVar[float] = 30.0

    def do_POST(self) -> None:  # the handshake
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.mode == "huge":
            body = b'{"pad": "' + b"x" * (8 * MiB) + b'"}'
        else:
            body = json.dumps({"format_version": 1, "nbytes": self.announce, "n_tokens": 3,
                               "chunk_bytes": MiB}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # the KV stream over HTTP
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        zeros = mmap.mmap(-1, self.announce)  # never touched: no memory here either
        frames = write_frames(SMOL, [1, 2, 3], 4, memoryview(zeros), chunk_bytes=MiB)
        for _ in range(4):  # the header, then one chunk's length, bytes and checksum
            self.wfile.write(bytes(next(frames)))
        self.wfile.flush()
        time.sleep(self.stall_s)

    def log_message(self, *args: object) -> None:
        pass


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # the puller hung up on a stalled stream: expected here


@pytest.fixture
def source() -> Iterator[str]:
    server = _Quiet(("127.0.0.1", 0), _Source)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_huge_handshake_reply_is_not_read_whole(source):
    _Source.mode = "huge"
    puller = KVPuller(512 * MiB, 2.0, 5.0)
    try:
        with pytest.raises(KVSourceUnreachable, match="more than 65536 bytes"):
            puller.handshake(source, "h1", None, SMOL)
    finally:
        puller.close()


def test_announced_kv_is_not_held_before_it_arrives_and_a_stall_ends_quickly(source):
    _Source.mode, _Source.announce = "stall", 400 * MiB
    puller = KVPuller(512 * MiB, 2.0, 1.0)  # a source silent 1 s mid-stream has stalled
    peak = [rss_bytes()]
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], rss_bytes())
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    try:
        before = rss_bytes()
        hs = puller.handshake(source, "h1", None, SMOL)
        assert hs.nbytes == 400 * MiB
        watcher.start()
        t0 = time.monotonic()
        with pytest.raises(KVFormatError, match="broke off"):
            puller.pull(source, "h1", None, SMOL, hs)
        took = time.monotonic() - t0
    finally:
        stop.set()
        if watcher.is_alive():
            watcher.join()
        puller.close()
    assert took < 10  # not the old 120 s
    assert peak[0] - before < 64 * MiB  # 1 MiB arrived; 400 MiB were announced


def test_the_kv_budget_makes_a_pull_that_does_not_fit_wait_then_refuses_it():
    budget = KVBudget(100, wait_s=0.3)
    held, released = threading.Event(), threading.Event()

    def first() -> None:
        with budget.hold(60):
            held.set()
            released.wait(10)

    t = threading.Thread(target=first)
    t.start()
    held.wait(10)
    assert budget.held == 60
    with pytest.raises(OverloadedError) as refused, budget.hold(60):
        pass
    assert refused.value.reason == "kv_memory"
    with budget.hold(40):  # what fits goes at once
        assert budget.held == 100
    waited: list[float] = []

    def second() -> None:
        t0 = time.monotonic()
        with budget.hold(60):
            waited.append(time.monotonic() - t0)

    budget.wait_s = 10.0
    s = threading.Thread(target=second)
    s.start()
    time.sleep(0.2)
    released.set()
    t.join()
    s.join()
    assert waited
    assert waited[0] >= 0.15  # it waited for the first to finish, then went
    assert budget.held == 0


def test_the_kv_data_port_caps_and_times_out_idle_connections(monkeypatch):
    monkeypatch.setattr(dataplane, "_HELLO_TIMEOUT_S", 0.5)
    monkeypatch.setattr(dataplane, "MAX_CONNECTIONS", 8)
    server = dataplane.KVDataServer("127.0.0.1", 0, lambda h: iter([b"kv"]), 30.0)
    threads_before = threading.active_count()
    socks = []
    try:
        for _ in range(20):
            socks.append(socket.create_connection(("127.0.0.1", server.port), timeout=5))
        time.sleep(0.2)
        assert threading.active_count() - threads_before <= 8
        closed_at_once = 0
        for s in socks[8:]:
            s.settimeout(0.3)
            with contextlib.suppress(TimeoutError):
                closed_at_once += s.recv(1) == b""
        assert closed_at_once >= 10  # beyond the cap: closed, nothing read
        time.sleep(0.8)  # past the hello timeout, the idle ones are closed too
        for s in socks[:8]:
            s.settimeout(2)
            assert s.recv(1) == b""
        # and the port serves a real ticket again afterwards
        ticket = server.ticket("h1")
        with socket.create_connection(("127.0.0.1", server.port), timeout=5) as c:
            c.sendall(dataplane.TICKET_MAGIC + ticket.encode())
            assert c.recv(16) == b"kv"
    finally:
        for s in socks:
            s.close()
        server.close()


def test_deep_json_bodies_and_schemas_get_400_not_500():
    from inference.server import ServerEngine, ServerOptions, create_app

    engine = ServerEngine(ServerOptions(role="both"))
    app = create_app(engine, None)
    deep_schema: dict = {"type": "string"}
    for _ in range(200):
        deep_schema = {"type": "object", "properties": {"a": deep_schema}}

    async def calls() -> list[httpx.Response]:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://test") as client:
            nested = "[" * 100_000 + "]" * 100_000
            return [
                await client.post("/v1/chat/completions", content=nested,
                                  headers={"Content-Type": "application/json"}),
                await client.post("/v1/chat/completions", json={
                    "messages": [{"role": "user", "content": "hi"}],
                    "response_format": {"type": "json_schema",
                                        "json_schema": {"schema": deep_schema}}}),
                await client.post("/v1/disagg/generate", content="{" * 5000,
                                  headers={"Content-Type": "application/json"}),
            ]

    try:
        replies = asyncio.run(calls())
    finally:
        engine.close()
    for resp in replies[:2]:
        assert resp.status_code == 400, resp.text[:300]
        assert resp.json()["error"]["type"] == "invalid_request"
        assert "nests deeper than 64" in resp.json()["error"]["message"]
    assert replies[2].status_code == 400
