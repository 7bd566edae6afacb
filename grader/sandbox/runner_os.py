"""The runner's process as the sandbox needs it: its user, its memory, its environment.

Loaded by path by ``runner.py`` (``python -I``, no package): standard library only.
``become`` switches for good to an unprivileged uid, ``undumpable`` keeps other processes
of that uid out of the runner's memory and file descriptors, ``kernel_environment``
points HOME and the Jupyter, XDG and matplotlib folders at the work folder. As root (the
warden's side, ``warden.py``): ``hide_processes`` remounts the sandbox's ``/proc`` with
``hidepid=invisible`` (a uid sees its own processes only) and ``keep_capabilities``
keeps the named capabilities and drops every other, from the bounding set too.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import Any

__all__ = ["become", "hide_processes", "identity", "keep_capabilities",
           "kernel_environment", "supervisor_environment", "undumpable"]

PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
MS_REMOUNT, MS_NOSUID, MS_NODEV, MS_NOEXEC = 32, 2, 4, 8
CAP_LAST = 63  # beyond the kernel's last capability, PR_CAPBSET_DROP says EINVAL
_CAP_VERSION_3 = 0x20080522
CAPABILITIES = {"CAP_KILL": 5, "CAP_SETGID": 6, "CAP_SETUID": 7, "CAP_SETPCAP": 8,
                "CAP_SYS_ADMIN": 21}


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


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


def supervisor_environment(folder: Path) -> dict[str, str]:
    """The supervisor's own folders (``folder``: its uid's, which the kernel cannot read):
    its Jupyter runtime (connection files), config and cache, and a home for R."""
    env = {"HOME": str(folder), "TMPDIR": str(folder / "tmp"),
           "JUPYTER_RUNTIME_DIR": str(folder / "runtime"),
           "XDG_RUNTIME_DIR": str(folder / "runtime"), "PYTHONDONTWRITEBYTECODE": "1",
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "ARROW_DEFAULT_MEMORY_POOL": "system", "MPLBACKEND": "Agg"}
    folders = {"JUPYTER_CONFIG_DIR": ".jupyter", "IPYTHONDIR": ".ipython",
               "MPLCONFIGDIR": ".matplotlib", "XDG_CACHE_HOME": ".cache",
               "XDG_CONFIG_HOME": ".config", "XDG_DATA_HOME": ".local/share"}
    return env | {var: str(folder / sub) for var, sub in folders.items()}


def become(uid: int, gid: int) -> None:
    """Switch for good to an unprivileged uid of the run's (which clears the capabilities)."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:  # no setuid program regains one
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
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


def hide_processes() -> None:
    """Remount this sandbox's ``/proc`` so that each uid sees only its own processes
    (needs CAP_SYS_ADMIN; the mount is the sandbox's own, its pid namespace's)."""
    libc = ctypes.CDLL(None, use_errno=True)
    flags = MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC
    if libc.mount(b"proc", b"/proc", b"proc", flags, b"hidepid=invisible") != 0:
        raise OSError(ctypes.get_errno(), "cannot remount /proc with hidepid=invisible")


def keep_capabilities(names: tuple[str, ...]) -> None:
    """Keep only ``names`` (effective and permitted; none inheritable) and drop every
    other capability from the bounding set, so that no later exec regains one."""
    libc = ctypes.CDLL(None, use_errno=True)
    keep = {CAPABILITIES[n] for n in names}
    for cap in range(CAP_LAST + 1):  # CAP_SETPCAP, needed for this, goes last
        if (cap not in keep and cap != CAPABILITIES["CAP_SETPCAP"]
                and libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0
                and ctypes.get_errno() != 22):  # EINVAL: past the kernel's last one
            raise OSError(ctypes.get_errno(), f"cannot drop capability {cap}")
    if CAPABILITIES["CAP_SETPCAP"] not in keep and libc.prctl(
            PR_CAPBSET_DROP, CAPABILITIES["CAP_SETPCAP"], 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "cannot drop CAP_SETPCAP")
    mask = [0, 0]
    for cap in keep:
        mask[cap // 32] |= 1 << (cap % 32)
    data = (_CapData * 2)(*(_CapData(m, m, 0) for m in mask))
    if libc.capset(ctypes.byref(_CapHeader(_CAP_VERSION_3, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
    now = identity()
    wanted = sum(1 << c for c in keep)
    if now["cap_eff"] != wanted or now["cap_prm"] != wanted:
        raise PermissionError(f"capabilities not as asked: {now}")
