"""The Rubrics page in Streamlit's AppTest: edit, preview, save; imports; what goes wrong.

Grades in the store are made by really grading bundled retail-sales submissions
(from their stored outputs: no execution); students are student001, student002, ...
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from grader.rubrics.schema import dumps
from grader.service.batch import grade_batch
from grader.service.workspace import Workspace
from grader.store.database import Store
from tests.conftest import open_app

REPO = Path(__file__).resolve().parents[1]
RETAIL = REPO / "examples" / "retail-sales"
SEED = REPO.parent / "shared" / "course-r" / "strings-dates" / "rubric.seed-format.json"
NO_EDIT = {"edited_rows": {}, "added_rows": [], "deleted_rows": []}


def edits(**kw) -> dict:
    return {**NO_EDIT, **kw}


@pytest.fixture
def graded(app_data: Path) -> Path:
    """Three retail-sales submissions graded into the app's store."""
    a = load_assignment(RETAIL)
    items = [GradeInput(f"{s}.ipynb", (RETAIL / "submissions" / f"{s}.ipynb").read_bytes(),
                        f"student{i:03d}", f"student{i:03d}")
             for i, s in enumerate(["complete", "partial", "template_only"], 1)]
    with Store(app_data / "grader.db") as store:
        grade_batch(Grader(a, GradeOptions(execute=False, use_llm=False)), items, store)
    return app_data


def in_force(data: Path, name: str):
    with Store(data / "grader.db") as store:
        return Workspace(store, data / "assignments").load(name).rubric


def page(name: str = "retail-sales"):
    at = open_app("app_pages/rubrics.py")
    at.selectbox(key="rubrics_assignment").set_value(name).run()
    assert not at.exception
    return at


def k(at, field: str) -> str:
    """The key of one of the editor's widgets: they are keyed by their draft."""
    return f"rubrics_{field}_{at.session_state['rubrics_draft']['key']}"


def upload_key(at) -> str:
    return f"rubrics_upload_{at.session_state['rubrics_assignment']}"


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def texts(elements) -> str:
    return "\n".join(e.value for e in elements)


def test_edit_preview_and_save_a_new_version(graded):
    before = in_force(graded, "retail-sales")
    at = page()
    assert metric(at, "Total points") == "20"
    assert next(iter(at.data_editor(key=k(at, "criteria")).value["id"])) == "load-data"
    at.session_state[k(at, "criteria")] = edits(edited_rows={0: {"points": 12}})
    at.run()
    assert not at.exception
    assert not at.error
    assert metric(at, "Total points") == "30"
    assert "load-data: points 2 -> 12" in texts(at.markdown)

    at.button(key="rubrics_preview").click().run()
    assert not at.exception
    table = at.dataframe[-1].value
    moved = dict(zip(table["student"], table["change"], strict=True))
    # load-data's points scale by 6 for whoever earned some of them (not the template)
    assert moved["student001"] > 0
    assert moved["student002"] > 0
    assert moved["student003"] == 0
    assert "2 of 3" in texts(at.markdown)

    at.text_input(key=k(at, "note")).input("loading the data matters more")
    at.button(key="rubrics_save").click().run()
    assert not at.exception
    after = in_force(graded, "retail-sales")
    assert after.criterion("load-data").points == 12
    assert after.total_points == 30
    assert after.version != before.version
    assert after.version in at.success[0].value
    assert metric(at, "Total points") == "30"  # the editor now shows the saved rubric
    assert "No changes from the rubric in force." in texts(at.info)
    history = at.dataframe[0].value
    assert "loading the data matters more" in set(history["note"])


def test_invalid_edit_is_shown_inline_and_not_saved(graded):
    before = in_force(graded, "retail-sales")
    at = page()
    at.session_state[k(at, "criteria")] = edits(edited_rows={0: {"points": -1}})
    at.session_state[k(at, "checks")] = edits(edited_rows={1: {"options": "bogus=1"}})
    at.run()
    errors = texts(at.error)
    assert "Criteria row 1 (load-data), points" in errors
    assert "Checks row 2 (load-data), options: unknown option 'bogus'" in errors
    assert at.button(key="rubrics_save").disabled  # AppTest, like a browser, cannot click it
    assert at.button(key="rubrics_preview").disabled
    at.session_state[k(at, "criteria")] = edits(edited_rows={0: {"points": 3}})
    at.run()  # one error fixed, one left
    assert "Criteria row 1" not in texts(at.error)
    assert "bogus" in texts(at.error)
    assert at.button(key="rubrics_save").disabled
    assert in_force(graded, "retail-sales").version == before.version


def test_added_and_deleted_rows(graded):
    at = page()
    at.session_state[k(at, "criteria")] = edits(
        added_rows=[{"order": 0, "id": "imports", "title": "Imports pandas", "kind": "code",
                     "points": 1}], deleted_rows=[5])
    at.session_state[k(at, "checks")] = edits(
        added_rows=[{"criterion": "imports", "type": "calls", "weight": 1.0,
                     "target": "read_csv"}], deleted_rows=[12])
    at.run()
    assert not at.error, texts(at.error)
    assert metric(at, "Total points") == "20"  # runs-clean (1 point) out, imports (1) in
    changed = texts(at.markdown)
    assert "imports: added (1 points)" in changed
    assert "runs-clean: removed" in changed
    at.button(key="rubrics_save").click().run()
    r = in_force(graded, "retail-sales")
    assert r.criteria[0].id == "imports"
    assert "runs-clean" not in {c.id for c in r.criteria}


def test_bad_rubric_file_is_an_error_naming_it(app_data):
    at = page()
    at.file_uploader(key=upload_key(at)).set_value(
        ("bad.json", b"not json", "application/json")).run()
    assert not at.exception
    assert "bad.json" in at.error[0].value
    assert "not a JSON file" in at.error[0].value
    at.file_uploader(key=upload_key(at)).set_value(
        ("other.json", b'{"title": "no criteria"}', "application/json")).run()
    assert "other.json" in at.error[0].value
    assert "neither a rubric" in at.error[0].value
    wrong = (REPO / "rubrics" / "retail-sales.json").read_text().replace('"rtol": 1e-6',
                                                                         '"rtol": "tight"', 1)
    at.file_uploader(key=upload_key(at)).set_value(
        ("typo.json", wrong.encode(), "application/json")).run()
    assert not at.exception
    assert "typo.json" in at.error[0].value
    at.selectbox(key="rubrics_assignment").set_value("r-joins").run()
    at.file_uploader(key=upload_key(at)).set_value(
        ("retail.json", (REPO / "rubrics" / "retail-sales.json").read_bytes(),
         "application/json")).run()
    assert "retail.json" in at.error[0].value
    assert "the rubric is for python, the assignment is r" in at.error[0].value
    assert "load-data" not in set(at.data_editor(key=k(at, "criteria")).value["id"])


def test_old_system_rubric_imports_for_review_then_saves(app_data):
    at = page("r-strings-dates")
    at.file_uploader(key=upload_key(at)).set_value(
        ("rubric.seed-format.json", SEED.read_bytes(), "application/json")).run()
    assert not at.exception
    assert not at.error
    ids = list(at.data_editor(key=k(at, "criteria")).value["id"])
    assert ids[0] == "part1-setup"
    assert "question-8-1" in ids
    table = next(d.value for d in at.dataframe if "what to do" in d.value.columns)
    assert "partial_credit_rules.part4_date_operations" in set(table["where in the old file"])
    assert "not carried over" in texts(at.info)
    assert metric(at, "Total points") == "100"
    at.button(key="rubrics_save").click().run()
    assert not at.exception
    r = in_force(app_data, "r-strings-dates")
    assert r.criteria[0].id == "part1-setup"


def test_preview_names_a_grade_it_cannot_rescore(app_data):
    """A grade whose notebook the store does not hold (saved without its file): a changed
    check cannot be evaluated for it, and the preview says so instead of guessing."""
    a = load_assignment(RETAIL)
    item = GradeInput("partial.ipynb", (RETAIL / "submissions" / "partial.ipynb").read_bytes(),
                      "student007", "student007")
    report = Grader(a, GradeOptions(execute=False, use_llm=False)).grade(item)
    with Store(app_data / "grader.db") as store:
        aid = store.upsert_assignment(a.name, a.title, a.language, a.root)
        rv = store.add_rubric_version(aid, a.rubric.version, dumps(a.rubric))
        store.save_grade(store.add_submission(aid, item.sha256, item.name, "student007",
                                              "student007"), rv, report)
    at = page()
    at.session_state[k(at, "checks")] = edits(edited_rows={0: {"target": "orders"}})
    at.run()
    at.button(key="rubrics_preview").click().run()
    assert not at.exception
    assert "student007: the notebook is not stored" in texts(at.warning)
    assert at.dataframe[-1].value["new score"].isna().all()


def test_an_assignment_that_cannot_load_is_named(app_data):
    broken = app_data / "assignments" / "broken-hw"
    broken.mkdir(parents=True)
    (broken / "assignment.toml").write_text('rubric = "missing.json"\n', encoding="utf-8")
    at = page()
    assert "broken-hw" in texts(at.warning)
    assert "broken-hw" not in at.selectbox(key="rubrics_assignment").options


def test_another_assignment_gets_its_own_title_and_placeholders(app_data):
    """A browser keeps showing, and sends back, the value of a widget for as long as its
    id lives, unless the app sets it: emulated here by giving every editor widget that
    survives the switch the value it showed before."""
    joins = in_force(app_data, "r-joins")
    at = page("retail-sales")
    at.text_input(key=k(at, "title")).input("Retail sales, edited")
    shown = {w.id: w.value for w in [*at.text_input, *at.text_area, *at.toggle]
             if (w.key or "").startswith("rubrics_")}
    at.selectbox(key="rubrics_assignment").set_value("r-joins").run()
    for w in [*at.text_input, *at.text_area, *at.toggle]:
        if w.id in shown:
            w.set_value(shown[w.id])
    at.run()
    assert not at.exception, at.exception
    assert at.text_input(key=k(at, "title")).value == joins.title
    assert at.text_area(key=k(at, "placeholders")).value == "\n".join(joins.placeholders)
    assert "No changes from the rubric in force." in texts(at.info)
    assert at.button(key="rubrics_save").disabled  # nothing to save: no renamed rubric
    at.switch_page("app_pages/grade.py")
    at.run()
    at.switch_page("app_pages/rubrics.py")
    at.run()
    assert at.selectbox(key="rubrics_assignment").value == "r-joins"  # kept across pages


def test_a_version_2_rubric_is_edited_and_saved_in_the_page(app_data):
    at = page("py-functions")
    rows = at.data_editor(key=k(at, "checks")).value
    types = list(rows["type"])
    value_row, printed_row = types.index("value"), types.index("printed")
    assert rows["target"][value_row] == '"moving_average([1, 2, 3, 4], 2)"'
    at.session_state[k(at, "checks")] = edits(edited_rows={
        value_row: {"options": "accept=[[1.5, 2.5, 3.5], [1.5, 2.5]]"},
        printed_row: {"options": "question=Question 4; evidence=rerun; depends_on=nowhere"}})
    at.run()
    assert not at.exception
    assert any("names 'nowhere'" in e.value for e in at.error)  # inline, on its row
    assert at.button(key="rubrics_save").disabled
    at.session_state[k(at, "checks")] = edits(edited_rows={
        value_row: {"options": "accept=[[1.5, 2.5, 3.5], [1.5, 2.5]]"},
        printed_row: {"options": "question=Question 4; evidence=rerun"}})
    at.run()
    assert not at.exception
    assert not at.error
    at.button(key="rubrics_save").click().run()
    assert not at.exception
    saved = in_force(app_data, "py-functions")
    checks = {ch.type: ch for c in saved.criteria for ch in c.checks if ch.type != "test"}
    (edited,) = [ch for c in saved.criteria for ch in c.checks
                 if ch.type == "value" and ch.expression.startswith("moving_average")]
    assert edited.expected == ((1.5, 2.5, 3.5), (1.5, 2.5))
    assert (checks["printed"].evidence, checks["printed"].depends_on) == ("rerun", ())
    assert saved.schema_version == 2


def test_levels_are_shown_edited_and_saved_in_the_page(app_data):
    at = page("r-strings-dates")
    at.file_uploader(key=upload_key(at)).set_value(
        ("rubric.seed-format.json", SEED.read_bytes(), "application/json")).run()
    assert not at.exception
    rows = at.data_editor(key=k(at, "levels")).value
    dates = [i for i, c in enumerate(rows["criterion"]) if c == "part4-date-operations"]
    assert [rows["credit"][i] for i in dates][:2] == [1.0, 0.85]  # the old rules, in order
    first = dates[0]
    at.session_state[k(at, "levels")] = edits(edited_rows={first: {"when": "[{\"type\": "}})
    at.run()
    assert not at.exception
    assert any("not a JSON list of checks" in e.value for e in at.error)
    assert at.button(key="rubrics_save").disabled
    at.session_state[k(at, "levels")] = edits(edited_rows={first: {"credit": 0.95}})
    at.run()
    assert not at.exception
    assert not at.error
    at.button(key="rubrics_save").click().run()
    assert not at.exception
    saved = in_force(app_data, "r-strings-dates").criterion("part4-date-operations")
    assert [lv.credit for lv in saved.levels][:2] == [0.95, 0.85]


def test_a_criterion_marked_manual_in_the_page_is_saved_for_you_to_grade(graded):
    at = page()
    ids = list(at.data_editor(key=k(at, "criteria")).value["id"])
    at.session_state[k(at, "criteria")] = edits(edited_rows={1: {"manual": True}})
    at.run()
    assert not at.exception
    assert not at.error, texts(at.error)
    at.button(key="rubrics_save").click().run()
    assert not at.exception
    r = in_force(graded, "retail-sales")
    assert [c.id for c in r.criteria if c.manual] == [ids[1]]
