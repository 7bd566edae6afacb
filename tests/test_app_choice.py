"""A page's own choice of assignment holds (the Grade page after it made one): a rerun
that still carries the selectbox's old value, as one the browser asked for while the
page was being drawn (a fragment's, the models' sidebar), does not take it back."""

from __future__ import annotations

import pytest

from app_pages.shared import chosen_key
from tests.conftest import open_app


@pytest.mark.usefixtures("app_data")
def test_the_assignment_a_page_chose_holds_over_a_rerun_with_the_old_value():
    at = open_app("app_pages/grade.py")
    box = at.selectbox(key="grade_assignment")
    assert box.value != "retail-sales"
    old = box.value
    at.session_state[chosen_key("grade_assignment")] = "retail-sales"  # as choose() leaves it
    box.set_value(old).run()  # the browser's rerun, with the widget's old value
    assert not at.exception, at.exception
    assert at.selectbox(key="grade_assignment").value == "retail-sales"
    assert chosen_key("grade_assignment") not in at.session_state  # once, then the user's
    at.selectbox(key="grade_assignment").set_value(old).run()
    assert at.selectbox(key="grade_assignment").value == old
