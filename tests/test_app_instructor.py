"""What the instructor reads on the Grade and Review pages (issue 11): a batch that runs on
after a reload, the intro, the sidebar's model state, the Canvas CSV under pseudonyms."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.service.jobs import running_jobs
from tests.conftest import open_app
from tests.followed_job import followed_job

ROOT = Path(__file__).resolve().parents[1]
RETAIL = ROOT / "examples" / "retail-sales"
PAGE = "app_pages/grade.py"


@pytest.mark.slow
def test_a_page_drawn_afresh_follows_the_batch_that_runs_on(app_data: Path):
    with followed_job(app_data, "retail-sales", RETAIL / "submissions" / "complete.ipynb") \
            as (job, ws):
        assert running_jobs(ws, "retail-sales") == [job]
        at = open_app(PAGE)  # a new session: nothing of the job in its state
        assert not at.exception, at.exception
        assert job.finished
        (status,) = at.status
        assert status.label.startswith("Graded 1 of 1 notebooks")
        results = at.dataframe[1].value
        assert list(results["file"]) == ["student042.ipynb"]
        assert results["score"][0] == job.result.reports[0].score > 0
        assert running_jobs(ws) == []  # a finished job is no longer running


def test_the_intro_names_the_example_that_is_chosen(app_data: Path):
    at = open_app(PAGE)
    chosen = at.selectbox(key="grade_assignment")
    intro = next(c.value for c in at.caption if c.value.startswith("New here?"))
    label = chosen.format_func(chosen.value)  # "<title> (<name>, <language>, example)"
    assert f"*{label[: label.rindex(' (')]}*" in intro
    chosen.set_value("retail-sales").run()
    intro = next(c.value for c in at.caption if c.value.startswith("New here?"))
    assert "*Retail sales analysis*" in intro


def test_hidden_names_warn_that_canvas_cannot_import_the_csv(app_data: Path):
    at = open_app(PAGE)
    at.toggle(key="_anonymise_switch").set_value(True).run()
    at.selectbox(key="grade_assignment").set_value("retail-sales").run()
    at.multiselect(key="grade_samples").set_value(["complete.ipynb"])
    at.checkbox(key="grade_execute").set_value(False)
    at.checkbox(key="grade_llm").set_value(False)
    at.button(key="grade_run").click().run()
    assert not at.exception, at.exception
    warned = " ".join(w.value for w in at.warning)
    assert "cannot import this Canvas CSV" in warned
    at.toggle(key="_anonymise_switch").set_value(False).run()
    assert "cannot import this Canvas CSV" not in " ".join(w.value for w in at.warning)


def test_the_assignment_chosen_on_one_page_is_where_the_others_open(app_data: Path):
    at = open_app(PAGE)
    at.selectbox(key="grade_assignment").set_value("retail-sales").run()
    at.switch_page("app_pages/rubrics.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="rubrics_assignment").value == "retail-sales"
    at.selectbox(key="rubrics_assignment").set_value("r-strings-dates").run()
    at.switch_page("app_pages/grade.py").run()
    assert at.selectbox(key="grade_assignment").value == "r-strings-dates"
