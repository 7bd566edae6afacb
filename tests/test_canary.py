"""The correctness canary: a pair whose shipped output differs from the decode server
alone is marked degraded and the router stops shipping KV to it; a pair that agrees
stays in use. The diverging server is a fake at the HTTP boundary: it speaks our
protocol and answers a decode with other tokens than its own generate (a KV state
that loaded but computes garbage, which no real server here produces on purpose)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import httpx
import pytest

from inference import DisaggregatedClient, GenerationRequest
from inference.cluster.canary import COMPARE_TOKENS, Canary
from inference.config import parse_config
from tests.server_procs import start_server

pytestmark = [pytest.mark.slow, pytest.mark.llm]


class _Diverging(BaseHTTPRequestHandler):
    status: ClassVar[dict[str, Any]] = {}

    def do_GET(self) -> None:
        self._json({"status": "ok"} if self.path == "/health" else self.status)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        tokens = list(range(1, COMPARE_TOKENS + 1))
        if self.path == "/v1/disagg/decode":
            tokens[3:] = [7] * (COMPARE_TOKENS - 3)  # agrees on 3 tokens, then not
        line = {"type": "done", "text": "x", "finish_reason": "length", "tokens": tokens,
                "metrics": {"decode_tokens": len(tokens)}}
        body = (json.dumps(line) + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, data: dict[str, Any]) -> None:
        body = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_diverging_pair_is_routed_around_and_an_agreeing_one_kept(tmp_path):
    p = start_server(role="prefill")
    d = start_server(role="decode")
    _Diverging.status = {**httpx.get(p.url + "/status").json(), "role": "decode"}
    fake = ThreadingHTTPServer(("127.0.0.1", 0), _Diverging)
    threading.Thread(target=fake.serve_forever, daemon=True).start()
    try:
        config = parse_config({
            "engine": {"threads": 2, "history_db": str(tmp_path / "h.db")},
            "servers": {"p": {"url": p.url, "role": "prefill"},
                        "d": {"url": d.url, "role": "decode"},
                        "bad": {"url": f"http://127.0.0.1:{fake.server_port}",
                                "role": "decode"}},
            "roles": {"code": {"backend": "kvserver", "servers": ["p", "d", "bad"],
                               "embedded_fallback": False,
                               "options": {"handoff": "always"}}},
            "health": {"canary_interval": 0}})
        with DisaggregatedClient(config) as client:
            backend = client.backend("code")
            cluster = backend.cluster
            results = {(r.prefill, r.decode): r for r in Canary(cluster, 60).run_once()}
            states = {n: cluster.state(n).state for n in ("p", "d", "bad")}
            request = GenerationRequest.chat("code", "Be brief.", "Name a colour.",
                                             max_tokens=4, temperature=0.0)
            shipped_to = {o.pair[1] for o in backend.options(request) if o.pair}
            events = [e.kind for e in cluster.monitor.events()]
    finally:
        fake.shutdown()
        fake.server_close()
        p.stop()
        d.stop()
    good, bad = results[("p", "d")], results[("p", "bad")]
    assert good.ok
    assert good.agreed == good.compared == COMPARE_TOKENS
    assert not bad.ok
    assert (bad.agreed, bad.compared) == (3, COMPARE_TOKENS)
    assert "diverged" in bad.detail
    assert states == {"p": "up", "d": "up", "bad": "degraded"}
    assert shipped_to == {"d"}
    assert "canary_fail" in events
    assert "canary_ok" in events
