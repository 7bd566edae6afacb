"""A stand-in for ``python -m inference.server`` that computes nothing, for failover tests:

    python -m tests.fake_kvserver --role decode [--hold 60] [--decode-tps 100]

Speaks just enough of docs/server-protocol.md for the ``kvserver`` client: ``/health``,
``/status`` (``--decode-tps`` and ``--prefill-tps`` seed the router's speeds, so a test
decides which server is ranked first), ``/v1/disagg/prefill`` (a handle, no KV),
``/v1/disagg/decode`` and ``/v1/disagg/generate`` (NDJSON in chunks, as uvicorn sends
it: the headers at once, then after ``--hold`` seconds three tokens and the done line),
``DELETE /v1/kv/...``. ``GET /count`` says how many prefills and decodes it took;
``POST /control`` with ``{"health_delay": s}`` makes ``/health`` and ``/status`` answer
``s`` seconds late from then on (a server on a busy machine). Prints
``fake-kvserver listening on http://127.0.0.1:PORT`` on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

IDENTITY = {"name": "fake", "n_layer": 2, "n_embd": 8}


class State:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.health_delay = 0.0
        self.counts = {"prefill": 0, "decode": 0, "generate": 0}
        self.lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: State

    def do_GET(self) -> None:
        st = self.state
        if self.path in ("/health", "/status"):
            time.sleep(st.health_delay)
        if self.path == "/health":
            return self._json({"status": "ok"})
        if self.path == "/status":
            return self._json({
                "role": st.args.role, "server_version": "fake", "state": "ok",
                "identity": IDENTITY, "identity_hash": "fake-identity", "n_ctx": 2048,
                "slots_total": 1, "slots_busy": 0, "queue_depth": 0,
                "prefill_tps": st.args.prefill_tps, "decode_tps": st.args.decode_tps})
        if self.path == "/count":
            with st.lock:
                return self._json(dict(st.counts))
        return self._json({"error": {"type": "not_found", "message": self.path}}, 404)

    def do_POST(self) -> None:
        st = self.state
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        kind = self.path.rsplit("/", 1)[-1]
        if self.path == "/control":
            st.health_delay = float(body.get("health_delay", 0.0))
            return self._json({"ok": True})
        with st.lock:
            st.counts[kind] = st.counts.get(kind, 0) + 1
            n = st.counts[kind]
        if kind == "prefill":
            return self._json({"handle": f"h{n}", "first_token": 1, "n_tokens": 8,
                               "kv_bytes": 8000, "lease_seconds": 60,
                               "identity_hash": "fake-identity", "metrics": {}})
        if kind in ("decode", "generate"):
            return self._stream(kind)
        return self._json({"error": {"type": "not_found", "message": self.path}}, 404)

    def do_DELETE(self) -> None:
        self._json({"released": True})

    def _stream(self, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        time.sleep(self.state.args.hold)  # a long prefill or KV pull: the headers went
        lines: list[dict[str, Any]] = [{"type": "token", "text": t} for t in ("a", "b", "c")]
        lines.append({"type": "done", "text": "abc", "finish_reason": "stop",
                      "tokens": [1, 2, 3], "metrics": {"decode_tokens": 3},
                      **({"kv": {"bytes": 8000, "pull_seconds": 0.001}}
                         if kind == "decode" else {})})
        for line in lines:
            data = json.dumps(line).encode() + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _json(self, payload: Any, status: int = 200) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--role", default="both")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--hold", type=float, default=0.0)
    ap.add_argument("--decode-tps", type=float, default=50.0)
    ap.add_argument("--prefill-tps", type=float, default=500.0)
    args = ap.parse_args()
    Handler.state = State(args)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    sys.stdout.write(f"fake-kvserver listening on http://127.0.0.1:{server.server_port}\n")
    sys.stdout.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
