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
A student function named like a Python built-in is not taken: the test uses Python's own,
and the verdict's note says so.

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
import re
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

    def __init__(self, nonce: str = "", work: str = ""):
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
        self._trees: dict[str, Any] = {}  # exported values, until the student's code runs
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
        if isinstance(body, dict) and body.get("$") == "failed":
            raise StudentError(str(body.get("error", "")))  # the student's object refused
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
        return Remote(self, tree)

    def call(self, target: Remote, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        enc = datacodec.Codec()
        enc.enc = self._enc_arg(enc)  # type: ignore[method-assign]
        body = self._ask("call", target=target._tree, args=enc.enc(list(args)),
                         kwargs=enc.enc(dict(kwargs)), deleted=list(self.deleted))
        self._globals, self._trees = None, {}  # the student's code ran: values may differ
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
        return self.codec.dec(body.get("value"))

    @staticmethod
    def _enc_arg(enc: Any) -> Any:
        plain = datacodec.Codec.enc.__get__(enc)

        def encode(value: Any, depth: int = 0) -> Any:
            if isinstance(value, Remote):
                return value._tree
            got = plain(value, depth)  # containers come back here for their items
            if isinstance(got, dict) and got.get("$") in ("fn", "class", "module", "obj"):
                raise TypeError(f"cannot send a {type(value).__name__} to the student's code")
            return got
        return encode

    def apply(self, target: Remote, how: str, arg: Any = None) -> Any:
        if how == "getattr":
            body = self._ask("getattr", target=target._tree, name=str(arg))
        else:
            enc = datacodec.Codec()
            enc.enc = self._enc_arg(enc)  # type: ignore[method-assign]
            body = self._ask("apply", target=target._tree, how=how, arg=enc.enc(arg))
        return self.codec.dec(body)

    # -- the student's namespace --------------------------------------------------------
    def _namespace(self, wanted: set[str]) -> tuple[dict[str, Any], list[str]]:
        if self._globals is None:
            self._globals, self._trees = [str(n) for n in self._ask("names")], {}
        present = [n for n in self._globals if n in wanted]
        fresh = [n for n in present if n not in self._trees]
        if fresh:  # each test decodes its own copy; the data crosses once
            self._trees.update(self._ask("export", names=fresh))
        exported = {n: self._trees[n] for n in present if n in self._trees}
        ns: dict[str, Any] = {"__builtins__": builtins, "__name__": "__main__"}
        hidden = []
        for name, tree in exported.items():
            if isinstance(tree, dict) and tree.get("$") in ("missing", "failed"):
                if tree.get("$") == "failed":
                    self.unreadable[name] = str(tree.get("error", ""))
                continue
            value = self.codec.dec(tree)
            if name in pyremote.BUILTIN_NAMES and isinstance(value, Remote) and value._kind in (
                    "fn", "class"):
                hidden.append(name)
                continue
            ns[name] = value
        return ns, hidden

    # -- the Bridge protocol ------------------------------------------------------------
    def test(self, code: str, timeout_s: float, kernel: Any, live: bool = False
             ) -> dict[str, Any]:
        if not live:
            return self._judge(code, timeout_s, kernel, False)
        self._globals, self._trees = None, {}  # the cells before it ran: read them afresh
        try:
            return self._judge(code, timeout_s, kernel, True)
        finally:
            self._globals, self._trees = None, {}  # and the cells after it will run

    def _judge(self, code: str, timeout_s: float, kernel: Any, live: bool) -> dict[str, Any]:
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
            ns, hidden = self._namespace(pyremote.referenced_names(compiled))
            named = [k for k in hidden if re.search(rf"\b{k}\b", code)]
            if named:
                note = ("the notebook defines " + ", ".join(named)
                        + ": the test used Python's own")
            present, failure = set(ns), None
            self.deleted = []
            try:
                with contextlib.redirect_stdout(io.StringIO()), Alarm.armed(self):
                    _Tracker.run(self, compiled, ns, present)
            except (KernelStopped, BridgeFault):
                raise
            except (Exception, SystemExit) as exc:  # the verdict, once the deletions are done
                failure = exc
            if live:
                self._forget(sorted(_Tracker.gone(ns, present)))
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
        self.kernel, self.deadline = kernel, time.monotonic() + 60
        expressions = [n for n in names if n.startswith("=")]
        wanted = {n for n in names if not n.startswith("=")}
        for expr in expressions:
            with contextlib.suppress(SyntaxError):
                wanted |= pyremote.referenced_names(compile(expr[1:], "<expression>", "eval"))
        try:
            ns, _hidden = self._namespace(wanted)
            out = [self._summary(name, ns) for name in names]
        except (BridgeFault, KernelStopped) as exc:
            return [], f"{type(exc).__name__}: {exc}"
        return out, ""

    def _summary(self, name: str, ns: dict[str, Any]) -> dict[str, Any]:
        try:
            if name.startswith("="):
                try:
                    value = eval(compile(name[1:], "<expression>", "eval"), dict(ns))
                except (BridgeFault, KernelStopped):
                    raise
                except Exception as exc:
                    return {"name": name, "exists": False, "error": f"{type(exc).__name__}: {exc}"}
            elif name in self.unreadable:
                return {"name": name, "exists": True, "error": self.unreadable[name]}
            elif name not in ns:
                return {"name": name, "exists": False}
            else:
                value = ns[name]
            if isinstance(value, Remote):
                summary = pysummary.summarise(value, value._type, repr(value))
            else:
                summary = pysummary.summarise(value)
            summary.update(name=name, exists=True)
            json.dumps(summary, default=str)
            return summary
        except (BridgeFault, KernelStopped):
            raise
        except StudentError as exc:  # the student's object failed when asked (its repr)
            return {"name": name, "exists": True, "error": str(exc)}
        except Exception as exc:
            return {"name": name, "exists": True, "error": f"{type(exc).__name__}: {exc}"}

    def tampering(self) -> list[str]:
        out = list(self.faults)
        if self.replaced:
            out.append("the notebook replaces " + ", ".join(sorted(self.replaced)))
        return out

    def close(self) -> None:
        self.kernel = None


class _Tracker:
    """Runs a compiled test; before each call into the kernel, globals the test deleted
    (present before, gone now) are hidden there too."""

    @staticmethod
    def run(bridge: PythonBridge, compiled: types.CodeType, ns: dict[str, Any],
            present: set[str]) -> None:
        original = bridge.call

        def call(target: Remote, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            bridge.deleted = sorted(_Tracker.gone(ns, present))
            return original(target, args, kwargs)

        bridge.call = call  # type: ignore[method-assign]
        try:
            exec(compiled, ns)
            for key, value in list(ns.items()):
                func = getattr(value, "__code__", None)
                if (key == "test" or key.startswith("test_")) and callable(value) \
                        and func is not None and func.co_filename == compiled.co_filename:
                    value()
        finally:
            bridge.call = original  # type: ignore[method-assign]

    @staticmethod
    def gone(ns: dict[str, Any], present: set[str]) -> set[str]:
        """The globals the test deleted: present when it began, absent now."""
        return {n for n in present if n not in ns and not n.startswith("__")}
