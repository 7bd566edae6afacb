"""How the runner starts: its command line, its spec, and (as root) its split in two.

Loaded by path by ``runner.py`` (``python -I``, no package): the standard library and
the runner's siblings only. ``options`` reads ``SPEC [--user UID:GID [--kernel-user
UID:GID]]``; ``read_spec`` reads the spec from a file or from ``fd:N``, a pipe the grader
writes it to and closes (the tests' code then lies in no file at all); ``supervise``,
with two uids of the run's own, hides each uid's processes from the others, keeps only
what the warden needs, and forks: the supervisor (the runner, as its uid, with
``events``) and the warden (``warden.py``), which starts and kills the kernels as theirs.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["ids", "options", "read_spec", "supervise"]


def read_spec(where: str) -> dict[str, Any]:
    """The spec from a file, or from ``fd:N``: a pipe the grader writes it to and closes
    (then it is in no file at all, and no process of the student's uid can open it)."""
    if where.startswith("fd:"):
        with os.fdopen(int(where[3:]), "rb") as pipe:
            return json.loads(pipe.read())
    return json.loads(Path(where).read_text(encoding="utf-8"))


def ids(text: str) -> tuple[int, int]:
    uid, _, gid = text.partition(":")
    return int(uid), int(gid)


def options(argv: list[str]) -> dict[str, str] | None:
    """``SPEC [--user UID:GID [--kernel-user UID:GID]]``, or None when malformed."""
    if len(argv) < 2 or len(argv) % 2:
        return None
    options = dict(zip(argv[2::2], argv[3::2], strict=True))
    if set(options) - {"--user", "--kernel-user"} or (
            "--kernel-user" in options and "--user" not in options):
        return None
    return {"spec": argv[1], **options}


def supervise(spec: dict[str, Any], supervisor: tuple[int, int], kernel: tuple[int, int],
              events: Callable[[dict[str, Any], Any], int], process: Any, warden: Any) -> int:
    """As root: hide processes, keep only what the warden needs, then split in two: the
    supervisor (this runner, as its own uid, over a socket to the warden) and the warden,
    which starts, signals and kills the kernels as the kernel uid (``warden.py``).
    ``process`` and ``warden`` are the runner's siblings ``runner_os`` and ``warden``."""
    process.hide_processes()
    process.keep_capabilities(("CAP_KILL", "CAP_SETGID", "CAP_SETUID"))
    process.undumpable()
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the supervisor
        code = 1
        try:
            ours.close()
            process.become(*supervisor)
            process.undumpable()
            os.chdir(spec["supervisor_dir"])
            code = events(spec, warden.Warden(theirs))
        finally:
            os._exit(code)
    theirs.close()
    fd = spec.get("events_fd")
    if fd is not None:
        os.close(fd)  # the supervisor's; the warden writes no events
    warden.spare_signals()
    warden.serve(ours, *kernel)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)
