"""Review: one grade dropped from the gradebook (a wrong upload), with who, when and why;
the grades dropped, each with a way back. (Session keys: ``review_drop_*``.)

Drawing only; the trail is the store's (``Store.drop_grade``, ``restore_grade``: an
append-only audit like the overrides'), and ``grader.service.review.Listing`` leaves a
dropped grade out of every listing and export. Who acts is the name typed for the audit
trail on the same page (``review_who``).
"""

from __future__ import annotations

from datetime import datetime

import streamlit as st

from grader.errors import GraderError
from grader.store.database import Store
from grader.views.reports import offline_markdown, points_text

FLASH = "review_drop_flash"


def _who() -> str:
    return str(st.session_state.get("review_who", "")).strip()


def flash() -> None:
    """What the last drop or restore did (once, after the redraw that shows it)."""
    if note := st.session_state.pop(FLASH, None):
        st.success(note)


def drop_box(store: Store, grade_id: int, student: str) -> None:
    """Under a grade: take it out of the gradebook, with a reason for the audit trail."""
    with st.expander("Drop this grade from the gradebook"):
        st.caption("For a wrong upload (another assignment's notebook, a lecture's): the "
                   "grade leaves the list of grades, the grades in force and every download; "
                   "the student's earlier grade, if any, is in force again. It stays in the "
                   "store with its overrides: bring it back from “Dropped from the "
                   "gradebook” at the top of the page. Who, when and why are kept.")
        with st.form("review_drop", clear_on_submit=True):
            reason = st.text_input("Why (kept in the audit trail)", key="review_drop_reason")
            sent = st.form_submit_button("Drop from the gradebook")
    if not sent:
        return
    try:
        store.drop_grade(grade_id, reason, _who())
    except GraderError as exc:
        st.error(f"Not dropped: {exc}")
        return
    st.session_state[FLASH] = (f"Dropped grade {grade_id} ({student}) from the gradebook: "
                               f"{reason.strip()}")
    st.rerun()


def drop_trail(store: Store, grade_id: int) -> None:
    """The grade's drops and returns to the gradebook, oldest first (who, when, why)."""
    trail = store.drop_trail(grade_id)
    if not trail:
        return
    st.markdown("**Dropped from the gradebook and brought back**")
    st.table([{"when": datetime.fromtimestamp(d.at).strftime("%Y-%m-%d %H:%M:%S"),
               "who": d.who, "what": "dropped" if d.action == "drop" else "brought back",
               "why": d.reason} for d in trail], hide_index=True)


def dropped_list(store: Store, assignment_id: int, hidden: bool) -> None:
    """The assignment's grades dropped from the gradebook, who dropped each, when and why,
    each with a button that brings it back (with a reason, kept in the trail too)."""
    dropped = store.dropped(assignment_id)
    if not dropped:
        return
    with st.expander(f"Dropped from the gradebook ({len(dropped)})"):
        reason = st.text_input("Why bring one back (kept in the audit trail)",
                               key="review_drop_back_reason")
        for gid, d in dropped.items():
            g = store.get_grade(gid, hidden)
            when = datetime.fromtimestamp(d.at).strftime("%Y-%m-%d %H:%M")
            left, right = st.columns([5, 1], vertical_alignment="center")
            left.markdown(offline_markdown(
                f"Grade {gid}: {g.display_name or g.student_id or g.file} ({g.file}), "
                f"{points_text(g.score, g.max_score)}, dropped {when}"
                + (f" by {d.who}" if d.who else "") + f": {d.reason}"))
            if right.button("Bring back", key=f"review_drop_back_{gid}"):
                try:
                    store.restore_grade(gid, reason, _who())
                except GraderError as exc:
                    st.error(f"Not brought back: {exc}")
                else:
                    st.session_state[FLASH] = f"Grade {gid} is back in the gradebook."
                    st.rerun()
