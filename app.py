"""Notebook grader: the Streamlit entry point (`streamlit run app.py`).

Four pages; the resources they share (engine client, store, workspace, model warm-up)
are built once per process in app_pages/shared.py. The pages carry no icons:
Streamlit fetches Material icons from Google's servers, and nothing here may make
the instructor's browser call out (tests/test_browser.py checks every request).
"""

from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="Notebook grader", layout="wide")
page = st.navigation([
    st.Page("app_pages/grade.py", title="Grade", default=True),
    st.Page("app_pages/dashboard.py", title="Dashboard"),
    st.Page("app_pages/rubrics.py", title="Rubrics"),
    st.Page("app_pages/review.py", title="Review"),
])
page.run()
