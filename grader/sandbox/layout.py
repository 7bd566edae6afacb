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
"""

from __future__ import annotations

import itertools
import json
import os
import posixpath
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from grader.errors import SandboxError
from grader.sandbox import inspect_code as scan
from grader.sandbox.kernel_cache import seed_home
from grader.sandbox.view import View

__all__ = ["Layout"]


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
        else:
            why = self.view.unmappable(path)
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
