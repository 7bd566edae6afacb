"""Grading jobs, their live board, and the rows and files the pages show."""

from __future__ import annotations

import csv
import dataclasses
import io
import threading
import zipfile
from pathlib import Path

import pytest

from grader.errors import StoreError
from grader.events import GradeEvent, describe
from grader.layers.base import GradeOptions, Layer, SubmissionContext
from grader.pipeline import GradeInput, Grader
from grader.rubrics.schema import with_criteria
from grader.service.jobs import interrupted_batches, start_grading, start_regrading, start_resuming
from grader.service.review import ReviewFilter, find_grades, regrade, regrade_rows, submission_cells
from grader.service.workspace import Upload, Workspace
from grader.types import GradeReport, LayerResult
from grader.views.progress import STREAM_CHARS, ProgressBoard
from grader.views.reports import diff_rows, downloads, notebook_cells, result_rows
from tests.killed_grader import killed_batch, stored_batch_items

ROOT = Path(__file__).resolve().parents[1]
SUBS = ROOT / "examples" / "retail-sales" / "submissions"



def _up(kind: str, name: str | None = None) -> Upload:
    return Upload(name or f"{kind}.ipynb", (SUBS / f"{kind}.ipynb").read_bytes())


def _pending() -> GradeReport:
    """A report whose model layers are queued behind it (grades first, models after)."""
    return GradeReport("x.ipynb", "", "retail-sales", "1", "graded", 1.0, 2.0, layers={
        n: LayerResult(n, details={"pending": True}) for n in ("L3", "L4")})


def test_board_folds_events_from_many_threads():
    board = ProgressBoard()
    board.set_total(2)

    def grading(name: str) -> None:  # in its sandbox run
        board.apply(GradeEvent(name, "start"))
        board.apply(GradeEvent(name, "layer", "L1", "8 of 8", 0.5))

    def models(name: str) -> None:  # graded, its grade stored; its models write
        grading(name)
        board.apply(GradeEvent(name, "layer", "L2", "8 of 8", 2.0))
        board.apply(GradeEvent(name, "done", report=_pending()))
        board.apply(GradeEvent(name, "models"))
        board.apply(GradeEvent(name, "sent", "L3"))
        for _ in range(500):
            board.apply(GradeEvent(name, "tokens", "L3", "ab"))
        board.apply(GradeEvent(name, "layer", "L3", "BackendError: down", 1.0, error=True))

    threads = [threading.Thread(target=grading, args=("a.ipynb",)),
               threading.Thread(target=models, args=("b.ipynb",))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snap = board.snapshot()
    assert snap.total == 2
    assert snap.done == 1
    assert snap.fraction == 0.5
    assert snap.model_counts() == (0, 1)  # b's notes are being written
    rows = {r["notebook"]: r for r in snap.rows()}
    assert rows["a.ipynb"]["Structure (L1)"] == "done in 0.5 s"
    assert rows["a.ipynb"]["Run in the sandbox (L2)"] == "running"  # L1 ended, L2 has not
    assert rows["a.ipynb"]["Written feedback (L4)"] == ""  # after its grade, not yet
    assert rows["b.ipynb"]["Code analysis (L3)"] == "failed: BackendError: down"
    assert rows["b.ipynb"]["Written feedback (L4)"] == "preparing"  # never sent: not reading
    assert "running the notebook in the sandbox" in snap.headline()
    assert "a.ipynb" not in snap.headline(hide_names=True)
    nb = snap.current()
    assert nb is not None
    assert nb.tokens["L3"] == 500
    assert len(nb.streams["L3"]) == STREAM_CHARS  # only the tail is kept
    assert all("tokens" not in line for line in snap.log)  # tokens are not log lines
    assert board.snapshot().version == snap.version  # no change, same version


def test_board_says_in_words_what_each_layer_does():
    board = ProgressBoard()
    board.set_total(1)
    board.apply(GradeEvent("a.ipynb", "start"))
    board.apply(GradeEvent("a.ipynb", "layer", "L1", "8 of 8", 0.2))
    board.apply(GradeEvent("a.ipynb", "layer", "L2", "8 of 8", 3.0))
    board.apply(GradeEvent("a.ipynb", "done", report=_pending()))
    assert board.snapshot().rows()[0]["Code analysis (L3)"] == "queued after the grades"
    assert board.snapshot().progress_words() == (
        "1 of 1 notebooks graded · model notes 0 of 1 (no estimate before the first ends)")
    board.apply(GradeEvent("a.ipynb", "models"))
    board.apply(GradeEvent("a.ipynb", "sent", "L3"))
    board.apply(GradeEvent("a.ipynb", "sent", "L4"))
    for _ in range(7):
        board.apply(GradeEvent("a.ipynb", "tokens", "L3", '"strength": "'))
    row = board.snapshot().rows()[0]
    assert row["Code analysis (L3)"] == "writing (7 tokens)"
    assert row["Written feedback (L4)"] == "reading"  # sent, nothing written yet
    headline = board.snapshot().headline()
    assert "the code model is writing (7 tokens)" in headline
    assert "the feedback model is reading" in headline
    assert '"strength"' not in headline + " ".join(row.values())  # no raw model JSON
    board.apply(GradeEvent("a.ipynb", "layer", "L4", "not run: nothing_to_send", 0.0))
    assert board.snapshot().rows()[0]["Written feedback (L4)"] == (
        "not run: there was nothing of the student's own for it to read")
    board.apply(GradeEvent("a.ipynb", "models_done", report=_pending()))
    assert board.snapshot().model_counts() == (1, 1)
    off = ProgressBoard(models=False)
    off.apply(GradeEvent("b.ipynb", "start"))
    assert off.snapshot().rows()[0]["Code analysis (L3)"] == "off"


def test_job_grades_good_files_names_bad_ones_and_saves_everything(ws: Workspace):
    ups = [_up("complete", "student042.ipynb"), _up("template_only", "student043.ipynb"),
           Upload("student044.ipynb", b"{"), Upload("notes.txt", b"hello")]
    job = start_grading(ws, "retail-sales", ups, GradeOptions(), None)
    version, seen = -1, []
    while not job.finished:
        snap = job.wait(version, timeout=1)
        version = snap.version
        seen.append(snap.done)
    r = job.result
    assert r.error == ""
    assert len(r.reports) == 2
    assert all(g > 0 for g in r.grade_ids)
    assert {p.file: p.reason.split(":")[0] for p in r.problems} == {
        "student044.ipynb": "not a readable notebook (not JSON)",
        "notes.txt": "not a notebook (.ipynb) or a ZIP"}
    assert seen == sorted(seen)  # progress never goes back
    final = job.board.snapshot()
    assert final.done == final.total == 2
    assert [line for line in final.log if "L2" in line and "student042" in line]
    stored = dict(r.stored(ws.store))
    assert [rep.score for rep in stored.values()] == [20.0, 0.0]
    rows = result_rows(r.stored(ws.store))
    assert [row["status"] for row in rows] == ["graded", "graded"]  # unreadable: no rows
    assert all(row["grade"] is not None for row in rows)
    # the same files again: already graded under this rubric, reused not regraded
    again = start_grading(ws, "retail-sales", ups[:2], GradeOptions(), None)
    while not again.finished:
        again.wait(-1, timeout=1)
    assert again.result.reused == 2
    assert again.result.grade_ids == r.grade_ids


def test_a_broken_assignment_is_a_job_error_not_a_crash(ws: Workspace):
    job = start_grading(ws, "no-such-assignment", [_up("complete")], GradeOptions(), None)
    while not job.finished:
        job.wait(-1, timeout=1)
    assert "no-such-assignment" in job.result.error
    assert job.result.reports == []


class _Boom(Layer):
    name = "L2"

    def run(self, ctx: SubmissionContext) -> LayerResult:
        raise RuntimeError("kernel died")


def test_pipeline_reports_each_layer_and_a_crash(ws: Workspace):
    events: list[GradeEvent] = []
    a = ws.load("retail-sales")
    from grader.layers.structure import StructureLayer

    grader = Grader(a, GradeOptions(), layers=[StructureLayer(), _Boom()], events=events.append)
    report = grader.grade(GradeInput.from_path(SUBS / "complete.ipynb"))
    kinds = [(e.kind, e.layer) for e in events]
    assert kinds == [("start", ""), ("layer", "L1"), ("layer", "L2"), ("done", "")]
    assert events[2].error
    assert "kernel died" in events[2].text
    assert events[-1].report is report
    assert "failed: RuntimeError: kernel died" in describe(events[2])


def test_downloads_hold_canvas_csv_json_and_a_feedback_page_each(ws: Workspace):
    job = start_grading(ws, "retail-sales", [_up("complete", "student042.ipynb"),
                                            _up("partial", "student043.ipynb")],
                        GradeOptions(execute=False), None)
    while not job.finished:
        job.wait(-1, timeout=1)
    reports = [rep for _, rep in job.result.stored(ws.store, anonymous=True)]
    files = {d.label: d for d in downloads(reports, "Retail sales", "retail sales")}
    canvas = list(csv.reader(io.StringIO(files["Canvas CSV"].make().decode())))
    assert [row[0] for row in canvas[2:]] == ["Student 001", "Student 002"]
    assert files["Canvas CSV"].file_name == "retail_sales-canvas.csv"
    with zipfile.ZipFile(io.BytesIO(files["Feedback letters (ZIP)"]
                                    .make())) as z:
        names = z.namelist()
        assert sorted(names) == sorted(f"feedback/Student_00{i}.{ext}" for i in (1, 2)
                                       for ext in ("pdf", "md", "html"))
        assert b"student04" not in b"".join(z.read(n) for n in names)


def test_notebook_cells_are_labelled_against_the_template(ws: Workspace):
    from grader.notebooks.load import load_notebook

    a = ws.load("retail-sales")
    cells = notebook_cells((SUBS / "partial.ipynb").read_bytes(), "partial.ipynb",
                           load_notebook(a.template), a.rubric.all_placeholders)
    origins = {c.origin for c in cells}
    assert "template" in origins
    assert origins & {"student", "modified"}
    untouched = notebook_cells((SUBS / "template_only.ipynb").read_bytes(), "t.ipynb",
                               load_notebook(a.template), a.rubric.all_placeholders)
    assert all(c.origin == "template" for c in untouched if c.kind == "code")


def test_review_filters_regrade_diff_and_redaction(ws: Workspace):
    a = ws.load("retail-sales")
    named = _up("complete").data.replace(b"import pandas as pd",
                                         b"import pandas as pd  # by student042")
    job = start_grading(ws, a.name, [Upload("student042.ipynb", named),
                                     _up("hardcoded", "student043.ipynb")], GradeOptions(), None)
    while not job.finished:
        job.wait(-1, timeout=1)
    aid = ws.assignment_id(a.name)
    flagged = find_grades(ws.store, aid, ReviewFilter(flags=("hardcoded_output",)))
    assert [g.student_id for g in flagged] == ["student043"]
    assert [g.student_id for g in find_grades(ws.store, aid, ReviewFilter(min_score=19))] == [
        "student042"]
    with pytest.raises(ValueError, match="review filter 'maybe'"):
        find_grades(ws.store, aid, ReviewFilter(review="maybe"))
    gid = job.result.grade_ids[0]
    text = " ".join(c.source for c in submission_cells(ws.store, ws, gid, anonymous=True))
    assert "student042" not in text
    assert "Student 001" in text
    assert "Robin Larkspur" not in text  # the notebook's own "Name: ..." line (fictional)
    assert "Name: Student 001" in text
    assert "student042" in " ".join(c.source for c in submission_cells(ws.store, ws, gid))
    ws.store.override(gid, "load-data", 0.0, "checked by hand", "instructor-a")
    done = regrade(ws.store, ws, gid, GradeOptions())
    rows = {r["criterion"]: r for r in diff_rows(done.before, done.after)}
    assert done.grade_id == gid  # same rubric: the grade is replaced, overrides kept
    assert rows["total"]["before"] == rows["total"]["after"] == "18 / 20"
    assert rows["total"]["before %"] == rows["total"]["after %"] == 90.0
    assert rows["load-data"]["change (points)"] == 0


def test_regrading_uses_the_stored_bytes_and_the_rubric_in_force(ws: Workspace):
    job = start_grading(ws, "retail-sales", [_up("complete", "student042.ipynb"),
                                            _up("partial", "student043.ipynb")],
                        GradeOptions(), None)
    while not job.finished:
        job.wait(-1, timeout=1)
    old = job.result.grade_ids
    rubric = ws.load("retail-sales").rubric
    lighter = [dataclasses.replace(c, points=c.points / 2) if c.id == "load-data" else c
               for c in rubric.criteria]
    new = ws.save_rubric("retail-sales", with_criteria(rubric, lighter), "half the loading")
    again = start_regrading(ws, old, GradeOptions(), None)
    while not again.finished:
        again.wait(-1, timeout=1)
    assert again.result.error == ""
    assert [b[0] for b in again.result.before] == old
    assert all(b[1] == rubric.version for b in again.result.before)
    rows = regrade_rows(ws.store, again.result)
    assert [r["rubric after"] for r in rows] == [new.version, new.version]
    # student042 had the full 2 points of load-data: one point fewer, of one point fewer
    assert rows[0]["change (points)"] == -1.0
    assert rows[0]["before"] == "20 / 20"
    assert rows[0]["after"] == "19 / 19"
    assert rows[0]["change (% points)"] == 0.0
    assert set(again.result.grade_ids).isdisjoint(old)  # new grades; the old ones stay


def test_regrading_nothing_or_several_assignments_is_refused(ws: Workspace):
    with pytest.raises(StoreError, match="no grades"):
        start_regrading(ws, [], GradeOptions(), None)
    ids = []
    for name, sub in (("retail-sales", SUBS / "complete.ipynb"),
                      ("r-joins", ROOT / "examples" / "r-joins" / "submissions" /
                       "complete.ipynb")):
        job = start_grading(ws, name, [Upload("student042.ipynb", sub.read_bytes())],
                            GradeOptions(execute=False), None)
        while not job.finished:
            job.wait(-1, timeout=1)
        ids += job.result.grade_ids
    with pytest.raises(StoreError, match="several assignments"):
        start_regrading(ws, ids, GradeOptions(), None)


def test_notebook_cells_carry_the_stored_plots_and_skip_what_is_not_a_png():
    import base64

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import nbformat

    fig, ax = plt.subplots(figsize=(2, 2))
    ax.plot([1, 2, 3])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    png = buf.getvalue()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("plot()", outputs=[
        nbformat.v4.new_output("display_data", data={
            "image/png": base64.b64encode(png).decode(), "text/plain": "<Figure>"}),
        nbformat.v4.new_output("display_data", data={
            "image/png": base64.b64encode(b"GIF89a not a png").decode()}),
    ]), nbformat.v4.new_markdown_cell("Some **text**")]
    cells = notebook_cells(nbformat.writes(nb).encode(), "student042.ipynb")
    assert cells[0].images == (png,)
    assert "<Figure>" in cells[0].outputs
    assert cells[1].images == ()



def _interrupted_batch(ws: Workspace, kinds: dict[str, str]) -> int:
    """A batch as grade_batch leaves it when the app is killed (kill -9) before grading
    anything: the notebooks kept, every item pending, its grader gone."""
    return killed_batch(ws.store.path, *stored_batch_items(ws, kinds))


def test_an_interrupted_batch_resumes_from_the_store_with_its_rubric(ws: Workspace):
    batch = _interrupted_batch(ws, {"student042": "complete", "student043": "partial"})
    assert [b.id for b in interrupted_batches(ws, "retail-sales")] == [batch]
    started_with = ws.load("retail-sales").rubric
    edited = with_criteria(started_with, list(started_with.criteria[:-1]))  # an edit since
    ws.save_rubric("retail-sales", edited, "dropped the last criterion")
    job = start_resuming(ws, batch, GradeOptions(), None)
    while not job.finished:
        job.wait(-1, timeout=1)
    assert job.result.error == ""
    assert interrupted_batches(ws, "retail-sales") == []
    assert ws.store.get_batch(batch).done == 2
    grades = [ws.store.get_grade(g) for g in job.result.grade_ids]
    assert [g.student_id for g in grades] == ["student042", "student043"]
    assert {g.rubric_version for g in grades} == {started_with.version}
    assert grades[0].score == 20


@pytest.mark.parametrize(("text", "shown"), [
    ("![plot](https://tracker.example/p.png)",
     "*[image not loaded: plot]* `https://tracker.example/p.png`"),
    ('see ![](http://192.0.2.1/x.gif "t") here',
     'see *[image not loaded: no description]* `http://192.0.2.1/x.gif "t"` here'),
    ("![ok](data:image/png;base64,AAAA)", "![ok](data:image/png;base64,AAAA)"),
    ("[px]: http://192.0.2.1/x.png", "`[px]: http://192.0.2.1/x.png`"),
    ("[the docs](https://pandas.pydata.org)", "[the docs](https://pandas.pydata.org)"),
])
def test_student_markdown_never_makes_the_browser_fetch_an_image(text, shown):
    from grader.views.reports import offline_markdown

    assert offline_markdown(text) == shown


def test_hidden_names_cover_id_and_email_lines_and_keep_the_layout():
    from grader.anonymity import redact as _redact

    text = ("# Homework\n\n**Student Name:** Bex Tremaine\n\n**Student ID:** S-00102\n\n"
            "Email: someone@example.edu\nNet ID = xy12\nThe ID column: kept")
    hidden = _redact(text, [], "Student 002")
    assert "S-00102" not in hidden
    assert "Bex Tremaine" not in hidden
    assert "someone@example.edu" not in hidden
    assert "xy12" not in hidden
    assert "**Student ID:** Student 002" in hidden
    assert "The ID column: kept" in hidden  # only a line that starts with the label
    assert hidden.count("\n") == text.count("\n")  # blank lines are not swallowed
    code = _redact("# Student ID: S-1\nstudent_id = 'S-1'", [], "Student 002", code=True)
    assert code == "# Student ID: Student 002\nstudent_id = 'S-1'"


def test_a_mixed_batch_counts_the_notebooks_graded_before_as_done(ws: Workspace,
                                                                  monkeypatch):
    """A batch of notebooks graded before and new ones counted the reused ones in the total
    but never as done ("0 of 4 notebooks graded"), and estimated the time for all 4."""
    class Board(ProgressBoard):  # a clock set by the events; a snapshot after each
        def __init__(self, **kw) -> None:
            self.t, self.seen = 100.0, []
            super().__init__(clock=lambda: self.t, **kw)

        def apply(self, ev: GradeEvent) -> None:
            self.t += 30.0 if ev.kind == "done" else 0.0  # 30 s per new notebook
            super().apply(ev)
            self.seen.append((ev.kind, ev.file, self.snapshot()))

    old = [_up("complete", "s1.ipynb"), _up("partial", "s2.ipynb")]
    _finish(start_grading(ws, "retail-sales", old, GradeOptions(execute=False), None))
    monkeypatch.setattr("grader.service.jobs.ProgressBoard", Board)
    ups = [*old, _up("hardcoded", "s3.ipynb"), _up("template_only", "s4.ipynb")]
    job = _finish(start_grading(ws, "retail-sales", ups, GradeOptions(execute=False), None))
    assert (job.result.error, job.result.reused) == ("", 2)
    seen = job.board.seen
    assert [(k, f) for k, f, _ in seen if k in ("reused", "done")] == [
        ("reused", "s1.ipynb"), ("reused", "s2.ipynb"), ("done", "s3.ipynb"),
        ("done", "s4.ipynb")]
    first = next(s for k, _, s in seen if k == "start")  # before any is graded here
    assert (first.done, first.reused, first.total) == (2, 2, 4)
    assert first.counts() == ("2 of 4 notebooks done (2 graded before with this rubric, "
                              "0 graded now)")
    assert first.estimate().startswith("No estimate yet: none of the 2 notebooks to grade ")
    assert {r["notebook"]: r["state"] for r in first.rows()}["s1.ipynb"] == "graded before"
    one = next(s for k, f, s in seen if (k, f) == ("done", "s3.ipynb"))
    assert one.estimate() == ("About 30 s left for 1 notebook: 30 s per notebook, measured "
                              "on the 1 notebook graded so far.")
    last = job.board.snapshot()
    assert (last.done, last.reused, last.total, last.estimate()) == (4, 2, 4, "")


def _finish(job):
    while not job.finished:
        job.wait(-1, timeout=1)
    return job
