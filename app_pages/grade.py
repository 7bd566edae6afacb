"""Grade: pick or create an assignment, upload notebooks or a ZIP, grade live, see results.

The assignment chosen survives visits to other pages (``grade_assignment_kept``);
the Grade button is disabled while a job runs, and starting the same work twice
gives the running job (grader.service.jobs), so two quick clicks grade once. Any class
is graded, in chunks as one batch; a batch of more notebooks than
grader.service.sizing.CONFIRM_ABOVE waits for the instructor to confirm it, with the
count (``grade_confirm``): it holds the Grade button until it ends, and a wrong ZIP (a
whole term's archive) must not start that unasked. A page drawn afresh (a reload) while a
batch runs follows that batch with its assignment chosen in the picker. The create form's
widgets are keyed by ``grade_new_round``, bumped once an assignment is made, so the next
one starts empty; what was made (``grade_created``) is shown under its own assignment
only. The results show each student's grade in force (grader.service.results).
"""

from __future__ import annotations

import time

import streamlit as st

from app_pages.assignment_admin import archived_list, manage, shelf_note
from app_pages.components import download_buttons, problem_box, report_detail, self_check
from app_pages.import_view import show_import
from app_pages.progress_view import follow_job, follow_models
from app_pages.shared import (
    anonymous,
    choose,
    get_client,
    get_store,
    get_warmup,
    get_workspace,
    kept_selectbox,
    kept_widget,
    sidebar,
)
from grader.errors import GraderError, RubricError
from grader.layers.base import GradeOptions
from grader.points import as_points
from grader.service.jobs import (
    GradeJob,
    interrupted_batches,
    running_jobs,
    start_grading,
    start_resuming,
)
from grader.service.results import results_in_force
from grader.service.review import one_grade_per_student
from grader.service.sizing import batch_size
from grader.service.workspace import Upload, made_from
from grader.views.labels import assignment_label, rubric_label
from grader.views.reports import offline_markdown, points_text
from grader.views.upload_limits import NOTEBOOK_MB, UPLOAD_MB, limits_text, notebook_limit_text

sidebar()
workspace, store = get_workspace(), get_store()
st.title("Grade")
top_line = st.empty()  # while a batch grades: its progress, in view at the top


def _uploads(files) -> list[Upload]:
    return [Upload(f.name, f.getvalue()) for f in files or []]


def _one(f) -> Upload | None:
    return None if f is None else Upload(f.name, f.getvalue())


# -- a batch that runs on --------------------------------------------------------------
job: GradeJob | None = st.session_state.get("grade_job")
others = [j for j in running_jobs(workspace, kinds=("grade", "resume")) if j is not job]
if others and (job is None or job.finished):
    # The page was drawn afresh (a reload, a new tab) while a batch grades on: follow it,
    # with its assignment chosen in the picker (not the first one listed), so that the
    # next Grade grades against the rubric of the assignment shown.
    if job is None:
        st.session_state["grade_assignment"] = others[0].assignment
    job = st.session_state["grade_job"] = others.pop(0)
busy = job is not None and not job.finished

# -- the assignment ------------------------------------------------------------------
shelf_note()
try:
    entries = workspace.entries()
except GraderError as exc:  # the list of archived assignments is unreadable
    st.error(f"The assignments cannot be listed: {exc}")
    st.stop()
for e in entries:
    if e.problem:
        st.warning(f"Assignment folder {e.root} cannot be used: {e.problem}")
usable = [e for e in entries if not e.problem]
# The create form's widgets get new keys once an assignment is made from them: the next
# one starts from an empty form, never from the files of the one before.
form_round = st.session_state.get("grade_new_round", 0)
with st.expander("Create an assignment from files", expanded=not usable):
    with st.form(f"grade_new_assignment_{form_round}", clear_on_submit=False):
        title = st.text_input("Title", key=f"grade_new_title_{form_round}")
        c1, c2, c3 = st.columns(3)
        template = c1.file_uploader("Template notebook (or, alone, an nbgrader source or "
                                    "otter master notebook)", type=["ipynb"],
                                    key=f"grade_new_template_{form_round}",
                                    max_upload_size=NOTEBOOK_MB, help=notebook_limit_text())
        solution = c2.file_uploader("Solution notebook", type=["ipynb"],
                                    key=f"grade_new_solution_{form_round}",
                                    max_upload_size=NOTEBOOK_MB, help=notebook_limit_text())
        rubric = c3.file_uploader("Rubric (JSON; old-format rubrics are imported)",
                                  type=["json"], key=f"grade_new_rubric_{form_round}")
        data = st.file_uploader("Data files the notebooks read", accept_multiple_files=True,
                                key=f"grade_new_data_{form_round}")
        create = st.form_submit_button("Create assignment")
    if create:
        ups = (_one(template), _one(solution), _one(rubric), _uploads(data))
        try:
            made, parsed = workspace.create(title, *ups)
        except RubricError as exc:
            st.error(f"Cannot create the assignment ({exc.file}):\n\n"
                     + "\n".join(f"- {p}" for p in exc.problems))
        except GraderError as exc:
            st.error(f"Cannot create the assignment: {exc}")
        else:
            choose("grade_assignment", made.name)
            st.session_state["grade_created"] = (made.name, made.title, made.language,
                                                 len(made.rubric.criteria), parsed.report,
                                                 made_from(*ups))
            st.session_state["grade_new_round"] = form_round + 1
            st.rerun()  # the form drawn again, empty
created_box = st.container()  # what was just made: filled once the choice is known
archived_list(workspace)

if not usable:
    st.info("No assignment yet: create one above.")
    st.stop()
names = [e.name for e in usable]
labels = {e.name: assignment_label(e) for e in usable}  # as every page names them
name = kept_selectbox("Assignment", names, "grade_assignment", "assignment",
                      format_func=labels.__getitem__)
if (created := st.session_state.get("grade_created")) and created[0] == name:
    short, made_title, language, n_criteria, report, sources = created
    with created_box:  # only under the assignment it made: never above another one
        st.success(f"Created “{made_title}” as {short} ({language}, {n_criteria} criteria) "
                   f"from {sources}.")
        if report is not None:
            show_import(report)
try:
    assignment = workspace.load(name)
except GraderError as exc:
    st.error(f"Assignment {name} cannot be loaded: {exc}")
    st.stop()
aid = workspace.store.assignment_id(name)
stored = workspace.store.rubric_versions(aid) if aid is not None else []
st.caption(f"Rubric {rubric_label(assignment.rubric.version, stored)}: "
           f"{len(assignment.rubric.criteria)} criteria, "
           f"{as_points(assignment.rubric.total_points)} points (edit it on the Rubrics page).")
check_box = st.container()  # the self-check, drawn once the rest of the page is there
manage(workspace, next(e for e in usable if e.name == name), busy, anonymous())

# -- what to grade -------------------------------------------------------------------
# A new key once a batch starts: the uploader starts empty instead of piling the next
# upload onto the files already graded.
files = st.file_uploader("Student notebooks (.ipynb) or ZIPs (Canvas, GitHub Classroom, a "
                         "zipped folder)", type=["ipynb", "zip"], accept_multiple_files=True,
                         key=f"grade_files_{st.session_state.get('grade_uploads', 0)}",
                         max_upload_size=UPLOAD_MB, help=limits_text())
samples = {p.name: p for p in workspace.example_submissions(name)}
if samples and st.session_state.get("grade_job") is None:
    st.caption(f"New here? *{assignment.title}* is a bundled example: pick one of its sample "
               "submissions below and press **Grade**; the bundled models run on this "
               "machine.")
chosen = st.multiselect("Or the example's sample submissions", list(samples),
                        key="grade_samples") if samples else []
with st.expander("Options"):  # kept across pages and reloads (the store's settings)
    o1, o2 = st.columns([3, 1])
    with o1:
        execute = kept_widget(st.checkbox, "Run the notebooks (L2, sandboxed)",
                              "grade_execute", True)
        use_llm = kept_widget(st.checkbox, "Model analysis and feedback (L3, L4)",
                              "grade_llm", True, help="The grades come first; the models' "
                              "notes follow each grade from a queue of their own.")
        regrade = kept_widget(st.checkbox, "Regrade files graded before", "grade_regrade",
                              False)
    with o2:
        workers = kept_widget(st.number_input, "Notebooks at once", "grade_workers", 1, 1, 8)


def _models_loading(use_llm: bool) -> None:
    """While the models load, that grading can start anyway; nothing once they are ready
    (redrawn every 2 s meanwhile, like the sidebar's model state beside it)."""
    warm = get_warmup()
    if use_llm and not warm.done:
        st.caption(f"{warm.summary()} Grading can start now: the model layers wait for "
                   "their models.")


st.fragment(_models_loading, run_every=None if get_warmup().done else 2.0)(use_llm)

options = GradeOptions(execute=execute, use_llm=use_llm)
for j in others:
    done = j.board.snapshot()
    st.info(f"Also grading for {j.assignment} (started "
            f"{time.strftime('%H:%M', time.localtime(j.started_at))}, another tab or "
            f"session): {done.done} of {done.total or '?'} notebooks done.")
for b in interrupted_batches(workspace, name):
    left, right = st.columns([5, 1], vertical_alignment="center")
    left.warning(f"A batch started {time.strftime('%Y-%m-%d %H:%M', time.localtime(b.created_at))}"
                 f" stopped with {b.pending} of {b.total} notebooks left (the app was stopped "
                 f"while grading, or grading failed); {b.done} were graded and saved.")
    if right.button("Resume", key=f"grade_resume_{b.id}", disabled=busy):
        try:
            st.session_state["grade_job"] = start_resuming(
                workspace, b.id, options, get_client() if use_llm else None, int(workers))
        except GraderError as exc:
            st.error(f"Cannot resume that batch: {exc}")
        else:
            st.rerun()


def _start(uploads: list[Upload]) -> None:
    """Grade ``uploads`` (the same uploads while they are graded: the running job)."""
    st.session_state.pop("grade_confirm", None)
    st.session_state["grade_job"] = start_grading(
        workspace, name, uploads, options, get_client() if use_llm else None, int(workers),
        regrade)
    st.session_state["grade_uploads"] = st.session_state.get("grade_uploads", 0) + 1
    st.rerun()  # draw the page again with the button disabled while the job runs


uploads = _uploads(files) + [Upload(n, samples[n].read_bytes()) for n in chosen]
if st.button("Grade", type="primary", key="grade_run", disabled=busy,
             help="Grading: wait for this batch to end." if busy else None):
    size = batch_size([(u.name, u.data) for u in uploads])
    if not uploads:
        st.error("Nothing to grade: upload notebooks or a ZIP, or pick sample submissions.")
    elif size.needs_confirmation:  # asked once more, with what it would take
        st.session_state["grade_confirm"] = (size.notebooks, size.words(), size.confirm_above)
    else:
        _start(uploads)
if (asked := st.session_state.get("grade_confirm")) and not busy:
    count, words, limit = asked
    st.warning(f"{words}: more than {limit:,} notebooks in one batch. They are graded as one "
               "batch, a chunk at a time, each grade saved as it is made (a stop is resumed "
               "from here); the Grade button stays unavailable until the whole batch ends. "
               "Grade them all?")
    yes, no = st.columns(2)
    if yes.button(f"Grade all {count:,}", key="grade_confirm_yes"):
        _start(uploads)
    if no.button("Cancel", key="grade_confirm_no"):
        st.session_state.pop("grade_confirm", None)
        st.rerun()

with check_box:
    self_check(workspace, assignment)

# -- live progress -------------------------------------------------------------------
# Boxes made before the job is followed: what the page showed of the batch before (its
# results) is cleared at once, not left on screen while the next batch grades.
progress_box, models_box, results_box = st.container(), st.container(), st.container()
if job is not None:
    with progress_box:  # live while it runs; its final board once it ended; by its title
        follow_job(job, anonymous(), {e.name: e.title for e in usable}.get(
            job.assignment, ""), top_line)
    if busy:
        st.rerun()  # it ended: draw the page again, with the Grade button enabled
    # grades first, models after: their notes come in under the grades, live
    ended, parts = job.board.snapshot().model_counts()
    with models_box:
        st.fragment(follow_models, run_every=2.0 if ended < parts else None)(job, anonymous())

# -- results -------------------------------------------------------------------------
with results_box:
    if job is not None and job.finished:
        result = job.result
        if result.error:
            st.error(offline_markdown(f"Grading stopped: {result.error}. Grades finished before "
                                      "this are saved; see the Review page."))
        hidden = anonymous()
        if result.problems:  # each named, in words, the parser's detail folded
            problem_box([(f"unreadable file {i}" if hidden else p.file, p.reason)
                         for i, p in enumerate(result.problems, 1)])
        now_shown = results_in_force(store, result.grade_ids, hidden)
        graded = now_shown.graded
        if graded or result.problems:
            st.subheader(f"Results: {result.title or job.assignment} ({job.assignment})")
            if job.assignment != name:
                st.info(f"These are the results of the last batch, graded for {job.assignment}. "
                        f"The assignment chosen above is {name}: pressing Grade grades for it.")
            if result.reused:
                st.caption(f"{result.reused} already graded with this rubric: the stored grades "
                           "are shown (tick 'Regrade' to grade them again).")
            if note := now_shown.note():
                st.info(note)
            st.dataframe(now_shown.rows(), hide_index=True, width="stretch")
            if result.problems:
                st.caption(f"{len(result.problems)} file(s) could not be read: named above, with "
                           "the reason; the others were graded.")
        shown = dict(graded)
        for gid, why in result.unlike:
            r = shown.get(gid) or store.get_report(gid, hidden)
            score = "" if r.score is None else \
                f" Its score, {points_text(r.score, r.max_score)}, likely means nothing."
            said = why if why.endswith((".", "?", "!")) else f"{why}."
            st.warning(offline_markdown(f"**{r.display_name or r.file}** ({r.file}): {said}{score} "
                                        "Check that the assignment chosen was the right one."))
        if graded:
            reports = [r for _, r in graded]
            one_each = one_grade_per_student(store, [gid for gid, _ in graded])
            download_buttons([shown[gid] for gid in one_each], result.title or job.assignment,
                             job.assignment, "grade_dl", hidden, assignment.rubric
                             if job.assignment == name else None, store.get_file,
                             unread=result.problems,
                             ids=[(shown[gid].student_id, shown[gid].file) for gid in one_each])
            who = {f"{r.display_name or r.file} ({r.file})": i for i, r in enumerate(reports)}
            pick = st.selectbox("Details of", list(who), key="grade_detail")
            chosen = reports[who[pick]]  # its cells numbered as in its letter and in Review
            report_detail(chosen, "grade_detail_view", store.get_file(chosen.sha256),
                          graded[who[pick]][0])
