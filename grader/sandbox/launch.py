"""Starting one run's runner in bubblewrap, and holding it to its time from outside.

``launch`` starts ``runner.py`` inside the sandbox (``grader.sandbox.view``), in the run's
cgroup with its rlimits (``grader.sandbox.limits``), and reads its events from a pipe.
The spec (the notebook's path, the limits, the instructor's tests) reaches the runner
through another pipe, read once by the runner as root before any uid of the run's
exists: it is in no file, so no process of the student's can open it.

With two uids of its own (the grader is root), the runner splits into the warden and the
supervisor (``warden.py``): the student's kernel runs as the kernel uid, the supervisor
(nbclient and the verifiers) as the supervisor uid, so the kernel can neither see, signal
nor trace what judges it.

Time is enforced here, outside every process of the run: the runner announces each
phase's bound before it starts it (``{"event": "expect", "within": seconds}``: a cell, a
test, the inspection, a replay), and the whole sandbox is killed as soon as a bound
passes without the next announcement, or when the run's total (every limit summed) is
spent. A runner that is frozen or stuck therefore costs its phase's bound, never more.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader.errors import SandboxError
from grader.sandbox.cgroup import RunCgroup
from grader.sandbox.limits import SandboxUser, limiter, run_memory_mb
from grader.sandbox.view import sandbox_env

if TYPE_CHECKING:
    from grader.packages import RunEnv
    from grader.sandbox.layout import Layout

__all__ = ["FIRST_EVENT_S", "Outcome", "launch"]

log = logging.getLogger(__name__)

RUNNER = Path(__file__).resolve().with_name("runner.py")
FIRST_EVENT_S = 90  # bubblewrap, the interpreter and the kernel's start, before any bound
SLACK_S = 15  # a phase's bound plus this, before the sandbox is killed
SANDBOX_PROCESSES = 16  # bubblewrap's, the warden's and the supervisor's, in the cgroup too


@dataclass
class Outcome:
    events: list[dict[str, Any]]
    killed: bool  # from outside: a phase's bound or the run's total passed
    nproc: int  # RLIMIT_NPROC set
    cgroup: str  # what the run's cgroup was ("" without one)
    refused_forks: int  # counted by the cgroup
    oom_kills: int = 0  # processes the cgroup's memory bound killed
    why_killed: str = ""  # which bound passed

    def containment(self, user: SandboxUser, supervisor: SandboxUser | None,
                    max_processes: int) -> str:
        """What bounded the run's processes, as the runner saw it from inside."""
        me = next((e for e in self.events if e.get("event") == "start"), {})
        if user.dedicated and me.get("cap_eff") == 0 and (
                me.get("uid") == (supervisor.uid if supervisor else user.uid)):
            text = (f"student code ran as uid {user.uid}, reserved for this run, without "
                    f"capabilities: at most {self.nproc} processes and threads (RLIMIT_NPROC)")
            if supervisor is not None:
                text += (f"; the notebook's runner and the checks' verifiers ran as uid "
                         f"{supervisor.uid}, which the student's code cannot see, signal or "
                         "trace")
        elif os.geteuid() == 0:
            text = ("the grader runs as root and student code did not run as a uid of its own:"
                    " the kernel exempts it from the process limit")
        else:
            text = (f"student code ran as the grader's user: at most {self.nproc} processes "
                    f"and threads of that user (RLIMIT_NPROC, {max_processes} on top of "
                    "its own); the checks' verifiers share that user")
        if self.cgroup:
            text += f"; {self.cgroup}"
        if self.refused_forks:
            text += f"; the process limit refused {self.refused_forks} forks"
        return text


def _environment(env: RunEnv | None) -> dict[str, str]:
    """The runner's environment: the sandbox's, the assignment's R library first."""
    out = sandbox_env()
    if env is not None and env.r_library is not None:
        out["R_LIBS"] = os.pathsep.join(p for p in (str(env.r_library), out.get("R_LIBS", ""))
                                        if p)
    return out


class _Watch:
    """The runner's events as they come, and the bound of the phase it is in."""

    def __init__(self, fd: int) -> None:
        self.events: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.deadline = time.monotonic() + FIRST_EVENT_S
        self.phase = "the sandbox's start"
        self.thread = threading.Thread(target=self._read, args=(fd,), daemon=True)

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as stream:
            for line in stream:
                try:
                    event = json.loads(line)
                except ValueError:
                    log.warning("unreadable event from the sandbox runner: %r", line[:200])
                    continue
                if not isinstance(event, dict):
                    continue
                if event.get("event") == "expect":
                    within = float(event.get("within") or 0)
                    with self.lock:
                        self.deadline = time.monotonic() + max(1.0, within) + SLACK_S
                        self.phase = str(event.get("phase", ""))[:200]
                    continue
                self.events.append(event)

    def overdue(self) -> str:
        with self.lock:
            if time.monotonic() > self.deadline:
                return self.phase or "a phase of the run"
        return ""


def _send(fd: int, data: bytes) -> None:
    """Write the spec into its pipe and close it (a thread: the pipe may be smaller)."""
    def write() -> None:
        try:
            with os.fdopen(fd, "wb") as pipe:
                pipe.write(data)
        except OSError as exc:  # the runner ended before reading it: its events say why
            log.warning("the sandbox runner did not read its spec: %s", exc)
    threading.Thread(target=write, daemon=True).start()


def launch(layout: Layout, argv_prefix: list[str], spec: dict[str, Any], python: str,
           users: tuple[SandboxUser, SandboxUser | None], switch: bool, memory_mb: int,
           max_file_mb: int, max_processes: int, total_s: float,
           env: RunEnv | None = None) -> Outcome:
    """Start the runner with ``spec``; its events, and how its processes were bounded."""
    user, supervisor = users
    events_read, events_write = os.pipe()
    spec_read, spec_write = os.pipe()
    spec = {**spec, "events_fd": events_write}
    options = ["--user", f"{supervisor.uid}:{supervisor.gid}", "--kernel-user",
               f"{user.uid}:{user.gid}"] if switch and supervisor is not None else (
        ["--user", f"{user.uid}:{user.gid}"] if switch else [])
    argv = [*argv_prefix, python, "-I", str(RUNNER), f"fd:{spec_read}", *options]
    watch = _Watch(events_read)
    cgroup = RunCgroup.create(max_processes + SANDBOX_PROCESSES,
                              memory_mb=run_memory_mb(memory_mb))
    nproc = user.nproc(max_processes)
    preexec = limiter(memory_mb, max_file_mb, nproc, int(total_s),
                      cgroup.join if cgroup.folders else None)
    why = ""
    # the runner's log lives outside the work folder, which the student's code may rewrite
    with tempfile.TemporaryFile() as runner_log:
        try:
            try:
                proc = subprocess.Popen(
                    argv, cwd=layout.cwd if not switch else "/", env=_environment(env),
                    stdin=subprocess.DEVNULL, stdout=runner_log, stderr=subprocess.STDOUT,
                    pass_fds=(events_write, spec_read), preexec_fn=preexec,
                    start_new_session=True)
            except (OSError, subprocess.SubprocessError) as exc:
                for fd in (events_read, spec_write):
                    os.close(fd)
                raise SandboxError(f"cannot start the sandbox runner: {exc}") from exc
            finally:
                os.close(events_write)
                os.close(spec_read)
            _send(spec_write, json.dumps(spec).encode("utf-8"))
            watch.thread.start()
            ends = time.monotonic() + total_s
            while proc.poll() is None:
                overdue = watch.overdue()
                if overdue or time.monotonic() > ends:
                    why = (f"{overdue} went past its time limit" if overdue else
                           f"the run's total time ({total_s:.0f} s) was spent")
                    log.warning("killing the sandbox of %s: %s", layout.work.name, why)
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
                    break
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=0.25)
            watch.thread.join(timeout=30)
            refused, described, oom = (cgroup.refused_forks(), cgroup.describe(),
                                       cgroup.oom_kills())
        finally:
            cgroup.close()
        if not any(e.get("event") in ("start", "fatal") for e in watch.events) and not why:
            runner_log.seek(0)
            tail = runner_log.read().decode("utf-8", errors="replace").strip()[-1000:]
            raise SandboxError(f"the sandbox runner exited with {proc.returncode} before the "
                               f"kernel started: {tail}")
    return Outcome(watch.events, bool(why), nproc, described, refused, oom, why)


def python_for(env: RunEnv | None) -> str:
    return str(env.python) if env and env.python else sys.executable
