"""Fit a prompt into its route's context window, counting tokens, not characters.

A request to layer 3 or 4 is three things that must fit the model's context
together: the shared part (system text, instructions, criteria, the solution),
the student's part (code cells or written answers) and the room the reply may
take (``max_tokens``). ``TokenCounter`` counts for one route, through the client
(``DisaggregatedClient.count_tokens`` and ``context_length``): with the route's own
tokenizer and chat template where the engine runs the model (the embedded engine,
which keeps the tokens it counted for the prompt's prefill), otherwise with the
client's conservative estimate and a wider safety margin here.

The student's part is cut piece by piece, and every cut is described so the
instructor sees it: ``fit_cells`` keeps the most relevant code cells whole and
leaves out the least relevant ones first (a cell is truncated, with a marker
``[... N lines cut]``, when that is enough); ``share_answers`` gives each written
answer a fair share of the room, so one padded answer cannot push out the others.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from inference import ChatMessage, DisaggregatedClient, GenerationRequest, estimate_tokens

from ..errors import PromptBudgetError

__all__ = ["Fit", "Piece", "PromptBudgetError", "TokenCounter", "estimate_tokens",
           "fit_cells", "route_counter", "share_answers", "truncate"]

log = logging.getLogger(__name__)

Count = Callable[[str], int]

SAFETY_TOKENS = 16  # head room even when counting with the real tokenizer
ESTIMATE_MARGIN = 0.05  # of the context, on top, when the tokens are estimated
SEPARATOR_TOKENS = 2  # the blank line between two pieces of the student's part
UNKNOWN_CONTEXT = 2048  # a remote model of unknown context, until its servers say
MIN_PIECE_TOKENS = 48  # a cell is cut to no less than this; below, it is left out


@dataclass(frozen=True, slots=True)
class TokenCounter:
    """How one route counts: its context length, and tokens of texts and requests."""

    n_ctx: int
    exact: bool  # the route's own tokenizer and chat template
    text: Count
    request: Callable[[GenerationRequest], int]
    label: str = ""  # the route, for messages

    @property
    def margin(self) -> int:
        extra = 0 if self.exact else math.ceil(self.n_ctx * ESTIMATE_MARGIN)
        return SAFETY_TOKENS + extra

    def room(self, max_tokens: int) -> int:
        """Prompt tokens the route allows with room for a reply of ``max_tokens``."""
        return self.n_ctx - self.margin - max_tokens


def route_counter(client: DisaggregatedClient, role: str) -> TokenCounter:
    """The counter for ``role``'s route, asking the client: its context (a remote model
    nobody knows the context of gets the smallest any current model has) and its
    prompts' tokens. A piece of the student's part counts as the tokens it adds to a
    chat, exactly where the route tokenizes (else by the estimate)."""
    label = client.route(role).name
    n_ctx = client.context_length(role) or UNKNOWN_CONTEXT

    def request(req: GenerationRequest) -> int:
        return client.count_tokens(role, req.messages).tokens

    probe = client.count_tokens(role, [ChatMessage("user", "x")])
    if not probe.exact:
        log.info("route %s: no tokenizer at hand, prompt tokens are estimated", label)
        return TokenCounter(n_ctx, False, estimate_tokens, request, label)
    overhead = probe.tokens - 1

    def text(value: str) -> int:
        if not value.strip():
            return len(value) and 1
        return max(0, request(GenerationRequest.chat(role, None, value)) - overhead)

    return TokenCounter(n_ctx, True, text, request, label)


# --- pieces of the student's part, and how they are cut --------------------------------


@dataclass(frozen=True, slots=True)
class Piece:
    """One cell (or answer) of the student's part: ``head`` then ``text``."""

    key: str  # how the instructor is told about a cut: "cell c3", "answer to q1"
    head: str  # kept whole: "[cell c3]"
    text: str
    relevance: int = 0  # higher is kept longer

    def render(self, text: str | None = None) -> str:
        return f"{self.head}\n{self.text if text is None else text}"


@dataclass(slots=True)
class Fit:
    texts: dict[str, str]  # key -> the text kept (possibly truncated), in the pieces' order
    cut: list[str] = field(default_factory=list)  # what was cut, for the instructor
    tokens: int = 0  # the kept pieces' tokens, separators included


def _cost(piece: Piece, count: Count, text: str | None = None) -> int:
    return count(piece.render(text)) + SEPARATOR_TOKENS


def _largest(n: int, fits: Callable[[int], bool]) -> int:
    """The largest k in [0, n] with fits(k), for a fits that holds up to some k."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def truncate(text: str, limit: int, count: Count) -> tuple[str, str]:
    """``text`` cut to at most ``limit`` tokens, with a marker saying what was cut.

    Whole lines go first ("[... 40 lines cut]"); a line longer than the room is
    cut inside ("[... 52,300 characters cut]"). Returns (text, what was cut), the
    latter "" when nothing was.
    """
    if count(text) <= limit:
        return text, ""
    lines = text.split("\n")
    room = limit - count(f"\n[... {len(lines)} lines cut]") - 1
    keep = _largest(len(lines) - 1, lambda k: count("\n".join(lines[:k])) <= room)
    head = "\n".join(lines[:keep])
    if keep == 0 or count(head) < room // 2:
        # A long line: keep what fits of it rather than lose the room.
        room = limit - count(f"\n[... {len(text):,} characters cut]") - 1
        prefix, rest = (f"{head}\n" if keep else ""), "\n".join(lines[keep:])
        chars = _largest(len(rest), lambda k: count(prefix + rest[:k]) <= room)
        head = prefix + rest[:chars]
        what = f"{len(text) - len(head):,} characters cut"
    else:
        what = f"{len(lines) - keep} lines cut"
    return (f"{head}\n[... {what}]" if head else f"[... {what}]"), what


def _cut_piece(piece: Piece, limit: int, count: Count) -> tuple[str, str]:
    head_cost = _cost(piece, count, "")
    return truncate(piece.text, max(0, limit - head_cost), count)


def fit_cells(pieces: Sequence[Piece], budget: int, count: Count, cap: int) -> Fit:
    """Fit code cells into ``budget`` tokens.

    Each cell is first cut to ``cap`` tokens (one huge cell cannot take the whole
    prompt); if they still do not fit, the least relevant cells go first (the
    longest of equal relevance first), each left out whole unless cutting it to
    the room that remains is enough and leaves it at least MIN_PIECE_TOKENS.
    """
    cap = max(0, min(cap, budget))
    texts = {p.key: p.text for p in pieces}
    costs: dict[str, int] = {}
    cut: list[str] = []
    for p in pieces:
        costs[p.key] = _cost(p, count)
        if costs[p.key] > cap and cap >= MIN_PIECE_TOKENS:
            texts[p.key], what = _cut_piece(p, cap, count)
            cut.append(f"{p.key}: {what} ({costs[p.key]} tokens, at most {cap} per cell)")
            costs[p.key] = _cost(p, count, texts[p.key])
    total = sum(costs.values())
    order = sorted(range(len(pieces)),
                   key=lambda i: (pieces[i].relevance, -costs[pieces[i].key], -i))
    for i in order:
        if total <= budget:
            break
        p = pieces[i]
        rest = total - costs[p.key]
        room = budget - rest
        if room >= MIN_PIECE_TOKENS:
            texts[p.key], what = _cut_piece(p, room, count)
            new = _cost(p, count, texts[p.key])
            if new <= room:
                cut.append(f"{p.key}: {what} to fit the prompt")
                total, costs[p.key] = rest + new, new
                continue
        cut.append(f"{p.key}: left out ({costs[p.key]} tokens; the least relevant cells "
                   "go first when the student's code does not fit the prompt)")
        del texts[p.key]
        total = rest
    return Fit({p.key: texts[p.key] for p in pieces if p.key in texts}, cut, total)


def share_answers(pieces: Sequence[Piece], budget: int, count: Count) -> Fit:
    """Fit answers into ``budget`` tokens: short ones whole, long ones cut to an equal share."""
    costs = {p.key: _cost(p, count) for p in pieces}
    texts = {p.key: p.text for p in pieces}
    if sum(costs.values()) <= budget:
        return Fit(texts, [], sum(costs.values()))
    cut: list[str] = []
    left, total = max(0, budget), 0
    by_size = sorted(pieces, key=lambda p: costs[p.key])
    for k, p in enumerate(by_size):
        share = left // (len(by_size) - k)
        if costs[p.key] > share:
            texts[p.key], what = _cut_piece(p, share, count)
            cut.append(f"{p.key}: {what} ({costs[p.key]} tokens, a share of {share} "
                       "to fit the prompt)")
            costs[p.key] = _cost(p, count, texts[p.key])
        left -= costs[p.key]
        total += costs[p.key]
    return Fit({p.key: texts[p.key] for p in pieces}, cut, total)
