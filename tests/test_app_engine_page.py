"""The engine page, driven by Streamlit's AppTest over the real embedded engine."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

pytestmark = [pytest.mark.llm, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def app(tmp_path, monkeypatch) -> AppTest:
    monkeypatch.setenv("GRADER_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("GRADER_CONFIG", raising=False)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    return at


def test_page_shows_both_roles_workers(app: AppTest):
    assert not app.exception
    assert app.title[0].value == "Inference engine"
    workers = app.dataframe[0].value
    assert set(workers["worker"]) == {"code/prefill", "code/decode",
                                      "feedback/prefill", "feedback/decode"}


def test_prompt_goes_through_the_disaggregated_path(app: AppTest):
    app.text_area(key="engine_user").set_value("Name one fruit.")
    app.number_input(key="engine_max_tokens").set_value(16)
    app.button[1].click()  # the form's submit button (after "Load models now")
    app.run()
    assert not app.exception
    assert not app.error
    metrics = app.dataframe[1].value
    assert metrics["method"][0] == "disaggregated"
    assert metrics["KV moved (MB)"][0] > 0
    assert metrics["prefill worker"][0] != metrics["decode worker"][0]
    history = app.dataframe[2].value
    assert len(history) >= 1


def test_bad_schema_is_an_error_on_the_page(app: AppTest):
    app.text_area(key="engine_schema").set_value('{"type": "no-such-type"}')
    app.button[1].click()
    app.run()
    assert not app.exception
    assert "SchemaError" in app.error[0].value
