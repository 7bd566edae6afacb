"""Streamlit drawing of an import (an old-system rubric, an nbgrader or otter notebook):
what was and was not carried over.

Drawing only; the rows come from grader.rubrics.import_items (``table_rows``), worded by
``grader.service.import_words``. Used by the Rubrics page's import and the Grade page's
"Create an assignment from files". The status is in words (an emoji renders as an empty
box where the browser lacks its font, and Material icons are fetched from Google's
servers); the advice, too long for a table column, is listed in full below the table.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from grader.rubrics.import_seed import ImportReport
from grader.service.import_words import advice_lines, worded_rows

COLUMNS = {
    "status": st.column_config.TextColumn("status", width=130),  # "not carried over"
    "in the old rubric": st.column_config.TextColumn(
        "in the old rubric", width="large", help="The item as the imported file has it."),
    "imported as": st.column_config.TextColumn(
        "imported as", width="large", help="The criterion and checks it became."),
    "what to do": st.column_config.TextColumn(
        "what to do", width="large", help="What to do instead, where it was not carried "
        "over: listed in full below the table (criteria and checks are edited on the "
        "Rubrics page)."),
    "where in the old file": st.column_config.TextColumn(
        "where in the old file", help="Where the item sits in the imported file (JSON keys, "
        "or a notebook's cell)."),
}


def _columns(origin: str) -> dict[str, object]:
    """The table's columns, their headers naming what was imported (an old rubric, an
    nbgrader or otter notebook)."""
    if origin == "the old rubric":
        return COLUMNS
    return {**COLUMNS,
            "in the old rubric": st.column_config.TextColumn(
                f"in {origin}", width="large", help="The item as the imported file has it."),
            "where in the old file": st.column_config.TextColumn(
                "where", help="Where the item sits in the imported file (a notebook's cell, "
                "or a test file).")}


def show_import(report: ImportReport) -> None:
    """A one-line summary, one table (what was imported first, then what was not), and
    below it, in full, what the instructor should do about each item."""
    (st.info if report.not_carried else st.success)(report.summary())
    st.dataframe(pd.DataFrame(worded_rows(report), columns=list(COLUMNS)), hide_index=True,
                 width="stretch", column_config=_columns(report.origin))
    if lines := advice_lines(report):
        st.markdown("**What to do**\n\n" + "\n".join(f"- {line}" for line in lines))
