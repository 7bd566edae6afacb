"""The student's kernel started by the warden, as the kernel uid: jupyter_client's side.

``WardenKernelManager`` is nbclient's kernel manager with one change: its provisioner,
``WardenProvisioner``, asks the warden (``warden.py``) to start the kernel as the run's
kernel uid, to signal its process group (nbclient's interrupt on a cell's timeout) and to
kill it (every process of that uid, whatever session or group it moved to). Everything
else is jupyter_client's own ``LocalProvisioner``: ports, the connection file, the
environment. The connection file is written by the supervisor in its own runtime folder,
which the kernel uid cannot read, so the warden writes the kernel's copy as that uid in
the kernel's runtime folder, and the kernel's command names that copy.

The kernel's stdout and stderr reach the supervisor as a pipe from the warden; the last
lines are kept (``output_tail``) to say why a kernel did not start.

Loaded by path by ``runner.py`` (``python -I``, no package): jupyter_client and the
standard library only.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

from jupyter_client import AsyncKernelManager
from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import LocalProvisioner

__all__ = ["WardenKernelManager", "WardenProvisioner", "configure"]

TAIL_LINES = 40


class _Settings:
    """What the runner sets once, before nbclient makes a kernel manager."""

    warden: Any = None  # warden.Warden
    kernel_env: ClassVar[dict[str, str]] = {}  # the kernel's own folders (runner_os)
    kernel_runtime: str = ""  # the kernel uid's runtime folder, for its connection file
    tail: ClassVar[collections.deque[str]] = collections.deque(maxlen=TAIL_LINES)


def configure(warden: Any, kernel_env: dict[str, str], kernel_runtime: str) -> None:
    _Settings.warden, _Settings.kernel_env = warden, dict(kernel_env)
    _Settings.kernel_runtime = kernel_runtime


def output_tail() -> str:
    """The last lines kernels wrote on stdout and stderr (start-up errors)."""
    return "\n".join(_Settings.tail)


class _Process:
    """What LocalProvisioner keeps of a Popen, answered by the warden."""

    def __init__(self, pid: int) -> None:
        self.pid, self.returncode = pid, None
        self.stdin = self.stdout = self.stderr = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                self.returncode = _Settings.warden.ask(op="poll", pid=self.pid)["returncode"]
            except RuntimeError:
                self.returncode = -signal.SIGKILL  # the warden is gone, and its kernels
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        while self.poll() is None:
            time.sleep(0.05)
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, signum: int) -> None:
        reply = _Settings.warden.ask(op="signal", pid=self.pid, signal=int(signum))
        if not reply.get("ok"):
            raise ProcessLookupError(3, str(reply.get("error", "no such process")))

    def kill(self) -> None:
        _Settings.warden.ask(op="killall")

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


def _drain(fd: int) -> None:
    with os.fdopen(fd, "rb") as stream:
        for line in stream:
            _Settings.tail.append(line.decode("utf-8", "replace").rstrip())


class WardenProvisioner(LocalProvisioner):  # type: ignore[misc]
    """LocalProvisioner whose kernel the warden starts, signals and kills."""

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        mine = str(self.parent.connection_file)
        theirs = str(Path(_Settings.kernel_runtime) / Path(mine).name)
        argv = [theirs if a in (mine, os.path.realpath(mine)) else a for a in cmd]
        env = {**dict(kwargs.get("env") or os.environ), **_Settings.kernel_env}
        env.pop("JPY_PARENT_PID", None)  # the warden is the kernel's parent
        cwd = str(kwargs.get("cwd") or _Settings.kernel_env.get("HOME", "/"))
        pid, out = _Settings.warden.spawn(argv, env, cwd,
                                          {theirs: Path(mine).read_text(encoding="utf-8")})
        threading.Thread(target=_drain, args=(out,), daemon=True).start()
        self.process = _Process(pid)
        self.pid = self.pgid = pid
        self.cwd = cwd
        return self.connection_info

    async def send_signal(self, signum: int) -> None:
        if self.process:
            self.process.send_signal(signum)

    async def kill(self, restart: bool = False) -> None:
        if self.process:
            self.process.kill()

    async def terminate(self, restart: bool = False) -> None:
        if self.process:
            with contextlib.suppress(ProcessLookupError):
                self.process.terminate()


class WardenKernelManager(AsyncKernelManager):  # type: ignore[misc]
    """nbclient's kernel manager, with the warden's provisioner (see the module)."""

    async def _async_pre_start_kernel(self, **kw: Any) -> Any:
        if self.provisioner is None:  # jupyter_client keeps it on restarts
            self.kernel_id = self.kernel_id or kw.pop("kernel_id", None) or os.urandom(
                16).hex()
            self.provisioner = WardenProvisioner(kernel_id=self.kernel_id,
                                                 kernel_spec=self.kernel_spec, parent=self)
        return await super()._async_pre_start_kernel(**kw)
