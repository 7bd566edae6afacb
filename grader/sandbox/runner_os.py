"""The runner's process as the sandbox needs it: its user, its memory, its environment.

Loaded by path by ``runner.py`` (``python -I``, no package): standard library only.
``become`` switches for good to the run's own uid, ``undumpable`` keeps the student's
kernel (same uid) out of the runner's memory and file descriptors, ``kernel_environment``
points HOME and the Jupyter, XDG and matplotlib folders at the work folder.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Any

__all__ = ["become", "identity", "kernel_environment", "undumpable"]

PR_SET_DUMPABLE = 4


def kernel_environment(work: Path) -> dict[str, str]:
    home = work / "home"
    # The inline backend draws figures into the cell's outputs (image/png), as the
    # student's Jupyter did: no display needed, and a plot check can see them.
    env = {"HOME": str(home), "TMPDIR": "/tmp",
           "MPLBACKEND": "module://matplotlib_inline.backend_inline",
           "JUPYTER_RUNTIME_DIR": str(work / "runtime"), "XDG_RUNTIME_DIR": str(work / "runtime"),
           "R_LIBS_USER": os.environ.get("R_LIBS_USER") or str(home / "R"),
           "PYTHONDONTWRITEBYTECODE": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           # pandas 3 builds frames with pyarrow, whose default allocator reserves about
           # 1 GB of address space: half of a run's RLIMIT_AS before any student code
           "ARROW_DEFAULT_MEMORY_POOL": "system"}
    folders = {"JUPYTER_CONFIG_DIR": ".jupyter", "IPYTHONDIR": ".ipython",
               "MPLCONFIGDIR": ".matplotlib", "XDG_CACHE_HOME": ".cache",
               "XDG_CONFIG_HOME": ".config", "XDG_DATA_HOME": ".local/share"}
    return env | {var: str(home / sub) for var, sub in folders.items()}


def become(uid: int, gid: int) -> None:
    """Switch for good to the run's own unprivileged uid (which clears the capabilities)."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    now = identity()
    if (os.getresuid(), os.getresgid(), os.getgroups()) != ((uid,) * 3, (gid,) * 3, []) \
            or now["cap_eff"] or now["cap_prm"]:
        raise PermissionError(f"could not become uid {uid} without capabilities: {now}")


def identity() -> dict[str, Any]:
    """Who the runner is: uid, gid and capabilities (from /proc/self/status)."""
    status = dict(line.split(":", 1) for line in
                  Path("/proc/self/status").read_text(encoding="ascii").splitlines() if ":" in line)
    return {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
            "cap_eff": int(status["CapEff"], 16), "cap_prm": int(status["CapPrm"], 16),
            "no_new_privs": int(status.get("NoNewPrivs", "0"))}


def undumpable() -> None:
    """Keep the student's kernel (same uid) out of /proc/<this pid>/fd and our memory."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")
