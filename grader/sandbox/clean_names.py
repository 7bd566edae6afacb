"""The names an instructor's tests and value checks take from outside the student's notebook.

A test (``grader.sandbox.judged_tests``) or a value check's expression names two kinds of
things: the student's work (the functions and values the notebook defines:
``parse_duration``, ``survey_clean``) and the instructor's tools (Python's built-ins,
``pd``, ``np``; R's base and the packages the solution attaches: ``nrow``, ``near``).
The verifiers (``pyverify``, ``rverify.R``) take the tools from a *clean namespace* of
their own and only the rest from the student's kernel, so a notebook that binds ``abs``
to an object that returns 0, ``pd`` to a fake module, or ``near <- function(...) TRUE``
(with dplyr detached) changes nothing a test sees, and the binding is reported as
tampering with the checks.

``clean_names(language, solution)`` reads the clean namespace off the instructor's
solution notebook (its code cells, IPython magics and shell lines left out):

- Python: what its imports bind at module level (``import pandas as pd``, ``from math
  import sqrt``, ``from x import *``), each name with the module and attribute it stands
  for; Python's built-ins are always clean;
- R: the packages it attaches (``library``, ``require``, ``pacman::p_load``), in order;
  base R and R's default packages are always clean;
- both: ``own``, the names the solution binds itself at the top level (assignments,
  ``def``, ``class``, ``f <- function``). Those are the assignment's deliverables, so a
  test that names one means the student's, even one named like a built-in (``max``) or
  a library function (``near``).

The solution's own functions are never taken from the solution: a function it defines
is, for all the grader can tell, one the student must write (templates often carry its
stub, or only ask for it in words), and calling the solution's would pass every
student. What a test needs of the instructor's own code it defines itself: a test's
``import``, ``library`` and ``def`` run in the verifier, before the student's names.

``CleanNames.to_json`` is what travels to the runner (on each ``tests`` item, and as the
run's ``clean`` for the inspection of value checks).
"""

from __future__ import annotations

import ast
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .tamper import python_tree

__all__ = ["CleanNames", "clean_names"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CleanNames:
    """The clean namespace of one assignment's tests and value checks (see the module)."""

    language: str
    imports: tuple[tuple[str, str, str], ...] = ()  # Python: (name, module, attribute or "")
    star: tuple[str, ...] = ()  # Python: modules imported with ``from m import *``
    packages: tuple[str, ...] = ()  # R: attached by the solution, in order
    own: frozenset[str] = frozenset()  # bound by the solution itself: the student's

    def to_json(self) -> dict[str, Any]:
        return {"language": self.language, "imports": [list(i) for i in self.imports],
                "star": list(self.star), "packages": list(self.packages),
                "own": sorted(self.own)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CleanNames:
        return cls(str(data.get("language", "")),
                   tuple((str(n), str(m), str(a)) for n, m, a in data.get("imports") or ()),
                   tuple(str(m) for m in data.get("star") or ()),
                   tuple(str(p) for p in data.get("packages") or ()),
                   frozenset(str(n) for n in data.get("own") or ()))


def clean_names(language: str, solution: Any) -> CleanNames:
    """The clean namespace read off ``solution`` (a notebook node or dict)."""
    language = language.lower()
    sources = ["".join(c.get("source", "")) for c in solution.get("cells", [])
               if c.get("cell_type") == "code"]
    if language == "python":
        return _python(sources)
    if language == "r":
        return _r(sources)
    return CleanNames(language)


# -- Python -------------------------------------------------------------------------------
def _python(sources: Iterable[str]) -> CleanNames:
    imports: dict[str, tuple[str, str]] = {}
    star: list[str] = []
    own: set[str] = set()
    for source in sources:
        if source.lstrip().startswith("%%"):
            continue  # a cell magic: its body is not Python run at module level
        tree = python_tree(source)
        if tree is None:
            log.warning("a code cell of the solution does not parse: its names are not read")
            continue
        for node in _top_level(tree.body):  # type: ignore[attr-defined]
            if isinstance(node, ast.Import):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    imports[bound] = (alias.name if alias.asname else bound, "")
                    own.discard(bound)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for alias in node.names:
                    if alias.name == "*":
                        star.append(node.module)
                    else:
                        imports[alias.asname or alias.name] = (node.module, alias.name)
                        own.discard(alias.asname or alias.name)
            else:
                bound = set(_bound(node))
                own |= bound
                for name in bound:
                    imports.pop(name, None)
        own |= _declared_global(tree)
    return CleanNames("python", tuple((n, m, a) for n, (m, a) in imports.items()),
                      tuple(dict.fromkeys(star)), (), frozenset(own))


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run at module level, compound statements' bodies included."""
    for node in body:
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _top_level(getattr(node, field, None) or [])
        for handler in getattr(node, "handlers", None) or []:
            yield from _top_level(handler.body)
        for case in getattr(node, "cases", None) or []:
            yield from _top_level(case.body)


def _bound(node: ast.stmt) -> Iterator[str]:
    """The module-level names one statement binds (not its nested statements')."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
        return
    if isinstance(node, ast.ExceptHandler) and node.name:
        yield node.name
    for handler in getattr(node, "handlers", None) or []:
        if handler.name:
            yield handler.name
    for part in _own_parts(node):
        if isinstance(part, ast.Name) and isinstance(part.ctx, ast.Store | ast.Del):
            yield part.id
        elif isinstance(part, ast.NamedExpr) and isinstance(part.target, ast.Name):
            yield part.target.id


def _own_parts(node: ast.AST) -> Iterator[ast.AST]:
    """``node``'s parts, leaving out nested statements, functions and comprehensions."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt | ast.Lambda | ast.comprehension | ast.ListComp
                      | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            continue
        yield child
        yield from _own_parts(child)


def _declared_global(tree: ast.AST) -> set[str]:
    """Names a function declares ``global``: it binds them in the module."""
    return {n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names}


# -- R ------------------------------------------------------------------------------------
_ATTACH = re.compile(r"(?<![\w.])(?:library|require)\s*\(\s*(?:package\s*=\s*)?"
                     r"[\"'`]?([A-Za-z][A-Za-z0-9.]*)[\"'`]?\s*[,)]")
_P_LOAD = re.compile(r"(?<![\w.])p_load\s*\(([^()]*)\)")
_R_NAME = r"(?:[A-Za-z.][A-Za-z0-9._]*|`[^`\n]+`)"
_R_LEFT = re.compile(rf"^\s*({_R_NAME})\s*(?:<<-|<-|=(?!=))")
_R_RIGHT = re.compile(rf"(?:->>|->)\s*({_R_NAME})\s*$")


def _r(sources: Iterable[str]) -> CleanNames:
    packages: list[str] = []
    own: set[str] = set()
    for source in sources:
        code, blank = _r_code(source)
        for m in _ATTACH.finditer(code):
            if blank[m.start()] != _IN_STRING:  # not `"library(x)"`, a string
                packages.append(m.group(1))
        for m in _P_LOAD.finditer(code):
            if blank[m.start()] != _IN_STRING:
                packages += [p.strip().strip("\"'") for p in m.group(1).split(",")
                             if p.strip() and "=" not in p]
        own |= _r_top_bindings(blank)
    return CleanNames("r", (), (), tuple(dict.fromkeys(packages)), frozenset(own))


_IN_STRING = "\0"


def _r_code(source: str) -> tuple[str, str]:
    """R source with its comments removed (a small scanner: ``#`` inside a string is no
    comment), and the same with every character inside a string replaced by NUL (newlines
    kept): where code is, braces and names count; where strings are, nothing does."""
    out, blank, quote, i = [], [], "", 0
    while i < len(source):
        ch = source[i]
        if quote:
            escaped = ch == "\\" and i + 1 < len(source)
            taken = source[i:i + 2] if escaped else ch
            out.append(taken)
            if ch == quote:
                quote = ""
                blank.append(ch)
            else:
                blank.append("".join(c if c == "\n" else _IN_STRING for c in taken))
            i += len(taken)
            continue
        if ch == "#":
            end = source.find("\n", i)
            i = len(source) if end < 0 else end
            continue
        if ch in "\"'`":
            quote = ch
        out.append(ch)
        blank.append(ch)
        i += 1
    return "".join(out), "".join(blank)


def _r_top_bindings(code: str) -> set[str]:
    """Names assigned outside any braces or parentheses (the top level of a cell), in
    code whose strings are blanked (``_r_code``)."""
    found: set[str] = set()
    depth = 0
    for line in code.split("\n"):
        if depth == 0:
            for pattern in (_R_LEFT, _R_RIGHT):
                m = pattern.search(line)
                if m:
                    found.add(m.group(1).strip("`"))
        depth = max(0, depth + sum(line.count(o) - line.count(c) for o, c in
                                   (("{", "}"), ("(", ")"))))
    return found
