"""The assignment's self-check on the Grade and Rubrics pages (Streamlit's AppTest, real
sandbox runs): shown while it runs, then the two percentages."""

from __future__ import annotations

import time

import pytest

from tests.conftest import open_app


def _wait_for_check(at, timeout_s: float = 300.0):
    deadline = time.monotonic() + timeout_s
    while any("Checking the assignment" in c.value for c in at.caption):
        assert time.monotonic() < deadline, "the self-check did not finish"
        time.sleep(1.0)
        at.run()
    assert not at.exception, at.exception
    return at


@pytest.mark.slow
@pytest.mark.usefixtures("app_data")
def test_the_grade_page_shows_the_assignments_own_scores_before_grading():
    at = open_app("app_pages/grade.py")
    at.selectbox(key="grade_assignment").set_value("retail-sales").run()
    _wait_for_check(at)
    shown = [s.value for s in at.success]
    assert "The solution scores 100% and the template 0%: the rubric tells them apart." in shown
    # the Rubrics page shows the same check, already done, for the rubric in force
    at.switch_page("app_pages/rubrics.py").run()
    assert not at.exception, at.exception
    assert any(s.value.startswith("The solution scores 100%") for s in _wait_for_check(at).success)
