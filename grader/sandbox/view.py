"""What the sandbox sees: an allow-list of the host's files, and the bwrap command line.

The sandbox's root is an empty, read-only tmpfs holding only:
- the system: ``/usr`` and the ``/bin``, ``/sbin``, ``/lib*`` entries (links or folders)
  as on the host; the ``/etc`` entries runtimes read (``ETC_ALLOWED``: linker, locale, time
  zone, certificates, fonts, R's configuration, ...), with ``passwd``, ``group``, ``hosts``
  and ``nsswitch.conf`` written for the sandbox (root, nobody and the sandbox user only);
  ``/sys/devices/system/{cpu,node}`` (CPU counts); fontconfig's cache;
- the runtimes a run needs, read-only at their own paths (``runtime_paths``): this
  interpreter and its base installation, the kernel's kernelspec folder and the
  installation its command lives in, R's home and library folders, and the runner;
- ``/dev`` and ``/proc`` (the sandbox's own, with ``/proc/1/cmdline`` and ``environ``
  covered by neutral files: pid 1 is bubblewrap, whose command line names the host's
  folders it binds, the repository's and the run's among them), ``/tmp`` (the work
  folder's ``tmp``) and the run's work folder, writable;
- top-level folders a student's absolute data paths name (``/workspaces``, ``/home``, ...):
  the work folder's ``mnt/<top>``, holding the data placed there.
Everything else of the host (``/home``, ``/root``, ``/srv``, ``/mnt``, ``/opt``, ``/work``,
the grader's data, other runs) is absent. ``sandbox_env`` is the environment it inherits.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = ["ETC_ALLOWED", "SANDBOX_USER", "SYSTEM_DIRS", "View", "runtime_paths",
           "sandbox_env", "write_identity"]

log = logging.getLogger(__name__)

SANDBOX_USER = "sandbox"
# Top-level folders of the system: a student's path under one of them is never mapped.
SYSTEM_DIRS = frozenset({"bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc",
                         "run", "sbin", "sys", "usr", "var"})
SYSTEM_ENTRIES = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")  # shown whole
ETC_ALLOWED = frozenset({
    "alternatives", "ca-certificates", "ca-certificates.conf", "crypto-policies",
    "debian_version", "fonts", "gai.conf", "gnutls", "host.conf", "ImageMagick-6",
    "ImageMagick-7", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "ld.so.preload", "libpaper.d",
    "locale.alias", "locale.conf", "localtime", "lsb-release", "magic", "magic.mime", "mailcap",
    "matplotlibrc", "mime.types", "mtab", "networks", "os-release", "papersize", "pki",
    "protocols", "python3", "R", "services", "sgml", "ssl", "terminfo", "timezone", "xml",
    f"python{sys.version_info[0]}.{sys.version_info[1]}",
})
IDENTITY = ("passwd", "group", "hosts", "nsswitch.conf")  # written for each run
PID1 = {"cmdline": "bwrap\0", "environ": ""}  # shown for bubblewrap, pid 1 in the sandbox
HOST_EXTRAS = (Path("/sys/devices/system/cpu"), Path("/sys/devices/system/node"),
               Path("/var/cache/fontconfig"))
R_FOLDERS = (Path("/usr/lib/R"), Path("/usr/local/lib/R"), Path("/usr/share/R"), Path("/etc/R"))


def sandbox_env() -> dict[str, str]:
    """What the sandbox inherits: only these (no API keys); the runner adds its folders."""
    from jupyter_core.paths import jupyter_path
    user_r = [str(p) for p in sorted(Path.home().glob("R/*-library/*")) if p.is_dir()]
    zone = os.readlink("/etc/localtime") if Path("/etc/localtime").is_symlink() else ""
    env = {k: os.environ[k] for k in ("R_LIBS", "R_HOME", "LC_ALL") if k in os.environ}
    return env | {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
                  "LANG": os.environ.get("LANG", "C.UTF-8"),
                  "TZ": os.environ.get("TZ") or zone.partition("zoneinfo/")[2] or "UTC",
                  "JUPYTER_PATH": os.pathsep.join(jupyter_path()),  # the host's kernels
                  "R_LIBS_USER": os.environ.get("R_LIBS_USER") or ":".join(user_r)}


def _under(path: Path, roots: tuple[Path, ...] | list[Path]) -> bool:
    return any(path == r or path.is_relative_to(r) for r in roots)


def _system(path: Path) -> bool:
    return len(path.parts) > 1 and path.parts[1] in SYSTEM_ENTRIES


@functools.cache
def runtime_paths(kernel: str, runner: Path) -> tuple[Path, ...]:
    """Host folders (and the runner file) a run of ``kernel`` needs, outside ``/usr``."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    found = [Path(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                               sys.base_exec_prefix)] + [runner]
    env = sandbox_env()
    try:
        spec = KernelSpecManager().get_kernel_spec(kernel)
    except NoSuchKernel:
        spec = None
    if spec is not None:
        found.append(Path(spec.resource_dir))
        command = spec.argv[0] if spec.argv else ""
        where = shutil.which(command, path=env["PATH"]) if command else None
        if where and command not in ("python", "python3", f"python{sys.version_info[0]}."
                                                          f"{sys.version_info[1]}"):
            for exe in (Path(where), Path(where).resolve()):
                found.append(exe.parent.parent if exe.parent.name == "bin" else exe.parent)
        if spec.language.lower() == "r":
            found += [*R_FOLDERS, *_r_folders(where, env)]
    found += [Path(p) for var in ("R_LIBS_USER", "R_LIBS") for p in
              env.get(var, "").split(":") if p and spec is not None
              and spec.language.lower() == "r"]
    kept: list[Path] = []
    for path in sorted({q for p in found for q in (Path(os.path.abspath(p)), Path(p).resolve())},
                       key=lambda p: (len(p.parts), str(p))):
        if path.exists() and not _system(path) and path.parts[1:2] != ("etc",) \
                and not _under(path, kept):
            kept.append(path)
    log.info("runtime folders shown to the %s sandbox: %s", kernel, [str(p) for p in kept])
    return tuple(kept)


def _r_folders(r_command: str | None, env: dict[str, str]) -> list[Path]:
    """R's home and library folders, as R itself reports them (Renviron.site included)."""
    rscript = Path(r_command).with_name("Rscript") if r_command else None
    if rscript is None or not rscript.exists():
        return []
    try:
        out = subprocess.run([str(rscript), "--no-init-file", "-e",  # site files count
                              'cat(R.home(), .libPaths(), sep = "\\n")'],
                             capture_output=True, text=True, timeout=60, check=True,
                             env=env | {"HOME": os.environ.get("HOME", "/")})
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("cannot ask R for its folders (%s); showing the usual ones", exc)
        return []
    return [Path(line) for line in out.stdout.splitlines() if line.startswith("/")]


def write_identity(folder: Path, uid: int, gid: int, home: Path) -> None:
    """The sandbox's ``/etc/passwd``, ``group``, ``hosts`` and ``nsswitch.conf``, and
    what its ``/proc/1/cmdline`` and ``environ`` show."""
    folder.mkdir(mode=0o755)
    users = {0: ("root", 0, "/root"), 65534: ("nobody", 65534, "/nonexistent")}
    users.setdefault(uid, (SANDBOX_USER, gid, str(home)))
    groups = {0: "root", 65534: "nogroup"}
    groups.setdefault(gid, SANDBOX_USER)
    files = {
        "passwd": "".join(f"{name}:x:{u}:{g}:{name}:{h}:/usr/sbin/nologin\n"
                          for u, (name, g, h) in sorted(users.items())),
        "group": "".join(f"{name}:x:{g}:\n" for g, name in sorted(groups.items())),
        "hosts": "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
        "nsswitch.conf": "".join(f"{db}: files\n" for db in (
            "passwd", "group", "shadow", "hosts", "networks", "protocols", "services")),
    }
    files |= {f"pid1-{name}": text for name, text in PID1.items()}
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
        (folder / name).chmod(0o644)


@dataclass(frozen=True)
class View:
    """The sandbox's file system for one run."""

    runtime: tuple[Path, ...]

    def unmappable(self, path: PurePosixPath) -> str:
        """Why a student's absolute path cannot be made to exist ("" when it can)."""
        top = path.parts[1]
        if top in SYSTEM_DIRS:
            return f"/{top} is a system folder"
        if _under(Path(path), self.runtime):
            return f"{path} holds a runtime the sandbox shows read-only"
        return ""

    def argv(self, bwrap: str, work: Path, cwd: Path, tops: set[str], identity: Path,
             switch_user: bool, two_users: bool = False) -> list[str]:
        """The bwrap command line (up to and including ``--``). ``switch_user``: the
        runner starts as root and becomes the run's uid at once; ``two_users``: it first
        remounts ``/proc`` (CAP_SYS_ADMIN), then keeps only what its warden needs to start
        and kill the kernel as another uid (``grader.sandbox.warden``)."""
        argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-net", "--unshare-pid",
                "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox",
                "--cap-drop", "ALL"]
        if switch_user:
            argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        if switch_user and two_users:
            argv += ["--cap-add", "CAP_KILL", "--cap-add", "CAP_SYS_ADMIN", "--cap-add",
                     "CAP_SETPCAP"]
        for name in SYSTEM_ENTRIES:
            argv += _show(Path("/", name))
        argv += ["--dir", "/etc"]
        for entry in sorted(Path("/etc").iterdir()):
            if entry.name in ETC_ALLOWED:
                argv += _show(entry)
        for name in IDENTITY:
            argv += ["--ro-bind", str(identity / name), f"/etc/{name}"]
        argv += ["--dev", "/dev", "--proc", "/proc"]
        for name in PID1:  # over the sandbox's own /proc, mounted just before
            argv += ["--ro-bind", str(identity / f"pid1-{name}"), f"/proc/1/{name}"]
        for extra in HOST_EXTRAS:
            argv += _show(extra)
        argv += ["--bind", str(work / "tmp"), "/tmp"]
        for top in sorted(tops):
            argv += ["--bind", str(work / "mnt" / top), f"/{top}"]
        made: set[Path] = set()  # bwrap would copy the modes of the host's folders (/root: 0700)
        for path in self.runtime:
            argv += [*_folders(path, made), *_show(path)]
        argv += _folders(work, made)
        # as root the work folder is the run's uid's (0700): the runner enters it once it
        # has become that uid
        return [*argv, "--bind", str(work), str(work), "--remount-ro", "/",
                "--chdir", "/" if switch_user else str(cwd), "--"]


def _folders(path: Path, made: set[Path]) -> list[str]:
    """``--dir`` (mode 0755) for each folder above ``path`` outside the system's."""
    argv = []
    for parent in reversed(path.parents[:-1]):
        if parent not in made and not _system(parent) and parent != Path("/tmp"):
            made.add(parent)
            argv += ["--dir", str(parent)]
    return argv


def _show(entry: Path) -> list[str]:
    """The host's ``entry``, read-only at the same place (a link stays a link)."""
    if entry.is_symlink():
        return ["--symlink", os.readlink(entry), str(entry)]
    if entry.is_dir() or entry.is_file():
        return ["--ro-bind", str(entry), str(entry)]
    return []
