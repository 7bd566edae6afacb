"""Layer 1's code facts from tokens, for Python code that does not parse.

A student's cell may not parse (an unclosed bracket, a half-written line, IPython
syntax the neutraliser missed); its calls and assignments are still read from
Python's own tokenizer: a name before "(" is a call, names before a top-level "="
(or an augmented assignment) are assigned. ``python_tokens`` also serves
``grader.analysis.facts``' normal form of code.
"""

from __future__ import annotations

import keyword
import logging
import tokenize

__all__ = ["NOT_CODE", "Found", "python_tokens", "scan_tokens"]

logger = logging.getLogger(__name__)

Found = list[tuple[str, int]]  # (name, line) pairs
NOT_CODE = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.INDENT, tokenize.DEDENT})
NOT_CODE |= {tokenize.ENDMARKER}
_ASSIGN_OPS = frozenset({"=", "+=", "-=", "*=", "/=", "//=", "%=", "**=", "@=", "|=", "&="})


def python_tokens(code: str) -> tuple[list[tokenize.TokenInfo], bool]:
    """Python tokens of the code with indentation removed, as far as tokenize gets, and
    whether it got to the end. An unclosed quote (an ERRORTOKEN) ends its line."""
    lines = iter(line.lstrip() + "\n" for line in code.split("\n"))
    out: list[tokenize.TokenInfo] = []
    skip_row, complete = 0, True
    try:
        for tok in tokenize.generate_tokens(lambda: next(lines, "")):
            if tok.type == tokenize.ERRORTOKEN and tok.string in ("'", '"'):
                skip_row, complete = tok.start[0], False
            if tok.start[0] != skip_row and not tok.string.isspace():
                out.append(tok)
    except (tokenize.TokenError, SyntaxError) as exc:
        logger.debug("tokenize stopped: %s", exc)
        complete = False
    return out, complete


def scan_tokens(code: str) -> tuple[Found, Found]:
    """Calls (a name before "(") and assignments (names before a top-level "=") of code
    that does not parse. An unclosed bracket ends at a line indented no deeper, or after
    a line that ends with ":"."""
    indents = [len(line) - len(line.lstrip()) for line in code.split("\n")]
    assigns: Found = []
    calls: Found = []
    statement: list[tokenize.TokenInfo] = []
    for tok in (t for t in python_tokens(code)[0] if t.type not in NOT_CODE):
        row, ends = tok.start[0], tok.type == tokenize.NEWLINE or tok.string == ";"
        new_row = bool(statement) and row > statement[-1].end[0]
        shallow = indents[row - 1] <= indents[statement[0].start[0] - 1] if statement else False
        if ends or (new_row and (shallow or statement[-1].string == ":")):
            _scan_statement(statement, assigns, calls)
            statement = []
        if not ends:
            statement.append(tok)
    _scan_statement(statement, assigns, calls)
    return assigns, calls


def _scan_statement(toks: list[tokenize.TokenInfo], assigns: Found, calls: Found) -> None:
    depth, pending, starts = 0, [], True  # starts: the token may begin an assignment target
    for k, tok in enumerate(toks):
        before = [t.string for t in toks[max(0, k - 2) : k]]
        if before[-1:] in (["def"], ["class"]) and _is_name(tok):
            assigns.append((tok.string, tok.start[0]))
        elif (
            tok.string == "(" and k and _is_name(toks[k - 1]) and before[0] not in ("def", "class")
        ):
            calls.append((_dotted_before(toks, k), toks[k - 1].start[0]))
        if depth == 0 and starts and _is_name(tok):
            pending.append((tok.string, tok.start[0]))
        top = depth == 0 and tok.type == tokenize.OP
        if top and tok.string in _ASSIGN_OPS:  # a, b = ... / df["x"] = ... / x += ...
            assigns.extend(pending)
            pending = []
        starts = top and (tok.string in (*_ASSIGN_OPS, ",") or (tok.string == "*" and starts))
        if tok.type == tokenize.OP:
            depth += (tok.string in ("(", "[", "{")) - (tok.string in (")", "]", "}"))


def _is_name(tok: tokenize.TokenInfo) -> bool:
    return tok.type == tokenize.NAME and not keyword.iskeyword(tok.string)


def _dotted_before(toks: list[tokenize.TokenInfo], k: int) -> str:
    """The dotted name that ends just before index ``k``: ``pd . read_csv`` -> "pd.read_csv"."""
    parts, j = [toks[k - 1].string], k - 1
    while j >= 2 and toks[j - 1].string == "." and _is_name(toks[j - 2]):
        parts.insert(0, toks[j - 2].string)
        j -= 2
    return ("." if j >= 1 and toks[j - 1].string == "." else "") + ".".join(parts)
