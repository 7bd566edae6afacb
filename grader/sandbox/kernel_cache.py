"""Caches a fresh sandbox home can start from, so each run does not rebuild them.

Every notebook runs with an empty home folder. matplotlib then rebuilds its
font list on first import (it runs fc-list and scans every font), about a
third of a second per notebook. The list depends only on this machine's fonts,
so it is built once, outside the sandbox, and copied into each run's home.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

log = logging.getLogger(__name__)


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "notebook-grader" / "sandbox-home"


@functools.cache
def _matplotlib_cache() -> Path | None:
    """The folder holding matplotlib's font list for this interpreter, built once."""
    folder = _cache_root() / "matplotlib"
    if not any(folder.glob("fontlist-*.json")):
        folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "MPLCONFIGDIR": str(folder), "MPLBACKEND": "Agg"}
        try:
            subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], env=env,
                           capture_output=True, timeout=120, check=True)
        except (OSError, subprocess.SubprocessError) as exc:
            log.info("no matplotlib font cache for the sandbox (%s); runs build their own", exc)
            return None
    return folder if any(folder.glob("fontlist-*.json")) else None


def seed_home(home: Path) -> None:
    """Copy the prebuilt caches into a run's home folder (see sandbox_runner's env)."""
    mpl = _matplotlib_cache()
    if mpl is not None:
        dest = home / ".matplotlib"
        dest.mkdir(parents=True, exist_ok=True)
        for f in mpl.glob("fontlist-*.json"):
            shutil.copy2(f, dest / f.name)
