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

A test run *live* (``test(..., live=True)``: a test with a position, run right after its
cell as nbgrader runs a test cell) differs in exactly two ways, and in nothing that
makes a verdict: the namespace is read afresh from the kernel (the cells before it ran),
and the globals of the kernel the test deleted (present when it began, absent from its
namespace when it ended, whether it passed or failed) are then deleted in the kernel,
by the bound closure, so that the cells after it no longer have them, as after
nbgrader's ``del squares``. What the test binds, rebinds or changes in place stays in
the verifier (its values are copies); restoring what it deletes (nbgrader's ``finally:
squares = orig_squares``) is the test's own business, and a restored name is not
deleted. While a test (live or not) calls the student's code, the globals it has deleted
so far are absent from the kernel and are put back after the call, as the test's own
namespace still lacks them; a live test's deletions then become the kernel's.

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

    def test(self, code: str, timeout_s: float, kernel: KernelCall,
             live: bool = False) -> TestVerdict:
        """Run one instructor test against the student's kernel (``live``: at its position,
        its deletions applied to the kernel; see the module's docstring)."""

    def tampering(self) -> list[str]:
        """What the bridge saw of the notebook interfering with it (replaced bindings,
        canaries that came back wrong, data lines that never arrived)."""

    def close(self) -> None:
        """Stop what the bridge started (the R verifier process)."""
