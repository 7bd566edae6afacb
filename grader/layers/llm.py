"""Layers 3 and 4: the code model's analysis and the feedback model's judgement.

Both requests go to the inference client together (``generate_many``), so the
``code`` and ``feedback`` roles run in parallel threads. Each is decoded under a
JSON schema; a reply that fails it gets one repair attempt, and if that fails
too the layer says so (its criteria keep their deterministic score and go to
review): never a default verdict. Claims citing cells that are not the
student's are dropped and counted. Each layer records its request's metrics
(start/finish times, prefill and decode speeds, cached tokens, route).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from inference import (
    DisaggregatedClient,
    GenerationRequest,
    GenerationResult,
    InferenceError,
    OutputValidationError,
)

from ..answers import find_answer
from ..prompts import (
    FEEDBACK_CHARS,
    ISSUE_CHARS,
    QUOTE_CHARS,
    SYSTEM,
    code_request_text,
    code_schema,
    feedback_request_text,
    feedback_schema,
    shared_code_prefix,
    shared_feedback_prefix,
    student_code,
)
from ..template import match_template
from ..types import LayerResult
from .base import SubmissionContext

log = logging.getLogger(__name__)
SAMPLE_TEMPERATURE = 0.7  # for the extra samples of --samples k
CODE_BUDGET_CHARS = 6000  # ~1700 tokens of student code, within SmolLM2's 4096 context
# Room for one criterion's JSON in the worst case the schema allows (every
# character of its capped strings a token of its own, plus the keys), so a
# reply is never cut off mid-string. Typical replies use a third of it.
CODE_TOKENS_PER_CRITERION = 30 + ISSUE_CHARS
FEEDBACK_TOKENS_PER_CRITERION = 30 + 3 * FEEDBACK_CHARS
RICH_EXTRA_TOKENS = 20 + QUOTE_CHARS + ISSUE_CHARS  # confidence, quote, suggestion


def _metrics_details(r: GenerationResult) -> dict[str, Any]:
    m = r.metrics
    return {"started_at": m.started_at, "finished_at": m.finished_at,
            "prefill_tps": round(m.prefill_tps, 1), "decode_tps": round(m.decode_tps, 1),
            "route": m.route, "method": m.method, "prompt_tokens": m.prompt_tokens,
            "cached_tokens": m.cached_tokens, "decode_tokens": m.decode_tokens,
            "ttft_s": round(m.ttft_seconds, 3), "total_s": round(m.total_seconds, 3),
            "kv_bytes": m.kv_bytes}


class LLMLayers:
    """Runs L3 and L4 for one submission; never raises into the pipeline."""

    def __init__(self, client: DisaggregatedClient) -> None:
        self.client = client

    def requests(self, ctx: SubmissionContext, l1: LayerResult, l2: LayerResult,
                 excluded: set[tuple[str, int]]) -> dict[str, tuple[GenerationRequest, Any]]:
        rubric = ctx.assignment.rubric
        code_crits = [c for c in rubric.criteria if c.kind == "code"]
        written = [c for c in rubric.criteria if c.kind == "written"]
        out: dict[str, tuple[GenerationRequest, Any]] = {}
        part = student_code(ctx.match, excluded, CODE_BUDGET_CHARS)
        if code_crits and part.cell_ids:  # no code of the student's own: nothing to judge
            evidence = {c.id: "; ".join(ch.message for ch in l1.checks + l2.checks
                                        if ch.criterion_id == c.id)[:80] for c in code_crits}
            rich = self._can_judge("code")
            prefix = shared_code_prefix(rubric, ctx.assignment.solution, code_crits, rich)
            per_item = CODE_TOKENS_PER_CRITERION + (RICH_EXTRA_TOKENS if rich else 0)
            req = GenerationRequest.chat(
                "code", SYSTEM, code_request_text(prefix, part, evidence),
                json_schema=code_schema(code_crits, part.cell_ids, rich),
                max_tokens=per_item * len(code_crits) + 40, temperature=0.0)
            out["L3"] = (req, part)
        if written:
            answers = {}
            for c in written:
                q = next((ch for ch in c.checks if ch.type == "answer"), None)
                ans = find_answer(ctx.match, q.question, rubric.all_placeholders) if q else None
                answers[c.id] = _without(ans.text if ans else "", ctx, excluded, ans)
            if not any(a.strip() for a in answers.values()):
                return out  # every question unanswered: nothing to judge
            prefix = shared_feedback_prefix(rubric, written, _model_answers(ctx, written))
            req = GenerationRequest.chat(
                "feedback", SYSTEM, feedback_request_text(prefix, answers),
                json_schema=feedback_schema(written),
                max_tokens=FEEDBACK_TOKENS_PER_CRITERION * len(written) + 40,
                temperature=0.0)
            out["L4"] = (req, answers)
        return out

    def run(self, ctx: SubmissionContext, l1: LayerResult, l2: LayerResult,
            excluded: set[tuple[str, int]],
            on_token: Callable[[str, str], None] | None = None) -> dict[str, LayerResult]:
        """``on_token(layer, piece)`` sees the greedy requests' text as it is decoded."""
        t0 = time.perf_counter()
        try:
            reqs = self.requests(ctx, l1, l2, excluded)
        except Exception as exc:  # a crashed layer is a result, never an exception upstream
            log.exception("building the LLM prompts failed for %s", ctx.submission.name)
            return {name: LayerResult(name, error=f"{type(exc).__name__}: {exc}")
                    for name in ("L3", "L4")}
        names = list(reqs)
        k = max(1, ctx.options.llm_samples)
        # The first request of each layer is greedy; with k > 1 samples, k - 1 more
        # are drawn at a temperature, only to measure how stable the judgement is.
        extra_reqs = [dataclasses.replace(reqs[n][0], temperature=SAMPLE_TEMPERATURE, seed=s)
                      for n in names for s in range(1, k)]
        def tokens(i: int, piece: str) -> None:
            if on_token is not None and i < len(names):
                on_token(names[i], piece)

        results = self.client.generate_many([reqs[n][0] for n in names] + extra_reqs,
                                             tokens if on_token is not None else None,
                                             return_exceptions=True)
        wall = time.perf_counter() - t0
        out: dict[str, LayerResult] = {}
        for i, (name, res) in enumerate(zip(names, results, strict=False)):
            req, extra = reqs[name]
            out[name] = self._layer(name, req, res, extra, ctx)
            samples = results[len(names) + i * (k - 1): len(names) + (i + 1) * (k - 1)]
            if k > 1 and not out[name].error:
                _spread(out[name], [s for s in samples if isinstance(s, GenerationResult)])
        busy = sum(lr.details.get("total_s", 0.0) for lr in out.values())
        for lr in out.values():
            lr.details["parallel_wall_s"] = round(wall, 3)
            lr.details["parallel_efficiency"] = round(busy / wall, 3) if wall > 0 else 0.0
        return out

    def _layer(self, name: str, req: GenerationRequest, res: GenerationResult | InferenceError,
               extra: Any, ctx: SubmissionContext) -> LayerResult:
        lr = LayerResult(name)
        if isinstance(res, OutputValidationError):
            lr.details["first_attempt_error"] = str(res)
            res = self._repair(req, res)
        if isinstance(res, InferenceError):
            lr.error = f"{type(res).__name__}: {res}"
            metrics = getattr(res, "metrics", None)
            if metrics is not None:
                lr.details.update(started_at=metrics.started_at, finished_at=metrics.finished_at)
            return lr
        lr.details.update(_metrics_details(res))
        lr.details["output"] = res.parsed
        lr.details["advisory"] = not self._can_judge(req.role)
        if name == "L3":
            lr.details["cut"] = extra.cut
            allowed = set(extra.cell_ids)
            dropped = 0
            for item in (res.parsed or {}).values():
                kept = [c for c in item.get("cells", []) if c in allowed]
                dropped += len(item.get("cells", [])) - len(kept)
                item["cells"] = kept
                if item.get("quote") and not _quoted(item["quote"], kept, ctx):
                    item["quote"] = ""  # a quote that is not in the cited cells is no evidence
                    dropped += 1
            lr.details["dropped_claims"] = dropped
            if extra.cut:
                lr.notes.append("student code cut to fit the prompt: " + "; ".join(extra.cut))
        return lr

    def _can_judge(self, role: str) -> bool:
        try:
            return self.client.config.model(self.client.route(role).model).can_judge
        except InferenceError:
            return False

    def _repair(self, req: GenerationRequest,
                err: OutputValidationError) -> GenerationResult | InferenceError:
        """One repair attempt: the same request with room to finish the JSON."""
        log.info("role %s: output failed its schema (%s); one repair attempt", req.role, err)
        retry = GenerationRequest(role=req.role, messages=req.messages,
                                  max_tokens=int((req.max_tokens or 256) * 1.5),
                                  temperature=0.0, seed=req.seed + 1, json_schema=req.json_schema)
        try:
            return self.client.generate(retry)
        except InferenceError as exc:
            return exc


def _quoted(quote: str, cells: list[str], ctx: SubmissionContext) -> bool:
    """Whether ``quote`` (whitespace aside) appears in one of the cited cells."""
    want = " ".join(quote.split())
    for cid in cells:
        cell = ctx.submission.cell(cid)
        if cell is not None and want and want in " ".join(cell.source.split()):
            return True
    return False


def _spread(lr: LayerResult, samples: list[GenerationResult]) -> None:
    """Per criterion: how much the sampled judgements agree with each other."""
    outputs = [lr.details.get("output") or {}] + [s.parsed or {} for s in samples]
    spread: dict[str, float] = {}
    for cid in outputs[0]:
        items = [o[cid] for o in outputs if isinstance(o.get(cid), dict)]
        if lr.layer == "L3":
            verdicts = Counter(str(i.get("verdict")) for i in items)
            spread[cid] = round(1 - verdicts.most_common(1)[0][1] / len(items), 3)
        else:
            scores = [float(i.get("score", 0.0)) for i in items]
            spread[cid] = round(max(scores) - min(scores), 3)
    lr.details["samples"] = len(outputs)
    lr.details["spread"] = spread


def _model_answers(ctx: SubmissionContext, written: list) -> dict[str, str]:
    """The solution's answer to each written question, found once per assignment."""
    actx = ctx.assignment
    with actx.lock:
        cached = actx.cache.get("model_answers")
        if cached is None:
            rubric = actx.rubric
            match = match_template(actx.template, actx.solution, rubric.all_placeholders)
            cached = {}
            for c in written:
                q = next((ch for ch in c.checks if ch.type == "answer"), None)
                if q is not None:
                    cached[c.id] = find_answer(match, q.question, rubric.all_placeholders).text
            actx.cache["model_answers"] = cached
    return cached


def _without(text: str, ctx: SubmissionContext, excluded: set[tuple[str, int]],
             ans: Any) -> str:
    """An answer's text without lines the injection detector flagged."""
    if not excluded or ans is None:
        return text
    flagged = set()
    for cid, line in excluded:
        cell = ctx.submission.cell(cid)
        if cell is not None and 0 < line <= len(cell.source.splitlines()):
            flagged.add(cell.source.splitlines()[line - 1].strip())
    return "\n".join(line for line in text.splitlines() if line.strip() not in flagged)
