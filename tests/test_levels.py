"""Partial credit as rubrics write it: levels by approach, key points, the student's own
documentation and run (issue 19, items 2 and 3), through layer 1 and scoring."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from grader.analysis.template import match_template
from grader.assignment import Assignment
from grader.errors import RubricError
from grader.layers.base import AssignmentContext, GradeOptions, SubmissionContext
from grader.layers.structure import StructureLayer
from grader.letters.build import build_letter
from grader.letters.render import letter_markdown
from grader.notebooks.load import load_notebook
from grader.rubrics.levels import numbers_in, parse_key_points, points_found
from grader.rubrics.schema import dumps, loads, rubric_from_dict
from grader.scoring import build_report, score_criteria
from grader.types import LayerResult

KEY_POINTS = [
    {"point": "names the leading region", "terms": ["west", "western region"]},
    {"point": "says how revenue moved", "terms": ["grew", "growth", "increased", "rose"]},
    {"point": "cites a result of the analysis", "computed": True},
]
RUBRIC_DICT = {
    "schema_version": 2, "title": "Sales", "language": "python", "total_points": 20,
    "criteria": [
        {"id": "dates", "title": "Dates", "kind": "code", "points": 10,
         "checks": [{"type": "calls", "functions": ["to_datetime"]}],
         "levels": [
             {"credit": 1.0, "says": "Parses every date format.",
              "when": [{"type": "code", "pattern": "format=[\"'](mixed|ISO8601)[\"']"}]},
             {"credit": 0.85, "says": "Parses the dates one format at a time.",
              "when": [{"type": "code", "pattern": "format=[\"']([^\"']+)[\"']",
                        "min_count": 2, "distinct": True}]},
             {"credit": 0.5, "says": "Parses one format only.",
              "when": [{"type": "calls", "functions": ["to_datetime"]},
                       {"type": "code", "pattern": "errors=[\"']coerce", "absent": True}]},
         ]},
        {"id": "notes", "title": "Communication", "kind": "code", "points": 4,
         "checks": [{"type": "documented", "weight": 0.5}, {"type": "ran", "weight": 0.5}]},
        {"id": "q1", "title": "Question 1", "kind": "written", "points": 6,
         "checks": [{"type": "answer", "question": "YOUR OBSERVATIONS", "min_words": 25,
                     "key_points": KEY_POINTS}]},
    ],
}
RUBRIC = rubric_from_dict(RUBRIC_DICT)
TEMPLATE = [
    new_markdown_cell("# Sales\n\n## Task 1\nParse the dates in `orders.date`."),
    new_code_cell("import pandas as pd\norders = pd.DataFrame({'date': ['2024-01-02']})\n"
                  "# YOUR CODE HERE"),
    new_code_cell("**YOUR OBSERVATIONS:** Which region leads, and how did revenue move?"),
]


def nb(cells: list, name: str = "sub.ipynb"):
    node = new_notebook(cells=cells, metadata={"kernelspec": {
        "name": "python3", "language": "python", "display_name": "Python 3"}})
    return load_notebook(nbformat.writes(node).encode(), name)


def grade_l1(cells: list, given: list | None = None):
    template = nb(TEMPLATE if given is None else given, "template.ipynb")
    sub = nb(cells)
    actx = AssignmentContext(Assignment("demo", None, RUBRIC, None, None, None),  # type: ignore[arg-type]
                             template, template, None)
    match = match_template(template, sub, RUBRIC.all_placeholders)
    l1 = StructureLayer().run(SubmissionContext(actx, sub, None, match,
                                                GradeOptions(execute=False)))
    return l1, {c.id: c for c in score_criteria(RUBRIC, {"L1": l1})}


def code(source: str, *, count: int | None = 1, printed: str = "", error: str = ""):
    cell = new_code_cell(source, execution_count=count)
    if printed:
        cell.outputs = [new_output("stream", name="stdout", text=printed)]
    if error:
        cell.outputs = [new_output("error", ename="ValueError", evalue=error, traceback=[])]
    return cell


SETUP = "import pandas as pd\norders = pd.DataFrame({'date': ['2024-01-02']})\nx = 1"


def submission(dates: str, answer: str = "", *, ran: bool = True, noted: bool = True):
    count = 1 if ran else None
    setup = ("import pandas as pd\norders = pd.DataFrame({'date': ['2024-01-02']})\n"
             + ("# parse the dates so that months can be compared\n" if noted else "")
             + dates)
    cells = [TEMPLATE[0].copy(), code(setup, count=count,
                                      printed="West revenue 1,523.40\n" if ran else "")]
    ask = "**YOUR OBSERVATIONS:** Which region leads, and how did revenue move?"
    cells.append(new_code_cell(f"{ask}\n{answer}" if answer else ask))
    return cells


def test_the_first_level_that_holds_gives_its_credit():
    _, crits = grade_l1(submission("orders['d'] = pd.to_datetime(orders.date, format='mixed')"))
    assert crits["dates"].points == 10
    assert crits["dates"].checks[-1].message == "Parses every date format."
    two = ("a = pd.to_datetime(orders.date, format='%Y-%m-%d', errors='coerce')\n"
           "b = pd.to_datetime(orders.date, format='%m/%d/%Y', errors='coerce')")
    _, crits = grade_l1(submission(two))
    assert crits["dates"].points == pytest.approx(8.5)  # the alternative, 0.85
    _, crits = grade_l1(submission("orders['d'] = pd.to_datetime(orders.date)"))
    assert crits["dates"].points == 5  # one format, nothing coerced
    # no level holds (errors='coerce' rules out the last): the weighted checks stand
    _, crits = grade_l1(submission("d = pd.to_datetime(orders.date, errors='coerce')"))
    assert crits["dates"].points == 10 * 1.0  # falls back to the calls check
    assert "none of the rubric's levels is met" in crits["dates"].checks[-1].message


def test_template_code_never_meets_a_level():
    _, crits = grade_l1([c.copy() for c in TEMPLATE])
    assert crits["dates"].points == 0
    assert all(c.points == 0 for c in crits.values())


def test_answer_levels_by_key_points_never_by_word_share():
    full = ("The West leads every month and revenue grew steadily through the year, "
            "reaching 1523.40 for the West alone, which is far above the other regions "
            "and shows that the growth was not a one-off spike in a single month at all.")
    _, crits = grade_l1(submission("x = 1", full))
    assert crits["q1"].points == 6
    brief = "The West leads; revenue grew to 1523.4."
    l1, crits = grade_l1(submission("x = 1", brief))
    assert crits["q1"].points == pytest.approx(6 * 0.8)  # brief but complete
    q1 = next(c for c in l1.checks if c.check == "answer")
    assert "key points 3 of 3" in q1.message
    assert "brief but complete" in q1.message
    some = "The West region leads the table in every month we looked at, by some way."
    l1, crits = grade_l1(submission("x = 1", some))
    q1 = next(c for c in l1.checks if c.check == "answer")
    assert "missing: says how revenue moved; cites a result of the analysis" in q1.message
    assert crits["q1"].points == pytest.approx(6 * 0.25)  # 1 of 3
    # a number the student's code never printed is no citation
    made_up = "The West leads; revenue grew to 9999."
    _, crits = grade_l1(submission("x = 1", made_up))
    assert crits["q1"].points == pytest.approx(6 * 0.5)  # 2 of 3 (67% >= 50%)


def test_the_questions_words_never_supply_a_key_point():
    # "revenue move" is in the question; "West" is not: only what the student adds counts
    l1, _ = grade_l1(submission("x = 1", "I am not sure what to say here at all."))
    q1 = next(c for c in l1.checks if c.check == "answer")
    assert "key points 0 of 3" in q1.message


def test_documented_and_ran_read_the_students_own_work():
    l1, crits = grade_l1(submission("d = pd.to_datetime(orders.date, format='mixed')"))
    by = {c.check: c for c in l1.checks}
    assert by["documented"].score == 1
    assert by["ran"].score == 1
    l1, crits = grade_l1(submission("d = pd.to_datetime(orders.date, format='mixed')",
                                    ran=False, noted=False))
    by = {c.check: c for c in l1.checks}
    assert by["ran"].score == 0
    assert "never run: cell 2" in by["ran"].message
    assert by["documented"].score == 0
    assert crits["notes"].points == 0


def test_a_stored_error_is_not_a_run():
    cells = submission("d = pd.to_datetime(orders.date, format='mixed')")
    cells[1] = code(cells[1].source, error="time data '13/01/2024' does not match")
    l1, _ = grade_l1(cells)
    ran = next(c for c in l1.checks if c.check == "ran")
    assert ran.score == 0
    assert "failed when the student ran them: cell 2" in ran.message


def test_the_letter_names_the_level_the_points_and_the_missing_key_points():
    two = ("a = pd.to_datetime(orders.date, format='%Y-%m-%d', errors='coerce')\n"
           "b = pd.to_datetime(orders.date, format='%m/%d/%Y', errors='coerce')")
    l1, _crits = grade_l1(submission(two, "The West region leads the table in every month.",
                                    ran=False))
    sub = nb(submission(two))
    report = build_report(RUBRIC, sub.name, sub.sha256, "demo", {"L1": l1})
    text = letter_markdown(build_letter(report, RUBRIC, sub))
    assert ("Your approach earns 85% of this part's points: Parses the dates one format at "
            "a time.") in text
    assert "For full credit: Parses every date format." in text
    assert "Key points a complete answer also makes: says how revenue moved" in text
    assert "None of your code cells had been run when you submitted." in text
    assert "Restart the kernel and run all cells" in text


def test_key_points_terms_numbers_and_citations():
    kps = parse_key_points([{"point": "a", "terms": ["left join"]},
                            {"point": "b", "number": 40, "rtol": 0.05},
                            {"point": "c", "computed": True}], "kp", [])
    assert points_found(kps, "A Left-Join keeps 41% of rows; 0.46 of them", [0.4567]) == [
        True, True, True]
    assert points_found(kps, "leftjoin keeps 30 rows; 3 tables", [3.0]) == [False, False, False]
    assert numbers_in("1,523.40 and -3 and 40%") == [1523.4, -3.0, 40.0]


def test_the_schema_round_trips_and_names_each_problem():
    assert loads(dumps(RUBRIC)) == RUBRIC
    assert "levels" in RUBRIC.version_2_features()
    bad = {**RUBRIC_DICT, "criteria": [
        {"id": "x", "title": "X", "kind": "code", "points": 20, "levels": [
            {"credit": 1.5, "when": [{"type": "code"}], "colour": "red"},
            {"credit": 0.5, "when": [{"type": "answer", "question": "Q"}]}]}]}
    with pytest.raises(RubricError) as err:
        rubric_from_dict(bad)
    text = "\n".join(err.value.problems)
    assert "level 1.credit: expected a fraction of the points in [0, 1]" in text
    assert "a code check needs `pattern`" in text
    assert "unknown field 'colour'" in text
    assert "unknown check type 'answer' for a code criterion" in text
    wrong = {**RUBRIC_DICT, "criteria": [
        {"id": "x", "title": "X", "kind": "code", "points": 20,
         "checks": [{"type": "calls", "functions": ["f"], "key_points": KEY_POINTS}]}]}
    with pytest.raises(RubricError, match=r"key_points and levels .* belong to answer checks"):
        rubric_from_dict(wrong)


def _judged(answer: str, points_met: list[str], advisory: bool = False):
    l1, _ = grade_l1(submission("x = 1", answer))
    l4 = LayerResult("L4", details={"advisory": advisory, "output": {"q1": {
        "score": 0.9, "strength": "ok", "improve": "ok", "next_step": "ok",
        "points_met": points_met}}})
    sub = nb(submission("x = 1", answer))
    report = build_report(RUBRIC, sub.name, sub.sha256, "demo", {"L1": l1, "L4": l4})
    return next(c for c in report.criteria if c.id == "q1")


def test_a_judging_model_may_credit_key_points_in_other_words_and_is_reviewed():
    said = "The West is ahead; sales went up to 1523.40 over the months we studied."
    q1 = _judged(said, [p["point"] for p in KEY_POINTS])
    # the terms find 2 of 3 ("went up" is not a term): 0.5; the model sees all 3: 0.8
    assert q1.points == pytest.approx(6 * 0.8)
    assert q1.needs_review
    assert "found key points the rubric's terms did not (says how revenue moved)" in \
        " ".join(q1.review_reasons)
    # advisory models change nothing; a model denying a point the words name is reviewed
    assert _judged(said, [p["point"] for p in KEY_POINTS], advisory=True).points == \
        pytest.approx(6 * 0.5)
    denied = _judged(said, [])
    assert denied.points <= 6 * 0.5
    assert any("misses names the leading region" in r for r in denied.review_reasons)


HEADED = [*TEMPLATE[:2], new_markdown_cell("## Part 3: Your observations"), TEMPLATE[2]]
ANSWER = "The West leads and revenue grew to 1523.40 over the months we looked at."


@pytest.mark.parametrize("where", ["markdown below", "comments in the cell"])
def test_a_code_cell_that_asks_wins_over_a_heading_that_names_the_question(where):
    # the heading holds the question's words; the code cell's line starts with them
    cells = [c.copy() for c in HEADED]
    cells[1] = code(SETUP, printed="West revenue 1,523.40\n")
    if where == "markdown below":
        cells.append(new_markdown_cell(ANSWER))
    else:  # typed as comments under the question, in the template's code cell
        cells[3] = new_code_cell(f"{TEMPLATE[2].source}\n# {ANSWER}")
    l1, _ = grade_l1(cells, HEADED)
    q1 = next(c for c in l1.checks if c.check == "answer")
    assert q1.message.startswith("answered with 15 words")
    assert "key points 3 of 3" in q1.message


def test_absent_reads_the_template_lines_left_in_place_and_needs_the_students_code():
    from grader.layers.student_work import score_code
    from grader.rubrics.check_fields import Check
    given = Check("code", pattern=r"pd\.DataFrame", absent=True)  # the template's given line
    template = nb(TEMPLATE, "template.ipynb")
    crit = RUBRIC.criteria[0]
    untouched = match_template(template, nb([c.copy() for c in TEMPLATE]), ())
    assert score_code(crit, given, untouched, "python", []).score == 0  # no code of theirs
    kept = match_template(template, nb(submission("d = pd.to_datetime(orders.date)")), ())
    res = score_code(crit, given, kept, "python", [])
    assert res.score == 0
    assert "has 'pd.DataFrame'" in res.message
    other = Check("code", pattern=r"read_excel", absent=True)
    assert score_code(crit, other, kept, "python", []).score == 1


def test_a_manual_criterion_earns_nothing_automatically_and_is_for_you_to_grade():
    data = {**RUBRIC_DICT, "total_points": 24, "criteria": [
        *RUBRIC_DICT["criteria"],
        {"id": "part-e", "title": "Part E", "kind": "written", "points": 4, "manual": True}]}
    rubric = rubric_from_dict(data)
    assert loads(dumps(rubric)) == rubric
    assert "manual criteria" in rubric.version_2_features()
    sub = nb(submission("d = pd.to_datetime(orders.date, format='mixed')", ANSWER))
    l1, _ = grade_l1(submission("d = pd.to_datetime(orders.date, format='mixed')", ANSWER))
    l4 = LayerResult("L4", details={"advisory": False, "output": {"part-e": {
        "score": 1.0, "strength": "ok", "improve": "ok", "next_step": "ok"}}})
    report = build_report(rubric, sub.name, sub.sha256, "demo", {"L1": l1, "L4": l4})
    part_e = next(c for c in report.criteria if c.id == "part-e")
    assert part_e.points == 0  # no model, no check moves it: the instructor grades it
    assert part_e.needs_review
    assert part_e.review_reasons[0].startswith("for you to grade: Part E (4 points)")
    text = letter_markdown(build_letter(report, rubric, sub))
    assert "## Part E — graded by your instructor (4 points)" in text
    assert "Your instructor grades this part by hand" in text


def test_the_self_check_counts_a_criterion_scored_by_its_level_once():
    from grader.service.selfcheck_parts import unverified
    from grader.types import CheckResult, CriterionResult, GradeReport
    leveled = CriterionResult("dates", "Dates", "code", 10, 8.5, [
        CheckResult("dates", "calls", "to_datetime", 1.0, 1.0, "L1", "1 of 1 called"),
        CheckResult("dates", "level", "level 2", 0.85, 1.0, "L1", "one format at a time")])
    env = CriterionResult("total", "Total", "code", 10, 0.0, [
        CheckResult("total", "value", "total", 0.0, 1.0, "L2", "the key fails it too",
                    status="environment")])
    report = GradeReport("s.ipynb", "x", "demo", "v", "graded", 8.5, 20, criteria=[leveled, env])
    got = unverified(report, ["missing_data"])
    assert got.points == 10
    assert got.earned == 8.5  # the level's points, not the level and its checks added up
