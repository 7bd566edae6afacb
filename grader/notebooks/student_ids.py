"""Whose notebook is it: a student id and a display name from where a notebook was found.

Part of ``grader.notebooks.archive``. The rules, first that applies wins:

1. Canvas: a file name (or an enclosing folder or nested ZIP name) like
   ``doejane_12345_67890_hw1.ipynb`` or ``doejane_LATE_12345_67890_hw1.ipynb``
   (name slug, optional LATE, Canvas user id, submission id, original name)
   gives student id ``12345`` and display name ``doejane``.
2. Folders: leading folders that every notebook of one archive shares are a
   wrapper and are dropped (only when the archive holds two or more notebooks).
   The first remaining folder is the student's; ``.zip`` and a GitHub download's
   ``-main``/``-master`` suffix are removed from its name. When two or more
   student folders share a prefix ending in ``-`` (GitHub Classroom:
   ``hw2-sales-octocat``, ``hw2-sales-student042``), the longest such prefix is
   stripped: ``octocat``. A lone folder with a ``-`` keeps the part after the
   last ``-`` (so a username containing ``-`` is cut; pass ``classroom_prefix``
   to say exactly what to strip). A folder without ``-`` is the id as it is.
3. Otherwise the file stem: ``student042.ipynb`` -> ``student042``.

The display name is the id except under rule 1. Ids come out as the names
give them; ``grader.notebooks.archive`` makes them safe to show.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath

__all__ = ["student_ids"]

_CANVAS_RE = re.compile(r"^(?P<slug>[A-Za-z0-9-]+)(?:_LATE)?_(?P<uid>\d{3,})_\d{3,}_.+$")
_BRANCH_RE = re.compile(r"-(?:main|master)$")


def _folder_id(part: str) -> str:
    return _BRANCH_RE.sub("", part[:-4] if part.lower().endswith(".zip") else part)


def _canvas(parts: list[str]) -> tuple[str, str] | None:
    match = next((m for m in map(_CANVAS_RE.match, reversed(parts)) if m), None)
    return (match["uid"], match["slug"]) if match else None


def _dash_prefix(names: list[str]) -> str:
    common = min(names, key=len)
    for n in names:
        while not n.startswith(common):
            common = common[:-1]
    prefix = common[: common.rfind("-") + 1]
    return prefix if all(len(n) > len(prefix) for n in names) else ""


def student_ids(paths: Sequence[str], classroom_prefix: str | None) -> list[tuple[str, str]]:
    """(student id, display name) for each '/'-separated path of one upload, in order."""
    split = [path.split("/") for path in paths]
    folders = [parts[:-1] for parts in split]
    if len(paths) >= 2:
        while all(folders) and len({f[0] for f in folders}) == 1:
            if classroom_prefix and folders[0][0].startswith(classroom_prefix):
                break
            folders = [f[1:] for f in folders]
    tops = [_folder_id(f[0]) if f else "" for f in folders]
    distinct = sorted({t for t in tops if t})
    prefix = classroom_prefix or (_dash_prefix(distinct) if len(distinct) >= 2 else "")
    result = []
    for parts, top in zip(split, tops, strict=True):
        found = _canvas(parts)
        if found is None:
            if top and prefix and top.startswith(prefix) and len(top) > len(prefix):
                student = top[len(prefix) :]
            elif top and not classroom_prefix and len(distinct) == 1 and "-" in top.strip("-"):
                student = top.strip("-").rsplit("-", 1)[1]
            else:
                student = top or PurePosixPath(parts[-1]).stem
            found = (student, student)
        result.append(found)
    return result
