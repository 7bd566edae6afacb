"""Streamlit drawing of a grading job followed live on the Grade page: what runs now,
what has finished, and the time left from the measured speed.

Drawing only; the words come from grader.views.progress (``BoardSnapshot.headline``,
``rows`` and ``estimate``). The header names the assignment by its title.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from grader.service.jobs import GradeJob
from grader.views.progress import MOVED

VERBS = {"grade": "Grading", "regrade": "Regrading", "resume": "Resuming a batch of"}


def follow_job(job: GradeJob, hide_names: bool, title: str = "", top: Any = None) -> None:
    """Draw a running job live until it ends: progress with the time left, what runs
    now, and each notebook's layers in words. The models' raw text as it is decoded
    stays folded away in an expander. Grades are saved by the job as they are made, so
    a redraw cut short (the user leaves) loses nothing. ``top``: a place at the top of
    the page that says how far the batch is while it runs (the box may be below the
    fold)."""
    title = title or job.result.title or job.assignment
    named = f"“{title}” ({job.assignment})" if title != job.assignment else job.assignment
    verb = VERBS.get(job.kind, "Grading")
    with st.status(f"{verb} {named}...", expanded=True) as status:
        bar = st.progress(0.0)
        now_line = st.empty()
        left_line = st.empty()
        table = st.empty()
        with st.expander("What the models are writing (raw, as decoded)"):
            stream = st.empty()
        version = -1
        while True:
            finished = job.finished  # read before the snapshot, so the last one is complete
            snap = job.wait(version)
            version = snap.version
            bar.progress(snap.fraction, snap.progress_words())
            if top is not None:
                top.info(f"{verb} {named}: {snap.progress_words()}. The details follow below.")
            now_line.caption("Now: " + snap.headline(hide_names))
            left_line.caption(snap.estimate())
            table.dataframe(snap.rows(hide_names), hide_index=True, width="stretch")
            now = snap.current()
            if now is not None and now.streams:
                stream.code("\n\n".join(f"[{layer}] ...{text}" for layer, text
                                        in sorted(now.streams.items())), language="json")
            if finished:
                break
        now_line.empty()
        left_line.empty()
        if top is not None:
            top.empty()
        done = "Regraded" if job.kind == "regrade" else "Graded"
        # notebooks graded before with this rubric are taken from the store, not graded
        # again: counted apart, so that "Graded 0 of 8" does not read as a failure
        before = snap.reused or job.result.reused
        ended, parts = snap.model_counts()
        status.update(label=f"{done} {snap.done - snap.reused} of {snap.total} notebooks of "
                            f"{named} in {job.result.seconds:.0f} s" + (
                                f"; {before} {'was' if before == 1 else 'were'} graded "
                                "before with this rubric (their stored grades are shown)"
                                if before else "") + (
                                "; the models' notes follow below" if ended < parts else ""),
                      state="complete", expanded=False)


def follow_models(job: GradeJob, hide_names: bool) -> None:
    """The models' notes of a job's grades, which come after the grades (a fragment,
    redrawn every 2 s while some are left): how many are in, the time left, what each
    model does now, and, once all are in, which grades a model trusted to judge moved.
    The page is drawn again once they are all in, so that its results show them."""
    snap = job.board.snapshot()
    ended, parts = snap.model_counts()
    if not parts:
        return
    seen = f"grade_models_in_{id(job)}"
    if ended < parts:
        st.progress(ended / parts, f"The models' notes: {ended} of {parts} grades "
                                   f"({snap.models_left() or 'finishing'}). The grades above "
                                   "stand on the checks meanwhile: review and export them now.")
        st.caption("Now: " + snap.headline(hide_names))
        st.dataframe(snap.model_rows(hide_names), hide_index=True, width="stretch")
        now = snap.current()
        if now is not None and now.streams:
            with st.expander("What the models are writing (raw, as decoded)"):
                st.code("\n\n".join(f"[{layer}] ...{text}" for layer, text
                                     in sorted(now.streams.items())), language="json")
        st.session_state[seen] = False
        return
    moved = [n for n in snap.notebooks if n.score.endswith(MOVED)]
    st.success(f"The models' notes of all {parts} grades are in: open a grade below, or on "
               "the Review page." + (
                   f" A model trusted to judge moved the points of {len(moved)}: "
                   + ", ".join(f"notebook {i}" if hide_names else n.file
                               for i, n in enumerate(snap.notebooks, 1) if n in moved)
                   + " (each kept as a new version, with the reason)." if moved else
                   " They moved no points."))
    if st.session_state.get(seen) is False:  # they came in while this page was open
        st.session_state[seen] = True
        st.rerun()
