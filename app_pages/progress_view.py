"""Streamlit drawing of a grading job followed live on the Grade page: what runs now,
what has finished, and the time left from the measured speed.

Drawing only; the words come from grader.views.progress (``BoardSnapshot.headline``,
``rows`` and ``estimate``). The header names the assignment by its title.
"""

from __future__ import annotations

import streamlit as st

from grader.service.jobs import GradeJob

VERBS = {"grade": "Grading", "regrade": "Regrading", "resume": "Resuming a batch of"}


def follow_job(job: GradeJob, hide_names: bool, title: str = "") -> None:
    """Draw a running job live until it ends: progress with the time left, what runs
    now, and each notebook's layers in words. The models' raw text as it is decoded
    stays folded away in an expander. Grades are saved by the job as they are made, so
    a redraw cut short (the user leaves) loses nothing."""
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
            bar.progress(snap.fraction, snap.counts())
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
        done = "Regraded" if job.kind == "regrade" else "Graded"
        # notebooks graded before with this rubric are taken from the store, not graded
        # again: counted apart, so that "Graded 0 of 8" does not read as a failure
        before = snap.reused or job.result.reused
        status.update(label=f"{done} {snap.done - snap.reused} of {snap.total} notebooks of "
                            f"{named} in {job.result.seconds:.0f} s" + (
                                f"; {before} {'was' if before == 1 else 'were'} graded "
                                "before with this rubric (their stored grades are shown)"
                                if before else ""),
                      state="complete", expanded=False)
