"""Archiving and deleting assignments, without losing a grade.

Archiving hides an assignment from the pages' pickers and keeps everything: its folder,
its rubric versions and its grades in the store. The names of the archived assignments
are kept in ``archived.json`` in the folder of the created assignments (a bundled
example can be archived too: its own folder is never written); ``restore`` brings one
back. Deleting removes a created assignment's folder from the pickers for good: the
folder is moved aside (``.deleted/<name>``, so a mistake can still be undone by hand)
and its grades stay in the store, where an export made before still matches them. Its
name stays taken, so a new assignment never inherits the old one's grades. The page
asks for confirmation and offers the grades' downloads first.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import InputError
from ..store.database import Store

__all__ = ["ARCHIVE_FILE", "DELETED", "GradesHeld", "archive", "archived_names", "delete",
           "grade_count", "grades_held", "restore", "retired_names"]

log = logging.getLogger(__name__)


class Workspace(Protocol):
    """What of grader.service.workspace.Workspace the shelf uses (no import of it: the
    workspace reads the shelf's lists)."""

    user_dir: Path
    store: Store

    def root(self, name: str) -> Path: ...


ARCHIVE_FILE = "archived.json"
DELETED = ".deleted"


def archived_names(user_dir: Path) -> set[str]:
    """The names of the archived assignments; InputError naming the file when it is
    not a JSON list of names."""
    path = user_dir / ARCHIVE_FILE
    if not path.is_file():
        return set()
    try:
        names = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(str(path), f"not a readable list of archived assignments ({exc})") \
            from None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InputError(str(path), "not a JSON list of assignment names")
    return set(names)


def retired_names(user_dir: Path) -> set[str]:
    """The names of deleted assignments: taken for good (their grades are in the store)."""
    gone = user_dir / DELETED
    return {p.name for p in gone.iterdir() if p.is_dir()} if gone.is_dir() else set()


def _write(user_dir: Path, names: set[str]) -> None:
    user_dir.mkdir(parents=True, exist_ok=True)
    tmp = user_dir / f".{ARCHIVE_FILE}.tmp"
    tmp.write_text(json.dumps(sorted(names), indent=1) + "\n", encoding="utf-8")
    tmp.replace(user_dir / ARCHIVE_FILE)


def archive(workspace: Workspace, name: str) -> None:
    """Hide ``name`` from the pickers; its folder and grades are kept."""
    workspace.root(name)  # InputError when there is no such assignment
    _write(workspace.user_dir, archived_names(workspace.user_dir) | {name})
    log.info("assignment %s archived", name)


def restore(workspace: Workspace, name: str) -> None:
    """Bring an archived assignment back into the pickers."""
    names = archived_names(workspace.user_dir)
    if name not in names:
        raise InputError(name, "is not archived")
    _write(workspace.user_dir, names - {name})
    log.info("assignment %s restored from the archive", name)


def grade_count(workspace: Workspace, name: str) -> int:
    """How many grades the store holds for ``name`` (every rubric version)."""
    aid = workspace.store.assignment_id(name)
    return 0 if aid is None else len(workspace.store.list_grades(aid))


@dataclass(frozen=True, slots=True)
class GradesHeld:
    """The grades the store holds for an assignment, as an instructor counts them: by
    student, then what the grades beyond one a student are."""

    students: int
    grades: int
    older_versions: bool  # a student has grades under several rubric versions
    more_notebooks: bool  # a student has several grades under one version (resubmitted)

    @property
    def words(self) -> str:
        """"10 students, 16 grades with older rubric versions"; "1 student, 1 grade"."""
        if not self.grades:
            return "no grades"
        who = f"{self.students} student{'s' if self.students != 1 else ''}"
        held = f"{self.grades} grade{'s' if self.grades != 1 else ''}"
        extra = [w for w, on in (("older rubric versions", self.older_versions),
                                 ("earlier notebooks", self.more_notebooks)) if on]
        return f"{who}, {held}" + (f" with {' and '.join(extra)}" if extra else "")


def grades_held(workspace: Workspace, name: str) -> GradesHeld:
    """What the store holds for ``name``: students, grades (every rubric version, every
    notebook a student handed in), and why there are more grades than students."""
    aid = workspace.store.assignment_id(name)
    rows = [] if aid is None else workspace.store.list_grades(aid)
    per: dict[str, list[str]] = {}
    for g in rows:
        per.setdefault(g.student_id or g.display_name or g.file, []).append(g.rubric_version)
    return GradesHeld(len(per), len(rows), any(len(set(v)) > 1 for v in per.values()),
                      any(len(v) > len(set(v)) for v in per.values()))


def delete(workspace: Workspace, name: str) -> Path:
    """Take a created assignment out of the workspace: its folder moved to
    ``.deleted/<name>`` (returned), its grades kept in the store. A bundled example
    cannot be deleted (archive it instead)."""
    root = workspace.root(name)
    if root.parent.resolve() != workspace.user_dir.resolve():
        raise InputError(name, "is a bundled example: archive it instead (its folder ships "
                               "with the grader)")
    target = workspace.user_dir / DELETED / name
    if target.exists():
        raise InputError(str(target), "a deleted assignment of that name is there already")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(root), str(target))
    names = archived_names(workspace.user_dir)
    if name in names:
        _write(workspace.user_dir, names - {name})
    log.info("assignment %s deleted: folder moved to %s, %d grades kept in the store", name,
             target, grade_count(workspace, name))
    return target
