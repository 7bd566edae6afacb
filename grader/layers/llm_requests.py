"""The requests of layers 3 and 4 for one submission, each fitted to its route's context.

A request must hold its shared part, the student's part and its reply
(``max_tokens``) inside the route's context, counted in the route's tokens
(``grader.layers.prompt_budget``). The plan, for each layer:

1. The reply: each criterion needs room for its JSON in the worst case the schema
   allows. Criteria whose replies together would take more than REPLY_SHARE of the
   context are split into groups, one request each (sent together).
2. The shared part (instructions, criteria, solution, model answers) is the same
   for every student of an assignment, so the engine's prefix reuse skips it: it is
   shrunk, by levels that depend only on the assignment and the route, until it
   takes at most SHARED_SHARE of what the reply leaves.
3. The student's part gets the rest: code cells are cut least relevant first, and
   answers to equal shares (``fit_cells``, ``share_answers``). Each cut is recorded
   and shown to the instructor. The finished request is counted again (with the real
   tokenizer and chat template when the route has them) and refitted if it is over.

A group that cannot fit even so is split in two; a single criterion that cannot
fit raises ``PromptBudgetError``, which the layer reports (never an overflow at the
engine).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from inference import GenerationRequest

from ..analysis.answers import find_answer
from ..analysis.template import match_template
from ..rubrics.check_fields import alternatives
from ..rubrics.schema import Criterion
from ..types import LayerResult
from .base import SubmissionContext
from .prompt_budget import (
    SAFETY_TOKENS,
    Piece,
    PromptBudgetError,
    TokenCounter,
    fit_cells,
    share_answers,
)
from .prompts import (
    FEEDBACK_CHARS,
    ISSUE_CHARS,
    MODEL_ANSWER_CHARS,
    QUOTE_CHARS,
    SOLUTION_CHARS,
    SYSTEM,
    answer_head,
    cell_head,
    code_request_text,
    code_schema,
    feedback_request_text,
    feedback_schema,
    shared_code_prefix,
    shared_feedback_prefix,
    student_cells,
)

__all__ = ["PlannedRequest", "plan_code", "plan_feedback"]

# Room for one criterion's JSON in the worst case the schema allows (every
# character of its capped strings a token of its own, plus the keys), so a
# reply is never cut off mid-string. Typical replies use a third of it.
CODE_TOKENS_PER_CRITERION = 30 + ISSUE_CHARS
FEEDBACK_TOKENS_PER_CRITERION = 30 + 3 * FEEDBACK_CHARS
RICH_EXTRA_TOKENS = 20 + QUOTE_CHARS + ISSUE_CHARS  # confidence, quote, suggestion
REPLY_TOKENS = 40  # the reply's braces and spacing, whatever the criteria
REPLY_SHARE = 0.5  # of the context, at most, for one request's reply
SHARED_SHARE = 0.5  # of what the reply leaves, at most, for the shared part
CELL_CAP_TOKENS = 400  # one student cell is cut to max(this, a quarter of the budget)
MIN_STUDENT_TOKENS = 128  # a request leaving the student's part less is not sent
REFITS = 4  # recount-and-refit rounds when the whole request is over by a few tokens


@dataclass(frozen=True, slots=True)
class SharedLevel:
    """How much of the shared part is kept: the first level that fits is used."""

    solution_chars: int
    answer_chars: int
    description_chars: int | None

    def describe(self) -> str:
        return (f"solution excerpt {self.solution_chars} characters, model answers "
                f"{self.answer_chars}, descriptions {self.description_chars}")


LEVELS = (
    SharedLevel(SOLUTION_CHARS, MODEL_ANSWER_CHARS, None),
    SharedLevel(1500, 300, 300),
    SharedLevel(500, 120, 120),
    SharedLevel(0, 0, 60),
)


@dataclass(slots=True)
class PlannedRequest:
    """One request of a layer, fitted: what it asks, about which criteria, what was cut."""

    layer: str  # "L3" | "L4"
    request: GenerationRequest
    criteria: tuple[str, ...]
    cell_ids: tuple[str, ...] = ()  # the cells the code model may cite
    cut: list[str] = field(default_factory=list)  # of the student's part
    shared_cut: str = ""  # how the shared part was shrunk ("" when it was not)
    prompt_tokens: int = 0  # as counted when fitting
    n_ctx: int = 0
    margin: int = 0
    exact: bool = False  # counted with the route's own tokenizer

    @property
    def room_for_reply(self) -> int:
        """The most tokens a reply (or the client's retry of it) can have in this context."""
        return self.n_ctx - self.margin - self.prompt_tokens


def plan_code(ctx: SubmissionContext, l1: LayerResult, l2: LayerResult,
              excluded: set[tuple[str, int]], counter: TokenCounter, rich: bool,
              cap: int | None = None) -> list[PlannedRequest]:
    """L3's requests: none when there are no code criteria or no code of the student's.
    ``cap``: the most tokens of the student's code to show, context allowing."""
    rubric = ctx.assignment.rubric
    criteria = [c for c in rubric.criteria if c.kind == "code"]
    cells = student_cells(ctx.match, excluded)
    if not criteria or not cells:
        return []
    checks = l1.checks + l2.checks
    cited = {(ch.criterion_id, e.cell_id) for ch in checks for e in ch.evidence if e.cell_id}
    per_item = CODE_TOKENS_PER_CRITERION + (RICH_EXTRA_TOKENS if rich else 0)

    def one(group: list[Criterion]) -> PlannedRequest:
        max_tokens = per_item * len(group) + REPLY_TOKENS
        room = counter.room(max_tokens)
        level, prefix = _level(counter, room, "code", lambda lv: shared_code_prefix(
            rubric, ctx.assignment.solution, group, rich, lv.solution_chars,
            lv.description_chars))
        evidence = {c.id: "; ".join(ch.message for ch in checks  # hidden: never to a model
                                    if ch.criterion_id == c.id and not ch.hidden)[:80]
                    for c in group}
        names = _names(group)
        pieces = [Piece(f"cell {cid}", cell_head(cid), text,
                        _relevance(cid, text, group, cited, names)) for cid, text in cells]

        def build(kept: dict[str, str]) -> GenerationRequest:
            shown = {key.removeprefix("cell "): text for key, text in kept.items()}
            return GenerationRequest.chat(
                "code", SYSTEM, code_request_text(prefix, shown, evidence),
                json_schema=code_schema(group, list(shown), rich), max_tokens=max_tokens,
                temperature=0.0)

        def fit(budget: int) -> tuple[dict[str, str], list[str]]:
            got = fit_cells(pieces, budget, counter.text, max(CELL_CAP_TOKENS, budget // 4))
            return got.texts, got.cut

        req, kept, cut, tokens = _fit_request(counter, room, build, fit, "L3", group, cap)
        shown = tuple(cid for cid, _ in cells if f"cell {cid}" in kept)
        return PlannedRequest("L3", req, tuple(c.id for c in group), shown, cut,
                              _shared_cut(level), tokens, counter.n_ctx, counter.margin,
                              counter.exact)

    return _in_groups(criteria, per_item, counter, one)


def plan_feedback(ctx: SubmissionContext, excluded: set[tuple[str, int]],
                  counter: TokenCounter, cap: int | None = None) -> list[PlannedRequest]:
    """L4's requests: none when there are no written criteria or every one is unanswered.
    ``cap``: the most tokens of the student's answers to show, context allowing."""
    rubric = ctx.assignment.rubric
    written = [c for c in rubric.criteria if c.kind == "written"]
    answers: dict[str, str] = {}
    for c in written:
        q = next((ch for ch in c.checks if ch.type == "answer"), None)
        ans = find_answer(ctx.match, q.question, rubric.all_placeholders, rubric.questions,
                          template=ctx.assignment.template, excluded=excluded) if q else None
        answers[c.id] = ans.text if ans else ""  # flagged blocks are not the answer
    if not any(a.strip() for a in answers.values()):
        return []  # every question unanswered: nothing to judge
    model_answers = _model_answers(ctx, written)

    def one(group: list[Criterion]) -> PlannedRequest:
        max_tokens = FEEDBACK_TOKENS_PER_CRITERION * len(group) + REPLY_TOKENS
        room = counter.room(max_tokens)
        level, prefix = _level(counter, room, "feedback", lambda lv: shared_feedback_prefix(
            rubric, group, model_answers, lv.answer_chars, lv.description_chars))
        pieces = [Piece(f"answer to {c.id}", answer_head(c.id), answers[c.id])
                  for c in group if answers[c.id].strip()]

        def build(kept: dict[str, str]) -> GenerationRequest:
            shown = {c.id: kept.get(f"answer to {c.id}", "") for c in group}
            return GenerationRequest.chat(
                "feedback", SYSTEM, feedback_request_text(prefix, shown),
                json_schema=feedback_schema(group), max_tokens=max_tokens, temperature=0.0)

        def fit(budget: int) -> tuple[dict[str, str], list[str]]:
            got = share_answers(pieces, budget, counter.text)
            return got.texts, got.cut

        req, _, cut, tokens = _fit_request(counter, room, build, fit, "L4", group, cap)
        return PlannedRequest("L4", req, tuple(c.id for c in group), (), cut,
                              _shared_cut(level), tokens, counter.n_ctx, counter.margin,
                              counter.exact)

    return _in_groups(written, FEEDBACK_TOKENS_PER_CRITERION, counter, one)


# --- the steps ---------------------------------------------------------------------------


def _in_groups(criteria: list[Criterion], per_item: int, counter: TokenCounter,
               one: Callable[[list[Criterion]], PlannedRequest]) -> list[PlannedRequest]:
    """One request per group of criteria whose reply takes at most REPLY_SHARE."""
    limit = int(REPLY_SHARE * (counter.n_ctx - counter.margin)) - REPLY_TOKENS
    size = max(1, limit // per_item)
    n_groups = -(-len(criteria) // size)
    bounds = [round(i * len(criteria) / n_groups) for i in range(n_groups + 1)]
    out: list[PlannedRequest] = []
    for a, b in itertools.pairwise(bounds):
        out += _one_or_halves(criteria[a:b], one)
    return out


def _one_or_halves(group: list[Criterion],
                   one: Callable[[list[Criterion]], PlannedRequest]) -> list[PlannedRequest]:
    try:
        return [one(group)]
    except PromptBudgetError:
        if len(group) == 1:
            raise
        half = len(group) // 2
        return _one_or_halves(group[:half], one) + _one_or_halves(group[half:], one)


def _level(counter: TokenCounter, room: int, role: str,
           make: Callable[[SharedLevel], str]) -> tuple[SharedLevel, str]:
    """The fullest shared part within SHARED_SHARE of ``room`` (else the smallest)."""
    for level in LEVELS:
        prefix = make(level)
        shared = counter.request(GenerationRequest.chat(role, SYSTEM, prefix))
        if shared <= SHARED_SHARE * room:
            return level, prefix
    return LEVELS[-1], prefix


def _shared_cut(level: SharedLevel) -> str:
    return "" if level == LEVELS[0] else f"shared part shrunk to fit: {level.describe()}"


def _fit_request(counter: TokenCounter, room: int,
                 build: Callable[[dict[str, str]], GenerationRequest],
                 fit: Callable[[int], tuple[dict[str, str], list[str]]],
                 layer: str, group: Sequence[Criterion], cap: int | None,
                 ) -> tuple[GenerationRequest, dict[str, str], list[str], int]:
    """(request, kept pieces, cuts, prompt tokens): the student's part fitted to ``room``
    (and to ``cap`` tokens, when given)."""
    base = counter.request(build({}))
    budget = room - base if cap is None else min(room - base, cap)
    what = f"{layer} ({', '.join(c.id for c in group)}) on {counter.label or 'its route'}"
    for _ in range(REFITS):
        if budget < MIN_STUDENT_TOKENS:
            break
        kept, cut = fit(budget)
        req = build(kept)
        tokens = counter.request(req)
        if tokens <= room:
            return req, kept, cut, tokens
        budget -= tokens - room + SAFETY_TOKENS
    raise PromptBudgetError(
        f"the {what} prompt does not fit the model's context of {counter.n_ctx} tokens: "
        f"the shared part and the reply leave {max(0, room - base)} tokens for the student's "
        f"part (at least {MIN_STUDENT_TOKENS} are needed)")


_WORD = re.compile(r"[A-Za-z_.][A-Za-z0-9_.]*")


def _names(group: list[Criterion]) -> set[str]:
    """The names the group's checks look for (the last part of dotted names too)."""
    out: set[str] = set()
    for c in group:
        for ch in c.checks:
            for name in (*(a for e in (*ch.names, *ch.functions) for a in alternatives(e)),
                         ch.variable):
                if name:
                    out |= {name, name.rsplit(".", 1)[-1].rsplit("::", 1)[-1]}
    return out


def _relevance(cell_id: str, text: str, group: list[Criterion],
               cited: set[tuple[str, str]], names: set[str]) -> int:
    """2: the checks cite the cell; 1: it names what they look for; 0: neither."""
    if any((c.id, cell_id) in cited for c in group):
        return 2
    words = set(_WORD.findall(text))
    words |= {w.rsplit(".", 1)[-1] for w in words}
    return 1 if words & names else 0


def _model_answers(ctx: SubmissionContext, written: list[Criterion]) -> dict[str, str]:
    """The solution's answer to each written question, found once per assignment."""
    actx = ctx.assignment
    with actx.lock:
        cached = actx.cache.get("model_answers")
        if cached is None:
            rubric = actx.rubric
            match = match_template(actx.template, actx.solution, rubric.all_placeholders)
            cached = {}
            for c in rubric.criteria:
                q = next((ch for ch in c.checks if ch.type == "answer"), None)
                if c.kind == "written" and q is not None:
                    cached[c.id] = find_answer(match, q.question, rubric.all_placeholders,
                                               rubric.questions, template=actx.template).text
            actx.cache["model_answers"] = cached
    return {c.id: cached.get(c.id, "") for c in written}

