"""The Grade page's archive and delete of an assignment, and the list of archived ones
with a way to bring each back.

Drawing only; the work is grader.service.shelf's. Archiving keeps everything (folder,
rubric versions, grades) and hides the assignment from the pickers; deleting, offered
for created assignments only, asks first, offers the grades' downloads, and keeps the
grades in the database. Session-state keys: ``grade_shelf_note`` (what was just done,
shown once) and ``grade_delete_ask`` (the assignment whose delete awaits a yes).
"""

from __future__ import annotations

import streamlit as st

from app_pages.components import download_buttons
from grader.errors import GraderError
from grader.service.review import in_force
from grader.service.shelf import GradesHeld, archive, delete, grades_held, restore
from grader.service.workspace import AssignmentEntry, Workspace

NOTE = "grade_shelf_note"
ASK = "grade_delete_ask"


def _its(n: GradesHeld) -> str:
    """"its grades (10 students, 16 grades with older rubric versions)", or "no grades"."""
    return f"its grades ({n.words})" if n.grades else "no grades"


def shelf_note() -> None:
    """What the last archive, restore or delete did (once)."""
    if note := st.session_state.pop(NOTE, None):
        st.success(note)


def archived_list(workspace: Workspace) -> None:
    """The archived assignments, each with a button that brings it back."""
    hidden = workspace.entries(archived=True)
    if not hidden:
        return
    with st.expander(f"Archived assignments ({len(hidden)})"):
        for e in hidden:
            left, right = st.columns([4, 1], vertical_alignment="center")
            held = grades_held(workspace, e.name)
            left.write(f"{e.title} ({e.name}): " + (f"grades kept: {held.words}" if held.grades
                                                   else "no grades"))
            if right.button("Bring back", key=f"grade_restore_{e.name}"):
                restore(workspace, e.name)
                st.session_state[NOTE] = f"“{e.title}” ({e.name}) is back in the pickers."
                st.rerun()


def manage(workspace: Workspace, entry: AssignmentEntry, busy: bool,
           hide_names: bool) -> None:
    """Archive (any assignment) or delete (one created here) the chosen assignment;
    both disabled while a batch grades."""
    name, n = entry.name, grades_held(workspace, entry.name)
    with st.expander("Archive or delete this assignment"):
        st.caption(f"{entry.title} ({name}) has " + (f"grades in the database: {n.words}."
                                                     if n.grades else "no grades.")
                   + " Archiving hides "
                   "it from the pickers and keeps its folder and grades: bring it back from "
                   "'Archived assignments' above." + ("" if entry.bundled else " Deleting "
                   "removes its folder from the app; its grades stay in the database."))
        a, d = st.columns(2)
        if a.button("Archive", key=f"grade_archive_{name}", disabled=busy):
            archive(workspace, name)
            st.session_state[NOTE] = (f"Archived “{entry.title}” ({name}): hidden from the "
                                      f"pickers, {_its(n)} kept. Bring it back from "
                                      "'Archived assignments'.")
            st.rerun()
        if entry.bundled:
            return
        if d.button("Delete...", key=f"grade_delete_{name}", disabled=busy):
            st.session_state[ASK] = name
        if st.session_state.get(ASK) != name:
            return
        _confirm_delete(workspace, entry, n, hide_names)


def _confirm_delete(workspace: Workspace, entry: AssignmentEntry, n: GradesHeld,
                    hide_names: bool) -> None:
    name = entry.name
    st.warning(f"Delete “{entry.title}” ({name})? Its folder (template, solution, rubric, "
               f"data) is moved out of the app and its name stays taken. The database keeps "
               f"{_its(n)}, but no page shows them any more"
               + (": download them first." if n.grades else "."))
    if n.grades:
        store = workspace.store
        aid = workspace.assignment_id(name)
        version = workspace.load(name).rubric.version

        def reports():
            force = in_force(store, aid, version)
            return [store.get_report(g.id, hide_names) for g in (*force.grades, *force.missing)]

        download_buttons(reports, entry.title, name, "grade_delete_dl", hide_names)
    yes, no = st.columns(2)
    if yes.button(f"Yes, delete {name}", key="grade_delete_yes", type="primary"):
        try:
            where = delete(workspace, name)
        except GraderError as exc:
            st.error(f"Cannot delete {name}: {exc}")
            return
        st.session_state.pop(ASK, None)
        st.session_state[NOTE] = (f"Deleted “{entry.title}” ({name}): its folder is in "
                                  f"{where}; the database keeps {_its(n)}.")
        st.rerun()
    if no.button("Cancel", key="grade_delete_no"):
        st.session_state.pop(ASK, None)
        st.rerun()
