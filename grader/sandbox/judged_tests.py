"""Instructor tests judged outside the student's kernel: their plan and their results.

A rubric's ``test`` check is the instructor's code. Python: assert statements, and
functions named ``test`` or ``test_*`` that the code defines (each is called, without
arguments). R: ``stopifnot``, testthat expectations and ``test_that`` blocks. The
runner's bridge (``grader.sandbox.bridge``) judges each test in a verifier the notebook
never touched: the student's values reach it as data and the student's functions run in
the kernel, called with the instructor's inputs, their results coming back as data. So
a patched serialiser, a masked base function, a fake method or an always-equal object
cannot turn a failed test into a passed one. The names a test takes from outside the
notebook (built-ins, the solution's imports and packages: ``clean_names``) travel on
its plan item as ``clean``; the verifier takes those from a namespace of its own, never
from the student's kernel, and reports a notebook binding that shadows one.

When a test runs: by default after the notebook (and after the inspection of its
variables, which such a test therefore cannot change). A test with a position
(``after``: a text) runs as nbgrader runs a test cell and otter its ``grader.check``:
right after the first code cell whose source holds that text (whitespace normalised),
before the cells after it, on the kernel's namespace as it is then, and what it deletes
stays deleted (``grader.sandbox.bridge`` says exactly what reaches the kernel). When no
cell holds the text, or the notebook stopped before that cell, it runs after the
notebook as the others do, and its note says so.

``test_plan`` lists the tests for the runner; ``read_tests`` turns the runner's ``test``
events into one ``TestRun`` per test: passed, failed (with the assertion's message, the
failing line, or the error), timeout, dead (the kernel died during the test), not run
(with why), or unreliable (its result cannot be believed: the kernel's answers were not
the grader's own, or the notebook replaced what the tests rely on). An unreliable test
is never a pass, and what made it so is reported as tampering with the checks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from grader.types import Evidence

from .clean_names import CleanNames

__all__ = ["InstructorTest", "TestPlan", "TestRun", "read_tests", "test_plan", "uses_testthat"]

TestStatus = Literal["passed", "failed", "timeout", "dead", "not run", "unreliable"]
PING = {"python": "pass", "r": "invisible(NULL)"}
MAX_DETAIL = 2000
_TESTTHAT = re.compile(r"\b(expect_\w+|test_that)\s*\(")


@dataclass(frozen=True, slots=True)
class InstructorTest:
    key: str  # unique in one run (the layer uses "criterion/name")
    code: str
    timeout_s: float
    after: str = ""  # its position: the text of the code cell it runs after ("": the end)
    clean: CleanNames | None = None  # the names it takes from outside the notebook


@dataclass(frozen=True, slots=True)
class TestRun:
    key: str
    status: TestStatus
    detail: str  # what failed (message, failing line, error), or why it did not run
    seconds: float = 0.0
    note: str = ""  # what the harness hid from or saw in the notebook (masked names)

    __test__ = False  # not a pytest class


def uses_testthat(code: str) -> bool:
    return bool(_TESTTHAT.search(code))


@dataclass(frozen=True, slots=True)
class TestPlan:
    """What the runner is given (``spec["tests"]``) and what reading its events needs."""

    items: tuple[dict[str, Any], ...]
    ping: str
    keys: tuple[str, ...]  # the instructor's tests, in order

    __test__ = False

    @property
    def budget_s(self) -> float:
        """The most time the tests may take, pings after a timeout included."""
        return sum(float(i["timeout_s"]) + PING_TIMEOUT_S for i in self.items)


PING_TIMEOUT_S = 10  # a kernel that does not answer this soon after a test is replaced


def test_plan(language: str, tests: Sequence[InstructorTest]) -> TestPlan | None:
    """The runner's list of ``tests``; None when there are none or none can be judged."""
    if not tests or language not in PING:
        return None
    items = tuple({"id": t.key, "timeout_s": t.timeout_s, "code": t.code}
                  | ({"after": t.after} if t.after.strip() else {})
                  | ({"clean": t.clean.to_json()} if t.clean is not None else {})
                  for t in tests)
    return TestPlan(items, PING[language], tuple(t.key for t in tests))


test_plan.__test__ = False  # type: ignore[attr-defined]


def _one(key: str, event: dict[str, Any] | None) -> TestRun:
    if event is None:
        return TestRun(key, "not run", "the run ended before this test")
    seconds = float(event.get("seconds", 0.0))
    outcome = event.get("outcome")
    if outcome == "not run":
        return TestRun(key, "not run", str(event.get("error", "")), seconds)
    if outcome == "timeout":
        return TestRun(key, "timeout", f"did not finish within {event.get('timeout_s')} s",
                       seconds)
    if outcome == "dead":
        return TestRun(key, "dead", "the kernel died during this test (memory, or a crash?)",
                       seconds)
    status = event.get("status", "")
    if status not in ("passed", "failed", "unreliable"):
        return TestRun(key, "unreliable", f"an unreadable result: {status!r}", seconds)
    return TestRun(key, status, str(event.get("detail", ""))[:MAX_DETAIL], seconds,
                   str(event.get("note", "")))


def read_tests(plan: TestPlan, events: Sequence[dict[str, Any]]
               ) -> tuple[dict[str, TestRun], list[Evidence]]:
    """Each instructor test's result, and what made any of them unreliable (tampering)."""
    seen = {e.get("id"): e for e in events if e.get("event") == "test"}
    runs = {key: _one(key, seen.get(key)) for key in plan.keys}
    found = [str(f) for e in events if e.get("event") == "tampering" for f in e.get("found", ())]
    found += [r.detail for r in runs.values() if r.status == "unreliable" and r.detail not in
              found]
    return runs, [Evidence(None, None, text) for text in dict.fromkeys(found)]
