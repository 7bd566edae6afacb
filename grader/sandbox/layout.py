"""A run's work folder, and the assignment's data wherever the student's code names it.

The student's code is never edited; each mapping is recorded in ``notes``:
- the working directory is ``WORK/a/b/nb``: each data file is there by name and under
  ``data/``; ``../data/`` and ``../../data/`` resolve too;
- a string literal whose base name is a data file's (any case) is placed where it
  points: relative (Windows paths are plain file names on Linux), ``~/``, ``/tmp/``, or
  under any other top-level folder that is not a system folder (``/workspaces``,
  ``/Users``, ``/home/jovyan``): the sandbox shows that folder from ``WORK/mnt/<top>``
  (``grader.sandbox.view``), runtimes under it bound back read-only; ``setwd``/
  ``os.chdir``/``%cd`` targets likewise.
A name the student's text holds never stops a run: one the file system cannot take (over
``NAME_MAX`` or ``PATH_MAX`` bytes, a NUL, characters no file name can hold) or cannot
make (through a file, a loop, a folder it may not write) is left unmapped with a note
saying why (``unusable`` and ``_place``), and the run goes on without it.
The data is copied in without following links out of its assignment folder (the nearest
folder above it with an ``assignment.toml``): a link leading elsewhere, a dangling one,
a fifo or a device stops the run with an error naming the file (``data_source``). The
assignment refuses such data when it is loaded; this is the last line.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import posixpath
import re
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from grader.errors import SandboxError
from grader.sandbox import inspect_code as scan
from grader.sandbox.kernel_cache import seed_home
from grader.sandbox.view import View

__all__ = ["Layout", "data_source", "unusable"]

log = logging.getLogger(__name__)

NAME_MAX, PATH_MAX = 255, 4096  # bytes of one name, of a whole path (Linux)
# what the file system says about a name it cannot take or make (a student's name: noted)
_NAME_ERRORS = (OSError, ValueError, RuntimeError)  # ValueError: NUL, RuntimeError: loop
MAX_LITERAL = 1000  # characters of a data path worth mapping
MAX_DIRS = 20  # working directories (setwd/chdir targets) given the data, beyond the first
MAX_NOTES = 50  # notes about names, before the rest is left unsaid
MAX_TOPS = 20  # top-level folders (/workspaces, /Users, ...) shown from the work folder


def unusable(path: Path | str) -> str:
    """Why the file system cannot take ``path`` as a name at all ("" when it can): the
    checks made before any call, so that a student's name is refused in words."""
    text = str(path)
    if "\0" in text:
        return "it holds a NUL character"
    try:
        raw = os.fsencode(text)
    except UnicodeError:
        return "it holds characters no file name can hold"
    if len(raw) >= PATH_MAX:
        return f"it is {len(raw)} bytes long, over the file system's limit of {PATH_MAX - 1}"
    if (longest := max(len(part) for part in raw.split(b"/"))) > NAME_MAX:
        return (f"one of its names is {longest} bytes long, over the file system's limit "
                f"of {NAME_MAX}")
    return ""


def shown(text: str, limit: int = 80) -> str:
    """A student's name as a note shows it: quoted, escaped, a long one cut."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


@dataclass
class Layout:
    """The run's work folder and where the data appears inside the sandbox."""

    work: Path
    sandboxed: bool
    view: View
    files: dict[str, list[tuple[PurePosixPath, Path]]] = field(default_factory=dict)
    tops: set[str] = field(default_factory=set)  # top-level folders overlaid from work/mnt
    notes: list[str] = field(default_factory=list)

    @property
    def cwd(self) -> Path:
        return self.work / "a" / "b" / "nb"

    @property
    def identity(self) -> Path:
        """The sandbox's /etc/passwd and co. (the grader's, never the student's)."""
        return self.work / "etc"

    @classmethod
    def prepare(cls, work: Path, nb: Any, data: list[Path], sandboxed: bool,
                view: View) -> Layout:
        self = cls(work, sandboxed, view)
        for sub in ("home", "runtime", "tmp", "mnt", "a/b/nb"):
            (work / sub).mkdir(parents=True, exist_ok=True)
        seed_home(work / "home")
        stored = self._store(data)
        code = "\n".join("".join(c.get("source", "")) for c in nb.get("cells", [])
                         if c.get("cell_type") == "code")  # source may be a list of lines
        dirs = [(self.cwd, work)]
        named: dict[Path, str] = {}  # chdir folders beyond the first, by the name given
        for target in dict.fromkeys(scan.chdir_targets(code)):
            found = self._resolve(target, self.cwd, work)
            if found and found[0] not in [d for d, _ in dirs]:
                if len(dirs) > MAX_DIRS:
                    self._note(f"working directories (setwd/chdir) past the first {MAX_DIRS} "
                               "named are not mapped")
                    continue
                dirs.append(found)
                named[found[0]] = target
        placed: dict[Path, int] = {}
        for (rel, path), (folder, root) in itertools.product(stored, dirs):
            placed[folder] = placed.get(folder, 0) + self._place(folder / rel.name, path)
            for up in (folder, folder.parent, folder.parent.parent):  # data/, ../data/, ../../
                if up.is_relative_to(root):
                    self._place(up / "data" / rel, path)
        for folder, target in named.items():
            self._note(f"working directory {shown(target)} (setwd/chdir) exists in the "
                       "sandbox and holds the assignment's data" if placed.get(folder) else
                       f"working directory {shown(target)} (setwd/chdir) could not be made "
                       "to hold the assignment's data")
        for text in dict.fromkeys(scan.string_literals(code)):
            self._map_literal(text, dirs)
        (work / "notebook.ipynb").write_text(json.dumps(nb), encoding="utf-8")
        return self

    def _note(self, text: str) -> None:
        if text in self.notes:
            return
        if len(self.notes) < MAX_NOTES:
            self.notes.append(text)
        elif len(self.notes) == MAX_NOTES:
            self.notes.append("more paths were named than are noted here: the rest of what "
                              "was mapped or not is left unsaid")

    def _store(self, data: list[Path]) -> list[tuple[PurePosixPath, Path]]:
        """Copy the data in (students may overwrite it); (path within its folder, copy).
        Links are not followed out of their assignment folder (``_source``)."""
        stored: list[tuple[PurePosixPath, Path]] = []
        if missing := [str(i) for i in data if not Path(i).exists()]:
            raise SandboxError(f"assignment data not found: {', '.join(missing)}")
        for item in map(Path, data):
            for rel, path in _listed(item):
                copy = self.work / "store" / str(len(stored)) / rel.name
                copy.parent.mkdir(parents=True)
                _copy_in(path, copy)
                stored.append((rel, copy))
                self.files.setdefault(rel.name.lower(), []).append((rel, copy))
        return stored

    def _place(self, dest: Path, source: Path) -> bool:
        """Link ``dest`` (a name the student's code gives) to the data file ``source``;
        False, with a note, when the file system cannot take or make that name."""
        where = shown(str(dest.relative_to(self.work)) if dest.is_relative_to(self.work)
                      else str(dest))
        if why := unusable(dest):
            self._note(f"could not place data at {where}: {why}")
            return False
        try:
            if dest.is_symlink() or dest.exists():
                return dest.resolve() == source.resolve()
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.symlink_to(source)
            return True
        except _NAME_ERRORS as exc:
            self._note(f"could not place data at {where}: {_said(exc)}")
            return False

    def _resolve(self, text: str, base: Path, root: Path) -> tuple[Path, Path] | None:
        """(where ``text`` lives in the work folder, the root it must stay under); None,
        with a note, when it cannot be mapped."""
        if text.startswith("~/") or text == "~":
            text, base, root = text[2:], self.work / "home", self.work / "home"
        if not text.startswith("/"):
            target = Path(os.path.normpath(base / text))
            return self._usable(text, target, root) if target.is_relative_to(root) else None
        path = PurePosixPath(posixpath.normpath(text))
        parts, why = path.parts, ""
        if len(parts) < 3:
            why = "a file at the root of the file system"
        elif not self.sandboxed:
            why = "absolute paths need the sandbox"
        elif parts[1] == "tmp":
            return self._usable(text, self.work / "tmp" / Path(*parts[2:]), self.work / "tmp")
        else:
            why = self.view.unmappable(path)
        if why:
            self._note(f"path {shown(text)} not mapped: {why}")
            return None
        top = self.work / "mnt" / parts[1]
        found = self._usable(text, self.work / "mnt" / Path(*parts[1:]), top)
        if found is None or parts[1] in self.tops:
            return found
        if len(self.tops) >= MAX_TOPS:  # each is a mount, and a part of bwrap's command line
            self._note(f"paths under top-level folders past the first {MAX_TOPS} named are "
                       "not mapped")
            return None
        try:  # the sandbox binds each top from here: it must exist before the run starts
            top.mkdir(exist_ok=True)
        except _NAME_ERRORS as exc:
            self._note(f"path {shown(text)} not mapped: {_said(exc)}")
            return None
        self.tops.add(parts[1])
        return found

    def _usable(self, text: str, target: Path, root: Path) -> tuple[Path, Path] | None:
        if why := unusable(target):
            self._note(f"path {shown(text)} not mapped: {why}")
            return None
        return target, root

    def _map_literal(self, text: str, dirs: list[tuple[Path, Path]]) -> None:
        base = re.split(r"[\\/]", text)[-1].lower()
        if not base or base not in self.files:
            return
        if len(text) > MAX_LITERAL:
            self._note(f"data path {shown(text)} not mapped: over {MAX_LITERAL} characters")
            return
        rel, source = next(((r, s) for r, s in self.files[base]
                            if text.replace("\\", "/").endswith(r.as_posix())), self.files[base][0])
        bases = [(self.cwd, self.work)] if text.startswith(("/", "~")) else dirs
        found = [self._resolve(text, folder, root) for folder, root in bases]
        if [self._place(f[0], source) for f in found if f].count(True):
            self._note(f"data path {shown(text)} mapped to the assignment's {rel}")


def _said(exc: BaseException) -> str:
    """What the file system said, without the (perhaps very long) name it was given."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)[:120] or type(exc).__name__


def _assignment_root(path: Path) -> Path | None:
    """The nearest folder above ``path`` holding an ``assignment.toml``."""
    return next((p for p in Path(os.path.abspath(path)).parents
                 if (p / "assignment.toml").is_file()), None)


def data_source(path: Path) -> Path:
    """The file to copy for the data file ``path``: itself, or where its link points when
    that stays inside its assignment folder. Anything else raises SandboxError: a link
    out of the folder (``/etc/shadow``) never reaches a run."""
    if not path.is_symlink():
        return path
    target, root = path.resolve(), _assignment_root(path)
    if root is None or not target.is_relative_to(root.resolve()):
        where = f"outside its assignment folder {root}" if root else "outside any assignment"
        log.error("assignment data %s is a link to %s (%s): not copied into the run", path,
                  os.readlink(path), where)
        raise SandboxError(f"assignment data {path} is a link to {os.readlink(path)!r}, "
                           f"{where}: not copied into the run (copy the file in instead)")
    return target


def _listed(item: Path, seen: frozenset[Path] = frozenset()
            ) -> list[tuple[PurePosixPath, Path]]:
    """(path within ``item``, the file) for the data ``item``, links not followed out of
    the assignment (a link to a folder inside it is entered once)."""
    if not item.is_dir():
        return [(PurePosixPath(item.name), item)]
    top = data_source(item)
    found = [(Path(folder, n), Path(folder, n).relative_to(top))
             for folder, dirs, files in os.walk(top, followlinks=False) for n in dirs + files]
    out: list[tuple[PurePosixPath, Path]] = []
    for path, rel in sorted(found):
        if path.is_dir() and not path.is_symlink():
            continue
        real = data_source(path)
        if not real.is_dir():
            out.append((PurePosixPath(rel.as_posix()), path))
        elif real not in seen:
            out += [(PurePosixPath(rel.as_posix(), r.as_posix()), f)
                    for r, f in _listed(real, seen | {real})]
    return out


def _copy_in(path: Path, copy: Path) -> None:
    """Copy the regular file ``path`` (or the file its link inside the assignment names)
    without following a link at the last step: a fifo, a device or a swapped link is
    refused."""
    source = data_source(path)
    try:
        if not stat.S_ISREG(os.lstat(source).st_mode):
            raise SandboxError(f"assignment data {path} is not a regular file (a device, a "
                               "fifo or a socket): not copied into the run")
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise SandboxError(f"cannot copy assignment data {path}: {exc}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SandboxError(f"assignment data {path} is not a regular file (a device, a "
                               "fifo or a socket): not copied into the run")
        with os.fdopen(os.dup(fd), "rb") as src, open(copy, "xb") as dst:
            shutil.copyfileobj(src, dst)
        os.utime(copy, ns=(info.st_atime_ns, info.st_mtime_ns))
    except OSError as exc:
        raise SandboxError(f"cannot copy assignment data {path}: {exc}") from exc
    finally:
        os.close(fd)
