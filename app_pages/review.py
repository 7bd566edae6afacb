"""Review: stored grades with filters, the notebook beside its grade, overrides, regrades."""

from __future__ import annotations

import streamlit as st

from app_pages.components import download_buttons, follow_job, report_detail
from app_pages.shared import anonymous, get_client, get_store, get_workspace, sidebar
from grader.errors import GraderError
from grader.jobs import GradeJob, start_regrading
from grader.layers.base import GradeOptions
from grader.report_views import diff_rows, offline_markdown, problem_lines
from grader.review import (
    REVIEW_CHOICES,
    ReviewFilter,
    audit_rows,
    find_grades,
    grade_rows,
    regrade,
    regrade_rows,
    submission_cells,
)

sidebar()
workspace, store = get_workspace(), get_store()
hidden = anonymous()
st.title("Review")

graded = [e for e in workspace.entries() if not e.problem
          and (aid := store.assignment_id(e.name)) is not None and store.list_grades(aid)]
if not graded:
    st.info("No grades yet: grade some notebooks on the Grade page first.")
    st.stop()
names = [e.name for e in graded]
titles = {e.name: e.title for e in graded}
name = st.selectbox("Assignment", names, format_func=lambda n: f"{titles[n]} ({n})",
                    key="review_assignment")
aid = workspace.assignment_id(name)
everything = store.list_grades(aid, anonymous=hidden)

# -- filters -------------------------------------------------------------------------
top = max((g.max_score for g in everything), default=0.0) or 1.0
f1, f2, f3, f4 = st.columns(4)
low, high = f1.slider("Score", 0.0, float(top), (0.0, float(top)), key="review_score")
review = f2.selectbox("Review", REVIEW_CHOICES, key="review_needs")
codes = sorted({c for g in everything for c in g.flags})
flags = f3.multiselect("Flags (any of)", codes, key="review_flags")
versions = sorted({g.rubric_version for g in everything})
version = f4.selectbox("Rubric version", ["all", *versions], key="review_version")
rows = find_grades(store, aid, ReviewFilter(
    None if low <= 0 else low, None if high >= top else high, review, tuple(flags),
    None if version == "all" else version), anonymous=hidden)
st.caption(f"{len(rows)} of {len(everything)} grades")
st.dataframe(grade_rows(rows), hide_index=True, width="stretch")
if not rows:
    st.stop()
ids = [g.id for g in rows]
download_buttons(lambda: [store.get_report(i, hidden) for i in ids], titles[name], name,
                 "review_dl")

in_force = workspace.load(name).rubric.version
with st.expander(f"Regrade the {len(rows)} grades shown with the rubric in force "
                 f"({in_force})"):
    st.caption("From the stored notebooks. The earlier grades stay in the store (filter by "
               "rubric version); overrides stay with the grade they were made on.")
    all_llm = st.checkbox("With the models (L3, L4)", False, key="review_all_llm")
    if st.button("Regrade all shown", key="review_regrade_all"):
        try:
            st.session_state["review_job"] = start_regrading(
                workspace, [g.id for g in rows], GradeOptions(use_llm=all_llm),
                get_client() if all_llm else None)
        except GraderError as exc:
            st.error(f"Cannot regrade: {exc}")
job: GradeJob | None = st.session_state.get("review_job")
if job is not None and job.assignment == name:
    if not job.finished:
        follow_job(job, hidden)
        st.rerun()  # the listing above predates the new grades
    if job.result.error:
        st.error(f"The regrade stopped: {job.result.error}. Grades finished before are saved.")
    for line in problem_lines(job.result.problems, hidden):
        st.error(offline_markdown(line))
    st.caption(f"Last regrade ({job.result.seconds:.0f} s): score before and after")
    st.dataframe(regrade_rows(store, job.result, hidden), hide_index=True, width="stretch")

# -- one grade -----------------------------------------------------------------------
labels = {g.id: f"{g.display_name or g.file} ({g.file}): {g.score if g.score is not None else '-'}"
          f" / {g.max_score:g}" for g in rows}
gid = st.selectbox("Grade", list(labels), format_func=labels.__getitem__, key="review_grade")
report = store.get_report(gid, hidden)
language = workspace.load(name).language
left, right = st.columns([1, 1])
with left:
    st.subheader("Notebook")
    try:
        cells = submission_cells(store, workspace, gid, hidden)
    except GraderError as exc:
        st.warning(offline_markdown(str(exc)))
        cells = []
    for c in cells:
        tag = {"student": "student", "modified": "student-edited template cell",
               "template": "template"}[c.origin]
        st.caption(f"[{c.index}] {c.kind}, {tag}")
        if c.kind == "markdown":
            with st.container(border=True):
                st.markdown(offline_markdown(c.source))
        else:
            st.code(c.source or " ", language=language)
            if c.outputs:
                (st.error if c.has_error else st.text)(c.outputs[:4000])
            for png in c.images:
                st.image(png)
with right:
    st.subheader(f"Grade {gid}")
    report_detail(report, "review_detail")

    st.markdown("**Override a criterion**")
    who = st.text_input("Your name (for the audit trail)", key="review_who")
    with st.form("review_override", clear_on_submit=True):
        crits = {c.id: c for c in report.criteria}
        cid = st.selectbox("Criterion", list(crits), key="review_ov_criterion")
        points = st.number_input("New points", min_value=0.0, step=0.5, key="review_ov_points")
        reason = st.text_input("Why (kept in the audit trail)", key="review_ov_reason")
        sent = st.form_submit_button("Save override")
    if sent:
        try:
            o = store.override(gid, cid, float(points), reason, who)
        except GraderError as exc:
            st.error(f"Override not saved: {exc}")
        else:
            st.success(f"{o.criterion_id}: {o.old_points:g} -> {o.new_points:g} points.")
            st.rerun()
    trail = store.overrides(gid)
    if trail:
        st.markdown("**Audit trail**")
        st.dataframe(audit_rows(trail), hide_index=True, width="stretch")

    st.markdown("**Regrade** with the rubric in force")
    r1, r2 = st.columns(2)
    use_llm = r1.checkbox("With the models (L3, L4)", False, key="review_rg_llm")
    if r2.button("Regrade", key="review_regrade"):
        with st.spinner("Regrading..."):
            try:
                done = regrade(store, workspace, gid, GradeOptions(use_llm=use_llm),
                               get_client() if use_llm else None, hidden)
            except GraderError as exc:
                st.error(f"Regrade failed: {exc}")
            else:
                st.session_state["review_diff"] = (gid, done)
    last = st.session_state.get("review_diff")
    if last is not None and last[0] == gid:
        done = last[1]
        st.caption(f"Regraded as grade {done.grade_id}: what changed")
        st.dataframe(diff_rows(done.before, done.after), hide_index=True, width="stretch")
