"""Engine pieces without a model: types, config, grammar, prefix cache, history, routing."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from types import ModuleType
from typing import ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import inference
from inference import (
    Backend,
    ConfigError,
    DisaggregatedClient,
    EngineConfig,
    GenerationRequest,
    GenerationResult,
    InvalidRequestError,
    KVHandle,
    KVTransferError,
    MetricsHistory,
    RequestMetrics,
    RouteConfig,
    SchemaError,
    WorkerHealth,
    load_config,
    parse_config,
    percentile,
    register_backend,
)
from inference.grammar import check_schema
from inference.prefix_cache import PrefixCache, common_prefix


def test_exported_names_are_the_public_surface():
    # Submodules show up as attributes once imported; only the names we define count.
    public = {n for n in dir(inference)
              if not n.startswith("_") and not isinstance(getattr(inference, n), ModuleType)}
    assert public == set(inference.__all__)


# -- requests -------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [
    {"messages": ()},
    {"messages": (inference.ChatMessage("user", "   "),)},
    {"max_tokens": 0},
    {"temperature": -1.0},
    {"stop": ("",)},
])
def test_bad_requests_are_refused(kwargs):
    base = {"role": "code", "messages": (inference.ChatMessage("user", "hi"),)}
    with pytest.raises(InvalidRequestError):
        GenerationRequest(**{**base, **kwargs})


def test_chat_message_role_is_checked():
    with pytest.raises(InvalidRequestError, match="system, user, assistant"):
        inference.ChatMessage("tool", "x")  # type: ignore[arg-type]


def test_metrics_round_trip_and_rates():
    m = RequestMetrics(request_id="r1", prefill_tokens=100, prefill_seconds=0.5,
                       decode_evals=20, decode_tokens=20, decode_seconds=0.25)
    assert m.prefill_tps == 200
    assert m.decode_tps == 80
    assert m.tpot_seconds == pytest.approx(0.0125)
    assert RequestMetrics.from_dict(m.to_dict()) == m


# -- config ---------------------------------------------------------------------
def test_default_config_has_both_roles_embedded():
    cfg = parse_config({})
    assert set(cfg.routes) == {"code", "feedback"}
    assert all(r.backend == "embedded" and r.mode == "disaggregated" for r in cfg.routes.values())


def test_config_file(tmp_path: Path):
    path = tmp_path / "grader.toml"
    path.write_text(
        '[engine]\nthreads = 2\nhistory_db = "%s"\n'
        '[roles.code]\nmode = "single"\nprefix_cache_mb = 64\n'
        '[roles.feedback]\nmodel = "mine"\n'
        '[models.mine]\npath = "/models/mine.gguf"\nchat_template = "plain"\n'
        % (tmp_path / "h.db"))
    cfg = load_config(path)
    assert cfg.threads == 2
    assert cfg.routes["code"].mode == "single"
    assert cfg.routes["feedback"].model == "mine"
    assert cfg.model("mine").path == "/models/mine.gguf"
    assert cfg.source == str(path)


@pytest.mark.parametrize(("data", "message"), [
    ({"roles": {"code": {"mode": "sideways"}}}, "mode 'sideways'"),
    ({"roles": {"code": {"colour": "red"}}}, "unknown keys colour"),
    ({"roles": {"code": {"model": "gpt-9"}}}, "unknown model 'gpt-9'"),
    ({"engine": {"threads": 0}}, "threads must be a positive integer"),
    ({"surprise": {}}, "unknown keys surprise"),
    ({"models": {"x": {}}}, "give `path`"),
])
def test_bad_config_names_the_problem(data, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(data)


def test_unreadable_config_file(tmp_path: Path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[roles.code\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)


def test_unknown_backend_is_refused_at_start():
    cfg = parse_config({"roles": {"code": {"backend": "carrier-pigeon"}}})
    with pytest.raises(ConfigError, match="known backends are"):
        DisaggregatedClient(dataclasses.replace(cfg, history_db=None))


# -- grammar --------------------------------------------------------------------
def test_bounded_numbers_become_grammar_rules():
    g = check_schema({"type": "object", "properties": {
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "points": {"type": "integer", "minimum": 0, "maximum": 12}},
        "required": ["confidence", "points"]})
    assert '"12"' in g
    assert '"1" ("." "0"' in g


@pytest.mark.parametrize("schema", [{"type": 5}, {"enum": "not-a-list"}])
def test_invalid_schema(schema):
    with pytest.raises(SchemaError):
        check_schema(schema)


# -- prefix cache ---------------------------------------------------------------
token_lists = st.lists(st.integers(0, 5), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(entries=st.lists(token_lists, max_size=8), query=token_lists)
def test_prefix_cache_finds_the_longest_prefix(entries, query):
    cache = PrefixCache(max_bytes=10**9, min_tokens=1)
    for e in entries:
        cache.put(e, bytes(len(e)))
    entry, n = cache.lookup(query)
    best = max([min(common_prefix(e, query), len(query) - 1) for e in entries] + [0])
    assert n == (best if best >= 1 else 0)
    if entry is not None:
        assert tuple(query[:n]) == entry.tokens[:n]


@settings(max_examples=100, deadline=None)
@given(sizes=st.lists(st.integers(1, 400), min_size=1, max_size=30))
def test_prefix_cache_stays_within_its_bytes(sizes):
    cache = PrefixCache(max_bytes=1000, min_tokens=1)
    for i, size in enumerate(sizes):
        cache.put([i, i + 1, i + 2], bytes(size))
        assert cache.nbytes <= 1000
        assert cache.nbytes == sum(e.nbytes for e in cache._entries.values())


# -- history --------------------------------------------------------------------
def test_history_survives_a_restart(tmp_path: Path):
    db = tmp_path / "h.db"
    h = MetricsHistory(db, maxlen=5)
    for i in range(8):
        h.record(RequestMetrics(request_id=f"r{i}", role="code", started_at=float(i),
                                ttft_seconds=0.1 * (i + 1)))
    h.close()
    again = MetricsHistory(db, maxlen=5)
    assert again.count() == 8
    assert [m.request_id for m in again.recent()] == ["r3", "r4", "r5", "r6", "r7"]
    assert [m.request_id for m in again.query(limit=2)] == ["r7", "r6"]
    assert again.query(role="feedback") == []
    assert [m.request_id for m in again.query(since=6.0)] == ["r7", "r6"]
    again.close()


def test_percentile():
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([5.0], 95) == 5.0


# -- routing through a fake backend (a real Backend subclass) ------------------------
class FlakyKVBackend(Backend):
    """Prefill works, the KV load always fails: the client must fall back."""

    calls: ClassVar[list[str]] = []

    def prefill(self, request):
        self.calls.append("prefill")
        return KVHandle(request, (1, 2), 3, b"kv", "fp", RequestMetrics(), time.perf_counter())

    def decode(self, handle, on_token=None):
        self.calls.append("decode")
        raise KVTransferError("decode server refused the state")

    def generate(self, request, on_token=None):
        self.calls.append("generate")
        if on_token:
            on_token("ok")
        return GenerationResult("ok", "stop", RequestMetrics(request_id=request.request_id,
                                                             role=request.role, method="single"))

    def health(self):
        return [WorkerHealth("flaky", self.route.role, self.route.name, "generate", "degraded")]


@pytest.fixture
def flaky_client(tmp_path: Path):
    register_backend("flaky-kv", FlakyKVBackend)
    FlakyKVBackend.calls = []
    cfg = EngineConfig(routes={"code": RouteConfig("code", backend="flaky-kv")},
                       history_db=tmp_path / "h.db")
    client = DisaggregatedClient(cfg)
    yield client
    client.close()


def test_failed_handoff_falls_back_to_one_worker_and_says_so(flaky_client):
    r = flaky_client.generate(GenerationRequest.chat("code", None, "hi"))
    assert r.text == "ok"
    assert r.metrics.method == "fallback"
    assert FlakyKVBackend.calls == ["prefill", "decode", "generate"]
    assert flaky_client.history.recent(1)[0].method == "fallback"


def test_without_fallback_the_error_surfaces_and_is_recorded(tmp_path: Path):
    register_backend("flaky-kv", FlakyKVBackend)
    cfg = EngineConfig(routes={"code": RouteConfig("code", backend="flaky-kv", fallback=False)},
                       history_db=tmp_path / "h.db")
    with DisaggregatedClient(cfg) as client:
        with pytest.raises(KVTransferError):
            client.generate(GenerationRequest.chat("code", None, "hi"))
        rows = client.history.query()
        assert rows[0].error.startswith("KVTransferError")


def test_generate_many_can_return_errors_in_place(flaky_client):
    reqs = [GenerationRequest.chat("code", None, "a"),
            GenerationRequest.chat("code", None, "b", json_schema={"type": 7})]
    out = flaky_client.generate_many(reqs, return_exceptions=True)
    assert isinstance(out[0], GenerationResult)
    assert isinstance(out[1], SchemaError)
    assert json.dumps([h.state for h in flaky_client.health()]) == '["degraded"]'
