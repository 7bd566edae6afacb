"""Prompts always fit the model: the shared part, the student's part and the reply are
budgeted in tokens against the route's context, the student's part is cut per cell,
and every cut is reported. An overflow at the engine is a bug, never the normal path.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import time
from pathlib import Path
from typing import ClassVar

import nbformat
import pytest
from conftest import FILLER

from grader.analysis.template import match_template
from grader.assignment import load_assignment
from grader.layers.base import GradeOptions, SubmissionContext, run_layer
from grader.layers.llm_requests import PlannedRequest, plan_code, plan_feedback
from grader.layers.prompt_budget import (
    Piece,
    PromptBudgetError,
    TokenCounter,
    estimate_tokens,
    fit_cells,
    share_answers,
    truncate,
)
from grader.notebooks.load import load_both
from grader.pipeline import GradeInput, Grader
from grader.rubrics.schema import with_criteria
from inference import (
    Backend,
    ContextOverflowError,
    DisaggregatedClient,
    EngineConfig,
    GenerationRequest,
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
COMPLETE = RETAIL / "submissions" / "complete.ipynb"


def fake_count(text: str) -> int:
    """A fake tokenizer: one token per three characters."""
    return math.ceil(len(text) / 3)


def fake_counter(n_ctx: int) -> TokenCounter:
    def request(req: GenerationRequest) -> int:
        return 4 + sum(5 + fake_count(m.content) for m in req.messages)
    return TokenCounter(n_ctx, True, fake_count, request, "fake")


# --- the pieces -------------------------------------------------------------------------


def test_estimate_counts_words_digits_and_bytes():
    assert estimate_tokens("") == 0
    assert estimate_tokens("hello world") == 4  # two words of five letters, one space
    assert estimate_tokens("2024") == 4  # digits one by one
    assert estimate_tokens("ALLCAPS") == 4  # capitals inside a word: two letters a token
    assert estimate_tokens("é数") == 2 + 3  # a token per byte outside ASCII
    assert estimate_tokens("a    b") == 3  # a run of spaces is a token


def test_truncate_cuts_whole_lines_then_inside_a_line():
    text = "\n".join(f"line {i:03d} of the student's cell" for i in range(100))
    cut, what = truncate(text, 120, fake_count)
    assert fake_count(cut) <= 120
    kept = cut.split("\n")[:-1]
    assert cut.endswith(f"[... {100 - len(kept)} lines cut]")
    assert what == f"{100 - len(kept)} lines cut"
    assert kept == text.split("\n")[: len(kept)]
    long_line = "x" * 10_000
    cut, what = truncate(long_line, 100, fake_count)
    assert fake_count(cut) <= 100
    kept_chars = len(cut.split("\n")[0])
    assert what == f"{10_000 - kept_chars:,} characters cut"
    assert truncate("short", 100, fake_count) == ("short", "")


def _pieces(sizes: list[int], relevance: list[int]) -> list[Piece]:
    return [Piece(f"cell c{i}", f"[cell c{i}]", "\n".join(["y = x + 1  # step"] * n), r)
            for i, (n, r) in enumerate(zip(sizes, relevance, strict=True))]


def _cost(texts: dict[str, str], pieces: list[Piece]) -> int:
    heads = {p.key: p.head for p in pieces}
    return sum(fake_count(f"{heads[k]}\n{t}") + 2 for k, t in texts.items())


def test_fit_cells_keeps_everything_that_fits():
    pieces = _pieces([3, 3, 3], [0, 1, 2])
    fit = fit_cells(pieces, 1000, fake_count, 400)
    assert fit.cut == []
    assert fit.texts == {p.key: p.text for p in pieces}


def test_fit_cells_leaves_out_the_least_relevant_first():
    pieces = _pieces([20, 20, 20, 20], [2, 0, 1, 0])  # ~126 tokens each, 504 in all
    fit = fit_cells(pieces, 300, fake_count, 400)
    assert _cost(fit.texts, pieces) <= 300
    assert fit.texts["cell c0"] == pieces[0].text  # the most relevant stay whole
    assert fit.texts["cell c2"] == pieces[2].text
    assert "cell c3" not in fit.texts  # least relevant (the later of two) goes first
    assert fit.cut[0].startswith("cell c3: left out")
    assert fit.texts["cell c1"].endswith("lines cut]")  # then the next one is cut to fit
    assert fit.cut[1].startswith("cell c1: ")
    assert "to fit the prompt" in fit.cut[1]
    assert list(fit.texts) == ["cell c0", "cell c1", "cell c2"]  # the notebook's order


def test_fit_cells_cuts_a_huge_single_cell_and_keeps_the_others():
    pieces = _pieces([4, 5000, 4], [1, 2, 1])
    fit = fit_cells(pieces, 600, fake_count, 200)
    assert set(fit.texts) == {"cell c0", "cell c1", "cell c2"}
    assert fit.texts["cell c1"].endswith("lines cut]")
    assert fake_count(f"[cell c1]\n{fit.texts['cell c1']}") + 2 <= 200
    assert [c.split(":")[0] for c in fit.cut] == ["cell c1"]
    alone = fit_cells(pieces[1:2], 150, fake_count, 400)  # the cap is the budget at most
    assert _cost(alone.texts, pieces) <= 150


def test_share_answers_gives_long_answers_equal_shares():
    short = Piece("answer to q1", "[answer to q1]", "East leads by 14%.")
    long1 = Piece("answer to q2", "[answer to q2]", "filler sentence. " * 2000)
    long2 = Piece("answer to q3", "[answer to q3]", "more filler here. " * 3000)
    fit = share_answers([short, long1, long2], 900, fake_count)
    assert fit.texts["answer to q1"] == short.text
    assert _cost(fit.texts, [short, long1, long2]) <= 900
    assert {c.split(":")[0] for c in fit.cut} == {"answer to q2", "answer to q3"}
    assert abs(fake_count(fit.texts["answer to q2"]) - fake_count(fit.texts["answer to q3"])) < 20


# --- the whole request, every combination -----------------------------------------------

FILL = "".join(FILLER.format(i=i) for i in range(300))  # ~24,000 characters of prose


def _notebook(huge_answers: bool = False, huge_cell: bool = False,
              many_cells: bool = False) -> nbformat.NotebookNode:
    nb = nbformat.read(COMPLETE, as_version=4)
    for c in nb.cells:
        if huge_answers and c.get("id") in ("q1-answer", "q2-answer"):
            c.source += "\n\n" + FILL * 3
        if huge_cell and c.get("id") == "task3":
            c.source += "\n" + "\n".join(f"check_{i} = orders['revenue'].sum() * {i}"
                                        for i in range(4000))
    if many_cells:
        at = next(i for i, c in enumerate(nb.cells) if c.get("id") == "task5") + 1
        for i in range(60):
            nb.cells.insert(at, nbformat.v4.new_code_cell(
                f"# exploring, step {i}\n" + "\n".join(f"tmp_{i}_{k} = {k} * 2" for k in range(40)),
                id=f"explore-{i}"))
    return nb


def _assignment(huge_shared: bool = False, many_criteria: bool = False):
    a = load_assignment(RETAIL)
    crits = list(a.rubric.criteria)
    if huge_shared:
        crits = [dataclasses.replace(c, description=c.description + " " + FILL[:8000],
                                     expectations=(c.expectations + " " + FILL[:8000]))
                 for c in crits]
    if many_criteria:
        crits += [dataclasses.replace(c, id=f"{c.id}-again-{k}")
                  for k in range(3) for c in a.rubric.criteria]
    return dataclasses.replace(a, rubric=with_criteria(a.rubric, crits))


def _ctx(assignment, nb: nbformat.NotebookNode) -> tuple[SubmissionContext, list]:
    g = Grader(assignment, GradeOptions(execute=False))
    sub, raw = load_both(nbformat.writes(nb).encode(), "padded.ipynb")
    match = match_template(g.context.template, sub, g.placeholders, g.context.solution)
    ctx = SubmissionContext(g.context, sub, raw, match, g.options)
    return ctx, [run_layer(layer, ctx) for layer in g.layers]


def _assert_fits(plans: list[PlannedRequest], counter: TokenCounter, kind: str, ctx) -> None:
    assert plans
    for p in plans:
        assert counter.request(p.request) + p.request.max_tokens + counter.margin <= counter.n_ctx
        assert p.prompt_tokens == counter.request(p.request)
        assert p.room_for_reply >= p.request.max_tokens
    covered = [cid for p in plans for cid in p.criteria]
    assert covered == [c.id for c in ctx.assignment.rubric.criteria if c.kind == kind]


COMBINATIONS = {
    "plain": ({}, {}),
    "huge-shared-prefix": ({"huge_shared": True}, {}),
    "huge-answers": ({}, {"huge_answers": True}),
    "huge-single-cell": ({}, {"huge_cell": True}),
    "many-cells": ({}, {"many_cells": True}),
    "many-criteria": ({"many_criteria": True}, {}),
    "everything": ({"huge_shared": True, "many_criteria": True},
                   {"huge_answers": True, "huge_cell": True, "many_cells": True}),
}


@functools.cache
def _case(case: str) -> tuple[SubmissionContext, list]:
    a_kw, nb_kw = COMBINATIONS[case]
    return _ctx(_assignment(**a_kw), _notebook(**nb_kw))


@pytest.mark.parametrize("n_ctx", [2048, 4096, 32768])
@pytest.mark.parametrize("case", list(COMBINATIONS), ids=list(COMBINATIONS))
def test_every_request_fits_its_context(case, n_ctx):
    a_kw, nb_kw = COMBINATIONS[case]
    ctx, (l1, l2) = _case(case)
    counter = fake_counter(n_ctx)
    code = plan_code(ctx, l1, l2, set(), counter, rich=True)
    written = plan_feedback(ctx, set(), counter)
    _assert_fits(code, counter, "code", ctx)
    _assert_fits(written, counter, "written", ctx)
    cuts = [c for p in code + written for c in p.cut]
    if nb_kw.get("huge_answers"):
        assert any(c.startswith("answer to q1-regions:") for c in cuts)
    if nb_kw.get("huge_cell") and n_ctx < 32768:
        assert any(c.startswith("cell task3:") and "cut" in c for c in cuts)
    if nb_kw.get("many_cells") and n_ctx == 2048:
        assert any("left out" in c for c in cuts)
    if a_kw.get("huge_shared") and n_ctx == 2048:
        assert any(p.shared_cut for p in code + written)
    if a_kw.get("many_criteria") and n_ctx <= 4096:
        assert len(written) > 1  # 8 written replies do not fit one request
    if not a_kw and not nb_kw:
        assert cuts == [] if n_ctx >= 4096 else True
    for p in code:  # the model may cite only what it was shown
        shown = p.request.messages[-1].content
        assert all(f"[cell {cid}]" in shown for cid in p.cell_ids)


def _student_part(plan: PlannedRequest) -> str:
    return plan.request.messages[-1].content.split("<student>", 1)[1].split("</student>")[0]


def test_a_cap_bounds_the_students_part_whatever_the_context():
    nb = _notebook()
    for c in nb.cells:
        if c.get("id") in ("q1-answer", "q2-answer"):
            c.source += "\n\n" + FILL[:15_000]  # ~5,000 tokens each: the context has room
    ctx, _ = _ctx(_assignment(), nb)
    counter = fake_counter(32768)
    (whole,) = plan_feedback(ctx, set(), counter)
    (capped,) = plan_feedback(ctx, set(), counter, cap=600)
    assert whole.cut == []
    assert fake_count(_student_part(whole)) > 10_000
    assert fake_count(_student_part(capped)) <= 600 + 10
    assert {c.split(":")[0] for c in capped.cut} == {"answer to q1-regions",
                                                      "answer to q2-trend-products"}


def test_a_context_too_small_for_one_criterion_is_a_clear_error():
    ctx, _ = _ctx(_assignment(), _notebook())
    with pytest.raises(PromptBudgetError, match="does not fit the model's context of 400"):
        plan_feedback(ctx, set(), fake_counter(400))


# --- through the layers, with a model that enforces its context -------------------------


class CharModel(Backend):
    """A fake model with a real context limit: one token per three characters of the
    chat, ContextOverflowError past the route's n_ctx; the first reply of each request
    is cut by max_tokens and fails its schema when ``invalid_first`` (so the client's
    retry with more room runs too)."""

    invalid_first = False
    seen: ClassVar[list[tuple[int, int]]] = []  # (prompt tokens, max_tokens) of each request

    def prompt_tokens(self, request):
        text = "".join(f"<|{m.role}|>{m.content}<|end|>" for m in request.messages)
        return list(range(fake_count(text) + 2))

    def prefill(self, request):
        raise NotImplementedError

    def decode(self, handle, on_token=None):
        raise NotImplementedError

    def generate(self, request, on_token=None):
        n, n_ctx = len(self.prompt_tokens(request)), self.route.n_ctx
        type(self).seen.append((n, request.max_tokens))
        if n + request.max_tokens > n_ctx:
            raise ContextOverflowError(n, request.max_tokens, n_ctx)
        m = RequestMetrics(role=request.role, route=self.route.name, started_at=time.time(),
                           finished_at=time.time(), method="single", prompt_tokens=n)
        if type(self).invalid_first and request.seed == 0:
            m.finish_reason = "length"
            raise OutputValidationError("model output is not valid JSON", "{", m)
        parsed = {}
        for cid, spec in request.json_schema["properties"].items():
            item = {"verdict": "partial", "cells": [], "issue": "", "confidence": 0.5,
                    "quote": "", "suggestion": "", "score": 0.5, "strength": "clear",
                    "improve": "more detail", "next_step": "cite numbers"}
            parsed[cid] = {k: item[k] for k in spec["properties"]}
        return GenerationResult(json.dumps(parsed), "stop", m, parsed=parsed)

    def deterministic(self, request):
        return True  # greedy: the client tries a cut reply again with more room, only

    def health(self):
        return [WorkerHealth("chars", self.route.role, self.route.name, "generate", "up")]


@pytest.mark.parametrize("invalid_first", [False, True], ids=["valid", "repaired"])
def test_padded_notebook_gets_both_layers_within_the_context(tmp_path, invalid_first):
    register_backend("char-model", CharModel)
    CharModel.invalid_first, CharModel.seen = invalid_first, []
    judge = ModelSpec(name="judge", path="/nonexistent.gguf", can_judge=True)
    cfg = EngineConfig(routes={r: RouteConfig(r, backend="char-model", mode="single",
                                              model="judge", n_ctx=3000)
                               for r in ("code", "feedback")},
                       models={"judge": judge}, history_db=tmp_path / "h.db")
    nb = _notebook(huge_answers=True, huge_cell=True)
    with DisaggregatedClient(cfg) as client:
        grader = Grader(_assignment(many_criteria=True),
                        GradeOptions(execute=False, use_llm=True), client=client)
        r = grader.grade(GradeInput("padded.ipynb", nbformat.writes(nb).encode()))
    l3, l4 = r.layers["L3"], r.layers["L4"]
    assert not l3.error, l3.error
    assert not l4.error, l4.error
    assert all(n + mt <= 3000 for n, mt in CharModel.seen)
    assert len(CharModel.seen) == (2 if invalid_first else 1) * (
        l3.details["requests"] + l4.details["requests"])
    assert l4.details["requests"] > 1
    assert l3.details["prompt_budget"]["tokenizer"] == "the route's own"
    assert any(c.startswith("cell task3:") for c in l3.details["cut"])
    assert any(c.startswith("answer to q1-regions:") for c in l4.details["cut"])
    assert any("cut to fit the prompt" in n for n in l3.notes + l4.notes)
    assert set(l4.details["output"]) == {c.id for c in r.criteria if c.kind == "written"}
    assert ("first_attempt_error" in l3.details) is invalid_first


def test_an_advisory_model_reads_a_capped_student_part(tmp_path):
    """The bundled tiny models only advise: a long answer is cut to the advisory cap
    even on a route whose context could hold it all."""
    register_backend("char-model", CharModel)
    CharModel.invalid_first, CharModel.seen = False, []
    tiny = ModelSpec(name="tiny", path="/nonexistent.gguf", can_judge=False)
    cfg = EngineConfig(routes={r: RouteConfig(r, backend="char-model", mode="single",
                                              model="tiny", n_ctx=32768)
                               for r in ("code", "feedback")},
                       models={"tiny": tiny}, history_db=tmp_path / "h.db")
    nb = _notebook()
    for c in nb.cells:
        if c.get("id") == "q1-answer":
            c.source += "\n\n" + FILL[:20_000]
    with DisaggregatedClient(cfg) as client:
        r = Grader(_assignment(), GradeOptions(execute=False, use_llm=True),
                   client=client).grade(GradeInput("long.ipynb", nbformat.writes(nb).encode()))
    l4 = r.layers["L4"]
    assert not l4.error, l4.error
    assert l4.details["advisory"] is True
    assert [c.split(":")[0] for c in l4.details["cut"]] == ["answer to q1-regions"]
    assert l4.details["prompt_tokens"] < 1800 + 1000  # the cap, and the shared part


# --- the real model ---------------------------------------------------------------------


@pytest.mark.llm
@pytest.mark.slow
def test_66k_token_notebook_with_the_embedded_model(tmp_path):
    """Padded past 66,000 tokens of SmolLM2's own tokenizer, graded by the embedded
    engine with its configured context: both layers answer, nothing overflows."""
    cfg = EngineConfig(routes={r: RouteConfig(r) for r in ("code", "feedback")}, threads=2,
                       history_db=tmp_path / "h.db")
    nb = _notebook(huge_answers=True, huge_cell=True, many_cells=True)
    for c in nb.cells:
        if c.get("id") == "q1-answer":
            c.source += "\n\n" + FILL * 6
    data = nbformat.writes(nb).encode()
    with DisaggregatedClient(cfg) as client:
        backend = client.backend("code")
        tokens = len(backend.prompt_tokens(GenerationRequest.chat("code", None, data.decode())))
        assert tokens >= 66_000
        grader = Grader(load_assignment(RETAIL), GradeOptions(execute=False, use_llm=True),
                        client=client)
        r = grader.grade(GradeInput("padded.ipynb", data))
        n_ctx = backend.n_ctx
    for name in ("L3", "L4"):
        lr = r.layers[name]
        assert not lr.error, lr.error
        assert "ContextOverflowError" not in str(lr.details)
        assert lr.details["output"], name
        assert lr.details["prompt_tokens"] + max(lr.details["prompt_budget"]["max_tokens"]) \
            <= n_ctx
        assert lr.details["cut"], name
    assert r.layers["L3"].details["prompt_budget"]["tokenizer"] == "the route's own"
