"""Stopping every run of this process at once: the grader was told to stop (SIGTERM).

``stop_runs(why)`` marks the process as stopping and kills its sandboxes: each child
process running the runner (bubblewrap, or the runner itself without the sandbox) is
killed with its process group, and every process left in a run's cgroup. The runs then
end as a killed run does, and each removes its own run folder and cgroup. A run asked
for while stopping is refused (``refuse_if_stopping``, called where a run's folder and
cgroup are made: ``SandboxError``), and a reaper thread kills again until no run folder
of this process is left, so that a run started in the moment of the stop goes too.
``allow_runs`` lifts the stop (a process that grades again after stopping a batch).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from pathlib import Path

from grader.sandbox.cgroup import kill_live_groups, live_groups
from grader.sandbox.run_folders import allow_runs, live_run_folders, mark_stopping, stopping

__all__ = ["allow_runs", "stop_runs", "stopping", "wait_for_runs"]

log = logging.getLogger(__name__)

RUNNER = Path(__file__).resolve().with_name("runner.py")
REAP_S = 60.0  # how long the reaper keeps killing runs that were starting


def _runner_children() -> list[int]:
    """This process's children that run the sandbox runner (leaders of their group)."""
    me, runner, found = os.getpid(), str(RUNNER).encode(), []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text(encoding="ascii",
                                                             errors="replace")
            argv = Path(f"/proc/{entry.name}/cmdline").read_bytes().split(b"\0")
        except OSError:  # ended while we looked
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[1]) == me and runner in argv:
            found.append(int(entry.name))
    return found


def _kill_once() -> int:
    killed = 0
    for pid in _runner_children():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)  # the runner was started in a session of its own
            killed += 1
    return killed + kill_live_groups()


def stop_runs(why: str) -> int:
    """Stop this process's runs now (safe in a signal handler); how many were killed."""
    mark_stopping(why)
    killed = _kill_once()
    log.warning("stopping (%s): killed %d sandbox processes", why, killed)
    threading.Thread(target=_reap, name="stop-runs", daemon=True).start()
    return killed


def _reap() -> None:
    deadline = time.monotonic() + REAP_S
    while stopping() and time.monotonic() < deadline and (live_run_folders() or
                                                          live_groups()):
        _kill_once()
        time.sleep(0.1)


def wait_for_runs(timeout_s: float = REAP_S) -> list[Path]:
    """Wait until the runs of this process have removed their folders and cgroups; the
    run folders still there after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while (live_run_folders() or live_groups()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return live_run_folders()
