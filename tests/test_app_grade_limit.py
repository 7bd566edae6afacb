"""The Grade page asks before grading a batch over the limit (issue 24, item 5): a
2,000-notebook ZIP once graded for 21 minutes with nobody asked."""

from __future__ import annotations

import io
import zipfile

import nbformat

from grader.service.sizing import MAX_NOTEBOOKS
from grader.store.database import Store
from tests.conftest import open_app

PAGE = "app_pages/grade.py"


def big_zip(n: int) -> bytes:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i in range(n):
            zf.writestr(f"fall/student{i:04d}/hw.ipynb", nbformat.writes(nb))
    return buf.getvalue()


def test_a_batch_over_the_limit_waits_for_a_confirmation(app_data):
    n = MAX_NOTEBOOKS + 1
    at = open_app(PAGE)
    at.file_uploader(key="grade_files_0").set_value(
        [("fall.zip", big_zip(n), "application/zip")])
    at.checkbox(key="grade_execute").set_value(False)
    at.checkbox(key="grade_llm").set_value(False)
    at.button(key="grade_run").click().run()
    assert not at.exception, at.exception
    warnings = [w.value for w in at.warning]
    assert any(f"{n:,} notebooks (fall.zip: {n:,})" in w and "Grade them all?" in w
               for w in warnings), warnings
    assert "grade_job" not in at.session_state or at.session_state["grade_job"] is None
    at.button(key="grade_confirm_no").click().run()
    assert not any("Grade them all?" in w.value for w in at.warning)
    store = Store(app_data / "grader.db")
    try:  # nothing was graded, nor a batch started
        aid = store.assignment_id("py-functions")
        assert aid is None or store.batches(aid) == []
    finally:
        store.close()
