"""The assignment's self-check on the Grade and Rubrics pages (Streamlit's AppTest, real
sandbox runs): shown while it runs, then the two percentages."""

from __future__ import annotations

import time

import pytest

from grader.service.selfcheck import CheckState, SelfChecks
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


class FinishesWhileThePageIsDrawn(SelfChecks):
    """A self-check that finishes between the page's first read (still running) and
    the box's: the moment the instructor's click on Grade must survive."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def get(self, assignment):
        self.reads += 1
        return CheckState(running=True) if self.reads % 2 else CheckState(
            running=False, error="stand-in: finished while the page was drawn")


@pytest.mark.slow
def test_a_check_finishing_while_the_page_is_drawn_keeps_the_click_on_grade(app_data):
    from app_pages.shared import get_workspace

    at = open_app("app_pages/grade.py")
    at.selectbox(key="grade_assignment").set_value("retail-sales").run()
    get_workspace().checks = checks = FinishesWhileThePageIsDrawn()
    at.multiselect(key="grade_samples").set_value(["complete.ipynb"])
    at.checkbox(key="grade_execute").set_value(False)
    at.checkbox(key="grade_llm").set_value(False)
    at.button(key="grade_run").click().run()
    assert not at.exception, at.exception
    assert checks.reads >= 2
    assert any("finished while the page was drawn" in w.value for w in at.warning)
    (status,) = at.status  # the grade ran: the click was not lost to a rerun
    assert status.label.startswith("Graded 1 of 1 notebooks")
