"""The R bridge (``bridge.Bridge`` for R kernels): the kernel exports data, R judges it.

``RBridge(nonce, work)`` gives the kernel a ``preamble`` (``rkernel.R``): a closure,
bound before the student's first cell under ``.grader_<nonce>``, built only of functions
captured then (in an environment whose parent is the empty one), that prints one line
per request: a marker and a JSON object (the student's values as data, a call's value,
what it printed, and the canary it was given). The instructor's tests and expressions
run in a *verifier*, ``Rscript --vanilla rverify.R``, started once per run with no
library of the student's on its path: it asks this class for the values a test names
(``export``) and for calls of the student's functions (``call``, through a proxy), and
this class runs each request as a hidden cell through the runner's ``kernel`` callable.

A live test (``test(..., live=True)``, one with a position) gets from the verifier the
names it deleted, which a ``forget`` request then deletes in the kernel (``bridge``).
Names R finds in base or the packages the solution attaches (``clean_names``: a test's
``clean``, else the run's) are R's own; the notebook's bindings of them, ``tampering``'s.

Whatever goes wrong becomes a verdict, never an exception: a kernel that hangs or dies
during a call ("timeout" / "dead", failed), a verifier that hangs (killed: "timeout")
or dies, a reply without exactly one marker line, a canary that comes back wrong, or a
function the closure uses found replaced in its namespace ("unreliable", and reported
by ``tampering``). Functions of base, utils and jsonlite that the notebook replaced are
reported too, without changing the verdict: the export does not depend on them.

Loaded by path by the runner (``python -I``): the standard library only.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import queue
import re
import secrets
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["RBridge"]

log = logging.getLogger(__name__)

VERIFIER = Path(__file__).with_name("rverify.R")
KERNEL_SIDE = Path(__file__).with_name("rkernel.R")
MAX_DETAIL = 2000
MAX_CELLS = 20_000  # as pysummary.MAX_CELLS: summaries compare across languages
HEAD_ROWS = 5
EXPORT_LIMIT = 5_000_000  # values (cells, elements) one export may hold
INSPECT_TIMEOUT_S = 60.0
START_TIMEOUT_S = 60.0  # the verifier's start (R, jsonlite), not counted in a test's time
GRACE_S = 5.0  # what the verifier may take beyond a test's time before it is killed
FORGET_TIMEOUT_S = 10.0  # what a live test's deletions may take in the kernel
HEX = re.compile(r"[0-9a-f]*")


class _Failure(Exception):
    """Why a test (or an inspection) ended without a verdict of the verifier's."""

    def __init__(self, outcome: str, status: str, detail: str) -> None:
        super().__init__(detail)
        self.outcome, self.status, self.detail = outcome, status, detail


def _hex(text: str) -> str:
    return '"' + text.encode("utf-8").hex() + '"'


def _texts(node: Any) -> tuple[list[str], list[int]]:
    """A character node's strings (NA as "") and the 1-based places of its NAs."""
    if not isinstance(node, dict) or node.get("t") != "character":
        raise ValueError("a character vector was expected")
    data, values, missing, at = bytes.fromhex(node["h"]), [], [], 0
    for i, n in enumerate(node["n"]):
        if not isinstance(n, int):
            raise ValueError("an unreadable string length")
        if n < 0:
            values.append("")
            missing.append(i + 1)
            continue
        values.append(data[at:at + n].decode("utf-8", "replace"))
        at += n
    if at != len(data):
        raise ValueError("string lengths that do not match the data")
    return values, missing


def _strings(node: Any) -> list[str]:
    values, missing = _texts(node)
    gone = set(missing)
    return [v for i, v in enumerate(values, 1) if i not in gone]


def _plain(node: Any, depth: int = 0) -> dict[str, Any]:
    """The kernel's node with its strings decoded, as the verifier reads it."""
    if depth > 80 or not isinstance(node, dict) or not isinstance(node.get("t"), str):
        raise ValueError("an unreadable value")
    out = {k: v for k, v in node.items() if k not in ("n", "h") or node["t"] == "raw"}
    if node["t"] == "character":
        out["v"], out["na"] = _texts(node)
    for key in ("class", "text", "error", "an", "re", "im"):
        if key in node:
            out[key] = _plain(node[key], depth + 1)
    for key in ("av",) + (("v",) if node["t"] == "list" else ()):
        if key in node:
            out[key] = [_plain(x, depth + 1) for x in node[key]]
    return out


def _inside(path: str, folder: Path) -> bool:
    try:
        Path(path).resolve().relative_to(folder.resolve())
    except (OSError, ValueError):
        return False
    return True


def _r_environment(work: Path) -> dict[str, str]:
    """The runner's environment without R start-up files or libraries under ``work``
    (the student can write there): the verifier loads only installed packages."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("R_PROFILE", "R_ENVIRON"))}
    for var in ("R_LIBS", "R_LIBS_USER", "R_LIBS_SITE"):
        kept = [p for p in env.pop(var, "").split(os.pathsep) if p and not _inside(p, work)]
        if kept:
            env[var] = os.pathsep.join(kept)
    env.setdefault("R_LIBS_USER", os.devnull)  # not ~/R/...: HOME is in the work folder
    return env


class _Verifier:
    """The ``Rscript`` process: JSON lines in, marked JSON lines out (read by a thread)."""

    def __init__(self, work: Path) -> None:
        rscript = shutil.which("Rscript")
        if rscript is None:
            raise _Failure("ok", "unreliable", "R's Rscript is missing: no verifier")
        self.marker = f"@@rverify-{secrets.token_hex(16)}@@"
        self.lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=12)
        self.proc = subprocess.Popen([rscript, "--vanilla", str(VERIFIER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=_r_environment(work), start_new_session=True)
        self.threads = [threading.Thread(target=t, daemon=True)
                        for t in (self._read, self._read_errors)]
        for thread in self.threads:
            thread.start()
        try:
            self.send({"marker": self.marker})
            if self.receive(time.monotonic() + START_TIMEOUT_S).get("op") != "ready":
                raise _Failure("ok", "unreliable", "the verifier did not start")
        except BaseException:
            self.kill()
            raise

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace")
            at = line.find(self.marker)
            if at < 0:
                continue  # what a test printed
            try:
                msg = json.loads(line[at + len(self.marker):])
            except ValueError:
                msg = None
            self.lines.put(msg if isinstance(msg, dict) else {"op": "unreadable"})
        self.lines.put(None)

    def _read_errors(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode("utf-8", "replace").rstrip())

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(msg).encode("utf-8") + b"\n")
            self.proc.stdin.flush()
        except OSError as exc:
            raise _Failure("ok", "unreliable", f"the verifier stopped ({exc})") from exc

    def receive(self, deadline: float) -> dict[str, Any]:
        try:
            msg = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise TimeoutError from None
        if msg is None:
            self.lines.put(None)
            tail = " | ".join(self.stderr)[-500:]
            why = "the verifier stopped" + (f": {tail}" if tail else "")
            raise _Failure("ok", "unreliable", why)
        return msg

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            log.error("the R verifier (pid %s) did not stop", self.proc.pid)
            return
        for thread in self.threads:
            thread.join(timeout=5)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


class RBridge:
    """The verifier of one run's R kernel (see the module's docstring)."""

    def __init__(self, nonce: str, work: str, clean: dict[str, Any] | None = None) -> None:
        if not re.fullmatch(r"[0-9A-Za-z]{8,64}", nonce):
            raise ValueError("the nonce must be 8 to 64 letters or digits")
        self._clean = clean  # the run's clean namespace, for value checks
        self._shadow: set[str] = set()  # the notebook's bindings of names checks use
        self._name = f".grader_{nonce}"
        self._marker = f"@@grader-bridge-{nonce}@@"
        self._work = Path(work)
        self._verifier: _Verifier | None = None
        self._seen: list[str] = []
        self.inspect_timeout_s = INSPECT_TIMEOUT_S

    def preamble(self) -> str:
        code = KERNEL_SIDE.read_text(encoding="utf-8")
        return (code.replace("__NAME__", self._name).replace("__MARKER__", self._marker)
                .replace("__LIMIT__", str(EXPORT_LIMIT)))

    def tampering(self) -> list[str]:
        return list(self._seen) + (["the notebook binds " + ", ".join(sorted(self._shadow)) + (
            ", which the instructor's checks take from R and the solution's packages: they "
            "used those, not the notebook's")] if self._shadow else [])

    def close(self) -> None:
        if self._verifier is not None:
            self._verifier.kill()
            self._verifier = None

    def test(self, code: str, timeout_s: float, kernel: Any, live: bool = False,
             clean: dict[str, Any] | None = None) -> dict[str, Any]:
        started = time.perf_counter()
        outcome, status, detail, note = "ok", "unreliable", "", ""
        try:
            got = self._session({"op": "test", "code": code, "max": MAX_DETAIL, "live": live,
                                 "clean": self._clean if clean is None else clean},
                                kernel, timeout_s)
            self._shadow.update(str(n) for n in got.get("shadowed") or ())
            status, detail, note = (str(got.get(k) or "") for k in ("status", "detail", "note"))
            if status not in ("passed", "failed", "unreliable"):
                status, detail = "unreliable", f"the verifier failed: {detail or status}"
            gone = got.get("deleted") if live and status != "unreliable" else None
            if gone:
                self._forget([str(n) for n in gone] if isinstance(gone, list) else [], kernel)
        except _Failure as exc:
            outcome, status, detail = exc.outcome, exc.status, exc.detail
        seconds = round(time.perf_counter() - started, 3)
        log.info("R test: %s (%s) in %.2f s", status, outcome, seconds)
        return {"outcome": outcome, "status": status, "detail": detail[:MAX_DETAIL],
                "note": note, "seconds": seconds}

    def inspect(self, names: list[str], kernel: Any) -> tuple[list[dict[str, Any]], str]:
        request = {"op": "inspect", "names": list(names), "max_cells": MAX_CELLS,
                   "head": HEAD_ROWS, "clean": self._clean}
        try:
            got = self._session(request, kernel, self.inspect_timeout_s)
        except _Failure as exc:
            return [], f"not inspected: {exc.detail}"
        self._shadow.update(str(n) for n in got.get("shadowed") or ())
        summaries = got.get("summaries")
        if not isinstance(summaries, list):
            return [], f"not inspected: the verifier failed ({got.get('detail', '')})"
        return summaries, ""

    # -- one request to the verifier, and the kernel exchanges it asks for ------------
    def _session(self, request: dict[str, Any], kernel: Any, limit_s: float) -> dict[str, Any]:
        if self._verifier is None or self._verifier.proc.poll() is not None:
            self.close()
            try:
                self._verifier = _Verifier(self._work)
            except (OSError, TimeoutError) as exc:
                raise _Failure("ok", "unreliable", f"the verifier did not start ({exc!r})") from exc
        verifier, token = self._verifier, secrets.token_hex(12)
        deadline = time.monotonic() + limit_s
        failure: _Failure | None = None
        try:
            verifier.send({**request, "token": token})
            while True:
                msg = verifier.receive(deadline + GRACE_S)
                if msg.get("token") != token:
                    self._saw(f"a message the verifier did not send ({str(msg)[:80]})")
                    raise _Failure("ok", "unreliable", "a message the verifier did not send")
                if msg.get("op") == "result":
                    if failure is not None:
                        raise failure
                    return msg
                reply: dict[str, Any] = {"op": "abort"}
                if failure is None:
                    try:
                        reply = self._exchange(msg, kernel, deadline)
                    except _Failure as exc:
                        failure = exc
                verifier.send(reply)
        except TimeoutError:
            self.close()
            raise _Failure("timeout", "failed", f"did not finish within {limit_s:g} s") from None
        except _Failure:
            if verifier.proc.poll() is not None:
                self.close()
            raise

    def _exchange(self, msg: dict[str, Any], kernel: Any, deadline: float) -> dict[str, Any]:
        """Run the verifier's ``export`` or ``call`` request in the kernel; its reply."""
        op, left = msg.get("op"), deadline - time.monotonic()
        canary, number = secrets.token_hex(8), secrets.randbelow(10**9) / 1024
        head = [op, canary, repr(number)]
        if op == "export":
            what = "reading the notebook's values"
            fields = [_hex(f) for f in (*head, "1" if msg.get("describe") else "0",
                                        *map(str, msg.get("names") or []))]
        elif op == "call" and HEX.fullmatch(str(msg.get("args"))):
            what = f"{msg.get('name')}()"
            fields = [_hex(f) for f in (*head, str(msg.get("name")))] + [f'"{msg["args"]}"']
            fields += [_hex(str(d)) for d in msg.get("deleted") or []]
        else:
            raise _Failure("ok", "unreliable", f"the verifier asked for {op!r}")
        if left <= 0:
            raise _Failure("timeout", "failed", f"no time was left for {what}")
        got = kernel(f"{self._name}({', '.join(fields)})", left)
        if got.get("outcome") == "timeout":
            raise _Failure("timeout", "failed", f"{what} did not finish within {left:.3g} s")
        if got.get("outcome") == "dead":
            raise _Failure("dead", "failed", f"the kernel died during {what}")
        data = self._line(str(got.get("text", "")), str(got.get("error", "")), what)
        try:
            return self._reply(op, data, canary, number, len(msg.get("names") or []))
        except (ValueError, KeyError, TypeError, IndexError, RecursionError) as exc:
            raise _Failure("ok", "unreliable", f"unreadable data from the kernel ({exc})") from exc

    def _forget(self, names: list[str], kernel: Any) -> None:
        """A live test's deletions, made in the kernel by the bound closure."""
        canary, number = secrets.token_hex(8), secrets.randbelow(10**9) / 1024
        fields = [_hex(f) for f in ("forget", canary, repr(number), *names)]
        got = kernel(f"{self._name}({', '.join(fields)})", FORGET_TIMEOUT_S)
        if got.get("outcome") != "ok":
            raise _Failure(str(got.get("outcome")), "failed",
                           "the kernel stopped while the test's deletions were made")
        what = "the test's deletions"
        self._reply("forget", self._line(str(got.get("text", "")), str(got.get("error", "")),
                                         what), canary, number, 0)

    def _line(self, text: str, error: str, what: str) -> dict[str, Any]:
        lines = [ln for ln in text.split("\n") if self._marker in ln]
        if len(lines) != 1:
            why = "never arrived" if not lines else f"arrived {len(lines)} times"
            self._saw(f"the kernel's data line for {what} {why}" + (f" ({error})" if error else ""))
            raise _Failure("ok", "unreliable", f"the data for {what} {why}: cannot be trusted")
        try:
            data = json.loads(lines[0][lines[0].index(self._marker) + len(self._marker):])
        except ValueError:
            data = None
        if not isinstance(data, dict) or data.get("aborted"):
            self._saw(f"the kernel's data for {what} was cut short")
            raise _Failure("ok", "unreliable", f"the data for {what} was cut short")
        if "failed" in data:
            reason = " ".join(_strings(data["failed"]))
            raise _Failure("ok", "unreliable", f"the kernel could not do {what}: {reason}")
        return data

    def _reply(self, op: str, data: dict[str, Any], canary: str, number: float,
               wanted: int) -> dict[str, Any]:
        echo = data["canary"]
        if _texts(echo[0]) != ([canary], []) or echo[1].get("v") != [number] or len(echo[1]) != 2:
            self._saw("a canary came back wrong: the kernel's export is not ours")
            raise _Failure("ok", "unreliable", "a canary came back wrong")
        for name in _strings(data["replaced"]):
            self._saw(f"the notebook replaced {name}")
        bound = _strings(data["bound"])
        if bound:
            raise _Failure("ok", "unreliable",
                           "the notebook replaced what the export uses: " + ", ".join(bound))
        if op == "forget":
            return {}
        if op == "export":
            if len(data["values"]) != wanted:
                raise ValueError("not one value per name")
            return {"op": "data", "values": [_plain(v) for v in data["values"]],
                    "packages": _strings(data["packages"]), "loaded": _strings(data["loaded"])}
        return {"op": "value", "value": _plain(data["value"]),
                **{k: _strings(data[k]) for k in ("error", "printed", "messages", "warnings")}}

    def _saw(self, what: str) -> None:
        if what not in self._seen:
            log.warning("R bridge: %s", what)
            self._seen.append(what)
