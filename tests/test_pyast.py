"""Parsing that survives other threads parsing at the same time (python/cpython#106905)."""

from __future__ import annotations

import ast
import gc
import threading
import time

import pytest

from grader.pyast import literal_eval, parse

SOURCE = "\n".join(f"x{i} = f(a[{i}], [b, (c, {{'k': d}})], *e, **g) + h.i(j)" for i in range(60))


def test_parse_and_literal_eval_are_the_standard_ones():
    assert ast.dump(parse(SOURCE)) == ast.dump(ast.parse(SOURCE))
    assert literal_eval(" (3, 4) ") == (3, 4)
    with pytest.raises(SyntaxError):
        parse("def (:")
    with pytest.raises(ValueError, match="malformed"):
        literal_eval("f(1)")
    assert gc.isenabled()  # the collector is back on after a parse


class Finalised:
    """Garbage whose finalizer runs Python code: what lets a thread switch mid-parse."""

    def __del__(self) -> None:
        sum(range(50))


def test_many_threads_parsing_while_finalizers_run_never_fail():
    errors: list[BaseException] = []
    stop = threading.Event()

    def churn() -> None:
        while not stop.is_set():
            for _ in range(200):
                a, b = Finalised(), Finalised()
                a.other, b.other = b, a  # cycles: collected by the gc, finalizers run
            del a, b
            # Bounded: while a parse holds the collector off, this garbage waits; unpaced,
            # a slow machine piled up 24 GB of it (the CI's OOM killer ended the run).
            time.sleep(0.002)

    def ours() -> None:
        try:
            for _ in range(40):
                parse(SOURCE)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    churner = threading.Thread(target=churn, daemon=True)
    churner.start()
    threads = [threading.Thread(target=ours) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    stop.set()
    churner.join(10)
    assert errors == []
