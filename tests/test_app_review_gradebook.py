"""The Review page in AppTest, issue 33: a wrong upload cannot stay in the gradebook (drop
it, audited; "not graded" never exported as 0 unless asked; a Canvas CSV without Canvas
ids says so), criteria named by their titles, the audit's points as the gradebook writes
them, and advisory model notes folded, never dropped, with their route's agreement on the
grade's batch."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from grader.service.batch import grade_batch
from grader.service.workspace import Workspace
from grader.store.database import Store
from grader.types import LayerResult
from tests.conftest import open_app

ROOT = Path(__file__).resolve().parents[1]
SUBS = ROOT / "examples" / "retail-sales" / "submissions"
OTHER = ROOT / "examples" / "py-functions" / "submissions" / "complete.ipynb"
PAGE = "app_pages/review.py"
ROUTE = "code:embedded/smollm2-135m"
pytestmark = pytest.mark.slow


@pytest.fixture
def graded(app_data: Path) -> dict[str, int]:
    """Retail-sales graded from the notebooks' stored outputs: two students of Canvas
    (ids 73101, 73102) and one wrong upload (another assignment's notebook, id 73103)."""
    store = Store(app_data / "grader.db")
    try:
        ws = Workspace(store, app_data / "assignments")
        a = ws.load("retail-sales")
        items = [GradeInput(f"{sid}.ipynb", path.read_bytes(), sid, f"Student {sid}")
                 for sid, path in (("73101", SUBS / "complete.ipynb"),
                                   ("73102", SUBS / "partial.ipynb"), ("73103", OTHER))]
        grade_batch(Grader(a, GradeOptions(execute=False)), items, store)
        return {g.student_id: g.id for g in store.list_grades(ws.assignment_id(a.name))}
    finally:
        store.close()


def _texts(elements) -> str:
    return " ".join(e.value for e in elements)


def _ok(at) -> None:
    assert not at.exception, at.exception


def test_the_override_picker_and_the_audit_say_what_the_gradebook_says(graded):
    at = open_app(PAGE)
    at.selectbox(key="review_grade").set_value(graded["73102"]).run()
    picker = at.selectbox(key="review_ov_criterion")
    assert "Load the three data files" in picker.options  # the title, not "load-data"
    assert not any(o == "load-data" for o in picker.options)
    picker.set_value("load-data")
    at.text_input(key="review_who").set_value("instructor-a")
    at.number_input(key="review_ov_points").set_value(1.32)
    at.text_input(key="review_ov_reason").set_value("read the paths by hand")
    next(b for b in at.button if b.label == "Save override").click().run()
    _ok(at)
    audit = next(t.value for t in at.table if "why" in t.value.columns)
    assert audit["criterion"][0] == "Load the three data files"
    assert audit["new"][0] == "1.32"  # never "1.3200"
    assert not audit["old"][0].endswith(("00", ".0"))  # "2", "2.5", "0.84": no padding
    labels = [e.label for e in at.expander]
    assert any(x.startswith("Load the three data files: 1.32 / ") for x in labels)


def test_a_wrong_upload_is_named_before_export_and_dropped_with_its_reason(graded):
    at = open_app(PAGE)
    _ok(at)
    warned = _texts(at.warning)
    assert ("1 notebook was not graded (unreadable, or another assignment's notebook): "
            "Student 73103.") in warned
    assert "leave them blank, never 0" in warned
    assert at.checkbox(key="review_zero").value is False
    at.checkbox(key="review_zero").check().run()
    assert "give them 0, as you asked" in _texts(at.warning)

    at.selectbox(key="review_grade").set_value(graded["73103"]).run()
    at.text_input(key="review_who").set_value("instructor-a")
    at.text_input(key="review_drop_reason").set_value("the functions homework, not this one")
    next(b for b in at.button if b.label == "Drop from the gradebook").click().run()
    _ok(at)
    assert f"Dropped grade {graded['73103']} (Student 73103" in _texts(at.success)
    assert set(at.dataframe[0].value["student"]) == {"Student 73101", "Student 73102"}
    assert "not graded" not in _texts(at.warning)  # nothing left to export as 0 or blank
    (box,) = [e for e in at.expander if e.label == "Dropped from the gradebook (1)"]
    said = _texts(box.markdown)
    assert "Student 73103" in said
    assert "by instructor-a: the functions homework, not this one" in said

    at.text_input(key="review_drop_back_reason").set_value("kept for the record")
    at.button(key=f"review_drop_back_{graded['73103']}").click().run()
    _ok(at)
    assert len(at.dataframe[0].value) == 3
    at.selectbox(key="review_grade").set_value(graded["73103"]).run()
    trail = next(t.value for t in at.table if "what" in t.value.columns)
    assert list(trail["what"]) == ["dropped", "brought back"]
    assert list(trail["why"]) == ["the functions homework, not this one", "kept for the record"]
    with Store(_store_path()) as store:
        trail = store.drop_trail(graded["73103"])
    assert [(e.action, e.who) for e in trail] == [("drop", "instructor-a"),
                                                 ("restore", "instructor-a")]


def _store_path() -> Path:
    return Path(os.environ["GRADER_DATA_DIR"]) / "grader.db"


def test_a_canvas_csv_without_canvas_ids_says_so_before_download(app_data: Path):
    store = Store(app_data / "grader.db")
    try:
        ws = Workspace(store, app_data / "assignments")
        items = [GradeInput("student042.ipynb", (SUBS / "complete.ipynb").read_bytes(),
                            "student042", "student042"),
                 GradeInput("doejane_73104_88104_hw.ipynb",
                            (SUBS / "partial.ipynb").read_bytes(), "73104", "doejane")]
        grade_batch(Grader(ws.load("retail-sales"), GradeOptions(execute=False)), items, store)
    finally:
        store.close()
    at = open_app(PAGE)
    _ok(at)
    warned = _texts(at.warning)
    assert ("1 of 2 rows of the Canvas CSV carries no Canvas user id: its ID column holds a "
            "name taken from the file (student042.ipynb)") in warned
    at.toggle(key="_anonymise_switch").set_value(True).run()
    warned = _texts(at.warning)
    assert "carry no Canvas user id" not in warned  # names hidden: no ids at all, said so
    assert "it cannot import this Canvas CSV" in warned
    assert "student042" not in warned


def test_advisory_notes_are_folded_with_their_route_s_agreement_on_the_batch(graded):
    with Store(_store_path()) as store:
        row = store.get_grade(graded["73101"])
        report = store.get_report(row.id, overrides=False)
        noted = [dataclasses.replace(c, model_notes={
            "verdict": "not met", "cells": "c1",
            "issue": "The loop stops one row early, so the last region is never summed."})
            for c in report.criteria if c.kind == "code"]
        others = [c for c in report.criteria if c.kind != "code"]
        advised = dataclasses.replace(report, criteria=noted + others, layers={
            **report.layers,
            "L3": LayerResult("L3", details={"advisory": True, "route": ROUTE, "output": {}})})
        batch = store.start_batch(row.assignment_id, row.rubric_version_id,
                                  [(row.file, row.sha256, row.student_id, row.display_name)])
        (item,) = store.batch_items(batch)
        assert store.save_grade(row.submission_id, row.rubric_version_id, advised,
                                item.id) == row.id  # the same grade, now with model notes
    at = open_app(PAGE)
    at.selectbox(key="review_grade").set_value(graded["73101"]).run()
    _ok(at)
    (fold,) = [e for e in at.expander if "kept from the student's letter" in e.label]
    assert fold.label.startswith(f"Code analysis (L3): {len(noted)} notes kept from the "
                                 "student's letter · advisory: this route agreed with the "
                                 "checks ")
    assert fold.label.endswith("% of the time on this batch")
    assert "never reaches a letter" in _texts(fold.caption)
    assert len(fold.dataframe[0].value) == len(noted)  # every note, none dropped
    said = _texts(at.info) + _texts(at.caption)
    assert "found nothing" not in said
    assert "Code analysis (L3) ran and wrote nothing" not in said
