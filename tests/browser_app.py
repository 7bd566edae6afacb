"""The app for the browser tests: `streamlit run app.py` on a free loopback port with a
fresh data folder, Debian's Chromium and how to wait for the app.

Used by tests/test_browser.py and tests/test_browser_walk.py. The app's log is kept
under artifacts/browser/ (git-ignored); on SIGUSR1 it writes its threads' stacks there
(faulthandler, see app_pages/shared.py), which ``stacks`` reads when a test gives up.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "artifacts" / "browser"
SCREENSHOTS = ROOT / "docs" / "screenshots"  # written only with UPDATE_SCREENSHOTS=1
# Chromium as root in a container, on a machine with no way out: no sandbox, no GPU,
# none of the background connections it would try at start.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage"]

_servers: dict[str, tuple[int, Path]] = {}  # url -> the app's pid and its log


def wait_idle(page) -> None:
    """Until the app runs no script (Streamlit's running indicator is gone)."""
    from playwright.sync_api import expect

    page.wait_for_timeout(500)  # let a rerun that was just asked for begin
    expect(page.get_by_test_id("stStatusWidget")).to_be_hidden(timeout=120_000)


def stacks(url: str) -> str:
    """The app's threads' stacks, from its log: what it was waiting on when the test
    gave up."""
    pid, log = _servers[url]
    os.kill(pid, signal.SIGUSR1)
    time.sleep(2)
    return log.read_text(errors="replace")[-6000:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_app(data: Path, log_path: Path = ARTIFACTS / "streamlit.log") -> Iterator[str]:
    """The app's URL while it runs with its data (store, created assignments) in ``data``.
    It watches no source file: other work in the same tree does not rerun it."""
    port = _free_port()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log = log_path.open("wb")
    env = {**os.environ, "GRADER_DATA_DIR": str(data)}
    env.pop("GRADER_CONFIG", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--server.headless", "true", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.read() == b"ok":
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"streamlit did not start; see {log_path}") from None
                time.sleep(0.3)
        _servers[url] = (proc.pid, log_path)
        yield url
    finally:
        _servers.pop(url, None)
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
