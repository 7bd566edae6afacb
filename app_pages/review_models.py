"""The Model tab of one grade (Grade and Review pages): what each model layer did, the
notes shown, and every advisory note kept from the letter, folded, with why.

Drawing only; the content is ``grader.views.model_tab``'s, the route's agreement measured
over the grade's own batch (``grader.views.advisory.batch_agreement``).
"""

from __future__ import annotations

import streamlit as st

from app_pages.shared import get_store
from grader.types import GradeReport
from grader.views.advisory import batch_agreement
from grader.views.model_tab import model_tab
from grader.views.reports import offline_markdown

_BOX = {"failed": st.error, "off": st.info, "unknown": st.info, "not run": st.info}


def model_section(r: GradeReport, grade_id: int | None) -> None:
    """The tab's content for ``r`` (grade ``grade_id`` in the store: its batch is what the
    routes' agreement is measured on; without it, the store's newest grades)."""
    tab = model_tab(r, batch_agreement(get_store(), grade_id))
    if tab.all_off:
        st.info("The models were off when this was graded: no code analysis (L3) and no "
                "written feedback (L4).")
    else:
        for s in tab.states:
            _BOX.get(s.state, st.caption)(offline_markdown(s.text))
    if tab.shown:
        st.caption("Written by a language model. Points come from the deterministic checks; "
                   "a model's judgement only flags disagreements or, for trusted models, "
                   "scores written answers within the checks' bounds.")
        st.dataframe(tab.shown, hide_index=True, width="stretch")
    for line in tab.silent:
        st.info(line)
    for f in tab.folded:
        with st.expander(f.label):
            st.caption(f.why)
            st.dataframe(f.rows, hide_index=True, width="stretch")
