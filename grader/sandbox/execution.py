"""Layer 2's execution engine: run a notebook in a sandbox and inspect its variables.

nbclient and the kernel run together inside bubblewrap (``grader/sandbox/runner.py``),
with no network, private pid/ipc/uts namespaces and rlimits on memory, processes, file
size and CPU; only the run's work folder is writable. The parts:
- ``grader.sandbox.view``: the sandbox sees an allow-list of the host (system, runtimes,
  the work folder), never ``/home``, ``/root``, ``/work``, the grader's data or other runs;
- ``grader.sandbox.layout``: the assignment's data wherever the student's code names it;
- ``grader.sandbox.limits`` and ``grader.sandbox.cgroup``: as root, each run's code runs
  as a uid of its own (RLIMIT_NPROC then holds), in a cgroup of its own where one can be
  made; ``grader.sandbox.run_folders``: private run folders, stale ones removed;
- ``grader.sandbox.tamper``: a cell's status is the kernel's execute reply, and code
  that tampers with the executor's error reporting is reported (``tampering``);
- ``grader.sandbox.bridge``: values and the instructor's tests are judged by a verifier
  outside the kernel, from data the kernel exports (``ExecutionResult.variables`` and
  ``.tests``, each test with its own time limit); what the verifier saw of the notebook
  interfering with it is ``ExecutionResult.check_tampering``.
What applied to a run is written in ``ExecutionResult.notes``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat

from grader.errors import SandboxError
from grader.notebooks.load import strip_ansi
from grader.sandbox import inspect_code as scan
from grader.sandbox.check_tamper import check_findings
from grader.sandbox.clean_names import CleanNames
from grader.sandbox.inspect_code import VariableSummary
from grader.sandbox.judged_tests import InstructorTest, TestPlan, TestRun, read_tests, test_plan
from grader.sandbox.launch import RUNNER, Outcome, launch, python_for
from grader.sandbox.layout import Layout
from grader.sandbox.limits import NOTEBOOK, SUPERVISOR, SandboxUser, hand_over, reserve_user
from grader.sandbox.run_folders import make_run_folder
from grader.sandbox.tamper import probe_code, probe_findings, static_findings
from grader.sandbox.view import View, runtime_paths, write_identity
from grader.types import Evidence, Output

if TYPE_CHECKING:
    from grader.packages import RunEnv

__all__ = ["CellRun", "ExecLimits", "ExecutionResult", "InstructorTest", "TestRun",
           "VariableSummary", "execute_notebook", "kernel_available", "sandbox_available"]

log = logging.getLogger(__name__)

KERNELS = {"python": "python3", "r": "ir"}  # preferred kernel per language
BWRAP = shutil.which("bwrap")
# the runner's siblings it loads by path: the verifiers and what they share with the kernel
BRIDGE_FILES = tuple(RUNNER.with_name(n) for n in (
    "runner_os.py", "runner_io.py", "runner_verdicts.py", "bridge.py", "datacodec.py",
    "pykernel.py", "pysummary.py", "pyremote.py", "pyverify.py", "rverify.py", "rverify.R",
    "rkernel.R", "warden.py", "runner_kernel.py", "runner_start.py"))
REPO = RUNNER.parents[2]  # never visible inside the sandbox
GRACE_S = 90  # kernel start-up and inspection, on top of total_timeout_s


@dataclass(frozen=True)
class ExecLimits:
    cell_timeout_s: int = 60
    total_timeout_s: int = 600
    # address space of each process in the sandbox; with a cgroup, also the memory of all
    # its processes together (plus the runner's share, limits.run_memory_mb)
    memory_mb: int = 2048
    max_processes: int = 256  # processes and threads (as root: of the run's own uid)
    max_file_mb: int = 200  # largest file a process may write
    allow_unsandboxed: bool = False  # run without bubblewrap (limits only) when it is missing


@dataclass(frozen=True)
class CellRun:
    cell_id: str
    index: int  # position in the notebook (all cells counted)
    ok: bool
    error: str  # "" or "ename: evalue"
    outputs: tuple[Output, ...]
    seconds: float
    flooded: tuple[str, ...] = ()  # streams that sent more than the runner keeps (dropped)


@dataclass
class ExecutionResult:
    cells: list[CellRun]
    variables: dict[str, VariableSummary]  # one per name asked for, always
    kernel: str
    language: str
    seconds: float
    timed_out: bool
    sandboxed: bool
    error: str  # execution could not run at all: grade from stored outputs, and say so
    notes: list[str] = field(default_factory=list)
    # code that tampers with the executor's error reporting (static and as observed)
    tampering: list[Evidence] = field(default_factory=list)
    tests: dict[str, TestRun] = field(default_factory=dict)  # by InstructorTest.key
    # code that tampers with how values and tests reach the grader (static and as observed)
    check_tampering: list[Evidence] = field(default_factory=list)
    oom_kills: int = 0  # the run's processes killed by its memory bound (all together)


def kernel_available(language: str) -> bool:
    return _kernel_name(language.lower()) is not None


def sandbox_available() -> bool:
    return BWRAP is not None and _bwrap_works(BWRAP)


@functools.cache
def _bwrap_works(bwrap: str) -> bool:
    probe = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net",
             "--unshare-pid", "--die-with-parent", "--cap-drop", "ALL", "true"]
    try:
        subprocess.run(probe, capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        log.error("bubblewrap at %s cannot run: %s %s", bwrap, exc, getattr(exc, "stderr", ""))
        return False
    return True


def _kernel_name(language: str) -> str | None:
    from jupyter_client.kernelspec import KernelSpecManager
    specs = KernelSpecManager().get_all_specs()
    if KERNELS.get(language) in specs:
        return KERNELS[language]
    return next((name for name, s in sorted(specs.items())
                 if s["spec"].get("language", "").lower() == language), None)


def execute_notebook(nb: nbformat.NotebookNode, language: str, data: list[Path],
                     inspect: list[str], limits: ExecLimits = ExecLimits(),
                     workdir: Path | None = None,
                     tests: Sequence[InstructorTest] = (),
                     env: RunEnv | None = None,
                     clean: CleanNames | None = None) -> ExecutionResult:
    """Run ``nb`` in a fresh sandboxed kernel, then ``tests`` in it; never raises for a
    student's code. ``env``: the assignment's own packages (``grader.packages``): the
    kernel starts from its venv, its R library comes first. ``clean``: the names the
    value checks take from the grader, never from the notebook (``clean_names``)."""
    started, language, names = time.perf_counter(), language.lower(), list(dict.fromkeys(inspect))
    kernel, sandboxed, notes = _kernel_name(language) or "", sandbox_available(), []
    tampering = static_findings(nb.get("cells", []), language)
    checks_tampered = check_findings(nb.get("cells", []), language)
    plan = test_plan(language, tests)

    def failed(error: str) -> ExecutionResult:
        log.error("notebook not executed: %s", error)
        return ExecutionResult([], scan.missing(names, f"not executed: {error}"), kernel, language,
                               time.perf_counter() - started, False, sandboxed, error, notes,
                               tampering, {t.key: TestRun(t.key, "not run",
                                                          f"not executed: {error}")
                                           for t in tests}, checks_tampered)

    if not kernel:
        return failed(f"no Jupyter kernel for {language} (looked for {KERNELS.get(language)!r})")
    if not sandboxed and not limits.allow_unsandboxed:
        return failed("the sandbox (bubblewrap, `bwrap`) is missing or cannot run here: student "
                      "code was not run; install bubblewrap or allow unsandboxed execution")
    if not sandboxed:
        log.warning("running student code WITHOUT the sandbox: bubblewrap is unavailable")
        notes.append("ran WITHOUT the sandbox (bubblewrap unavailable): resource limits only, "
                     "no network or filesystem isolation")
    probe_marker = f"@@grader-probe-{uuid.uuid4().hex}@@"
    try:
        with contextlib.ExitStack() as held:
            user = held.enter_context(reserve_user() if sandboxed else _as_grader())
            # the runner and verifiers: a second uid of the run's own, when there is one
            supervisor = held.enter_context(reserve_user()) if user.dedicated else None
            work = make_run_folder(workdir)
            try:
                view = View((*runtime_paths(kernel, RUNNER), *(env.folders() if env else ()),
                             *(f for f in BRIDGE_FILES if f.exists())) if sandboxed else ())
                layout = Layout.prepare(work, nb, data, sandboxed, view)
                notes += layout.notes
                write_identity(layout.identity, user.uid, user.gid, work / "home")
                hand_over(work, user, keep=(layout.identity,), supervisor=supervisor)
                outcome = _run(layout, kernel, language, names,
                               probe_code(language, probe_marker), limits, sandboxed,
                               (user, supervisor), plan, env, clean)
            finally:
                if workdir is None:
                    shutil.rmtree(work, onerror=lambda *a: log.warning("cannot remove %s", a[1]))
    except (SandboxError, OSError) as exc:  # setting up the run failed: not the student's doing
        return failed(str(exc))
    notes.append(outcome.containment(user, supervisor, limits.max_processes))
    if outcome.why_killed:
        notes.append(f"the sandbox was killed from outside: {outcome.why_killed}")
    probes = {e.get("when"): e for e in outcome.events if e.get("event") == "probe"}
    tampering += probe_findings(probes.get("before"), probes.get("after"), probe_marker)
    runs: dict[str, TestRun] = {}
    if plan is not None:
        runs, faults = read_tests(plan, outcome.events)
        checks_tampered += faults
        notes += [f"{e['error']}" if e.get("error") else f"test {e.get('after')} stopped the "
                  "kernel: the notebook was run again in a fresh one for the "
                  f"{'cells and tests' if e.get('within') else 'tests'} after it"
                  for e in outcome.events if e.get("event") == "replay"]
    else:
        checks_tampered += [Evidence(None, None, str(f)) for e in outcome.events
                            if e.get("event") == "tampering" for f in e.get("found", ())]
    if tampering:
        log.warning("the notebook tampers with the executor: %s", [t.text for t in tampering])
    if checks_tampered:
        log.warning("the notebook tampers with the checks: %s",
                    [t.text for t in checks_tampered])
    result = _result(outcome, names, kernel, language, started, sandboxed, notes, tampering)
    result.tests = runs
    result.oom_kills = outcome.oom_kills
    result.check_tampering = list({t.text: t for t in checks_tampered}.values())
    return result


def _as_grader() -> contextlib.nullcontext[SandboxUser]:
    return contextlib.nullcontext(SandboxUser(os.getuid(), os.getgid(), dedicated=False))


def _result(outcome: Outcome, names: list[str], kernel: str, language: str,
            started: float, sandboxed: bool, notes: list[str],
            tampering: list[Evidence]) -> ExecutionResult:
    events, killed = outcome.events, outcome.killed
    kinds = {e.get("event"): e for e in events}
    cells = [CellRun(e["cell_id"], e["index"], e["ok"], strip_ansi(e["error"]),
                     tuple(Output(o["kind"], strip_ansi(o["text"]), tuple(o["mime"]), o["name"],
                                  tuple((m, t) for m, t in o.get("rich", ())))
                           for o in e["outputs"]), e["seconds"], tuple(e.get("flooded", ())))
             for e in events if e.get("event") == "cell"]
    stop, fatal = kinds.get("stop", {}).get("reason", ""), kinds.get("fatal", {}).get("error", "")
    error = "" if "start" in kinds else f"the kernel could not start: {fatal}"
    if killed or stop in ("dead", "unresponsive") or (not error and "done" not in kinds):
        notes.append("the run's time limit was reached: the sandbox was killed" if killed else
                     "the kernel died; later cells were not run" if stop == "dead" else
                     "the kernel stopped answering after a cell went past its time limit; "
                     "later cells, the inspection and the tests were not run"
                     if stop == "unresponsive" else
                     f"the run ended early, later cells did not run: {fatal or 'runner killed'}")
    got = kinds.get("inspect", {"error": error or "execution stopped"})
    bound = kinds.get("bridge", {}).get("error", "")
    variables = scan.read_summaries(got.get("values"), names, (
        f"the grader could not bind its checks in the kernel: {bound}" if bound
        else got.get("error", "")))
    seconds = round(time.perf_counter() - started, 3)
    log.info("ran %d cells in %.1f s (%s, sandboxed=%s)", len(cells), seconds, kernel, sandboxed)
    return ExecutionResult(cells, variables, kernel, language, seconds,
                           killed or stop in ("timeout", "total", "unresponsive"), sandboxed,
                           error, notes,
                           tampering)


def _run(layout: Layout, kernel: str, language: str, names: list[str], probe: str,
         limits: ExecLimits, sandboxed: bool, users: tuple[SandboxUser, SandboxUser | None],
         plan: TestPlan | None = None, env: RunEnv | None = None,
         clean: CleanNames | None = None) -> Outcome:
    """The runner's spec, and its run (``grader.sandbox.launch``)."""
    user, supervisor = users
    switch = sandboxed and user.dedicated
    spec = {"notebook": str(layout.work / NOTEBOOK), "kernel": kernel,
            "language": language, "inspect": names,
            "probe": probe, "work": str(layout.work), "cwd": str(layout.cwd),
            "supervisor_dir": str(layout.work / SUPERVISOR),
            "cell_timeout_s": limits.cell_timeout_s, "total_timeout_s": limits.total_timeout_s,
            **({"clean": clean.to_json()} if clean is not None else {})}
    # the tests' own limits, and one more run of the notebook should a test stop the kernel
    extra = math.ceil(plan.budget_s) + limits.total_timeout_s if plan is not None else 0
    if plan is not None:
        spec |= {"tests": list(plan.items), "ping": plan.ping,
                 "replay_budget_s": limits.total_timeout_s}
    prefix = layout.view.argv(str(BWRAP), layout.work, layout.cwd, layout.tops, layout.identity,
                              switch_user=switch,
                              two_users=switch and supervisor is not None) if sandboxed else []
    return launch(layout, prefix, spec, python_for(env), users, switch, limits.memory_mb,
                  limits.max_file_mb, limits.max_processes,
                  limits.total_timeout_s + GRACE_S + extra, env)
