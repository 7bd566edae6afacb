"""Layer 2's execution engine: run a notebook in a sandbox and inspect its variables.

nbclient and the kernel run together inside bubblewrap (``grader/sandbox_runner.py``):
host folders read-only, no network, private pid/ipc/uts namespaces, no capabilities,
the repository hidden, rlimits on memory, processes, file size and CPU; only the run's
work folder is writable. Data is made resolvable wherever the student's code names it,
their code unedited, and each mapping is recorded in ``ExecutionResult.notes``:
- the working directory is ``WORK/a/b/nb``: each data file is there by name and under
  ``data/``; ``../data/`` and ``../../data/`` resolve too;
- a string literal whose base name is a data file's (any case) is placed where it
  points: relative (Windows paths are plain file names on Linux), ``~/``, ``/tmp/``, or
  under a top-level folder the host lacks (``/workspaces``, ``/Users``) or whose second
  level it lacks (``/home/jovyan``): that folder is overlaid from the work folder, the
  host's entries bound back read-only; ``setwd``/``os.chdir``/``%cd`` targets likewise.
"""

from __future__ import annotations

import functools
import itertools
import json
import logging
import os
import posixpath
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import nbformat

from grader import inspect_code as scan
from grader.compare import VariableSummary, compare_variables
from grader.errors import SandboxError
from grader.kernel_cache import seed_home
from grader.notebook import strip_ansi
from grader.types import Output

__all__ = ["CellRun", "ExecLimits", "ExecutionResult", "VariableSummary", "compare_variables",
           "execute_notebook", "kernel_available", "sandbox_available"]

log = logging.getLogger(__name__)

KERNELS = {"python": "python3", "r": "ir"}  # preferred kernel per language
BWRAP = shutil.which("bwrap")
RUNNER = Path(__file__).resolve().with_name("sandbox_runner.py")
REPO = RUNNER.parent.parent
GRACE_S = 90  # kernel start-up and inspection, on top of total_timeout_s
SYSTEM_DIRS = frozenset({"bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc",
                         "run", "sbin", "sys", "usr", "var"})


@dataclass(frozen=True)
class ExecLimits:
    cell_timeout_s: int = 60
    total_timeout_s: int = 600
    memory_mb: int = 2048  # address space of each process in the sandbox
    max_processes: int = 256  # on top of the user's processes already running
    max_file_mb: int = 200  # largest file a process may write
    allow_unsandboxed: bool = False  # run without bubblewrap (limits only) when it is missing


@dataclass(frozen=True)
class CellRun:
    cell_id: str
    index: int  # position in the notebook (all cells counted)
    ok: bool
    error: str  # "" or "ename: evalue"
    outputs: tuple[Output, ...]
    seconds: float


@dataclass
class ExecutionResult:
    cells: list[CellRun]
    variables: dict[str, VariableSummary]  # one per name asked for, always
    kernel: str
    language: str
    seconds: float
    timed_out: bool
    sandboxed: bool
    error: str  # execution could not run at all: grade from stored outputs, and say so
    notes: list[str] = field(default_factory=list)


def kernel_available(language: str) -> bool:
    return _kernel_name(language.lower()) is not None


def sandbox_available() -> bool:
    return BWRAP is not None and _bwrap_works(BWRAP)


@functools.cache
def _bwrap_works(bwrap: str) -> bool:
    probe = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net",
             "--unshare-pid", "--die-with-parent", "--cap-drop", "ALL", "true"]
    try:
        subprocess.run(probe, capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        log.error("bubblewrap at %s cannot run: %s %s", bwrap, exc, getattr(exc, "stderr", ""))
        return False
    return True


def _kernel_name(language: str) -> str | None:
    from jupyter_client.kernelspec import KernelSpecManager
    specs = KernelSpecManager().get_all_specs()
    if KERNELS.get(language) in specs:
        return KERNELS[language]
    return next((name for name, s in sorted(specs.items())
                 if s["spec"].get("language", "").lower() == language), None)


def execute_notebook(nb: nbformat.NotebookNode, language: str, data: list[Path],
                     inspect: list[str], limits: ExecLimits = ExecLimits(),
                     workdir: Path | None = None) -> ExecutionResult:
    """Run ``nb`` in a fresh sandboxed kernel; never raises for a student's code."""
    started, language, names = time.perf_counter(), language.lower(), list(dict.fromkeys(inspect))
    kernel, sandboxed, notes = _kernel_name(language) or "", sandbox_available(), []

    def failed(error: str) -> ExecutionResult:
        log.error("notebook not executed: %s", error)
        return ExecutionResult([], scan.missing(names, f"not executed: {error}"), kernel, language,
                               time.perf_counter() - started, False, sandboxed, error, notes)

    if not kernel:
        return failed(f"no Jupyter kernel for {language} (looked for {KERNELS.get(language)!r})")
    if not sandboxed and not limits.allow_unsandboxed:
        return failed("the sandbox (bubblewrap, `bwrap`) is missing or cannot run here: student "
                      "code was not run; install bubblewrap or allow unsandboxed execution")
    if not sandboxed:
        log.warning("running student code WITHOUT the sandbox: bubblewrap is unavailable")
        notes.append("ran WITHOUT the sandbox (bubblewrap unavailable): resource limits only, "
                     "no network or filesystem isolation")
    if os.geteuid() == 0:
        notes.append("the grader runs as root, which the kernel exempts from the process limit")
    work = None
    try:
        work = Path(tempfile.mkdtemp(prefix="grader-run-", dir=workdir))
        layout = _Layout.prepare(work, nb, data, sandboxed)
        notes += layout.notes
        marker = f"@@grader-inspect-{uuid.uuid4().hex}@@"
        code = scan.inspection_code(language, names, marker) if names else ""
        events, killed = _run(layout, kernel, code, limits, sandboxed)
    except (SandboxError, OSError) as exc:  # setting up the run failed: not the student's doing
        return failed(str(exc))
    finally:
        if workdir is None and work is not None:
            shutil.rmtree(work, onerror=lambda *a: log.warning("cannot remove %s", a[1]))
    return _result(events, killed, names, marker, kernel, language, started, sandboxed, notes)


def _result(events: list[dict[str, Any]], killed: bool, names: list[str], marker: str,
            kernel: str, language: str, started: float, sandboxed: bool,
            notes: list[str]) -> ExecutionResult:
    kinds = {e.get("event"): e for e in events}
    cells = [CellRun(e["cell_id"], e["index"], e["ok"], strip_ansi(e["error"]),
                     tuple(Output(o["kind"], strip_ansi(o["text"]), tuple(o["mime"]), o["name"])
                           for o in e["outputs"]), e["seconds"])
             for e in events if e.get("event") == "cell"]
    stop, fatal = kinds.get("stop", {}).get("reason", ""), kinds.get("fatal", {}).get("error", "")
    error = "" if "start" in kinds else f"the kernel could not start: {fatal}"
    if killed or stop == "dead" or (not error and "done" not in kinds):
        notes.append("the total time limit was reached: the sandbox was killed" if killed else
                     "the kernel died; later cells were not run" if stop == "dead" else
                     f"the run ended early, later cells did not run: {fatal or 'runner killed'}")
    got = kinds.get("inspect", {"error": error or "execution stopped"})
    variables = scan.parse_inspection(got.get("text", ""), marker, names, got.get("error", ""))
    seconds = round(time.perf_counter() - started, 3)
    log.info("ran %d cells in %.1f s (%s, sandboxed=%s)", len(cells), seconds, kernel, sandboxed)
    return ExecutionResult(cells, variables, kernel, language, seconds,
                           killed or stop in ("timeout", "total"), sandboxed, error, notes)


@dataclass
class _Layout:
    """The run's work folder and where the data appears inside the sandbox."""

    work: Path
    sandboxed: bool
    files: dict[str, list[tuple[PurePosixPath, Path]]] = field(default_factory=dict)
    tops: set[str] = field(default_factory=set)  # top-level folders overlaid from work/mnt
    notes: list[str] = field(default_factory=list)

    @property
    def cwd(self) -> Path:
        return self.work / "a" / "b" / "nb"

    @classmethod
    def prepare(cls, work: Path, nb: Any, data: list[Path], sandboxed: bool) -> _Layout:
        self = cls(work, sandboxed)
        for sub in ("home", "runtime", "tmp", "mnt", "a/b/nb"):
            (work / sub).mkdir(parents=True, exist_ok=True)
        seed_home(work / "home")
        stored = self._store(data)
        code = "\n".join("".join(c.get("source", "")) for c in nb.get("cells", [])
                         if c.get("cell_type") == "code")  # source may be a list of lines
        dirs = [(self.cwd, work)]
        for target in scan.chdir_targets(code):
            found = self._resolve(target, self.cwd, work)
            if found and found[0] not in [d for d, _ in dirs]:
                dirs.append(found)
                self.notes.append(f"working directory {target!r} (setwd/chdir) exists in the "
                                  "sandbox and holds the assignment's data")
        for (rel, path), (folder, root) in itertools.product(stored, dirs):
            self._place(folder / rel.name, path)
            for up in (folder, folder.parent, folder.parent.parent):  # data/, ../data/, ../../
                if up.is_relative_to(root):
                    self._place(up / "data" / rel, path)
        for text in dict.fromkeys(scan.string_literals(code)):
            self._map_literal(text, dirs)
        (work / "notebook.ipynb").write_text(json.dumps(nb), encoding="utf-8")
        return self

    def _store(self, data: list[Path]) -> list[tuple[PurePosixPath, Path]]:
        """Copy the data in (students may overwrite it); (path within its folder, copy)."""
        stored: list[tuple[PurePosixPath, Path]] = []
        if missing := [str(i) for i in data if not Path(i).exists()]:
            raise SandboxError(f"assignment data not found: {', '.join(missing)}")
        for item, path in ((Path(i), p) for i in data
                           for p in (sorted(Path(i).rglob("*")) if Path(i).is_dir() else [i])):
            if not path.is_file():
                continue
            rel = PurePosixPath(path.relative_to(item).as_posix() if item.is_dir() else path.name)
            copy = self.work / "store" / str(len(stored)) / rel.name
            try:
                copy.parent.mkdir(parents=True)
                shutil.copy2(path, copy)
            except OSError as exc:
                raise SandboxError(f"cannot copy assignment data {path}: {exc}") from exc
            stored.append((rel, copy))
            self.files.setdefault(rel.name.lower(), []).append((rel, copy))
        return stored

    def _place(self, dest: Path, source: Path) -> bool:
        if dest.exists() or dest.is_symlink():
            return dest.resolve() == source.resolve()
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.symlink_to(source)
            return True
        except OSError as exc:
            self.notes.append(f"could not place data at {dest}: {exc}")
            return False

    def _resolve(self, text: str, base: Path, root: Path) -> tuple[Path, Path] | None:
        """(where ``text`` lives in the work folder, the root it must stay under)."""
        if text.startswith("~/") or text == "~":
            text, base, root = text[2:], self.work / "home", self.work / "home"
        if not text.startswith("/"):
            target = Path(os.path.normpath(base / text))
            return (target, root) if target.is_relative_to(root) else None
        path = PurePosixPath(posixpath.normpath(text))
        parts, why = path.parts, ""
        if len(parts) < 3:
            why = "a file at the root of the file system"
        elif not self.sandboxed:
            why = "absolute paths need the sandbox"
        elif parts[1] == "tmp":
            return self.work / "tmp" / Path(*parts[2:]), self.work / "tmp"
        elif parts[1] in SYSTEM_DIRS:
            why = f"/{parts[1]} is a system folder"
        elif Path("/", parts[1]).is_symlink() or Path("/", parts[1], parts[2]).exists():
            why = f"/{parts[1]}/{parts[2]} exists on this machine"
        if why:
            self.notes.append(f"path {text!r} not mapped: {why}")
            return None
        self.tops.add(parts[1])
        return self.work / "mnt" / Path(*parts[1:]), self.work / "mnt" / parts[1]

    def _map_literal(self, text: str, dirs: list[tuple[Path, Path]]) -> None:
        base = re.split(r"[\\/]", text)[-1].lower()
        if not base or base not in self.files or len(text) > 1000:
            return
        rel, source = next(((r, s) for r, s in self.files[base]
                            if text.replace("\\", "/").endswith(r.as_posix())), self.files[base][0])
        bases = [(self.cwd, self.work)] if text.startswith(("/", "~")) else dirs
        found = [self._resolve(text, folder, root) for folder, root in bases]
        if [self._place(f[0], source) for f in found if f].count(True):
            self.notes.append(f"data path {text!r} mapped to the assignment's {rel}")


def _env() -> dict[str, str]:
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


def _bwrap_argv(layout: _Layout) -> list[str]:
    work = layout.work
    argv = [str(BWRAP), "--die-with-parent", "--new-session", "--unshare-net", "--unshare-pid",
            "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--cap-drop", "ALL"]

    def expose(entry: Path) -> list[str]:  # the host's entry, read-only, at the same place
        link = entry.is_symlink()
        return [*(["--symlink", os.readlink(entry)] if link else ["--ro-bind", str(entry)]),
                str(entry)] if link or entry.is_dir() or entry.is_file() else []

    for entry in sorted(Path("/").iterdir()):
        if entry.name not in {"dev", "proc", "tmp"} | layout.tops and entry.is_dir():
            argv += expose(entry)
    argv += ["--dev", "/dev", "--proc", "/proc", "--bind", str(work / "tmp"), "/tmp"]
    for top in sorted(layout.tops):
        argv += ["--bind", str(work / "mnt" / top), f"/{top}"]
        if Path("/", top).is_dir():
            for child in sorted(Path("/", top).iterdir()):
                argv += expose(child)
    if len(REPO.parts) > 2 and REPO.parts[1] not in SYSTEM_DIRS:  # hide stored grades, config
        keep = [RUNNER] + [p for p in (Path(sys.prefix),) if p.is_relative_to(REPO)]
        argv += ["--tmpfs", str(REPO), *(a for p in keep for a in ("--ro-bind", str(p), str(p))),
                 "--remount-ro", str(REPO)]
    return [*argv, "--bind", str(work), str(work), "--remount-ro", "/",
            "--chdir", str(layout.cwd), "--"]


def _limiter(limits: ExecLimits) -> Callable[[], None]:
    def _owned(proc_entry: Path) -> bool:
        try:
            return proc_entry.stat().st_uid == os.getuid()
        except FileNotFoundError:  # the process ended while we looked
            return False

    mib, cpu = 1024 * 1024, limits.total_timeout_s + GRACE_S
    wanted = {resource.RLIMIT_AS: limits.memory_mb * mib,
              resource.RLIMIT_FSIZE: limits.max_file_mb * mib,
              resource.RLIMIT_NPROC: limits.max_processes + sum(
                  _owned(p) for p in Path("/proc").iterdir() if p.name.isdigit()),
              resource.RLIMIT_CPU: cpu, resource.RLIMIT_CORE: 0}
    caps = {w: v if (hard := resource.getrlimit(w)[1]) == resource.RLIM_INFINITY
            else min(v, hard) for w, v in wanted.items()}  # never above the current hard limit

    def apply() -> None:  # runs in the child between fork and exec
        for which, value in caps.items():
            resource.setrlimit(which, (value, value))
    return apply


def _run(layout: _Layout, kernel: str, code: str, limits: ExecLimits,
         sandboxed: bool) -> tuple[list[dict[str, Any]], bool]:
    """Start the runner; return its events and whether the wall clock killed it."""
    read_fd, write_fd = os.pipe()
    spec = {"notebook": str(layout.work / "notebook.ipynb"), "kernel": kernel, "code": code,
            "work": str(layout.work), "cwd": str(layout.cwd), "events_fd": write_fd,
            "cell_timeout_s": limits.cell_timeout_s, "total_timeout_s": limits.total_timeout_s}
    (layout.work / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    prefix = _bwrap_argv(layout) if sandboxed else []
    argv = [*prefix, sys.executable, "-I", str(RUNNER), str(layout.work / "spec.json")]
    events: list[dict[str, Any]] = []

    def read_events() -> None:
        with os.fdopen(read_fd, "rb") as stream:
            for line in stream:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    log.warning("unreadable event from the sandbox runner: %r", line[:200])

    reader = threading.Thread(target=read_events, daemon=True)
    log_path = layout.work / "runner.log"
    with open(log_path, "wb") as runner_log:
        try:
            proc = subprocess.Popen(
                argv, cwd=layout.cwd, env=_env(), stdin=subprocess.DEVNULL,
                stdout=runner_log, stderr=subprocess.STDOUT, pass_fds=(write_fd,),
                preexec_fn=_limiter(limits), start_new_session=True)
        except (OSError, subprocess.SubprocessError) as exc:
            os.close(read_fd)
            raise SandboxError(f"cannot start the sandbox runner: {exc}") from exc
        finally:
            os.close(write_fd)
        reader.start()
        try:
            proc.wait(timeout=limits.total_timeout_s + GRACE_S)
            killed = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            killed = True
    reader.join(timeout=30)
    if not any(e.get("event") in ("start", "fatal") for e in events):
        tail = log_path.read_text(encoding="utf-8", errors="replace").strip()[-1000:]
        raise SandboxError(f"the sandbox runner exited with {proc.returncode} before the "
                           f"kernel started: {tail}")
    return events, killed
