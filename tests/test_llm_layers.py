"""Layers 3 and 4 with the real embedded models, and their failure paths with a fake backend."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from inference import (
    Backend,
    DisaggregatedClient,
    EngineConfig,
    GenerationResult,
    ModelSpec,
    OutputValidationError,
    RequestMetrics,
    RouteConfig,
    WorkerHealth,
    register_backend,
)

ROOT = Path(__file__).resolve().parents[1]
RETAIL = ROOT / "examples" / "retail-sales"
SUBS = RETAIL / "submissions"


class AlwaysInvalid(Backend):
    """A model that never produces JSON matching the schema."""

    calls = 0

    def prefill(self, request):
        raise NotImplementedError

    def decode(self, handle, on_token=None):
        raise NotImplementedError

    def generate(self, request, on_token=None):
        type(self).calls += 1
        raise OutputValidationError("model output is not valid JSON", "{\"verdict\": ",
                                    RequestMetrics(role=request.role, started_at=time.time()))

    def health(self):
        return [WorkerHealth("fake", self.route.role, self.route.name, "generate", "up")]


def test_invalid_model_output_keeps_deterministic_points_and_goes_to_review(tmp_path):
    register_backend("always-invalid", AlwaysInvalid)
    cfg = EngineConfig(routes={r: RouteConfig(r, backend="always-invalid", mode="single")
                               for r in ("code", "feedback")}, history_db=tmp_path / "h.db")
    a = load_assignment(RETAIL)
    item = GradeInput.from_path(SUBS / "complete.ipynb")
    det = Grader(a, GradeOptions(execute=False)).grade(item)
    with DisaggregatedClient(cfg) as client:
        AlwaysInvalid.calls = 0
        r = Grader(a, GradeOptions(execute=False, use_llm=True), client=client).grade(item)
    # two requests, each tried once more by the client (a sampled reply may come out valid
    # the second time), and by nobody else: one retry policy, in the client
    assert AlwaysInvalid.calls == 4
    assert "OutputValidationError" in r.layers["L3"].error
    assert [c.points for c in r.criteria] == [c.points for c in det.criteria]
    assert all(c.needs_review for c in r.criteria)
    assert any("model failed" in why for c in r.criteria for why in c.review_reasons)


@pytest.fixture(scope="module")
def llm_graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("llm")
    cfg = EngineConfig(routes={r: RouteConfig(r) for r in ("code", "feedback")}, threads=2,
                       history_db=tmp / "h.db")
    a = load_assignment(RETAIL)
    names = ["complete", "injected", "injected_clean"]
    with DisaggregatedClient(cfg) as client:
        grader = Grader(a, GradeOptions(execute=True, use_llm=True), client=client)
        det = Grader(a, GradeOptions(execute=True))
        reports, plain = {}, {}
        for n in names:
            item = GradeInput.from_path(SUBS / f"{n}.ipynb")
            reports[n] = grader.grade(item)
            plain[n] = det.grade(item)
    return reports, plain


@pytest.mark.llm
@pytest.mark.slow
def test_l3_and_l4_run_in_parallel_with_metrics(llm_graded):
    reports, _ = llm_graded
    r = reports["complete"]
    l3, l4 = r.layers["L3"], r.layers["L4"]
    assert not l3.error, l3.error
    assert not l4.error, l4.error
    for lr in (l3, l4):
        assert lr.details["prefill_tps"] > 0
        assert lr.details["decode_tps"] > 0
        assert lr.details["route"]
    assert "first_attempt_error" not in l3.details  # the token budget fits the schema
    assert "first_attempt_error" not in l4.details
    # Handed to the client together: their time windows intersect.
    assert l3.details["started_at"] < l4.details["finished_at"]
    assert l4.details["started_at"] < l3.details["finished_at"]
    assert l3.details["parallel_efficiency"] > 1.0
    assert l3.details["advisory"] is True  # the bundled tiny model explains, never judges


@pytest.mark.llm
@pytest.mark.slow
def test_models_never_raise_points_and_cite_only_student_cells(llm_graded):
    reports, plain = llm_graded
    for name, r in reports.items():
        for c, d in zip(r.criteria, plain[name].criteria, strict=True):
            assert c.points <= d.points + 1e-9, (name, c.id)
        cells = {c.id for c in r.criteria}
        assert cells
        allowed = set(r.layers["L1"].details["student_cells"])
        for item in (r.layers["L3"].details.get("output") or {}).values():
            assert set(item["cells"]) <= allowed


@pytest.mark.llm
@pytest.mark.slow
def test_injected_notebook_is_flagged_and_scores_no_higher(llm_graded):
    reports, _ = llm_graded
    injected, clean = reports["injected"], reports["injected_clean"]
    assert "prompt_injection" in {f.code for f in injected.flags}
    assert "prompt_injection" not in {f.code for f in clean.flags}
    assert injected.score <= clean.score
    assert injected.needs_review


@pytest.mark.llm
@pytest.mark.slow
def test_shared_prompt_prefix_is_reused_across_students(llm_graded):
    reports, _ = llm_graded
    later = reports["injected_clean"].layers["L3"].details
    assert later["cached_tokens"] > 0
    assert later["cached_tokens"] <= later["prompt_tokens"]


class SeedDependent(Backend):
    """A judge whose verdicts change with the sampling seed: an unstable model."""

    def prefill(self, request):
        raise NotImplementedError

    def decode(self, handle, on_token=None):
        raise NotImplementedError

    def generate(self, request, on_token=None):
        ids = request.json_schema["required"]
        if request.role == "code":
            verdict = "met" if request.seed % 2 == 0 else "not met"
            parsed = {c: {"verdict": verdict, "cells": [], "issue": ""} for c in ids}
        else:
            parsed = {c: {"score": 1.0 if request.seed == 0 else 0.2, "strength": "abc",
                          "improve": "abc", "next_step": "abc"} for c in ids}
        m = RequestMetrics(role=request.role, route=self.route.name, started_at=time.time(),
                           finished_at=time.time(), method="single")
        return GenerationResult(json.dumps(parsed), "stop", m, parsed=parsed)

    def health(self):
        return [WorkerHealth("seeded", self.route.role, self.route.name, "generate", "up")]


def test_unstable_samples_send_criteria_to_review(tmp_path):
    register_backend("seed-dependent", SeedDependent)
    judge = ModelSpec(name="judge", path="/nonexistent.gguf", can_judge=True)
    cfg = EngineConfig(routes={r: RouteConfig(r, backend="seed-dependent", mode="single",
                                              model="judge") for r in ("code", "feedback")},
                       models={"judge": judge}, history_db=tmp_path / "h.db")
    a = load_assignment(RETAIL)
    item = GradeInput.from_path(SUBS / "complete.ipynb")
    with DisaggregatedClient(cfg) as client:
        stable = Grader(a, GradeOptions(execute=False, use_llm=True), client=client).grade(item)
        sampled = Grader(a, GradeOptions(execute=False, use_llm=True, llm_samples=3),
                         client=client).grade(item)
    assert "spread" not in stable.layers["L3"].details
    assert sampled.layers["L3"].details["samples"] == 3
    code = next(c for c in sampled.criteria if c.id == "load-data")
    assert code.model_notes["spread"] == "0.33"  # met, not met, met: one of three off
    q1 = next(c for c in sampled.criteria if c.id == "q1-regions")
    assert q1.needs_review
    assert any("unstable" in why for why in q1.review_reasons)
    assert q1.points <= next(c for c in stable.criteria if c.id == "q1-regions").max_points


class Quoting(SeedDependent):
    """A judge that quotes one real line and invents the others."""

    def generate(self, request, on_token=None):
        if request.role != "code":
            return super().generate(request, on_token)
        props = request.json_schema["properties"]
        parsed = {}
        for cid, spec in props.items():
            cells = spec["properties"]["cells"]["items"]["enum"][:1]
            quote = "pd.read_csv(" if cid == "load-data" else "total = magic()"
            parsed[cid] = {"verdict": "met", "cells": cells, "issue": "", "confidence": 0.9,
                           "quote": quote, "suggestion": "name the columns"}
        m = RequestMetrics(role=request.role, route=self.route.name, started_at=time.time(),
                           finished_at=time.time(), method="single")
        return GenerationResult(json.dumps(parsed), "stop", m, parsed=parsed)


def test_judging_model_gets_the_rich_schema_and_invented_quotes_are_dropped(tmp_path):
    register_backend("quoting", Quoting)
    judge = ModelSpec(name="judge", path="/nonexistent.gguf", can_judge=True)
    cfg = EngineConfig(routes={r: RouteConfig(r, backend="quoting", mode="single",
                                              model="judge") for r in ("code", "feedback")},
                       models={"judge": judge}, history_db=tmp_path / "h.db")
    a = load_assignment(RETAIL)
    with DisaggregatedClient(cfg) as client:
        r = Grader(a, GradeOptions(execute=False, use_llm=True), client=client).grade(
            GradeInput.from_path(SUBS / "complete.ipynb"))
    out = r.layers["L3"].details["output"]
    assert out["load-data"]["quote"] == "pd.read_csv("  # it is in the cited cell: kept
    assert all(v["quote"] == "" for k, v in out.items() if k != "load-data")
    assert r.layers["L3"].details["dropped_claims"] == len(out) - 1
    load = next(c for c in r.criteria if c.id == "load-data")
    assert load.model_notes["suggestion"] == "name the columns"
    assert load.model_notes["confidence"] == "0.9"
