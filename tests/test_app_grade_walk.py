"""Issue 22, the walk of a new instructor, on the Grade page in AppTest: a reload during a
batch keeps the batch's assignment chosen, the create form starts empty after creating
and names the files used, archive and delete keep the grades, the import report belongs
to its assignment, and the results show the grades in force after a rubric edit."""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

from grader.layers.base import GradeOptions
from grader.notebooks.archive import expand_uploads
from grader.pipeline import GradeInput, Grader
from grader.service.batch import grade_batch
from grader.service.workspace import Workspace
from grader.store.database import Store
from tests.conftest import open_app
from tests.followed_job import followed_job

ROOT = Path(__file__).resolve().parents[1]
RETAIL = ROOT / "examples" / "retail-sales"
COURSE = ROOT.parent / "shared" / "course-r" / "strings-dates"
PAGE = "app_pages/grade.py"
FILES = (("template", RETAIL / "template.ipynb"), ("solution", RETAIL / "solution.ipynb"),
         ("rubric", ROOT / "rubrics" / "retail-sales.json"))


def _create(at, title: str, files=FILES, form: int = 0) -> None:
    at.text_input(key=f"grade_new_title_{form}").set_value(title)
    for what, path in files:
        at.file_uploader(key=f"grade_new_{what}_{form}").set_value(
            (path.name, path.read_bytes(), "application/json"))
    next(b for b in at.button if b.label == "Create assignment").click().run()
    assert not at.exception, at.exception


def _listed(at) -> str:
    return " ".join(at.selectbox(key="grade_assignment").options)


def _grade(store: Store, app_data: Path, name: str, rubric=None) -> None:
    ws = Workspace(store, app_data / "assignments")
    a = ws.load(name)
    if rubric is not None:
        a = dataclasses.replace(a, rubric=rubric)
    item = GradeInput("student042.ipynb", (RETAIL / "submissions" / "partial.ipynb").read_bytes(),
                      "student042", "student042")
    grade_batch(Grader(a, GradeOptions(execute=False, use_llm=False)), [item], store)


def test_a_reload_during_a_batch_chooses_the_batch_s_assignment(app_data: Path):
    with followed_job(app_data, "retail-sales", RETAIL / "submissions" / "partial.ipynb"):
        at = open_app(PAGE)  # a reload: a new session, nothing of the job in its state
        assert not at.exception, at.exception
        # not the first assignment listed (py-functions): the batch's, whose rubric it used
        assert at.selectbox(key="grade_assignment").value == "retail-sales"
        (status,) = at.status
        assert "of “Retail sales analysis” (retail-sales)" in status.label  # the title
        assert not [i for i in at.info if "The assignment chosen above is" in i.value]


def test_the_create_form_starts_empty_and_names_the_files_used(app_data: Path):
    at = open_app(PAGE)
    _create(at, "Homework 9")
    made = " ".join(s.value for s in at.success)
    assert "Created “Homework 9” as homework-9" in made
    assert ("from template template.ipynb, solution solution.ipynb, rubric retail-sales.json, "
            "no data files") in made
    assert at.text_input(key="grade_new_title_1").value == ""  # a fresh, empty form
    assert not at.file_uploader(key="grade_new_template_1").value
    assert not at.file_uploader(key="grade_new_rubric_1").value
    # swapping only the template: refused, never made with the previous solution and rubric
    _create(at, "", (("template", ROOT / "examples" / "py-functions" / "template.ipynb"),),
            form=1)
    refused = at.error[0].value
    assert "no solution notebook uploaded" in refused
    assert "no rubric uploaded" in refused
    assert sorted(p.name for p in (app_data / "assignments").iterdir()
                  if not p.name.startswith(".")) == ["homework-9"]


def test_archive_and_delete_keep_the_grades(app_data: Path):
    at = open_app(PAGE)
    _create(at, "Homework 9")
    with Store(app_data / "grader.db") as store:
        _grade(store, app_data, "homework-9")
    at.run()
    at.button(key="grade_archive_homework-9").click().run()
    assert not at.exception, at.exception
    assert "(homework-9, " not in _listed(at)  # hidden from the picker
    assert any("Archived “Homework 9” (homework-9)" in s.value
               and "its grades (1 student, 1 grade) kept" in s.value for s in at.success)
    at.button(key="grade_restore_homework-9").click().run()
    assert "(homework-9, " in _listed(at)
    at.selectbox(key="grade_assignment").set_value("homework-9").run()
    at.button(key="grade_delete_homework-9").click().run()
    asked = " ".join(w.value for w in at.warning)
    assert "Delete “Homework 9” (homework-9)?" in asked
    assert "The database keeps its grades (1 student, 1 grade)" in asked
    assert "download them first" in asked
    assert at.get("download_button")  # the grades' exports, offered before the yes
    assert (app_data / "assignments" / "homework-9").is_dir()  # nothing done before the yes
    at.button(key="grade_delete_yes").click().run()
    assert not at.exception, at.exception
    assert "(homework-9, " not in _listed(at)
    assert not (app_data / "assignments" / "homework-9").exists()
    with Store(app_data / "grader.db") as store:  # never silently lose grades
        assert len(store.list_grades(store.assignment_id("homework-9"))) == 1
    at.selectbox(key="grade_assignment").set_value("retail-sales").run()
    keys = {b.key for b in at.button}
    assert "grade_archive_retail-sales" in keys
    assert "grade_delete_retail-sales" not in keys  # a bundled example is only archived


def test_the_import_report_belongs_to_its_assignment_and_reads_in_full(app_data: Path):
    at = open_app(PAGE)
    _create(at, "Lesson 7", (("template", COURSE / "template.ipynb"),
                             ("solution", COURSE / "solution.ipynb"),
                             ("rubric", COURSE / "rubric.seed-format.json")))
    table = next(d.value for d in at.dataframe if "what to do" in d.value.columns)
    assert set(table["status"]) == {"imported", "not carried over"}
    assert not table.map(lambda v: "1 points" in str(v)).any().any()
    advice = next(m.value for m in at.markdown if m.value.startswith("**What to do**"))
    for item in table[table["status"] == "not carried over"]["in the old rubric"]:
        assert item.split(" ")[0] in advice
    listed = advice.count("\n- **") + advice.count("\n    - ")  # alone, or under its advice
    assert listed >= (table["status"] == "not carried over").sum()
    at.selectbox(key="grade_assignment").set_value("retail-sales").run()
    assert not [d for d in at.dataframe if "what to do" in d.value.columns]
    assert not [s for s in at.success if "Created" in s.value]


def test_results_show_the_grades_in_force_after_a_rubric_edit(app_data: Path):
    at = open_app(PAGE)
    at.selectbox(key="grade_assignment").set_value("retail-sales").run()
    at.multiselect(key="grade_samples").set_value(["partial.ipynb"])
    at.checkbox(key="grade_execute").set_value(False)
    at.checkbox(key="grade_llm").set_value(False)
    at.button(key="grade_run").click().run()
    assert not at.exception, at.exception
    before = at.dataframe[1].value
    with Store(app_data / "grader.db") as store:
        ws = Workspace(store, app_data / "assignments")
        rubric = ws.load("retail-sales").rubric
        assert list(before["rubric"]) == ["version 1 (" + _today() + ")"]  # not a hash
        edited = dataclasses.replace(rubric, title=rubric.title + " (edited)")
        ws.save_rubric("retail-sales", edited, "an edit")
        a = dataclasses.replace(ws.load("retail-sales"), rubric=edited)
        files, _ = expand_uploads([("partial.ipynb",
                                    (RETAIL / "submissions" / "partial.ipynb").read_bytes())])
        items = [GradeInput.from_submission(f) for f in files]  # as the page reads a sample
        grade_batch(Grader(a, GradeOptions(execute=False, use_llm=False)), items, store)
    at.run()
    after = at.dataframe[1].value
    assert list(after["rubric"]) == ["version 2 (" + _today() + ")"]  # the grade in force
    assert list(after["grade"]) != list(before["grade"])
    assert any("graded again since this batch" in i.value for i in at.info)


def _grade_partial_twice(at) -> None:
    at.selectbox(key="grade_assignment").set_value("retail-sales").run()
    for _ in range(2):  # the same sample again, without "Regrade": taken from the store
        at.multiselect(key="grade_samples").set_value(["partial.ipynb"])
        at.checkbox(key="grade_execute").set_value(False)
        at.checkbox(key="grade_llm").set_value(False)
        at.button(key="grade_run").click().run()
        assert not at.exception, at.exception


def test_a_batch_graded_before_says_so_and_its_detail_numbers_cells(app_data: Path):
    """Found by the browser walk: a batch whose notebooks were all graded before with
    this rubric ended as "Graded 0 of 8 notebooks", as if it had failed; and the Grade
    page's detail named the evidence's cells by their ids, where Review and the letter
    number them."""
    at = open_app(PAGE)
    _grade_partial_twice(at)
    (status,) = at.status
    assert status.label.startswith("Graded 0 of 1 notebooks of “Retail sales analysis”")
    assert status.label.endswith("; 1 was graded before with this rubric (their stored "
                                 "grades are shown)")
    cells = {v for e in at.expander if e.label.startswith("Load the three data files:")
             for v in e.dataframe[0].value["cell"].dropna()}
    assert cells
    assert all(re.fullmatch(r"cell \d+", c) for c in cells), cells


def _today() -> str:
    """Today as a rubric version's label says it ("29 Nov 2026")."""
    return time.strftime("%d %b %Y").lstrip("0")
