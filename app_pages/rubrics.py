"""Rubrics: edit the rubric in force, see whose score an edit would move, save it as a new
version; import the old system's rubric files. (Session keys: ``rubrics_*``.)

The tables and their validation are grader.rubrics.edit's, the preview grader.service.rescore's,
the import's table app_pages.import_view's. An imported old-system rubric takes the
assignment's title, the one typed when it was made (the title field can change it); a
rubric whose own title differs from the assignment's (a rubric JSON uploaded with a title
of its own) says so, with a button that puts the assignment's title in the field.
Every widget of the editor is keyed by its draft (``draft_key``: the assignment and a
draft number): a browser keeps a widget's value for as long as its key lives, so
shared keys would carry one assignment's title and placeholders into another's
draft, and saving would rename its rubric.
"""

from __future__ import annotations

import hashlib
import time

import pandas as pd
import streamlit as st

from app_pages.components import self_check
from app_pages.import_view import show_import
from app_pages.shared import anonymous, get_store, get_workspace, kept_selectbox, sidebar
from grader.errors import GraderError, RubricError
from grader.rubrics.check_fields import KINDS
from grader.rubrics.edit import (
    CHECK_COLUMNS,
    CRITERIA_COLUMNS,
    EditProblem,
    rows_from_rubric,
    rubric_from_rows,
    target_help,
    type_help,
)
from grader.rubrics.edit_levels import LEVEL_COLUMNS, level_rows
from grader.rubrics.import_seed import ImportReport
from grader.rubrics.schema import Rubric
from grader.service.movers import mover_rows, movers_summary, unmoved_line
from grader.service.rescore import changes, preview_rescore, preview_rows
from grader.service.workspace import Upload, notebooks_of, read_rubric_upload
from grader.views.labels import assignment_label
from grader.views.reports import offline_markdown

sidebar()
workspace = get_workspace()
st.title("Rubrics")

CHECK_TYPES = [t for types in KINDS.values() for t in types]
CRITERIA_CONFIG = {
    "order": st.column_config.NumberColumn(
        "order", help="Criteria follow this number: renumber to reorder them.", step=1),
    "id": st.column_config.TextColumn(
        "id", help="Lower-case letters, digits, - and _; unique. Checks name it.",
        required=True),
    "kind": st.column_config.SelectboxColumn("kind", options=list(KINDS), required=True),
    "points": st.column_config.NumberColumn("points", min_value=0.0, required=True),
    "manual": st.column_config.CheckboxColumn(
        "manual", help="Graded by hand: no automatic points; listed for you to grade in "
        "Review until your override gives its points."),
    "task": st.column_config.TextColumn(
        "task", help="Text of the template's markdown cell that introduces the task."),
    "expectations": st.column_config.TextColumn(
        "expectations", help="Written criteria: what a good answer says (for the model)."),
}
LEVELS_CONFIG = {
    "criterion": st.column_config.TextColumn(
        "criterion", help="The id of the criterion this level belongs to.", required=True),
    "credit": st.column_config.NumberColumn(
        "credit", help="The share of the criterion's points this level gives (0 to 1).",
        min_value=0.0, max_value=1.0, required=True),
    "when": st.column_config.TextColumn(
        "when", width="large", help='The checks that must all pass, as a JSON list: '
        '[{"type": "code", "pattern": "parse_date_time"}, {"type": "calls", "functions": '
        '["mdy"]}]. Empty: the level always holds.'),
    "says": st.column_config.TextColumn(
        "says", width="large", help="The sentence the student's letter gives at this level."),
}
CHECKS_CONFIG = {
    "criterion": st.column_config.TextColumn(
        "criterion", help="The id of the criterion this check belongs to.", required=True),
    "type": st.column_config.SelectboxColumn("type", options=CHECK_TYPES, required=True,
                                             help=type_help()),
    "weight": st.column_config.NumberColumn(
        "weight", help="Share of the criterion's points; a criterion's weights add up to 1.",
        min_value=0.0, max_value=1.0),
    "target": st.column_config.TextColumn("target", help=target_help()),
    "options": st.column_config.TextColumn(
        "options", width="large",
        help="Other fields as key=value; key=value, e.g. compare=type, shape; "
        "partial=type:0.5, shape:0.5; min_words=25; max_errors=1; expected=178 or "
        "accept=[178, 180]; number=57.3; atol=0.05; question=Question 4; evidence=both, "
        "stored or rerun; depends_on=load-data; hidden=true (docs/rubric-format.md)."),
}


def new_draft(name: str, rubric: Rubric, source: str,
              report: ImportReport | None = None) -> dict:
    """A draft to edit; its widgets get keys of their own, so they start afresh. ``report``:
    what an import of an old-system rubric carried over."""
    made = st.session_state.get("rubrics_drafts_made", 0) + 1
    st.session_state["rubrics_drafts_made"] = made
    draft = {"assignment": name, "rubric": rubric, "source": source, "report": report,
             "key": f"{name}-{made}"}
    st.session_state["rubrics_draft"] = draft
    return draft


def draft_key(draft: dict, field: str) -> str:
    """The key of one of a draft's widgets ("title", "criteria", ...)."""
    return f"rubrics_{field}_{draft['key']}"


def show_problems(problems: list[EditProblem]) -> None:
    for p in problems:
        (st.warning if p.warning else st.error)(str(p))


# -- the assignment and its rubric in force ------------------------------------------------
entries = workspace.entries()
for e in entries:
    if e.problem:
        st.warning(f"Assignment folder {e.root} cannot be used: {e.problem}")
usable = {e.name: e for e in entries if not e.problem}
if not usable:
    st.info("No assignment with a usable rubric yet: create one on the Grade page.")
    st.stop()
name = kept_selectbox("Assignment", list(usable), "rubrics_assignment", "assignment",
                      format_func=lambda n: assignment_label(usable[n]))
try:
    assignment = workspace.load(name)
    history = workspace.rubric_history(name)
except GraderError as exc:
    st.error(f"Assignment {name} cannot be loaded: {exc}")
    st.stop()
in_force = assignment.rubric
draft = st.session_state.get("rubrics_draft")
if draft is None or draft["assignment"] != name:
    draft = new_draft(name, in_force, f"the rubric in force ({in_force.version})")
if flash := st.session_state.pop("rubrics_flash", None):
    st.success(flash)
st.caption(f"In force: version {in_force.version}, {len(in_force.criteria)} criteria, "
           f"{in_force.total_points:g} points. Saving an edit adds a version and puts it in "
           "force; grades keep the version they were made with.")
self_check(workspace, assignment)
with st.expander(f"Version history ({len(history)})"):
    st.dataframe([{"version": h.version, "in force": h.version == in_force.version,
                   "saved": time.strftime("%Y-%m-%d %H:%M", time.localtime(h.created_at)),
                   "note": h.note} for h in history], hide_index=True, width="stretch")

# -- import -----------------------------------------------------------------------------
with st.expander("Import a rubric file", expanded=draft["report"] is not None):
    up = st.file_uploader("A rubric JSON (docs/rubric-format.md) or an old-system rubric "
                          "file: it is loaded below for review; nothing is saved yet.",
                          type=["json"], key=f"rubrics_upload_{name}")
    if up is not None:
        data = up.getvalue()
        token = (name, up.name, hashlib.sha256(data).hexdigest())
        seen = st.session_state.get("rubrics_import")
        if seen is None or seen["token"] != token:  # a new file: read it once
            got = None
            try:
                got = read_rubric_upload(Upload(up.name, data), assignment.language,
                                         notebooks_of(assignment))
                problems = [] if got.rubric.language == assignment.language else [
                    f"the rubric is for {got.rubric.language}, the assignment is "
                    f"{assignment.language}"]
            except RubricError as exc:
                problems = exc.problems
            if got is not None and not problems:
                what = "imported from the old system's" if got.imported else "loaded from"
                report = (got.report.retitled(assignment.title, "the assignment's title")
                          if got.report else None)
                draft = new_draft(name, report.rubric if report else got.rubric,
                                  f"the rubric {what} {up.name}", report)
            seen = {"token": token, "error": "\n".join(
                [f"Cannot import {up.name}:\n"] + [f"- {p}" for p in problems]
            ) if problems else ""}
            st.session_state["rubrics_import"] = seen
        if seen["error"]:
            st.error(seen["error"])
    if draft["report"] is not None:
        show_import(draft["report"])

# -- the editor -------------------------------------------------------------------------
base: Rubric = draft["rubric"]
criteria_rows, check_rows = rows_from_rubric(base)
st.subheader("Criteria")
st.caption(f"Editing {draft['source']}. Add rows at the bottom, delete with the row "
           "checkbox, reorder with the order column.")
title_key = draft_key(draft, "title")
if title_key not in st.session_state:  # set here, not by value=, so the button may set it
    st.session_state[title_key] = base.title
if base.title != assignment.title and st.session_state[title_key] != assignment.title:
    words, use = st.columns([4, 1], vertical_alignment="center")
    words.info(f"This assignment is titled “{assignment.title}” (as typed when it was made); "
               + (f"the rubric carries the title “{base.title}”, from the rubric file."
                  if base.title else "the rubric has no title of its own."))
    use.button("Use the assignment's title", key=f"rubrics_use_title_{draft['key']}",
               on_click=st.session_state.__setitem__, args=(title_key, assignment.title))
title = st.text_input("Title", key=title_key)
criteria = st.data_editor(pd.DataFrame(criteria_rows, columns=CRITERIA_COLUMNS).astype(
                              {"manual": "boolean"}),  # a new row may leave it empty
                          key=draft_key(draft, "criteria"), num_rows="dynamic", hide_index=True,
                          column_config=CRITERIA_CONFIG, width="stretch")
criteria_box = st.container()
st.subheader("Checks")
st.caption("One row per check. target and options are explained in each column's help and "
           "in docs/rubric-format.md (Editing in the app).")
checks = st.data_editor(pd.DataFrame(check_rows, columns=CHECK_COLUMNS),
                        key=draft_key(draft, "checks"), num_rows="dynamic", hide_index=True,
                        column_config=CHECKS_CONFIG, width="stretch")
checks_box = st.container()
st.subheader("Levels")
st.caption("Credit by approach or level: a criterion's levels are tried in order and the "
           "first whose checks all pass gives its credit; when none does, its checks score "
           "it. See docs/rubric-format.md (Partial credit by level).")
levels = st.data_editor(pd.DataFrame(level_rows(base), columns=LEVEL_COLUMNS),
                        key=draft_key(draft, "levels"), num_rows="dynamic", hide_index=True,
                        column_config=LEVELS_CONFIG, width="stretch")
levels_box = st.container()
c1, c2 = st.columns(2)
placeholders = c1.text_area("Placeholders (one a line): template texts that are not answers",
                            value="\n".join(base.placeholders),
                            key=draft_key(draft, "placeholders"))
keep_total = c2.toggle(f"Keep the total at {base.total_points:g} points",
                       key=draft_key(draft, "keep_total"),
                       help="Off: the total follows the criteria's points.")
result = rubric_from_rows(
    criteria.to_dict("records"), checks.to_dict("records"), base, title=title,
    placeholders=[p.strip() for p in placeholders.splitlines() if p.strip()],
    total_points=base.total_points if keep_total else None,
    level_rows=levels.to_dict("records"))
with criteria_box:
    show_problems(result.for_table("criteria"))
with checks_box:
    show_problems(result.for_table("checks"))
with levels_box:
    show_problems(result.for_table("levels"))
delta = result.total_points - in_force.total_points
c2.metric("Total points", f"{result.total_points:g}",
          f"{delta:+g} from the rubric in force" if delta else None)
show_problems(result.for_table("rubric"))
edited = result.rubric
changed = edited is not None and edited.version != in_force.version
diff = (changes(in_force, edited) or ["the rubric's JSON differs"]) if changed else []
if edited is not None and not changed:
    st.info("No changes from the rubric in force.")
elif changed:
    st.markdown("**Changes from the rubric in force:**\n\n" + "\n".join(f"- {d}" for d in diff))

# -- preview ----------------------------------------------------------------------------
st.subheader("Preview: whose score moves")
if st.button("Preview re-score", key="rubrics_preview", disabled=edited is None):
    if edited is None:
        st.error("Fix the problems above first.")
    else:
        bar = st.progress(0.0, "Re-scoring the graded submissions...")
        try:
            st.session_state["rubrics_preview_result"] = (anonymous(), preview_rescore(
                get_store(), assignment, edited, anonymous=anonymous(),
                progress=lambda n, total: bar.progress(n / total, f"{n} of {total}")))
        except GraderError as exc:
            st.error(f"The preview failed: {exc}")
        bar.empty()
shown = st.session_state.get("rubrics_preview_result")
if shown is not None and edited is not None and shown[0] == anonymous() \
        and (shown[1].old_version, shown[1].new_version) == (in_force.version, edited.version):
    preview = shown[1]
    if not preview.rows:
        st.info("No submission has been graded with the rubric in force yet: nothing moves.")
    else:
        st.markdown(f"**{movers_summary(preview)}** Score before and after, in points and "
                    "in percent of the total; the biggest change first.")
        moving = mover_rows(preview)
        if moving:
            st.dataframe(moving, hide_index=True, width="stretch", key="rubrics_movers")
        if rest := unmoved_line(preview):
            st.caption(offline_markdown(rest))
        if any(r.overrides for r in preview.rows):
            st.caption("A regrade carries each override over to the new grade when its "
                       "criterion stays (capped at its new points): see the score with your "
                       "overrides. Overrides of a removed criterion are lost; they are named.")
        for r in preview.rows:
            if r.problem:
                st.warning(offline_markdown(f"{r.name}: {r.problem}"))
            if r.lost:
                st.warning(offline_markdown(
                    f"{r.name}: a regrade could not carry these overrides over (their "
                    f"criterion is removed): {'; '.join(r.lost)}"))
        with st.expander("Detail: the checks evaluated again, every submission"):
            st.markdown("Checks evaluated again: " + (
                "; ".join(f"`{c}`" for c in preview.recomputed)
                or "none (rebuilt from the stored results)")
                + f". The preview took {preview.seconds:.1f} s.")
            st.dataframe(preview_rows(preview), hide_index=True, width="stretch")

# -- save -------------------------------------------------------------------------------
st.subheader("Save")
note = st.text_input("Note for this version", key=draft_key(draft, "note"),
                     placeholder="what changed and why (default: the list of changes)")
if st.button("Save as new version", key="rubrics_save", type="primary", disabled=not changed):
    if edited is None or not changed:
        st.error("Not saved: " + ("fix the problems above first." if edited is None
                                  else "nothing changed."))
    else:
        try:
            row = workspace.save_rubric(name, edited, note.strip() or "; ".join(diff))
        except GraderError as exc:
            st.error(f"Not saved: {exc}")
        else:
            st.session_state["rubrics_flash"] = (
                f"Saved rubric version {row.version}: it is now in force for {name}. "
                "Grades made before keep their version; regrade them on the Review page.")
            st.session_state["rubrics_draft"] = None
            st.rerun()
