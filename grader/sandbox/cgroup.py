"""A cgroup of the run's own, where this process may make one: a second bound on its
processes (``pids.max``, whatever the user), under the ``cpu`` controller the CPU share
of one process whatever its process count, so a fork bomb does not starve the runs
beside it, and under ``memory`` a bound on the memory of all the run's processes
together (v2 ``memory.max`` with ``memory.swap.max`` 0; v1 ``memory.limit_in_bytes``
and ``memory.memsw.limit_in_bytes``): four children of 1.5 GB each no longer add up to
6 GB where RLIMIT_AS bounds each one alone. The kernel's OOM kills in the group are
counted (``oom_kills``) and named by ``describe``.

Run groups are made inside this process's own cgroup, in each hierarchy that has the
controller (cgroup v1, or v2 where the controller is enabled for children), and named
``grader-run-<ns>-<pid>-<start>-<n>`` after their owner (``grader.sandbox.run_folders``): the
groups of a grader that is gone are emptied and removed by the next one. Nothing here
is required: where no group can be made, ``problems`` says why and the run goes on with
its rlimits.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
import re
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.sandbox.run_folders import Owner, process_alive, refuse_if_stopping

__all__ = ["RunCgroup", "kill_live_groups", "live_groups", "usable_controllers"]

log = logging.getLogger(__name__)

CONTROLLERS = ("pids", "cpu", "memory")
MIB = 1024 * 1024
EMPTY_WAIT_S = 10.0
_NAME = re.compile(r"^grader-run-(?P<ns>\d+)-(?P<pid>\d+)-(?P<start>\d+)-\d+$")
_counter = itertools.count()
_stale_lock = threading.Lock()
_stale_done: list[bool] = []
_live: dict[int, tuple[Path, ...]] = {}  # id(RunCgroup) -> its folders, until closed
_live_lock = threading.Lock()


def _relative(path: str, root: str) -> str | None:
    if root == "/":
        return path.lstrip("/")
    if path == root:
        return ""
    return path[len(root) + 1:] if path.startswith(root + "/") else None


@functools.cache
def _places() -> tuple[tuple[str, Path], ...]:
    """(controller, this process's cgroup folder) for each usable controller."""
    own: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else ["<v2>"]:
            own[name] = path
    places: dict[str, Path] = {}
    unified = None
    for line in Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines():
        left, _, right = line.partition(" - ")
        root, mountpoint = left.split()[3:5]
        fstype, _, options = right.split()[:3]
        for controller in CONTROLLERS:
            if fstype == "cgroup" and controller in options.split(",") and controller in own:
                rel = _relative(own[controller], root)
                if rel is not None:
                    places.setdefault(controller, Path(mountpoint, rel))
        if fstype == "cgroup2" and "<v2>" in own:
            rel = _relative(own["<v2>"], root)
            unified = Path(mountpoint, rel) if rel is not None else unified
    if unified is not None:
        for controller in CONTROLLERS:
            if controller not in places and _enabled(unified, controller):
                places[controller] = unified
    return tuple((c, p) for c, p in places.items() if os.access(p, os.W_OK))


def usable_controllers() -> tuple[str, ...]:
    """The controllers a run's cgroup gets here (none where no group can be made)."""
    return tuple(c for c, _ in _places())


def _enabled(folder: Path, controller: str) -> bool:
    """Whether children of a v2 ``folder`` get ``controller`` (enabling it if we may)."""
    try:
        if controller not in (folder / "cgroup.controllers").read_text().split():
            return False
        if controller in (folder / "cgroup.subtree_control").read_text().split():
            return True
        (folder / "cgroup.subtree_control").write_text(f"+{controller}")
        return True
    except OSError as exc:  # e.g. EBUSY: this cgroup holds processes itself
        log.info("cgroup v2 %s: cannot give children the %s controller (%s)", folder,
                 controller, exc)
        return False


def _members(folder: Path) -> list[int]:
    try:
        return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    except FileNotFoundError:
        return []


def _empty_and_remove(folder: Path) -> None:
    """Remove a run group once its processes are gone (killing any left: they are the
    run's own; they normally die with the sandbox's pid namespace)."""
    deadline = time.monotonic() + EMPTY_WAIT_S
    while (left := _members(folder)) and time.monotonic() < deadline:
        time.sleep(0.01)
    for pid in left:
        log.warning("killing process %d left in the run's cgroup %s", pid, folder)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for _ in range(100):
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # EBUSY while the killed processes exit
            time.sleep(0.05)
    log.warning("cannot remove the cgroup %s: it still holds processes", folder)


def remove_stale_groups() -> None:
    """Empty and remove the run groups whose grader is gone (once per process)."""
    with _stale_lock:
        if _stale_done:
            return
        _stale_done.append(True)
    me = Owner.me()
    for place in {p for _, p in _places()}:
        for entry in place.iterdir():
            tag = _NAME.match(entry.name)
            if tag and entry.is_dir() and int(tag["ns"]) == me.ns \
                    and not process_alive(int(tag["pid"]), int(tag["start"])):
                log.info("removing the cgroup %s of a grader that is gone", entry)
                _empty_and_remove(entry)


@dataclass
class RunCgroup:
    pids_max: int
    folders: dict[str, Path] = field(default_factory=dict)  # controller -> the run's group
    problems: list[str] = field(default_factory=list)
    memory_mb: int | None = None  # memory of all the run's processes together, once bound
    swap_off: bool = False  # the bound holds swap too

    @classmethod
    def create(cls, pids_max: int, memory_mb: int | None = None) -> RunCgroup:
        refuse_if_stopping()
        self = cls(pids_max)
        remove_stale_groups()
        name = f"grader-run-{Owner.me().tag}{next(_counter)}"
        for controller, place in _places():
            folder = place / name
            try:
                folder.mkdir(exist_ok=True)  # v2: one folder for every controller
                if controller == "pids":
                    (folder / "pids.max").write_text(str(pids_max))
            except OSError as exc:
                self.problems.append(f"no {controller} cgroup ({folder}: {exc})")
                continue
            self.folders[controller] = folder
        with _live_lock:
            _live[id(self)] = tuple(dict.fromkeys(self.folders.values()))
        if memory_mb is not None:
            self.bound_memory(memory_mb)
        if self.problems:
            log.info("the run's cgroup is partial: %s", "; ".join(self.problems))
        return self

    def bound_memory(self, memory_mb: int) -> bool:
        """Bound the memory (and swap, where the kernel counts it) of all the run's
        processes together; False without a memory group. Call it before ``join``."""
        folder = self.folders.get("memory")
        if folder is None or self.memory_mb == memory_mb:
            return folder is not None
        v2 = (folder / "memory.max").exists()
        limit, swap = (("memory.max", "memory.swap.max") if v2 else
                       ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"))
        try:
            (folder / limit).write_text(str(memory_mb * MIB))
            self.memory_mb = memory_mb
            if (folder / swap).exists():  # v1: memory and swap together, at the same bound
                (folder / swap).write_text("0" if v2 else str(memory_mb * MIB))
                self.swap_off = True
        except OSError as exc:
            self.problems.append(f"cannot bound the memory of the cgroup {folder}: {exc}")
            log.warning("%s", self.problems[-1])
        return self.memory_mb == memory_mb

    def oom_kills(self) -> int:
        """How many of the run's processes the kernel killed for want of memory in the
        group (v2 ``memory.events``, v1 ``memory.oom_control``), 0 without a group."""
        folder = self.folders.get("memory")
        if folder is None:
            return 0
        for name in ("memory.events", "memory.oom_control"):
            try:
                rows = dict(line.split() for line in (folder / name).read_text().splitlines()
                            if len(line.split()) == 2)
            except (OSError, ValueError):
                continue
            return int(rows.get("oom_kill", 0))
        return 0

    def join(self) -> None:
        """Move the calling process (the child before exec) into the run's groups."""
        pid = str(os.getpid()).encode()
        for folder in dict.fromkeys(self.folders.values()):
            fd = os.open(folder / "cgroup.procs", os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)

    def refused_forks(self) -> int:
        """How many forks ``pids.max`` refused (``pids.events``), 0 without a group."""
        folder = self.folders.get("pids")
        if folder is None:
            return 0
        try:
            events = dict(line.split() for line in (folder / "pids.events").read_text()
                          .splitlines() if line.strip())
        except (OSError, ValueError):
            return 0
        return int(events.get("max", 0))

    def describe(self) -> str:
        """The run's groups in words ("" without any); after the run, its OOM kills."""
        memory = "" if self.memory_mb is None else (
            f"at most {self.memory_mb} MB of memory for all its processes together"
            + (", no swap" if self.swap_off else ""))
        parts = [f"pids.max {self.pids_max}" if "pids" in self.folders else "",
                 "the CPU share of one process" if "cpu" in self.folders else "", memory]
        shown = "; ".join(p for p in parts if p)
        killed = self.oom_kills()
        if killed:
            shown += (f"; the memory limit killed {killed} process{'es' if killed > 1 else ''}"
                      " (out of memory)")
        return f"in a cgroup of its own ({shown})" if shown else ""

    def close(self) -> None:
        for folder in dict.fromkeys(self.folders.values()):
            _empty_and_remove(folder)
        self.folders.clear()
        with _live_lock:
            _live.pop(id(self), None)


def live_groups() -> list[Path]:
    """The run groups of this process not yet closed (that still exist)."""
    with _live_lock:
        folders = [f for group in _live.values() for f in group]
    return [f for f in folders if f.exists()]


def kill_live_groups() -> int:
    """Kill every process in the open run groups of this process; how many."""
    killed = 0
    for folder in live_groups():
        for pid in _members(folder):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
    return killed
