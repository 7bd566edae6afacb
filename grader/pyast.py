"""Parsing Python source in a grader that parses in several threads at once.

CPython 3.11 keeps the AST constructor's recursion depth per interpreter. A conversion
that another thread's interrupts (the garbage collector runs Python code midway, and
the interpreter may then switch threads) fails with "SystemError: AST constructor
recursion depth mismatch" in one or both (python/cpython#106905): ours grading a
notebook in a background job, or Streamlit compiling a page. So every parse of ours
runs under one lock with the collector paused: it is never interrupted, and it leaves
the shared depth as it found it, even when it runs inside another thread's
interrupted conversion. Should a parse of ours still meet the error, it is retried.
"""

from __future__ import annotations

import ast
import gc
import threading
from typing import Any

__all__ = ["literal_eval", "parse"]

_LOCK = threading.Lock()
_MISMATCH = "recursion depth mismatch"


def parse(source: str, mode: str = "exec") -> ast.AST:
    """``ast.parse``, safe next to other threads' parsing; raises what it raises."""
    for attempt in range(3):
        with _LOCK:
            enabled = gc.isenabled()
            gc.disable()
            try:
                return ast.parse(source, mode=mode)
            except SystemError as exc:
                if _MISMATCH not in str(exc) or attempt == 2:
                    raise
            finally:
                if enabled:
                    gc.enable()
    raise AssertionError("unreachable")  # the loop returns or raises


def literal_eval(text: str) -> Any:
    """``ast.literal_eval`` of an expression, parsed as ``parse`` does."""
    return ast.literal_eval(parse(text.strip(), mode="eval"))
