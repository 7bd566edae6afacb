"""Streamlit drawing of an import (an old-system rubric, an nbgrader or otter notebook):
what was and was not carried over.

Drawing only; the rows come from grader.rubrics.import_items (``table_rows``), worded by
``grader.service.import_words``. Used by the Rubrics page's import and the Grade page's
"Create an assignment from files". The status is in words (an emoji renders as an empty
box where the browser lacks its font, and Material icons are fetched from Google's
servers). The table fits the page at 1400 px (the sidebar open): its columns' widths add
up to less than the main column's, and its rows are tall enough for the grid to wrap
their text (Streamlit wraps cells only in rows taller than 4rem); a cell longer still
opens in full on a click. Below it, the advice in full, each piece once with the items
it is about, grouped by where it is acted on (``advice_groups``).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from grader.rubrics.import_seed import ImportReport
from grader.service.import_words import advice_groups, advice_markdown, worded_rows

# Widths in pixels, adding up to 870: the main column is about 900 px wide at 1400 px
# with the sidebar open, the grid's scroll bar and borders included.
COLUMNS = {
    "status": st.column_config.TextColumn("status", width=92),  # "not carried over"
    "in the old rubric": st.column_config.TextColumn(
        "in the old rubric", width=224, help="The item as the imported file has it."),
    "imported as": st.column_config.TextColumn(
        "imported as", width=230, help="The criterion and checks it became."),
    "what to do": st.column_config.TextColumn(
        "what to do", width=220, help="What to do instead, where it was not carried "
        "over: listed in full below the table, grouped by where it is done (criteria and "
        "checks are edited on the Rubrics page)."),
    "where in the old file": st.column_config.TextColumn(
        "where", width=104, help="Where the item sits in the imported file (JSON keys, "
        "or a notebook's cell)."),
}
ROW_HEIGHT = 92  # four lines of wrapped text; the grid wraps only above 64 px
ROWS_SHOWN = 7  # the table's height in rows; it scrolls for the rest


def _columns(origin: str) -> dict[str, object]:
    """The table's columns, their headers naming what was imported (an old rubric, an
    nbgrader or otter notebook)."""
    if origin == "the old rubric":
        return COLUMNS
    return {**COLUMNS,
            "in the old rubric": st.column_config.TextColumn(
                f"in {origin}", width=224, help="The item as the imported file has it."),
            "where in the old file": st.column_config.TextColumn(
                "where", width=104, help="Where the item sits in the imported file (a "
                "notebook's cell, or a test file).")}


def show_import(report: ImportReport) -> None:
    """A one-line summary, one table (what was imported first, then what was not), and
    below it, in full, what the instructor should do, each piece of advice once."""
    (st.info if report.not_carried else st.success)(report.summary())
    rows = worded_rows(report)
    st.dataframe(pd.DataFrame(rows, columns=list(COLUMNS)), hide_index=True,
                 width="stretch", column_config=_columns(report.origin),
                 row_height=ROW_HEIGHT, height=38 + ROW_HEIGHT * min(len(rows), ROWS_SHOWN))
    groups = advice_groups(report)
    if not groups:
        return
    kinds = sum(len(g.advice) for g in groups)
    items = sum(g.items for g in groups)
    st.markdown(f"**What to do**: {items} item{'s' if items != 1 else ''}, "
                f"{kinds} piece{'s' if kinds != 1 else ''} of advice, by where it is done."
                + "".join(f"\n\n**{g.where}** ({g.items} item{'s' if g.items != 1 else ''})"
                          f"\n\n{advice_markdown(g)}" for g in groups))
