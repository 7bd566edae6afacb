"""The import report of an old-system rubric: one row per item of the old file, each
carried over as a criterion or with what the instructor should do instead."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from grader.rubrics.import_items import IMPORTED, NOT_CARRIED, table_rows
from grader.rubrics.import_seed import (
    ImportReport,
    import_seed_file,
    import_seed_rubric,
    report_lines,
)
from grader.rubrics.schema import dumps, loads

SEED = Path(__file__).resolve().parents[2] / "shared/course-r/strings-dates/rubric.seed-format.json"


@pytest.fixture(scope="module")
def seed() -> dict:
    return json.loads(SEED.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def report() -> ImportReport:
    return import_seed_file(SEED)


def sources(report: ImportReport) -> list[str]:
    return [s for r in report.rows for s in r.source.split(", ")]


def covered(report: ImportReport, path: str) -> bool:
    return any(s == path or s.startswith(path + ".") for s in sources(report))


def texts(report: ImportReport) -> str:
    return "\n".join(f"{r.item} {r.imported_as} {r.todo}" for r in report.rows)


def test_every_item_of_the_seed_rubric_gets_a_row(report, seed):
    for key in seed:
        assert covered(report, key), key
    for key in seed["autograder_checks"]:
        assert covered(report, f"autograder_checks.{key}"), key
    for key in seed["autograder_checks"]["sections"]:
        assert covered(report, f"autograder_checks.sections.{key}"), key
    for key, el in seed["rubric_elements"].items():
        assert f"rubric_elements.{key}" in sources(report), key
        for dkey in el.get("deductions", {}):
            assert f"rubric_elements.{key}.deductions.{dkey}" in sources(report), dkey
        for skey in el.get("required_sections", {}):
            assert f"rubric_elements.{key}.required_sections.{skey}" in sources(report), skey
    for key in seed["partial_credit_rules"]:
        assert f"partial_credit_rules.{key}" in sources(report), key


def test_no_row_points_at_the_module_doc_and_every_row_says_what_became_of_it(report):
    assert "module doc" not in texts(report)
    assert not any(r.todo.rstrip(".) ").lower().endswith("doc") for r in report.rows)
    for r in report.not_carried:
        assert r.todo.strip(), r.item
        assert not r.imported_as, r.item
    for r in report.carried:
        assert r.imported_as.strip(), r.item


def test_the_sections_are_carried_as_their_criteria(report):
    carried = "\n".join(r.imported_as for r in report.carried)
    for c in report.rubric.criteria:
        if c.kind == "code":
            assert f"criterion {c.id} ({c.points:g} points)" in carried
    assert "6 written criteria question-8-1 to question-8-6 (2 + 2 + 2 + 2 + 1 + 1 points)" \
        in carried
    part2 = next(r for r in report.carried if r.source.endswith("part2_string_cleaning"))
    assert part2.item == "Part 2: String Cleaning (10 points)"
    assert "assigns products_clean, feedback_clean" in part2.imported_as
    assert "calls str_trim, str_to_title, str_to_lower, str_squish" in part2.imported_as


def test_regex_verification_and_penalties_say_what_to_do(report):
    part2 = next(r for r in report.rows if r.item.startswith("regex verification of part 2"))
    assert not part2.carried
    assert "(3 tasks, 4 + 3 + 3 points)" in part2.item
    assert "part2-string-cleaning" in part2.todo
    assert "output check of products_clean" in part2.todo
    part5 = next(r for r in report.rows if r.item.startswith("regex verification of part 5"))
    assert "as.numeric()" in part5.todo  # the old pattern's function the calls check lacks
    assert "today()" not in part5.todo  # the calls check has it
    part6 = next(r for r in report.rows if r.item.startswith("regex verification of part 6"))
    assert "summarize" not in part6.todo  # summarise is called: the same function
    penalty = next(r for r in report.rows
                   if r.item == "penalty: each unexecuted cell = 2 points deduction")
    assert "runs check" in penalty.todo
    assert "Rubrics page" in penalty.todo
    template = next(r for r in report.rows if "template code" in r.item)
    assert template.todo.startswith("Nothing to do")
    columns = next(r for r in report.rows
                   if r.source == "autograder_checks.sections.part2_string_cleaning"
                   ".required_columns")
    assert "product_name_clean" in columns.item
    assert "compare=columns" in columns.todo
    credit = next(r for r in report.rows
                  if r.source == "partial_credit_rules.part4_date_operations")
    assert "override part4-date-operations in Review" in credit.todo


def test_dropped_is_derived_from_the_rows(report):
    assert len(report.dropped) == len(report.not_carried) > 0
    for line, row in zip(report.dropped, report.not_carried, strict=True):
        assert line == f"{row.item}: {row.todo}"
    assert report.summary().startswith(f"Imported {len(report.rubric.criteria)} criteria "
                                       "(100 points)")
    assert f"{len(report.not_carried)} items not carried over" in report.summary()


def test_table_rows_list_the_imported_first(report):
    rows = table_rows(report)
    assert len(rows) == len(report.rows)
    status = [r["status"] for r in rows]
    assert status == sorted(status, key=lambda s: s != IMPORTED)
    assert status.count(NOT_CARRIED) == len(report.not_carried)
    assert set(rows[0]) == {"status", "in the old rubric", "imported as", "what to do",
                            "where in the old file"}


def test_report_lines_name_each_item(report):
    lines = "\n".join(report_lines(report))
    assert lines.startswith(report.summary())
    assert lines.count("not carried over: ") == len(report.not_carried)
    assert lines.count("what to do: ") == len(report.not_carried)


def test_retitled_takes_the_typed_title(report):
    typed = report.retitled("Lesson 7: Strings and dates (R) - Fall 2026")
    assert typed.rubric.title == "Lesson 7: Strings and dates (R) - Fall 2026"
    assert typed.rubric.criteria == report.rubric.criteria
    info = next(r for r in typed.rows if r.source == "assignment_info")
    assert "as you typed it" in info.imported_as
    assert "Assignment 7 V3" in info.imported_as  # the old title, named as not used
    assert loads(dumps(typed.rubric)) == typed.rubric
    assert report.retitled("   ") is report


def test_a_required_variable_no_section_checks_is_named(seed):
    data = copy.deepcopy(seed)
    data["autograder_checks"]["required_variables"].append("sales_summary")
    row = next(r for r in import_seed_rubric(data).rows
               if r.source == "autograder_checks.required_variables")
    assert not row.carried
    assert row.todo.startswith("Add sales_summary to an assigns check")


def test_odd_sections_and_unknown_fields_get_rows_with_what_to_do():
    data = {
        "assignment_info": {"title": "Odd", "total_points": 6},
        "autograder_checks": {"sections": {
            "part1_load": {"name": "Part 1", "points": 2, "mystery": 1},
            "part2_notes": {"name": "Part 2", "points": 4, "check_type": "markdown"},
        }},
        "rubric_elements": {"reflection": {"questions": {
            "question_2_1": {"points": 1}, "question_2_2": {"points": 1}}}},
        "late_policy": {"per_day": "10%"},
    }
    report = import_seed_rubric(data)
    assert [c.checks[0].type for c in report.rubric.criteria] == ["runs", "answer"]
    part1 = next(r for r in report.rows if r.source == "autograder_checks.sections.part1_load")
    assert part1.carried
    assert "runs check" in part1.todo
    mystery = next(r for r in report.rows if r.source.endswith("part1_load.mystery"))
    assert not mystery.carried
    assert "part1-load" in mystery.todo
    notes = next(r for r in report.rows if r.source == "autograder_checks.sections.part2_notes")
    assert notes.carried
    assert "do not add up" in notes.todo
    late = next(r for r in report.rows if r.source == "late_policy")
    assert late.item == "late policy"
    assert "does not know this field" in late.todo
    assert all(r.todo for r in report.not_carried)
