"""Start ``python -m inference.server`` as a child process and wait until it serves.

    with start_server(role="prefill", extra_args=["--n-ctx", "2048"]) as srv:
        httpx.get(srv.url + "/health", headers=srv.headers)

For benchmarks, tests and scripts that run servers on this machine: the server
binds 127.0.0.1 and a free port itself (``--port 0``); its output goes to a temp
file that is shown when it fails to start. ``kill()`` is SIGKILL, ``stop()``
SIGTERM then SIGKILL; leaving the ``with`` block stops it.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable  # the interpreter (and virtual environment) running this
_LISTENING = re.compile(r"listening on (http://\S+)")
_LOG_DIRS: list[Path] = []  # removed when the launching process exits


@atexit.register
def _remove_logs() -> None:
    for path in _LOG_DIRS:
        shutil.rmtree(path, ignore_errors=True)


def free_port() -> int:
    """A port free on 127.0.0.1 right now (another process may take it later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerStartError(RuntimeError):
    pass


class ServerProcess:
    def __init__(self, proc: subprocess.Popen[bytes], log_path: Path,
                 token: str | None) -> None:
        self.proc = proc
        self.log_path = log_path
        self.token = token
        self.url = ""
        self.health_seen: list[tuple[int, Any]] = []  # (status, body) while starting

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def log_text(self) -> str:
        try:
            return self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self, timeout: float = 10.0) -> None:
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc.wait(timeout=10)

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the server and remove its log (read ``log_text()`` before, if needed)."""
        self.stop()
        shutil.rmtree(self.log_path.parent, ignore_errors=True)

    def _fail(self, why: str) -> ServerStartError:
        self.kill()
        return ServerStartError(f"{why}\n--- server log ({self.log_path}) ---\n"
                                f"{self.log_text()[-6000:]}")

    def _wait_listening(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            match = _LISTENING.search(self.log_text())
            if match:
                self.url = match.group(1)
                return
            if not self.alive():
                raise self._fail(f"server exited with code {self.proc.returncode} "
                                 "before listening")
            time.sleep(0.05)
        raise self._fail("server printed no 'listening on' line in time")

    def _wait_healthy(self, deadline: float) -> None:
        with httpx.Client(timeout=2.0, headers=self.headers) as client:
            while time.monotonic() < deadline:
                if not self.alive():
                    raise self._fail(f"server exited with code {self.proc.returncode}")
                try:
                    resp = client.get(self.url + "/health")
                except httpx.TransportError:
                    time.sleep(0.05)
                    continue
                self.health_seen.append((resp.status_code, resp.json()))
                if resp.status_code == 200:
                    return
                if resp.json().get("status") == "error":
                    raise self._fail(f"model failed to load: {resp.text}")
                time.sleep(0.05)
        raise self._fail("server not healthy in time")


def start_server(model: str = "smollm2-135m", role: str = "both", *, token: str | None = None,
                 extra_args: Iterable[str] = (), env: Mapping[str, str] | None = None,
                 wait_healthy: bool = True, timeout: float = 60.0) -> ServerProcess:
    """Start a server on 127.0.0.1 and a free port; wait for its /health 200."""
    tmp = Path(tempfile.mkdtemp(prefix="grader-server-"))
    _LOG_DIRS.append(tmp)
    log_path = tmp / "server.log"
    args = [PYTHON, "-m", "inference.server", "--model", model, "--role", role,
            "--host", "127.0.0.1", "--port", "0", *extra_args]
    if token is not None:
        token_file = tmp / "token"
        token_file.write_text(token, encoding="utf-8")
        args += ["--token-file", str(token_file)]
    full_env = {k: v for k, v in os.environ.items() if k != "GRADER_SERVER_TOKEN"}
    full_env.update(env or {})
    with log_path.open("wb") as log:
        proc = subprocess.Popen(args, cwd=REPO, env=full_env, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = ServerProcess(proc, log_path, token)
    deadline = time.monotonic() + timeout
    server._wait_listening(deadline)
    if wait_healthy:
        server._wait_healthy(deadline)
    return server
