"""Containing a run's processes: its own unprivileged uid, rlimits, and a cgroup.

The kernel exempts root from RLIMIT_NPROC, so when the grader runs as root each run gets
a uid of its own from a pool (``reserve_user``): inside the range ``/proc/self/uid_map``
maps, with no user, group or process of its own, and reserved with an ``flock`` on a
file in a root-only folder, so that two graders never share one (the kernel drops the
lock when a grader dies). The runner starts as root inside bubblewrap with only
CAP_SETUID and CAP_SETGID and switches to that uid before anything else runs; the
work folder is handed to the uid (mode 0700). RLIMIT_NPROC, counted per real uid, then
bounds the run alone (where no such range is mapped, e.g. a user namespace mapping root
alone, student code runs as root and the notes say so). As another user the grader keeps
the earlier behaviour: the sandbox runs as that user with RLIMIT_NPROC at the user's
count plus the allowance.
``limiter`` builds the function that applies the rlimits (and joins the run's cgroup,
``grader.sandbox.cgroup``) in the child before bubblewrap starts. ``run_memory_mb`` sizes
the run cgroup's memory bound: ``memory_mb`` (RLIMIT_AS, each process's address space)
for all the run's processes together, plus ``RUN_OVERHEAD_MB`` for the runner and
bubblewrap.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import grp
import logging
import os
import pwd
import resource
import signal
import socket
import stat
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from grader.errors import SandboxError

__all__ = ["NOTEBOOK", "SUPERVISOR", "SandboxUser", "hand_over", "limiter", "reserve_user",
           "run_memory_mb", "uid_processes"]

log = logging.getLogger(__name__)

POOL_START = 1_900_000_000  # above the uids of users, systemd and container ranges
POOL_SIZE = 4096
LOCKS = "grader-sandbox-uids"
RELEASE_WAIT_S = 10.0
RUN_OVERHEAD_MB = 512  # the runner (nbclient) and bubblewrap, beside the student's code
NOTEBOOK = "notebook.ipynb"  # in the work folder: what the runner runs
SUPERVISOR = "supervisor"  # in the work folder: the runner's own, out of the kernel's reach


@dataclass
class SandboxUser:
    uid: int
    gid: int
    dedicated: bool  # a pool uid of this run's own (the grader is root)
    lock_fd: int | None = None

    def nproc(self, allowance: int) -> int:
        """RLIMIT_NPROC for the run: the uid's own count, or the user's on top of theirs."""
        return allowance if self.dedicated else allowance + len(uid_processes(self.uid))

    def release(self) -> None:
        """Free the uid once none of its processes is left (they die with the sandbox)."""
        if self.lock_fd is None:
            return
        deadline = time.monotonic() + RELEASE_WAIT_S
        while (left := uid_processes(self.uid)) and time.monotonic() < deadline:
            time.sleep(0.01)
        for pid in left:  # outlived the sandbox's pid namespace: they are this run's
            log.warning("killing process %d left behind by sandbox uid %d", pid, self.uid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        os.close(self.lock_fd)
        self.lock_fd = None


def uid_processes(uid: int) -> list[int]:
    """The pids (in this pid namespace) whose real uid is ``uid``."""
    return [pid for pid, real in _real_uids().items() if real == uid]


def _real_uids() -> dict[int, int]:
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", encoding="ascii", errors="replace") as f:
                line = next((ln for ln in f if ln.startswith("Uid:")), "")
        except OSError:  # the process ended while we looked
            continue
        if line:
            found[int(entry.name)] = int(line.split()[1])
    return found


def _mapped(path: str) -> list[range]:
    try:
        rows = Path(path).read_text(encoding="ascii").split("\n")
    except FileNotFoundError:  # a kernel without user namespaces: every id is itself
        return [range(0, 2**32 - 1)]
    return [range(int(a), int(a) + int(n)) for a, _, n in (r.split() for r in rows if r.strip())]


def _pool() -> range | None:
    """POOL_SIZE uids mapped for both uids and gids, preferably from POOL_START."""
    maps = [_mapped("/proc/self/uid_map"), _mapped("/proc/self/gid_map")]

    def covered(r: range) -> bool:
        return all(any(r.start in m and r[-1] in m for m in ranges) for ranges in maps)

    preferred = range(POOL_START, POOL_START + POOL_SIZE)
    if covered(preferred):
        return preferred
    for mapped in sorted(maps[0], key=len, reverse=True):  # e.g. "0 100000 65536"
        top = min(mapped.stop, 65534)  # below nobody
        candidate = range(max(top - POOL_SIZE, mapped.start, 1000), top)
        if len(candidate) >= 16 and covered(candidate):
            return candidate
    return None


def _lock_dir() -> Path:
    folder = Path(tempfile.gettempdir()) / LOCKS
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o077:
        raise SandboxError(f"{folder} must be a folder of root's with mode 0700 (it holds the "
                           "sandbox uid reservations): remove it and grade again")
    return folder


@contextlib.contextmanager
def reserve_user() -> Iterator[SandboxUser]:
    """The uid (and gid) a run's code runs as, held for the run."""
    pool = _pool() if os.geteuid() == 0 else None
    if pool is None:
        if os.geteuid() == 0:  # e.g. a user namespace that maps root alone
            log.warning("no unprivileged uid range is mapped in /proc/self/uid_map: student "
                        "code runs as root, exempt from the process limit")
        yield SandboxUser(os.getuid(), os.getgid(), dedicated=False)
        return
    user = _reserve(pool)
    try:
        yield user
    finally:
        user.release()


def _reserve(pool: range) -> SandboxUser:
    folder, busy = _lock_dir(), set(_real_uids().values())
    # from a place of this host's own: containers sharing a kernel (and so the per-uid
    # counts) rarely start at the same uid, while one host reuses a few lock files
    first = zlib.crc32(socket.gethostname().encode()) % len(pool)
    for uid in (pool[(first + i) % len(pool)] for i in range(len(pool))):
        if uid in busy or _known(uid):
            continue
        fd = os.open(folder / str(uid), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                continue
            raise SandboxError(f"cannot lock {folder / str(uid)}: {exc}") from exc
        if uid_processes(uid):  # started between the scan and the lock
            os.close(fd)
            continue
        return SandboxUser(uid, uid, dedicated=True, lock_fd=fd)
    raise SandboxError(f"all {len(pool)} sandbox uids from {pool.start} are in use")


def _known(uid: int) -> bool:
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(uid)
            return True
        except KeyError:
            pass
    return False


def hand_over(work: Path, user: SandboxUser, keep: tuple[Path, ...] = (),
              supervisor: SandboxUser | None = None) -> None:
    """Give the run's uid the work folder (mode 0700); ``keep`` stays the grader's.

    With a ``supervisor`` uid (the runner and the verifiers), the work folder itself, the
    notebook file and the supervisor's own folder (``SUPERVISOR``, made here) are its; the
    folder's group is the kernel uid's and its mode 0710: the kernel uid reaches its own
    folders inside (home, the working directory, tmp, the data) but cannot list the work
    folder, nor enter the supervisor's folder, which holds the connection files and what
    the verifiers write; other users of the host reach nothing."""
    if not user.dedicated:
        return
    if supervisor is not None:
        for sub in ("", "runtime", "tmp"):
            (work / SUPERVISOR / sub).mkdir(mode=0o700, exist_ok=True)
    theirs = {work, work / NOTEBOOK, work / SUPERVISOR} if supervisor is not None else set()
    for folder, dirs, files in os.walk(work):
        dirs[:] = [d for d in dirs if Path(folder, d) not in keep]
        for name in [".", *dirs, *files]:
            path = Path(folder, name)
            if path in keep:
                continue
            owner = supervisor if supervisor is not None and (
                path in theirs or path.is_relative_to(work / SUPERVISOR)) else user
            os.chown(path, owner.uid, user.gid if path == work else owner.gid,
                     follow_symlinks=False)
    work.chmod(0o710 if supervisor is not None else 0o700)
    if supervisor is not None:
        (work / NOTEBOOK).chmod(0o600)


def run_memory_mb(memory_mb: int) -> int:
    """The memory of all a run's processes together, for ``memory_mb`` per process."""
    return memory_mb + RUN_OVERHEAD_MB


def limiter(memory_mb: int, max_file_mb: int, nproc: int, cpu_s: int,
            join: Callable[[], None] | None = None) -> Callable[[], None]:
    """The function run in the child between fork and exec: rlimits, then the cgroup."""
    mib = 1024 * 1024
    wanted = {resource.RLIMIT_AS: memory_mb * mib, resource.RLIMIT_FSIZE: max_file_mb * mib,
              resource.RLIMIT_NPROC: nproc, resource.RLIMIT_CPU: cpu_s, resource.RLIMIT_CORE: 0}
    caps = {w: v if (hard := resource.getrlimit(w)[1]) == resource.RLIM_INFINITY
            else min(v, hard) for w, v in wanted.items()}  # never above the current hard limit

    def apply() -> None:
        for which, value in caps.items():
            resource.setrlimit(which, (value, value))
        if join is not None:
            join()
    return apply
