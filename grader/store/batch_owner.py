"""Who grades a batch, and whether they still can: the owner of a batch in the store.

A batch records the process that grades it (``Owner``: host name, boot id, pid
namespace, pid and the pid's start time) and a heartbeat the grading process
renews while it works. A batch that is not finished and whose owner is gone is
*interrupted*: the app offers to resume it. "Gone" is decided conservatively, so
that a batch another live grader runs on the same database is never taken:

- same machine, same boot and same pid namespace: the pid no longer runs, or now
  belongs to another process (its start time differs);
- same host name but another boot: the machine restarted since;
- anything else (another machine or container sharing the file): no heartbeat for
  ``STALE_AFTER_S`` seconds (the owner beats every ``HEARTBEAT_S``);
- a batch recorded before owners were (no owner): no activity for ``STALE_AFTER_S``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path

__all__ = ["HEARTBEAT_S", "STALE_AFTER_S", "Owner", "current_owner", "owner_gone"]

log = logging.getLogger(__name__)

HEARTBEAT_S = 30.0
STALE_AFTER_S = 600.0  # twenty missed heartbeats: a suspended laptop, not a busy one


@dataclass(frozen=True, slots=True)
class Owner:
    host: str
    boot_id: str  # "" where the system does not say
    pid_ns: str  # the pid namespace ("pid:[4026531836]"); "" where unknown
    pid: int
    started: str  # the pid's start time since boot, in clock ticks; "" where unknown

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Owner | None:
        """The owner a batch recorded; None for "" (batches from before owners) or a value
        this grader cannot read (then only the heartbeat decides)."""
        if not text:
            return None
        try:
            data = json.loads(text)
            return cls(str(data["host"]), str(data["boot_id"]), str(data["pid_ns"]),
                       int(data["pid"]), str(data["started"]))
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("unreadable batch owner %r (%s): judged by its heartbeat", text, exc)
            return None

    def same_process_space(self, other: Owner) -> bool:
        """Whether this owner's pid can be checked from ``other``'s process."""
        return (self.host, self.boot_id, self.pid_ns) == (other.host, other.boot_id,
                                                          other.pid_ns) \
            and bool(self.boot_id and self.pid_ns)


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def _start_ticks(pid: int) -> str:
    """The process's start time after boot (field 22 of /proc/PID/stat); "" if unknown."""
    stat = _read(f"/proc/{pid}/stat")
    # the command name (field 2) may hold spaces and parentheses: split after the last ')'
    fields = stat[stat.rfind(")") + 2:].split() if ")" in stat else []
    return fields[19] if len(fields) > 19 else ""


def _pid_ns() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


@functools.cache
def _this_machine() -> tuple[str, str, str]:
    return socket.gethostname(), _read("/proc/sys/kernel/random/boot_id"), _pid_ns()


def current_owner() -> Owner:
    """This process, as a batch records its owner."""
    host, boot_id, pid_ns = _this_machine()
    pid = os.getpid()
    return Owner(host, boot_id, pid_ns, pid, _start_ticks(pid))


def _pid_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it runs, as another user
        return True
    return True


def owner_gone(owner_json: str, last_sign_of_life: float, now: float) -> bool:
    """Whether a batch's owner can no longer be grading it. ``last_sign_of_life``: its
    latest heartbeat, or the batch's latest activity when it has none."""
    owner = Owner.from_json(owner_json)
    me = current_owner()
    if owner is not None and owner.same_process_space(me):
        if owner.pid == me.pid:
            return owner.started != me.started  # a pid reused after a restart
        if not _pid_runs(owner.pid):
            return True
        started = _start_ticks(owner.pid)
        return bool(owner.started and started and started != owner.started)
    if owner is not None and owner.host == me.host and owner.boot_id and me.boot_id \
            and owner.boot_id != me.boot_id and owner.pid_ns == me.pid_ns:
        return True  # this machine restarted since
    return now - last_sign_of_life > STALE_AFTER_S
