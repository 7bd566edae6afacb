"""The Grade page and a large class (issue 24, item 5; issue 32, item 8). No class is refused:
a batch of more than ``CONFIRM_ABOVE`` notebooks waits for the instructor to confirm it,
with the count (a 2,000-notebook ZIP once graded for 21 minutes with nobody asked, the
Grade button held all along); confirmed, the whole class is graded as one batch, a bad
entry among the others is named with its archive, and the results, the store and a
resumed batch cover every student."""

from __future__ import annotations

import io
import zipfile

import nbformat
import pytest

from grader.service.sizing import CONFIRM_ABOVE
from grader.store.database import Store
from tests.conftest import open_app
from tests.killed_grader import killed_batch

PAGE = "app_pages/grade.py"


def notebook(n: int) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"def answer():\n    return {n}")]
    return nbformat.writes(nb)


def big_zip(n: int, distinct: int = 0) -> bytes:
    """``n`` student folders: the first ``n - distinct`` hand in one same notebook (the
    template, untouched), the others their own; and one entry that is not JSON."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i in range(n):
            zf.writestr(f"fall/student{i:04d}/hw.ipynb", notebook(-1 if i < n - distinct else i))
        zf.writestr("fall/student9999/hw.ipynb", "{not json")
    return buf.getvalue()


def _upload(at, data: bytes) -> None:
    at.file_uploader(key="grade_files_0").set_value([("fall.zip", data, "application/zip")])
    at.checkbox(key="grade_execute").set_value(False)
    at.checkbox(key="grade_llm").set_value(False)


@pytest.mark.slow
def test_a_large_class_waits_for_a_confirmation_then_is_graded_whole(app_data):
    n = CONFIRM_ABOVE + 1
    at = open_app(PAGE)
    _upload(at, big_zip(n, distinct=20))
    at.button(key="grade_run").click().run()
    assert not at.exception, at.exception
    asked = [w.value for w in at.warning if "Grade them all?" in w.value]
    assert len(asked) == 1
    assert f"{n + 1:,} notebooks (fall.zip: {n + 1:,})" in asked[0]  # counted, not guessed
    assert "one batch" in asked[0]
    assert "grade_job" not in at.session_state or at.session_state["grade_job"] is None
    at.button(key="grade_confirm_no").click().run()
    assert not any("Grade them all?" in w.value for w in at.warning)
    store = Store(app_data / "grader.db")
    try:  # nothing was graded, nor a batch started
        aid = store.assignment_id("py-functions")
        assert aid is None or store.batches(aid) == []
    finally:
        store.close()
    at.button(key="grade_run").click().run()
    at.button(key="grade_confirm_yes").click().run(timeout=900)
    assert not at.exception, at.exception
    errors = [e.value for e in at.error]
    assert any("fall.zip/fall/student9999/hw.ipynb" in e and "not JSON" in e
               for e in errors), errors
    results = at.dataframe[1].value
    assert len(results) == n
    assert sorted(results["student"]) == [f"student{i:04d}" for i in range(n)]
    store = Store(app_data / "grader.db")
    try:  # one batch for the whole class, every student with a grade of their own
        aid = store.assignment_id("py-functions")
        (batch,) = store.batches(aid)
        # the unreadable entry is an item of the batch too, in error (the Dashboard counts it)
        assert (batch.total, batch.done, batch.status) == (n + 1, n, "done")
        grades = store.list_grades(aid)
        assert len({g.id for g in grades}) == n
        assert {g.student_id for g in grades} == {f"student{i:04d}" for i in range(n)}
    finally:
        store.close()


@pytest.mark.slow
def test_a_resumed_class_shows_every_student_graded_before_the_stop_too(app_data):
    """A batch stopped with part of its class graded: resumed on the page, its count, its
    results and its downloads cover the whole class, not only the notebooks left."""
    from grader.layers.base import GradeOptions
    from grader.pipeline import GradeInput, Grader
    from grader.service.batch import grade_batch
    from grader.service.workspace import Workspace

    items = [GradeInput(f"student{i:04d}.ipynb", notebook(i).encode(), f"student{i:04d}",
                        f"student{i:04d}") for i in range(12)]
    store = Store(app_data / "grader.db")
    try:
        ws = Workspace(store, app_data / "assignments")
        a = ws.load("py-functions")
        grade_batch(Grader(a, GradeOptions(execute=False, use_llm=False)), items[:5], store)
        aid = ws.assignment_id(a.name)
        rv = next(v.id for v in store.rubric_versions(aid) if v.version == a.rubric.version)
        for item in items[5:]:
            store.save_file(item.sha256, item.data)
        batch = killed_batch(store.path, aid, rv, [(i.name, i.sha256, i.student_id,
                                                    i.display_name) for i in items])
        for item, grade in zip(items[:5], store.list_grades(aid), strict=True):  # graded
            done = next(p for p in store.pending_items(batch) if p.file == item.name)
            store.mark_item(done.id, "done", grade.id)
    finally:
        store.close()
    at = open_app(PAGE)
    assert any("stopped with 7 of 12 notebooks left" in w.value for w in at.warning)
    at.checkbox(key="grade_execute").set_value(False)
    at.checkbox(key="grade_llm").set_value(False)
    at.button(key=f"grade_resume_{batch}").click().run(timeout=600)
    assert not at.exception, at.exception
    results = at.dataframe[1].value
    assert sorted(results["student"]) == [i.student_id for i in items]
    assert not [w for w in at.warning if "stopped with" in w.value]
    store = Store(app_data / "grader.db")
    try:
        (b,) = store.batches(store.assignment_id("py-functions"))[:1]
        assert (b.id, b.status, b.done, b.total) == (batch, "done", 12, 12)
    finally:
        store.close()
