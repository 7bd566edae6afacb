"""References to the student's functions, classes and objects, held by the verifier.

A ``Remote`` stands in the verifier (``pyverify``) for something of the student's that
is not plain data. Calling it runs the student's code in the kernel with the arguments
sent as data and gives back its result as data (or raises the error it raised, and
prints what it printed); reading an attribute, ``repr``, ``len``, iteration and indexing
are asked of the kernel too, and count only when they answer with plain data. A
reference equals nothing but another reference (then the kernel's ``==`` is asked, and
must answer a plain bool): an object whose ``==`` is always true passes no comparison
with the instructor's data. ``Alarm`` stops the instructor's own code at the test's
deadline. Loaded by path by the runner: standard library only.
"""

from __future__ import annotations

import builtins
import contextlib
import dis
import re
import signal
import threading
import time
import types
from typing import Any

__all__ = ["BUILTIN_NAMES", "Alarm", "BridgeFault", "KernelStopped", "Remote", "StudentError",
           "referenced_names"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
BUILTIN_NAMES = frozenset(k for k in vars(builtins) if not k.startswith("_"))


class BridgeFault(Exception):
    """The kernel's side of the bridge did not answer as itself (tampering, or gone)."""


class KernelStopped(BaseException):  # not an Exception: a test's ``except`` cannot eat it
    """A call into the kernel timed out or killed it."""

    def __init__(self, outcome: str):
        super().__init__(outcome)
        self.outcome = outcome


class StudentError(Exception):
    """An error the student's code raised that is not one of Python's own classes."""


class Remote:
    """A function, class or object of the student's, in the kernel, by reference."""

    def __init__(self, bridge: Any, tree: dict[str, Any]):
        object.__setattr__(self, "_bridge", bridge)
        object.__setattr__(self, "_tree", {"$": "ref", "ref": tree["ref"]})
        object.__setattr__(self, "_kind", tree.get("$", "obj"))
        object.__setattr__(self, "_type", str(tree.get("type") or (
            {"fn": "function", "class": "type", "module": "module"}.get(tree.get("$"), "object"))))
        object.__setattr__(self, "__name__", str(tree.get("name") or ""))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._bridge.call(self, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._bridge.apply(self, "getattr", name)

    def __repr__(self) -> str:
        return self._bridge.apply(self, "repr")

    def __str__(self) -> str:
        return self._bridge.apply(self, "str")

    def __len__(self) -> int:
        return self._bridge.apply(self, "len")

    def __iter__(self) -> Any:
        return iter(self._bridge.apply(self, "iter"))

    def __getitem__(self, key: Any) -> Any:
        return self._bridge.apply(self, "getitem", key)

    def __contains__(self, item: Any) -> bool:
        return self._bridge.apply(self, "contains", item)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Remote):
            return self._tree == other._tree or self._bridge.apply(self, "eq", other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        got = self.__eq__(other)
        return got if got is NotImplemented else not got

    def __hash__(self) -> int:
        return hash(("remote", self._tree["ref"]))


def referenced_names(code: types.CodeType) -> set[str]:
    """Global names ``code`` loads or deletes, and identifiers in its strings (doctests)."""
    found: set[str] = set()
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_NAME", "LOAD_GLOBAL", "DELETE_NAME", "DELETE_GLOBAL"):
            found.add(str(ins.argval))
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= referenced_names(const)
        elif isinstance(const, str):
            found |= set(_IDENT.findall(const))
        elif isinstance(const, tuple):
            found |= {n for c in const if isinstance(c, str) for n in _IDENT.findall(c)}
    return found


class Alarm:
    """The instructor's own code runs here, so a test that loops forever is stopped by a
    timer (SIGALRM, main thread only), paused while the kernel answers a request (the
    kernel call has its own time limit, and the timer must not fire inside nbclient)."""

    @staticmethod
    def _usable() -> bool:
        return threading.current_thread() is threading.main_thread()

    @staticmethod
    @contextlib.contextmanager
    def armed(bridge: Any) -> Any:
        if not Alarm._usable():
            yield
            return

        def ring(_signum: int, _frame: Any) -> None:
            raise KernelStopped("timeout")

        previous = signal.signal(signal.SIGALRM, ring)
        signal.setitimer(signal.ITIMER_REAL, max(0.01, bridge.deadline - time.monotonic()))
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    @staticmethod
    @contextlib.contextmanager
    def paused(bridge: Any) -> Any:
        if not Alarm._usable():
            yield
            return
        left, _ = signal.setitimer(signal.ITIMER_REAL, 0)
        try:
            yield
        finally:
            if left > 0:  # it was armed: rearm with what the deadline leaves
                signal.setitimer(signal.ITIMER_REAL,
                                 max(0.01, bridge.deadline - time.monotonic()))
