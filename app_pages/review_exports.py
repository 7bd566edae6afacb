"""Review: the downloads of the grades shown, and what to know before taking them.
(Session keys: ``review_dl*``, ``review_zero``.)

Drawing only. One grade per student, under one rubric version (``Listing.export_ids``);
before the buttons: the notebooks not graded (blank in the CSVs, never 0, unless the
instructor ticks the box: ``grader.views.export_choices``), and, with names shown, the
rows of the Canvas CSV that carry no Canvas id (``app_pages.components.download_buttons``).
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from app_pages.components import download_buttons
from grader.assignment import Assignment
from grader.service.review import Listing
from grader.store.database import GradeRow, Store
from grader.views.export_choices import not_graded_line, not_graded_rows
from grader.views.reports import offline_markdown


def export_section(store: Store, listing: Listing, rows: Sequence[GradeRow], version: str,
                   in_force: bool, assignment: Assignment, title: str, hidden: bool) -> None:
    """The downloads of ``rows`` (the grades shown): each student's grade under rubric
    ``version`` among them (``in_force``: the version in force)."""
    ids = listing.export_ids(rows, version)
    if not ids:
        if rows:
            st.caption(f"No grade under rubric {version} among those shown: nothing to "
                       "download.")
        return
    st.caption(f"Downloads: one grade per student, {len(ids)} student(s): each one's newest "
               f"grade under rubric {version}" + (" (the grades in force)." if in_force
                                                  else "."))
    wanted = set(ids)
    shown = [g for g in rows if g.id in wanted]
    zero = False
    if not_graded_rows(shown):
        said = st.empty()  # the warning first, then the box it speaks of
        zero = st.checkbox("Export the notebooks not graded as 0", False, key="review_zero",
                           help="Off: the Canvas CSV and the CSV leave them blank, so the "
                                "gradebook holds no score for them until you decide.")
        said.warning(offline_markdown(not_graded_line(shown, zero)))
    real = {g.id: g for g in listing.real}
    download_buttons(lambda: [store.get_report(i, hidden) for i in ids], title,
                     assignment.name, "review_dl", hidden, assignment.rubric, store.get_file,
                     ids=[(real[i].student_id, real[i].file) for i in ids],
                     not_graded_as_zero=zero)
