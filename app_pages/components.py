"""Streamlit pieces the Grade and Review pages share: a report's detail, downloads.

Drawing only; the rows come from grader.report_views.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from grader.report_views import (
    criterion_rows,
    downloads,
    evidence_rows,
    layer_rows,
    model_rows,
    request_rows,
)
from grader.types import GradeReport


def report_detail(r: GradeReport, key: str) -> None:
    """One student's grade: score, criteria with evidence, what the models said, the
    measured requests, and each layer's run."""
    if r.status == "error":
        st.error(f"{r.file}: not graded: {r.error}")
        return
    c1, c2, c3 = st.columns(3)
    c1.metric("Score", f"{r.score:g} / {r.max_score:g}")
    c2.metric("Criteria to review", len(r.needs_review))
    c3.metric("Flags", len(r.flags))
    for f in r.flags:
        st.warning(f"**{f.code}**: {f.message}")
    crit, models, reqs, layers = st.tabs(["Criteria and evidence", "Model analysis (L3, L4)",
                                          "Requests", "Layers"])
    with crit:
        st.dataframe(criterion_rows(r), hide_index=True, width="stretch")
        for c in r.criteria:
            label = f"{c.id}: {c.points:g} / {c.max_points:g}" + (" (review)"
                                                                   if c.needs_review else "")
            with st.expander(label):
                st.dataframe(evidence_rows(r, c.id), hide_index=True, width="stretch")
    with models:
        rows = model_rows(r)
        if rows:
            st.caption("Written by a language model. Points come from the deterministic "
                       "checks; a model's judgement only flags disagreements or, for trusted "
                       "models, scores written answers within the checks' bounds.")
            st.dataframe(rows, hide_index=True, width="stretch")
        else:
            st.info("No model analysis for this grade (models off, or nothing of the "
                    "student's own to read).")
    with reqs:
        rows = request_rows(r)
        if rows:
            st.dataframe(rows, hide_index=True, width="stretch")
        else:
            st.info("No model requests were made for this grade.")
    with layers:
        st.dataframe(layer_rows(r), hide_index=True, width="stretch")


def download_buttons(reports: Sequence[GradeReport], title: str, stem: str, key: str) -> None:
    files = downloads(reports, title, stem)
    for col, d in zip(st.columns(len(files)), files, strict=True):
        col.download_button(d.label, d.data, file_name=d.file_name, mime=d.mime,
                            key=f"{key}_{d.file_name}", on_click="ignore")
