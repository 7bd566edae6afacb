"""Assignment folders: assignment.toml names the rubric, template, solution and data.

See docs/rubric-format.md. Loading checks that every named file exists and
reports every problem at once, naming the folder's assignment.toml. The data never
leads out of the folder: a link (at any depth under a data folder) is followed only
where it resolves inside the assignment folder; one that leads outside, a dangling one
and anything that is not a file or a folder (a device, a fifo, a socket) are refused,
naming the file and where it points (``data_problems``), on loading and again when the
files are listed for a run (``Assignment.data_files``).
"""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .errors import RubricError
from .packages.declared import Packages, read_packages
from .rubrics.schema import Rubric, _as_tuple, load_rubric


@dataclass(frozen=True, slots=True)
class Assignment:
    """An assignment folder: its rubric and the files named by assignment.toml."""

    name: str
    root: Path
    rubric: Rubric
    rubric_path: Path
    template: Path
    solution: Path
    data: tuple[Path, ...] = ()
    submissions: Path | None = None
    title: str = ""
    # what its notebooks need beyond the grader's own (grader.packages)
    packages: Packages = field(default_factory=Packages)

    @property
    def language(self) -> str:
        return self.rubric.language

    def data_files(self) -> list[Path]:
        """The data files as named in the folder (a link inside it keeps its own name);
        raises RubricError if a link now leads outside the folder (it was changed after
        loading)."""
        problems = [p for d in self.data for p in data_problems(self.root, d)]
        if problems:
            raise RubricError(str(self.root / "assignment.toml"), problems)
        return [f for p in self.data for f in _files(p)]


def _where(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def _entries(top: Path) -> list[Path]:
    """Everything under the folder ``top``, links listed but not entered."""
    if not top.is_dir() or top.is_symlink():
        return []
    return sorted(Path(folder, n) for folder, dirs, files in os.walk(top, followlinks=False)
                  for n in dirs + files)


def data_problems(root: Path, path: Path, _seen: frozenset[Path] = frozenset()) -> list[str]:
    """Why the data at ``path`` (inside the assignment folder ``root``) cannot be given to
    a run: each link that resolves outside ``root`` or nowhere, each special file."""
    root, problems = root.resolve(), []
    for entry in [path, *_entries(path)]:
        shown = str(entry.relative_to(root) if entry.is_relative_to(root) else entry)
        if entry.is_symlink():
            target = entry.resolve()
            if not target.is_relative_to(root):
                problems.append(f"data {shown!r} is a link to {_where(entry)!r}, outside the "
                                "assignment folder: refused (copy the file in instead)")
            elif not target.exists():
                problems.append(f"data {shown!r} is a link to {_where(entry)!r}, which does "
                                "not exist")
            elif target.is_dir() and target not in _seen:
                problems += data_problems(root, target, _seen | {target})
            continue
        try:
            mode = entry.lstat().st_mode
        except OSError:
            continue  # gone while we looked; a missing data entry is reported on its own
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            problems.append(f"data {shown!r} is not a file or a folder (a device, a fifo or "
                            "a socket): refused")
    return list(dict.fromkeys(problems))


def _files(top: Path, _seen: frozenset[Path] = frozenset()) -> list[Path]:
    """The files at or under ``top``, each under the name the folder gives it (links to
    folders inside the assignment entered once)."""
    if not top.is_dir():
        return [top]
    out: list[Path] = []
    for entry in _entries(top):
        real = entry.resolve()
        if entry.is_symlink() and real.is_dir():
            out += _files(real, _seen | {real}) if real not in _seen else []
        elif real.is_file():
            out.append(entry)
    return list(dict.fromkeys(out))


def load_assignment(root: Path) -> Assignment:
    """Read ROOT/assignment.toml and the rubric it names; every file must exist."""
    root = root.resolve()
    manifest = root / "assignment.toml"
    if not manifest.exists():
        raise RubricError(
            str(root), ["no assignment.toml in this folder (see docs/rubric-format.md)"]
        )
    try:
        data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RubricError(str(manifest), [f"cannot read: {exc}"]) from exc
    problems: list[str] = []
    for key in sorted(
        set(data) - {"title", "rubric", "template", "solution", "data", "submissions",
                     "packages"}
    ):
        problems.append(f"unknown key {key!r}")
    paths: dict[str, Path] = {}
    for key in ("rubric", "template", "solution"):
        if not isinstance(data.get(key), str):
            problems.append(f"`{key}` must name a file")
            continue
        paths[key] = (root / data[key]).resolve()
        if not paths[key].is_file():
            problems.append(f"{key} file {data[key]!r} does not exist")
    data_paths = []
    for d in _as_tuple(data.get("data", []), "data", problems):
        p = root / d
        if not p.resolve().is_relative_to(root):
            problems.append(f"data {d!r} leads outside the assignment folder (to "
                            f"{str(p.resolve())!r}): refused")
            continue
        if not p.exists():
            problems.append(f"data {d!r} does not exist")
            continue
        problems += data_problems(root, p)
        data_paths.append(p)
    subs = data.get("submissions")
    packages = read_packages(root, data.get("packages"), "assignment.toml", problems)
    if problems:
        raise RubricError(str(manifest), problems)
    rubric = load_rubric(paths["rubric"])
    return Assignment(
        name=root.name,
        root=root,
        rubric=rubric,
        rubric_path=paths["rubric"],
        template=paths["template"],
        solution=paths["solution"],
        data=tuple(data_paths),
        submissions=(root / subs).resolve() if isinstance(subs, str) else None,
        title=str(data.get("title") or rubric.title),
        packages=packages,
    )
