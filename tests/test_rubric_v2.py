"""Rubric schema version 2: what it adds, and version 1 files loading unchanged.

Any-of groups in ``calls`` and ``assigns`` (``"read_csv | read.csv"``): read from a file,
written canonically, refused in a version 1 file, scored by layer 1 on real notebooks
(Python and R), said plainly in the student's letter, and typed into the editor's
table (which then saves the rubric as version 2; an unchanged rubric keeps version 1).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.analysis.template import match_template
from grader.assignment import Assignment
from grader.errors import RubricError
from grader.layers.base import AssignmentContext, GradeOptions, SubmissionContext
from grader.layers.structure import StructureLayer
from grader.letters.build import build_letter, letter_markdown
from grader.notebooks.load import load_notebook
from grader.rubrics.check_fields import alternatives
from grader.rubrics.edit import rows_from_rubric, rubric_from_rows
from grader.rubrics.schema import dumps, load_rubric, loads, rubric_from_dict
from grader.scoring import build_report

REPO = Path(__file__).resolve().parents[1]


def rubric_dict(version: int, functions: list[str], names: list[str], language: str = "r"):
    return {
        "schema_version": version, "title": "Joins", "language": language, "total_points": 4,
        "criteria": [{"id": "load", "title": "Load the data", "kind": "code", "points": 4,
                      "task": "Task 1", "checks": [
                          {"type": "calls", "functions": functions, "weight": 0.5},
                          {"type": "assigns", "names": names, "weight": 0.5}]}],
    }


# -- the schema -------------------------------------------------------------------------
def test_a_group_is_read_written_canonically_and_split():
    r = rubric_from_dict(rubric_dict(2, ["read_csv|read.csv ", "filter"], ["sales"]))
    check = r.criteria[0].checks[0]
    assert check.functions == ("read_csv | read.csv", "filter")
    assert alternatives(check.functions[0]) == ("read_csv", "read.csv")
    assert alternatives("filter") == ("filter",)
    assert r.schema_version == 2
    assert r.lowest_version() == 2
    again = loads(dumps(r))
    assert again == r
    assert again.version == r.version


def test_a_group_in_a_version_1_file_names_the_version_it_needs():
    with pytest.raises(RubricError) as err:
        rubric_from_dict(rubric_dict(1, ["read_csv | read.csv"], ["sales"]), "old.json")
    assert any("alternatives" in p and "schema_version 2" in p for p in err.value.problems)


@pytest.mark.parametrize("entry", ["read_csv |", "| read.csv", " | "])
def test_a_group_needs_a_name_on_each_side(entry):
    with pytest.raises(RubricError) as err:
        rubric_from_dict(rubric_dict(2, [entry], ["sales"]))
    assert any("each side" in p for p in err.value.problems), err.value.problems


@pytest.mark.parametrize("version", [0, 3, "2", True])
def test_an_unknown_version_lists_the_ones_this_grader_reads(version):
    with pytest.raises(RubricError) as err:
        rubric_from_dict(rubric_dict(version, ["read_csv"], ["sales"]))
    assert any("reads versions 1 and 2" in p for p in err.value.problems)


# The version hashes the grader gave these files before schema version 2 existed: stored
# grades name their rubric by it, so it must never change for a version 1 file.
VERSION_1_HASHES = {"retail-sales": "5d0be5890bf6", "r-joins": "4c13fcce3ce0",
                    "r-strings-dates": "9648300d7deb"}


@pytest.mark.parametrize(("name", "digest"), sorted(VERSION_1_HASHES.items()))
def test_bundled_version_1_rubrics_keep_their_version_and_hash(name, digest):
    r = load_rubric(REPO / "rubrics" / f"{name}.json")
    assert r.schema_version == 1
    assert r.version == digest
    assert json.loads(dumps(r))["schema_version"] == 1


# -- layer 1 ------------------------------------------------------------------------------
def notebook(cells: list, language: str, name: str = "sub.ipynb"):
    kernel = ({"name": "ir", "language": "R", "display_name": "R"} if language == "r" else
              {"name": "python3", "language": "python", "display_name": "Python 3"})
    node = new_notebook(cells=cells, metadata={"kernelspec": kernel})
    return load_notebook(nbformat.writes(node).encode(), name)


def grade_l1(rubric, template_cells: list, student_cells: list):
    template = notebook(template_cells, rubric.language, "template.ipynb")
    sub = notebook(student_cells, rubric.language)
    actx = AssignmentContext(
        Assignment("demo", None, rubric, None, None, None),  # type: ignore[arg-type]
        template, template, None)
    match = match_template(template, sub, rubric.all_placeholders)
    result = StructureLayer().run(SubmissionContext(actx, sub, None, match,
                                                    GradeOptions(execute=False)))
    return result, sub


R_TEMPLATE = [new_markdown_cell("# Joins\n\n## Task 1\nRead `data/sales.csv` into `sales`."),
              new_code_cell("# YOUR CODE HERE")]


@pytest.mark.parametrize(("code", "score"), [
    ('sales <- read.csv("data/sales.csv")', 1.0),   # the base R alternative
    ('sales <- readr::read_csv("data/sales.csv")', 1.0),
    ('sales <- read_csv("data/sales.csv")', 1.0),
    ('sales <- read.delim("data/sales.csv")', 0.0),  # not among the alternatives
    ('# sales <- read.csv("data/sales.csv")', 0.0),  # a comment is not a call
])
def test_any_alternative_satisfies_a_group(code, score):
    rubric = rubric_from_dict(rubric_dict(2, ["read_csv | read.csv"], ["sales"]))
    result, sub = grade_l1(rubric, R_TEMPLATE, [R_TEMPLATE[0], new_code_cell(code)])
    calls = next(c for c in result.checks if c.check == "calls")
    assert calls.score == score
    if score:
        assert sub.cell(calls.evidence[0].cell_id) is not None
        assert "read" in calls.evidence[0].text
    else:
        assert "not called in the student's code: read_csv | read.csv" in calls.message


def test_groups_and_plain_names_count_separately_in_python():
    rubric = rubric_from_dict(rubric_dict(2, ["read_csv", "merge | join"],
                                          ["sales | df"], language="python"))
    template = [new_markdown_cell("## Task 1\nLoad and join."), new_code_cell("# YOUR CODE HERE")]
    student = [template[0], new_code_cell(
        "import pandas as pd\ndf = pd.read_csv('a.csv')\nout = df.join(df, rsuffix='_2')")]
    result, _ = grade_l1(rubric, template, student)
    calls = next(c for c in result.checks if c.check == "calls")
    assigns = next(c for c in result.checks if c.check == "assigns")
    assert calls.score == 1.0
    assert "2 of 2 called" in calls.message
    assert assigns.score == 1.0


# -- the letter ---------------------------------------------------------------------------
def letter_for_code(code: str) -> str:
    rubric = rubric_from_dict(rubric_dict(2, ["read_csv | read.csv", "filter"], ["sales"]))
    result, sub = grade_l1(rubric, R_TEMPLATE, [R_TEMPLATE[0], new_code_cell(code)])
    report = build_report(rubric, "sub.ipynb", "sha", "joins", {"L1": result})
    return letter_markdown(build_letter(report, rubric, sub, "Joins"))


def test_the_letter_names_the_alternative_the_student_used():
    text = letter_for_code('sales <- read.csv("data/sales.csv")')
    assert "`read.csv()`" in text
    assert "read_csv | read.csv" not in text
    assert "`filter()` does not appear in your code yet" in text


def test_the_letter_offers_every_alternative_when_none_is_used():
    text = letter_for_code('sales <- 1')
    assert "`read_csv()` (or `read.csv()`) and `filter()` do not appear" in text
    assert "read_csv | read.csv" not in text  # no group syntax reaches the student


# -- the editor ---------------------------------------------------------------------------
def test_typing_a_group_into_a_version_1_rubric_saves_version_2():
    base = load_rubric(REPO / "rubrics" / "r-joins.json")
    assert base.schema_version == 1
    criteria, checks = rows_from_rubric(base)
    unchanged = rubric_from_rows(copy.deepcopy(criteria), copy.deepcopy(checks), base)
    assert unchanged.rubric is not None
    assert unchanged.rubric.schema_version == 1
    assert unchanged.rubric.version == base.version
    row = next(i for i, c in enumerate(checks) if c["type"] == "calls")
    first = checks[row]["target"].split(",")[0].strip()
    checks[row]["target"] = checks[row]["target"].replace(first, f"{first} | merge", 1)
    edited = rubric_from_rows(criteria, checks, base)
    assert edited.errors == [], [str(p) for p in edited.errors]
    assert edited.rubric is not None
    assert edited.rubric.schema_version == 2
    groups = [f for c in edited.rubric.criteria for ch in c.checks for f in ch.functions
              if "|" in f]
    assert groups == [f"{first} | merge"]


def test_a_half_written_group_is_an_error_on_its_row_and_field():
    base = load_rubric(REPO / "rubrics" / "r-joins.json")
    criteria, checks = rows_from_rubric(base)
    row = next(i for i, c in enumerate(checks) if c["type"] == "calls")
    checks[row]["target"] = "read_csv |, filter"
    result = rubric_from_rows(criteria, checks, base)
    assert result.rubric is None
    assert [(p.table, p.rows, p.field) for p in result.errors] == [("checks", (row,), "target")]
    assert "needs a name on each side of `|`" in str(result.errors[0])


def _two(checks_a: list[dict], checks_b: list[dict]) -> dict:
    return {"schema_version": 2, "title": "t", "language": "python", "total_points": 2,
            "criteria": [{"id": "a", "kind": "code", "points": 1, "checks": checks_a},
                         {"id": "b", "kind": "code", "points": 1, "checks": checks_b}]}


def test_depends_on_names_criteria_of_the_rubric_and_never_goes_round():
    ok = rubric_from_dict(_two([{"type": "calls", "functions": ["f"], "weight": 1}],
                               [{"type": "value", "expression": "x", "depends_on": ["a"],
                                 "weight": 1}]))
    assert ok.criteria[1].checks[0].depends_on == ("a",)
    assert "depends_on" in ok.version_2_features()
    with pytest.raises(RubricError) as err:
        rubric_from_dict(_two([{"type": "plot", "depends_on": ["b"], "weight": 1}],
                              [{"type": "plot", "depends_on": ["a", "zz", "b"], "weight": 1}]))
    problems = err.value.problems
    assert any("check 1.depends_on: names 'zz', which is not a criterion" in p for p in problems)
    assert any("check 1.depends_on: names the criterion itself" in p for p in problems)
    assert any("goes round in a circle: a -> b -> a" in p for p in problems)
    with pytest.raises(RubricError) as err:
        rubric_from_dict(_two([{"type": "runs", "depends_on": ["b"], "weight": 1}],
                              [{"type": "plot", "weight": 1}]))
    assert any("a runs check uses no other criterion's values" in p
               for p in err.value.problems)
