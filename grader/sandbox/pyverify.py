"""The Python verifier: instructor tests and expressions judged outside the student's kernel.

``PythonBridge`` (the ``Bridge`` of ``grader.sandbox.bridge`` for Python kernels) runs in
the sandbox runner, a process the notebook cannot reach. An instructor's test runs
here, in a namespace of its own with Python's own built-ins, where each name the test
refers to that the student's kernel defines is:
- a value, exported by the kernel as data (``datacodec``) and rebuilt here with our own
  numpy and pandas: the test's ``==``, ``len`` and ``assert`` are ours;
- a function, class or object of the student's: a ``Remote`` reference. Calling it runs
  the student's code in the kernel with the arguments sent as data, and gives back its
  result as data (or raises the error it raised, and prints what it printed); reading an
  attribute, ``repr``, ``len``, iteration and indexing are asked of the kernel too, and
  count only when they answer with plain data. A reference equals nothing but another
  reference (then the kernel's ``==`` is asked, and must answer a plain bool): an object
  whose ``==`` is always true passes no comparison with the instructor's data.
A test that deletes a global (``del squares``, nbgrader's way to check that a function
does not depend on it) has that global hidden in the kernel while it calls the student;
a live test (one with a position) then has it deleted there (``bridge``'s docstring).

Names: each name a test or a value check's expression uses that is *clean*
(``pyremote.CleanSpace``: Python's built-ins and what the solution imports, except what
the solution binds itself) is taken from this process, imported here, never from the
kernel; a notebook that binds one to something else (a callable ``abs``, a fake ``pd``)
changes nothing the test sees, the verdict's note says so and ``tampering()`` reports it
(the notebook's own ``import pandas as pd`` is the same module: no report). A variable an
output check names is the student's, whatever its name. An object of a class of the
notebook's own that stands where data is expected (a value the test names, anything in
a value check) is sealed: the checks ask it nothing (``Remote``), and its type is named
as the notebook's, never as the library class whose name it borrows.

Each reply must carry the kernel bridge's SHA-256 over the run's secret and the payload,
and echo the request's canary; a reply that does not, or never arrives, is a fault:
the test is ``unreliable`` and ``tampering()`` reports it, never a silent pass.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import importlib
import io
import json
import secrets
import sys
import time
import types
from pathlib import Path
from typing import Any

if __package__:
    from . import datacodec, pykernel, pyremote, pysummary
else:  # loaded by path by the runner (python -I, no package)
    import importlib.util

    def _sibling(name: str) -> types.ModuleType:
        key = f"_grader_sandbox_{name}"
        if key not in sys.modules:
            spec = importlib.util.spec_from_file_location(key, Path(__file__).with_name(
                f"{name}.py"))
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            sys.modules[key] = module
            spec.loader.exec_module(module)  # type: ignore[union-attr]
        return sys.modules[key]

    datacodec, pykernel, pyremote, pysummary = (_sibling(n) for n in (
        "datacodec", "pykernel", "pyremote", "pysummary"))

BridgeFault, KernelStopped, Remote = pyremote.BridgeFault, pyremote.KernelStopped, pyremote.Remote
Alarm = pyremote.Alarm
StudentError = pyremote.StudentError

__all__ = ["PythonBridge"]

MAX_DETAIL = 2000
FORGET_S = 10.0  # what a live test's deletions may take in the kernel, past its own time
# modules a reference may be rebuilt from here (import-time effects we know to be none)
_IMPORTABLE = frozenset({
    "numpy", "pandas", "math", "cmath", "statistics", "re", "collections", "itertools",
    "functools", "operator", "datetime", "decimal", "fractions", "random", "string", "json",
    "scipy", "sklearn", "matplotlib", "seaborn", "typing", "dataclasses", "heapq",
    "bisect", "textwrap", "copy", "os", "sys", "time", "calendar", "numbers", "enum",
})


class PythonBridge:
    """The verifier for one run of a Python kernel (see the module's docstring)."""

    def __init__(self, nonce: str = "", work: str = "", clean: dict[str, Any] | None = None):
        self.clean = clean  # the run's clean namespace (``CleanSpace``), for value checks
        self.shadowed: set[str] = set()  # the notebook's bindings of names the checks use
        self.inspecting = False  # a value check: everything of the student's is data
        self._decoding: tuple[bool, str] = (False, "")
        self.nonce = nonce or secrets.token_hex(8)
        self.secret = secrets.token_hex(32)
        self.marker = f"@@grader-bridge-{self.nonce}@@"
        self.name = "_g" + secrets.token_hex(6)
        self.codec = datacodec.Codec(resolve=self._remote)
        self.faults: list[str] = []
        self.replaced: set[str] = set()
        self.kernel: Any = None
        self.deadline = 0.0
        self.deleted: list[str] = []
        self._globals: list[str] | None = None
        self._cache: dict[str, Any] = {}  # exported values, until the student's code runs
        self.unreadable: dict[str, str] = {}  # names whose value the kernel could not send

    # -- the kernel side ----------------------------------------------------------------
    def preamble(self) -> str:
        self._globals = None
        source = Path(datacodec.__file__).read_text(encoding="utf-8")
        return pykernel.preamble_source(source, self.secret, self.marker, self.name)

    def _ask(self, op: str, **fields: Any) -> Any:
        if self.kernel is None:
            raise BridgeFault("no kernel to ask")
        canary = secrets.token_hex(12)
        request = json.dumps({"op": op, "canary": canary, **fields})
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise KernelStopped("timeout")
        with Alarm.paused(self):
            got = self.kernel(f"__import__('sys').modules[{self.name!r}].handle({request!r})\n",
                              left)
        if got["outcome"] != "ok":
            raise KernelStopped(got["outcome"])
        reply = self._verified(got["text"], canary, got.get("error", ""))
        body = reply["body"]
        if isinstance(body, dict) and body.get("$") == "failed":  # the student's object refused
            error = str(body.get("error", ""))
            name, _, message = error.partition(": ")
            kind = getattr(builtins, name, None)  # Python's own error, as the real object's
            if isinstance(kind, type) and issubclass(kind, Exception) and kind is not \
                    StopIteration:  # (an exhausted iterator answers [] instead)
                raise kind(message)
            raise StudentError(error)
        return body

    def _verified(self, text: str, canary: str, error: str) -> dict[str, Any]:
        at = text.rfind(self.marker)
        if at < 0:
            why = ("the kernel's answer never arrived" + (f" ({error})" if error else "")
                   + " (is stdout replaced, or the grader's binding removed?)")
            self._fault(why)
            raise BridgeFault(why)
        mac, _, payload = text[at + len(self.marker):].split("\n", 1)[0].partition(" ")
        want = hashlib.sha256((self.secret + payload).encode()).hexdigest()
        try:
            reply = json.loads(payload)
        except ValueError:
            reply = None
        if mac != want or not isinstance(reply, dict) or reply.get("canary") != canary:
            why = "an answer that the grader's binding in the kernel did not write"
            self._fault(why)
            raise BridgeFault(why)
        self.replaced.update(str(r) for r in reply.get("replaced") or ())
        return reply

    def _fault(self, why: str) -> None:
        if why not in self.faults:
            self.faults.append(why)

    # -- references ---------------------------------------------------------------------
    def _remote(self, tree: dict[str, Any]) -> Any:
        kind = tree.get("$")
        if kind == "big":
            return pysummary.Big(tree)
        if kind == "module" and str(tree.get("name", "")).split(".")[0] in _IMPORTABLE:
            try:
                return importlib.import_module(str(tree["name"]))
            except ImportError:
                pass
        data, label = self._decoding
        return Remote(self, tree, data, label)

    def _dec(self, tree: Any, data: bool, label: str = "") -> Any:
        """``tree`` decoded; its references stand where data is expected when ``data``."""
        before, self._decoding = self._decoding, (data or self.inspecting, label)
        try:
            return self.codec.dec(tree)
        finally:
            self._decoding = before

    def call(self, target: Remote, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        enc = pyremote.sender(datacodec.Codec)
        body = self._ask("call", target=target._tree, args=enc.enc(list(args)),
                         kwargs=enc.enc(dict(kwargs)), deleted=list(self.deleted))
        self._globals, self._cache = None, {}  # the student's code ran: values may differ
        printed = str(body.get("stdout", ""))
        if printed:
            sys.stdout.write(printed)
        if "raised" in body:
            raised = body["raised"]
            kind = getattr(builtins, str(raised.get("type", "")), None)
            message = str(raised.get("message", ""))
            if (raised.get("module") == "builtins" and isinstance(kind, type)
                    and issubclass(kind, Exception)):
                raise kind(message)
            raise StudentError(f"{raised.get('type')}: {message}")
        return self._dec(body.get("value"), False)  # the test's to examine (see Remote)

    def apply(self, target: Remote, how: str, arg: Any = None) -> Any:
        if how == "getattr":
            body = self._ask("getattr", target=target._tree, name=str(arg))
        else:
            enc = pyremote.sender(datacodec.Codec)
            body = self._ask("apply", target=target._tree, how=how, arg=enc.enc(arg))
        label = f"{target._label}.{arg}" if how == "getattr" else f"an item of {target._label}"
        return self._dec(body, target._data, label)

    # -- the student's namespace --------------------------------------------------------
    def _trees(self, names: set[str]) -> dict[str, Any]:
        """The kernel's exported trees of those ``names`` it binds (each crosses once,
        until the student's code runs again)."""
        if self._globals is None:
            self._globals, self._cache = [str(n) for n in self._ask("names")], {}
        present = [n for n in self._globals if n in names]
        fresh = [n for n in present if n not in self._cache]
        if fresh:
            self._cache.update(self._ask("export", names=fresh))
        return {n: self._cache[n] for n in present if n in self._cache}

    def _value(self, name: str, tree: Any) -> tuple[bool, Any]:
        """(readable, value) of the student's ``name``: data, or a reference that stands
        where data is expected."""
        if isinstance(tree, dict) and tree.get("$") in ("missing", "failed"):
            if tree.get("$") == "failed":
                self.unreadable[name] = str(tree.get("error", ""))
            return False, None
        return True, self._dec(tree, True, name)

    def _namespace(self, wanted: set[str], space: Any, quiet: set[str] | frozenset[str] = (
            frozenset())) -> tuple[dict[str, Any], list[str]]:
        """The namespace a test or expression runs in: each name it uses that is clean
        (``CleanSpace``) from here, the others from the student's kernel; and the names
        the notebook binds to something else than the clean object (but ``quiet``: names
        the code binds itself or only mentions in a string, ``pyremote.unflagged``)."""
        trees = self._trees(set(wanted))
        ns: dict[str, Any] = {"__builtins__": builtins, "__name__": "__main__"}
        shadowed = []
        for name in sorted(wanted):
            tree, where = trees.get(name), space.where(name)
            if where is None:
                if tree is not None:
                    ok, value = self._value(name, tree)
                    if ok:
                        ns[name] = value
                continue
            try:
                clean: Any = space.value(where)
            except Exception:  # not importable here: the notebook's, if the same thing
                if tree is not None and space.looks_like(where, tree):
                    ns[name] = self._value(name, tree)[1]
                elif tree is not None and name not in quiet:
                    shadowed.append(name)
                continue
            if where[0] != "builtins" or name in space.imports:
                ns[name] = clean
            if tree is not None and name not in quiet and not space.same(
                    clean, tree, lambda t: self._dec(t, True)):
                shadowed.append(name)
        self.shadowed.update(shadowed)
        return ns, shadowed

    # -- the Bridge protocol ------------------------------------------------------------
    def test(self, code: str, timeout_s: float, kernel: Any, live: bool = False,
             clean: dict[str, Any] | None = None) -> dict[str, Any]:
        """``clean``: the test's clean namespace (its plan item's; else the run's)."""
        space = pyremote.CleanSpace(clean if clean is not None else self.clean)
        self.inspecting = False
        if not live:
            return self._judge(code, timeout_s, kernel, False, space)
        self._globals, self._cache = None, {}  # the cells before it ran: read them afresh
        try:
            return self._judge(code, timeout_s, kernel, True, space)
        finally:
            self._globals, self._cache = None, {}  # and the cells after it will run

    def _judge(self, code: str, timeout_s: float, kernel: Any, live: bool,
               space: Any) -> dict[str, Any]:
        started = time.monotonic()
        self.kernel, self.deadline = kernel, started + timeout_s
        filename = "<instructor test>"
        lines = code.splitlines()

        def verdict(status: str, detail: str = "", outcome: str = "ok",
                    note: str = "") -> dict[str, Any]:
            return {"outcome": outcome, "status": status, "detail": detail[:MAX_DETAIL],
                    "note": note, "seconds": round(time.monotonic() - started, 3)}

        def where(tb: Any) -> str:
            line = 0
            while tb is not None:
                if tb.tb_frame.f_code.co_filename == filename:
                    line = tb.tb_lineno
                tb = tb.tb_next
            return lines[line - 1].strip() if 0 < line <= len(lines) else ""

        try:
            compiled = compile(code, filename, "exec", dont_inherit=True, optimize=0)
        except SyntaxError as exc:
            return verdict("failed", f"the test is not valid Python: {exc}")
        note = ""
        try:
            ns, named = self._namespace(pyremote.referenced_names(compiled), space,
                                        pyremote.unflagged(compiled))
            if named:
                note = ("the notebook defines " + ", ".join(named) + ": the test used "
                        + ("Python's own" if all(space.where(k)[0] == "builtins" for k in named)
                           else "Python's own and the solution's imports"))
            present, failure = set(ns), None
            self.deleted = []
            try:
                with contextlib.redirect_stdout(io.StringIO()), Alarm.armed(self):
                    pyremote.Tracker.run(self, compiled, ns, present)
            except (KernelStopped, BridgeFault):
                raise
            except (Exception, SystemExit) as exc:  # the verdict, once the deletions are done
                failure = exc
            if live:
                self._forget(sorted(pyremote.Tracker.gone(ns, present)))
            if failure is not None:
                raise failure
        except KernelStopped as stop:
            what = (f"did not finish within {timeout_s:g} s" if stop.outcome == "timeout"
                    else "the kernel died during this test (memory, or a crash?)")
            return verdict("failed", what, stop.outcome, note)
        except BridgeFault as fault:
            return verdict("unreliable", f"the tests cannot be trusted in this kernel: {fault}",
                           note=note)
        except (Exception, SystemExit) as exc:
            line = where(exc.__traceback__)
            if isinstance(exc, AssertionError):
                return verdict("failed", str(exc) or (line or "an assertion failed"), note=note)
            return verdict("failed", f"{type(exc).__name__}: {exc}" + (f" ({line})" if line
                                                                         else ""), note=note)
        return verdict("passed", note=note)

    def _forget(self, names: list[str]) -> None:
        """A live test's deletions, made in the kernel (by the bound closure)."""
        if names:
            self.deadline = max(self.deadline, time.monotonic() + FORGET_S)
            self._ask("forget", names=names)

    def inspect(self, names: list[str], kernel: Any) -> tuple[list[dict[str, Any]], str]:
        """Value checks: a variable the rubric names is the student's, whatever its name;
        an expression's names are taken as a test's are (``CleanSpace``), and everything
        of the student's it reaches stands where data is expected (``Remote``)."""
        self.kernel, self.deadline = kernel, time.monotonic() + 60
        expressions = [n for n in names if n.startswith("=")]
        plain = {n for n in names if not n.startswith("=")}
        used, quiet, loaded = set(), set(), set()
        for expr in expressions:
            with contextlib.suppress(SyntaxError):
                compiled = compile(expr[1:], "<expression>", "eval")
                used |= pyremote.referenced_names(compiled)
                quiet |= pyremote.unflagged(compiled)
                loaded |= pyremote.referenced_names(compiled, strings=False)
        self.inspecting = True
        try:
            trees = self._trees(plain)
            variables = {n: got[1] for n in plain if n in trees
                         for got in [self._value(n, trees[n])] if got[0]}
            ns, _shadowed = self._namespace(used, pyremote.CleanSpace(self.clean),
                                            quiet - loaded)
            out = [pysummary.summary_of(
                name, ns if name.startswith("=") else variables, self.unreadable,
                (BridgeFault, KernelStopped), StudentError, self._shown) for name in names]
        except (BridgeFault, KernelStopped) as exc:
            return [], f"{type(exc).__name__}: {exc}"
        finally:
            self.inspecting = False
        return out, ""

    def _shown(self, value: Any) -> tuple[str, str] | None:
        """A reference's type and ``repr`` for its summary (the repr is shown, never
        compared); None for data."""
        if not isinstance(value, Remote):
            return None
        return value._type, (self.apply(value, "repr") if value._kind == "obj" else repr(value))

    def tampering(self) -> list[str]:
        out = list(self.faults)
        if self.replaced:
            out.append("the notebook replaces " + ", ".join(sorted(self.replaced)))
        if self.shadowed:
            out.append("the notebook binds " + ", ".join(sorted(self.shadowed)) + ", which "
                       "the instructor's checks take from Python and the solution's imports: "
                       "they used those, not the notebook's")
        return out

    def close(self) -> None:
        self.kernel = None
