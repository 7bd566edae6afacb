"""Notebook grader: the Streamlit entry point (`streamlit run app.py`)."""

from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="Notebook grader", layout="wide")
page = st.navigation([st.Page("pages/engine.py", title="Engine", icon=":material/memory:")])
page.run()
