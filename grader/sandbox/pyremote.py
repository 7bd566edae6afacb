"""References to the student's functions, classes and objects, and the names a test takes.

A ``Remote`` stands in the verifier (``pyverify``) for something of the student's that
is not plain data. Calling it runs the student's code in the kernel with the arguments
sent as data and gives back its result as data (or raises the error it raised, and
prints what it printed); reading an attribute, ``repr``, ``len``, truth, iteration (an
iterator such as a generator one ``next`` at a time, as Python does), indexing, the
order comparisons and a ``with`` block are asked of the kernel too, and count only when
they answer with plain data. A
reference equals nothing but another reference (then the kernel's ``==`` is asked, and
must answer a plain bool): an object whose ``==`` is always true passes no comparison
with the instructor's data. An object of a class of the notebook's own that stands
where data is expected is sealed (``Remote``'s docstring). ``CleanSpace`` says which
names a test takes from the verifier's own namespace (built-ins, the solution's
imports), and whether the notebook's binding of one is the same thing or shadows it.
``Tracker`` runs a test (its ``test_*`` functions too), hiding in the kernel the globals
it deleted while it calls the student; ``Alarm`` stops the instructor's own code at
the test's deadline. Loaded by path by the runner: standard library only.
"""

from __future__ import annotations

import builtins
import contextlib
import dis
import importlib
import re
import signal
import threading
import time
import types
from typing import Any

__all__ = ["BUILTIN_NAMES", "Alarm", "BridgeFault", "CleanSpace", "KernelStopped", "Remote",
           "StudentError", "Tracker", "bound_names", "referenced_names", "sender", "unflagged"]

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ORDER = ("lt", "le", "gt", "ge")
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
    """A function, class or object of the student's, in the kernel, by reference.

    ``data``: it stands where the checks expect data (a value a check names, or reached
    from one). Such an object of the notebook's own class (``datacodec.own_class``) is
    *sealed*: nothing of it is asked of the kernel, so a ``Series`` of the notebook's
    whose ``__contains__`` is always true satisfies no check (the test sees a
    ``TypeError`` saying so). What a test builds by calling the student's code
    (``Stack()``, a function's result, a generator) answers as the student's code does;
    a test never reads an object of the notebook's own class that the notebook made
    (refused for the solution too: review). Library objects that are not data (a figure,
    a fitted model, a ``range``) answer as the kernel's."""

    def __init__(self, bridge: Any, tree: dict[str, Any], data: bool = False,
                 label: str = ""):
        kind = tree.get("$", "obj")
        qual, module = str(tree.get("type") or ""), str(tree.get("module") or "")
        own = kind in ("obj", "class") and tree.get("own") is not False
        if kind == "obj":
            shown = f"{qual} (a class of the notebook's)" if own else (
                f"{module}.{qual}" if module else qual) or "object"
        else:
            shown = {"fn": "function", "class": "type", "module": "module"}.get(kind, "object")
        for key, value in (("_bridge", bridge), ("_tree", {"$": "ref", "ref": tree["ref"]}),
                           ("_kind", kind), ("_type", shown), ("_own", own),
                           ("_data", data), ("_sealed", data and own and kind == "obj"),
                           ("_label", label or qual or "an object"), ("_class", qual),
                           ("__name__", str(tree.get("name") or ""))):
            object.__setattr__(self, key, value)

    def _refuse(self, what: str) -> TypeError:
        return TypeError(f"{self._label} is an object of the notebook's own class "
                         f"({self._class}), not data: the checks do not ask it for {what}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._bridge.call(self, args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if self._sealed:
            raise self._refuse(f"its attribute {name!r}")
        return self._bridge.apply(self, "getattr", name)

    def __repr__(self) -> str:
        if self._sealed:
            return f"<{self._label}: an object of the notebook's own class {self._class}>"
        return self._bridge.apply(self, "repr")

    def __str__(self) -> str:
        return repr(self) if self._sealed else self._bridge.apply(self, "str")

    def __len__(self) -> int:
        if self._sealed:
            raise self._refuse("its length")
        return self._bridge.apply(self, "len")

    def __bool__(self) -> bool:
        if self._sealed:
            raise self._refuse("its truth")
        if self._kind != "obj":
            return True
        return self._bridge.apply(self, "bool")

    def __iter__(self) -> Any:  # an iterator of the student's (a generator): item by item
        if self._sealed:
            raise self._refuse("its items")
        return self if self._bridge.apply(self, "isiter") else iter(self._bridge.apply(
            self, "iter"))

    def __next__(self) -> Any:
        if self._sealed:
            raise self._refuse("its next item")
        if not (got := self._bridge.apply(self, "next")):
            raise StopIteration
        return got[0]

    def _compare(self, how: str, other: Any) -> Any:  # also a `with` block's enter and exit
        if self._sealed or (isinstance(other, Remote) and other._sealed) or (
                self._own and how in ORDER and not isinstance(other, Remote)):
            raise self._refuse(f"its {how!r}" if how not in ORDER else "an order with the "
                               "instructor's data (as ==: its class could say yes to all)")
        return self._bridge.apply(self, how, other)

    __lt__ = lambda self, other: self._compare("lt", other)  # noqa: E731
    __le__ = lambda self, other: self._compare("le", other)  # noqa: E731
    __gt__ = lambda self, other: self._compare("gt", other)  # noqa: E731
    __ge__ = lambda self, other: self._compare("ge", other)  # noqa: E731

    __enter__ = lambda self: self._compare("enter", None)  # noqa: E731
    # falsy: an error of the test's own block is never swallowed by the student's __exit__
    __exit__ = lambda self, *exc: self._compare("exit", None) and False  # noqa: E731

    def __getitem__(self, key: Any) -> Any:
        if self._sealed:
            raise self._refuse("an item")
        return self._bridge.apply(self, "getitem", key)

    def __contains__(self, item: Any) -> bool:
        if self._sealed:
            raise self._refuse("membership")
        return self._bridge.apply(self, "contains", item)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Remote):
            if self._tree == other._tree:
                return True
            if self._sealed or other._sealed:
                return False
            return self._bridge.apply(self, "eq", other)
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        return got if (got := self.__eq__(other)) is NotImplemented else not got

    def __hash__(self) -> int:
        return hash(("remote", self._tree["ref"]))


def sender(codec_class: Any) -> Any:
    """A codec for what a test sends to the student's code: data, and the student's own
    references back; nothing of the verifier's travels by reference."""
    enc = codec_class()
    plain = codec_class.enc.__get__(enc)

    def encode(value: Any, depth: int = 0) -> Any:
        if isinstance(value, Remote):
            return value._tree
        got = plain(value, depth)  # containers come back here for their items
        if isinstance(got, dict) and got.get("$") in ("fn", "class", "module", "obj"):
            raise TypeError(f"cannot send a {type(value).__name__} to the student's code")
        return got

    enc.enc = encode
    return enc


def bound_names(code: types.CodeType) -> set[str]:
    """Global names ``code`` (a test's module) binds itself: its imports, assignments and
    definitions, and what its functions declare ``global`` (class bodies bind nothing)."""
    found = {str(i.argval) for i in dis.get_instructions(code)
             if i.opname in ("STORE_NAME", "STORE_GLOBAL")}

    def nested(inner: types.CodeType) -> set[str]:
        out = {str(i.argval) for i in dis.get_instructions(inner) if i.opname == "STORE_GLOBAL"}
        for const in inner.co_consts:
            if isinstance(const, types.CodeType):
                out |= nested(const)
        return out

    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= nested(const)
    return found


def referenced_names(code: types.CodeType, strings: bool = True) -> set[str]:
    """Global names ``code`` loads or deletes, and (``strings``) identifiers in its
    strings (doctests)."""
    found: set[str] = set()
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_NAME", "LOAD_GLOBAL", "DELETE_NAME", "DELETE_GLOBAL"):
            found.add(str(ins.argval))
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= referenced_names(const, strings)
        elif isinstance(const, str) and strings:
            found |= set(_IDENT.findall(const))
        elif isinstance(const, tuple) and strings:
            found |= {n for c in const if isinstance(c, str) for n in _IDENT.findall(c)}
    return found


def unflagged(code: types.CodeType) -> set[str]:
    """Names a notebook may bind without shadowing what ``code`` uses: those it binds
    itself, and those only its strings mention (a message's "all", a column "sum")."""
    return bound_names(code) | (referenced_names(code) - referenced_names(code, False))


class CleanSpace:
    """The names a test or value check takes from the verifier's own namespace, never
    from the kernel: Python's built-ins and what the solution imports
    (``grader.sandbox.clean_names``: ``{"imports": [[name, module, attribute]], "star":
    [...], "own": [...]}``), except the names the solution binds itself (``own``: the
    assignment's deliverables, the student's). Modules are imported here, when a test
    first names them; one that cannot be imported here is taken from the notebook only
    where the notebook's binding names the same module or function (``looks_like``)."""

    def __init__(self, spec: Any = None):
        spec = spec if isinstance(spec, dict) else {}
        self.own = frozenset(str(n) for n in spec.get("own") or ())
        self.imports: dict[str, tuple[str, str]] = {}
        for item in spec.get("imports") or ():
            name, module, attr = (str(part) for part in item)
            if name not in self.own:
                self.imports[name] = (module, attr)
        self.star = [str(m) for m in spec.get("star") or ()]
        self._starred: dict[str, tuple[str, str]] | None = None

    def _stars(self) -> dict[str, tuple[str, str]]:
        if self._starred is None:
            self._starred = {}
            for module in self.star:
                try:
                    found = importlib.import_module(module)
                except Exception:  # a module this process lacks (or fails in): none of its names
                    continue
                names = getattr(found, "__all__", None) or [
                    k for k in vars(found) if not k.startswith("_")]
                self._starred.update({str(k): (module, str(k)) for k in names})
        return self._starred

    def where(self, name: str) -> tuple[str, str] | None:
        """(module, attribute) of a clean name ("builtins" for a built-in); None when the
        name is not clean (the notebook's, or nobody's)."""
        if name in self.own:
            return None
        if name in self.imports:
            return self.imports[name]
        if self.star and name in self._stars():
            return self._stars()[name]
        return ("builtins", name) if name in BUILTIN_NAMES else None

    @staticmethod
    def value(where: tuple[str, str]) -> Any:
        """The clean object; ImportError or AttributeError when this process lacks it."""
        module, attr = where
        found = importlib.import_module(module)
        if not attr:
            return found
        try:
            return getattr(found, attr)
        except AttributeError:
            return importlib.import_module(f"{module}.{attr}")  # from a import submodule

    @staticmethod
    def looks_like(where: tuple[str, str], tree: Any) -> bool:
        """Whether the notebook's binding (its exported tree) names the same module or
        function as ``where`` (for a clean name this process cannot import)."""
        if not isinstance(tree, dict):
            return False
        module, attr = where
        kind, name = tree.get("$"), str(tree.get("name") or "")
        if kind == "module":
            return name == (f"{module}.{attr}" if attr else module)
        return (bool(attr) and kind in ("fn", "class") and tree.get("module") == module
                and attr in (name, tree.get("qualname")) and tree.get("own") is not True)

    @staticmethod
    def same(clean: Any, tree: Any, decode: Any) -> bool:
        """Whether the notebook's binding of a clean name is the clean object itself (its
        own ``import pandas as pd``): then nothing is shadowed."""
        kind = tree.get("$") if isinstance(tree, dict) else None
        if kind == "module":
            return isinstance(clean, types.ModuleType) and tree.get("name") == clean.__name__
        if kind in ("fn", "class"):
            names = {getattr(clean, "__qualname__", None), getattr(clean, "__name__", None)}
            return (tree.get("own") is not True and tree.get("module") == getattr(
                clean, "__module__", None) and bool({tree.get("qualname"), tree.get("name")}
                                                    & names - {None, ""}))
        if kind == "obj":
            cls = type(clean)
            return (tree.get("own") is False and tree.get("module") == cls.__module__
                    and tree.get("type") == cls.__qualname__)
        if kind in ("ref", "big", "missing", "failed"):
            return False
        try:
            got = decode(tree)
            return type(got) is type(clean) and (got == clean) is True
        except Exception:  # data that does not compare is another value
            return False


class Tracker:
    """Runs a compiled test; before each call into the kernel, globals the test deleted
    (present before, gone now) are hidden there too (the bridge's ``deleted``)."""

    @staticmethod
    def run(bridge: Any, compiled: types.CodeType, ns: dict[str, Any],
            present: set[str]) -> None:
        original = bridge.call

        def call(target: Remote, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            bridge.deleted = sorted(Tracker.gone(ns, present))
            return original(target, args, kwargs)

        bridge.call = call
        try:
            exec(compiled, ns)
            for key, value in list(ns.items()):
                func = getattr(value, "__code__", None)
                if (key == "test" or key.startswith("test_")) and callable(value) \
                        and func is not None and func.co_filename == compiled.co_filename:
                    value()
        finally:
            bridge.call = original

    @staticmethod
    def gone(ns: dict[str, Any], present: set[str]) -> set[str]:
        """The globals the test deleted: present when it began, absent now."""
        return {n for n in present if n not in ns and not n.startswith("__")}


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
