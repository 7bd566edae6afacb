"""Noticing a notebook that tampers with how the grader sees its errors.

A cell's status comes from the kernel's execute reply, which a replaced
``showtraceback`` does not change; but such code is still an attempt to hide errors
(nbgrader's cheat-attempt fixture), and deeper patches (``run_cell``, a
``post_run_cell`` callback, R's ``stop`` masked) can change the reply itself. Two
checks, each giving ``Evidence`` for an ``executor_tampering`` flag:
- ``static_findings``: the notebook's source assigns or wraps the executor's hooks
  (Python: ``showtraceback``, ``sys.excepthook``, ``set_custom_exc``, ``run_cell``,
  the kernel's handlers, ...; R: ``options(error=)``, masking ``stop``,
  ``assignInNamespace``, ...);
- ``probe_code``/``probe_findings``: a probe run in the kernel before the first cell
  and after the last describes those hooks; what changed in between is reported.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from grader.types import Evidence

from ..pyast import parse

__all__ = ["PY_HOOKS", "assigned", "dotted", "probe_code", "probe_findings", "python_tree",
           "scan_cells", "static_findings"]

PY_HOOKS = frozenset({
    "showtraceback", "_showtraceback", "showsyntaxerror", "showindentationerror",
    "excepthook", "CustomTB", "InteractiveTB", "SyntaxTB", "custom_exceptions",
    "get_exception_only", "run_cell", "run_cell_async", "run_code", "run_ast_nodes",
    "_run_cell", "do_execute", "execute_request", "send_response", "shell_handlers",
})
_PY_EVENTS = ("pre_execute", "pre_run_cell", "post_execute", "post_run_cell")
_PY_CLASSES = ("ExecutionResult", "InteractiveShell", "ZMQInteractiveShell", "IPythonKernel")
_PY_FALLBACK = re.compile(
    r"\.(?P<attr>" + "|".join(sorted(PY_HOOKS)) + r")\s*=(?!=)"
    r"|(?P<call>set_custom_exc|events\.register)\s*\(")
R_MASKED = ("stop", "signalCondition", "simpleError", "simpleCondition", "conditionMessage",
            "conditionCall", "tryCatch", "try", "withCallingHandlers", "geterrmessage",
            ".handleSimpleError", ".signalSimpleWarning")
_R_NAMES = "|".join(re.escape(n) for n in R_MASKED)
_R_PATTERNS = (
    (re.compile(r"\boptions\s*\([^)]*?\b(error|show\.error\.messages|warning\.expression)\s*="),
     "options({0} = ...) changes how R reports errors"),
    (re.compile(rf"^\s*`?({_R_NAMES})`?\s*(<<-|<-|=(?!=))", re.MULTILINE),
     "redefines R's {0}"),
    (re.compile(rf"\bassign\s*\(\s*['\"]({_R_NAMES})['\"]"), "redefines R's {0} with assign()"),
    (re.compile(r"\b(assignInNamespace|fixInNamespace|unlockBinding|globalCallingHandlers)"
                r"\s*\("), "calls {0}(), which can rewrite R's or the kernel's error handling"),
    (re.compile(r"\b(IRkernel|evaluate|IRdisplay):::"), "reaches into {0}'s internals"),
    (re.compile(rf"\btrace\s*\(\s*['\"]?({_R_NAMES})\b"), "traces R's {0}"),
)


def static_findings(cells: Iterable[Any], language: str) -> list[Evidence]:
    """Places in the notebook's code cells that tamper with the executor."""
    return scan_cells(cells, language, _python, _r)


Hits = list[tuple[int, str]]  # (line, what) in one cell's source


def scan_cells(cells: Iterable[Any], language: str, python: Callable[[str], Hits],
               r: Callable[[str], Hits]) -> list[Evidence]:
    """Evidence for each hit of ``python`` or ``r`` in the notebook's code cells."""
    found: list[Evidence] = []
    scan = {"python": python, "r": r}.get(language)
    for index, cell in enumerate(cells):
        if scan is None or cell.get("cell_type") != "code":
            continue
        source = "".join(cell.get("source", ""))
        cell_id = cell.get("id") or f"cell-{index}"
        found += [Evidence(cell_id, line, f"cell {index}: {what}") for line, what in scan(source)]
    return list(dict.fromkeys(found))


def python_tree(source: str) -> ast.AST | None:
    """The cell parsed, IPython magics and shell lines blanked (line numbers kept)."""
    plain = "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln
                      for ln in source.split("\n"))
    try:
        return parse(plain)
    except SyntaxError:
        return None


def assigned(node: ast.AST) -> Iterator[ast.AST]:
    """Every part of what ``node`` assigns or deletes (attributes, subscripts, names)."""
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign | ast.Delete):
        targets = list(node.targets)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        targets = [node.target]
    for target in targets:
        yield from ast.walk(target)


def _python(source: str) -> Hits:
    tree = python_tree(source)
    if tree is None:
        return [(source.count("\n", 0, m.start()) + 1,
                 f"assigns .{m['attr']}" if m["attr"] else f"calls {m['call']}()")
                for m in _PY_FALLBACK.finditer(source)]
    hits = []
    for node in ast.walk(tree):
        for part in assigned(node):
            what = _hook(part)
            if what:
                hits.append((node.lineno, f"replaces {what}"))  # type: ignore[attr-defined]
        if isinstance(node, ast.Call):
            what = _call(node)
            if what:
                hits.append((node.lineno, what))
    return sorted(set(hits))


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Subscript):
        return f"{dotted(node.value)}[...]"
    if isinstance(node, ast.Call):
        return f"{dotted(node.func)}()"
    return node.id if isinstance(node, ast.Name) else "..."


def _hook(node: ast.AST) -> str:
    if not isinstance(node, ast.Attribute | ast.Subscript):
        return ""
    name = dotted(node)
    if isinstance(node, ast.Attribute) and (node.attr in PY_HOOKS or any(
            c in name.split(".") for c in _PY_CLASSES)):
        return name
    return name if isinstance(node, ast.Subscript) and ".shell_handlers" in name else ""


def _call(node: ast.Call) -> str:
    func, args = node.func, node.args
    name = dotted(func)
    if name.endswith("set_custom_exc"):
        return f"calls {name}() (its handler replaces the error report)"
    first = args[0].value if args and isinstance(args[0], ast.Constant) else None
    if isinstance(func, ast.Name) and func.id in ("setattr", "delattr") and len(args) > 1:
        attr = args[1].value if isinstance(args[1], ast.Constant) else None
        if attr in PY_HOOKS:
            return f"replaces {dotted(args[0])}.{attr} with {func.id}()"
    if name.endswith("events.register") and first in _PY_EVENTS:
        return f"registers a {first} callback (it can rewrite a cell's result)"
    return ""


def _r(source: str) -> list[tuple[int, str]]:
    code = re.sub(r"#[^\n'\"]*$", "", source, flags=re.MULTILINE)  # comments, roughly
    return sorted({(code.count("\n", 0, m.start()) + 1, what.format(m[1]))
                   for pattern, what in _R_PATTERNS for m in pattern.finditer(code)})


_PY_PROBE = r'''
def probe(marker):
    import json, sys
    import IPython
    ip = IPython.get_ipython()
    kernel = getattr(ip, "kernel", None)

    def describe(obj):
        func = getattr(obj, "__func__", getattr(obj, "fget", obj))
        return "%s.%s#%x" % (getattr(func, "__module__", None),
                             getattr(func, "__qualname__", type(func).__name__), id(func))

    seen = {}
    for owner, label in ((ip, "shell"), (kernel, "kernel")):
        for name in HOOKS:
            if owner is not None and hasattr(owner, name):
                where = "instance " if name in vars(owner) else ""
                seen[label + "." + name] = where + describe(getattr(owner, name))
    handlers = getattr(kernel, "shell_handlers", None) or {}
    seen["kernel.shell_handlers[execute_request]"] = describe(handlers.get("execute_request"))
    seen["shell.custom_exceptions"] = repr(tuple(getattr(e, "__name__", repr(e))
                                                 for e in ip.custom_exceptions))
    result = sys.modules["IPython.core.interactiveshell"].ExecutionResult
    seen["ExecutionResult.success"] = describe(vars(result).get("success"))
    for event in EVENTS:
        seen["events." + event] = ",".join(
            describe(cb) for cb in ip.events.callbacks.get(event, ())
            if getattr(getattr(cb, "__func__", cb), "__module__", "") == "__main__")
    sys.stdout.write(marker + json.dumps(seen) + "\n")

probe(MARKER)
'''

_R_PROBE = r'''
base::local({
  d <- function(x) base::paste(base::deparse(x), collapse = " ")
  ge <- base::globalenv()
  masked <- base::Filter(function(n) base::exists(n, envir = ge, inherits = FALSE), MASKED)
  handlers <- if (base::exists("globalCallingHandlers", envir = base::baseenv()))
    d(base::names(base::globalCallingHandlers())) else ""
  seen <- base::list(
    "options(error)" = d(base::getOption("error")),
    "options(show.error.messages)" = d(base::getOption("show.error.messages")),
    "options(warning.expression)" = d(base::getOption("warning.expression")),
    "masked in the global environment" = base::paste(masked, collapse = ","),
    "globalCallingHandlers" = handlers)
  base::cat(MARKER, jsonlite::toJSON(seen, auto_unbox = TRUE), "\n", sep = "")
})
'''


def probe_code(language: str, marker: str) -> str:
    """Code that prints ``marker`` + a JSON object describing the executor's hooks."""
    if language == "python":
        body = (_PY_PROBE.replace("HOOKS", repr(sorted(PY_HOOKS)))
                .replace("EVENTS", repr(_PY_EVENTS)).replace("MARKER", json.dumps(marker)))
        return f"exec(compile({body!r}, '<grader-probe>', 'exec'), {{}})\n"
    if language == "r":
        names = "c(" + ", ".join(json.dumps(n) for n in R_MASKED) + ")"
        return _R_PROBE.replace("MASKED", names).replace("MARKER", json.dumps(marker)).strip()
    return ""


def _read(text: str, marker: str) -> dict[str, str] | None:
    line = next((ln[len(marker):] for ln in text.splitlines() if ln.startswith(marker)), None)
    try:
        data = json.loads(line) if line is not None else None
    except ValueError:
        return None
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else None


def probe_findings(before: dict[str, str] | None, after: dict[str, str] | None,
                   marker: str) -> list[Evidence]:
    """What changed between the probes (``{"text", "error"}`` of each; None: not run)."""
    if before is None or after is None:
        return []
    first, last = _read(before.get("text", ""), marker), _read(after.get("text", ""), marker)
    if first is None:
        return []  # the fresh kernel did not answer the probe: nothing to compare with
    if last is None:
        why = after.get("error") or "its output never arrived (stdout replaced?)"
        return [Evidence(None, None, f"after the last cell, the check of the executor's hooks "
                                     f"failed: {why}")]
    changed = []
    for key, now in last.items():
        was = first.get(key, "")
        if now != was:
            shown = now.split("#")[0] if "#" in now else now
            changed.append(Evidence(None, None, f"after the last cell: {key} changed "
                                                f"(now {shown[:120] or 'removed'})"))
    return changed
