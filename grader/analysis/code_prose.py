"""Prose written inside code cells: comments and strings that are sentences, not code.

Students type written answers into code cells (``# The West sells most because ...``,
``cat("Revenue peaks in December ...")``). Both languages are read with real tokenizers
(Python's ``tokenize``, ``rlang.tokenize``), never with regexes over code, so a ``#``
inside a string is no comment and a quote inside a comment is no string.

A comment is prose unless its text reads as code. Its text (after the ``#`` marks) is
tokenized in the cell's language: two operands in a row (``the West``, ``20 rows``) or
an unclosed quote (``it's``) cannot be code, so the comment is prose; otherwise it is
code when it holds an operator, a bracket, a literal or starts with a statement keyword
(``df = pd.read_csv(p)``, ``summary(x)``, ``df %>%``, ``import pandas as pd``). Names
followed by a colon (``Answer:``) are a label, so prose; names joined only by keyword
operators (``this is good``) are prose. A lone word (``summary``) is prose only next to
another prose comment line, as a sentence's tail. Output pasted as comments (``#>``),
chunk options (``#|``) and shebangs (``#!``) are never prose.

A string is prose when it is written for a reader and reads as a sentence:
- written for a reader: printed (inside ``print``, ``display``, ``Markdown`` in Python;
  ``cat``, ``print``, ``message``, ``writeLines`` in R; the strings of one printing
  call are read together), standing alone as a statement (a bare string, a
  docstring-like string; in R also an autoprinted ``paste``/``sprintf``/``glue`` call),
  or assigned whole to a variable named as an answer (``q1_answer``, ``answer``,
  ``explanation``, ``notes``). Strings given to other functions (file names, column
  names, filter values, plot labels) or assigned to other variables are never prose;
- reads as a sentence: after format fields (``{x}``, ``%s``, ``%.2f``) and escapes are
  removed, it holds at least three words in a row (words of letters, one space apart;
  a word ending in ``:`` or ``=`` ends a run). So ``"Total:"``, ``"total_revenue"``,
  ``"Unit Price"``, ``"data/orders.csv"`` and ``"%d rows, %d columns"`` are not prose.
"""

from __future__ import annotations

import bisect
import functools
import io
import keyword
import re
import tokenize
from dataclasses import dataclass
from typing import Literal

from . import rlang

__all__ = ["ProseLine", "comment_bodies", "looks_like_code", "prose_lines", "reads_as_prose"]

ProseKind = Literal["comment", "string"]
Verdict = Literal["code", "prose", "word"]


@dataclass(frozen=True, slots=True)
class ProseLine:
    """Prose found on one line of a code cell."""

    line: int  # 1-based line in the cell
    text: str  # the words written there: a comment's text, or a string's
    kind: ProseKind
    start: int  # the line its comment or string starts on (a string may span lines)


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # name | kw | num | str | const | op | comment | end | badquote
    text: str
    start: int  # offsets in the code the tokens were read from
    end: int
    value: str = ""  # a string's contents (between its quotes)


_PY_PRINTERS = frozenset({"print", "display", "Markdown", "printmd"})
_R_PRINTERS = frozenset({"cat", "print", "message", "writeLines", "display_markdown"})
_R_FORMATTERS = frozenset({"paste", "paste0", "sprintf", "glue", "str_glue", "str_c"})
_ANSWER_NAME = re.compile(
    r"(?:answers?|ans|responses?|explanations?|explain|observations?|interpretations?|"
    r"conclusions?|reflections?|insights?|findings?|reasons?|reasoning|comments?|notes?|"
    r"summary|questions?)\d*[a-z]?|q\d+[a-z]?"
)
_R_CONTINUES = frozenset(
    {"+", "-", "*", "/", "^", "<", ">", "<=", ">=", "==", "!=", "&", "&&", "|", "||", "~",
     "<-", "<<-", "=", "|>", ":", "$", "@", "::", ":::", "?", "->", "->>", ",", "(", "["}
)
_PY_OPERATOR_KW = frozenset({"is", "in", "not", "and", "or"})
_PY_STATEMENT_KW = frozenset(keyword.kwlist) - _PY_OPERATOR_KW - {"True", "False", "None"}
_R_STATEMENT_KW = frozenset({"if", "else", "repeat", "while", "function", "for", "next",
                             "break"})
_HEADS = frozenset({"if", "for", "while", "function", "\\"})  # R: if (x) y, function(x) y
_OPERANDS = frozenset({"name", "num", "str", "const"})
_FIELD = re.compile(r"\{[^{}\n]*\}|%[-+0#]*\d*(?:\.\d+)?[sdifeEgGxXo]|%%")
_NUMBER = re.compile(r"[-+$€£]?\d[\d.,%]*")
_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)")
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*", re.UNICODE)
_R_RAW_OPEN = re.compile(r"[rR][\"'](-*)[(\[{]")
_SKIPPED_COMMENTS = (">", "|", "!")  # pasted output, chunk options, a shebang
_FSTRING = tuple(getattr(tokenize, n) for n in ("FSTRING_START", "FSTRING_END")
                 if hasattr(tokenize, n))  # Python 3.12+ splits f-strings into parts


# --- what is prose


def reads_as_prose(text: str) -> bool:
    """Whether a string's text holds at least three words in a row (see the module)."""
    run = 0
    for piece in _FIELD.sub(" ", _ESCAPE.sub(" ", text)).split():
        core = piece.strip("\"'()[]“”‘’«»*_")
        if _NUMBER.fullmatch(core):
            continue  # numbers sit inside sentences: "sales grew 20% in May"
        if core.endswith((":", "=")) or not _WORD.fullmatch(core.rstrip(".,;!?")):
            run = 0  # "Total:", "x=", "total_revenue", "data/orders.csv"
            continue
        run += 1
        if run >= 3:
            return True
    return False


@functools.lru_cache(maxsize=1 << 14)
def looks_like_code(text: str, language: str) -> Verdict:
    """"code", "prose", or "word" (a lone name: prose only beside prose) for a
    comment's text, read with the language's tokenizer (see the module)."""
    _, toks = _tokens(text, language)
    if any(t.kind == "badquote" for t in toks):
        return "prose"  # an apostrophe: it's, West's
    sig = [t for t in toks if t.kind not in ("comment", "end")]
    if not sig:
        return "code"
    ends_operand, heads = False, []  # heads: per open "(", whether if/for/function opened it
    for i, t in enumerate(sig):
        if t.kind in _OPERANDS and ends_operand:
            return "prose"  # two operands in a row: the West, 20 rows
        if t.kind == "op" and t.text == "(":
            heads.append(i > 0 and sig[i - 1].text in _HEADS)
        closes_head = t.kind == "op" and t.text == ")" and bool(heads) and heads.pop()
        ends_operand = t.kind in _OPERANDS or (t.kind == "op" and t.text in (")", "]")
                                               and not closes_head)
    if len(sig) > 1 and sig[-1].text == ":" and all(t.kind == "name" for t in sig[:-1]):
        return "prose"  # a label: Answer:
    statement_kw = _PY_STATEMENT_KW if language == "python" else _R_STATEMENT_KW
    if sig[0].kind == "kw" and sig[0].text in statement_kw:
        return "code"
    if any(t.kind in ("num", "str", "const", "op") for t in sig):
        return "code"
    return "word" if len(sig) == 1 else "prose"


# --- prose of a code cell


@functools.lru_cache(maxsize=1 << 12)
def prose_lines(code: str, language: str) -> tuple[ProseLine, ...]:
    """The prose comments and strings of a code cell, line by line, in source order."""
    lang = language.strip().lower()
    code = code.replace("\r\n", "\n").replace("\r", "\n")
    read, toks = _tokens(code, lang)
    starts = _line_starts(read)
    found: list[tuple[int, int, ProseLine]] = []
    found += _prose_comments(toks, lang, starts)
    for unit in _string_units(toks, lang):
        rows = [(row, text) for t in unit for row, text in _string_rows(t, starts)]
        if reads_as_prose(" ".join(text for _, text in rows)):
            found += [(row, t.start, ProseLine(row, text, "string", _row(starts, t.start)))
                      for t in unit for row, text in _string_rows(t, starts) if text.strip()]
    return tuple(p for _, _, p in sorted(found, key=lambda f: (f[0], f[1])))


def comment_bodies(code: str, language: str) -> tuple[str, ...]:
    """The text of every comment of the code, ``#`` marks removed."""
    _, toks = _tokens(code, language.strip().lower())
    return tuple(_comment_body(t.text) for t in toks if t.kind == "comment")


def _comment_body(text: str) -> str:
    body = text.lstrip("#")
    return body[1:].strip() if body.startswith("'") else body.strip()  # roxygen: #'


def _prose_comments(toks: list[_Tok], lang: str,
                    starts: list[int]) -> list[tuple[int, int, ProseLine]]:
    verdicts: dict[int, tuple[_Tok, str, Verdict]] = {}
    for t in toks:
        if t.kind != "comment" or t.text.lstrip("#").startswith(_SKIPPED_COMMENTS):
            continue
        body = _comment_body(t.text)
        if _WORD.search(body):
            verdicts[_row(starts, t.start)] = (t, body, looks_like_code(body, lang))
    out = []
    for row, (t, body, verdict) in verdicts.items():
        beside = (verdicts.get(row - 1, (None, "", "code"))[2],
                  verdicts.get(row + 1, (None, "", "code"))[2])
        if verdict == "prose" or (verdict == "word" and "prose" in beside):
            out.append((row, t.start, ProseLine(row, body, "comment", row)))
    return out


def _string_rows(t: _Tok, starts: list[int]) -> list[tuple[int, str]]:
    """A string token's contents, row by row, with format fields and escapes removed."""
    first = _row(starts, t.start)
    return [(first + k, " ".join(_FIELD.sub(" ", _ESCAPE.sub(" ", part)).split()))
            for k, part in enumerate(t.value.split("\n"))]


def _string_units(toks: list[_Tok], lang: str) -> list[list[_Tok]]:
    """Groups of strings written for a reader (see the module), read together."""
    units: list[list[_Tok]] = []
    for statement in _statements(toks, lang):
        sig = [t for t in statement if t.kind != "comment"]
        if any(t.kind == "str" for t in sig):
            units += _units_of(sig, lang)
    return units


def _units_of(sig: list[_Tok], lang: str) -> list[list[_Tok]]:
    strings = [t for t in sig if t.kind == "str"]
    if _only_strings(sig):
        return [strings]  # a bare string, a docstring
    value = _answer_assignment(sig, lang)
    if value is not None:
        return [[t for t in value if t.kind == "str"]] if _only_strings(value) else []
    if (lang == "r" and len(sig) > 1 and sig[0].text in _R_FORMATTERS and sig[1].text == "("
            and sig[-1].text == ")"):
        return [strings]  # paste("...") alone: R prints it
    units: list[list[_Tok]] = []
    stack: list[bool] = []
    current: list[_Tok] | None = None
    for i, t in enumerate(sig):
        if t.kind == "op" and t.text in ("(", "[", "{"):
            printer = t.text == "(" and _is_printer(sig, i, lang)
            stack.append(printer and current is None)
            if printer and current is None:
                current = []
        elif t.kind == "op" and t.text in (")", "]", "}") and stack:
            if stack.pop() and current is not None:
                units.append(current)
                current = None
        elif t.kind == "str" and current is not None:
            current.append(t)
    if current:
        units.append(current)
    return units


def _only_strings(sig: list[_Tok]) -> bool:
    return any(t.kind == "str" for t in sig) and all(
        t.kind == "str" or (t.kind == "op" and t.text in ("(", ")", "+")) for t in sig)


def _answer_assignment(sig: list[_Tok], lang: str) -> list[_Tok] | None:
    """The value of an assignment to a variable named as an answer, else None."""
    arrows = ("=",) if lang == "python" else ("=", "<-", "<<-")
    if len(sig) > 2 and sig[0].kind == "name" and sig[1].text in arrows:
        name, value = sig[0].text, sig[2:]
    elif lang == "r" and len(sig) > 2 and sig[-2].text in ("->", "->>") and sig[-1].kind == "name":
        name, value = sig[-1].text, sig[:-2]
    else:
        return None
    parts = re.split(r"[._]+", name.lower())
    return value if any(_ANSWER_NAME.fullmatch(p) for p in parts) else None


def _is_printer(sig: list[_Tok], i: int, lang: str) -> bool:
    """Whether the bracket at ``i`` opens a call to a printing function."""
    if i == 0 or sig[i - 1].kind != "name":
        return False
    if lang == "r":
        return sig[i - 1].text in _R_PRINTERS
    parts, j = [sig[i - 1].text], i - 1
    while j >= 2 and sig[j - 1].text == "." and sig[j - 2].kind == "name":
        parts.insert(0, sig[j - 2].text)
        j -= 2
    return parts[-1] in _PY_PRINTERS or parts == ["sys", "stdout", "write"]


def _statements(toks: list[_Tok], lang: str) -> list[list[_Tok]]:
    out: list[list[_Tok]] = [[]]
    for t in toks:
        if t.kind == "end" or (lang == "r" and t.kind == "op" and t.text in ("{", "}")):
            out.append([])
        else:
            out[-1].append(t)
    return [s for s in out if s]


# --- tokens, both languages in one shape


def _tokens(code: str, lang: str) -> tuple[str, list[_Tok]]:
    """The code the tokens index (Python may drop indentation) and its tokens."""
    if lang == "r":
        return code, _r_tokens(code)
    toks, indent_error = _read_python(code)
    if indent_error:  # a dedent that matches nothing: read it again without indentation
        code = "\n".join(line.lstrip() for line in code.split("\n"))
        toks, _ = _read_python(code)
    return code, toks


def _read_python(code: str) -> tuple[list[_Tok], bool]:
    """Python's tokens as far as ``tokenize`` gets (an unclosed bracket or string at the
    end only stops it), and whether it stopped at bad indentation."""
    starts = _line_starts(code)
    out: list[_Tok] = []
    depth, fstart = 0, 0

    def offset(pos: tuple[int, int]) -> int:
        return starts[pos[0] - 1] + pos[1] if pos[0] - 1 < len(starts) else len(code)

    try:
        for t in tokenize.generate_tokens(io.StringIO(code).readline):
            if _FSTRING and t.type == _FSTRING[0]:
                depth, fstart = depth + 1, offset(t.start) if depth == 0 else fstart
            elif _FSTRING and t.type == _FSTRING[1]:
                depth -= 1
                if depth == 0:
                    out.append(_py_string(code[fstart:offset(t.end)], fstart, offset(t.end)))
            elif not depth and (tok := _py_tok(t, offset(t.start), offset(t.end))):
                out.append(tok)
    except IndentationError:
        return out, True
    except (tokenize.TokenError, SyntaxError):
        pass
    return out, False


def _py_tok(t: tokenize.TokenInfo, start: int, end: int) -> _Tok | None:
    text = t.string
    if t.type == tokenize.NAME:
        kind = "const" if text in ("True", "False", "None") else (
            "kw" if keyword.iskeyword(text) else "name")
    elif t.type == tokenize.STRING:
        return _py_string(text, start, end)
    elif t.type in (tokenize.NEWLINE,) or (t.type == tokenize.OP and text == ";"):
        kind = "end"
    else:
        kind = {tokenize.NUMBER: "num", tokenize.OP: "op", tokenize.COMMENT: "comment",
                tokenize.ERRORTOKEN: "op"}.get(t.type, "")
        if t.type == tokenize.ERRORTOKEN:
            if not text.strip():
                return None
            kind = "badquote" if text.strip() in ("'", '"') else "op"
    return _Tok(kind, text, start, end) if kind else None


def _py_string(text: str, start: int, end: int) -> _Tok:
    prefix = len(text) - len(text.lstrip("rRbBuUfF"))
    if "b" in text[:prefix].lower():
        return _Tok("str", text, start, end, "")  # bytes are no prose
    body = text[prefix:]
    quote = body[:3] if body[:3] in ('"""', "'''") else body[:1]
    inner = body[len(quote):]
    if len(inner) >= len(quote) and inner.endswith(quote):
        inner = inner[: len(inner) - len(quote)]
    return _Tok("str", text, start + prefix + len(quote), end, inner)


def _r_tokens(code: str) -> list[_Tok]:
    """R's tokens; a newline ends a statement outside round and square brackets unless
    the line ends with an operator that continues it."""
    toks, errors = rlang.tokenize(code)
    out: list[_Tok] = []
    depth, last = 0, None
    for t in toks:
        if t.kind == "newline":
            continues = last is not None and last.kind == "op" and (
                last.text in _R_CONTINUES or last.text.startswith("%"))
            if depth == 0 and not continues:
                out.append(_Tok("end", "\n", t.start, t.end))
            continue
        if t.kind == "op" and t.text == ";":
            out.append(_Tok("end", ";", t.start, t.end))
            continue
        if t.kind == "op":
            depth += (t.text in ("(", "[")) - (t.text in (")", "]") and depth > 0)
        if t.kind == "str":  # the contents start after the quote, or r"( for a raw string
            raw = _R_RAW_OPEN.match(t.text)
            out.append(_Tok("str", t.text, t.start + (raw.end() if raw else 1), t.end, t.value))
        else:
            out.append(_Tok(t.kind, t.text, t.start, t.end))
        if t.kind != "comment":
            last = t
    if any("string is never closed" in e for e in errors):
        out.append(_Tok("badquote", "", len(code), len(code)))
    return out


def _line_starts(code: str) -> list[int]:
    return [0] + [i + 1 for i, ch in enumerate(code) if ch == "\n"]


def _row(starts: list[int], offset: int) -> int:
    """The 1-based line of an offset."""
    return bisect.bisect_right(starts, offset)
