"""Instructor tests run in the student's kernel: the cells they run as, and their results.

A rubric's ``test`` check is the instructor's code, run in the student's kernel after
the notebook (and after the inspection of its variables, which a test therefore cannot
change). Python: assert statements, and functions named ``test`` or ``test_*`` that
the code defines (each is called, without arguments). R: ``stopifnot``, testthat
expectations and ``test_that`` blocks (their failures are collected by a testthat
``ListReporter``, whichever way ``test_that`` is spelled).

``harness_cells`` wraps each ``InstructorTest`` in a harness cell that runs the code in a
namespace of its own (a copy of the student's globals; R: a child of the global
environment), catches what it raises and prints one line: a marker and a JSON object
(``status``, ``detail``). ``read_tests`` turns the runner's ``test`` events into one
``TestRun`` per test: passed, failed (with the assertion's message, the failing line,
or the error), timeout, dead (the kernel died during the test), not run (with why),
or unreliable (its result cannot be believed; see below).

The student's code runs in the same process, so it may tamper with the tests:
- Python's ``assert`` raises the interpreter's own AssertionError whatever ``builtins``
  says; the harness compiles the test itself (asserts kept) and reports built-in
  functions and classes the notebook replaced in ``builtins`` (the test's result is
  then unreliable). A function of the student's named like a built-in (``def len``)
  is hidden from the tests, which see Python's own, and the result says so.
- R: a base R function the notebook masks in the global environment
  (``stopifnot <- function(...) TRUE``) and every testthat export are bound, as their
  packages define them, in an environment between the global one and the test's, so
  the test uses the real ones; the result names what was masked.
- Controls run through the same harness: one test that must pass before the tests, and
  one that must fail (with a random message) before and after them. A control that
  does not behave, or a result line that never arrives (stdout replaced), makes every
  test's result unreliable: never a silent pass.
"""

from __future__ import annotations

import builtins
import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from grader.types import Evidence

__all__ = ["InstructorTest", "TestPlan", "TestRun", "harness_cells", "read_tests", "uses_testthat"]

TestStatus = Literal["passed", "failed", "timeout", "dead", "not run", "unreliable"]
PING = {"python": "pass", "r": "invisible(NULL)"}
MAX_DETAIL = 2000
CONTROL = "@control"
_TESTTHAT = re.compile(r"\b(expect_\w+|test_that)\s*\(")
_PLACEHOLDER = re.compile(r"\b(MARKER|NAME|CODE|GUARDED|MAX)\b")
# what an IPython kernel itself replaces in builtins
_KERNEL_OWN = frozenset({"input", "help", "exit", "quit", "display", "get_ipython"})


def _native(key: str, value: Any) -> bool:
    """``value`` is the built-in function or class ``key`` (the harness's test, too)."""
    if isinstance(value, type):
        return value.__module__ == "builtins" and value.__qualname__ == key
    return (type(value) is type(len) and getattr(value, "__self__", None) is builtins
            and value.__name__ == key)


# Python's built-in functions and classes: the harness reports those a notebook replaced.
_PY_BUILTINS = sorted(k for k, v in vars(builtins).items()
                      if not k.startswith("_") and k not in _KERNEL_OWN and _native(k, v))


@dataclass(frozen=True, slots=True)
class InstructorTest:
    key: str  # unique in one run (the layer uses "criterion/name")
    code: str
    timeout_s: float


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


_PY_HARNESS = r'''
def run(marker, name, code, guarded):
    import json, sys
    import IPython
    status, detail, notes = "passed", "", []
    try:
        assert False
    except BaseException as exc:  # the interpreter's own AssertionError, whatever builtins say
        genuine = type(exc)
    else:
        genuine = None
    bmod = sys.modules["builtins"]
    native = type(sys.getrefcount)
    def own(key, value):
        if isinstance(value, type):
            return value.__module__ == "builtins" and value.__qualname__ == key
        return type(value) is native and value.__self__ is bmod and value.__name__ == key
    replaced = [k for k in guarded if k in vars(bmod) and not own(k, vars(bmod)[k])]
    ns = dict(IPython.get_ipython().user_ns)
    ns["__builtins__"] = bmod
    hidden = [k for k in guarded if k in ns and getattr(ns[k], "__module__", "") == "__main__"
              and callable(ns[k])]
    for k in hidden:
        del ns[k]
    import re
    named = [k for k in hidden if re.search(r"\b%s\b" % k, code)]
    if named:
        notes.append("the notebook defines " + ", ".join(named) + ": the test used Python's own")
    filename = "<instructor test %s>" % name
    lines = code.splitlines()

    def where(tb):
        line = 0
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""

    if genuine is None or replaced:
        status = "unreliable"
        detail = ("assert statements do not run in this kernel" if genuine is None else
                  "the notebook replaces Python's " + ", ".join(replaced))
    else:
        try:
            exec(compile(code, filename, "exec", dont_inherit=True, optimize=0), ns)
            for key, value in list(ns.items()):
                func = getattr(value, "__code__", None)
                if (key == "test" or key.startswith("test_")) and callable(value) \
                        and func is not None and func.co_filename == filename:
                    value()
        except (Exception, SystemExit) as exc:
            status, line = "failed", where(exc.__traceback__)
            if isinstance(exc, genuine):
                detail = str(exc) or (line or "an assertion failed")
            else:
                detail = "%s: %s" % (type(exc).__name__, exc) + (" (%s)" % line if line else "")
    sys.stdout.write("\n" + marker + json.dumps({"status": status, "detail": detail[:MAX],
                                                 "note": "; ".join(notes)}) + "\n")

run(MARKER, NAME, CODE, GUARDED)
'''

_R_HARNESS = r'''
base::local({
  marker <- MARKER
  notes <- base::character()
  shield <- base::new.env(parent = base::globalenv())
  for (n in base::ls(base::globalenv(), all.names = TRUE)) {
    f <- base::get(n, envir = base::globalenv())
    e <- if (base::is.function(f)) base::environment(f) else NULL
    if (!base::is.null(e) && !base::isNamespace(e) &&
        base::exists(n, envir = base::baseenv(), inherits = FALSE)) {
      base::assign(n, base::get(n, envir = base::baseenv()), envir = shield)
      if (base::grepl(base::paste0("(?<![\\w.])", n, "(?![\\w.])"), CODE, perl = TRUE))
        notes <- base::c(notes, n)
    }
  }
  if (base::length(notes)) notes <- base::paste0("the notebook redefines ",
    base::paste(notes, collapse = ", "), ": the test used R's own")
  reporter <- NULL
  if (base::requireNamespace("testthat", quietly = TRUE)) {
    for (n in base::getNamespaceExports("testthat"))
      base::assign(n, base::getExportedValue("testthat", n), envir = shield)
    reporter <- testthat::ListReporter$new()
  }
  env <- base::new.env(parent = shield)
  run <- function() {
    exprs <- base::parse(text = CODE, keep.source = FALSE)
    for (e in exprs) base::eval(e, env)
  }
  detail <- base::tryCatch({
    if (base::is.null(reporter)) run() else testthat::with_reporter(reporter, run())
    ""
  }, error = function(e) {
    m <- base::conditionMessage(e)
    if (base::nzchar(m)) m else base::paste(base::class(e)[1], "raised")
  })
  if (!base::nzchar(detail) && !base::is.null(reporter)) {
    for (t in reporter$get_results()) for (r in t$results) {
      if (!base::inherits(r, "expectation_success") && !base::nzchar(detail))
        detail <- base::paste0(t$test, ": ", base::conditionMessage(r))
    }
  }
  status <- if (base::nzchar(detail)) "failed" else "passed"
  base::cat("\n", marker, jsonlite::toJSON(base::list(status = status,
    detail = base::substr(detail, 1, MAX), note = base::paste(notes, collapse = "; ")),
    auto_unbox = TRUE), "\n", sep = "")
})
'''


def _r_string(text: str) -> str:
    """``text`` as an R raw string literal (no escapes to get wrong)."""
    dashes = "-"
    while f"){dashes}\"" in text:
        dashes += "-"
    return f'r"{dashes}({text}){dashes}"'


def _fill(template: str, values: dict[str, str]) -> str:
    """The placeholders of ``template`` replaced in one pass (values are not rescanned)."""
    return _PLACEHOLDER.sub(lambda m: values[m[1]], template)


def _cell(language: str, marker: str, name: str, code: str) -> str:
    if language == "python":
        body = _fill(_PY_HARNESS, {"MARKER": json.dumps(marker), "NAME": repr(name),
                                   "CODE": repr(code), "GUARDED": repr(_PY_BUILTINS),
                                   "MAX": str(MAX_DETAIL)})
        return f"exec(compile({body!r}, '<grader-test>', 'exec'), {{}})\n"
    return _fill(_R_HARNESS, {"MARKER": json.dumps(marker), "CODE": _r_string(code),
                              "MAX": str(MAX_DETAIL)}).strip()


def _controls(language: str, tests: Sequence[InstructorTest], nonce: str
              ) -> tuple[list[InstructorTest], list[InstructorTest]]:
    """(before the tests, after them): a test that must pass, and ones that must fail."""
    if language == "python":
        good, bad = ["assert 1 == 1"], [f"assert 1 == 2, {nonce!r}"]
    else:
        good, bad = ["stopifnot(TRUE)"], [f'stopifnot("{nonce}" = FALSE)']
        if any(uses_testthat(t.code) for t in tests):
            good.append('test_that("control", expect_true(TRUE))')
            bad.append(f'test_that("{nonce}", expect_true(FALSE))')
    before = [InstructorTest(f"{CONTROL}-pass-{i}", c, 20) for i, c in enumerate(good)]
    before += [InstructorTest(f"{CONTROL}-fail-{i}", c, 20) for i, c in enumerate(bad)]
    after = [InstructorTest(f"{CONTROL}-fail-end-{i}", c, 20) for i, c in enumerate(bad)]
    return before, after


@dataclass(frozen=True, slots=True)
class TestPlan:
    """What the runner is given (``spec["tests"]``) and what reading its events needs."""

    items: tuple[dict[str, Any], ...]
    ping: str
    marker: str
    nonce: str
    keys: tuple[str, ...]  # the instructor's tests, in order

    __test__ = False

    @property
    def budget_s(self) -> float:
        """The most time the tests may take, pings after a timeout included."""
        return sum(float(i["timeout_s"]) + PING_TIMEOUT_S for i in self.items)


PING_TIMEOUT_S = 10  # a kernel that does not answer this soon after a test is replaced


def harness_cells(language: str, tests: Sequence[InstructorTest]) -> TestPlan | None:
    """The harness cells for ``tests`` (controls around them); None when there are none."""
    if not tests or language not in PING:
        return None
    marker, nonce = f"@@grader-test-{uuid.uuid4().hex}@@", f"control {uuid.uuid4().hex}"
    before, after = _controls(language, tests, nonce)
    items = tuple({"id": t.key, "timeout_s": t.timeout_s,
                   "code": _cell(language, marker, t.key, t.code)}
                  for t in (*before, *tests, *after))
    return TestPlan(items, PING[language], marker, nonce, tuple(t.key for t in tests))


def _result(event: dict[str, Any], marker: str) -> dict[str, str] | None:
    text = str(event.get("text", ""))
    at = text.rfind(marker)
    if at < 0:
        return None
    try:
        data = json.loads(text[at + len(marker):].split("\n", 1)[0])
    except ValueError:
        return None
    return {k: str(v) for k, v in data.items()} if isinstance(data, dict) else None


def _one(key: str, event: dict[str, Any] | None, marker: str) -> TestRun:
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
    got = _result(event, marker)
    if got is None:
        why = str(event.get("error", "")) or "its result never arrived (is stdout replaced?)"
        return TestRun(key, "unreliable", f"no result: {why}", seconds)
    status = got.get("status", "")
    if status not in ("passed", "failed", "unreliable"):
        return TestRun(key, "unreliable", f"an unreadable result: {status!r}", seconds)
    return TestRun(key, status, got.get("detail", ""), seconds, got.get("note", ""))  # type: ignore[arg-type]


def read_tests(plan: TestPlan, events: Sequence[dict[str, Any]]
               ) -> tuple[dict[str, TestRun], list[Evidence]]:
    """Each instructor test's result, and what the controls say of the kernel (tampering)."""
    seen = {e.get("id"): e for e in events if e.get("event") == "test"}
    runs = {key: _one(key, seen.get(key), plan.marker) for key in plan.keys}
    faults = []
    for item in plan.items:
        key = item["id"]
        if not key.startswith(CONTROL):
            continue
        got = _one(key, seen.get(key), plan.marker)
        if got.status == "not run":
            continue  # the run ended or the kernel broke before it: the tests say so
        must_fail = "-fail-" in key
        if must_fail and (got.status != "failed" or plan.nonce not in got.detail):
            faults.append(f"a test that must fail gave {got.status!r} ({got.detail[:120]})")
        elif not must_fail and got.status != "passed":
            faults.append(f"a test that must pass gave {got.status!r} ({got.detail[:120]})")
    if not faults:
        return runs, []
    why = "the tests cannot be trusted in this kernel: " + "; ".join(faults)
    runs = {k: r if r.status == "not run" else TestRun(k, "unreliable", why, r.seconds, r.note)
            for k, r in runs.items()}
    return runs, [Evidence(None, None, why)]
