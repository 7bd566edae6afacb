"""The Rubrics page in AppTest: an old-system import shown as a table of what was and was
not carried over; the preview leads with the students who move, in points and percent."""

from __future__ import annotations

from tests.test_app_rubrics import SEED, edits, graded, in_force, k, page, texts, upload_key

__all__ = ["graded"]  # the fixture, shared with test_app_rubrics


def test_importing_the_seed_rubric_shows_the_table(app_data):
    before = in_force(app_data, "r-strings-dates")
    at = page("r-strings-dates")
    at.file_uploader(key=upload_key(at)).set_value(
        ("rubric.seed-format.json", SEED.read_bytes(), "application/json")).run()
    assert not at.exception
    assert not at.error
    summary = texts(at.info)
    assert "Imported 13 criteria (100 points)" in summary
    assert "not carried over, each with what to do" in summary
    table = next(d.value for d in at.dataframe if "what to do" in d.value.columns)
    assert list(table.columns)[:4] == ["status", "in the old rubric", "imported as",
                                       "what to do"]
    status = list(table["status"])
    carried = status.count("imported")
    assert carried > 0
    assert status[:carried] == ["imported"] * carried  # imported first, then the rest
    assert set(status[carried:]) == {"not carried over"}
    rows = table.to_dict("records")
    assert all(r["what to do"] for r in rows if r["status"] != "imported")
    assert not any("module doc" in str(v) for r in rows for v in r.values())
    part2 = next(r for r in rows if r["in the old rubric"].startswith(
        "regex verification of part 2"))
    assert "output check of products_clean" in part2["what to do"]
    assert any(r["in the old rubric"] == "penalty: each unexecuted cell = 2 points deduction"
               for r in rows)
    # the draft keeps the assignment's own title, not the old file's
    assert "the assignment's title" in rows[0]["imported as"]
    assert at.text_input(key=k(at, "title")).value == before.title
    assert "Assignment 7 V3" not in texts(at.markdown)


def test_the_preview_lists_movers_with_points_and_percent(graded):
    at = page()
    at.session_state[k(at, "criteria")] = edits(edited_rows={0: {"points": 12}})  # 20 -> 30
    at.run()
    at.button(key="rubrics_preview").click().run()
    assert not at.exception
    assert "2 of 3 graded students would move." in texts(at.markdown)
    movers = next(d.value for d in at.dataframe if "before" in d.value.columns)
    assert set(movers["student"]) == {"student001", "student002"}
    for before, after, change in zip(movers["before"], movers["after"], movers["change"],
                                     strict=True):
        assert " / 20 (" in before
        assert before.endswith("%)")
        assert " / 30 (" in after
        assert change.startswith("+")
        assert "points" in change
        assert "percentage point" in change
    assert "1 student does not move: student003." in texts(at.caption)
    detail = at.expander[-1]
    assert detail.label.startswith("Detail")
    assert "Checks evaluated again" in texts(detail.markdown)


def test_the_preview_hides_names_when_asked(graded):
    at = page()
    at.toggle(key="_anonymise_switch").set_value(True).run()
    at.session_state[k(at, "criteria")] = edits(edited_rows={0: {"points": 12}})
    at.run()
    at.button(key="rubrics_preview").click().run()
    assert not at.exception
    movers = next(d.value for d in at.dataframe if "before" in d.value.columns)
    assert all(n.startswith("Student ") for n in movers["student"])
    shown = texts(at.caption) + texts(at.markdown)
    assert "student00" not in shown
