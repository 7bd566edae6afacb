"""The prefill/decode server as real processes on 127.0.0.1 (docs/server-protocol.md).

One module-wide set of servers, all with the same token: P (prefill), D (decode) and
B (both; one slot, no queue, 1 s leases). KV moves from P to D over real HTTP.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from inference.kvidentity import ModelIdentity
from inference.kvwire import MAGIC, write_frames
from inference.models import BUILTIN_MODELS
from tests.server_procs import PYTHON, REPO, ServerProcess, free_port, start_server


def llm(test: Any) -> Any:
    """Marks a test that uses the real server processes (and their model)."""
    return pytest.mark.slow(pytest.mark.llm(test))


TOKEN = "s3cret-test-token"
COMMON = ("--n-ctx", "2048", "--threads", "2")
FILLER = ("Cell {i}: the analyst loads sales.csv with pandas, groups revenue by region, "
          "computes the mean order value, and plots a bar chart of the top {i} products. ")
SHORT = "Name three colours of the rainbow."
LONG = "".join(FILLER.format(i=i) for i in range(1, 41)) + "Summarise the notebook."
# The colour is one of a list: a free string lets the small model list colours until
# max_tokens (it did, once llama.cpp was built without -march=native), and a JSON cut
# there is no reply to compare
SCHEMA = {"type": "object", "properties": {"colour": {"type": "string", "enum": [
    "red", "orange", "yellow", "green", "blue", "indigo", "violet"]}}, "required": ["colour"]}


@dataclass
class Servers:
    p: ServerProcess
    d: ServerProcess
    b: ServerProcess


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    started: list[ServerProcess] = []
    try:
        for role, extra in (("prefill", ()), ("decode", ()),
                            ("both", ("--slots", "1", "--queue", "0", "--lease-seconds", "1"))):
            started.append(start_server(role=role, token=TOKEN, extra_args=(*COMMON, *extra)))
        yield Servers(*started)
    finally:
        for srv in started:
            srv.close()


def req(text: str, max_tokens: int = 32, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"messages": [{"role": "system", "content": "You are a concise assistant."},
                         {"role": "user", "content": text}],
            "max_tokens": max_tokens, "temperature": 0.0, "seed": 0, "json_schema": schema,
            "stop": [], "request_id": "t1", "role": "code"}


def post(srv: ServerProcess, path: str, body: dict[str, Any],
         headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.post(srv.url + path, json=body, timeout=300,
                      headers=srv.headers if headers is None else headers)


def get(srv: ServerProcess, path: str, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.get(srv.url + path, timeout=30,
                     headers=srv.headers if headers is None else headers)


def ndjson(resp: httpx.Response) -> list[dict[str, Any]]:
    return [json.loads(line) for line in resp.text.splitlines() if line.strip()]


def error_of(resp: httpx.Response) -> dict[str, Any]:
    assert resp.headers["content-type"].startswith("application/json"), resp.text[:300]
    assert '"type":"token"' not in resp.text
    return resp.json()["error"]  # type: ignore[no-any-return]


def metric(srv: ServerProcess, name: str, **labels: str) -> float:
    text = get(srv, "/metrics").text
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v
                                           for k, v in labels.items()):
                total += sample.value
    return total


# -- health, status, metrics, auth ------------------------------------------------------

@llm
def test_health_answers_loading_then_ok(servers: Servers) -> None:
    for srv in (servers.p, servers.d, servers.b):
        seen = srv.health_seen
        assert seen[-1] == (200, {"status": "ok"})
        assert all(s in ((503, {"status": "loading"}), (200, {"status": "ok"})) for s in seen)
        assert get(srv, "/health").json() == {"status": "ok"}


@llm
def test_status_carries_the_identity(servers: Servers) -> None:
    path = BUILTIN_MODELS["smollm2-135m"].resolve_path()
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    for srv, role in ((servers.p, "prefill"), (servers.d, "decode"), (servers.b, "both")):
        st = get(srv, "/status").json()
        assert st["role"] == role
        assert st["server_version"] == "1"
        ident = ModelIdentity.from_dict(st["identity"])
        assert ident.gguf_sha256 == sha
        assert ident.file == path.name
        assert ident.size_bytes == path.stat().st_size
        assert (ident.n_layer, ident.n_embd, ident.n_vocab) == (30, 576, 49152)
        assert (ident.kv_type_k, ident.kv_type_v) == ("f16", "f16")
        assert ident.flash_attn is False
        assert ident.v_trans is True
        assert st["identity_hash"] == ident.identity_hash
        assert st["n_ctx"] == 2048
        for key in ("uptime_s", "slots_total", "slots_busy", "queue_depth", "queue_max",
                    "kv_handles", "kv_store_bytes", "kv_store_max_bytes", "prefill_tps",
                    "decode_tps"):
            assert isinstance(st[key], int | float), key
    assert get(servers.b, "/status").json()["queue_max"] == 0


@llm
def test_metrics_parse_and_move(servers: Servers) -> None:
    b = servers.b
    before_req = metric(b, "grader_requests_total", endpoint="/v1/disagg/generate",
                        status="200")
    before_tok = metric(b, "llamacpp:tokens_predicted_total")
    resp = post(b, "/v1/disagg/generate", {"request": req(SHORT, 8), "stream": False})
    assert resp.status_code == 200, resp.text
    assert metric(b, "grader_requests_total", endpoint="/v1/disagg/generate",
                  status="200") == before_req + 1
    assert metric(b, "llamacpp:tokens_predicted_total") == before_tok + len(resp.json()["tokens"])
    names = {f.name for f in text_string_to_metric_families(get(b, "/metrics").text)}
    for name in ("llamacpp:prompt_tokens", "llamacpp:prompt_seconds",
                 "llamacpp:requests_processing", "llamacpp:requests_deferred",
                 "grader_requests_rejected", "grader_kv_bytes_sent", "grader_kv_errors",
                 "grader_kv_handles", "grader_kv_store_bytes", "grader_kv_leases_expired"):
        assert name in names


@llm
def test_every_route_needs_the_token(servers: Servers) -> None:
    for path in ("/health", "/metrics", "/status"):
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
            resp = get(servers.p, path, headers=headers)
            assert resp.status_code == 401
            assert resp.json()["error"]["type"] == "unauthorized"
        assert get(servers.p, path).status_code == 200
    resp = post(servers.p, "/v1/disagg/prefill", {"request": req(SHORT)}, headers={})
    assert resp.status_code == 401


def test_non_loopback_host_without_token_is_refused() -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}
    done = subprocess.run([PYTHON, "-m", "inference.server", "--host", "0.0.0.0", "--port",
                           "0"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "without a token" in done.stderr
    assert "listening on" not in done.stderr


def test_before_the_model_loads_every_request_is_503_loading() -> None:
    """The real app over an engine that has not started loading (no model work)."""
    from inference.server import ServerEngine, ServerOptions, create_app

    engine = ServerEngine(ServerOptions(role="prefill"), token=TOKEN)
    app = create_app(engine, TOKEN)

    async def calls() -> None:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://test",
                                     headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            health = await client.get("/health")
            assert (health.status_code, health.json()) == (503, {"status": "loading"})
            status = (await client.get("/status")).json()
            assert (status["state"], status["identity"], status["role"]) == \
                ("loading", None, "prefill")
            resp = await client.post("/v1/disagg/prefill", json={"request": req(SHORT)})
            assert resp.status_code == 503
            assert resp.json()["error"]["type"] == "loading"
            assert int(resp.headers["Retry-After"]) >= 1
            resp = await client.post("/v1/disagg/decode", json={"request": req(SHORT)})
            assert resp.json()["error"]["type"] == "wrong_role"
            resp = await client.get("/health", headers={"Authorization": "Bearer no"})
            assert resp.status_code == 401
            # The scheme's name is case-insensitive (RFC 6750); the token is not.
            for scheme in ("bearer", "BEARER", "beaRer"):
                resp = await client.get("/health",
                                        headers={"Authorization": f"{scheme} {TOKEN}"})
                assert resp.status_code == 503, scheme  # past the guard: loading
            for value in (f"Basic {TOKEN}", f"Bearer {TOKEN.upper()}x", "Bearer", TOKEN,
                          f"Bearer{TOKEN}"):
                resp = await client.get("/health", headers={"Authorization": value})
                assert resp.status_code == 401, value

    try:
        asyncio.run(calls())
    finally:
        engine.close()


# -- prefill on P + decode on D == generate on B -----------------------------------------

@llm
@pytest.mark.parametrize(("text", "schema"), [(SHORT, None), (LONG, None), (SHORT, SCHEMA)],
                         ids=["short", "1500-tokens", "schema"])
def test_prefill_then_decode_equals_generate(servers: Servers, text: str,
                                             schema: dict[str, Any] | None) -> None:
    body = req(text, 32, schema)
    ref = post(servers.b, "/v1/disagg/generate", {"request": body, "stream": False})
    assert ref.status_code == 200, ref.text
    ref = ref.json()

    pre = post(servers.p, "/v1/disagg/prefill", {"request": body})
    assert pre.status_code == 200, pre.text
    pre = pre.json()
    if text is LONG:
        assert 1400 < pre["n_tokens"] < 1700
    assert pre["identity_hash"] == get(servers.d, "/status").json()["identity_hash"]
    assert pre["metrics"]["prompt_tokens"] == pre["n_tokens"]

    resp = post(servers.d, "/v1/disagg/decode",
                {"request": body, "handle": pre["handle"], "source": servers.p.url,
                 "source_token": None, "stream": True})
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("application/x-ndjson")
    lines = ndjson(resp)
    done = lines[-1]
    assert done["type"] == "done"
    assert all(line["type"] == "token" for line in lines[:-1])
    assert "".join(line["text"] for line in lines[:-1]) == done["text"]
    assert done["tokens"], "the decode produced no token"
    assert done["tokens"][0] == pre["first_token"]
    assert done["tokens"] == ref["tokens"]
    assert done["text"] == ref["text"]
    assert done["metrics"]["kv_bytes"] == pre["kv_bytes"]
    assert done["kv"]["bytes"] == pre["kv_bytes"]
    for key in ("handshake_seconds", "pull_seconds", "load_seconds"):
        assert done["kv"][key] > 0
    assert done["metrics"]["handoff_seconds"] >= done["metrics"]["kv_transfer_seconds"] > 0
    if schema is not None:
        assert isinstance(json.loads(done["text"])["colour"], str)
    # Pulled in full: the handle is gone.
    assert get(servers.p, f"/v1/kv/{pre['handle']}").status_code == 404


@llm
def test_decode_of_another_models_kv_is_refused(servers: Servers) -> None:
    pre = post(servers.p, "/v1/disagg/prefill", {"request": req(SHORT)}).json()
    with start_server("gemma3-270m", "decode", token=TOKEN, extra_args=COMMON) as gemma:
        resp = post(gemma, "/v1/disagg/decode", {"request": req(SHORT), "handle": pre["handle"],
                                                 "source": servers.p.url, "stream": True})
        assert resp.status_code == 409
        err = error_of(resp)
        assert err["type"] == "kv_incompatible"
        assert "smollm2-135m" in err["message"]
        assert "gemma3-270m" in err["message"]
    post(servers.p, "/v1/disagg/prefill", {"request": req(SHORT)})  # P still serves


# -- bad KV from a fake prefill server ---------------------------------------------------

class FakeSource:
    """A real HTTP server speaking the prefill side's KV protocol, badly on purpose."""

    def __init__(self, identity: ModelIdentity, n_tokens: int) -> None:
        state = bytes(range(256)) * 400
        good = b"".join(write_frames(identity, [1] * n_tokens, 4, state, 1 << 14))
        start = 8 + int.from_bytes(good[4:8], "little")
        header = json.loads(good[8:start])
        header["nbytes"] = 600 * 1024 * 1024
        big = json.dumps(header).encode()
        corrupt = bytearray(good)
        corrupt[start + 100] ^= 0xFF
        self.streams = {
            "corrupt": bytes(corrupt),
            "truncated": good[:len(good) // 2],
            "version": b"GKV9" + good[4:],
            "oversized": MAGIC + len(big).to_bytes(4, "little") + big + good[start:],
        }
        self.nbytes = len(state)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", 0)))
                body = json.dumps({"format_version": 1, "nbytes": fake.nbytes,
                                   "n_tokens": n_tokens, "chunk_bytes": 1 << 14}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()
                self.wfile.write(fake.streams[self.path.rsplit("/", 1)[-1]])

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeSource:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@llm
def test_bad_kv_is_refused_and_the_decode_server_keeps_serving(servers: Servers) -> None:
    d = servers.d
    identity = ModelIdentity.from_dict(get(d, "/status").json()["identity"])
    errors_before = metric(d, "grader_kv_errors_total")
    # The fake offers KV of as many tokens as the real prompt has (D checks that).
    pre = post(servers.p, "/v1/disagg/prefill", {"request": req(SHORT, 8)}).json()
    with FakeSource(identity, pre["n_tokens"]) as fake:
        for kind in ("corrupt", "truncated", "version", "oversized"):
            resp = post(d, "/v1/disagg/decode", {"request": req(SHORT, 8), "handle": kind,
                                                 "source": fake.url, "stream": True})
            assert resp.status_code == 502, (kind, resp.text)
            assert error_of(resp)["type"] == f"kv_{'too_large' if kind == 'oversized' else kind}"
    assert metric(d, "grader_kv_errors_total") == errors_before + 4

    gone = f"http://127.0.0.1:{free_port()}"
    resp = post(d, "/v1/disagg/decode", {"request": req(SHORT), "handle": "k-x", "source": gone})
    assert resp.status_code == 502
    assert error_of(resp)["type"] == "kv_source_unreachable"

    resp = post(d, "/v1/disagg/decode", {"request": req(SHORT, 8), "handle": pre["handle"],
                                         "source": servers.p.url, "source_token": "wrong"})
    assert resp.status_code == 502  # P refused D's token
    assert error_of(resp)["type"] == "kv_source_unreachable"
    resp = post(d, "/v1/disagg/decode", {"request": req(SHORT, 8), "handle": pre["handle"],
                                         "source": servers.p.url, "stream": False})
    assert resp.status_code == 200, resp.text
    assert resp.json()["type"] == "done"
    assert resp.json()["tokens"]


# -- leases, roles, overload ------------------------------------------------------------

@llm
def test_an_expired_lease_is_not_found(servers: Servers) -> None:
    b, d = servers.b, servers.d
    expired_before = metric(b, "grader_kv_leases_expired_total")
    pre = post(b, "/v1/disagg/prefill", {"request": req(SHORT)}).json()
    time.sleep(2.5)
    resp = post(d, "/v1/disagg/decode", {"request": req(SHORT), "handle": pre["handle"],
                                         "source": b.url})
    assert resp.status_code == 404
    assert error_of(resp)["type"] == "handle_not_found"
    assert get(b, f"/v1/kv/{pre['handle']}").status_code == 404
    assert metric(b, "grader_kv_leases_expired_total") >= expired_before + 1


@llm
def test_request_errors_are_typed(servers: Servers) -> None:
    pre = post(servers.p, "/v1/disagg/prefill", {"request": req(SHORT, 4)}).json()
    resp = post(servers.d, "/v1/disagg/decode", {"request": req("Another prompt.", 4),
                                                 "handle": pre["handle"],
                                                 "source": servers.p.url})
    assert resp.status_code == 400
    assert "another prompt" in error_of(resp)["message"]
    resp = post(servers.d, "/v1/disagg/prefill", {"request": req(SHORT)})
    assert resp.status_code == 404
    assert error_of(resp)["type"] == "wrong_role"
    resp = post(servers.p, "/v1/disagg/decode", {"request": req(SHORT), "handle": "k-1",
                                                 "source": servers.b.url})
    assert error_of(resp)["type"] == "wrong_role"
    resp = post(servers.p, "/v1/disagg/prefill", {"request": {"messages": []}})
    assert resp.status_code == 400
    assert error_of(resp)["type"] == "invalid_request"
    resp = post(servers.p, "/v1/disagg/prefill", {"request": req(SHORT, 4, {"type": "nah"})})
    assert error_of(resp)["type"] == "schema"
    resp = post(servers.p, "/v1/disagg/prefill", {"request": req(SHORT, 4000)})
    assert error_of(resp)["type"] == "context_overflow"


@llm
def test_a_full_server_answers_overloaded(servers: Servers) -> None:
    b = servers.b
    with httpx.stream("POST", b.url + "/v1/disagg/generate", headers=b.headers, timeout=120,
                      json={"request": req(LONG, 32), "stream": True}) as first:
        deadline = time.monotonic() + 60
        # busy prefilling in its slot, or decoding in the batch: admitted either way
        while not ((st := get(b, "/status").json())["slots_busy"] or st["decoding"]):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        second = post(b, "/v1/disagg/generate", {"request": req(SHORT, 4), "stream": False})
        assert second.status_code == 503
        assert error_of(second)["type"] == "overloaded"
        assert int(second.headers["Retry-After"]) >= 1
        assert first.status_code == 200
        assert json.loads(list(first.iter_lines())[-1])["type"] == "done"
    assert metric(b, "grader_requests_rejected_total", reason="queue_full") >= 1


# -- OpenAI-compatible chat ----------------------------------------------------------------

@llm
def test_chat_completions_stream_equals_reply(servers: Servers) -> None:
    b = servers.b
    body = {"model": "any", "messages": req(SHORT)["messages"], "max_tokens": 24,
            "temperature": 0}
    whole = post(b, "/v1/chat/completions", body)
    assert whole.status_code == 200, whole.text
    whole = whole.json()
    text = whole["choices"][0]["message"]["content"]
    assert text
    assert whole["usage"]["completion_tokens"] > 0
    assert whole["timings"]["predicted_n"] == whole["usage"]["completion_tokens"]
    assert whole["timings"]["prompt_n"] + whole["timings"]["cache_n"] == \
        whole["usage"]["prompt_tokens"]

    streamed = post(b, "/v1/chat/completions",
                    {**body, "stream": True, "stream_options": {"include_usage": True}})
    assert streamed.headers["content-type"].startswith("text/event-stream")
    events = [line[len("data: "):] for line in streamed.text.splitlines()
              if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    deltas = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert deltas == text
    usage = [c for c in chunks if c["choices"] == []]
    assert len(usage) == 1
    assert usage[0]["usage"]["completion_tokens"] == whole["usage"]["completion_tokens"]

    schema = {**body, "response_format": {"type": "json_schema",
                                          "json_schema": {"name": "c", "schema": SCHEMA}}}
    reply = post(b, "/v1/chat/completions", schema).json()
    assert isinstance(json.loads(reply["choices"][0]["message"]["content"])["colour"], str)
