"""Layer 1 on notebooks built in the test: template-aware, evidence-carrying."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.analysis.template import match_template
from grader.assignment import Assignment
from grader.layers.base import AssignmentContext, GradeOptions, SubmissionContext
from grader.layers.structure import StructureLayer
from grader.notebooks.load import load_notebook
from grader.rubrics.schema import rubric_from_dict

RUBRIC = rubric_from_dict(
    {
        "schema_version": 1,
        "title": "Sales",
        "language": "python",
        "total_points": 10,
        "criteria": [
            {
                "id": "load",
                "title": "Load",
                "kind": "code",
                "points": 4,
                "checks": [
                    {"type": "assigns", "names": ["orders"], "weight": 0.5},
                    {"type": "calls", "functions": ["read_csv"], "weight": 0.5},
                ],
            },
            {
                "id": "total",
                "title": "Total",
                "kind": "code",
                "points": 2,
                "checks": [{"type": "output", "variable": "total", "weight": 1}],
            },
            {
                "id": "q1",
                "title": "Question 1",
                "kind": "written",
                "points": 4,
                "checks": [
                    {"type": "answer", "question": "Question 1", "min_words": 10, "weight": 1}
                ],
            },
        ],
    }
)

TEMPLATE = [
    new_markdown_cell("# Sales\n\n## Task 1\nLoad `data/orders.csv` into `orders`."),
    new_code_cell("import pandas as pd\n# YOUR CODE HERE"),
    new_markdown_cell("## Task 2\nCompute `total`, the sum of revenue."),
    new_code_cell("# YOUR CODE HERE"),
    new_code_cell("assert total > 0\nassert len(orders) == 3"),
    new_markdown_cell("## Question 1\nWhat did you find?"),
    new_markdown_cell("YOUR ANSWER HERE"),
]


def nb(cells: list, name: str = "sub.ipynb"):
    node = new_notebook(
        cells=cells,
        metadata={
            "kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}
        },
    )
    return load_notebook(nbformat.writes(node).encode(), name)


def run_l1(cells: list, solution: list | None = None):
    template = nb(TEMPLATE, "template.ipynb")
    sub = nb(cells)
    actx = AssignmentContext(
        Assignment("demo", None, RUBRIC, None, None, None),  # type: ignore[arg-type]
        template,
        template if solution is None else nb(solution, "solution.ipynb"),
        None,
    )
    match = match_template(template, sub, RUBRIC.all_placeholders)
    ctx = SubmissionContext(actx, sub, None, match, GradeOptions(execute=False))
    return StructureLayer().run(ctx), sub


def by_target(result, target):
    return next(c for c in result.checks if c.target == target)


def test_template_only_earns_nothing_and_is_flagged():
    result, _ = run_l1([c.copy() for c in TEMPLATE])
    assert all(c.score == 0 for c in result.checks)
    assert "template_only" in {f.code for f in result.flags}


def test_student_work_found_with_evidence_even_when_cells_move():
    cells = [c.copy() for c in TEMPLATE]
    cells[1] = new_code_cell("import pandas as pd\norders = pd.read_csv('data/orders.csv')")
    cells[3] = new_code_cell("total = orders['revenue'].sum()")
    cells[6] = new_markdown_cell(
        "Revenue is concentrated in two regions, and the West grew fastest over the year."
    )
    cells.insert(0, new_markdown_cell("Name: Jane Placeholder"))
    cells[2], cells[4] = cells[4], cells[2]  # reorder: task 2 code before task 1 code
    result, sub = run_l1(cells)
    load = by_target(result, "orders")
    assert load.score == 1
    ev = load.evidence[0]
    assert sub.cell(ev.cell_id) is not None
    assert ev.line == 2
    assert "read_csv" in ev.text
    assert by_target(result, "read_csv").score == 1
    q1 = by_target(result, "Question 1")
    assert q1.score == 1
    assert "14 words" in q1.message
    assert "template_only" not in {f.code for f in result.flags}


def test_names_in_comments_and_strings_do_not_count():
    cells = [c.copy() for c in TEMPLATE]
    cells[1] = new_code_cell(
        "import pandas as pd\n# orders = pd.read_csv('data/orders.csv')\nprint('orders = read_csv')"
    )
    result, _ = run_l1(cells)
    assert by_target(result, "orders").score == 0
    assert by_target(result, "read_csv").score == 0


def test_short_answer_gets_a_level_not_a_share_of_its_words():
    cells = [c.copy() for c in TEMPLATE]
    cells[6] = new_markdown_cell("YOUR ANSWER HERE West wins.")
    result, _ = run_l1(cells)
    q1 = by_target(result, "Question 1")
    # a placeholder plus 2 words of the 10 asked is not half an answer (issue 32): words
    # alone need a quarter of those asked
    assert q1.score == 0
    assert "too short for credit without a key point (at least 3 words)" in q1.message
    cells[6] = new_markdown_cell("YOUR ANSWER HERE The West wins.")  # 3 of 10: very brief
    q1 = by_target(run_l1(cells)[0], "Question 1")
    assert q1.score == pytest.approx(0.5)
    assert "below the 10 asked" in q1.message
    assert "very brief" in q1.message
    cells[6] = new_markdown_cell("The West region sells the most.")  # 6 of 10: brief
    q1 = by_target(run_l1(cells)[0], "Question 1")
    assert q1.score == pytest.approx(0.8)
    assert "level 80%: brief" in q1.message


def test_answer_written_into_the_question_cell_counts():
    cells = [c.copy() for c in TEMPLATE]
    cells[5] = new_markdown_cell(
        "## Question 1\nWhat did you find?\n\nThe West region "
        "sells the most and grows every single month here."
    )
    result, _ = run_l1(cells)
    assert by_target(result, "Question 1").score == 1


def test_edited_test_cell_is_flagged():
    cells = [c.copy() for c in TEMPLATE]
    cells[4] = new_code_cell("assert total > 0")
    result, _ = run_l1(cells)
    flags = {f.code: f for f in result.flags}
    assert "tests_modified" in flags
    assert "len(orders) == 3" in flags["tests_modified"].evidence[0].text


def test_hardcoded_output_is_flagged():
    cells = [c.copy() for c in TEMPLATE]
    cells[3] = new_code_cell("total = 1234.5")
    result, _ = run_l1(cells)
    assert result.details["hardcoded"] == ["total"]
    assert "hardcoded_output" in {f.code for f in result.flags}


def test_a_literal_the_solution_writes_too_is_not_hard_coding():
    cells = [c.copy() for c in TEMPLATE]
    cells[3] = new_code_cell("total = 1234.5")
    key = [c.copy() for c in TEMPLATE]
    key[3] = new_code_cell("total = 1234.5  # the figure the sales team gave us")
    result, _ = run_l1(cells, solution=key)
    assert result.details["hardcoded"] == []
    assert "hardcoded_output" not in {f.code for f in result.flags}
    key[3] = new_code_cell("total = 1000\ntotal = orders['revenue'].sum()")  # computed last
    result, _ = run_l1(cells, solution=key)
    assert result.details["hardcoded"] == ["total"]


def test_statement_begun_by_the_template_and_completed_by_the_student_counts():
    from grader.analysis.template import CellOrigin
    from grader.layers.structure import student_facts
    from grader.types import Cell

    source = 'feedback <-\n  read_csv("data/feedback.csv")\nsummary <- mutate(\n  x = 1)'
    cell = Cell("c1", 0, "code", source)
    only_line_2 = CellOrigin(cell, "modified", frozenset({2}))
    facts = student_facts(only_line_2, "r")
    assert {s.name for s in facts.assigned} == {"feedback"}
    assert "read_csv" in {s.name for s in facts.calls}
    assert "mutate" not in {s.name for s in facts.calls}  # that statement is all template


@pytest.mark.parametrize(("text", "expected"), [
    ("![tracker](http://192.0.2.1/pixel.png)", []),  # an image is not an answer
    ("See [the docs](https://pandas.pydata.org) **now**", ["See", "the", "docs", "now"]),
    ("It ![a chart](data:image/png;base64,AAAA) grows", ["It", "grows"]),
    ("<b>North</b> leads", ["North", "leads"]),
])
def test_words_of_an_answer_leave_markup_and_images_out(text, expected):
    from grader.analysis.answers import words

    assert words(text) == expected


def test_an_answer_ends_where_the_next_question_begins_in_the_students_cell():
    """Each question in its own cell, both answered in place: the first answer must not
    take in the second (the next cell keeps the next question's heading), while text a
    student typed above that heading still finishes the first answer."""
    from grader.analysis.answers import find_answer

    template = nb([new_markdown_cell("### Question 8.1: Quality\n\n**Why clean?**\n\n"
                                     "Your answer here:"),
                   new_markdown_cell("### Question 8.2: Patterns\n\n**What patterns?**\n\n"
                                     "Your answer here:")], "template.ipynb")
    sub = nb([new_markdown_cell("### Question 8.1: Quality\n\n**Why clean?**\n\n"
                                "Trimming merged duplicate categories in the product list."),
              new_markdown_cell("A second thought on cleaning here.\n\n"
                                "### Question 8.2: Patterns\n\n**What patterns?**\n\n"
                                "Wireless products are a fifth of the catalogue overall.")])
    match = match_template(template, sub, ("Your answer here:",))
    questions = ("Question 8.1", "Question 8.2")
    first = find_answer(match, "Question 8.1", ("Your answer here:",), questions)
    second = find_answer(match, "Question 8.2", ("Your answer here:",), questions)
    assert "Trimming merged" in first.text
    assert "second thought" in first.text
    assert "Wireless" not in first.text
    assert "Wireless" in second.text
    assert "Trimming" not in second.text
    assert "second thought" not in second.text  # above its question: the answer before


@pytest.mark.parametrize(("code", "points"), [
    ("# I found that the West earns the most revenue of all regions in the year", 1.0),
    ("# total = orders['revenue'].sum()\n# orders.groupby('region').sum()", 0.0),
])
def test_layer_1_counts_an_answer_written_as_comments_in_a_code_cell(code, points):
    """The student deleted the answer cell and wrote the answer as comments in a code
    cell under the question: prose comments earn the answer's points, commented-out
    code earns none."""
    cells = [c.copy() for c in TEMPLATE[:6]] + [new_code_cell(code)]
    result, sub = run_l1(cells)
    q1 = by_target(result, "Question 1")
    assert q1.score == points
    if points:
        assert q1.evidence[0].cell_id == sub.cells[6].id
        assert q1.evidence[0].line == 1


def test_a_function_whose_def_line_the_template_gives_is_the_students_once_the_body_is():
    from grader.layers.structure import student_facts

    header = "def clean(values):\n    # YOUR CODE HERE\n    raise NotImplementedError()"
    template = nb([new_markdown_cell("## Task 1"), new_code_cell(header)], "t.ipynb")

    def facts(source: str):
        sub = nb([new_markdown_cell("## Task 1"), new_code_cell(source)])
        (origin,) = [o for o in match_template(template, sub, ()).origins
                     if o.cell.kind == "code"]
        return origin, student_facts(origin, "python")

    origin, done = facts("def clean(values):\n    kept = [v for v in values if v]\n"
                         "    return sorted(kept)")
    assert {s.name for s in done.assigned} >= {"clean", "kept"}
    assert "sorted" in {s.name for s in done.calls}
    assert origin.student_lines  # the body is the student's code
    _, untouched = facts(header)
    assert not untouched.assigned  # the template's own stub earns nothing
