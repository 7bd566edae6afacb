"""Our server's continuous batching (issue 21), over real server processes on 127.0.0.1:
concurrent clients share the decode steps (counted in /metrics), and a decode server
killed while its batch is decoding loses no request. Real llama.cpp, the real client."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import httpx
import pytest

from inference import DisaggregatedClient, GenerationRequest
from inference.config import parse_config
from tests.server_procs import ServerProcess, start_server

pytestmark = [pytest.mark.slow, pytest.mark.llm]

TOPICS = ("left joins", "group by", "pivot tables", "missing values")


def metric(text: str, name: str) -> float:
    found = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    assert found, f"{name} not in /metrics:\n{text[:2000]}"
    return float(found.group(1))


def test_concurrent_clients_share_the_decode_steps_of_our_server():
    srv = start_server(role="both", extra_args=("--prefix-cache-mb", "0"))
    try:
        assert httpx.get(srv.url + "/status").json()["decode_batch"] == 4
        replies: dict[int, httpx.Response] = {}

        def ask(i: int) -> None:
            replies[i] = httpx.post(srv.url + "/v1/chat/completions", timeout=300, json={
                "messages": [{"role": "user", "content": f"Explain {TOPICS[i]} in pandas, "
                                                         "step by step, at length."}],
                "max_tokens": 64, "temperature": 0.0})

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(TOPICS))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        text = httpx.get(srv.url + "/metrics").text
        status = httpx.get(srv.url + "/status").json()
    finally:
        srv.stop()
    assert [replies[i].status_code for i in range(len(TOPICS))] == [200] * len(TOPICS)
    bodies = [replies[i].json() for i in range(len(TOPICS))]
    assert all(b["choices"][0]["message"]["content"].strip() for b in bodies)
    generated = sum(b["usage"]["completion_tokens"] for b in bodies)
    steps = metric(text, "grader_decode_steps_total")
    tokens = metric(text, "grader_decode_step_tokens_total")
    # Every token after each reply's first (sampled by its prefill) came from a step,
    # and some steps decoded several replies at once.
    assert tokens == generated - len(TOPICS)
    assert tokens > steps > 0
    assert metric(text, "grader_decode_step_seconds_total") > 0
    assert metric(text, "grader_decoding") == 0
    assert status["decoding"] == 0


def _client(tmp: Path, servers: dict[str, tuple[str, str]]) -> DisaggregatedClient:
    return DisaggregatedClient(parse_config({
        "engine": {"threads": 2, "history_db": str(tmp / "history.db")},
        "servers": {n: {"url": url, "role": role} for n, (url, role) in servers.items()},
        "roles": {"code": {"backend": "kvserver", "servers": list(servers),
                           "embedded_fallback": False, "options": {"handoff": "always"}}},
        "health": {"probe_interval": 0.5, "breaker_failures": 2,
                   "breaker_reset_seconds": 30, "canary_interval": 0},
        "timeouts": {"connect": 2.0, "prefill": 300.0, "kv_pull": 60.0,
                     "first_token": 300.0, "token_gap": 60.0, "probe": 2.0}}))


def _kill_when_decoding(d: ServerProcess, done: threading.Event, killed: dict[str, float]
                        ) -> None:
    deadline = time.monotonic() + 240
    while not done.is_set() and time.monotonic() < deadline:
        try:
            if httpx.get(d.url + "/status", timeout=2).json()["decoding"] >= 1:
                killed["decoding"] = httpx.get(d.url + "/status", timeout=2).json()["decoding"]
                d.kill()
                killed["at"] = time.time()
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.01)


def test_a_decode_server_killed_mid_batch_loses_no_request(tmp_path):
    p, d, b = (start_server(role=r, extra_args=("--prefix-cache-mb", "0"))
               for r in ("prefill", "decode", "decode"))
    done, killed = threading.Event(), {}
    try:
        with _client(tmp_path, {"p": (p.url, "prefill"), "d": (d.url, "decode"),
                                "b": (b.url, "decode")}) as client:
            killer = threading.Thread(target=_kill_when_decoding, args=(d, done, killed))
            killer.start()
            requests = [GenerationRequest.chat("code", "Answer at length.",
                                               f"Explain {t} in pandas, step by step.",
                                               max_tokens=96, temperature=0.0)
                        for t in TOPICS]
            results = [None] * len(requests)

            def one(i: int) -> None:
                results[i] = client.generate(requests[i], restartable=True)

            threads = [threading.Thread(target=one, args=(i,)) for i in range(len(requests))]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            done.set()
            killer.join()
            states = {h.name: h.state for h in client.health()}
    finally:
        done.set()
        for proc in (p, d, b):
            proc.stop()
    assert "at" in killed, "the decode server d never had a reply decoding"
    assert all(r is not None and r.text for r in results)
    moved = [r for r in results if re.search(r"\bd\b", r.metrics.failover)]
    # What d was decoding when it died was restarted on b; nothing was lost.
    assert len(moved) >= 1
    assert all(r.metrics.decode_worker == "b" for r in moved)
    assert states["d"] == "down"


def test_a_gguf_without_a_chat_template_is_refused_unless_one_is_given():
    from inference.errors import ConfigError
    from inference.models import BUILTIN_MODELS
    from inference.server.options import ServerOptions
    from tests.server_procs import ServerStartError

    gguf = str(BUILTIN_MODELS["gemma3-270m"].resolve_path())  # a file with no template
    with pytest.raises(ServerStartError, match="no chat template"):
        start_server(model=gguf, role="both", timeout=120)
    srv = start_server(model=gguf, role="both", timeout=120,
                       extra_args=("--chat-template", "plain"))
    try:
        resp = httpx.post(srv.url + "/v1/chat/completions", timeout=120, json={
            "messages": [{"role": "user", "content": "A left join keeps"}],
            "max_tokens": 4, "temperature": 0.0})
    finally:
        srv.stop()
    assert resp.status_code == 200, resp.text
    assert resp.json()["usage"]["completion_tokens"] >= 1
    with pytest.raises(ConfigError, match="not 'plain', a Jinja template, or a file"):
        ServerOptions(model=gguf, chat_template="no-such-file.jinja").model_spec()
    with pytest.raises(ConfigError, match="does not compile"):
        ServerOptions(model=gguf, chat_template="{% for m in messages %}").model_spec()
