"""What the instructor must know before taking a gradebook export, in words.

- Notebooks *not graded* (their letter says so: unreadable, or another assignment's
  notebook that the wrong-notebook gate scored 0, ``grader.scoring.GATES``) are left
  blank in the Canvas CSV and the CSV unless the instructor asks for 0
  (``exports.formats.not_graded``); ``not_graded_line`` names them and says what to do:
  drop a wrong upload from the gradebook, or grade it by hand.
- A Canvas CSV is matched by Canvas on its ID column, Canvas's numeric user id, which
  Canvas's own download names carry (``doejane_12345_67890_hw1.ipynb``). Notebooks named
  otherwise get their id from the file name (``student042``): ``canvas_id_line`` says
  so before the download, naming a few.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..scoring import GATES
from ..store.database import GradeRow

__all__ = ["canvas_id_line", "is_canvas_id", "not_graded_line", "not_graded_rows"]

_CANVAS_ID = re.compile(r"\d{3,}")  # as grader.notebooks.student_ids reads them
_NAMED = 3  # the ids a line names before "and N more"


def is_canvas_id(student_id: str) -> bool:
    return bool(_CANVAS_ID.fullmatch(student_id))


def not_graded_rows(rows: Sequence[GradeRow]) -> list[GradeRow]:
    """The grades whose letter says "not graded": unreadable (no score), or gated as
    another assignment's notebook and still at 0 (no override gave it points)."""
    return [g for g in rows if g.status == "error" or g.score is None
            or (not g.score and set(g.flags) & set(GATES))]


def _some(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_NAMED])
    return shown + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")


def not_graded_line(rows: Sequence[GradeRow], as_zero: bool) -> str:
    """What an export does with the notebooks not graded among ``rows`` ("" when none)."""
    gone = not_graded_rows(rows)
    if not gone:
        return ""
    n = len(gone)
    who = _some([g.display_name or g.student_id or g.file for g in gone])
    what = (f"{n} notebook{'s were' if n != 1 else ' was'} not graded (unreadable, or "
            f"another assignment's notebook): {who}. ")
    if as_zero:
        return what + "The Canvas CSV and the CSV give them 0, as you asked."
    return what + ("The Canvas CSV and the CSV leave them blank, never 0: drop a wrong upload "
                   "from the gradebook (below the grade), override its criteria if it is the "
                   "right notebook, or tick the box to export them as 0.")


def canvas_id_line(student_ids: Sequence[str], files: Sequence[str]) -> str:
    """A warning when some rows of a Canvas CSV carry no Canvas user id (their ID column
    holds a name from the file), naming a few of the files; "" when every row has one."""
    named = [f for sid, f in zip(student_ids, files, strict=True) if not is_canvas_id(sid)]
    if not named:
        return ""
    n, total = len(named), len(student_ids)
    rows = ("The one row" if total == 1 else f"All {total} rows") if n == total \
        else f"{n} of {total} rows"
    one = n == 1
    return (f"{rows} of the Canvas CSV carr{'ies' if one else 'y'} no Canvas user id: "
            f"{'its' if one else 'their'} ID column holds a name taken from the file ("
            f"{_some(named)}), which Canvas cannot match to a student. Canvas's own download "
            "(Assignments > Download submissions) names each file with the student's id "
            "(name_12345_67890_file.ipynb): grade those files to import this CSV, or enter "
            "these grades by hand.")
