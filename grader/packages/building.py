"""What the Python venv and the R library share: a folder built once, and an installer's
run with its output said line by line.

``build_once`` takes a lock file beside the folder (a second build of the same list
waits for the first, then finds it done), builds into a folder of its own and moves it
into place only when the build returned, so a failed or stopped install leaves nothing
half made.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

__all__ = ["INSTALL_TIMEOUT_S", "build_once", "run_installer"]

INSTALL_TIMEOUT_S = 1800


def build_once(folder: Path, ready: Callable[[], bool], build: Callable[[Path], None],
               say: Callable[[str], None], what: str) -> None:
    """Make ``folder`` with ``build`` (given the folder to fill) unless ``ready()``."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ready():
            say(f"{what}: already installed in {folder.name}")
            return
        building = folder.parent / f".{folder.name}.building-{uuid.uuid4().hex[:8]}"
        try:
            build(building)
            if folder.exists():
                shutil.rmtree(folder)
            building.rename(folder)
        finally:
            shutil.rmtree(building, ignore_errors=True)
    say(f"{what} installed in {folder}")


def run_installer(argv: list[str], say: Callable[[str], None]) -> str | None:
    """Run an installer, each line of its output said; None on success, else its last
    lines."""
    lines: list[str] = []
    env = {**os.environ, "PIP_NO_INPUT": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True, env=env)
    except OSError as exc:
        return str(exc)
    with proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line := line.rstrip():
                lines.append(line)
                say(line)
        try:
            code = proc.wait(timeout=INSTALL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            return f"stopped after {INSTALL_TIMEOUT_S} s"
    return None if code == 0 else " / ".join(lines[-6:]) or f"exit status {code}"
