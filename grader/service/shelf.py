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
from pathlib import Path
from typing import Protocol

from ..errors import InputError
from ..store.database import Store

__all__ = ["ARCHIVE_FILE", "DELETED", "archive", "archived_names", "delete", "grade_count",
           "restore", "retired_names"]

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
