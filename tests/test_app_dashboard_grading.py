"""The Dashboard's Grading section in Streamlit's AppTest, over a real grade store in the
app's data folder: a finished batch (two notebooks graded, one that could not be), and a
batch this process is grading now (one graded, one failed before grading, two left).
Names are invented."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path

import pandas as pd

from grader.store.database import Store
from grader.types import GradeReport, LayerResult
from grader.views.grading import batch_rows, grading_view
from tests.conftest import open_app

PAGE = "app_pages/dashboard.py"


def report(file: str, sha: str, l2: float, error: str = "", models: bool = False
           ) -> GradeReport:
    if error:
        return GradeReport(file=file, sha256=sha, assignment="hw1", rubric_version="v1",
                           status="error", score=None, max_score=5.0, error=error)
    layers = {"L1": LayerResult("L1", seconds=0.1), "L2": LayerResult("L2", seconds=l2)}
    if models:  # as LLMLayers leaves them: the engine's seconds in the details
        layers["L3"] = LayerResult("L3", details={"total_s": 20.0})
    return GradeReport(file=file, sha256=sha, assignment="hw1", rubric_version="v1",
                       status="graded", score=4.0, max_score=5.0, layers=layers)


def grade_batch(store: Store, aid: int, rv: int, start: float,
                notebooks: list[tuple[str, float | str | None]], models: bool = False,
                every: float = 60) -> int:
    """A batch started at ``start``; per notebook: L2 seconds (graded), an error text
    (graded without a score), "!reason" (failed before grading) or None (pending).
    The n-th notebook is marked at ``start + every * n``; ``models``: graded with L3."""
    items = [(f, hashlib.sha256(f.encode()).hexdigest(), f.split(".")[0], "")
             for f, _ in notebooks]
    bid = store.start_batch(aid, rv, items)
    marked = {}
    for n, (item, (_, what)) in enumerate(zip(store.pending_items(bid), notebooks,
                                               strict=True), 1):
        if what is None:
            continue
        if isinstance(what, str) and what.startswith("!"):
            store.mark_item(item.id, "error", error=what[1:])
        else:
            sub = store.add_submission(aid, item.sha256, item.file, item.student_id)
            r = report(item.file, item.sha256, 0.0, what) if isinstance(what, str) \
                else report(item.file, item.sha256, what, models=models)
            store.save_grade(sub, rv, r, batch_item_id=item.id)
        marked[item.id] = start + every * n
    with sqlite3.connect(store.path) as c:  # place the batch in time
        c.execute("UPDATE batches SET created_at = ? WHERE id = ?", (start, bid))
        c.executemany("UPDATE batch_items SET updated_at = ? WHERE id = ?",
                      [(at, i) for i, at in marked.items()])
        c.executemany("UPDATE grades SET created_at = ? WHERE id = (SELECT grade_id FROM "
                      "batch_items WHERE id = ?)", [(at, i) for i, at in marked.items()])
    return bid


def fill(data: Path) -> tuple[int, int]:
    now = time.time()
    with Store(data / "grader.db") as store:
        aid = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
        rv = store.add_rubric_version(aid, "v1", "{}")
        done = grade_batch(store, aid, rv, now - 7200, [
            ("student042.ipynb", 2.0), ("student043.ipynb", 4.0),
            ("student044.ipynb", "student044.ipynb: not valid JSON")])
        running = grade_batch(store, aid, rv, now - 240, [
            ("student045.ipynb", 6.0), ("student046.ipynb", "!content not kept; upload again"),
            ("student047.ipynb", None), ("student048.ipynb", None)])
    return done, running


def table(at, column: str) -> pd.DataFrame:
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, f"{len(found)} tables with a {column!r} column"
    return found[0]


def test_the_grading_section_shows_rates_seconds_failures_and_the_queue(app_data: Path):
    done, running = fill(app_data)
    at = open_app(PAGE)
    assert not at.exception
    assert "Grading" in [h.value for h in at.subheader]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Sandbox s, median"] == "4.0 s"  # L2: 2, 4 and 6 s
    assert metrics["Sandbox s, p90"] == "5.6 s"
    assert metrics["Notebooks / min, last 10 min"] != "none graded"  # the running batch
    # every batch here was graded by the checks alone, and each rate says so
    notes = {m.label: m.delta for m in at.metric if m.label.startswith("Notebooks / min")}
    assert notes == {"Notebooks / min, last 10 min": "checks only (no models)",
                     "Notebooks / min, last 2 batches": "checks only (no models)"}
    batches = table(at, "wall (s)")
    assert list(batches["batch"]) == [running, done]
    assert list(batches["state"]) == ["running", "done"]
    assert batches["notebooks / min"][1] == 1.0  # 3 notebooks in 3 minutes, 2 hours ago
    queue = table(at, "running for (s)")
    assert list(queue["batch"]) == [running]
    assert (queue["done"][0], queue["failed"][0], queue["pending"][0],
            queue["total"][0]) == (1, 1, 2, 4)
    assert queue["grader"][0] == "this process"
    layers = table(at, "median (s)")
    assert list(layers["layer"]) == ["Structure (L1)", "Run in the sandbox (L2)"]
    failed = table(at, "reason")
    assert list(failed["file"]) == ["student046.ipynb", "student044.ipynb"]
    assert list(failed["reason"]) == ["content not kept; upload again",
                                      "student044.ipynb: not valid JSON"]
    assert len(at.get("plotly_chart")) == 1  # notebooks per minute per batch
    # Names hidden: the failed files are named after pseudonyms, in the reasons too.
    at.toggle(key="_anonymise_switch").set_value(True).run()
    assert not at.exception
    failed = table(at, "reason")
    shown = " ".join(failed["file"]) + " " + " ".join(failed["reason"])
    assert "student04" not in shown
    assert failed["file"][1].startswith("hw1/student_0")  # with its assignment: one student
    assert failed["reason"][1] == f"{failed['file'][1]}: not valid JSON"


def test_an_empty_store_says_no_grades_yet(app_data: Path):
    at = open_app(PAGE)
    assert not at.exception
    assert any(i.value.startswith("No grades yet") for i in at.info)
    assert not [m for m in at.metric if m.label.startswith("Notebooks / min")]


def test_batches_with_and_without_models_are_rated_apart_and_no_cell_says_none(
        app_data: Path):
    """What the instructor saw: 21.4/min and 0.41/min side by side, unlabelled, and "None"
    in a cell. Each batch now says whether it ran the models, the rates are per mode, and
    a value not measured is a dash."""
    now = time.time()
    with Store(app_data / "grader.db") as store:
        aid = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
        rv = store.add_rubric_version(aid, "v1", "{}")
        fast = grade_batch(store, aid, rv, now - 3000, [(f"s{i}.ipynb", 1.0) for i in range(6)],
                           every=3)  # 6 in 18 s: 20 / min
        slow = grade_batch(store, aid, rv, now - 2000, [(f"m{i}.ipynb", 1.0) for i in range(2)],
                           models=True, every=300)  # 2 in 600 s: 0.2 / min
        lost = grade_batch(store, aid, rv, now - 1000, [("x.ipynb", "!content not kept")])
        view = grading_view(store)
    assert any(v is None for r in batch_rows(view.batches) for v in r.values())  # raw: None
    at = open_app(PAGE)
    assert not at.exception
    rates = [(m.label, m.delta, m.value) for m in at.metric
             if m.label.startswith("Notebooks / min, last 3 batches")]
    assert rates == [  # two cards, two titles: each says its mode
        ("Notebooks / min, last 3 batches · checks only", "checks only (no models)", "20.00"),
        ("Notebooks / min, last 3 batches · with models", "with models (L3, L4)", "0.20")]
    batches = table(at, "wall (s)")
    models = dict(zip(batches["batch"], batches["models"], strict=True))
    assert models == {fast: "checks only (no models)", slow: "with models (L3, L4)",
                      lost: "none graded yet"}
    assert dict(zip(batches["batch"], batches["wall (s)"], strict=True))[lost] == "—"
    (chart,) = at.get("plotly_chart")
    assert "checks only (no models)" in chart.proto.spec
    assert "with models (L3, L4)" in \
        chart.proto.spec
    for d in at.dataframe:
        assert not d.value.isna().any().any(), list(d.value.columns)
        assert not (d.value.astype(str) == "None").any().any(), list(d.value.columns)
