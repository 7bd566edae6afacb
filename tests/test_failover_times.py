"""The request history as the caller saw it: a request that waited on a server killed
under it and then failed over shows the whole wait as its TTFT, and a reply cut
mid-stream and restarted on another server is one row (with a note naming the server
that cut it), not an error row and a success. Real HTTP servers on 127.0.0.1:
``tests.fake_kvserver`` processes, and one in-process server that cuts its stream after
the first token; the real client."""

from __future__ import annotations

import argparse
import socket
import threading
import time
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from inference import DisaggregatedClient, GenerationRequest, StreamInterrupted
from inference.config import parse_config
from tests.fake_kvserver import Handler, State
from tests.test_failover_busy import Fake

ROOT = Path(__file__).resolve().parents[1]
HOLD_S = 1.5  # how long the first server keeps the request before it is killed


def request(i: int = 0) -> GenerationRequest:
    return GenerationRequest.chat("code", "Answer briefly.", f"What does join {i} keep?",
                                  max_tokens=3, temperature=0.0)


class Cutting(Handler):
    """A fake server whose stream stops after its first token: the connection is cut
    with the reply half sent."""

    def _stream(self, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        data = b'{"type": "token", "text": "Left"}\n'
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()
        time.sleep(0.2)  # the client reads the token before the cut
        self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True


@pytest.fixture
def cutting() -> Iterator[str]:
    Cutting.state = State(argparse.Namespace(role="both", hold=0.0, decode_tps=50.0,
                                             prefill_tps=500.0, port=0))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Cutting)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def client_for(db: Path, urls: dict[str, str]) -> DisaggregatedClient:
    """One role served by ``urls`` one server a request; on a tie the first by name. A
    failure opens a circuit at once; the prober stays away (600 s)."""
    return DisaggregatedClient(parse_config({
        "engine": {"threads": 1, "history_db": str(db)},
        "servers": {n: {"url": url, "role": "both"} for n, url in urls.items()},
        "roles": {"code": {"backend": "kvserver", "mode": "single", "servers": list(urls),
                           "embedded_fallback": False}},
        "health": {"probe_interval": 600, "breaker_failures": 1, "canary_interval": 0},
        "timeouts": {"connect": 1.0, "prefill": 60.0, "kv_pull": 60.0, "first_token": 60.0,
                     "token_gap": 60.0, "probe": 2.0}}))


def test_a_failover_counts_its_ttft_from_the_first_attempt(tmp_path: Path):
    a, b = Fake("both", "--hold", "60"), Fake("both")  # a takes the request, then says nothing
    killed: dict[str, float] = {}

    def kill_a_after_a_while() -> None:
        deadline = time.monotonic() + 30
        while a.count()["generate"] < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(HOLD_S)
        killed["at"] = time.time()
        a.kill()

    try:
        with client_for(tmp_path / "grader.db", {"a": a.url, "b": b.url}) as client:
            client.backend("code")  # built and probed: a and b are up
            killer = threading.Thread(target=kill_a_after_a_while)
            sent = time.time()
            killer.start()
            result = client.generate(request())
            killer.join()
            (row,) = client.history.query()
    finally:
        a.kill()
        b.kill()
    m = result.metrics
    assert (m.decode_worker, m.method, m.attempts) == ("b", "fallback", 2)
    assert "server a" in m.failover
    # b answered in milliseconds; the caller waited for a first.
    assert m.ttft_seconds >= HOLD_S
    assert m.ttft_seconds >= killed["at"] - sent - 0.05
    assert m.ttft_seconds <= m.total_seconds
    assert sent - 0.05 <= m.started_at <= sent + 0.5  # the caller's start, not b's
    assert (row.ttft_seconds, row.total_seconds) == (m.ttft_seconds, m.total_seconds)


def test_a_restarted_reply_is_one_row_with_a_note_naming_the_server(tmp_path: Path,
                                                                     cutting: str):
    b = Fake("both")
    seen: list[str] = []
    try:
        with client_for(tmp_path / "grader.db", {"a": cutting, "b": b.url}) as client:
            result = client.generate(request(), seen.append, restartable=True)
            rows = client.history.query()
    finally:
        b.kill()
    m = result.metrics
    assert result.text == "abc"  # b's whole reply
    assert seen[0] == "Left"  # a's first token reached the caller, then the cut
    assert any("restarting on another server" in s for s in seen)
    assert m.decode_worker == "b"
    assert m.attempts == 2
    assert m.failover.startswith("restarted after a cut stream on a (4 characters had "
                                 "streamed): ")
    assert m.ttft_seconds > 0.2  # counted from the first try, which the cut took 0.2 s
    assert [(r.request_id, r.ok, r.decode_worker) for r in rows] == [
        (m.request_id, True, "b")]  # one row: no error row without a server
    assert rows[0].failover == m.failover


def test_a_cut_reply_that_may_not_restart_is_an_error_row_naming_its_server(
        tmp_path: Path, cutting: str):
    b = Fake("both")
    try:
        with client_for(tmp_path / "grader.db", {"a": cutting, "b": b.url}) as client:
            with pytest.raises(StreamInterrupted) as cut:
                client.generate(request(), lambda _piece: None)
            rows = client.history.query()
    finally:
        b.kill()
    assert cut.value.partial == "Left"
    (row,) = rows
    assert row.error.startswith("StreamInterrupted: role code: server a failed after 4 "
                                "characters")
    assert (row.prefill_worker, row.decode_worker, row.attempts) == ("a", "a", 1)
    assert row.ttft_seconds > 0
