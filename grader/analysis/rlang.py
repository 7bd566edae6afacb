"""A tokenizer and a light parser for R code, for layer 1's code facts.

Layer 1 must know which variables a student assigned and which functions they called
without counting names inside comments or strings. R has no parser in Python, so this
module tokenizes R as R does (strings with escapes, raw strings, backtick names,
comments, numbers, ``%op%`` operators, ``<-``, ``->``, ``|>``, ``::``) and then reads
assignments and calls from the tokens, tracking brackets so that a named argument
(``mutate(total = price * qty)``) is not taken for an assignment.

Call names: ``f(x)`` -> "f"; ``dplyr::filter(x)`` -> "dplyr::filter"; a function taken
from a list, ``obj$f(x)``, -> "obj$f". ``function(x)`` and ``\\(x)`` are not calls. Code
that can never run (``if (FALSE) {...}``, statements after ``stop()``) is left out
(``grader.analysis.dead_r``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

from .dead_r import dead_tokens

__all__ = ["RFacts", "RToken", "comment_spans", "live_code", "normalise", "scan", "tokenize"]


class RToken(NamedTuple):
    kind: str  # name | num | str | const | kw | op | comment | newline
    text: str  # the source text
    value: str  # a string's or backtick name's contents; else the text
    line: int  # 1-based line where the token starts
    start: int  # offsets in the code
    end: int


@dataclass(slots=True)
class RFacts:
    """What ``scan`` found: (name, line) pairs in source order."""

    assigns: list[tuple[str, int]] = field(default_factory=list)
    calls: list[tuple[str, int]] = field(default_factory=list)
    literal: dict[str, bool] = field(default_factory=dict)  # name -> last assignment literal
    errors: list[str] = field(default_factory=list)  # "line N: what", first line first


_KEYWORDS = frozenset({"if", "else", "repeat", "while", "function", "for", "in", "next", "break"})
_CONSTANTS = frozenset(
    {"TRUE", "FALSE", "NULL", "NA", "NA_integer_", "NA_real_", "NA_character_", "NA_complex_"}
    | {"Inf", "NaN"}
)
_PLACEHOLDERS = frozenset({"NULL", "NA", "NA_integer_", "NA_real_", "NA_character_"})
# longest first, so that "<<-" is not read as "<" "<-"
_OPERATORS = ("<<-", "->>", ":::", "<-", "->", "|>", "::", "<=", ">=", "==", "!=", "&&", "||")
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+[Li]?|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[Li]?")
_IDENT = re.compile(r"[\w.]+")
_BLANKS = re.compile(r"[^\S\n]+")
_RAW_OPEN = re.compile(r"[rR]([\"'])(-*)([(\[{])")
_CLOSE_OF = {"(": ")", "[": "]", "{": "}"}
_OPEN_OF = {")": "(", "]": "[", "}": "{"}
_BINARY = frozenset(
    {"+", "-", "*", "/", "^", "<", ">", "<=", ">=", "==", "!=", "&", "&&", "|", "||", "~"}
    | {"<-", "<<-", "=", "|>", ":", "$", "@", "::", ":::", "!", "?", "**", "->", "->>"}
)
_WHAT = {"name": "symbol", "num": "numeric constant", "str": "string constant", "const": "constant"}
_LITERAL_CTORS = frozenset({"c", "list", "data.frame", "tibble", "tribble", "data.table"})
_LITERAL_OPS = frozenset({"+", "-", "*", "/", "^", ":", "(", ")", ",", "=", "::", "~"})


def tokenize(code: str) -> tuple[list[RToken], list[str]]:
    """Split R code into tokens; the second value lists lexical errors (never raises)."""
    tokens: list[RToken] = []
    errors: list[str] = []
    i, line = 0, 1
    while i < len(code):
        kind, end, value = _lex_one(code, i, errors, line)
        if kind:
            text = code[i:end]
            tokens.append(RToken(kind, text, value if value is not None else text, line, i, end))
        line += code.count("\n", i, end)
        i = end
    return tokens, errors


def _lex_one(code: str, i: int, errors: list[str], line: int) -> tuple[str, int, str | None]:
    """Read the token at ``i``: (kind or "" for whitespace, end offset, value)."""
    ch = code[i]
    if ch == "\n":
        return "newline", i + 1, None
    if ch.isspace():
        return "", _BLANKS.match(code, i).end(), None  # type: ignore[union-attr]
    if ch == "#":
        end = code.find("\n", i)
        return "comment", len(code) if end < 0 else end, None
    raw = _RAW_OPEN.match(code, i)
    if raw:
        closing = _CLOSE_OF[raw.group(3)] + raw.group(2) + raw.group(1)
        end = code.find(closing, raw.end())
        if end < 0:
            errors.append(f"line {line}: raw string is never closed")
            return "str", len(code), code[raw.end() :]
        return "str", end + len(closing), code[raw.end() : end]
    if ch in "'\"`":
        end, closed = _quoted_end(code, i)
        if not closed:
            errors.append(f"line {line}: {'name' if ch == '`' else 'string'} is never closed")
        value = code[i + 1 : end - 1 if closed else end]
        return ("name" if ch == "`" else "str"), end, value
    number = _NUMBER.match(code, i)
    if number and (ch.isdigit() or ch == "."):
        return "num", number.end(), None
    if ch.isalpha() or ch in "._":
        ident = _IDENT.match(code, i)
        end = ident.end() if ident else i + 1
        return _word_kind(code[i:end]), end, None
    if ch == "%":
        end = code.find("%", i + 1)
        newline = code.find("\n", i + 1)
        if end > 0 and (newline < 0 or end < newline):
            return "op", end + 1, None
    op = next((o for o in _OPERATORS if code.startswith(o, i)), ch)
    return "op", i + len(op), None


def _word_kind(word: str) -> str:
    if word in _KEYWORDS:
        return "kw"
    return "const" if word in _CONSTANTS else "name"


def _quoted_end(code: str, i: int) -> tuple[int, bool]:
    """The offset just past the string or backtick name that starts at ``i``."""
    quote, j = code[i], i + 1
    while j < len(code):
        if code[j] == "\\":
            j += 2
            continue
        if code[j] == quote:
            return j + 1, True
        j += 1
    return len(code), False


def comment_spans(code: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the comments in R code."""
    tokens, _ = tokenize(code)
    return [(t.start, t.end) for t in tokens if t.kind == "comment"]


def normalise(code: str) -> str:
    """The code's tokens, one space apart, one line per source line; comments dropped."""
    tokens, _ = tokenize(code)
    lines: dict[int, list[str]] = {}
    for t in tokens:
        if t.kind not in ("comment", "newline"):
            lines.setdefault(t.line, []).append(t.text)
    return "\n".join(" ".join(parts) for _, parts in sorted(lines.items()))


def scan(code: str) -> RFacts:
    """Find the assignments and calls in R code."""
    all_tokens, lex_errors = tokenize(code)
    toks = [t for t in all_tokens if t.kind != "comment"]
    ctx, pair, bracket_errors = _brackets(toks)
    errors = lex_errors + bracket_errors + _grammar_errors(toks, pair)
    facts = RFacts(errors=sorted(errors, key=lambda e: int(e[5 : e.index(":")])))  # "line N: "
    dead = dead_tokens(toks, pair, _expr_end)  # if (FALSE) {...}: calls and assigns nothing
    for i, t in enumerate(toks):
        if i in dead:
            continue
        if t.kind == "op" and (t.text in ("<-", "<<-") or (t.text == "=" and ctx[i] in ("", "{"))):
            _record_left_assign(facts, toks, pair, i)
        elif t.kind == "op" and t.text in ("->", "->>"):
            _record_right_assign(facts, toks, pair, i)
        elif t.kind == "name" and i + 1 < len(toks) and toks[i + 1].text == "(":
            _record_call(facts, toks, i)
    return facts


def live_code(code: str) -> str:
    """``code`` with what can never run replaced by spaces (lines and columns kept)."""
    toks = [t for t in tokenize(code)[0] if t.kind != "comment"]
    dead = dead_tokens(toks, _brackets(toks)[1], _expr_end)
    chars = list(code)
    for i in dead:  # a string may span lines: its newlines stay
        t = toks[i]
        chars[t.start:t.end] = [c if c == "\n" else " " for c in code[t.start:t.end]]
    return "".join(chars)


def _brackets(toks: list[RToken]) -> tuple[list[str], dict[int, int], list[str]]:
    """Per token, the innermost open bracket around it ("" at top level); matching pairs."""
    stack: list[int] = []
    ctx: list[str] = []
    pair: dict[int, int] = {}
    errors: list[str] = []
    for i, t in enumerate(toks):
        if t.kind == "op" and t.text in _OPEN_OF:
            opener = _OPEN_OF[t.text]
            depth = next(
                (d for d in range(len(stack) - 1, -1, -1) if toks[stack[d]].text == opener), None
            )
            if depth is None:
                errors.append(f"line {t.line}: unexpected '{t.text}'")
            else:
                if depth != len(stack) - 1:
                    errors.append(f"line {t.line}: '{t.text}' closes the wrong bracket")
                pair[i], pair[stack[depth]] = stack[depth], i
                del stack[depth:]
        ctx.append(toks[stack[-1]].text if stack else "")
        if t.kind == "op" and t.text in _CLOSE_OF:
            stack.append(i)
    if stack:
        first = toks[stack[0]]
        errors.append(f"line {first.line}: '{first.text}' is never closed")
    return ctx, pair, errors


def _grammar_errors(toks: list[RToken], pair: dict[int, int]) -> list[str]:
    """R's commonest syntax errors: two operands in a row (``x y``, ``f(x) "a"``) and an
    expression left unfinished at the end (``x <-``)."""
    errors = [
        f'line {b.line}: unexpected {_WHAT[b.kind]} in "{toks[i - 1].text} {b.text}"'
        for i, b in enumerate(toks[1:], start=1)
        if b.kind in _WHAT and _ends_operand(toks, pair, i - 1)
    ]
    last = next((t for t in reversed(toks) if t.kind != "newline"), None)
    if last is not None and _continues(last):
        errors.append(f"line {last.line}: unexpected end of input after '{last.text}'")
    return errors


def _ends_operand(toks: list[RToken], pair: dict[int, int], i: int) -> bool:
    """Whether token ``i`` ends an operand; ``if (a)`` and ``function(x)`` are heads."""
    t = toks[i]
    if t.kind in _WHAT or (t.kind == "op" and t.text == "]"):
        return True
    if t.kind != "op" or t.text != ")" or i not in pair:
        return False
    return pair[i] == 0 or toks[pair[i] - 1].text not in ("if", "for", "while", "function", "\\")


def _record_left_assign(facts: RFacts, toks: list[RToken], pair: dict[int, int], i: int) -> None:
    target = _lhs_target(toks, pair, i)
    if target is None:
        return
    name, whole = target
    facts.assigns.append((name, toks[i].line))
    value = _is_literal([t for t in toks[i + 1 : _expr_end(toks, pair, i + 1)]])
    _set_literal(facts, name, value, whole)


def _record_right_assign(facts: RFacts, toks: list[RToken], pair: dict[int, int], i: int) -> None:
    k = next((k for k in range(i + 1, len(toks)) if toks[k].kind != "newline"), None)
    if k is None or toks[k].kind not in ("name", "str"):
        return
    after = toks[k + 1].text if k + 1 < len(toks) else ""
    if after == "(":
        name, whole = _first_arg(toks, k + 1), False
    else:
        name, whole = toks[k].value, after not in ("$", "@", "[")
    if name is None:
        return
    facts.assigns.append((name, toks[k].line))
    _set_literal(facts, name, _is_literal(toks[_expr_start(toks, pair, i) : i]), whole)


def _set_literal(facts: RFacts, name: str, value: bool, whole: bool) -> None:
    """A whole assignment sets the flag; a partial one (``df$x <- 1``) can only clear it."""
    facts.literal[name] = value if whole else facts.literal.get(name, False) and value


def _record_call(facts: RFacts, toks: list[RToken], i: int) -> None:
    name = toks[i].value
    before = toks[i - 1] if i > 0 else None
    owner = toks[i - 2].value if i > 1 and toks[i - 2].kind == "name" else ""
    if before is not None and before.kind == "op" and before.text in ("::", ":::", "$", "@"):
        name = f"{owner}{before.text}{name}"
    facts.calls.append((name, toks[i].line))
    is_assign = name in ("assign", "base::assign") and i + 3 < len(toks)
    if is_assign and toks[i + 2].kind == "str" and toks[i + 3].text in (",", ")"):
        facts.assigns.append((toks[i + 2].value, toks[i].line))
        facts.literal[toks[i + 2].value] = False


def _lhs_target(toks: list[RToken], pair: dict[int, int], i: int) -> tuple[str, bool] | None:
    """The variable an assignment at ``i`` changes, and whether it replaces it whole.

    ``x <- v`` -> ("x", True); ``df$a <- v``, ``df[i] <- v``, ``names(df) <- v`` ->
    ("df", False).
    """
    j, whole = i - 1, True
    while j >= 0:
        t = toks[j]
        if t.kind == "op" and t.text in (")", "]"):
            opener = pair.get(j)
            if opener is None:
                return None
            if t.text == ")":
                callee_is_name = opener > 0 and toks[opener - 1].kind == "name"
                arg = _first_arg(toks, opener) if callee_is_name else None
                return None if arg is None else (arg, False)
            j, whole = opener - 1, False
            continue
        if t.kind in ("name", "str"):
            if j > 0 and toks[j - 1].kind == "op" and toks[j - 1].text in ("$", "@"):
                j, whole = j - 2, False
                continue
            return t.value, whole
        return None
    return None


def _first_arg(toks: list[RToken], opener: int) -> str | None:
    """The variable a replacement function changes: ``names(df)`` -> "df"."""
    k = opener + 1
    if k < len(toks) and toks[k].kind in ("name", "str"):
        return toks[k].value
    return None


def _continues(t: RToken) -> bool:
    """Whether an expression goes on past a newline after token ``t``."""
    return t.kind == "op" and (t.text in _BINARY or (len(t.text) > 1 and t.text[0] == "%"))


def _expr_end(toks: list[RToken], pair: dict[int, int], start: int) -> int:
    """The index just past the expression that starts at ``start``."""
    j, last = start, None
    while j < len(toks):
        t = toks[j]
        if t.kind == "op" and t.text in _CLOSE_OF:
            j, last = pair.get(j, len(toks) - 1) + 1, t
            continue
        if (t.kind == "op" and t.text in ")]},;") or (t.kind == "kw" and t.text == "else"):
            break
        if t.kind == "newline":
            if last is not None and not _continues(last):
                break
        else:
            last = t
        j += 1
    return j


def _expr_start(toks: list[RToken], pair: dict[int, int], end: int) -> int:
    """The index where the expression that ends just before ``end`` starts."""
    j = end - 1
    while j >= 0:
        t = toks[j]
        if t.kind == "op" and t.text in _OPEN_OF and j in pair:
            j = pair[j] - 1
            continue
        if t.kind == "op" and t.text in ("(", "[", "{", ",", ";", "<-", "<<-", "="):
            break
        if t.kind == "newline":
            prev = next((p for p in reversed(toks[:j]) if p.kind != "newline"), None)
            if prev is None or not _continues(prev):
                break
        j -= 1
    return j + 1


def _is_literal(seg: list[RToken]) -> bool:
    """Whether an expression is made of literals only: ``42``, ``c(1, 2)``, ``tibble(a = 1)``.

    Placeholders (``NULL``, ``NA``, ``c()``, ``list()``) are not literals: they hold no answer.
    """
    sig = [t for t in seg if t.kind != "newline"]
    if not sig or _is_placeholder(sig):
        return False
    for k, t in enumerate(sig):
        after = sig[k + 1].text if k + 1 < len(sig) else ""
        before = sig[k - 1].text if k > 0 else ""
        if t.kind in ("num", "str", "const") or (t.kind == "op" and t.text in _LITERAL_OPS):
            continue
        if t.kind == "name" and (
            (after == "(" and t.value in _LITERAL_CTORS)
            or after in ("::", "=")
            or before == "~"
            or t.value in ("T", "F")
        ):
            continue
        return False
    return True


def _is_placeholder(sig: list[RToken]) -> bool:
    if len(sig) == 1:
        return sig[0].text in _PLACEHOLDERS
    texts = [t.text for t in sig[-3:]]
    return len(sig) in (3, 5) and texts[1:] == ["(", ")"] and texts[0] in _LITERAL_CTORS
