"""The Dashboard page in Streamlit's AppTest, over a real history and grade store in the
app's data folder. The engine is the embedded default (its models load in the
background, as in the app); only the test marked ``llm`` sends a prompt to a model."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pandas as pd
import pytest

from grader.store.database import Store
from grader.types import CriterionResult, GradeReport, LayerResult
from inference.metrics import MetricsHistory
from inference.types import RequestMetrics
from tests.conftest import open_app

PAGE = "app_pages/dashboard.py"


def fill_history(data: Path, n: int = 40, old: int = 5) -> None:
    """``n`` requests in the last 40 minutes (code and feedback alternate, every 5th
    fails) and ``old`` from two days ago."""
    now = time.time()
    h = MetricsHistory(data / "grader.db")
    for i in range(old):
        h.record(RequestMetrics(request_id=f"old-{i:03d}", role="code", route="code:r",
                                prefill_tokens=300, prefill_seconds=1.0, decode_evals=30,
                                decode_seconds=0.3, ttft_seconds=1.1, started_at=now - 2 * 86_400))
    for i in range(n):
        role = "code" if i % 2 == 0 else "feedback"
        h.record(RequestMetrics(
            request_id=f"req-{i:03d}", role=role, route=f"{role}:embedded/smollm2-135m",
            prefill_tokens=500, prefill_seconds=2.0, decode_evals=64, decode_seconds=0.8,
            ttft_seconds=2.05, total_seconds=2.9, started_at=now - 2400 + 60 * i,
            finished_at=now - 2400 + 60 * i + 2.9,
            error="BackendError: worker crashed" if i % 5 == 4 else ""))
    h.close()


def table(at, column: str, without: str = "") -> pd.DataFrame:
    """The page's dataframe that has ``column`` (and not ``without``)."""
    found = [d.value for d in at.dataframe
             if column in d.value.columns and without not in d.value.columns]
    assert len(found) == 1, f"{len(found)} tables with a {column!r} column"
    return found[0]


def generate(at):
    (button,) = [b for b in at.button if b.label == "Generate"]
    return button.click().run()


def test_the_live_view_of_a_filled_history(app_data: Path):
    fill_history(app_data)
    at = open_app(PAGE)
    assert not at.exception
    assert at.title[0].value == "Dashboard"
    names = " ".join(m.value for m in at.markdown)
    for worker in ("code/prefill", "code/decode", "feedback/prefill", "feedback/decode"):
        assert f"**{worker}**" in names
    assert "Last latency" in {m.label for m in at.metric}
    # The small counts are one line of words: as metrics three abreast in a quarter of the
    # page their labels were cut ("Se…").
    counts = [m.value for m in at.markdown if m.value.startswith("Queue **")]
    assert len(counts) == 4
    assert all(re.fullmatch(r"Queue \*\*\d+\*\* · Served \*\*\d+\*\* · Errors \*\*\d+\*\*", c)
               for c in counts)
    assert not {"Queue", "Served", "Errors"} & {m.label for m in at.metric}
    assert len(at.get("plotly_chart")) == 2  # throughput, latency
    history = table(at, "request")
    assert len(history) == 40  # the last hour: the two-day-old ones are outside
    assert list(history["request"][:2]) == ["req-039", "req-038"]  # newest first
    assert history["status"].value_counts()["error"] == 8
    summary = table(at, "TTFT p50 (s)")
    assert list(summary["role"]) == ["code", "feedback"]
    assert list(summary["prefill tok/s"]) == [250.0, 250.0]
    assert at.caption[0].value.startswith("Live: refreshes every 5 s")


def test_filters_narrow_the_table(app_data: Path):
    fill_history(app_data)
    at = open_app(PAGE)
    at.selectbox(key="dash_role").set_value("feedback").run()
    assert set(table(at, "request")["role"]) == {"feedback"}
    assert len(table(at, "request")) == 20
    at.selectbox(key="dash_status").set_value("Error").run()
    errors = table(at, "request")
    assert len(errors) == 4
    assert set(errors["status"]) == {"error"}
    at.selectbox(key="dash_status").set_value("Any").run()
    at.text_input(key="dash_text").set_value("REQ-013").run()
    assert list(table(at, "request")["request"]) == ["req-013"]
    at.selectbox(key="dash_role").set_value("Any").run()
    at.text_input(key="dash_text").set_value("").run()
    at.selectbox(key="dash_window").set_value("All time").run()
    assert len(table(at, "request")) == 45
    at.selectbox(key="dash_route").set_value("code:r").run()
    assert set(table(at, "request")["request"].str[:4]) == {"old-"}
    at.text_input(key="dash_text").set_value("no-such-request").run()
    assert not at.exception
    assert any("No request matches" in i.value for i in at.info)
    assert not at.get("plotly_chart")


def test_pausing_stops_the_refresh(app_data: Path):
    fill_history(app_data, n=4, old=0)
    at = open_app(PAGE)
    assert not at.selectbox(key="dash_interval").disabled
    at.toggle(key="dash_live").set_value(False).run()
    assert not at.exception
    assert at.caption[0].value.startswith("Paused")
    assert at.selectbox(key="dash_interval").disabled
    assert len(table(at, "request")) == 4  # paused, still shown
    at.toggle(key="dash_live").set_value(True).run()
    at.selectbox(key="dash_interval").set_value(30).run()
    assert at.caption[0].value.startswith("Live: refreshes every 30 s")


def test_an_empty_history_says_so(app_data: Path):
    at = open_app(PAGE)
    assert not at.exception
    assert any("No requests yet" in i.value for i in at.info)
    assert any("No notebook graded with the LLM layers" in i.value for i in at.info)
    assert not at.get("plotly_chart")
    assert not [d for d in at.dataframe if "request" in d.value.columns]


def test_a_bad_schema_is_an_error_and_is_recorded(app_data: Path):
    at = open_app(PAGE)
    at.text_area(key="dash_prompt_schema").set_value('{"type": "no-such-type"}')
    generate(at)
    assert not at.exception
    assert at.error
    assert "the answer format could not be set up for this model" in at.error[0].value
    assert "SchemaError" not in at.error[0].value  # the exception's name is in the details
    details = [e for e in at.expander if e.label == "Details of the error"]
    assert len(details) == 1
    assert details[0].code[0].value.startswith("SchemaError")
    # The failed request is in the history, placed at the time it was recorded.
    history = table(at, "request")
    assert list(history["status"]) == ["error"]
    assert history["error"][0].startswith("SchemaError")
    at.text_area(key="dash_prompt_schema").set_value("{not json")
    generate(at)
    assert not at.exception
    assert "could not be sent to the model" in at.error[0].value
    (details,) = [e for e in at.expander if e.label == "Details of the error"]
    assert "not valid JSON" in details.code[0].value


def llm_report(student: str, sha: str, eff: float) -> GradeReport:
    details = {"total_s": 3.0, "queue_s": 0.0, "parallel_wall_s": 6.0 / eff,
               "parallel_efficiency": eff,
               "route": "code:embedded/smollm2-135m"}
    return GradeReport(file=f"{student}.ipynb", sha256=sha, assignment="hw1",
                       rubric_version="v1", status="graded", score=3.0, max_score=5.0,
                       layers={"L3": LayerResult("L3", details=dict(details)),
                               "L4": LayerResult("L4", details=dict(details))})


def test_parallel_efficiency_per_notebook_hides_names(app_data: Path):
    with Store(app_data / "grader.db") as store:
        a = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
        rv = store.add_rubric_version(a, "v1", "{}")
        for i, (student, eff) in enumerate((("student042", 1.5), ("student043", 1.2))):
            sha = f"{i:064x}"
            sub = store.add_submission(a, sha, f"{student}.ipynb", student_id=student)
            store.save_grade(sub, rv, llm_report(student, sha, eff))
    at = open_app(PAGE)
    assert not at.exception
    assert len(at.get("plotly_chart")) == 1  # no requests: only the efficiency chart
    stats = table(at, "parallel efficiency")
    assert list(stats["notebook"]) == ["student043.ipynb", "student042.ipynb"]
    assert list(stats["parallel efficiency"]) == [1.2, 1.5]
    at.toggle(key="_anonymise_switch").set_value(True).run()
    names = list(table(at, "parallel efficiency")["notebook"])
    assert not any("student04" in n for n in names)
    # named with their assignment: pseudonyms are numbered per assignment (issue 33)
    assert all(n.startswith("hw1/student_0") for n in names)


@pytest.mark.llm
@pytest.mark.slow
def test_a_prompt_goes_through_the_disaggregated_path(app_data: Path):
    at = open_app(PAGE)
    at.text_area(key="dash_prompt_user").set_value("Name one fruit.")
    at.number_input(key="dash_prompt_max_tokens").set_value(16)
    generate(at)
    assert not at.exception
    assert not at.error
    metrics = table(at, "KV moved (MB)", without="request")  # the prompt's, not the history
    assert metrics["method"][0] == "disaggregated"
    assert metrics["KV moved (MB)"][0] > 0
    assert metrics["prefill worker"][0] != metrics["decode worker"][0]
    history = table(at, "request")
    assert list(history["status"]) == ["ok"]
    assert history["decode tokens"][0] > 0
    assert len(at.get("plotly_chart")) == 2
    # The cards count what the workers served: the prefill and the decode worker, once each.
    served = [int(n) for m in at.markdown for n in re.findall(r"Served \*\*(\d+)\*\*", m.value)]
    assert sum(served) == 2


RAW = ("OutputValidationError: model output is not valid JSON: Invalid control character at: "
       "line 1 column 48")


def test_the_sidebar_says_a_failed_request_in_words_with_the_details_folded(app_data: Path):
    now = time.time()
    h = MetricsHistory(app_data / "grader.db")
    h.record(RequestMetrics(request_id="req-bad", role="feedback", route="feedback:r",
                            started_at=now - 30, finished_at=now - 29, error=RAW))
    h.close()
    at = open_app(PAGE)
    assert not at.exception
    (warning,) = at.sidebar.warning
    assert warning.value.startswith("A request to the feedback model")
    assert "the model's answer was not in the form the grader asked for" in warning.value
    assert "with the points from the checks alone" in warning.value  # what it means
    assert "OutputValidationError" not in warning.value
    assert "control character" not in warning.value
    (details,) = [e for e in at.sidebar.expander if e.label == "Details of the failed request"]
    assert RAW in details.code[0].value
    assert "req-bad" in details.code[0].value



def advisory_report(student: str, sha: str) -> GradeReport:
    """The bundled model's notes as the instructor met them: "not met" on every
    criterion, full marks included, and "strength: ); ; improve: 1.0"."""
    route = "code:embedded/smollm2-135m"
    criteria = [
        CriterionResult("load", "Load the data", "code", 5.0, 5.0,
                        model_notes={"verdict": "not met", "issue": "); ", "cells": ""}),
        CriterionResult("plot", "Plot", "code", 5.0, 0.0,
                        model_notes={"verdict": "not met", "issue": "No plot is drawn.",
                                     "cells": ""}),
        CriterionResult("q1", "Question 1", "written", 2.0, 2.0,
                        model_notes={"score": "1.00", "strength": ");", "improve": "1.0",
                                     "next_step": ""})]
    details = {"advisory": True, "route": route, "output": {}}
    return GradeReport(file=f"{student}.ipynb", sha256=sha, assignment="hw1",
                       rubric_version="v1", status="graded", score=7.0, max_score=12.0,
                       criteria=criteria,
                       layers={"L3": LayerResult("L3", details=dict(details)),
                               "L4": LayerResult("L4", details={**details,
                                                                "route": "feedback:embedded"})})


def test_the_dashboard_says_how_often_each_model_agreed_with_the_checks(app_data: Path):
    with Store(app_data / "grader.db") as store:
        a = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
        rv = store.add_rubric_version(a, "v1", "{}")
        for i in range(2):
            sha = f"{i:064x}"
            sub = store.add_submission(a, sha, f"student{i:03d}.ipynb", f"s{i}")
            store.save_grade(sub, rv, advisory_report(f"student{i:03d}", sha))
    at = open_app(PAGE)
    assert not at.exception
    assert "Model notes: agreement with the checks" in [h.value for h in at.subheader]
    assert any("the others are folded away on each grade's Model tab" in c.value
               for c in at.caption)
    routes = table(at, "agreed with the checks")
    code = routes[routes["layer"] == "L3"].iloc[0]
    assert code["route"] == "code:embedded/smollm2-135m"
    assert (code["grades"], code["criteria judged"], code["agreed with the checks"]) == (2, 4, 2)
    assert code["agreement"] == "50%"
    assert code["its notes"] == "folded away"
    assert code["notes that are sentences"] == "2 of 4"
    written = routes[routes["layer"] == "L4"].iloc[0]
    assert written["notes that are sentences"] == "0 of 2"
