"""Review: stored grades with filters, the notebook beside its grade, overrides, regrades.

By default the grades in force are shown (each student's newest grade under the rubric
in force); a filter shows all versions or an older one. Downloads hold one grade per
student, under one rubric version; students without a grade under the rubric in force
are named, with a button to grade them under it.
"""

from __future__ import annotations

import streamlit as st

from app_pages.components import problem_box, report_detail
from app_pages.progress_view import follow_job
from app_pages.review_drop import drop_box, drop_trail, dropped_list
from app_pages.review_drop import flash as drop_flash
from app_pages.review_exports import export_section
from app_pages.shared import (
    anonymous,
    get_client,
    get_store,
    get_workspace,
    kept_selectbox,
    sidebar,
)
from grader.errors import GraderError
from grader.exports.formats import feedback_stems
from grader.layers.base import GradeOptions
from grader.letters.build import letter_markdown
from grader.letters.pdf import letter_pdf
from grader.service.jobs import GradeJob, running_jobs, start_regrading
from grader.service.review import (
    REVIEW_CHOICES,
    Listing,
    ReviewFilter,
    audit_rows,
    grade_rows,
    not_carried_lines,
    override_saved,
    regrade,
    regrade_not_carried,
    regrade_rows,
    submission_cells,
)
from grader.views.downloads import grade_letter
from grader.views.labels import assignment_label, criterion_labels
from grader.views.reports import diff_rows, offline_markdown, points_text

IN_FORCE, ALL_VERSIONS = "in force", "all versions"

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
labels_of = {e.name: assignment_label(e) for e in graded}
name = kept_selectbox("Assignment", names, "review_assignment", "assignment",
                      format_func=labels_of.__getitem__)
assignment = workspace.load(name)
aid = workspace.assignment_id(name)
version_now = assignment.rubric.version
listing = Listing.read(store, aid, anonymous=hidden)
everything = listing.shown
current = listing.in_force(version_now)
job: GradeJob | None = st.session_state.get("review_job")
if job is None or job.finished:  # drawn afresh (a reload) while a regrade runs on: follow it
    job = next(iter(running_jobs(workspace, name, kinds=("regrade",))), job)
    st.session_state["review_job"] = job
busy = job is not None and not job.finished


def _regrade(ids: list[int], with_models: bool) -> None:
    try:
        st.session_state["review_job"] = start_regrading(
            workspace, ids, GradeOptions(use_llm=with_models),
            get_client() if with_models else None)
    except GraderError as exc:
        st.error(f"Cannot regrade: {exc}")
    else:
        st.rerun()


# -- filters -------------------------------------------------------------------------
top = max((g.max_score for g in everything), default=0.0) or 1.0
f1, f2, f3, f4 = st.columns([2, 1, 1, 2])
low, high = f1.slider("Score", 0.0, float(top), (0.0, float(top)), key="review_score")
review = f2.selectbox("Review", REVIEW_CHOICES, key="review_needs")
codes = sorted({c for g in everything for c in g.flags})
flags = f3.multiselect("Flags (any of)", codes, key="review_flags")
older = sorted({g.rubric_version for g in everything} - {version_now})
view = f4.selectbox("Grades", [IN_FORCE, ALL_VERSIONS, *older], key="review_version",
                    format_func=lambda v: {IN_FORCE: f"in force (rubric {version_now})",
                                           ALL_VERSIONS: "all rubric versions"}.get(
                                               v, f"rubric {v} only"),
                    help="In force: each student's newest grade under the rubric in force. "
                         "Older grades stay in the store: pick all versions, or one.")
rows = listing.find(ReviewFilter(
    None if low <= 0 else low, None if high >= top else high, review, tuple(flags),
    None if view == ALL_VERSIONS else version_now if view == IN_FORCE else view,
    in_force=view == IN_FORCE))
st.caption(f"{len(rows)} of {len(everything)} grades"
           + (" (the grades in force)" if view == IN_FORCE else ""))
st.dataframe(grade_rows(rows), hide_index=True, width="stretch")
drop_flash()
dropped_list(store, aid, hidden)

if current.missing:
    st.warning(offline_markdown(
        f"{len(current.missing)} student(s) have no grade under the rubric in force "
        f"({version_now}) yet, so no grade in force and no row in the downloads: "
        + "; ".join(f"{g.display_name or g.student_id or g.file} (newest grade: rubric "
                    f"{g.rubric_version}, {points_text(g.score, g.max_score)})"
                    for g in current.missing)))
    if st.button(f"Grade them under the rubric in force ({len(current.missing)})",
                 key="review_regrade_missing", disabled=busy):
        _regrade([g.id for g in current.missing], False)

export_version = version_now if view in (IN_FORCE, ALL_VERSIONS) else view
export_section(store, listing, rows, export_version, export_version == version_now,
               assignment, titles[name], hidden)

if rows:
    with st.expander(f"Regrade the {len(rows)} grades shown with the rubric in force "
                     f"({version_now})"):
        st.caption("From the stored notebooks. The earlier grades stay in the store (see all "
                   "rubric versions); each override is carried over to the new grade when its "
                   "criterion is still in the rubric (capped at its points), and named when "
                   "it cannot be.")
        all_llm = st.checkbox("With the models (L3, L4)", False, key="review_all_llm")
        if st.button("Regrade all shown", key="review_regrade_all", disabled=busy):
            _regrade([g.id for g in rows], all_llm)
if job is not None and job.assignment == name:
    if not job.finished:
        follow_job(job, hidden, titles.get(name, ""))
        st.rerun()  # the listing above predates the new grades
    if job.result.error:
        st.error(f"The regrade stopped: {job.result.error}. Grades finished before are saved.")
    if job.result.problems:
        problem_box([(f"unreadable file {i}" if hidden else p.file, p.reason)
                     for i, p in enumerate(job.result.problems, 1)])
    for line in regrade_not_carried(store, job.result, hidden):
        st.warning(offline_markdown(line))
    st.caption(f"Last regrade ({job.result.seconds:.0f} s): score before and after")
    st.dataframe(regrade_rows(store, job.result, hidden), hide_index=True, width="stretch")
if not rows:
    st.stop()

# -- one grade -----------------------------------------------------------------------
labels = {g.id: f"{g.display_name or g.file} ({g.file}): {points_text(g.score, g.max_score)}"
          for g in rows}
# One widget per way of naming students, the chosen grade carried across: the browser
# keeps the label it was given with a selectbox's value, so a student's name stayed in
# the box after "Hide student names" was switched on.
grade_key, other_key = (("review_grade_hidden", "review_grade") if hidden
                        else ("review_grade", "review_grade_hidden"))
if st.session_state.get(grade_key) not in labels and st.session_state.get(other_key) in labels:
    st.session_state[grade_key] = st.session_state[other_key]
gid = st.selectbox("Grade", list(labels), format_func=labels.__getitem__, key=grade_key)
report = store.get_report(gid, hidden)
language = assignment.language
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
        st.caption(f"Cell {c.number} ({c.kind}, {tag})")  # numbered as the letter does
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
    report_detail(report, "review_detail", store.get_file(report.sha256), gid)

    st.markdown("**Override a criterion**")
    who = st.text_input("Your name (for the audit trail)", key="review_who")
    crit_names = criterion_labels(report.criteria)
    with st.form("review_override", clear_on_submit=True):
        cid = st.selectbox("Criterion", list(crit_names), key="review_ov_criterion",
                           format_func=crit_names.__getitem__)
        points = st.number_input("New points", min_value=0.0, step=0.5, key="review_ov_points")
        reason = st.text_input("Why (kept in the audit trail)", key="review_ov_reason")
        sent = st.form_submit_button("Save override")
    if sent:
        try:
            o = store.override(gid, cid, float(points), reason, who)
        except GraderError as exc:
            st.error(f"Override not saved: {exc}")
        else:  # said after the redraw that shows the new points
            st.session_state["review_saved"] = (gid, override_saved(o, store.get_grade(gid)))
            st.rerun()
    saved = st.session_state.pop("review_saved", None)
    if saved is not None and saved[0] == gid:
        st.success(saved[1])
    trail = store.overrides(gid)
    if trail:
        st.markdown("**Audit trail**")
        st.table(audit_rows(trail, crit_names), hide_index=True)  # wraps: reasons in full
    drop_trail(store, gid)
    drop_box(store, gid, labels[gid])

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
        st.caption(f"Regraded as grade {done.grade_id}: what changed"
                   + (f" ({len(done.carry.carried)} override(s) carried over from grade "
                      f"{done.carry.source_grade})" if done.carry.carried else ""))
        for line in not_carried_lines(done.carry):
            st.warning(offline_markdown(line))
        st.dataframe(diff_rows(done.before, done.after), hide_index=True, width="stretch")

# -- the student's letter ---------------------------------------------------------------
st.subheader("The student's letter (send-ready)")
st.caption("What the student receives, as in the feedback downloads (PDF, Markdown, HTML): "
           "points with your overrides, what was done, what is missing and where, the next "
           "steps. Flags, review reasons, metrics and the notes of models not trusted to "
           "judge stay on your pages.")
letter = grade_letter(report, store, titles.get, assignment.rubric)  # its own rubric version
with st.container(border=True):
    st.markdown(offline_markdown(letter_markdown(letter)))
st.download_button("Download this letter (PDF)", lambda: letter_pdf(letter),
                   file_name=f"{feedback_stems([report])[0]}.pdf", mime="application/pdf",
                   key="review_letter_pdf", on_click="ignore")
