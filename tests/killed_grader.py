"""Batches of another grader process, for tests: one killed with SIGKILL after it started
a batch (what the app leaves when it is killed while grading), or one still alive."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from grader.service.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]

# argv: database, assignment id, rubric version id, then file sha256 student name per item;
# prints the batch id, then waits for a line on stdin (the parent kills it meanwhile).
_SCRIPT = """
import sys
from grader.store.database import Store

db, aid, rv, *rest = sys.argv[1:]
items = [tuple(rest[i:i + 4]) for i in range(0, len(rest), 4)]
store = Store(db)
print(store.start_batch(int(aid), int(rv), items), flush=True)
sys.stdin.readline()
"""


class OtherGrader:
    """A grader process that started a batch on ``db`` and is still alive."""

    def __init__(self, db: Path, assignment_id: int, rubric_version_id: int,
                 items: Sequence[tuple[str, str, str, str]]) -> None:
        args = [str(db), str(assignment_id), str(rubric_version_id),
                *(field for item in items for field in item)]
        self.proc = subprocess.Popen([sys.executable, "-c", _SCRIPT, *args], cwd=REPO,
                                     env={**os.environ, "PYTHONPATH": str(REPO)},
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():
            self.proc.kill()
            raise RuntimeError(f"the other grader failed: {line}{self.proc.communicate()[1]}")
        self.batch = int(line)

    def kill(self) -> None:
        """kill -9, as when the app is killed while grading."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.communicate(timeout=30)
        assert self.proc.returncode == -signal.SIGKILL

    def __enter__(self) -> OtherGrader:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.kill()


def killed_batch(db: Path, assignment_id: int, rubric_version_id: int,
                 items: Sequence[tuple[str, str, str, str]]) -> int:
    """The id of a batch whose grader was killed right after starting it: all pending."""
    with OtherGrader(db, assignment_id, rubric_version_id, items) as other:
        other.kill()
        return other.batch


def stored_batch_items(ws: Workspace, kinds: dict[str, str]) -> tuple[int, int, list]:
    """Assignment id, rubric version id and batch items of retail-sales notebooks (student id
    -> sample name), their bytes kept in the store as grade_batch keeps them before grading."""
    from grader.pipeline import GradeInput

    subs = REPO / "examples" / "retail-sales" / "submissions"
    a = ws.load("retail-sales")
    aid = ws.assignment_id(a.name)
    rv = next(v.id for v in ws.store.rubric_versions(aid) if v.version == a.rubric.version)
    items = []
    for sid, kind in kinds.items():
        item = GradeInput(f"{sid}.ipynb", (subs / f"{kind}.ipynb").read_bytes(), sid, sid)
        ws.store.save_file(item.sha256, item.data)
        items.append((item.name, item.sha256, sid, sid))
    return aid, rv, items
