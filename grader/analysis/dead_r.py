"""R code that can never run, left out of layer 1's code facts (as ``dead_py`` for Python).

Read from ``grader.analysis.rlang``'s tokens (comments removed) and bracket pairs:
- ``if (FALSE) body``: the body; ``if (TRUE) x else body``: the ``else`` branch; a
  condition R cannot use (``NULL``, ``NA``) runs neither branch. Constant conditions:
  ``TRUE``/``FALSE``, ``T``/``F``, numbers (0 is false), the strings R reads as logical
  (``"FALSE"``, ``"false"``, ``"F"``, ...), each perhaps after ``!``;
- ``while (FALSE) body``: the body;
- statements after ``stop(...)``, ``return(...)``, ``break`` or ``next`` at the start of
  a statement, up to the end of the enclosing ``{ }`` block (at a cell's top level: the
  rest of the cell).
A body is a ``{ }`` block or one expression (``rlang``'s expression end).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

__all__ = ["dead_tokens"]


class Token(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def value(self) -> str: ...


ExprEnd = Callable[[list, dict[int, int], int], int]  # rlang's: the index past an expression

_TRUE_STRINGS = frozenset({"TRUE", "true", "True", "T"})
_FALSE_STRINGS = frozenset({"FALSE", "false", "False", "F"})
_LEAVING_CALLS = frozenset({"stop", "return", "base::stop", "base::return"})
_STATEMENT_START = frozenset({";", "{"})


def dead_tokens(toks: Sequence[Token], pair: dict[int, int], expr_end: ExprEnd) -> set[int]:
    """Indices of ``toks`` that can never run."""
    toks = list(toks)
    dead: set[int] = set()
    for i, t in enumerate(toks):
        if i in dead:
            continue
        if t.kind == "kw" and t.text in ("if", "while"):
            try:
                dead |= _dead_branches(toks, pair, expr_end, i)
            except _TooDeep:
                continue  # nested past reading: left live
        elif ((t.kind == "kw" and t.text in ("break", "next")) or _leaving(toks, i)) \
                and _starts_statement(toks, i):
            dead |= _rest_of_block(toks, pair, i)
    return dead


def _truth(cond: list[Token]) -> bool | str | None:
    """True/False for a constant condition, "error" for one R refuses, None otherwise."""
    negate = False
    while cond and cond[0].kind == "op" and cond[0].text == "!":
        negate, cond = not negate, cond[1:]
    if len(cond) != 1:
        return None
    t = cond[0]
    value: bool | None = None
    if t.kind == "const" and t.text in ("TRUE", "FALSE"):
        value = t.text == "TRUE"
    elif t.kind == "const" and (t.text == "NULL" or t.text.startswith("NA")):
        return "error"
    elif t.kind == "name" and t.text in ("T", "F"):
        value = t.text == "T"
    elif t.kind == "num":
        try:
            value = float.fromhex(t.text.rstrip("Li")) != 0 if t.text.lower().startswith("0x") \
                else float(t.text.rstrip("Li")) != 0
        except ValueError:
            return None
    elif t.kind == "str" and t.value in _TRUE_STRINGS | _FALSE_STRINGS:
        value = t.value in _TRUE_STRINGS
    if value is None:
        return None
    return not value if negate else value


def _next_code(toks: list[Token], k: int) -> int:
    while k < len(toks) and toks[k].kind == "newline":
        k += 1
    return k


class _TooDeep(Exception):
    """Bodies nested past ``MAX_DEPTH``: the construct is left live."""


MAX_DEPTH = 100


def _body_end(toks: list[Token], pair: dict[int, int], expr_end: ExprEnd, k: int,
              depth: int = 0) -> int:
    """The index past the body (a block, an ``if`` with its branches, or an expression)
    that starts at ``k``."""
    if depth > MAX_DEPTH:
        raise _TooDeep
    if k >= len(toks):
        return k
    if toks[k].kind == "op" and toks[k].text == "{":
        return pair.get(k, len(toks) - 1) + 1
    if toks[k].kind == "kw" and toks[k].text in ("if", "while"):
        opener = _next_code(toks, k + 1)
        if opener >= len(toks) or toks[opener].text != "(" or opener not in pair:
            return len(toks)
        end = _body_end(toks, pair, expr_end, _next_code(toks, pair[opener] + 1), depth + 1)
        other = _next_code(toks, end)
        if toks[k].text == "if" and other < len(toks) and toks[other].text == "else":
            end = _body_end(toks, pair, expr_end, _next_code(toks, other + 1), depth + 1)
        return end
    return max(expr_end(toks, pair, k), k + 1)


def _dead_branches(toks: list[Token], pair: dict[int, int], expr_end: ExprEnd,
                   i: int) -> set[int]:
    opener = _next_code(toks, i + 1)
    if opener >= len(toks) or toks[opener].text != "(" or opener not in pair:
        return set()
    truth = _truth([t for t in toks[opener + 1:pair[opener]] if t.kind != "newline"])
    if truth is None:
        return set()
    start = _next_code(toks, pair[opener] + 1)
    end = _body_end(toks, pair, expr_end, start)
    dead = set(range(start, end)) if truth is not True else set()
    other = _next_code(toks, end)
    if toks[i].text == "if" and truth is not False and other < len(toks) \
            and toks[other].text == "else":
        dead |= set(range(other + 1, _body_end(toks, pair, expr_end,
                                               _next_code(toks, other + 1))))
    return dead


def _leaving(toks: list[Token], i: int) -> bool:
    """``stop(`` or ``return(`` (perhaps ``base::``-qualified), at token ``i``."""
    t = toks[i]
    if t.kind != "name" or i + 1 >= len(toks) or toks[i + 1].text != "(":
        return False
    qualified = i > 1 and toks[i - 1].text == "::" and toks[i - 2].kind == "name"
    name = f"{toks[i - 2].value}::{t.value}" if qualified else t.value
    return name in _LEAVING_CALLS


def _starts_statement(toks: list[Token], i: int) -> bool:
    """Whether token ``i`` (perhaps after ``base::``) begins a statement."""
    k = i - 2 if i > 1 and toks[i - 1].text == "::" else i
    return k == 0 or toks[k - 1].kind == "newline" or toks[k - 1].text in _STATEMENT_START


def _rest_of_block(toks: list[Token], pair: dict[int, int], i: int) -> set[int]:
    """From the end of the statement at ``i`` to the end of its ``{ }`` block."""
    end = pair.get(i + 1, len(toks) - 1) + 1 if toks[i].kind == "name" else i + 1
    depth, close = 0, len(toks)
    for k in range(end, len(toks)):
        if toks[k].kind == "op" and toks[k].text in ("(", "[", "{"):
            depth += 1
        elif toks[k].kind == "op" and toks[k].text in (")", "]", "}"):
            if depth == 0:
                close = k  # the block's own closing brace
                break
            depth -= 1
    return set(range(end, close))
