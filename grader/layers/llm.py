"""Layers 3 and 4: the code model's analysis and the feedback model's judgement.

Both layers' requests go to the inference client together (``generate_many``),
so the ``code`` and ``feedback`` roles run in parallel threads. Each request is
fitted to its route's context first (``grader.layers.llm_requests``): what was cut from
the student's part is recorded in the layer's details (``cut``) and notes, and a
rubric with more criteria than one reply can hold is asked in groups, one request
each, merged here. Each is decoded under a JSON schema; a reply that fails it is
tried again by the client, once, where that can change it (more room for a reply cut
by max_tokens, within the context; another seed for a sampled one: the one retry
policy, ``DisaggregatedClient.generate``), and if that fails too the layer says so
(its criteria keep their deterministic score and go to review): never a default
verdict. The first try's failure is kept in the details (``first_attempt_error``).
Claims citing cells that are not the student's are dropped and counted. Each layer
records its requests' metrics (start/finish times, prefill and decode speeds, cached
tokens, route).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from inference import (
    DisaggregatedClient,
    GenerationResult,
    InferenceError,
    RequestMetrics,
)

from ..types import LayerResult
from .base import SubmissionContext
from .llm_requests import PlannedRequest, plan_code, plan_feedback
from .prompt_budget import TokenCounter, route_counter

log = logging.getLogger(__name__)
SAMPLE_TEMPERATURE = 0.7  # for the extra samples of --samples k
LAYER_ROLES = {"L3": "code", "L4": "feedback"}
# A model that only advises (the bundled tiny ones, ``can_judge = false``) reads at
# most this much of the student's work per request, whatever its context allows:
# its notes move nothing, and a deeper prompt slows every grade on a laptop.
ADVISORY_STUDENT_TOKENS = 1800
NOTED_CUTS = 5  # cuts named in the layer's note; the details list them all


def parallel_figures(layers: dict[str, LayerResult], wall: float) -> None:
    """Each layer's own seconds (its requests as the engine measured them, since they
    ran beside the other layer's; else the wall of the two together), and the pair's
    wall and parallel efficiency: busy seconds over wall, busy being the requests' own
    service time, not the seconds they waited in a queue."""
    busy = sum(lr.details.get("total_s", 0.0) - lr.details.get("queue_s", 0.0)
               for lr in layers.values())
    for lr in layers.values():
        lr.seconds = float(lr.details.get("total_s") or wall)
        lr.details["parallel_wall_s"] = round(wall, 3)
        lr.details["parallel_efficiency"] = round(busy / wall, 3) if wall > 0 else 0.0


def _merged(metrics: list[RequestMetrics]) -> RequestMetrics:
    """One layer's requests as one: token counts and busy seconds add up."""
    if len(metrics) == 1:
        return metrics[0]
    first = metrics[0]
    add = ("prompt_tokens", "cached_tokens", "prefill_tokens", "prefill_seconds",
           "decode_tokens", "decode_evals", "decode_seconds", "queue_seconds",
           "handoff_seconds", "kv_bytes", "total_seconds")
    return dataclasses.replace(
        first, **{k: sum(getattr(m, k) for m in metrics) for k in add},
        ttft_seconds=min(m.ttft_seconds for m in metrics),
        started_at=min(m.started_at for m in metrics),
        finished_at=max(m.finished_at for m in metrics))


def _metrics_details(m: RequestMetrics) -> dict[str, Any]:
    return {"started_at": m.started_at, "finished_at": m.finished_at,
            "prefill_tps": round(m.prefill_tps, 1), "decode_tps": round(m.decode_tps, 1),
            "route": m.route, "method": m.method, "prompt_tokens": m.prompt_tokens,
            "cached_tokens": m.cached_tokens, "decode_tokens": m.decode_tokens,
            "ttft_s": round(m.ttft_seconds, 3), "total_s": round(m.total_seconds, 3),
            "queue_s": round(m.queue_seconds, 3), "kv_bytes": m.kv_bytes}


class LLMLayers:
    """Runs L3 and L4 for one submission; never raises into the pipeline."""

    def __init__(self, client: DisaggregatedClient) -> None:
        self.client = client
        self._counters: dict[str, TokenCounter] = {}
        self._lock = threading.Lock()

    def counter(self, role: str) -> TokenCounter:
        """How ``role``'s route counts tokens; built once (it may load the model)."""
        with self._lock:
            if role not in self._counters:
                self._counters[role] = route_counter(self.client, role)
            return self._counters[role]

    def plan(self, ctx: SubmissionContext, l1: LayerResult, l2: LayerResult,
             excluded: set[tuple[str, int]]) -> dict[str, list[PlannedRequest] | Exception]:
        """Each layer's fitted requests, or why they could not be built."""
        out: dict[str, list[PlannedRequest] | Exception] = {}
        excluded = set(excluded) | ctx.flagged  # a flagged block never reaches a model
        for name, role in LAYER_ROLES.items():
            try:
                judge = self._can_judge(role)
                cap = None if judge else ADVISORY_STUDENT_TOKENS
                if name == "L3":
                    plans = plan_code(ctx, l1, l2, excluded, self.counter(role), judge, cap)
                else:
                    plans = plan_feedback(ctx, excluded, self.counter(role), cap)
            except Exception as exc:  # a crashed layer is a result, never an exception upstream
                log.exception("building the %s prompt failed for %s", name, ctx.submission.name)
                out[name] = exc
                continue
            if plans:
                out[name] = plans
        return out

    def run(self, ctx: SubmissionContext, l1: LayerResult, l2: LayerResult,
            excluded: set[tuple[str, int]],
            on_token: Callable[[str, str], None] | None = None,
            on_sent: Callable[[str], None] | None = None) -> dict[str, LayerResult]:
        """``on_token(layer, piece)`` sees the greedy requests' text as it is decoded;
        ``on_sent(layer)`` hears of each layer whose requests go to the models (a layer
        with nothing to send is never said to be reading)."""
        t0 = time.perf_counter()
        planned = self.plan(ctx, l1, l2, excluded)
        for name, p in planned.items():
            if on_sent is not None and not isinstance(p, Exception):
                on_sent(name)
        out = {name: LayerResult(name, error=f"{type(p).__name__}: {p}")
               for name, p in planned.items() if isinstance(p, Exception)}
        plans = [p for ps in planned.values() if not isinstance(ps, Exception) for p in ps]
        k = max(1, ctx.options.llm_samples)
        # The first request of each plan is greedy; with k > 1 samples, k - 1 more
        # are drawn at a temperature, only to measure how stable the judgement is.
        extra = [dataclasses.replace(p.request, temperature=SAMPLE_TEMPERATURE, seed=s)
                 for p in plans for s in range(1, k)]

        def tokens(i: int, piece: str) -> None:
            if on_token is not None and i < len(plans):
                on_token(plans[i].layer, piece)

        results = self.client.generate_many([p.request for p in plans] + extra,
                                             tokens if on_token is not None else None,
                                             return_exceptions=True,
                                             restartable=True) if plans else []
        wall = time.perf_counter() - t0
        for name in dict.fromkeys(p.layer for p in plans):
            mine = [(i, p) for i, p in enumerate(plans) if p.layer == name]
            answers = [(p, results[i],
                        [s for s in results[len(plans) + i * (k - 1):
                                            len(plans) + (i + 1) * (k - 1)]
                         if isinstance(s, GenerationResult)]) for i, p in mine]
            out[name] = self._layer(name, answers, ctx, k)
        parallel_figures(out, wall)
        return out

    def _layer(self, name: str,
               answers: list[tuple[PlannedRequest, GenerationResult | InferenceError,
                                   list[GenerationResult]]],
               ctx: SubmissionContext, k: int) -> LayerResult:
        lr = LayerResult(name)
        plans = [p for p, _, _ in answers]
        cut = [c for p in plans for c in p.cut]
        lr.details.update(cut=cut, requests=len(plans), prompt_budget={
            "n_ctx": plans[0].n_ctx, "counted_tokens": [p.prompt_tokens for p in plans],
            "max_tokens": [p.request.max_tokens for p in plans],
            "tokenizer": "the route's own" if plans[0].exact else "estimated"})
        shared = sorted({p.shared_cut for p in plans if p.shared_cut})
        if shared:
            lr.details["shared_cut"] = shared
        if cut:
            what = "student code" if name == "L3" else "answers"
            more = f"; and {len(cut) - NOTED_CUTS} more (in the details)" \
                if len(cut) > NOTED_CUTS else ""
            lr.notes.append(f"{what} cut to fit the prompt: " + "; ".join(cut[:NOTED_CUTS])
                            + more)
        output: dict[str, Any] = {}
        metrics, samples = [], []
        for plan, res, extra in answers:
            if isinstance(res, GenerationResult) and res.retried_after:
                lr.details.setdefault("first_attempt_error", res.retried_after)
            if isinstance(res, InferenceError):
                group = f" (criteria {', '.join(plan.criteria)})" if len(plans) > 1 else ""
                lr.error = f"{type(res).__name__}{group}: {res}"
                m = getattr(res, "metrics", None)
                if m is not None:
                    lr.details.update(started_at=m.started_at, finished_at=m.finished_at)
                return lr
            metrics.append(res.metrics)
            output.update(res.parsed or {})
            samples.append(extra)
        lr.details.update(_metrics_details(_merged(metrics)))
        lr.details["output"] = output
        lr.details["advisory"] = not self._can_judge(LAYER_ROLES[name])
        if name == "L3":
            allowed = {c for p in plans for c in p.cell_ids}
            lr.details["dropped_claims"] = _drop_claims(output, allowed, ctx)
        if k > 1:
            drawn = [{key: v for extra in samples if s < len(extra)
                      for key, v in (extra[s].parsed or {}).items()} for s in range(k - 1)]
            _spread(lr, [d for d in drawn if d])
        return lr

    def _can_judge(self, role: str) -> bool:
        try:
            return self.client.config.can_judge(role)
        except InferenceError:
            return False


def _drop_claims(output: dict[str, Any], allowed: set[str], ctx: SubmissionContext) -> int:
    """Cells the model cites that were not shown to it as the student's, and quotes
    that are not in the cells cited, are dropped; how many."""
    dropped = 0
    for item in output.values():
        kept = [c for c in item.get("cells", []) if c in allowed]
        dropped += len(item.get("cells", [])) - len(kept)
        item["cells"] = kept
        if item.get("quote") and not _quoted(item["quote"], kept, ctx):
            item["quote"] = ""  # a quote that is not in the cited cells is no evidence
            dropped += 1
    return dropped


def _quoted(quote: str, cells: list[str], ctx: SubmissionContext) -> bool:
    """Whether ``quote`` (whitespace aside) appears in one of the cited cells."""
    want = " ".join(quote.split())
    for cid in cells:
        cell = ctx.submission.cell(cid)
        if cell is not None and want and want in " ".join(cell.source.split()):
            return True
    return False


def _spread(lr: LayerResult, samples: list[dict[str, Any]]) -> None:
    """Per criterion: how much the sampled judgements agree with each other."""
    outputs = [lr.details.get("output") or {}, *samples]
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
