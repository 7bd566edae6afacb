"""Python code that can never run, left out of layer 1's code facts.

A call or an assignment that can never run is not work done: ``if False:
pd.read_csv(p)`` calls nothing. Dead here means dead from the syntax alone, whatever
the student's names hold:
- a branch whose test is a constant (``if False:``, ``if 0:``, ``while None:``,
  ``elif not True:``, ``if 1 > 2:``, ``if []:``): the branch it never takes; the same
  for ``x if False else y``;
- the body of a loop over an empty literal (``for x in []:``);
- the operands a constant short-circuits (``False and f()``, ``True or f()``);
- statements after one that always leaves its block (``return``, ``raise``,
  ``break``, ``continue``, ``assert False``, or an ``if`` whose every branch leaves),
  up to the block's end: at a cell's top level, the rest of the cell.

``live_walk`` walks a syntax tree as ``ast.walk`` does, without the dead parts.
``dead_rows`` does the same, more roughly, by lines, for a cell that does not parse
(read with ``grader.analysis.token_scan``): constant branches and lines after a
statement that leaves, by indentation.
"""

from __future__ import annotations

import ast
import operator
import re
from collections import deque
from collections.abc import Iterator

__all__ = ["constant_truth", "dead_rows", "live_walk"]

_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
            ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.Is: operator.is_, ast.IsNot: operator.is_not}
_LEAVES = (ast.Return, ast.Raise, ast.Break, ast.Continue)


def live_walk(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` that can run (breadth first, as ``ast.walk``)."""
    todo: deque[ast.AST] = deque([tree])
    while todo:
        node = todo.popleft()
        todo.extend(_live_children(node))
        yield node


def constant_truth(node: ast.expr) -> bool | None:
    """The truth of an expression made of literals alone; None when it depends on names
    (or on anything but literals)."""
    match node:
        case ast.Constant(value=value):
            return bool(value)
        case ast.UnaryOp(op=ast.Not(), operand=operand):
            inner = constant_truth(operand)
            return None if inner is None else not inner
        case ast.List(elts=elts) | ast.Tuple(elts=elts) | ast.Set(elts=elts):
            return bool(elts) if not any(isinstance(e, ast.Starred) for e in elts) else None
        case ast.Dict(keys=keys):
            return bool(keys) if None not in keys else None  # {**spread} depends
        case ast.BoolOp(op=op, values=values):
            truths = [constant_truth(v) for v in values]
            if None in truths:
                return None
            return all(truths) if isinstance(op, ast.And) else any(truths)
        case ast.Compare(left=left, ops=ops, comparators=comparators):
            return _compared(left, ops, comparators)
    return None


def _compared(left: ast.expr, ops: list[ast.cmpop], comparators: list[ast.expr]) -> bool | None:
    """``1 > 2``, ``0 == 1``: literal operands only (``ast.literal_eval``)."""
    if not all(type(op) in _COMPARE for op in ops):
        return None  # in, not in: left to the run
    try:
        values = [ast.literal_eval(e) for e in (left, *comparators)]
        return all(_COMPARE[type(op)](a, b)
                   for op, a, b in zip(ops, values, values[1:], strict=True))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None  # not literals, or 1 < "a" (an error when run): say nothing


def _live_children(node: ast.AST) -> Iterator[ast.AST]:
    match node:
        case ast.If(test=test, body=body, orelse=orelse):
            truth = constant_truth(test)
            yield test
            if truth is not False:
                yield from _block(body)
            if truth is not True:
                yield from _block(orelse)
            return
        case ast.IfExp(test=test, body=then, orelse=other):
            truth = constant_truth(test)
            yield test
            yield from ([then] if truth is True else [other] if truth is False else [then, other])
            return
        case ast.While(test=test, body=body, orelse=orelse):
            yield test
            if constant_truth(test) is not False:
                yield from _block(body)
            yield from _block(orelse)
            return
        case ast.For(target=target, iter=iterable, body=body, orelse=orelse) | ast.AsyncFor(
                target=target, iter=iterable, body=body, orelse=orelse):
            yield iterable
            if constant_truth(iterable) is not False:  # for x in []: never runs its body
                yield target
                yield from _block(body)
            yield from _block(orelse)
            return
        case ast.BoolOp(op=op, values=values):
            stop = isinstance(op, ast.Or)  # and: stops at a false operand; or: a true one
            for value in values:
                yield value
                if constant_truth(value) is stop:
                    return
            return
    for _, value in ast.iter_fields(node):
        if isinstance(value, ast.AST):
            yield value
        elif isinstance(value, list):
            yield from _block(value)


def _block(items: list) -> Iterator[ast.AST]:
    """The nodes of a field's list; of a list of statements, those up to the first that
    always leaves the block."""
    for item in items:
        if isinstance(item, ast.AST):
            yield item
        if isinstance(item, ast.stmt) and _leaves(item):
            return


def _leaves(stmt: ast.stmt) -> bool:
    """Whether ``stmt`` always leaves its block (the statements after it never run)."""
    match stmt:
        case ast.Return() | ast.Raise() | ast.Break() | ast.Continue():
            return True
        case ast.Assert(test=test):
            return constant_truth(test) is False
        case ast.If(test=test, body=body, orelse=orelse):
            truth = constant_truth(test)
            taken = {True: [body], False: [orelse], None: [body, orelse]}[truth]
            return all(any(_leaves(s) for s in branch) for branch in taken)
    return False


# --- cells that do not parse: by lines
_FALSE = r"(?:False|None|0+(?:\.0*)?|0x0+|''|\"\"|\[\s*\]|\(\s*\)|\{\s*\})"
_DEAD_HEAD = re.compile(rf"(?:if|elif|while)\s*(?:\(\s*{_FALSE}\s*\)|{_FALSE}|not\s+True)\s*:"
                        r"(?P<rest>.*)$")
_LEAVING = re.compile(r"(?:return|raise|break|continue)\b")


def dead_rows(code: str) -> set[int]:
    """1-based rows of ``code`` that can never run, read by indentation: the body of a
    constant-false ``if``/``elif``/``while`` (on its own row or below it, deeper), and
    rows after ``return``/``raise``/``break``/``continue`` until one less indented."""
    lines = code.split("\n")
    dead: set[int] = set()
    k = 0
    while k < len(lines):
        body = lines[k].strip()
        indent = len(lines[k]) - len(lines[k].lstrip())
        head = _DEAD_HEAD.match(body)
        leaving = _LEAVING.match(body)
        if head and head["rest"].strip() and not head["rest"].strip().startswith("#"):
            dead.add(k + 1)  # if False: f()
        elif head or leaving:
            deeper = head is not None  # the body, deeper; or the rest of the block
            j = k + 1
            while j < len(lines):
                text = lines[j]
                depth = len(text) - len(text.lstrip())
                if text.strip() and (depth <= indent if deeper else depth < indent):
                    break
                dead.add(j + 1)
                j += 1
            k = j - 1 if head else k
        k += 1
    return dead


def blank_dead(code: str, tree: ast.AST) -> str:
    """``code`` (which ``tree`` was parsed from) with what can never run replaced by
    spaces, lines and columns kept: for reading the live code as text."""
    live = {id(n) for n in live_walk(tree)}
    lines = code.split("\n")
    for node in ast.walk(tree):
        if id(node) in live or not isinstance(node, ast.stmt | ast.expr):
            continue
        end_line, end_col = node.end_lineno or node.lineno, node.end_col_offset
        for row in range(node.lineno, min(end_line, len(lines)) + 1):
            raw = lines[row - 1].encode("utf-8", "surrogatepass")
            start = node.col_offset if row == node.lineno else 0
            stop = end_col if row == end_line and end_col is not None else len(raw)
            lines[row - 1] = (raw[:start] + b" " * len(raw[start:stop].decode(
                "utf-8", "surrogatepass")) + raw[stop:]).decode("utf-8", "surrogatepass")
    return "\n".join(lines)
