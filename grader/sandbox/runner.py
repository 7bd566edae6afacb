"""Runs one notebook inside the sandbox: nbclient and its kernel together.

    python -I grader/sandbox/runner.py SPEC_JSON [--user UID:GID]   (as execution.py does)
    python -m grader.sandbox.runner SPEC_JSON          (the same, by hand)

With ``--user`` (the grader is root) the runner becomes that uid and gid before anything
else, even before reading the spec: the work folder is the uid's, mode 0700, and root in
the sandbox has no capability but CAP_SETUID and CAP_SETGID.

The spec (written by ``grader.sandbox.execution``) names the notebook file, the kernel and
its ``language``, the working directory, the timeouts, the names to ``inspect`` after the
last cell, the ``probe`` to run before the first cell and after the last
(``grader.sandbox.tamper``), and ``events_fd``: a pipe to the grader outside the sandbox.

Values and tests are judged here, never in the kernel (``grader.sandbox.bridge``): the
language's bridge (``pyverify.py``, ``rverify.py``, loaded by path) binds its kernel side
in a hidden preamble cell before the student's first cell, asks the kernel for data only
and computes every summary and verdict itself. Events, one JSON object a line, as they
happen (so that everything done before a kill is kept):

    {"event": "start", "kernel": ..., "uid": ..., "gid": ..., "cap_eff": ..., ...}
    {"event": "probe", "when": "before", "text": <its stdout>, "error": ...}
    {"event": "cell", "index": 3, "cell_id": ..., "ok": ..., "error": ..., "outputs": [...],
     "flooded": [<stream names past MAX_STREAM>], "seconds": ...}
    {"event": "stop", "reason": "timeout" | "dead" | "total" | "unresponsive"}
                                  (unresponsive: after a timeout, the kernel no longer
                                   answers a ping; the inspection and tests are not made)
    {"event": "probe", "when": "after", ...}
    {"event": "bridge", "error": ...}          (the preamble failed: nothing can be judged)
    {"event": "inspect", "values": [<summary>, ...], "error": ...}
    {"event": "test", "id": ..., "outcome": "ok" | "timeout" | "dead" | "not run",
     "status": "passed" | "failed" | "unreliable", "detail": ..., "note": ...,
     "error": ..., "seconds": ..., "timeout_s": ...}    (one per test; a test with a
                                    position comes right after the "cell" event of its cell)
    {"event": "replay", "after": <test id>, "within": <mid-notebook>, "error": ...}
    {"event": "tampering", "found": [...]}    (what the bridge saw of the notebook's doing)
    {"event": "done"}          or   {"event": "fatal", "error": ...}

The ``tests`` (``grader.sandbox.judged_tests``) are run by ``runner_verdicts.py``: a test with a
position (``after``) right after the first code cell holding its text, the others after
the notebook. Each has its own time limit. After a test that times out, a ``ping`` cell
must answer within its PING_TIMEOUT_S; when it does not, or the test killed the kernel, the
kernel is replaced and the notebook run again (after the preamble) for the cells and
tests after it, while ``replay_budget_s`` lasts (else they are "not run").

A cell's status is the kernel's execute reply (``status``, ``ename``, ``evalue``), which
a replaced ``showtraceback`` does not change, though it silences the error output; a
cell whose reply says "ok" but whose outputs hold an error (a reply rewritten from a
``post_run_cell`` callback) failed too.

Before the kernel starts, the runner points HOME and the Jupyter, XDG and matplotlib
folders at the work folder (everything else is read-only) and limits BLAS/OpenMP to one
thread each. It imports nothing from ``grader`` (it runs as ``python -I`` on this file,
outside the package), only nbformat, nbclient and its sibling bridge files, by path.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import os
import secrets
import sys
import time
import types
from pathlib import Path
from typing import IO, Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

INSPECT_TIMEOUT_S = 60
PROBE_TIMEOUT_S = 20
VERIFIER_START_S = 60  # the R verifier's start, on top of a test's or the inspection's time
INTERRUPT_S = 30  # a cell past its time: nbclient's interrupt and the kernel's answer
SHUTDOWN_S = 30
PING_S = 10  # a kernel that does not answer a ping this soon after a timeout is given up
PINGS = {"python": "pass", "r": "invisible(NULL)"}
TIMEOUT = "CellTimeoutError"


def _sibling(name: str) -> Any:
    """A file beside this one, loaded by path (the runner is not in a package here)."""
    if f"_grader_sandbox_{name}" in sys.modules:
        return sys.modules[f"_grader_sandbox_{name}"]
    spec = importlib.util.spec_from_file_location(f"_grader_sandbox_{name}",
                                                  Path(__file__).with_name(f"{name}.py"))
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[spec.name] = module  # type: ignore[union-attr]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


_io = _sibling("runner_io")
_Client, normalise, merged_streams = _io.Client, _io.normalise, _io.merged_streams
reply_error, first_error, _text, MAX_TEXT = _io.reply_error, _io.first_error, _io.text, _io.MAX_TEXT


def run(spec: dict[str, Any], sink: IO[str], warden: Any = None) -> int:
    """Run the spec's notebook, writing events to ``sink``. With ``warden`` the kernel is
    started as the kernel uid by the warden (``runner_kernel``), and this process keeps
    its own folders; without, the kernel is this process's child, of its uid."""
    def emit(**event: Any) -> None:
        sink.write(json.dumps(event) + "\n")
        sink.flush()

    def expect(phase: str, within: float) -> None:
        """Say the next phase's bound: the grader kills the sandbox when it passes."""
        emit(event="expect", phase=phase, within=round(float(within), 3))

    work = Path(spec["work"]) if spec.get("work") else None
    kernel_env = _sibling("runner_os").kernel_environment(work) if work else {}
    if warden is None:
        os.environ.update(kernel_env)
    else:
        os.environ.update(_sibling("runner_os").supervisor_environment(
            Path(spec["supervisor_dir"])))
        _sibling("runner_kernel").configure(warden, kernel_env, kernel_env.get(
            "JUPYTER_RUNTIME_DIR", ""))
    nb = nbformat.reads(Path(spec["notebook"]).read_text(encoding="utf-8"), as_version=4)
    # On a timeout nbclient interrupts the kernel and answers with this error (rather than
    # raising CellTimeoutError, which leaves a task behind that swallows later output).
    client = _Client(
        nb,
        kernel_name=spec["kernel"],
        timeout=spec["cell_timeout_s"],
        allow_errors=True,
        record_timing=False,
        interrupt_on_timeout=True,
        error_on_timeout={"ename": TIMEOUT, "evalue": "", "traceback": []},
        startup_timeout=spec.get("startup_timeout_s", 60),
        # The sandbox is thrown away after the run: no need to wait for a polite exit,
        # nor for IPython to set up a history database nobody will read.
        shutdown_kernel="immediate",
        extra_arguments=(["--HistoryManager.enabled=False"]
                         if spec["kernel"].startswith("python") else []),
        resources={"metadata": {"path": spec["cwd"]}},
        **({"kernel_manager_class": _sibling("runner_kernel").WardenKernelManager}
           if warden is not None else {}),
    )
    replies: dict[int, Any] = {}
    client.on_cell_executed = lambda cell, cell_index, execute_reply: replies.update(
        {cell_index: execute_reply})
    probe = spec.get("probe") or ""
    bridge = _bridge(spec) if spec.get("inspect") or spec.get("tests") else None
    try:
        with contextlib.ExitStack() as kernel:
            expect("the kernel's start", spec.get("startup_timeout_s", 60) + PROBE_TIMEOUT_S)
            kernel.enter_context(client.setup_kernel())
            emit(event="start", kernel=spec["kernel"], **_sibling("runner_os").identity())
            if bridge is not None:
                kernel.callback(bridge.close)
                bound = _hidden(client, nb, bridge.preamble(), replies)
                if bound["error"]:
                    emit(event="bridge", error=bound["error"])
            if probe:
                emit(event="probe", when="before", **_hidden(client, nb, probe, replies))
            tests = _sibling("runner_verdicts").Tests(
                _OPS, client, nb, spec, bridge, replies, emit, kernel) if (
                bridge is not None and spec.get("tests")) else None
            started = time.monotonic()
            deadline = started + spec["total_timeout_s"]  # kernel start-up not counted
            stop = _run_cells(client, nb, spec, deadline, replies, emit,
                              tests.at if tests is not None else None)
            ran_s = time.monotonic() - started - (tests.spent if tests is not None else 0.0)
            if stop:
                emit(event="stop", reason=stop)
            if stop in ("timeout", "total") and not _answers(client, nb, spec, replies, expect):
                stop = "unresponsive"  # stopped, or deaf to the interrupt: nothing more to ask
                emit(event="stop", reason=stop)
            if probe and stop not in ("dead", "unresponsive"):
                expect("the probe after the notebook", PROBE_TIMEOUT_S)
                emit(event="probe", when="after", **_hidden(client, nb, probe, replies))
            if bridge is not None and spec.get("inspect"):
                expect("the inspection of the notebook's values",
                       INSPECT_TIMEOUT_S + VERIFIER_START_S)
                _inspect(client, nb, bridge, spec["inspect"], stop, replies, emit)
            if tests is not None:
                tests.rest(stop, ran_s)
            if bridge is not None:
                emit(event="tampering", found=bridge.tampering())
            expect("the kernel's shutdown", SHUTDOWN_S)
    except Exception as exc:
        tail = _sibling("runner_kernel").output_tail() if warden is not None else ""
        emit(event="fatal", error=f"{type(exc).__name__}: {exc}" + (
            f" (the kernel wrote: {tail[-1500:]})" if tail else ""))
        raise
    emit(event="done")
    return 0


def _timed_out(replies: dict[int, Any], index: int) -> bool:
    reply = replies.get(index) or {}
    return reply.get("content", {}).get("ename") == TIMEOUT


def _run_cells(client: _Client, nb: Any, spec: dict[str, Any], deadline: float,
               replies: dict[int, Any], emit: Any, after: Any = None,
               upto: int | None = None) -> str:
    """Run the code cells (up to cell ``upto`` when given), calling ``after(index)`` after
    each (the tests due there: their time is not the notebook's); "" or why it stopped."""
    for index, cell in enumerate(list(nb.cells)[:None if upto is None else upto + 1]):
        if cell.cell_type != "code":
            continue
        remaining = deadline - time.monotonic()
        if remaining <= 1:
            return "total"
        client.timeout = max(1, math.ceil(min(spec["cell_timeout_s"], remaining)))
        emit(event="expect", phase=f"cell {index}", within=client.timeout + INTERRUPT_S)
        started, error, stop = time.perf_counter(), "", ""
        cell.outputs = []  # never report the student's stored outputs as fresh ones
        client.flooded, client.sent = set(), {}
        try:
            client.execute_cell(cell, index)
            if _timed_out(replies, index):
                error = f"{TIMEOUT}: the cell did not finish within {client.timeout} s"
                stop = "timeout" if client.timeout >= spec["cell_timeout_s"] else "total"
        except DeadKernelError:
            error = "DeadKernelError: the kernel died (memory, file size or CPU limit?)"
            stop = "dead"
        # the reply decides; an error output still counts when a patched kernel replies "ok"
        error = error or reply_error(replies.get(index)) or first_error(cell.get("outputs", []))
        outputs = [normalise(o) for o in merged_streams(cell.get("outputs", []))]
        emit(
            event="cell",
            index=index,
            cell_id=cell.get("id") or f"cell-{index}",
            ok=not error,
            error=error,
            outputs=outputs,
            flooded=sorted(client.flooded),
            seconds=round(time.perf_counter() - started, 3),
        )
        if stop:
            return stop
        if after is not None:
            began = time.monotonic()
            stop = after(index)
            deadline += time.monotonic() - began
            if stop:
                return stop
    return ""


def _cell(client: NotebookClient, nb: Any, code: str, timeout: float,
          replies: dict[int, Any], keep: int = MAX_TEXT) -> dict[str, Any]:
    """Run ``code`` as a cell the notebook does not keep: how it ended ("ok", "timeout",
    "dead"), its stdout (the end of it, where a harness's result line is) and error."""
    cell = nbformat.v4.new_code_cell(code)
    nb.cells.append(cell)
    index = len(nb.cells) - 1
    client.timeout = max(1, math.ceil(timeout))
    started, outcome = time.perf_counter(), "ok"
    try:
        client.execute_cell(cell, index, store_history=False)
        outcome = "timeout" if _timed_out(replies, index) else "ok"
    except DeadKernelError:
        outcome = "dead"
    finally:
        nb.cells.pop()
    outputs = cell.get("outputs", [])
    text = "".join(_text(o.get("text"), sys.maxsize) for o in outputs
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")
    error = reply_error(replies.pop(index, None))
    return {"outcome": outcome, "text": text[-keep:], "seconds":
            round(time.perf_counter() - started, 3),
            "error": first_error(outputs) if error is None else error}


def _answers(client: NotebookClient, nb: Any, spec: dict[str, Any], replies: dict[int, Any],
             expect: Any) -> bool:
    """Whether the kernel still answers (a cell past its time may have left it stopped
    or deaf to the interrupt): a ``ping`` cell within PING_S."""
    expect("a check that the kernel still answers", PING_S)
    return _cell(client, nb, spec.get("ping") or PINGS.get(spec.get("language", ""), "1"),
                 PING_S, replies)["outcome"] == "ok"


def _hidden(client: NotebookClient, nb: Any, code: str,
            replies: dict[int, Any]) -> dict[str, str]:
    """Run ``code`` as a cell the notebook does not keep: its stdout and error."""
    got = _cell(client, nb, code, PROBE_TIMEOUT_S, replies)
    if got["outcome"] == "dead":
        return {"text": "", "error": "DeadKernelError: the kernel died"}
    if got["outcome"] == "timeout":
        return {"text": "", "error": f"{TIMEOUT}: no answer in {PROBE_TIMEOUT_S} s"}
    return {"text": got["text"], "error": got["error"]}


def _bridge(spec: dict[str, Any]) -> Any:
    """The verifier of the spec's language (``pyverify`` or ``rverify``, by path)."""
    name = {"python": "pyverify", "r": "rverify"}.get(spec.get("language", ""))
    if name is None:
        raise ValueError(f"no verifier for language {spec.get('language')!r}")
    module = _sibling(name)
    cls = module.PythonBridge if name == "pyverify" else module.RBridge
    return cls(secrets.token_hex(8), spec.get("work", ""), clean=spec.get("clean"))


def _asker(client: NotebookClient, nb: Any, replies: dict[int, Any]) -> Any:
    """The ``KernelCall`` a bridge uses: a hidden cell, its whole stdout kept."""
    def ask(code: str, timeout: float) -> dict[str, Any]:
        client.capped = False
        try:
            return _cell(client, nb, code, timeout, replies, sys.maxsize)
        finally:
            client.capped = True
    return ask


def _inspect(client: NotebookClient, nb: Any, bridge: Any, names: list[str], stop: str,
             replies: dict[int, Any], emit: Any) -> None:
    if stop in ("dead", "unresponsive"):
        emit(event="inspect", values=[], error="the kernel died before inspection"
             if stop == "dead" else "the kernel stopped answering before inspection")
        return
    try:
        values, error = bridge.inspect(list(names), _asker(client, nb, replies))
    except Exception as exc:  # the verifier itself broke: nothing inspected, and why
        values, error = [], f"the verifier failed: {type(exc).__name__}: {exc}"
    emit(event="inspect", values=values, error=error)


_OPS = types.SimpleNamespace(cell=_cell, hidden=_hidden, asker=_asker, run_cells=_run_cells)


def _events(spec: dict[str, Any], warden: Any = None) -> int:
    fd = spec.get("events_fd")
    if fd is None:
        return run(spec, sys.stdout, warden)
    os.set_inheritable(fd, False)  # the kernel must not inherit the pipe
    with os.fdopen(fd, "w", encoding="utf-8") as sink:
        return run(spec, sink, warden)


def main(argv: list[str]) -> int:
    process, start = _sibling("runner_os"), _sibling("runner_start")
    options = start.options(argv)
    if options is None:
        sys.stderr.write("usage: python -m grader.sandbox.runner SPEC_JSON|fd:N "
                         "[--user UID:GID [--kernel-user UID:GID]]\n")
        return 2
    spec = start.read_spec(options["spec"])  # as root: before any uid of the run's
    if "--kernel-user" in options:
        return start.supervise(spec, start.ids(options["--user"]),
                               start.ids(options["--kernel-user"]), _events, process,
                               _sibling("warden"))
    if "--user" in options:
        process.become(*start.ids(options["--user"]))
    process.undumpable()
    os.chdir(spec["cwd"])
    return _events(spec)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
