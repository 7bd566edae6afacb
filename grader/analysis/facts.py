"""Layer 1's code facts: which variables a cell assigns and which functions it calls.

Read from the syntax tree (Python, ``ast``) or from a real tokenizer and light parser
(R, ``grader.analysis.rlang``), never from regexes over raw text, so names in comments and
strings never count: the old grader's regexes gave an empty template 67%.

Python call names: ``f(x)`` -> "f"; ``pd.read_csv(p)`` -> "pd.read_csv"; a method called
on an expression is qualified with what is known of it, ``()`` for a call and ``[]`` for
a subscript: ``df.groupby("a").sum()`` -> "df.groupby" and "df.groupby().sum",
``df["x"].mean()`` -> "df[].mean", ``"a,b".split(",")`` -> ".split". ``called`` matches
an unqualified rubric name by the last part, so "sum" finds "df.groupby().sum".
IPython syntax (magics, ``!cmd``, ``df?``) is neutralised before parsing; code that still
does not parse is scanned with ``tokenize`` and ``syntax_error`` says why. Code that can
never run (``if False:``, after a ``return`` or a ``raise``: ``grader.analysis.dead_py``
and, for R, ``dead_r``) calls and assigns nothing.
"""

from __future__ import annotations

import ast
import logging
import re
import tokenize
from dataclasses import dataclass
from typing import Literal

from ..pyast import parse
from . import rlang
from .dead_py import blank_dead, dead_rows, live_walk
from .token_scan import NOT_CODE, Found, python_tokens, scan_tokens

__all__ = ["CodeFacts", "Symbol", "analyse", "assigned", "called"]
__all__ += ["live_code", "normalise_code", "strip_comments"]

logger = logging.getLogger(__name__)

SymbolKind = Literal["assign", "call"]
LANGUAGES = ("python", "r")


@dataclass(frozen=True, slots=True)
class Symbol:
    name: str  # "orders", "read_csv", "pd.read_csv", "dplyr::filter"
    line: int  # 1-based line in the given code
    kind: SymbolKind
    text: str  # the stripped source line, for evidence


@dataclass(frozen=True, slots=True)
class CodeFacts:
    """What one piece of code assigns and calls.

    ``literal_assigned`` names the variables whose last assignment is a bare literal
    (``x = 42``, ``c(1, 2)``, ``pd.DataFrame({"a": [1]})``): hard-coded outputs.
    Placeholders (``None``, ``...``, ``NULL``, ``NA``, ``[]``, ``c()``) hold no answer
    and are not counted. ``language`` tells ``called`` whether "." qualifies a name.
    """

    assigned: tuple[Symbol, ...]
    calls: tuple[Symbol, ...]
    literal_assigned: frozenset[str]
    syntax_error: str | None  # set when the code does not parse; facts then come from a scan
    code_lines: int  # non-blank, non-comment lines
    language: str = "python"


def analyse(code: str, language: str) -> CodeFacts:
    """The assignments and calls in ``code``; never raises on any text."""
    code, lang = _prepare(code, language)
    if lang == "r":
        found = rlang.scan(code)
        error = found.errors[0] if found.errors else None
        assigns, calls, literal = found.assigns, found.calls, found.literal
    else:
        assigns, calls, literal, error = _python_facts(code)
    lines = code.split("\n")
    return CodeFacts(
        assigned=_symbols(assigns, "assign", lines),
        calls=_symbols(calls, "call", lines),
        literal_assigned=frozenset(name for name, is_lit in literal.items() if is_lit),
        syntax_error=error,
        code_lines=sum(1 for line in strip_comments(code, lang).split("\n") if line.strip()),
        language=lang,
    )


def strip_comments(code: str, language: str) -> str:
    """``code`` without comments (strings kept intact), with the same line numbers."""
    code, lang = _prepare(code, language)
    spans = rlang.comment_spans(code) if lang == "r" else _python_comment_spans(code)
    out, last = [], 0
    for start, end in spans:
        out.append(code[last:start].rstrip(" \t"))
        last = end
    return "".join(out) + code[last:]


def live_code(code: str, language: str) -> str:
    """``code`` with what can never run (``if False:``, after ``raise``) replaced by
    spaces, lines and columns kept: the code a pattern may be looked for in."""
    code, lang = _prepare(code, language)
    if lang == "r":
        return rlang.live_code(code)
    for attempt in (code, _neutralise_ipython(code)):
        try:
            blanked = blank_dead(attempt, parse(attempt)).split("\n")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        return "\n".join(b if a == c else c for a, b, c in  # magic lines kept as written
                         zip(attempt.split("\n"), blanked, code.split("\n"), strict=True))
    dead = dead_rows(code)
    return "\n".join(" " * len(line) if n in dead else line
                     for n, line in enumerate(code.split("\n"), 1))


def normalise_code(code: str, language: str) -> str:
    """``code`` reduced for comparing cells: comments, blank lines and spacing dropped.

    Each line becomes its tokens one space apart, so ``x=1`` and ``x = 1`` compare equal.
    """
    code, lang = _prepare(code, language)
    text = rlang.normalise(code) if lang == "r" else _python_normalise(code)
    return "\n".join(line for line in text.split("\n") if line.strip())


def called(facts: CodeFacts, function: str) -> list[Symbol]:
    """The calls that match a rubric's function name.

    "read_csv" matches "read_csv", "pd.read_csv", "df.groupby().read_csv" and, in R,
    "readr::read_csv"; a qualified name ("pd.read_csv", "dplyr::filter") matches only
    itself. In R "." is part of a name ("read.csv"), so only "::" qualifies there.
    """
    qualifiers = ("::",) if facts.language == "r" else ("::", ".")
    if any(q in function for q in qualifiers):
        return [s for s in facts.calls if s.name == function]
    suffixes = tuple(q + function for q in qualifiers)
    return [s for s in facts.calls if s.name == function or s.name.endswith(suffixes)]


def assigned(facts: CodeFacts, name: str) -> list[Symbol]:
    """The assignments to ``name`` (its base name for ``df["x"] = ...``)."""
    return [s for s in facts.assigned if s.name == name]


def _prepare(code: str, language: str) -> tuple[str, str]:
    """Code with "\\n" newlines only, and the language checked."""
    lang = language.strip().lower()
    if lang not in LANGUAGES:
        raise ValueError(f"unknown language {language!r}: choose one of {', '.join(LANGUAGES)}")
    return code.replace("\r\n", "\n").replace("\r", "\n"), lang


def _symbols(found: Found, kind: SymbolKind, lines: list[str]) -> tuple[Symbol, ...]:
    ordered = sorted(found, key=lambda item: item[1])  # stable: source order within a line
    return tuple(Symbol(name, n, kind, lines[n - 1].strip()) for name, n in ordered)


# --- Python: the syntax tree
_LITERAL_CTORS = frozenset({"DataFrame", "Series", "array", "dict", "list", "tuple", "set"})


def _python_facts(code: str) -> tuple[Found, Found, dict[str, bool], str | None]:
    tree, error = _parse(code)
    if tree is not None:
        try:
            return (*_tree_facts(tree), None)
        except RecursionError:
            error = "code is nested too deeply to analyse"
    logger.debug("python code does not parse (%s); scanning tokens instead", error)
    assigns, calls = scan_tokens(_neutralise_ipython(code))
    dead = dead_rows(code)
    return ([a for a in assigns if a[1] not in dead], [c for c in calls if c[1] not in dead],
            {}, error)


def _parse(code: str) -> tuple[ast.Module | None, str]:
    """The syntax tree, trying the code as written and then with IPython syntax removed."""
    message = ""
    for attempt in (code, _neutralise_ipython(code)):
        try:
            return parse(attempt), ""
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:  # deep nesting
            line = getattr(exc, "lineno", None)
            text = getattr(exc, "msg", None) or str(exc) or type(exc).__name__
            message = f"line {line}: {text}" if line else text
    return None, message


def _tree_facts(tree: ast.Module) -> tuple[Found, Found, dict[str, bool]]:
    """Assignments, calls and literal flags; loop, ``with``, comprehension targets skipped."""
    calls: Found = []
    events: list[tuple[ast.stmt | ast.expr, ast.expr | None, ast.expr | None, bool]] = []
    for node in live_walk(tree):  # code that can never run is no work done
        match node:
            case ast.Assign(targets=targets, value=value):
                events += [(node, target, value, True) for target in targets]
            case ast.AnnAssign(target=target, value=ast.expr() as value):
                events.append((node, target, value, True))
            case ast.NamedExpr(target=target, value=value):
                events.append((node, target, value, True))
            case ast.AugAssign(target=target, value=value):
                events.append((node, target, value, False))
            case ast.FunctionDef() | ast.AsyncFunctionDef() | ast.ClassDef():
                events.append((node, None, None, True))
            case ast.Call(func=func):  # a method's line is where its name is
                line = func.end_lineno if isinstance(func, ast.Attribute) else None
                calls.append((_describe(func), line or node.lineno))
    assigns: Found = []
    literal: dict[str, bool] = {}
    for node, target, value, whole in sorted(events, key=lambda e: (e[0].lineno, e[0].col_offset)):
        is_lit = value is not None and _is_literal(value)
        names = _target_names(target) if target else [(getattr(node, "name", ""), True)]
        for name, replaced in names:
            assigns.append((name, node.lineno))
            # df["x"] = ..., x += ...: only keep an existing literal literal
            literal[name] = is_lit if whole and replaced else literal.get(name, False) and is_lit
    return assigns, calls, literal


def _target_names(target: ast.expr) -> list[tuple[str, bool]]:
    """(name, replaced whole) for an assignment target; ``df["x"]`` -> ("df", False)."""
    if isinstance(target, ast.Name):
        return [(target.id, True)]
    if isinstance(target, ast.Tuple | ast.List):
        return [pair for elt in target.elts for pair in _target_names(elt)]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    base = target
    while isinstance(base, ast.Attribute | ast.Subscript):
        base = base.value
    return [(base.id, False)] if isinstance(base, ast.Name) and base is not target else []


def _describe(node: ast.expr) -> str:
    """A dotted name for what is known of an expression: ``df.groupby("a")`` -> "df.groupby()"."""
    match node:
        case ast.Name(id=name):
            return name
        case ast.Attribute(value=value, attr=attr):
            return f"{_describe(value)}.{attr}"
        case ast.Call(func=func):
            return f"{_describe(func)}()"
        case ast.Subscript(value=value):
            return f"{_describe(value)}[]"
    return ""


def _is_literal(node: ast.expr, top: bool = True) -> bool:
    """A bare literal; at the top, placeholders (None, ..., empty containers) are not."""
    match node:
        case ast.Constant(value=value):
            return not top or (value is not None and value is not Ellipsis)
        case ast.UnaryOp(op=ast.USub() | ast.UAdd(), operand=operand):
            return _is_literal(operand, False)
        case ast.BinOp(left=left, right=right):
            return _is_literal(left, False) and _is_literal(right, False)
        case ast.JoinedStr(values=values):
            return all(isinstance(v, ast.Constant) for v in values)
    parts = _literal_parts(node)
    return (
        parts is not None and bool(parts or not top) and all(_is_literal(p, False) for p in parts)
    )


def _literal_parts(node: ast.expr) -> list[ast.expr] | None:
    """The parts of a container or of ``pd.DataFrame(...)``-like call; None for others."""
    match node:
        case ast.List(elts=parts) | ast.Tuple(elts=parts) | ast.Set(elts=parts):
            return list(parts)
        case ast.Dict(keys=keys, values=values) if None not in keys:  # not {**spread}
            return [*(k for k in keys if k is not None), *values]
        case ast.Call(func=func, args=args, keywords=kws) if all(kw.arg for kw in kws):
            named = _describe(func).rsplit(".", 1)[-1] in _LITERAL_CTORS
            return [*args, *(kw.value for kw in kws)] if named else None
    return None


# --- Python: IPython syntax
_HELP = re.compile(r"\?{1,2}[\w.]+|[\w.]+\?{1,2}")
_SHELL_ASSIGN = re.compile(r"([\w.]+\s*=\s*)[!%]")
_TIMED = re.compile(r"%(?:time|timeit|prun)\s+([^-\s].*)")
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "python"})


def _neutralise_ipython(code: str) -> str:
    """Replace IPython-only lines with plain Python, keeping line numbers. A cell magic
    whose body is Python (``%%time``) loses its line; ``%%bash`` leaves nothing to read."""
    lines = code.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and lines[first].lstrip().startswith("%%"):
        if (lines[first].strip()[2:].split() or [""])[0] not in _PYTHON_CELL_MAGICS:
            return "\n" * (len(lines) - 1)
        lines[first] = ""
    return "\n".join(_neutralise_line(line) for line in lines)


def _neutralise_line(line: str) -> str:
    body = line.strip()
    indent = line[: len(line) - len(line.lstrip())]
    if timed := _TIMED.fullmatch(body):  # %time x = f(): keep the timed code
        return indent + timed.group(1)
    if body.startswith(("%", "!")) or _HELP.fullmatch(body):
        return indent + "pass"
    if shell := _SHELL_ASSIGN.match(body):  # files = !ls
        return indent + shell.group(1) + "_ipython_output_"
    return line


# --- Python: comments and normal form


def _python_comment_spans(code: str) -> list[tuple[int, int]]:
    """(start, end) offsets of comments, found by skipping over strings (never raises)."""
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(code):
        if code[i] == "#":
            end = code.find("\n", i)
            spans.append((i, len(code) if end < 0 else end))
            i = spans[-1][1]
        else:
            i = _python_string_end(code, i) if code[i] in "'\"" else i + 1
    return spans


def _python_string_end(code: str, i: int) -> int:
    quote = code[i] * 3 if code.startswith(code[i] * 3, i) else code[i]
    j = i + len(quote)
    while j < len(code):
        if code.startswith(quote, j) or (code[j] == "\n" and len(quote) == 1):
            return j + len(quote) * (code[j] != "\n")
        j += 2 if code[j] == "\\" else 1
    return len(code)


def _python_normalise(code: str) -> str:
    tokens, complete = python_tokens(code)
    if not complete:  # collapse runs of whitespace instead
        return "\n".join(" ".join(ln.split()) for ln in strip_comments(code, "python").split("\n"))
    lines: dict[int, list[str]] = {}
    for tok in tokens:
        if tok.type not in NOT_CODE and tok.type != tokenize.NEWLINE:
            lines.setdefault(tok.start[0], []).append(tok.string)
    return "\n".join(" ".join(parts) for _, parts in sorted(lines.items()))
