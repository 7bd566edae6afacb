"""Noticing a notebook that reaches for the paths values and tests take to the grader.

Values and tests are judged outside the kernel (``grader.sandbox.bridge``), from data
exported through bindings made before the student's first cell, so replacing a
serialiser or a built-in no longer forges a verdict. Code that tries is still an attempt
to forge one, and the instructor should see it: ``check_findings`` reads the notebook's
code cells for it (the ``check_tampering`` flag, next to what the bridge itself saw):

- Python: assigning to (or ``setattr`` on) ``json``, ``_json``, ``builtins``,
  ``__builtins__``, ``sys.modules``, ``linecache``, the test machinery (``doctest``,
  ``unittest``, ``otter``: otter runs its doctests in the student's kernel, where a
  patched ``DocTestRunner`` reports no failure) or a pandas/numpy class; reaching into
  other code's closures or the garbage collector's object lists (``__closure__``,
  ``cell_contents``, ``gc.get_objects``/``get_referrers``); ``ctypes``; a class whose
  ``__eq__`` is always true (or ``__ne__`` always false);
- R: replacing ``toJSON``/``serializeJSON`` or a base function that checks use (``nrow``,
  ``dim``, ``length``, ``identical``, ``all.equal``, ``stopifnot``, testthat's
  ``expect_*``) in the global environment; S3 methods for ``dim``, ``length``, ``Ops``,
  ``==`` or ``all.equal`` on a class of the notebook's own; ``assignInNamespace`` or
  ``unlockBinding`` on jsonlite, base or testthat.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from typing import Any

from grader.types import Evidence

from .tamper import assigned, dotted, python_tree, scan_cells

__all__ = ["check_findings"]

_PY_MODULES = {"json", "_json", "builtins", "__builtins__", "linecache", "marshal", "doctest",
               "unittest", "otter"}
_PY_CLASSES = re.compile(r"^(pd|pandas|np|numpy)\.(DataFrame|Series|Index|ndarray|core)\b")
_PY_FALLBACK = re.compile(
    r"^\s*(?P<what>(?:json|_json|builtins|__builtins__|linecache|doctest|unittest|otter)"
    r"\s*\.\s*\w+|sys\.modules\s*\[)"
    r"[^=\n]*=(?!=)|\b(?P<reach>__closure__|cell_contents|get_referrers|get_objects|ctypes)\b",
    re.MULTILINE)
_R_BASE = ("nrow|ncol|NROW|NCOL|dim|length|names|colnames|identical|all\\.equal|isTRUE|"
           "stopifnot|expect_\\w+|toJSON|serializeJSON|fromJSON|unserializeJSON")
_R_PATTERNS = (
    (re.compile(rf"^\s*`?({_R_BASE})`?\s*(<<-|<-|=(?!=))", re.MULTILINE),
     "replaces R's {0} in the global environment"),
    (re.compile(r"^\s*`?((?:dim|length|Ops|==|!=|all\.equal|nrow|ncol)\.[\w.]+)`?\s*(<<-|<-|=(?!=))"
                r"\s*function", re.MULTILINE),
     "defines the S3 method {0}, which changes what checks see of its objects"),
    (re.compile(r"\b(?:assignInNamespace|unlockBinding)\s*\([^)]*(jsonlite|base|testthat)"),
     "rewrites the {0} package, which the checks use"),
)


def check_findings(cells: Iterable[Any], language: str) -> list[Evidence]:
    """Places in the notebook's code cells that tamper with how checks see it."""
    return scan_cells(cells, language, _python, _r)


def _guarded(target: ast.AST) -> str:
    """The guarded thing an assignment target replaces, or ""."""
    if not isinstance(target, ast.Attribute | ast.Subscript):
        return ""
    name = dotted(target)
    head = name.split(".")[0].split("[")[0]
    if head in _PY_MODULES or name.startswith("sys.modules[") or _PY_CLASSES.match(name):
        return name
    return ""


def _always(node: ast.FunctionDef, value: bool) -> bool:
    body = [s for s in node.body if not (isinstance(s, ast.Expr)
                                         and isinstance(s.value, ast.Constant))]
    return (len(body) == 1 and isinstance(body[0], ast.Return)
            and isinstance(body[0].value, ast.Constant) and body[0].value.value is value)


def _python(source: str) -> list[tuple[int, str]]:
    tree = python_tree(source)
    if tree is None:
        return [(source.count("\n", 0, m.start()) + 1,
                 f"replaces {m['what'].strip()}" if m["what"] else f"uses {m['reach']}")
                for m in _PY_FALLBACK.finditer(source)]
    hits: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        for part in assigned(node):
            if what := _guarded(part):
                hits.append((node.lineno, f"replaces {what}"))  # type: ignore[attr-defined]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("setattr", "delattr") and node.args:
            owner = dotted(node.args[0])
            if owner.split(".")[0] in _PY_MODULES or _PY_CLASSES.match(owner):
                hits.append((node.lineno, f"changes {owner} with {node.func.id}()"))
        if isinstance(node, ast.Attribute) and node.attr in ("__closure__", "cell_contents",
                                                             "get_referrers", "get_objects",
                                                             "get_referents"):
            hits.append((node.lineno, f"reaches into other code through .{node.attr}"))
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + [getattr(node, "module", "") or ""]
            if any(n.split(".")[0] == "ctypes" for n in names):
                hits.append((node.lineno, "imports ctypes (raw memory access)"))
        if isinstance(node, ast.FunctionDef) and (
                (node.name == "__eq__" and _always(node, True))
                or (node.name == "__ne__" and _always(node, False))):
            hits.append((node.lineno, f"defines {node.name} that answers "
                                      f"{node.name == '__eq__'} whatever it is compared with"))
    return sorted(set(hits))


def _r(source: str) -> list[tuple[int, str]]:
    code = re.sub(r"#[^\n'\"]*$", "", source, flags=re.MULTILINE)  # comments, roughly
    return sorted({(code.count("\n", 0, m.start()) + 1, what.format(m[1]))
                   for pattern, what in _R_PATTERNS for m in pattern.finditer(code)})
