"""What the runner asks of a language's verifier: data out of the kernel, verdicts ours.

The student's kernel runs the student's code, so anything it computes can be forged by
that code: a patched ``json.dumps`` turned every failed test into a passed one, a masked
``nrow`` or a fake ``dim`` method satisfied a value check, an object whose ``==`` is
always true passed a test. So the kernel only ever returns **data**, and every verdict
(a test's pass or fail, a value's summary) is computed by a verifier the notebook never
touched:

- the kernel runs a *preamble* (hidden, before the student's first cell) that binds, in
  a closure kept under a random name, everything the export needs (serialiser, the
  built-in or base functions it calls, stdout's writer), so later monkeypatching of
  modules, builtins or base R does not reach it;
- the verifier (Python: the runner itself; R: a fresh ``Rscript`` the runner starts) runs
  the instructor's code. A student *value* it refers to is exported as plain data, of
  exact types only (a subclass, an object of the student's class or one whose class the
  verifier does not know arrives as an opaque handle that equals nothing); a student
  *function* becomes a proxy whose call runs in the kernel with arguments sent as data
  and returns its result (or the exception it raised, and what it printed) as data;
- each exchange echoes a random canary; an echo that comes back wrong, a bound function
  found replaced, or a result line that never arrives makes the test ``unreliable`` and
  is reported (``tampering``), never a silent pass.

This module is loaded by path by ``runner.py`` (which runs as ``python -I`` and imports
nothing of ``grader``), so it imports only the standard library.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol, TypedDict

__all__ = ["Bridge", "KernelCall", "KernelReply", "TestVerdict"]

Outcome = Literal["ok", "timeout", "dead"]


class KernelReply(TypedDict):
    """How one hidden cell ended, and what it printed on stdout."""

    outcome: Outcome
    text: str  # the cell's stdout (its end, where the bridge's data line is)
    error: str  # "ename: evalue" when the cell raised, else ""
    seconds: float


# Runs ``code`` as a cell the notebook does not keep, within ``timeout_s``.
KernelCall = Callable[[str, float], KernelReply]


class TestVerdict(TypedDict):
    """One instructor test, judged by the verifier."""

    outcome: Outcome  # "timeout" / "dead": the kernel hung or died during a call
    status: Literal["passed", "failed", "unreliable"]
    detail: str  # what failed (message, failing line, error), or why it is unreliable
    note: str  # what the verifier hid from the test (a student function named like R's)
    seconds: float


class Bridge(Protocol):
    """One language's verifier, for one run (one kernel, restarted at most a few times)."""

    def preamble(self) -> str:
        """The hidden cell to run before the student's first cell (and again in a fresh
        kernel before the notebook runs again)."""

    def inspect(self, names: list[str], kernel: KernelCall) -> tuple[list[dict[str, Any]], str]:
        """A summary per name (``VariableSummary`` fields; a name starting with ``=`` is
        an instructor's expression, evaluated by the verifier), and an error ("" if
        none) when nothing could be read."""

    def test(self, code: str, timeout_s: float, kernel: KernelCall) -> TestVerdict:
        """Run one instructor test against the student's kernel."""

    def tampering(self) -> list[str]:
        """What the bridge saw of the notebook interfering with it (replaced bindings,
        canaries that came back wrong, data lines that never arrived)."""

    def close(self) -> None:
        """Stop what the bridge started (the R verifier process)."""
