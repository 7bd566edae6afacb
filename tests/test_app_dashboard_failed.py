"""The Dashboard's failed files in AppTest, issue 33: batches with 1 and 4 unreadable
files said "failed 0" and "Failed files: None recorded"; with names hidden, students of
two assignments were both "student_001.ipynb". Real grading (from the notebooks' stored
outputs), real uploads read as the Grade page reads them, a real store."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from grader.layers.base import GradeOptions
from grader.notebooks.stream import read_class
from grader.pipeline import GradeInput, Grader
from grader.service.batch import grade_batch
from grader.service.unread import record_unread
from grader.service.workspace import Workspace
from grader.store.database import Store
from tests.conftest import open_app

ROOT = Path(__file__).resolve().parents[1]
PAGE = "app_pages/dashboard.py"
pytestmark = pytest.mark.slow


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def _batch(ws: Workspace, name: str, uploads: list[tuple[str, bytes]]) -> int:
    """The uploads read as the Grade page reads them, the readable ones graded as one
    batch, the unreadable ones recorded with it (as a grading job does when it ends)."""
    store = ws.store
    with read_class(uploads, store.save_file) as cls:
        refs, problems = cls.refs, cls.problems
    items = [GradeInput(r.name, store.get_file(r.sha256) or b"", r.student_id, r.display_name)
             for r in refs]
    # one more file the grader itself refuses when it grades it: an error grade
    items.append(GradeInput("late.ipynb", b"{oops", "late", "late"))
    result = grade_batch(Grader(ws.load(name), GradeOptions(execute=False)), items, store)
    assert record_unread(store, result.batch_id, problems) == len(problems)
    assert result.batch_id is not None
    return result.batch_id


def test_unreadable_files_are_counted_listed_in_words_and_told_apart(app_data: Path):
    good = (ROOT / "examples" / "retail-sales" / "submissions" / "complete.ipynb").read_bytes()
    func = (ROOT / "examples" / "py-functions" / "submissions" / "complete.ipynb").read_bytes()
    with Store(app_data / "grader.db") as store:
        ws = Workspace(store, app_data / "assignments")
        one = _batch(ws, "retail-sales", [("s1.ipynb", good), ("bad.ipynb", b"{oops")])
        four = _batch(ws, "py-functions", [("f1.ipynb", func), ("class.zip", _zip({
            f"f{i}.ipynb": b"# a script\nprint(1)\n" for i in range(2, 6)}))])
    at = open_app(PAGE)
    assert not at.exception, at.exception
    batches = next(d.value for d in at.dataframe if "wall (s)" in d.value.columns)
    failed = dict(zip(batches["batch"], batches["failed"], strict=True))
    assert (failed[one], failed[four]) == (1, 4)
    assert not [c for c in at.caption if c.value.startswith("None")]
    rows = next(d.value for d in at.dataframe if "recorded as" in d.value.columns)
    assert {"bad.ipynb", "class.zip/f2.ipynb", "late.ipynb"} <= set(rows["file"])
    reasons = " ".join(rows["reason"])
    assert "not a readable notebook (not JSON)" in reasons
    assert "line 1, column" not in reasons  # the parser's words are folded away
    (detail,) = [e for e in at.expander if e.label == "Technical detail of the failed files"]
    assert "Expecting value at line 1, column 1" in detail.code[0].value

    at.toggle(key="_anonymise_switch").set_value(True).run()
    assert not at.exception, at.exception
    rows = next(d.value for d in at.dataframe if "recorded as" in d.value.columns)
    late = sorted(f for f in rows["file"] if f.endswith("student_002.ipynb"))
    # the refused "late.ipynb" is each assignment's second student: told apart
    assert late == ["py-functions/student_002.ipynb", "retail-sales/student_002.ipynb"]
    assert len(set(rows["file"])) == len(rows)  # one name, one student
    assert not any("late" in f or "bad" in f for f in rows["file"])
