"""The inference path straight (issue 34, item 5).

Prompt fitting counts tokens through the client (``count_tokens``, ``context_length``),
exactly where the route tokenizes and by the estimate elsewhere, and a prompt counted
while fitting is not tokenized again at its prefill; bad JSON is tried again in one
place (the client), once, only where that can change the reply; the batched decoder is
built from the route's model objects. Fakes only at the boundary: backends that
subclass the real interface (or the real embedded backend), in the real registry.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from pathlib import Path
from typing import ClassVar

import pytest
from conftest import make_config

from grader.analysis.template import match_template
from grader.assignment import load_assignment
from grader.layers.base import GradeOptions, SubmissionContext, run_layer
from grader.layers.llm import LLMLayers
from grader.layers.prompt_budget import UNKNOWN_CONTEXT, route_counter
from grader.notebooks.load import load_both
from grader.pipeline import Grader
from inference import (
    Backend,
    ChatMessage,
    DisaggregatedClient,
    EngineConfig,
    GenerationRequest,
    GenerationResult,
    ModelSpec,
    OutputValidationError,
    RequestMetrics,
    RouteConfig,
    TokenCount,
    WorkerHealth,
    estimate_tokens,
    register_backend,
)
from inference.backends.batched import BatchDecoder
from inference.backends.decoding import Decoding, RouteModel
from inference.backends.embedded import EmbeddedBackend
from inference.backends.worker import Worker
from inference.threads import ThreadBudget

ROOT = Path(__file__).resolve().parents[1]
RETAIL = ROOT / "examples" / "retail-sales"
COMPLETE = RETAIL / "submissions" / "complete.ipynb"
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
MESSAGES = (ChatMessage("system", "You grade code."), ChatMessage("user", "x = 1\nprint(x)"))


class Scripted(Backend):
    """A model behind the real interface: its first ``fail`` replies fail their schema,
    ended as ``finish`` says; greedy (the same request, the same reply) when ``greedy``."""

    calls: ClassVar[list[GenerationRequest]] = []
    fail: ClassVar[int] = 1
    finish: ClassVar[str] = "stop"
    greedy: ClassVar[bool] = True
    words: ClassVar[int] = 5  # tokens per word of the prompt, when it tokenizes

    def generate(self, request, on_token=None):
        type(self).calls.append(request)
        m = RequestMetrics(role=request.role, route=self.route.name, method="single",
                           started_at=time.time(), finished_at=time.time(), prompt_tokens=100,
                           decode_tokens=request.max_tokens or 0, finish_reason=self.finish)
        if len(type(self).calls) <= type(self).fail:
            raise OutputValidationError("model output is not valid JSON", '{"a": "cu', m)
        return GenerationResult('{"a": "ok"}', "stop", m, parsed={"a": "ok"})

    def prefill(self, request):
        raise NotImplementedError

    def decode(self, handle, on_token=None):
        raise NotImplementedError

    def deterministic(self, request):
        return type(self).greedy

    def health(self):
        return [WorkerHealth("scripted", self.route.role, self.route.name, "generate", "up")]


class Tokenizing(Scripted):
    """The same, with a tokenizer of its own (one token per word, plus the markers)."""

    def prompt_tokens(self, request):
        return list(range(sum(len(m.content.split()) + 3 for m in request.messages)))


@pytest.fixture
def scripted(tmp_path):
    register_backend("scripted", Scripted)
    register_backend("tokenizing", Tokenizing)
    Scripted.calls, Scripted.fail, Scripted.finish, Scripted.greedy = [], 1, "stop", True
    spec = ModelSpec(name="judge", path="/nonexistent.gguf", n_ctx=1000)
    cfg = EngineConfig(routes={
        "near": RouteConfig("near", backend="tokenizing", mode="single", model="judge"),
        "far": RouteConfig("far", backend="scripted", mode="single", model="remote-only"),
        "sized": RouteConfig("sized", backend="scripted", mode="single", model="remote-only",
                             n_ctx=3000),
    }, models={"judge": spec}, history_db=tmp_path / "h.db")
    with DisaggregatedClient(cfg) as client:
        yield client


# -- counting through the client --------------------------------------------------------


def test_count_tokens_asks_the_routes_backend_and_estimates_where_it_cannot(scripted):
    assert scripted.count_tokens("near", MESSAGES) == TokenCount((3 + 3) + (4 + 3), exact=True)
    estimate = 8 + sum(8 + estimate_tokens(m.content) for m in MESSAGES)
    assert scripted.count_tokens("far", MESSAGES) == TokenCount(estimate, exact=False)


def test_context_length_is_the_backends_else_the_routes_else_the_models(scripted):
    assert scripted.context_length("near") == 1000  # the model table's
    assert scripted.context_length("sized") == 3000  # the route's
    assert scripted.context_length("far") is None  # nobody says


def test_prompt_fitting_counts_through_the_client(scripted):
    near, far = route_counter(scripted, "near"), route_counter(scripted, "far")
    assert (near.exact, near.n_ctx, near.label) == (True, 1000, "near:tokenizing/judge")
    assert near.request(GenerationRequest("near", MESSAGES)) == 13
    assert near.text("three more words") == 3
    assert (far.exact, far.n_ctx) == (False, UNKNOWN_CONTEXT)
    assert far.margin > near.margin  # estimated tokens: a wider margin
    assert far.text("hello world") == estimate_tokens("hello world")


# -- one retry policy for bad JSON: the client's -----------------------------------------


def _request(role: str = "sized", max_tokens: int = 200) -> GenerationRequest:
    return GenerationRequest(role, MESSAGES, max_tokens=max_tokens, json_schema=SCHEMA)


def test_a_greedy_reply_that_ended_by_itself_is_not_tried_again(scripted):
    with pytest.raises(OutputValidationError):
        scripted.generate(_request())
    assert len(Scripted.calls) == 1  # the same request would get the same reply
    assert [m.error.split(":")[0] for m in scripted.history.recent(5)] == \
        ["OutputValidationError"]


def test_a_reply_cut_by_max_tokens_is_tried_once_with_more_room_within_the_context(scripted):
    Scripted.finish = "length"
    result = scripted.generate(_request())
    first, second = Scripted.calls
    assert (first.max_tokens, second.max_tokens) == (200, 300)
    assert second.messages == first.messages
    assert second.request_id != first.request_id
    assert "not valid JSON" in result.retried_after
    rows = scripted.history.recent(5)
    assert [bool(r.error) for r in rows] == [True, False]  # newest last
    assert rows[-1].failover.startswith("tried again after")
    assert rows[-1].attempts == 2
    # near the end of the context: the room left, less a margin, and no more
    Scripted.calls = []
    scripted.generate(_request(max_tokens=2850))
    assert [r.max_tokens for r in Scripted.calls] == [2850, 3000 - 16 - 100]


def test_a_sampled_reply_is_tried_once_with_another_seed_and_no_more(scripted):
    Scripted.greedy, Scripted.fail = False, 5
    with pytest.raises(OutputValidationError):
        scripted.generate(_request())
    first, second = Scripted.calls
    assert second.seed != first.seed
    assert second.max_tokens == first.max_tokens


def test_a_stream_that_cannot_restart_is_not_tried_again(scripted):
    Scripted.greedy, Scripted.finish = False, "length"
    with pytest.raises(OutputValidationError):
        scripted.generate(_request(), on_token=lambda _s: None)
    assert len(Scripted.calls) == 1


# -- the real engine ----------------------------------------------------------------------


class CountingEmbedded(EmbeddedBackend):
    """The real embedded backend, counting the texts it tokenizes (its boundary with the
    model's tokenizer)."""

    texts: ClassVar[Counter[tuple[str, str]]] = Counter()

    def tokenize(self, text: str) -> list[int]:
        type(self).texts[self.route.role, text] += 1
        return super().tokenize(text)


@pytest.mark.llm
@pytest.mark.slow
def test_a_fitted_prompt_is_tokenized_once_from_fitting_to_prefill(tmp_path):
    register_backend("counting-embedded", CountingEmbedded)
    CountingEmbedded.texts = Counter()
    route = {"backend": "counting-embedded", "prefix_cache_mb": 0}
    with DisaggregatedClient(make_config(tmp_path, {"code": route, "feedback": route})) as client:
        grader = Grader(load_assignment(RETAIL), GradeOptions(execute=False))
        sub, raw = load_both(COMPLETE.read_bytes(), COMPLETE.name)
        match = match_template(grader.context.template, sub, grader.placeholders,
                               grader.context.solution)
        ctx = SubmissionContext(grader.context, sub, raw, match, grader.options)
        l1, l2 = (run_layer(layer, ctx) for layer in grader.layers)
        planned = LLMLayers(client).plan(ctx, l1, l2, set())
        plans = [p for ps in planned.values() if not isinstance(ps, Exception) for p in ps]
        assert {p.layer for p in plans} == {"L3", "L4"}
        assert all(p.exact for p in plans)
        assert max(CountingEmbedded.texts.values()) == 1  # fitting: each text once
        fitted = Counter(CountingEmbedded.texts)
        for plan in plans:  # fitting counted the very prompt that is sent
            role = plan.request.role
            assert fitted[role, client.backend(role).prompt_text(plan.request)] == 1
        for plan in plans:  # the prompts as fitted, a short reply each (no schema)
            request = dataclasses.replace(plan.request, json_schema=None, max_tokens=2)
            result = client.generate(request)
            assert result.metrics.prompt_tokens == plan.prompt_tokens
            assert result.metrics.method == "disaggregated"
    assert CountingEmbedded.texts == fitted  # the prefills took the tokens counted


@pytest.mark.llm
@pytest.mark.slow
def test_the_batch_decoder_is_built_from_the_routes_model_objects(tmp_path):
    with DisaggregatedClient(make_config(tmp_path, {"code": {
            "mode": "disaggregated", "prefix_cache_mb": 0, "fallback": False,
            "options": {"decode_batch": 2}}})) as client:
        backend = client.backend("code")
        assert isinstance(backend, EmbeddedBackend)
        assert backend.batch is not None
        assert isinstance(backend.batch.model, RouteModel)
        assert backend.batch.model is backend.route_model
        assert isinstance(backend.batch.decoding, Decoding)
        assert backend.batch.decoding is backend.decoding
        request = GenerationRequest.chat("code", "Be brief.", "Name three colours.",
                                         max_tokens=24, temperature=0.0)
        expected = client.generate(request)
        # A decoder of our own from the same objects decodes the same reply (greedy).
        own = BatchDecoder(Worker("test/batch", "decode", "code", "test", lambda: None),
                           backend.route_model, backend.decoding, ThreadBudget(2),
                           n_cells=1024, n_seq=2, flash_attn=backend.flash_attn)
        try:
            got = own.decode(backend.prefill(request))
        finally:
            own.close()
    assert got.tokens == expected.tokens
    assert got.text == expected.text
    assert own.worker.steps > 0
