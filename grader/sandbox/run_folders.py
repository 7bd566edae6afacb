"""Run folders: private, tagged with their owner, and removed when the owner is gone.

Each run works in ``grader-run-<ns>-<pid>-<start>-<random>`` (mode 0700): ``ns`` is the
inode of the creating process's pid namespace, ``pid`` its id and ``start`` its start time
in clock ticks since boot (``/proc/<pid>/stat``), so a pid the system reused later is not
taken for the owner. A grader killed with SIGKILL cannot remove its folders (they hold a
student's notebook and data), so the first run of each grader process in a parent folder
removes the folders whose owner is gone; a folder of a live grader, of another pid
namespace, or in another format is left alone. The tag is the folder's own name, which
the student's code cannot change (the folder is the sandbox's mount point).
The folders this process made are listed (``live_run_folders``); once the process is
stopping (``mark_stopping``, by ``grader.sandbox.stopping``) no new one is made.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from grader.errors import SandboxError

__all__ = ["Owner", "allow_runs", "live_run_folders", "make_run_folder", "mark_stopping",
           "process_alive", "refuse_if_stopping", "remove_stale_runs", "stopping"]

log = logging.getLogger(__name__)

PREFIX = "grader-run-"
_TAGGED = re.compile(rf"^{PREFIX}(?P<ns>\d+)-(?P<pid>\d+)-(?P<start>\d+)-[A-Za-z0-9_]+$")
_cleaned: set[Path] = set()
_cleaning = threading.Lock()
_made: set[Path] = set()  # the run folders this process made (pruned once removed)
_why: list[str] = []  # why this process stops its runs (``grader.sandbox.stopping``)


def stopping() -> str:
    """Why this process is stopping its runs ("" when it is not)."""
    with _cleaning:
        return _why[0] if _why else ""


def mark_stopping(why: str) -> None:
    with _cleaning:
        if not _why:
            _why.append(why)


def allow_runs() -> None:
    """Lift a stop: runs may start again."""
    with _cleaning:
        _why.clear()


def refuse_if_stopping() -> None:
    if why := stopping():
        raise SandboxError(f"grading was stopped ({why}): the notebook was not run")


@dataclass(frozen=True)
class Owner:
    """A process as a run folder's tag names it: pid namespace, pid, start time."""

    ns: int
    pid: int
    start: int

    @staticmethod
    def me() -> Owner:
        return _owner(os.getpid())  # keyed by pid: a forked child is another owner

    @property
    def tag(self) -> str:
        return f"{self.ns}-{self.pid}-{self.start}-"


@functools.cache
def _owner(pid: int) -> Owner:
    start = process_start(pid)
    if start is None:
        raise SandboxError(f"cannot read this process's start time in /proc/{pid}/stat")
    return Owner(pid_namespace(), pid, start)


def pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError as exc:
        raise SandboxError(f"cannot read this process's pid namespace: {exc}") from exc


def process_start(pid: int) -> int | None:
    """The start time of ``pid`` (clock ticks since boot), or None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = stat[stat.rfind(")") + 2:].split()  # the name may hold spaces and parentheses
    return int(fields[19])  # field 22 of stat(5); fields[0] is field 3


def process_alive(pid: int, start: int) -> bool:
    return process_start(pid) == start


def make_run_folder(parent: Path | None) -> Path:
    """A new private run folder in ``parent`` (default: the temporary folder), after
    removing the stale ones there (once per parent and grader process)."""
    refuse_if_stopping()
    base = Path(parent) if parent is not None else Path(tempfile.gettempdir())
    base.mkdir(parents=True, exist_ok=True)
    remove_stale_runs(base)
    folder = Path(tempfile.mkdtemp(prefix=PREFIX + Owner.me().tag, dir=base))
    os.chmod(folder, 0o700)  # mkdtemp's mode already; say it where it matters
    with _cleaning:
        _made.intersection_update(live_run_folders())
        _made.add(folder)
    return folder


def live_run_folders() -> list[Path]:
    """The run folders this process made that are still there."""
    return sorted(p for p in list(_made) if p.exists())


def remove_stale_runs(base: Path) -> list[Path]:
    """Remove the run folders in ``base`` whose owner process is gone; return them."""
    key = base.resolve()
    with _cleaning:
        if key in _cleaned:
            return []
        _cleaned.add(key)
    me, removed, legacy = Owner.me(), [], 0
    try:
        entries = list(base.iterdir())
    except FileNotFoundError:
        return []
    for entry in entries:
        if not entry.name.startswith(PREFIX) or entry.is_symlink() or not entry.is_dir():
            continue
        tag = _TAGGED.match(entry.name)
        if tag is None:
            legacy += 1
            continue
        if int(tag["ns"]) != me.ns or process_alive(int(tag["pid"]), int(tag["start"])):
            continue
        shutil.rmtree(entry, onerror=lambda *a: log.warning("cannot remove %s: %s", a[1], a[2][1]))
        if not entry.exists():
            removed.append(entry)
    if removed:
        log.info("removed %d run folders left by graders that are gone, in %s", len(removed),
                 base)
    if legacy:
        log.warning("%d run folders in %s carry no owner (made before owners were recorded): "
                    "left alone; remove them by hand once no older grader runs", legacy, base)
    return removed
