"""Continuous batching on the decode side (issue 21), on the bundled SmolLM2 model.

Requests that decode at the same time share one context, a sequence each, one
``llama_decode`` per step for all of them: each keeps its own sampler (its grammar), a
request joins while others decode and leaves when its reply ends, a KV state that does
not fit fails its own request only, and a closed route fails its pending requests
instead of leaving their callers waiting.
"""

from __future__ import annotations

import dataclasses
import json
import threading

import jsonschema
import pytest
from conftest import make_config

from inference import (
    DisaggregatedClient,
    GenerationRequest,
    KVTransferError,
    OutputValidationError,
)

pytestmark = [pytest.mark.llm, pytest.mark.slow]

SYSTEM = "You are a teaching assistant. Reply with JSON only."
VERDICT = {"type": "object", "properties": {
    "verdict": {"enum": ["met", "partial", "not met"]},
    "evidence": {"type": "array", "items": {"type": "string"}, "maxItems": 2}},
    "required": ["verdict", "evidence"], "additionalProperties": False}
SCORE = {"type": "object", "properties": {
    "score": {"type": "integer", "minimum": 0, "maximum": 10},
    "why": {"type": "string", "maxLength": 80}},
    "required": ["score", "why"], "additionalProperties": False}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    c = DisaggregatedClient(make_config(tmp_path_factory.mktemp("batch"), {
        "code": {"mode": "disaggregated", "prefix_cache_mb": 0, "fallback": False,
                 "options": {"decode_batch": 4}}}))
    yield c
    c.close()


def at_once(client: DisaggregatedClient, requests: list[GenerationRequest]) -> list:
    out: list = [None] * len(requests)
    start = threading.Barrier(len(requests))

    def run(i: int) -> None:
        start.wait()
        try:
            out[i] = client.generate(requests[i])
        except Exception as exc:  # the test reads it
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    return out


def test_concurrent_replies_share_the_batch_each_with_its_own_grammar(client):
    requests = [GenerationRequest.chat("code", SYSTEM, f"Grade this code, case {i}: "
                                       f"total = sum(range({i}))", json_schema=schema,
                                       max_tokens=120)
                for i, schema in enumerate([VERDICT, SCORE, VERDICT, SCORE, VERDICT, SCORE])]
    replies = at_once(client, requests)
    # a reply the tiny model talks past max_tokens (a string it never closes) is cut: its
    # typed error says so; every other one is valid JSON of its own schema
    cut = [r for r in replies if isinstance(r, OutputValidationError)]
    assert all(r.metrics.finish_reason == "length" for r in cut), cut
    assert len(cut) <= 2, cut
    assert not [r for r in replies if isinstance(r, Exception) and r not in cut], replies
    for req, reply in zip(requests, replies, strict=True):
        if reply in cut:
            continue
        jsonschema.validate(json.loads(reply.text), req.json_schema)
        m = reply.metrics
        assert m.method == "disaggregated"
        assert m.decode_worker == "code/decode"
        assert 1 <= m.decode_batch <= 4  # never more sequences than the context holds
        # the first token comes from the prefill side; each later one is one batch step
        assert m.decode_evals == len(reply.tokens) - (reply.finish_reason == "length")
        assert m.decode_seconds > 0
    # they really shared steps
    assert max(r.metrics.decode_batch for r in replies if r not in cut) >= 2
    health = next(h for h in client.health() if h.name == "code/decode")
    assert health.state == "up"
    assert health.requests >= len(requests)
    assert not health.busy


def test_a_request_alone_decodes_as_before(client):
    req = GenerationRequest.chat("code", "You are a teaching assistant.",
                                 "Name two pandas functions.", max_tokens=40)
    alone = client.generate(req)
    assert alone.metrics.decode_batch == 1
    again = client.generate(dataclasses.replace(req, request_id="again"))
    assert again.tokens == alone.tokens  # a batch of one is deterministic


def test_a_state_that_cannot_load_fails_its_own_request_only(client):
    backend = client.backend("code")
    good = GenerationRequest.chat("code", "You are a teaching assistant.", "Say hello.",
                                  max_tokens=24)
    handle = backend.prefill(good)
    broken = dataclasses.replace(handle, fingerprint="not-this-model")
    results: dict[str, object] = {}

    def decode(name, h):
        try:
            results[name] = backend.decode(h)
        except Exception as exc:  # the test reads it
            results[name] = exc

    threads = [threading.Thread(target=decode, args=(n, h))
               for n, h in (("broken", broken), ("good", backend.prefill(good)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert isinstance(results["broken"], KVTransferError)
    assert results["good"].tokens  # type: ignore[union-attr]


def test_closing_fails_what_waits_instead_of_hanging(tmp_path):
    c = DisaggregatedClient(make_config(tmp_path, {"code": {
        "mode": "disaggregated", "prefix_cache_mb": 0, "fallback": False}}))
    backend = c.backend("code")
    handle = backend.prefill(GenerationRequest.chat("code", "Hi.", "Count to fifty.",
                                                    max_tokens=400))
    done: list = []
    t = threading.Thread(target=lambda: done.append(_try(backend.decode, handle)))
    t.start()
    c.close()
    t.join(timeout=120)
    assert not t.is_alive()
    assert done  # either finished before the close or failed with a clear error
    assert not isinstance(done[0], Exception) or "closed" in str(done[0])


def _try(fn, *args):
    try:
        return fn(*args)
    except Exception as exc:  # the caller reads it
        return exc
