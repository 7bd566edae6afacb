"""OpenAITransport against a real `python -m llama_cpp.server` process, and against
tiny socket servers in the test that misbehave on purpose (silent, stalled, cut,
garbage, refusing)."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from inference.cluster.http_errors import retry_after
from inference.cluster.openai_api import OpenAITransport
from inference.endpoint import Endpoint, Timeouts
from inference.errors import (
    BackendError,
    BackendUnavailable,
    ContextOverflowError,
    InvalidRequestError,
)
from inference.server.launch import free_port
from inference.types import GenerationRequest

pytestmark = [pytest.mark.slow, pytest.mark.llm]

SCHEMA = {"type": "object",
          "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 10}},
          "required": ["score"]}
DEFAULT = Timeouts()
FAST = Timeouts(connect=1.0, first_token=1.0, token_gap=1.0, probe=1.0)


@pytest.fixture(scope="module")
def llama_server(smollm_path: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(smollm_path),
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/v1/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("llama_cpp.server did not start")
            time.sleep(0.2)
        yield url
    finally:
        proc.kill()
        proc.wait(10)


def transport(url: str, timeouts: Timeouts = DEFAULT, **kw) -> OpenAITransport:
    return OpenAITransport(Endpoint("srv", url, protocol="openai", model="smollm2"),
                           timeouts, **kw)


def ask(text: str = "Say hello to Ada in one short sentence.", **kw) -> GenerationRequest:
    kw.setdefault("max_tokens", 16)
    kw.setdefault("temperature", 0.0)
    return GenerationRequest.chat("code", "You are brief.", text, **kw)


# -- a real llama_cpp.server ---------------------------------------------------------------

def test_generate_streams_the_same_text_as_a_plain_request(llama_server: str) -> None:
    t = transport(llama_server)
    pieces: list[str] = []
    try:
        res = t.generate(ask(request_id="r1"), pieces.append)
    finally:
        t.close()
    plain = httpx.post(f"{llama_server}/v1/chat/completions", timeout=60, json={
        "messages": [{"role": "system", "content": "You are brief."},
                     {"role": "user", "content": "Say hello to Ada in one short sentence."}],
        "max_tokens": 16, "temperature": 0.0, "seed": 0}).json()
    assert res.text
    assert "".join(pieces) == res.text
    assert res.text == plain["choices"][0]["message"]["content"]
    m = res.metrics
    assert (m.method, m.prefill_worker, m.decode_worker, m.request_id) == (
        "single", "srv", "srv", "r1")
    assert m.model == "smollm2"  # llama_cpp.server names the model as asked
    # No usage in its stream: the token counts are unknown (0), never guessed from
    # chunks, so no decode speed is claimed; the times are this side's measurements.
    assert (m.prompt_tokens, m.decode_tokens, m.decode_evals, m.decode_tps) == (0, 0, 0, 0.0)
    assert 0 < m.ttft_seconds == m.prefill_seconds < m.total_seconds
    assert m.finish_reason == res.finish_reason in ("stop", "length")
    assert m.started_at <= m.finished_at


def test_json_schema_as_json_object_returns_valid_json(llama_server: str) -> None:
    t = transport(llama_server, response_format="json_object")
    try:
        res = t.generate(ask("Rate this answer from 0 to 10: 'x = 2'.", max_tokens=24,
                             json_schema=SCHEMA))
    finally:
        t.close()
    assert isinstance(res.parsed, dict)
    assert 0 <= res.parsed["score"] <= 10
    assert json.loads(res.text) == res.parsed


def test_json_schema_form_is_refused_by_llama_cpp_server(llama_server: str) -> None:
    t = transport(llama_server)  # the default form: llama_cpp.server answers 500
    try:
        with pytest.raises(BackendError, match="HTTP 500"):
            t.generate(ask(max_tokens=8, json_schema=SCHEMA))
    finally:
        t.close()


def test_probe_ok_names_the_served_model(llama_server: str) -> None:
    t = transport(llama_server)
    try:
        p = t.probe()
    finally:
        t.close()
    assert p.ok
    assert not p.loading
    assert p.status is not None
    assert p.status.model.endswith(".gguf")  # its /v1/models lists the model path


# -- servers that cannot serve ---------------------------------------------------------------

def test_dead_port_is_unavailable_quickly() -> None:
    t = transport(f"http://127.0.0.1:{free_port()}", FAST)
    t0 = time.perf_counter()
    try:
        with pytest.raises(BackendUnavailable, match="unreachable"):
            t.generate(ask())
        p = t.probe()
    finally:
        t.close()
    assert time.perf_counter() - t0 < 2.0
    assert not p.ok
    assert p.error


class Scripted:
    """A socket server on 127.0.0.1 that reads one request per connection and runs
    ``script(conn)``; every connection it accepts is held until the test ends."""

    def __init__(self, script: Callable[[socket.socket], None]) -> None:
        self._srv = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._srv.getsockname()[1]}"
        self._script = script
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._srv.accept()
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        try:
            conn.recv(65536)
            self._script(conn)
        except OSError:
            pass

    def close(self) -> None:
        self._stop.set()
        for sock in (self._srv, *self._conns):  # shutdown wakes a blocked accept/recv
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._thread.join(5)


@pytest.fixture
def scripted() -> Iterator[Callable[[Callable[[socket.socket], None]], Scripted]]:
    servers: list[Scripted] = []

    def start(script: Callable[[socket.socket], None]) -> Scripted:
        servers.append(Scripted(script))
        return servers[-1]

    try:
        yield start
    finally:
        for s in servers:
            s.close()


SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")


def chunk(text: str) -> bytes:
    data = text.encode()
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def sse(content: str) -> bytes:
    return chunk("data: " + json.dumps({"model": "m", "choices": [
        {"index": 0, "delta": {"content": content}, "finish_reason": None}]}) + "\n\n")


def answer(status: str, body: dict, headers: str = "") -> Callable[[socket.socket], None]:
    data = json.dumps(body).encode()
    head = (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{headers}"
            f"Content-Length: {len(data)}\r\n\r\n").encode()
    return lambda conn: conn.sendall(head + data)


def stall_forever(conn: socket.socket) -> None:
    conn.recv(1)  # until the client gives up or the test ends


def pings_forever(conn: socket.socket) -> None:
    conn.sendall(SSE_HEAD)
    for _ in range(150):
        conn.sendall(chunk(": ping\n\n"))
        time.sleep(0.2)


def test_silent_server_is_unavailable_within_the_first_token_timeout(scripted) -> None:
    t = transport(scripted(stall_forever).url, FAST)
    t0 = time.perf_counter()
    try:
        with pytest.raises(BackendUnavailable, match="no first token within 1 s"):
            t.generate(ask())
        p = t.probe()
    finally:
        t.close()
    assert time.perf_counter() - t0 < 4.0
    assert not p.ok


def test_pings_without_tokens_trip_the_watchdog(scripted) -> None:
    # Keep-alive comments arrive every 0.2 s, so no socket read ever times out:
    # only the watchdog (shutting the socket down) can end this request.
    t = transport(scripted(pings_forever).url, Timeouts(first_token=1.0, token_gap=30.0))
    t0 = time.perf_counter()
    try:
        with pytest.raises(BackendUnavailable, match="no first token within 1 s"):
            t.generate(ask())
    finally:
        t.close()
    assert time.perf_counter() - t0 < 3.0


def test_stream_cut_before_done_is_a_backend_error(scripted) -> None:
    got: list[str] = []
    t = transport(scripted(lambda c: c.sendall(SSE_HEAD + sse("Hel") + chunk(""))).url, FAST)
    try:
        with pytest.raises(BackendError, match=r"before \[DONE\]") as info:
            t.generate(ask(), got.append)
    finally:
        t.close()
    assert not isinstance(info.value, BackendUnavailable)
    assert got == ["Hel"]


def test_garbage_in_the_stream_is_a_backend_error(scripted) -> None:
    t = transport(scripted(lambda c: c.sendall(SSE_HEAD + chunk("data: {oops\n\n"))).url, FAST)
    try:
        with pytest.raises(BackendError, match="not JSON"):
            t.generate(ask())
    finally:
        t.close()


def test_usage_chunk_with_null_choices_and_server_timings(scripted) -> None:
    tail = {"model": "m", "choices": None, "usage": {
        "prompt_tokens": 30, "completion_tokens": 2,
        "prompt_tokens_details": {"cached_tokens": 10}},
        "timings": {"prompt_n": 20, "prompt_ms": 40.0, "predicted_n": 2,
                    "predicted_ms": 25.0, "cache_n": 10}}
    body = (SSE_HEAD + sse("Hi") + sse("!") + chunk("data: " + json.dumps(tail) + "\n\n")
            + chunk("data: [DONE]\n\n") + chunk(""))
    t = transport(scripted(lambda c: c.sendall(body)).url, FAST)
    try:
        m = t.generate(ask()).metrics
    finally:
        t.close()
    assert (m.prompt_tokens, m.cached_tokens, m.prefill_tokens, m.decode_tokens) == (
        30, 10, 20, 2)
    assert (m.prefill_seconds, m.decode_seconds, m.decode_evals) == (0.04, 0.025, 2)


@pytest.mark.parametrize(("status", "body", "headers", "error", "match"), [
    ("503 Service Unavailable", {"error": {"message": "busy"}}, "Retry-After: 7\r\n",
     BackendUnavailable, "busy"),
    ("502 Bad Gateway", {"error": "upstream"}, "", BackendUnavailable, "upstream"),
    ("401 Unauthorized", {"error": {"message": "no key"}}, "", BackendError, "authentication"),
    ("400 Bad Request", {"error": {"message": "bad temperature"}}, "", InvalidRequestError,
     "bad temperature"),
    ("400 Bad Request", {"error": {
        "message": "This model's maximum context length is 2048 tokens. However, you requested "
                   "2151 tokens (2131 in the messages, 20 in the completion).",
        "code": "context_length_exceeded"}}, "", ContextOverflowError, "2048"),
])
def test_error_statuses_become_typed_errors(scripted, status, body, headers, error,
                                            match) -> None:
    t = transport(scripted(answer(status, body, headers)).url, FAST)
    try:
        with pytest.raises(error, match=match) as info:
            t.generate(ask(max_tokens=20))
    finally:
        t.close()
    if status.startswith("503"):
        assert info.value.retry_after == 7.0
    if error is ContextOverflowError:
        e = info.value
        assert (e.prompt_tokens, e.max_tokens, e.n_ctx) == (2131, 20, 2048)


def test_probe_reports_loading_from_health(scripted) -> None:
    t = transport(scripted(answer("503 Service Unavailable", {
        "error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}})).url,
        FAST)
    try:
        p = t.probe()
    finally:
        t.close()
    assert not p.ok
    assert p.loading


def test_retry_after_reads_seconds_and_dates() -> None:
    assert retry_after("3") == 3.0
    assert retry_after(None) is None
    assert retry_after("soon") is None
    later = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 60))
    assert 50 < (retry_after(later) or 0) <= 60


# -- through the client: pools, failover, and our own server's endpoint ----------------------

def test_an_openai_route_fails_over_from_a_dead_server_to_llama_cpp_server(
        llama_server: str, tmp_path: Path) -> None:
    from inference import DisaggregatedClient
    from inference.config import parse_config

    config = parse_config({
        "engine": {"threads": 2, "history_db": str(tmp_path / "h.db")},
        "servers": {"dead": {"url": f"http://127.0.0.1:{free_port()}", "protocol": "openai"},
                    "llama": {"url": llama_server, "protocol": "openai",
                              "options": {"response_format": "json_object"}}},
        "roles": {"code": {"backend": "openai", "servers": ["dead", "llama"],
                           "embedded_fallback": False}},
        "health": {"canary_interval": 0}})
    with DisaggregatedClient(config) as client:
        plain = client.generate(ask())
        scored = client.generate(ask("Rate this answer from 0 to 10: 'x = 2'.",
                                     json_schema=SCHEMA, max_tokens=24))
        cards = {h.name: h.state for h in client.health()}
    # llama_cpp.server's json_object grammar lets the tiny model end a plain reply at
    # once now and then (an empty text, finish "stop"): what is checked is who served it
    assert plain.finish_reason in ("stop", "length")
    assert (plain.metrics.prefill_worker, plain.metrics.method) == ("llama", "single")
    assert 0 <= scored.parsed["score"] <= 10
    assert cards == {"dead": "down", "llama": "up"}


def test_the_openai_transport_speaks_to_our_own_server() -> None:
    from tests.server_procs import start_server

    with start_server(role="both") as ours:
        t = transport(ours.url)
        try:
            pieces: list[str] = []
            res = t.generate(ask(), pieces.append)
            scored = t.generate(ask("Rate this answer from 0 to 10: 'x = 2'.",
                                    json_schema=SCHEMA, max_tokens=24))
            probe = t.probe()
        finally:
            t.close()
    assert res.text
    assert "".join(pieces) == res.text
    assert res.metrics.prompt_tokens > 0  # from the usage chunk
    assert res.metrics.prefill_seconds > 0  # from the server's timings
    assert 0 <= scored.parsed["score"] <= 10
    assert probe.ok
