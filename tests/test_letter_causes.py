"""A slip is charged once, where it happened, and the letter names it there (issue 33,
item 5): a later part's failed cell does not cost an earlier part whose variable it was
about to change; a variable never made names the cell that stopped (and the earlier cell
it follows from); the letter names every cell it counts; a batch's unreadable notebooks
get their letters; a code raised in twelve cells is one flag that says twelve.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import nbformat
import pytest

from grader.assignment import load_assignment
from grader.exports.formats import feedback_zip
from grader.layers.base import GradeOptions, one_per_code
from grader.layers.compare import compare_variables
from grader.layers.slips import SLIP_NOTE, columns_written, made_names, without_columns
from grader.letters.build import build_letter, letter_markdown
from grader.notebooks.archive import InputProblem
from grader.notebooks.load import load_notebook
from grader.pipeline import GradeInput, Grader
from grader.sandbox.inspect_code import VariableSummary
from grader.types import Evidence, Flag, GradeReport

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
RETAIL = EXAMPLES / "retail-sales"


# --- what a cell writes ------------------------------------------------------------------------

def test_a_python_cell_that_adds_columns_is_read_as_adding_them():
    code = ('orders["revenue"] = orders["quantiy"] * orders["unit_price"]\n'
            'orders.loc[:, ["a", "b"]] = 0\n'
            'orders = orders.assign(c=1, d=orders["a"])\n'
            'revenue_by_region = orders.groupby("region").sum()\n'
            '%matplotlib inline\n')
    assert columns_written(code, "python", "orders") == {"revenue", "a", "b", "c", "d"}
    assert made_names(code, "python") == {"revenue_by_region"}  # orders is changed, not made
    assert columns_written("orders = clean(orders)\n", "python", "orders") == set()
    assert made_names("orders = clean(orders)\n", "python") == {"orders"}


def test_an_r_cell_that_adds_columns_is_read_as_adding_them():
    code = ('orders$revenue <- orders$quantiy * orders$unit_price\n'
            'orders[["r2"]] <- 1\n'
            'orders[, "r3"] = 2\n'
            'orders <- orders %>% mutate(total = round(x, digits = 2), m2 = 3)\n'
            'by_region <- orders %>% group_by(region)  # a comment: orders$nope <- 1\n')
    assert columns_written(code, "r", "orders") == {"revenue", "r2", "r3", "total", "m2"}
    assert made_names(code, "r") == {"by_region"}


def test_the_solution_without_a_column_compares_with_the_students_work():
    rows = [[1, "East", 2.0], [2, "West", 3.0]]
    key = VariableSummary("orders", True, "DataFrame", (2, 3), ("id", "region", "revenue"),
                          ("int64", "object", "float64"), rows, rows,
                          {"id:sum": 3.0, "revenue:sum": 5.0})
    mine = VariableSummary("orders", True, "DataFrame", (2, 2), ("id", "region"),
                           ("int64", "object"), [r[:2] for r in rows], [r[:2] for r in rows],
                           {"id:sum": 3.0})
    aspects = ["type", "shape", "columns", "values"]
    assert not all(ok for ok, _ in compare_variables(mine, key, aspects).values())
    cut = without_columns(key, {"revenue"})
    assert cut is not None
    assert (cut.shape, cut.columns, cut.summary) == ((2, 2), ("id", "region"), {"id:sum": 3.0})
    assert all(ok for ok, _ in compare_variables(mine, cut, aspects).values())
    wrong = VariableSummary("orders", True, "DataFrame", (2, 2), ("id", "region"), None,
                            [[1, "East"], [2, "north"]], None, {})
    assert not compare_variables(wrong, cut, aspects)["values"][0]  # the rest still counts


def test_grades_stored_before_facts_are_read_by_the_layers_own_notes():
    """The letter reads the first cause from the result's facts; a grade stored before
    results had facts gets them from the layer's own notes (grader.store.legacy_facts)."""
    from grader.layers import slips
    from grader.store import legacy_facts

    assert (legacy_facts.SLIP_NOTE, legacy_facts.FIRST_CAUSE) == (slips.SLIP_NOTE,
                                                                  slips.FIRST_CAUSE)
    old = legacy_facts.legacy_facts(
        "output", f"x is not defined after running the notebook{slips.FIRST_CAUSE}cell c1 "
        "stopped with an error before it wrote what cell c2 needs")
    assert old.state == "undefined"
    assert old.has("first_cause")


# --- graded for real: runtime_errors' Task 3 typo is charged once --------------------------

@pytest.fixture(scope="module")
def retail() -> Grader:
    return Grader(load_assignment(RETAIL), GradeOptions(execute=True, use_llm=False))


def _section(letter, cid):
    return next(s for s in letter.sections if s.criterion_id == cid)


@pytest.mark.slow
def test_a_later_typo_is_charged_where_it_happened(retail):
    path = RETAIL / "submissions" / "runtime_errors.ipynb"
    r = retail.grade(GradeInput.from_path(path))
    by_id = {c.id: c for c in r.criteria}
    clean = by_id["clean-orders"]  # Task 2 equals the solution; Task 3's cell adds revenue
    assert clean.points == clean.max_points, [ch.message for ch in clean.checks]
    output = next(ch for ch in clean.checks if ch.check == "output")
    assert SLIP_NOTE in output.message
    assert "'revenue'" in output.message
    assert by_id["revenue-by-region"].points < by_id["revenue-by-region"].max_points
    assert by_id["runs-clean"].points < 1  # the error is counted where it happened
    letter = build_letter(r, retail.assignment.rubric, load_notebook(path))
    text = letter_markdown(letter)
    assert "Add `revenue` to `orders`" not in text
    runs = _section(letter, "runs-clean")
    assert "cells 5, 11, 13 and 15" in str(runs.missing[0])  # every cell it counts
    assert {q.where for q in runs.quotes} == {"cell 5", "cell 11", "cells 13 and 15"}
    trend = _section(letter, "monthly-trend")  # never made: its cell stopped, after cell 11
    said = " ".join(map(str, trend.missing + trend.next_steps))
    assert "cell 13 stops with an error" in said
    assert "Fix the error in cell 11 first" in said
    assert "Complete the code" not in said


@pytest.mark.slow
def test_a_wrong_earlier_part_still_loses_its_points_behind_a_later_typo(retail, tmp_path):
    """Only the column the failed cell would have added is left out: Task 2 without its
    duplicates removed is still wrong, whatever Task 3 did."""
    nb = nbformat.read(RETAIL / "submissions" / "runtime_errors.ipynb", as_version=4)
    task2 = next(c for c in nb.cells if c.get("id") == "task2")
    task2.source = task2.source.replace("orders = orders.drop_duplicates()\n", "")
    path = tmp_path / "dupes.ipynb"
    nbformat.write(nb, path)
    r = retail.grade(GradeInput.from_path(path))
    clean = next(c for c in r.criteria if c.id == "clean-orders")
    output = next(ch for ch in clean.checks if ch.check == "output")
    assert output.score < 1, output.message
    assert clean.points < clean.max_points


# --- the broken notebook of a ZIP gets its letter ----------------------------------------------

def test_every_unreadable_notebook_of_a_batch_gets_its_letter():
    graded = GradeReport("alice.ipynb", "sha", "demo", "v1", "graded", 3.0, 4.0,
                         display_name="alice")
    unread = [InputProblem("class.zip/bob.ipynb", "not a readable notebook (not JSON): the "
                           "file is damaged", "class.zip", "bob.ipynb"),
              InputProblem("class.zip/carol.ipynb", "the file is empty")]
    with zipfile.ZipFile(io.BytesIO(feedback_zip([graded], "Demo", unread=unread))) as z:
        names = sorted(z.namelist())
        bob = z.read("feedback/bob.md").decode()
        carol = z.read("feedback/carol.md").decode()
    assert names == sorted(f"feedback/{s}.{e}" for s in ("alice", "bob", "carol")
                           for e in ("pdf", "md", "html"))
    assert "could not be graded" in bob
    assert "damaged" in bob
    assert "empty" in carol
    assert "Submit the .ipynb file again" in bob  # what to do
    with zipfile.ZipFile(io.BytesIO(feedback_zip([graded], "Demo", unread=unread,
                                                 hide_names=True))) as z:
        hidden = z.namelist()
    assert not any("bob" in n or "carol" in n for n in hidden)  # a file's name names its student
    assert {"feedback/Unreadable_file_1.md", "feedback/Unreadable_file_2.md"} <= set(hidden)


# --- one flag per code, with the count ---------------------------------------------------------

def test_a_code_raised_many_times_is_one_flag_with_the_count():
    flags = [Flag("syntax_error", "code does not parse: line 1", (Evidence(f"c{i}", 1, ""),))
             for i in range(12)] + [Flag("timeout", "too slow")]
    merged = one_per_code(flags)
    assert [f.code for f in merged] == ["syntax_error", "timeout"]
    assert merged[0].message == "code does not parse: line 1 (12 times)"
    assert len(merged[0].evidence) == 12
    differ = one_per_code([Flag("hardcoded_output", f"{v} is typed in") for v in "abcde"])
    assert differ[0].message == ("a is typed in; b is typed in; c is typed in; and 2 more "
                                 "(5 times)")


def test_an_r_notebook_graded_as_python_has_one_syntax_flag():
    grader = Grader(load_assignment(RETAIL), GradeOptions(execute=False, use_llm=False))
    r = grader.grade(GradeInput.from_path(EXAMPLES / "r-joins" / "submissions" /
                                          "complete.ipynb"))
    syntax = [f for f in r.flags if f.code == "syntax_error"]
    assert len(syntax) == 1
    assert syntax[0].message.startswith("code does not parse in ")
    assert len(syntax[0].evidence) > 1
    assert f"in {len(syntax[0].evidence)} cells" in syntax[0].message
