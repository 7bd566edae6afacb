"""Streamlit pieces the Grade and Review pages share: a report's detail, downloads
(a job's live progress is app_pages/progress_view.py).

Drawing only; the rows come from grader.views.reports.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

from app_pages.review_models import model_section
from app_pages.shared import get_store, get_workspace
from grader.assignment import Assignment
from grader.errors import InputError
from grader.notebooks.archive import InputProblem
from grader.notebooks.refusals import words_and_detail
from grader.packages import install, status
from grader.rubrics.schema import Rubric
from grader.service.workspace import Workspace
from grader.types import GradeReport
from grader.views.export_choices import canvas_id_line
from grader.views.labels import criterion_labels
from grader.views.reports import (
    Reports,
    cell_positions,
    criterion_rows,
    downloads,
    evidence_rows,
    layer_rows,
    offline_markdown,
    percent_text,
    points_text,
    request_rows,
)

CRITERIA_COLUMNS = {
    "criterion": st.column_config.TextColumn("criterion", width=190, pinned=True),
    "points": st.column_config.NumberColumn("points", width=60),
    "max": st.column_config.NumberColumn("max", width=50),
    "needs review": st.column_config.CheckboxColumn("review", width=60),
    "why review": st.column_config.TextColumn("why review", width="large"),
    "checks": st.column_config.TextColumn("checks", width="large"),
}


def problem_box(problems: list[tuple[str, str]]) -> None:
    """Files not graded: each named with the reason in words, the parser's technical
    detail (``grader.notebooks.refusals``) folded away below, kept at hand."""
    if not problems:
        return
    said = [(f, *words_and_detail(why)) for f, why in problems]
    st.error(offline_markdown("\n".join(f"- {f}: not graded: {words}" for f, words, _ in said)
                              if len(said) > 1 else
                              f"{said[0][0]}: not graded: {said[0][1]}"))
    details = [(f, d) for f, _, d in said if d]
    if details:
        with st.expander("Technical detail"):
            st.code("\n".join(f"{f}: {d}" for f, d in details), language=None,
                    wrap_lines=True)


def report_detail(r: GradeReport, key: str, notebook: bytes | None = None,
                  grade_id: int | None = None) -> None:
    """One student's grade: score, criteria with evidence, what the models said, the
    measured requests, and each layer's run. ``notebook`` (the submission's bytes) names
    the evidence's cells by number, as the letter and the notebook view do; ``grade_id``
    (its id in the store) measures the model routes' agreement over its batch."""
    if r.status == "error":
        problem_box([(r.file, r.error)])
        return
    c1, c2, c3 = st.columns([2, 1, 1])
    pct = percent_text(r.score, r.max_score)
    c1.metric("Score", points_text(r.score, r.max_score), pct or None, delta_color="off",
              delta_arrow="off")
    c2.metric("To review", len(r.needs_review), help="Criteria that need your review")
    c3.metric("Flags", len(r.flags))
    for f in r.flags:
        st.warning(f"**{f.code}**: {offline_markdown(f.message)}")
    crit, models, reqs, layers = st.tabs(["Criteria and evidence", "Model analysis (L3, L4)",
                                          "Requests", "Layers"])
    with crit:
        # the criterion and its points first, narrow enough to be seen in Review's half
        # of the page; the long columns after them
        st.dataframe(criterion_rows(r), hide_index=True, width="stretch",
                     column_config=CRITERIA_COLUMNS)
        positions = cell_positions(notebook, r.file)
        names = criterion_labels(r.criteria)
        for c in r.criteria:
            label = f"{names[c.id]}: {points_text(c.points, c.max_points)}" + (
                " (review)" if c.needs_review else "")
            with st.expander(label):
                st.dataframe(evidence_rows(r, c.id, positions), hide_index=True,
                             width="stretch")
    with models:
        model_section(r, grade_id)
    with reqs:
        rows = request_rows(r)
        if rows:
            st.dataframe(rows, hide_index=True, width="stretch")
        else:
            st.info("No model requests were made for this grade.")
    with layers:
        st.dataframe(layer_rows(r), hide_index=True, width="stretch")


def download_buttons(reports: Reports, title: str, stem: str, key: str,
                     hide_names: bool = False, rubric: Rubric | None = None,
                     files: Callable[[str], bytes | None] | None = None, *,
                     ids: Sequence[tuple[str, str]] = (),
                     not_graded_as_zero: bool = False,
                     unread: Sequence[InputProblem] = ()) -> None:
    """Canvas CSV, CSV, JSON and feedback ZIP; each file is made when its button is
    clicked (``reports`` may be a function that loads them then). Each letter is written
    against its own grade's assignment and rubric version, read from the store, whatever
    ``title`` and ``rubric`` say (they serve only where they match the grades). With
    names hidden, the files carry pseudonyms and no ids (nor the files' sha256), and the
    Canvas CSV says so before it is taken; with names shown, ``ids`` (each row's student
    id and file) say whether some rows carry no Canvas id, before it is taken too. A
    notebook not graded is blank in the CSVs unless ``not_graded_as_zero``. ``unread``: the
    batch's files that could not be read, each given its short letter saying why."""
    if hide_names:
        st.warning("Names are hidden, so the downloads carry pseudonyms and no student ids. "
                   "Canvas matches rows by its ID column, which is empty here: it cannot "
                   "import this Canvas CSV. Turn **Hide student names** off in the sidebar "
                   "to download one it can import.")
    elif ids and (line := canvas_id_line([i for i, _ in ids], [f for _, f in ids])):
        st.warning(offline_markdown(line))
    made = downloads(reports, title, stem, rubric, files, store=get_store(),
                     titles=_titles(get_workspace()), hide_names=hide_names,
                     not_graded_as_zero=not_graded_as_zero, unread=unread)
    for col, d in zip(st.columns(len(made)), made, strict=True):
        col.download_button(d.label, d.make, file_name=d.file_name, mime=d.mime,
                            key=f"{key}_{d.file_name}", on_click="ignore", help=d.help or None)


def _titles(workspace: Workspace) -> Callable[[str], str | None]:
    """An assignment's title as the workspace knows it, read when a file is made."""
    known: dict[str, str] = {}

    def title(name: str) -> str | None:
        if not known:
            known.update({e.name: e.title for e in workspace.entries() if e.title})
        return known.get(name)

    return title


def self_check(workspace: Workspace, assignment: Assignment) -> None:
    """The assignment's own solution and template graded with its rubric (in the
    background on first view): both percentages, and what to fix when they are off."""
    packages_box(assignment)
    running = workspace.checks.get(assignment).running
    st.session_state[_INLINE] = True  # drawn as part of the whole page, not on its own
    try:
        st.fragment(_self_check_box, run_every=2.0 if running else None)(
            workspace, assignment, running)
    finally:
        st.session_state.pop(_INLINE, None)


_INLINE = "_self_check_inline"


def _self_check_box(workspace: Workspace, assignment: Assignment, was_running: bool) -> None:
    state = workspace.checks.get(assignment)
    if state.running:
        st.caption("Checking the assignment: grading its own solution and template "
                   "with the rubric...")
    elif was_running and not st.session_state.get(_INLINE):
        # Done since the page was drawn: draw it again, which stops the polling. Never
        # while the whole page runs: that run may carry a click (Grade) to act on.
        st.rerun()
    elif state.error:
        st.warning(f"The assignment's self-check failed: {state.error}")
    elif state.check is not None and state.check.sound:
        st.success(state.check.headline())
    elif state.check is not None:
        lines = state.check.lines()
        st.warning(lines[0] + "".join(f"\n- {line}" for line in lines[1:]))


def packages_box(assignment: Assignment) -> None:
    """The packages the assignment declares: installed, or what is missing and a button
    that installs it (into the assignment's own environment, outside the sandbox)."""
    declared = assignment.packages
    if not declared:
        return
    state = status(declared)
    if state.ready:
        st.caption(f"Packages ({declared.source}): {declared.describe()}: installed.")
        return
    st.warning(state.text())
    if not st.button("Install the assignment's packages", key=f"install-{assignment.name}"):
        return
    lines: list[str] = []
    with st.status("Installing the assignment's packages...", expanded=True) as box:
        log = st.empty()

        def say(line: str) -> None:
            lines.append(line)
            log.code("\n".join(lines[-12:]), language=None)

        try:
            after = install(declared, say)
        except InputError as exc:
            box.update(label="The install failed", state="error")
            st.error(f"{exc.file}: {exc.reason}")
            return
        box.update(label="Installed" if after.ready else after.text(),
                   state="complete" if after.ready else "error", expanded=False)
    if after.ready:
        st.rerun()  # the self-check runs again with them
