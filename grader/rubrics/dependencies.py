"""Problems of a criterion's or a rubric's checks taken together: two tests of one
name in a criterion, and ``depends_on`` naming criteria that do not exist, the criterion
itself, or going round in a circle."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def duplicate_tests(checks: Iterable[Any], where: str) -> list[str]:
    """Problems of one criterion's checks taken together: two tests of one name (a
    result is matched to its check by criterion, type and name)."""
    names = [ch.name for ch in checks if ch.type == "test" and ch.name]
    return [f"{where}: two tests are named {n!r}; name each test of a criterion differently"
            for n in dict.fromkeys(n for n in names if names.count(n) > 1)]


def dependency_problems(criteria: Iterable[tuple[str, Iterable[Any]]]) -> list[str]:
    """Problems of the rubric's ``depends_on`` taken together: criteria that do not
    exist, a criterion depending on itself, and cycles (each charge must have a first)."""
    listed = [(cid, tuple(checks)) for cid, checks in criteria]
    graph = {cid: {d for ch in checks for d in ch.depends_on} for cid, checks in listed}
    problems = []
    for cid, checks in listed:
        for j, ch in enumerate(checks):
            where = f"criterion {cid!r} check {j + 1}.depends_on"
            for d in ch.depends_on:
                if d == cid:
                    problems.append(f"{where}: names the criterion itself")
                elif d not in graph:
                    problems.append(f"{where}: names {d!r}, which is not a criterion of "
                                    "this rubric")
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for d in sorted(graph.get(node, ())):
            if d == node or d not in graph:
                continue
            if state.get(d) == 1:
                loop = [*path[path.index(d):], d]
                problems.append("depends_on goes round in a circle: " + " -> ".join(loop))
            elif d not in state:
                visit(d, [*path, d])
        state[node] = 2

    for cid in graph:
        if cid not in state:
            visit(cid, [cid])
    return problems
