"""The Rubrics page's import of an old rubric in AppTest, issue 33: dozens of advice
bullets grouped by what to do (each piece of advice said once, under where it is done),
the table's columns sized to fit the page, and points shared at the old rubric's own step
instead of 4.44, 2.66, 1.77, 0.89."""

from __future__ import annotations

import pytest

from app_pages.import_view import COLUMNS
from tests.test_app_rubrics import REPO, k, page, texts, upload_key

OLD = REPO.parent / "shared" / "course-r" / "old-rubrics" / "assignment_6_rubric.json"
OVERRIDE = ("Not applied: where a student's work deserves other credit, override the "
            "criterion in Review.")
pytestmark = pytest.mark.skipif(not OLD.is_file(), reason="the course's old rubrics are "
                                                          "not here")


def test_advice_is_grouped_by_what_to_do_and_points_keep_the_old_step(app_data):
    at = page("r-joins")
    at.file_uploader(key=upload_key(at)).set_value(
        (OLD.name, OLD.read_bytes(), "application/json")).run()
    assert not at.exception, at.exception
    assert not at.error
    advice = next(m.value for m in at.markdown if m.value.startswith("**What to do**"))
    places = [w for w in ("**On the Rubrics page**", "**In Review, while grading**",
                          "**To keep in mind**", "**Nothing to do**") if w in advice]
    assert places == sorted(places, key=advice.index)  # in that order
    assert len(places) == 4
    assert advice.count(OVERRIDE) == 1  # once, with the items it is about under it
    head = next(line for line in advice.splitlines() if OVERRIDE in line)
    assert head == f"- {OVERRIDE} (9 items)"
    items = advice.count("\n- **") + advice.count("\n    - ")
    table = next(d.value for d in at.dataframe if "what to do" in d.value.columns)
    assert items >= (table["status"] == "not carried over").sum()  # none left out
    assert advice.count("\n- ") < items  # fewer pieces of advice than items: grouped

    joins = table[table["in the old rubric"].str.startswith("Join operations: its parts'")]
    assert "rounded to tenths of a point (4.4, 2.6, 1.8, 0.9)" in joins["imported as"].iloc[0]
    points = set(at.data_editor(key=k(at, "criteria")).value["points"])
    assert {4.4, 2.6, 1.8, 0.9} <= points  # the draft's criteria, as they would be saved
    assert not points & {4.44, 2.67, 2.66, 1.78, 1.77, 0.89}
    summary = texts(at.info)
    assert "Imported 26 criteria (100 points)" in summary


def test_the_import_table_s_columns_fit_the_page():
    """The main column is about 900 px wide at 1400 px with the sidebar open."""
    widths = [c["width"] for c in COLUMNS.values()]
    assert all(isinstance(w, int) for w in widths)
    assert sum(widths) <= 880
