"""The warden: the one process of a run that may start the student's kernel as its uid.

As root, a run has three parties inside bubblewrap, each a uid of its own:
- the **warden** (this module's ``serve``): uid 0 of the sandbox with only CAP_SETUID,
  CAP_SETGID and CAP_KILL, single-threaded, reading nothing but the supervisor's requests;
- the **supervisor**: the runner (nbclient, the verifiers, the R verifier it starts) as the
  run's *supervisor uid*, with no capability at all;
- the **kernel** and everything it starts, as the run's *kernel uid*.
The kernel's uid cannot signal, trace or read the memory, file descriptors or files of the
other two (the kernel checks every such access against the uid), and with ``/proc``
mounted ``hidepid=invisible`` (``runner_os.hide_processes``) it does not even see them.
The supervisor cannot change uid, so it asks the warden, over a socket pair, to:

    {"op": "spawn", "argv": [...], "env": {...}, "cwd": ..., "files": {path: text}}
        -> {"ok": true, "pid": N}, and the kernel's stdout and stderr as a pipe (SCM_RIGHTS)
    {"op": "signal", "pid": N, "signal": S}  -> {"ok": true} (to the kernel's process group)
    {"op": "poll", "pid": N}                 -> {"ok": true, "returncode": null | int}
    {"op": "killall"}                        -> {"ok": true} (every process of the kernel uid)

A spawned kernel starts a session of its own as the kernel uid (all three ids, no
supplementary group, no capability, ``no_new_privs``), in ``cwd``, after ``files`` (its
connection file) are written as that uid. When the supervisor's end closes, the warden
kills every process of the kernel uid and returns the supervisor's exit status.

Loaded by path by ``runner.py`` (``python -I``, no package): the standard library only.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import threading
import time
from typing import Any

__all__ = ["Warden", "WardenError", "serve"]

MAX_REQUEST = 4 * 1024 * 1024  # a request line (a kernel's argv, environment and files)
PR_SET_NO_NEW_PRIVS = 38
KILL_ROUNDS = 3


class WardenError(RuntimeError):
    """The warden refused a request or is gone."""


def _lines(sock: socket.socket) -> Any:
    """The JSON objects of ``sock``'s lines, until it closes."""
    buffer = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield json.loads(line)
        if len(buffer) > MAX_REQUEST:
            raise WardenError("a request line longer than the warden reads")


def _no_new_privileges() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")


class _Kernels:
    """The warden's side: kernels started as ``uid``, reaped as they end."""

    def __init__(self, uid: int, gid: int) -> None:
        self.uid, self.gid = uid, gid
        self.procs: dict[int, subprocess.Popen[bytes]] = {}

    def spawn(self, req: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
        argv, env = [str(a) for a in req["argv"]], {str(k): str(v) for k, v in req["env"].items()}
        cwd, files = str(req["cwd"]), {str(k): str(v) for k, v in req.get("files", {}).items()}

        def as_kernel() -> None:  # in the child, once it is the kernel uid
            os.chdir(cwd)  # the kernel uid's folder (0700): not enterable before
            for path, text in files.items():
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
            _no_new_privileges()

        read, write = os.pipe()
        try:
            proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=write,
                                    stderr=write, user=self.uid, group=self.gid,
                                    extra_groups=[], start_new_session=True,
                                    preexec_fn=as_kernel, close_fds=True)
        except (OSError, subprocess.SubprocessError) as exc:
            os.close(read)
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}, None
        finally:
            os.close(write)
        self.procs[proc.pid] = proc
        return {"ok": True, "pid": proc.pid}, read

    def signal(self, pid: int, signum: int) -> dict[str, Any]:
        if pid not in self.procs:
            return {"ok": False, "error": f"no kernel {pid}"}
        try:
            os.killpg(pid, signum)  # the kernel leads its own session and group
        except ProcessLookupError:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                return {"ok": False, "error": "no such process", "errno": 3}
        return {"ok": True}

    def poll(self, pid: int) -> dict[str, Any]:
        proc = self.procs.get(pid)
        return {"ok": True, "returncode": 0 if proc is None else proc.poll()}

    def killall(self) -> dict[str, Any]:
        """SIGKILL to every process of the kernel uid, seen or not (hidden from ``/proc``
        by PR_SET_DUMPABLE, in another session or group): a child of ours becomes that uid
        and calls ``kill(-1, SIGKILL)``. One call reaches every process of the uid at once
        (the kernel walks its process list under the lock a fork needs, and a fork whose
        parent has a fatal signal pending fails), so a fork bomb cannot slip through; two
        more calls, after its processes had time to die, are for good measure. The child
        never executes a program: a uid at its process limit could not start one."""
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.setgroups([])
                os.setresgid(self.gid, self.gid, self.gid)
                os.setresuid(self.uid, self.uid, self.uid)
                for _ in range(KILL_ROUNDS):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(-1, signal.SIGKILL)  # EPERM/ESRCH: none of the uid's left
                    time.sleep(0.01)
                code = 0
            finally:
                os._exit(code)
        while True:  # reaping our kernels meanwhile
            for proc in self.procs.values():
                proc.poll()
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return {"ok": os.waitstatus_to_exitcode(status) == 0}
            time.sleep(0.005)


def serve(sock: socket.socket, uid: int, gid: int) -> None:
    """Answer the supervisor's requests until it closes its end; then kill the kernels."""
    kernels = _Kernels(uid, gid)
    try:
        for req in _lines(sock):
            fd = None
            op = req.get("op") if isinstance(req, dict) else None
            try:
                if op == "spawn":
                    reply, fd = kernels.spawn(req)
                elif op == "signal":
                    reply = kernels.signal(int(req["pid"]), int(req["signal"]))
                elif op == "poll":
                    reply = kernels.poll(int(req["pid"]))
                elif op == "killall":
                    reply = kernels.killall()
                else:
                    reply = {"ok": False, "error": f"unknown request {op!r}"}
            except (KeyError, TypeError, ValueError) as exc:
                reply = {"ok": False, "error": f"a malformed request: {exc}"}
            data = json.dumps(reply).encode("utf-8") + b"\n"
            if fd is None:
                sock.sendall(data)
            else:
                socket.send_fds(sock, [data], [fd])
                os.close(fd)
    except (OSError, ValueError, WardenError):
        pass  # the supervisor is gone: end the kernels below
    finally:
        kernels.killall()


class Warden:
    """The supervisor's side of the socket pair (thread-safe: one request at a time)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.lock, self.buffer = sock, threading.Lock(), b""

    def ask(self, **request: Any) -> dict[str, Any]:
        reply, _ = self._ask(request)
        return reply

    def spawn(self, argv: list[str], env: dict[str, str], cwd: str,
              files: dict[str, str]) -> tuple[int, int]:
        """Start a kernel: (its pid, the read end of its stdout and stderr)."""
        reply, fds = self._ask({"op": "spawn", "argv": argv, "env": env, "cwd": cwd,
                                "files": files})
        if not reply.get("ok") or not fds:
            for fd in fds:
                os.close(fd)
            raise WardenError(f"the kernel could not start: {reply.get('error', 'no pipe')}")
        return int(reply["pid"]), fds[0]

    def _ask(self, request: dict[str, Any]) -> tuple[dict[str, Any], list[int]]:
        with self.lock:
            try:
                self.sock.sendall(json.dumps(request).encode("utf-8") + b"\n")
                fds: list[int] = []
                while b"\n" not in self.buffer:
                    data, got, _flags, _addr = socket.recv_fds(self.sock, 65536, 1)
                    if not data:
                        raise WardenError("the warden is gone")
                    self.buffer += data
                    fds += got
            except OSError as exc:
                raise WardenError(f"the warden is gone ({exc})") from exc
            line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line), fds


def spare_signals() -> None:
    """The warden ignores the terminal's signals: the supervisor ends the run."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
