"""The runner's instructor tests: where each runs, its verdict, and a kernel it stops.

``Tests`` is made by ``runner.py`` (which loads this file by path: the standard library
only) from the spec's ``tests`` (``grader.sandbox.judged_tests.test_plan``). A test with a
position (``after``: a text) is due right after the first code cell whose source holds
that text, whitespace normalised (``flat``): ``at(index)``, called by the runner after
each cell, runs the tests due there, *live* (``Bridge.test(..., live=True)``: the
namespace as the cells so far left it; what the test deletes, the kernel loses). The
others run after the notebook (``rest``), in rubric order, as before positions existed;
so do the positional tests whose text no code cell holds and those whose cell the
notebook never reached (it stopped), each with a note that says so.

Each test has its own time limit. After a test that times out, a ``ping`` cell must
answer within PING_TIMEOUT_S; when it does not, or the test killed the kernel, the
kernel is replaced: the preamble binds the bridge again and the cells run again (the
whole notebook for the tests after it; for a positional test, the cells up to its own,
after the probe, so that the next cells continue in the fresh kernel), while the
replay budget lasts. Tests are not run again in a replay, so what a positional test
deleted before it is back there. When no time is left the later tests are "not run"
and, mid-notebook, the run stops there as if the kernel had died.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["PING_TIMEOUT_S", "Tests", "flat"]

PING_TIMEOUT_S = 10
VERIFIER_START_S = 60  # the R verifier's start, beside a test's own time
SHOWN = 60  # characters of a position's text quoted in a note


def flat(text: Any) -> str:
    """A cell's source (or a position's text) with its whitespace normalised."""
    joined = "".join(text) if isinstance(text, list) else str(text or "")
    return " ".join(joined.split())


def _quoted(text: str) -> str:
    return repr(text if len(text) <= SHOWN else text[:SHOWN - 1] + "…")


class Tests:
    """The spec's tests over one run (see the module's docstring). ``ops`` holds the
    runner's ``cell``, ``hidden``, ``asker`` and ``run_cells``."""

    def __init__(self, ops: Any, client: Any, nb: Any, spec: dict[str, Any], bridge: Any,
                 replies: dict[int, Any], emit: Any, kernel: Any) -> None:
        self.ops, self.client, self.nb, self.spec, self.bridge = ops, client, nb, spec, bridge
        self.replies, self.emit, self.kernel = replies, emit, kernel
        self.until = time.monotonic() + spec.get("replay_budget_s", 0)
        self.started, self.spent, self.broken = time.monotonic(), 0.0, ""
        self.ran_s: float | None = None  # what the cells took, once they all ran
        self.due: dict[int, list[dict[str, Any]]] = {}
        self.later: list[tuple[dict[str, Any], str]] = []
        code = [(i, flat(c.get("source"))) for i, c in enumerate(nb.cells)
                if c.get("cell_type") == "code"]
        for test in spec.get("tests") or []:
            want = flat(test.get("after"))
            at = next((i for i, text in code if want in text), None) if want else None
            if at is None:
                self.later.append((test, f"the cell it runs after (holding {_quoted(want)}) "
                                   "is not in this notebook: run after the whole notebook"
                                   if want else ""))
            else:
                self.due.setdefault(at, []).append(test)

    def at(self, index: int) -> str:
        """Run the tests due after cell ``index``; "dead" when the notebook cannot go on."""
        tests = self.due.pop(index, [])
        began = time.monotonic()
        try:
            for test in tests:
                self._one(test, live=True, upto=index)
        finally:
            self.spent += time.monotonic() - began
        return "dead" if self.broken else ""

    def rest(self, stop: str, ran_s: float) -> None:
        """After the notebook (whose cells took ``ran_s``): the tests without a position,
        and those not run at theirs."""
        self.ran_s = ran_s
        if stop in ("dead", "unresponsive") and not self.broken:
            self.broken = ("the kernel died while the notebook ran" if stop == "dead" else
                           "the kernel stopped answering after a cell went past its time")
        missed = [(t, f"the notebook stopped ({stop or 'early'}) before the cell it runs "
                   "after: run after the cells that ran") for i in sorted(self.due)
                  for t in self.due[i]]
        self.due = {}
        for test, note in missed + self.later:
            self._one(test, note=note)

    def _one(self, test: dict[str, Any], live: bool = False, upto: int | None = None,
             note: str = "") -> None:
        if self.broken:
            self.emit(event="test", id=test["id"], outcome="not run", text="", error=self.broken)
            return
        ask = self.ops.asker(self.client, self.nb, self.replies)
        self.emit(event="expect", phase=f"test {test['id']}",
                  within=float(test["timeout_s"]) + PING_TIMEOUT_S + VERIFIER_START_S)
        try:
            got = dict(self.bridge.test(test["code"], test["timeout_s"], ask, live=live,
                                        **({"clean": test["clean"]} if "clean" in test else {})))
        except Exception as exc:  # the verifier itself broke: say so, never a pass
            got = {"outcome": "ok", "status": "unreliable", "seconds": 0.0, "note": "",
                   "detail": f"the verifier failed: {type(exc).__name__}: {exc}"}
        if note:
            got["note"] = "; ".join(n for n in (str(got.get("note") or ""), note) if n)
        self.emit(event="test", id=test["id"], timeout_s=test["timeout_s"], **got)
        if got["outcome"] == "timeout":
            got = self.ops.cell(self.client, self.nb, self.spec["ping"], PING_TIMEOUT_S,
                                self.replies)
        if got["outcome"] != "ok":
            self.broken = self._renew(test["id"], upto)
            self.emit(event="replay", after=test["id"], within=upto is not None,
                      error=self.broken)

    def _renew(self, after: str, upto: int | None) -> str:
        """A fresh kernel that ran the notebook again (up to cell ``upto`` when given);
        "" or why the next cells and tests cannot run."""
        left = self.until - time.monotonic()
        ran_s = self.ran_s if self.ran_s is not None else (
            time.monotonic() - self.started - self.spent)  # the cells so far
        what = "cells and tests" if upto is not None else "tests"
        if left < ran_s * 1.5 + PING_TIMEOUT_S:
            return (f"test {after} stopped the kernel, and no time is left to run the notebook "
                    f"again for the {what} after it")
        client, nb, replies = self.client, self.nb, self.replies
        self.emit(event="expect", phase=f"the notebook's run again after test {after}",
                  within=left + VERIFIER_START_S)
        self.kernel.close()  # shuts the stuck or dead kernel down
        self.kernel.enter_context(client.setup_kernel())
        self.kernel.callback(self.bridge.close)
        bound = self.ops.hidden(client, nb, self.bridge.preamble(), replies)
        if bound["error"]:
            return f"after test {after} the grader could not bind its checks: {bound['error']}"
        if upto is not None and self.spec.get("probe"):  # compared with the probe after
            self.emit(event="probe", when="before",
                      **self.ops.hidden(client, nb, self.spec["probe"], replies))
        stop = self.ops.run_cells(client, nb, self.spec, time.monotonic() + left, replies,
                                  lambda **_: None, upto=upto)
        return f"after test {after} the notebook did not run again ({stop})" if stop else ""
