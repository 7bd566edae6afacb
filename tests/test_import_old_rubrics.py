"""Every rubric file the old system kept imports (issue 19, item 4).

The folder ../shared/course-r/old-rubrics holds the old system's rubric files in all its
shapes: autograder sections, rubric elements with or without autograder checks,
components, rubric categories, flat category maps. Each must import to a valid rubric
whose points add up to its total, with a report row for every top-level item of the
file; partial-credit rules become levels; accepted alternatives any-of entries; word
minimums ``min_words``. Imported and fitted to the real assignments' own solutions, the
rubrics of lessons 6 (joins) and 7 (strings and dates) must give the solution at least
98% and the template at most 5% in the self-check, unedited.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest

from grader.assignment import load_assignment
from grader.cli import main
from grader.errors import RubricError
from grader.notebooks.load import load_notebook
from grader.rubrics.import_seed import ImportReport, import_seed_file, import_seed_rubric
from grader.rubrics.schema import load_rubric, rubric_from_dict, rubric_to_dict, save_rubric
from grader.service.import_fit import fit_import, fit_to_folder
from grader.service.selfcheck import SOLUTION_AT_LEAST, TEMPLATE_AT_MOST, check_assignment

SHARED = Path(__file__).resolve().parents[2] / "shared"
COURSE = SHARED / "course-r"
OLD = COURSE / "old-rubrics"
FILES = sorted(p.name for p in OLD.glob("*.json"))


def test_the_folder_holds_the_seventeen_files():
    assert len(FILES) == 17


def _sources(report: ImportReport) -> list[str]:
    return [s for r in report.rows for s in r.source.split(", ")]


def _covered(report: ImportReport, key: str) -> bool:
    return any(s == key or s.startswith((f"{key}.", f"{key}[")) for s in _sources(report))


@pytest.fixture(scope="module")
def reports() -> dict[str, ImportReport]:
    return {name: import_seed_file(OLD / name) for name in FILES}


@pytest.mark.parametrize("name", FILES)
def test_each_old_file_imports_round_trips_and_reports_every_item(name, reports):
    report = reports[name]
    r = report.rubric
    assert r.criteria
    assert sum(c.points for c in r.criteria) == pytest.approx(r.total_points, abs=1e-6)
    assert rubric_from_dict(rubric_to_dict(r)) == r
    data = json.loads((OLD / name).read_text(encoding="utf-8"))
    for key in data:
        assert _covered(report, key), f"{name}: no row for {key}"
    for row in report.not_carried:
        assert row.todo.strip(), row.item
        assert not row.imported_as, row.item
    for row in report.carried:
        assert row.imported_as.strip(), row.item


def test_the_totals_of_the_old_files_are_kept(reports):
    totals = {name: reports[name].rubric.total_points for name in FILES}
    assert totals["assignment_6_rubric.json"] == 100
    assert totals["assignment_3_rubric.json"] == 37.5
    assert totals["templates-sample_rubric.json"] == 100  # no total: the categories' sum
    assert totals["templates-homework_1_simple_rubric.json"] == 37.5


def test_parts_that_do_not_add_up_are_scaled_and_said(reports):
    report = reports["assignment_6_rubric.json"]  # join sections 45 of 40, questions 15 of 10
    joins = [c for c in report.rubric.criteria if c.id.startswith(("part1_", "task_", "step_"))]
    assert sum(c.points for c in joins) == pytest.approx(40)
    written = [c for c in report.rubric.criteria if c.kind == "written"]
    assert sum(c.points for c in written) == pytest.approx(10)
    said = [r for r in report.rows if "against its" in r.item]
    assert {r.source for r in said} == {"rubric_elements.join_operations.required_sections",
                                        "rubric_elements.analysis_insights.questions"}
    assert all("scaled" in r.imported_as and r.todo for r in said)


def test_partial_credit_rules_become_levels_in_priority_order(reports):
    r = reports["a7v3_rubric.json"].rubric
    dates = r.criterion("part4-date-operations")
    assert [lv.credit for lv in dates.levels] == [1.0, 0.85, 0.7, 0.7, 0.4]
    first = dates.levels[0]
    assert first.says == "Used parse_date_time() with all 3 date formats - perfect!"
    (count,) = first.when
    assert (count.type, count.min_count, count.distinct) == ("code", 3, True)
    assert [w.min_count for lv in dates.levels[:3] for w in lv.when] == [3, 2, 1]
    mdy = dates.levels[3]  # all_of with not_patterns: one check each, the not as absent
    assert [(w.pattern, w.absent) for w in mdy.when] == [
        (r"\bmdy\s*\(", False), ("date_parsed", False), ("parse_date_time", True)]
    names = r.criterion("part6-combined-operations")
    assert [lv.credit for lv in names.levels] == [1.0, 1.0, 0.3, 0.6]
    (joined,) = names.levels[1].when  # any_of: one pattern
    assert joined.pattern == "(?:left_join)|(?:inner_join)|(?:merge)"
    assert [lv.credit for lv in r.criterion("part7-business-intelligence").levels] == [0.7, 1.0]


def test_quoted_formats_are_counted_distinct():
    import re

    report = import_seed_file(OLD / "a7v3_rubric.json")
    pattern = report.rubric.criterion("part4-date-operations").levels[0].when[0].pattern
    code = 'parse_date_time(x, orders = c("mdy HM", \'dmy HM\', "ymd", "mdy"))'
    assert sorted({m.group(0) for m in re.finditer(pattern, code)}) == ["dmy", "mdy", "ymd"]
    assert not re.search(pattern, 'mdy_hm(x); "mdy_hm"')


def test_guidelines_say_what_they_became(reports):
    rows = {r.source: r for r in reports["a7v3_rubric.json"].rows}
    as_name = rows["grading_guidelines.partial_credit_scenarios.customerid_as_name"]
    assert as_name.carried
    assert "part6-combined-operations at 60%" in as_name.imported_as
    loss = rows["grading_guidelines.partial_credit_scenarios.data_loss_acceptable"]
    assert not loss.carried
    assert "80%" in loss.todo
    assert "Rubrics page" in loss.todo
    brief = import_seed_rubric({"rubric_categories": {"notes": {"points": 2}},
                                "grading_guidelines": {"partial_credit_scenarios": {
                                    "short": "80% if brief but complete"}}})
    row = next(r for r in brief.rows if r.source.endswith(".short"))
    assert row.carried
    assert "brief answer" in row.imported_as


def test_accepted_alternatives_become_any_of_entries(reports):
    dates = reports["a7v3_rubric.json"].rubric.criterion("part4-date-operations")
    calls = next(ch for ch in dates.checks if ch.type == "calls")
    group = set(calls.functions[0].split(" | "))
    assert {"parse_date_time", "mdy", "dmy", "ymd", "mdy_hm"} <= group  # accepts_functions
    assert calls.functions[1:] == ("year", "month", "day", "wday", "quarter")
    csv = reports["assignment_1_rubric.json"].rubric.criterion("csv_import")
    assert "read_csv | read.csv" in next(ch for ch in csv.checks if ch.type == "calls").functions
    treat = reports["assignment_2_rubric.json"].rubric.criterion("outlier_treatment")
    assert "filter | subset" in next(ch for ch in treat.checks if ch.type == "calls").functions


def test_word_minimums_become_min_words(reports):
    a5 = reports["assignment_5_rubric.json"].rubric
    assert [ch.min_words for c in a5.criteria for ch in c.checks if ch.type == "answer"] == \
        [150, 150, 150, 150, 200]
    a3 = reports["assignment_3_rubric.json"].rubric
    assert a3.criterion("question_3_sorting").checks[0].min_words == 75
    assert a3.criterion("question_3_sorting").checks[0].question == "Question 3"


def test_prose_requirements_become_checks(reports):
    a6 = reports["assignment_6_rubric.json"].rubric
    tech = {ch.type: ch for ch in a6.criterion("technical_execution").checks}
    assert set(tech) == {"calls", "assigns", "code", "ran", "runs"}
    assert "semi_join" in tech["calls"].functions
    assert len(tech["assigns"].names) == 25  # "All required variables created"
    inner = {ch.type: ch for ch in a6.criterion("task_2_1_inner").checks if ch.type != "code"}
    assert inner["assigns"].names == ("customer_orders",)
    code = [ch.pattern for ch in a6.criterion("task_2_1_inner").checks if ch.type == "code"]
    assert code == ["by\\s*=\\s*[\"']CustomerID[\"']"]
    sample = reports["templates-sample_rubric.json"].rubric
    assert [ch.type for ch in sample.criterion("code_quality").checks] == ["documented"]
    assert sample.criterion("analysis_interpretation").kind == "written"


@pytest.mark.parametrize("text", ["[1, 2]", '"rubric"', '{"hello": 1}',
                                  '{"part1": {"description": "no points"}}'])
def test_a_file_that_is_not_a_rubric_is_refused_naming_it(tmp_path, text):
    path = tmp_path / "notes.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(RubricError) as err:
        import_seed_file(path)
    assert err.value.file == str(path)
    assert "not an old-system rubric" in err.value.problems[0]


def test_fitting_to_the_solution_drops_what_the_key_does_not_pass():
    report = import_seed_file(OLD / "assignment_6_rubric.json")
    fitted = fit_import(report, load_notebook(COURSE / "joins" / "template.ipynb"),
                        load_notebook(COURSE / "joins" / "solution.ipynb"))
    left = fitted.rubric.criterion("task_2_2_left")
    assert "is.na" not in next(ch for ch in left.checks if ch.type == "calls").functions
    assert sum(ch.weight for ch in left.checks) == pytest.approx(1)
    dropped = next(r for r in fitted.rows if r.item.startswith("task_2_2_left: calls is.na"))
    assert "The solution does not pass this: dropped" in dropped.todo
    findings = fitted.rubric.criterion("summary_findings").checks[0]
    assert findings.question == "Key Findings from Join Operations"  # the notebook's heading
    assert findings.min_words < 150  # the key's own answer is shorter than the old minimum
    assert any(f"the minimum became {findings.min_words}" in r.todo for r in fitted.rows)
    assert len(fitted.rows) > len(report.rows)


def test_fitting_drops_variables_the_template_assigns():
    report = import_seed_file(OLD / "a7v3_rubric.json")
    fitted = fit_to_folder(report, COURSE / "strings-dates")
    cleaning = fitted.rubric.criterion("part2-string-cleaning")
    assert [ch.type for ch in cleaning.checks] == ["calls"]
    assert cleaning.checks[0].weight == 1
    assert [lv.credit for lv in fitted.rubric.criterion("part4-date-operations").levels] == \
        [1.0, 0.85, 0.7, 0.7, 0.4]  # the key (mdy_hm) meets none of them


def test_the_command_line_fits_to_an_assignment_folder(tmp_path, capsys):
    dest = tmp_path / "rubric.json"
    assert main(["import-rubric", str(OLD / "assignment_6_rubric.json"), str(dest),
                 "--assignment", str(COURSE / "joins")]) == 0
    out = capsys.readouterr().out
    assert "The solution does not pass this: dropped" in out
    assert load_rubric(dest).criterion("summary_findings").checks[0].question == \
        "Key Findings from Join Operations"


# -- the two real assignments, graded by the self-check --------------------------------
def _assignment(tmp: Path, course: str, old: str) -> Path:
    root = tmp / course
    root.mkdir()
    for name in ("template.ipynb", "solution.ipynb"):
        shutil.copy(COURSE / course / name, root / name)
    shutil.copytree(COURSE / course / "data", root / "data")
    report = fit_to_folder(import_seed_file(OLD / old), root)
    save_rubric(report.rubric, root / "rubric.json")
    (root / "assignment.toml").write_text(
        'rubric = "rubric.json"\ntemplate = "template.ipynb"\nsolution = "solution.ipynb"\n'
        'data = ["data"]\n', encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def joins_check(tmp_path_factory):
    root = _assignment(tmp_path_factory.mktemp("joins"), "joins", "assignment_6_rubric.json")
    return check_assignment(load_assignment(root))


@pytest.fixture(scope="module")
def dates_check(tmp_path_factory):
    root = _assignment(tmp_path_factory.mktemp("dates"), "strings-dates", "a7v3_rubric.json")
    return check_assignment(load_assignment(root))


@pytest.mark.r
@pytest.mark.slow
def test_the_imported_joins_rubric_tells_the_key_from_the_template(joins_check):
    assert joins_check.executed, joins_check.not_executed
    assert joins_check.solution_percent >= SOLUTION_AT_LEAST, joins_check.lines()
    assert joins_check.template_percent <= TEMPLATE_AT_MOST, joins_check.lines()


@pytest.mark.r
@pytest.mark.slow
def test_the_imported_strings_and_dates_rubric_tells_the_key_from_the_template(dates_check):
    assert dates_check.executed, dates_check.not_executed
    assert dates_check.solution_percent >= SOLUTION_AT_LEAST, dates_check.lines()
    assert dates_check.template_percent <= TEMPLATE_AT_MOST, dates_check.lines()


def _notebook(cells: list) -> object:
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {
        "name": "ir", "language": "R", "display_name": "R"}})
    return load_notebook(nbformat.writes(nb).encode(), "nb.ipynb")


def test_a_level_the_key_meets_below_full_credit_is_dropped_and_said():
    old = {"assignment_info": {"title": "Dates", "total_points": 10},
           "autograder_checks": {"sections": {
               "part1_dates": {"name": "Part 1: Dates", "points": 6,
                               "variables": ["parsed"], "functions": ["parse_date_time"]},
               "part2_notes": {"name": "Part 2: Notes", "points": 4, "check_type": "markdown",
                               "min_words_per_question": 30}}},
           "partial_credit_rules": {"part1_dates": {
               "short": {"condition_type": "regex", "pattern": r"mdy_hm\s*\(",
                         "multiplier": 0.7, "priority": 1, "explanation": "mdy_hm only"},
               "full": {"condition_type": "regex", "pattern": "parse_date_time",
                        "multiplier": 1.0, "priority": 2, "explanation": "all formats"}}}}
    md = nbformat.v4.new_markdown_cell
    code = nbformat.v4.new_code_cell
    template = _notebook([md("## Part 1: Dates"), code("# parse the dates\n"),
                          md("## Part 2: Notes\nWhat did the dates show?")])
    solution = _notebook([md("## Part 1: Dates"), code("parsed <- mdy_hm(log$when)\n"),
                          md("## Part 2: Notes\nWhat did the dates show?\n\nMost sales "
                             "happen on Fridays.")])
    fitted = fit_import(import_seed_rubric(old), template, solution)
    dates = fitted.rubric.criterion("part1-dates")
    assert [lv.credit for lv in dates.levels] == [1.0]  # the 70% the key meets: dropped
    assert [ch.type for ch in dates.checks] == ["assigns"]  # parse_date_time: not called
    said = next(r for r in fitted.rows if r.item.startswith("the level 'mdy_hm only'"))
    assert "would lose points" in said.todo
    notes = fitted.rubric.criterion("part2-notes").checks[0]
    assert notes.question == "Part 2: Notes"
    assert notes.min_words == 5  # the key's own answer
