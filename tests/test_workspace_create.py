"""Creating an assignment from uploads: the folder's short, readable, unique name, and the
title the instructor typed kept for the assignment and an imported rubric."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.errors import RubricError
from grader.rubrics.schema import load_rubric
from grader.service.workspace import SHORT_NAME_LIMIT, Upload, Workspace, short_name, slug

ROOT = Path(__file__).resolve().parents[1]
COURSE = ROOT.parent / "shared" / "course-r" / "strings-dates"
RETAIL = ROOT / "examples" / "retail-sales"
TYPED = "Lesson 7: Strings and dates (R) - Fall 2026"
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def up(path: Path) -> Upload:
    return Upload(path.name, path.read_bytes())


def create_r(ws: Workspace, title: str):
    return ws.create(title, up(COURSE / "template.ipynb"), up(COURSE / "solution.ipynb"),
                     up(COURSE / "rubric.seed-format.json"))


@pytest.mark.parametrize(("title", "name"), [
    (TYPED, "lesson-7-strings-and-dates"),
    ("Homework 9", "homework-9"),
    ("Homework 9 - Fall", "homework-9-fall"),  # one '-' between words, never '---'
    ("Assignment 7 (Part 2)", "assignment-7-part-2"),  # short enough: kept whole
    ("Homework 3: Cleaning and reshaping the survey data from the spring",
     "homework-3-cleaning"),  # cut between words, not on "and"
    ("Café Analyse – Übung 2", "cafe-analyse-ubung-2"),
    ("作业 7", "assignment-7"),
    ("", "assignment"),
])
def test_short_name_is_readable(title, name):
    assert short_name(title) == name


def test_short_name_is_made_unique():
    taken = {"lesson-7-strings-and-dates", "lesson-7-strings-and-dates-2"}
    assert short_name(TYPED, taken) == "lesson-7-strings-and-dates-3"
    long = "x" * 40
    assert short_name(long, {"x" * 32}) == "x" * 30 + "-2"


@given(st.text(max_size=120), st.sets(st.sampled_from(["a", "homework-9", "assignment"])))
def test_short_names_are_short_valid_and_free(title, taken):
    name = short_name(title, taken)
    assert NAME.match(name), name
    assert len(name) <= SHORT_NAME_LIMIT
    assert name not in taken
    whole = slug(title)
    if whole and len(whole) <= SHORT_NAME_LIMIT and re.search("[a-z]", whole) \
            and whole not in taken:
        assert name == whole  # a short title keeps all of its words


def test_import_keeps_the_typed_title_and_a_readable_name(ws):
    made, parsed = create_r(ws, TYPED)
    assert made.name == "lesson-7-strings-and-dates"
    assert made.title == TYPED
    assert made.rubric.title == TYPED
    on_disk = load_rubric(ws.user_dir / made.name / "rubric.json")
    assert on_disk.title == TYPED
    assert parsed.imported
    assert parsed.report is not None
    assert parsed.report.rubric.title == TYPED
    info = next(r for r in parsed.report.rows if r.source == "assignment_info")
    assert "as you typed it" in info.imported_as
    assert parsed.dropped == tuple(parsed.report.dropped)
    assert not any("module doc" in d for d in parsed.dropped)
    entry = next(e for e in ws.entries() if e.name == made.name)
    assert entry.title == TYPED


def test_a_taken_name_gets_a_number_instead_of_failing(ws):
    first, _ = create_r(ws, TYPED)
    second, _ = create_r(ws, TYPED)
    assert (first.name, second.name) == ("lesson-7-strings-and-dates",
                                         "lesson-7-strings-and-dates-2")
    assert (ws.user_dir / second.name / "assignment.toml").is_file()


def test_a_bundled_example_name_counts_as_taken(ws):
    made, parsed = ws.create("Retail sales", up(RETAIL / "template.ipynb"),
                             up(RETAIL / "solution.ipynb"),
                             up(ROOT / "rubrics" / "retail-sales.json"))
    assert made.name == "retail-sales-2"
    assert made.title == "Retail sales"
    assert not parsed.imported
    assert parsed.report is None
    # the title typed at creation wins over the one in a rubric of our own format
    # (issue 22: the Rubrics page showed the file's title, not the one typed)
    ours = json.loads((ROOT / "rubrics" / "retail-sales.json").read_text())
    assert ours["title"] != "Retail sales"
    assert made.rubric.title == "Retail sales"
    assert ws.load(made.name).rubric.title == "Retail sales"


def test_without_a_title_the_old_rubric_names_the_assignment(ws):
    made, _ = create_r(ws, "  ")
    old = json.loads((COURSE / "rubric.seed-format.json").read_text())["assignment_info"]
    assert made.title == old["title"]
    assert made.rubric.title == old["title"]
    assert made.name == short_name(old["title"])


def test_a_chosen_name_that_is_taken_is_still_an_error(ws):
    create_r(ws, TYPED)
    with pytest.raises(RubricError, match="exists already"):
        ws.create(TYPED, up(COURSE / "template.ipynb"), up(COURSE / "solution.ipynb"),
                  up(COURSE / "rubric.seed-format.json"), name="lesson-7-strings-and-dates")
