"""The Grade page in Streamlit's AppTest: real grading, real store, the bundled models."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import pytest

from grader.store.database import Store
from tests.conftest import open_app
from tests.killed_grader import killed_batch

ROOT = Path(__file__).resolve().parents[1]
RETAIL = ROOT / "examples" / "retail-sales"
PAGE = "app_pages/grade.py"


def _options(at, *, execute: bool = True, llm: bool = False) -> None:
    at.checkbox(key="grade_execute").set_value(execute)
    at.checkbox(key="grade_llm").set_value(llm)


def _grade_sample(sample: str, *, execute: bool = True, llm: bool = True):
    """The app after grading one of retail-sales' samples (all four layers by default)."""
    at = open_app(PAGE)
    at.selectbox(key="grade_assignment").set_value("retail-sales").run()
    at.multiselect(key="grade_samples").set_value([sample])
    _options(at, execute=execute, llm=llm)
    # The run lasts as long as the grade. With the models on a 2-core machine that
    # is a minute, and several when the assignments' self-checks share the cores:
    # the timeout only guards against a hang.
    at.button(key="grade_run").click().run(timeout=600 if llm else 180)
    assert not at.exception, at.exception
    return at


@pytest.mark.slow
def test_upload_grades_good_files_and_names_the_bad_one(app_data):
    at = open_app(PAGE)
    assert at.selectbox(key="grade_assignment").value == "py-functions"  # first, sorted
    at.selectbox(key="grade_assignment").set_value("retail-sales").run()
    good = (RETAIL / "submissions" / "complete.ipynb").read_bytes()
    at.file_uploader(key="grade_files_0").set_value(
        [("student042.ipynb", good, "application/x-ipynb+json"),
         ("student043.ipynb", b"{not json", "application/x-ipynb+json")])
    _options(at)
    at.button(key="grade_run").click().run()
    assert not at.exception, at.exception
    errors = [e.value for e in at.error]
    assert any("student043.ipynb" in e and "not JSON" in e for e in errors), errors
    table = at.dataframe[1].value
    row = table[table["file"] == "student042.ipynb"].iloc[0]
    assert row["score"] == 20
    assert row["status"] == "graded"
    assert list(table["file"]) == ["student042.ipynb"]  # the unreadable file: named above,
    assert table.notna().all().all()  # and no row of "None"s in the results
    assert any("1 file(s) could not be read" in c.value for c in at.caption)
    # the uploader starts empty for the next batch instead of piling files onto it
    assert not at.file_uploader(key="grade_files_1").value
    # stored, so the Review page and a restart see it
    store = Store(app_data / "grader.db")
    try:
        aid = store.assignment_id("retail-sales")
        assert [g.file for g in store.list_grades(aid)] == ["student042.ipynb"]
    finally:
        store.close()


def test_nothing_to_grade_is_an_error(app_data):
    at = open_app(PAGE)
    at.button(key="grade_run").click().run()
    assert not at.exception
    assert "Nothing to grade" in at.error[0].value


def test_creating_an_assignment_without_a_rubric_lists_the_problem(app_data):
    at = open_app(PAGE)
    at.text_input(key="grade_new_title_0").set_value("Homework 9")
    at.file_uploader(key="grade_new_template_0").set_value(
        ("template.ipynb", (RETAIL / "template.ipynb").read_bytes(), "application/json"))
    at.file_uploader(key="grade_new_solution_0").set_value(
        ("solution.ipynb", (RETAIL / "solution.ipynb").read_bytes(), "application/json"))
    at.button[0].click().run()  # the form's submit button
    assert not at.exception
    assert "no rubric uploaded" in at.error[0].value
    assert not (app_data / "assignments" / "homework-9").exists()


def test_creating_an_assignment_selects_it(app_data):
    at = open_app(PAGE)
    at.text_input(key="grade_new_title_0").set_value("Homework 9")
    for key, path in (("grade_new_template_0", RETAIL / "template.ipynb"),
                      ("grade_new_solution_0", RETAIL / "solution.ipynb"),
                      ("grade_new_rubric_0", ROOT / "rubrics" / "retail-sales.json")):
        at.file_uploader(key=key).set_value((path.name, path.read_bytes(), "application/json"))
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert "Created “Homework 9” as homework-9" in at.success[0].value
    assert at.selectbox(key="grade_assignment").value == "homework-9"
    assert json.loads((app_data / "assignments" / "homework-9" / "rubric.json").read_text())


def test_creating_from_an_old_rubric_lists_what_was_imported_and_keeps_the_title(app_data):
    course = ROOT.parent / "shared" / "course-r" / "strings-dates"
    at = open_app(PAGE)
    at.text_input(key="grade_new_title_0").set_value("Lesson 7: Strings and dates (R) - Fall 2026")
    for key, path in (("grade_new_template_0", course / "template.ipynb"),
                      ("grade_new_solution_0", course / "solution.ipynb"),
                      ("grade_new_rubric_0", course / "rubric.seed-format.json")):
        at.file_uploader(key=key).set_value((path.name, path.read_bytes(), "application/json"))
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert ("Created “Lesson 7: Strings and dates (R) - Fall 2026” as lesson-7-strings-and-dates"
            in at.success[0].value)
    table = next(d.value for d in at.dataframe if "what to do" in d.value.columns)
    assert set(table["status"]) == {"imported", "not carried over"}  # words, no glyphs
    missed = table[table["status"] != "imported"]
    assert len(missed) > 0
    assert (missed["what to do"].str.len() > 20).all()  # each says what to do instead
    assert not table["what to do"].str.contains("module doc").any()
    made = app_data / "assignments" / "lesson-7-strings-and-dates"
    assert json.loads((made / "rubric.json").read_text())["title"] == \
        "Lesson 7: Strings and dates (R) - Fall 2026"


def _results(at):
    """The results table (each student's grade), wherever the page put it."""
    return next(d.value for d in at.dataframe if "file" in d.value.columns)


def _models_in(at, timeout: float = 900.0):
    """Draw the page again until the models' notes of the batch are in (they come after
    the grades, from a queue of their own): the app as the instructor then sees it."""
    deadline = time.monotonic() + timeout
    while not any("models' notes of all" in s.value for s in at.success):
        assert time.monotonic() < deadline, [p.value for p in at.get("progress")]
        time.sleep(2)
        at.run(timeout=120)
        assert not at.exception, at.exception
    return at


@pytest.mark.llm
@pytest.mark.slow
def test_sample_graded_with_the_models_shows_evidence_and_measured_requests(app_data):
    at = _grade_sample("partial.ipynb")
    assert not at.error
    (status,) = at.status
    assert status.state == "complete"
    assert status.label.startswith("Graded 1 of 1 notebooks")
    live = status.dataframe[0].value  # the live table of layers, as the job left it
    assert live["state"][0] == "graded"
    assert all(live[layer][0].startswith("done in ") for layer in (
        "Structure (L1)", "Run in the sandbox (L2)"))
    # grades first: the grade is shown (and stored) before the models have read it
    assert not live["Code analysis (L3)"][0].startswith("done in ")
    results = _results(at)
    assert 0 < results["score"][0] < 20
    _models_in(at)
    requests = next(d.value for d in at.dataframe if "prefill tok/s" in d.value.columns)
    assert set(requests["layer"]) == {"L3", "L4"}
    assert (requests["prefill tok/s"] > 0).all()
    assert (requests["decode tok/s"] > 0).all()
    assert (requests["KV moved (MB)"] > 0).all()  # the real KV went from prefill to decode


@pytest.mark.llm
@pytest.mark.slow
def test_a_failing_model_layer_sends_criteria_to_review(app_data, tmp_path, monkeypatch):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)  # not a model: loading fails
    config = tmp_path / "grader.toml"
    config.write_text(f'[models.broken]\npath = "{broken}"\n\n[roles.code]\nmodel = "broken"\n'
                      '\n[roles.feedback]\nmodel = "broken"\n')
    monkeypatch.setenv("GRADER_CONFIG", str(config))
    at = _models_in(_grade_sample("complete.ipynb"))
    results = _results(at)
    assert results["score"][0] == 20  # deterministic evidence stands
    assert results["needs review"][0]  # but the criteria the models could not read go to review
    layers = next(d.value for d in at.dataframe if "seconds" in d.value.columns)
    failed = layers[layers["error"] != ""]
    assert set(failed["layer"]) == {"L3", "L4"}


@pytest.mark.slow
def test_hidden_names_stay_hidden_while_grading_and_in_results(app_data):
    at = open_app(PAGE)
    at.toggle(key="_anonymise_switch").set_value(True).run()
    at.selectbox(key="grade_assignment").set_value("retail-sales").run()
    good = (RETAIL / "submissions" / "partial.ipynb").read_bytes()
    at.file_uploader(key="grade_files_0").set_value(
        [("doejane_12345_67890_hw1.ipynb", good, "application/x-ipynb+json"),
         ("roejohn_12346_67891_hw1.ipynb", b"[]", "application/x-ipynb+json")])
    _options(at, execute=False)
    at.button(key="grade_run").click().run()
    assert not at.exception, at.exception
    shown = " ".join([e.value for e in at.error] + [str(d.value.to_dict()) for d in at.dataframe]
                     + [at.selectbox(key="grade_detail").value])
    for name in ("doejane", "roejohn", "12345", "12346"):
        assert name not in shown
    assert "unreadable file 1: not graded" in at.error[0].value
    live = at.status[0].dataframe[0].value
    assert list(live["notebook"]) == ["notebook 1"]
    results = at.dataframe[1].value
    assert list(results["student"][:1]) == ["Student 001"]


@pytest.mark.r
@pytest.mark.slow
def test_an_r_assignment_is_graded_on_the_page(app_data):
    at = open_app(PAGE)
    at.selectbox(key="grade_assignment").set_value("r-joins").run()
    at.multiselect(key="grade_samples").set_value(["complete.ipynb", "template_only.ipynb"])
    _options(at)
    at.button(key="grade_run").click().run()
    assert not at.exception, at.exception
    assert not at.error
    results = at.dataframe[1].value.set_index("file")
    assert results.loc["complete.ipynb", "%"] >= 98
    assert results.loc["template_only.ipynb", "%"] <= 5


@pytest.mark.slow
def test_a_batch_stopped_with_the_app_is_offered_and_resumed(app_data):
    from grader.pipeline import GradeInput
    from grader.service.workspace import Workspace

    store = Store(app_data / "grader.db")
    try:  # what grade_batch leaves when the app is killed before grading anything
        ws = Workspace(store, app_data / "assignments")
        a = ws.load("retail-sales")
        aid = ws.assignment_id(a.name)
        rv = next(v.id for v in store.rubric_versions(aid) if v.version == a.rubric.version)
        data = (RETAIL / "submissions" / "complete.ipynb").read_bytes()
        item = GradeInput("student042.ipynb", data, "student042", "student042")
        store.save_file(item.sha256, data)
        batch = killed_batch(store.path, aid, rv, [(item.name, item.sha256, "student042",
                                                    "student042")])
    finally:
        store.close()
    at = open_app(PAGE)
    at.selectbox(key="grade_assignment").set_value("retail-sales").run()
    assert "stopped with 1 of 1 notebooks left" in at.warning[0].value
    _options(at)  # no models: resuming is what is tested
    at.button(key=f"grade_resume_{batch}").click().run()
    assert not at.exception, at.exception
    results = at.dataframe[1].value
    assert list(results["student"]) == ["student042"]
    assert results["score"][0] == 20
    assert not [w for w in at.warning if "stopped with" in w.value]


def test_the_assignment_chosen_survives_a_visit_to_another_page(app_data):
    at = _grade_sample("partial.ipynb", execute=False, llm=False)
    for page in ("app_pages/dashboard.py", "app_pages/review.py", PAGE):
        at.switch_page(page)
        at.run()
        assert not at.exception, at.exception
    assert at.selectbox(key="grade_assignment").value == "retail-sales"
    assert "Results: Retail sales" in at.subheader[0].value
    at.selectbox(key="grade_assignment").set_value("r-strings-dates").run()
    note = " ".join(i.value for i in at.info)  # the results shown are another assignment's
    assert "graded for retail-sales" in note
    assert "The assignment chosen above is r-strings-dates" in note


@pytest.mark.slow
def test_a_second_click_while_grading_grades_once(app_data, caplog):
    """Two quick clicks on Grade: the second run of the page asks for the same work while
    the first click's job runs. A job holding that work is started here first (blocked
    until the page has asked for it, or follows it: a page drawn while a batch runs
    follows that batch), as the first click would have."""
    from grader.layers.base import GradeOptions
    from grader.notebooks.archive import expand_uploads
    from grader.pipeline import GradeInput
    from grader.service.jobs import _LIVE, GradeJob, grading_key
    from grader.service.workspace import Upload, Workspace

    release = threading.Event()
    ups = [Upload("partial.ipynb", (RETAIL / "submissions" / "partial.ipynb").read_bytes())]
    options = GradeOptions(execute=False, use_llm=False)

    def collect():
        release.wait(120)
        files, problems = expand_uploads([(u.name, u.data) for u in ups])
        return [GradeInput.from_submission(f) for f in files], problems

    class Followed(GradeJob):
        def wait(self, since_version: int, timeout: float = 0.25):
            release.set()  # the page follows this job instead of starting its own
            return super().wait(since_version, timeout)

    class Asked(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "already running" in record.getMessage():
                release.set()

    def watch() -> None:  # without the fix the page starts a job of its own: let both go
        while not release.wait(0.05):
            if any(j is not first for j in list(_LIVE)):
                release.set()

    caplog.set_level(logging.INFO, logger="grader.service.jobs")
    handler = Asked()
    logging.getLogger("grader.service.jobs").addHandler(handler)
    store = Store(app_data / "grader.db")
    try:
        ws = Workspace(store, app_data / "assignments")
        at = open_app(PAGE)
        at.selectbox(key="grade_assignment").set_value("retail-sales").run()
        at.multiselect(key="grade_samples").set_value(["partial.ipynb"])
        _options(at, execute=False, llm=False)
        first = Followed(ws, "retail-sales", collect, options, None,
                         key=grading_key(ws, "retail-sales", ups, options)).start()
        threading.Thread(target=watch, daemon=True).start()
        at.button(key="grade_run").click().run()
        assert not at.exception, at.exception
        deadline = time.monotonic() + 60
        while not first.finished and time.monotonic() < deadline:
            first.wait(-1, timeout=1)
        assert first.result.error == ""
        assert not at.button(key="grade_run").disabled  # the job ended: ready for the next
        assert list(at.dataframe[1].value["file"]) == ["partial.ipynb"]
        batches = store.batches(store.assignment_id("retail-sales"))
        assert [b.total for b in batches] == [1]  # one batch, not one per click
    finally:
        release.set()
        logging.getLogger("grader.service.jobs").removeHandler(handler)
        store.close()


def test_a_notebook_of_another_assignment_is_warned_about(app_data):
    strings = ROOT / "examples" / "r-strings-dates" / "submissions" / "complete.ipynb"
    at = open_app(PAGE)
    at.selectbox(key="grade_assignment").set_value("r-joins").run()
    at.file_uploader(key="grade_files_0").set_value(
        [("student042.ipynb", strings.read_bytes(), "application/x-ipynb+json")])
    _options(at, execute=False)
    at.button(key="grade_run").click().run()
    assert not at.exception, at.exception
    warned = [w.value for w in at.warning if "student042" in w.value and "template" in w.value]
    assert len(warned) == 1
    assert "of r-joins's template" in warned[0]
    assert "is it a notebook of another assignment?" in warned[0]


def test_switching_the_models_off_stays_off_across_pages_and_reloads(app_data):
    """Issue 33: the switch turned itself back on after a visit to another page, and the
    next notebook took three minutes of models instead of seconds."""
    at = open_app(PAGE)
    at.checkbox(key="grade_llm").set_value(False).run()
    for page in ("app_pages/review.py", "app_pages/dashboard.py", PAGE):
        at.switch_page(page)
        at.run()
        assert not at.exception, at.exception
    assert at.checkbox(key="grade_llm").value is False
    again = open_app(PAGE)  # a reload: a new session, the same store
    assert again.checkbox(key="grade_llm").value is False
    assert again.checkbox(key="grade_execute").value is True  # never changed: the default
    again.selectbox(key="grade_assignment").set_value("retail-sales").run()
    again.multiselect(key="grade_samples").set_value(["partial.ipynb"])
    again.checkbox(key="grade_execute").set_value(False)
    again.button(key="grade_run").click().run()
    assert not again.exception, again.exception
    live = again.status[0].dataframe[0].value
    assert live["Code analysis (L3)"][0] == "off"  # said off, and true: no request was made
    store = Store(app_data / "grader.db")
    try:
        (grade,) = store.list_grades(store.assignment_id("retail-sales"))
        report = store.get_report(grade.id)
        assert report.layers["L3"].details == {"not_run": "models_off"}
        assert store.model_parts() == []
    finally:
        store.close()
