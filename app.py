"""Notebook grader: the Streamlit entry point (`streamlit run app.py`)."""

from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="Notebook grader", layout="wide")
page = st.navigation([
    st.Page("app_pages/grade.py", title="Grade", icon=":material/grading:", default=True),
    st.Page("app_pages/dashboard.py", title="Dashboard", icon=":material/monitoring:"),
    st.Page("app_pages/rubrics.py", title="Rubrics", icon=":material/checklist:"),
    st.Page("app_pages/review.py", title="Review", icon=":material/rate_review:"),
])
page.run()
