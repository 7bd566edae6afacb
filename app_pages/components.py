"""Streamlit pieces the Grade and Review pages share: a job's live progress, a report's
detail, downloads.

Drawing only; the rows come from grader.report_views.
"""

from __future__ import annotations

import streamlit as st

from grader.jobs import GradeJob
from grader.report_views import (
    Reports,
    criterion_rows,
    downloads,
    evidence_rows,
    layer_rows,
    model_rows,
    offline_markdown,
    request_rows,
)
from grader.types import GradeReport


def report_detail(r: GradeReport, key: str) -> None:
    """One student's grade: score, criteria with evidence, what the models said, the
    measured requests, and each layer's run."""
    if r.status == "error":
        st.error(offline_markdown(f"{r.file}: not graded: {r.error}"))
        return
    c1, c2, c3 = st.columns(3)
    c1.metric("Score", f"{r.score:g} / {r.max_score:g}")
    c2.metric("Criteria to review", len(r.needs_review))
    c3.metric("Flags", len(r.flags))
    for f in r.flags:
        st.warning(f"**{f.code}**: {offline_markdown(f.message)}")
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


def download_buttons(reports: Reports, title: str, stem: str, key: str) -> None:
    """Canvas CSV, CSV, JSON and feedback ZIP; each file is made when its button is
    clicked (``reports`` may be a function that loads them then)."""
    files = downloads(reports, title, stem)
    for col, d in zip(st.columns(len(files)), files, strict=True):
        col.download_button(d.label, d.make, file_name=d.file_name, mime=d.mime,
                            key=f"{key}_{d.file_name}", on_click="ignore")


def follow_job(job: GradeJob, hide_names: bool) -> None:
    """Draw a running job live until it ends: progress, each notebook's layers, and the
    models' text as it is decoded. Grades are saved by the job as they are made, so a
    redraw cut short (the user leaves) loses nothing."""
    with st.status(f"Grading for {job.assignment}...", expanded=True) as status:
        bar = st.progress(0.0)
        table, stream = st.empty(), st.empty()
        version = -1
        while True:
            finished = job.finished  # read before the snapshot, so the last one is complete
            snap = job.wait(version)
            version = snap.version
            bar.progress(snap.fraction, f"{snap.done} of {snap.total or '?'} notebooks")
            table.dataframe(snap.rows(hide_names), hide_index=True, width="stretch")
            now = snap.current()
            if now is not None and now.streams:
                stream.code("\n\n".join(f"[{layer}] ...{text}" for layer, text
                                        in sorted(now.streams.items())), language="json")
            if finished:
                break
        stream.empty()
        status.update(label=f"Graded {snap.done} of {snap.total} notebooks in "
                            f"{job.result.seconds:.0f} s", state="complete", expanded=False)
