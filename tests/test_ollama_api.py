"""OllamaTransport and the old pair mode against tests/fake_ollama.py run as real
processes (Ollama's HTTP API over real llama.cpp)."""

from __future__ import annotations

import contextlib
import dataclasses
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from inference.cluster.ollama_api import OllamaTransport, context_pair
from inference.endpoint import Endpoint, Timeouts
from inference.errors import BackendError, BackendUnavailable, ConfigError
from inference.types import GenerationRequest
from tests.fake_ollama import FAIL_MODEL, VERSION

pytestmark = [pytest.mark.slow, pytest.mark.llm]

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = {"type": "object",
          "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 10}},
          "required": ["score"]}
FAST = Timeouts(connect=1.0, first_token=1.0, token_gap=1.0, probe=1.0)


def start_fake() -> tuple[subprocess.Popen[str], str, threading.Thread]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.fake_ollama", "--port", "0"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stderr is not None
    lines: list[str] = []
    for line in proc.stderr:  # the model loads first, then the port is logged
        lines.append(line)
        if m := re.search(r"listening on (http://127\.0\.0\.1:\d+)", line):
            # Keep draining stderr so the server never blocks on a full pipe.
            drain = threading.Thread(target=proc.stderr.read, daemon=True)
            drain.start()
            return proc, m.group(1), drain
    proc.kill()
    proc.wait(10)
    proc.stderr.close()
    raise RuntimeError(f"fake ollama did not start: {''.join(lines)[-2000:]}")


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, str]]:
    started: list[tuple[subprocess.Popen[str], str, threading.Thread]] = []
    try:
        for _ in range(2):
            started.append(start_fake())
        yield started[0][1], started[1][1]
    finally:
        for proc, _, drain in started:
            proc.kill()
            proc.wait(10)
            drain.join(10)
            assert proc.stderr is not None
            proc.stderr.close()


@pytest.fixture
def ollama(servers: tuple[str, str]) -> Iterator[OllamaTransport]:
    t = transport("one", servers[0])
    try:
        yield t
    finally:
        t.close()


def transport(name: str, url: str, model: str = "smollm2",
              timeouts: Timeouts | None = None) -> OllamaTransport:
    return OllamaTransport(Endpoint(name, url, protocol="ollama", model=model),
                           timeouts or Timeouts())


def ask(text: str = "Say hello to Ada in one short sentence.", **kw) -> GenerationRequest:
    kw.setdefault("max_tokens", 16)
    kw.setdefault("temperature", 0.0)
    return GenerationRequest.chat("code", "You are brief.", text, **kw)


def test_generate_streams_and_reports_seconds(ollama: OllamaTransport) -> None:
    pieces: list[str] = []
    res = ollama.generate(ask(request_id="r1"), pieces.append)
    assert res.text
    assert "".join(pieces) == res.text
    # The transport is shared by threads: two at once get the same greedy text.
    with ThreadPoolExecutor(2) as pool:
        again = list(pool.map(lambda _: ollama.generate(ask()).text, range(2)))
    assert again == [res.text, res.text]
    m = res.metrics
    assert (m.method, m.prefill_worker, m.decode_worker, m.request_id, m.model) == (
        "single", "one", "one", "r1", "smollm2")
    assert m.prompt_tokens == m.prefill_tokens > 10
    assert m.cached_tokens == 0
    assert 1 <= m.decode_tokens == m.decode_evals <= 16
    # Ollama's nanoseconds arrive as seconds, inside the client's own measured span.
    assert 0 < m.prefill_seconds < m.ttft_seconds < m.total_seconds < 60
    assert 0 < m.decode_seconds < m.total_seconds
    assert m.finish_reason == res.finish_reason in ("stop", "length")


def test_schema_goes_as_format(ollama: OllamaTransport) -> None:
    res = ollama.generate(ask("Rate this answer from 0 to 10: 'x = 2'.", max_tokens=24,
                              json_schema=SCHEMA))
    assert isinstance(res.parsed, dict)
    assert 0 <= res.parsed["score"] <= 10


def test_unknown_model_is_a_backend_error(servers: tuple[str, str]) -> None:
    t = transport("one", servers[0], model="no-such-model")
    try:
        with pytest.raises(BackendError, match=r"HTTP 404.*not found") as info:
            t.generate(ask())
        p = t.probe()
    finally:
        t.close()
    assert not isinstance(info.value, BackendUnavailable)
    assert not p.ok
    assert "not on the server" in p.error


def test_error_line_mid_stream_is_a_backend_error(servers: tuple[str, str]) -> None:
    got: list[str] = []
    t = transport("one", servers[0], model=FAIL_MODEL)
    try:
        with pytest.raises(BackendError, match="error in the stream"):
            t.generate(ask(), got.append)
    finally:
        t.close()
    assert len(got) == 2  # the tokens before the error line did arrive


def test_probe_ok_and_down(ollama: OllamaTransport) -> None:
    p = ollama.probe()
    assert p.ok
    assert p.status is not None
    assert (p.status.model, p.status.version) == ("smollm2", VERSION)
    dead = transport("dead", f"http://127.0.0.1:{free_port()}", timeouts=FAST)
    t0 = time.perf_counter()
    try:
        q = dead.probe()
        with pytest.raises(BackendUnavailable, match="unreachable"):
            dead.generate(ask())
    finally:
        dead.close()
    assert not q.ok
    assert q.error
    assert time.perf_counter() - t0 < 2.0


def test_headers_then_silence_trip_the_watchdog() -> None:
    # The read timeout is the 30 s gap here: only the watchdog can end this at 1 s.
    srv = socket.create_server(("127.0.0.1", 0))
    release = threading.Event()

    def serve() -> None:
        with contextlib.suppress(OSError):
            conn, _ = srv.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n")
                release.wait(30)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    t = transport("slow", f"http://127.0.0.1:{srv.getsockname()[1]}",
                  timeouts=Timeouts(first_token=1.0, token_gap=30.0))
    t0 = time.perf_counter()
    try:
        with pytest.raises(BackendUnavailable, match="no first token within 1 s"):
            t.generate(ask())
    finally:
        t.close()
        release.set()
        srv.close()
        thread.join(5)
    assert time.perf_counter() - t0 < 3.0


def test_context_pair_re_prefills_on_the_decode_server(servers: tuple[str, str]) -> None:
    pre, dec = transport("pre", servers[0]), transport("dec", servers[1])
    try:
        single = pre.generate(ask())
        pieces: list[str] = []
        res = context_pair(pre, dec, ask(request_id="p1"), pieces.append)
        schema = context_pair(pre, dec, ask("Rate 'x = 2' from 0 to 10.", max_tokens=24,
                                            json_schema=SCHEMA))
    finally:
        pre.close()
        dec.close()
    assert res.text
    assert "".join(pieces) == res.text
    m = res.metrics
    assert (m.method, m.prefill_worker, m.decode_worker, m.request_id) == (
        "context", "pre", "dec", "p1")
    assert m.kv_bytes == 0
    assert m.kv_transfer_seconds == 0
    # The prompt as the prefill server counted it is the same prompt /api/chat sees...
    assert m.prompt_tokens == single.metrics.prompt_tokens
    # ...and the decode server evaluated all of it again, plus the continuation turn.
    assert m.prefill_tokens > m.prompt_tokens
    assert m.prefill_seconds > 0
    assert 0 < m.handoff_seconds < m.ttft_seconds < m.total_seconds
    assert 1 <= m.decode_tokens <= 16
    assert isinstance(schema.parsed, dict)
    assert 0 <= schema.parsed["score"] <= 10


def test_an_ollama_endpoint_needs_a_model_and_a_pair_one_model() -> None:
    with pytest.raises(ConfigError, match="needs `model`"):
        transport("x", "http://127.0.0.1:1", model="")
    a, b = transport("a", "http://127.0.0.1:1"), transport("b", "http://127.0.0.1:1", "qwen")
    try:
        with pytest.raises(ConfigError, match="same only on the same model"):
            context_pair(a, b, ask())
    finally:
        a.close()
        b.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- through the client ---------------------------------------------------------------------

def test_ollama_routes_single_and_the_old_context_pair(servers: tuple[str, str],
                                                        tmp_path) -> None:
    from inference import DisaggregatedClient
    from inference.config import parse_config

    one, two = servers
    config = parse_config({
        "engine": {"threads": 2, "history_db": str(tmp_path / "h.db")},
        "servers": {"one": {"url": one, "protocol": "ollama", "model": "smollm2",
                            "role": "prefill"},
                    "two": {"url": two, "protocol": "ollama", "model": "smollm2",
                            "role": "decode"}},
        "roles": {"code": {"backend": "ollama", "servers": ["one", "two"], "mode": "single",
                           "embedded_fallback": False},
                  "feedback": {"backend": "ollama", "servers": ["one", "two"],
                               "mode": "disaggregated", "embedded_fallback": False}},
        "health": {"canary_interval": 0}})
    with DisaggregatedClient(config) as client:
        single = client.generate(ask())
        pair = client.generate(dataclasses.replace(ask(), role="feedback"))
    assert single.text
    assert single.metrics.method == "single"
    assert pair.text
    assert pair.metrics.method == "context"
    assert pair.metrics.kv_bytes == 0  # token ids travelled, not KV
    # The decode server evaluated the whole prompt again.
    assert pair.metrics.prefill_tokens >= pair.metrics.prompt_tokens > 0
    assert (pair.metrics.prefill_worker, pair.metrics.decode_worker) == ("one", "two")
