"""Questions and answers anywhere: a template that puts a question's text in a code cell.

Measured on a real R course: the template's cell held "**YOUR OBSERVATIONS:**" as plain
markdown inside an R code cell, students typed their answer there as plain text, and the
answer check said "question not found" (14 of 25 notebooks lost 3 points each) while the
same answer in a cell turned into markdown was found. Assignments are built here (template,
solution, submissions with nbformat, a rubric with an answer check and a ``runs`` check)
and graded by the real grader, from the notebooks' text and, where a run matters, really
executed, in Python and in R.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

from grader.analysis.answers import find_answer
from grader.analysis.prose_cells import prose_cell
from grader.analysis.template import match_template
from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.notebooks.load import load_notebook
from grader.pipeline import GradeInput, Grader
from grader.sandbox.execution import kernel_available, sandbox_available

KERNELS = {
    "python": {"name": "python3", "language": "python", "display_name": "Python 3"},
    "r": {"name": "ir", "language": "R", "display_name": "R"},
}
ASK = "**YOUR OBSERVATIONS:**"
ANSWER = "Sales rise every month in the West."  # 7 words; the rubric asks for 10
CODE = {"python": "total = 3 + 4", "r": "total <- 3 + 4"}
BROKEN = {"python": "total = (3 +", "r": "total <- (3 +"}
ERROR = {"python": ("SyntaxError", "invalid syntax"), "r": ("Error", "unexpected symbol")}


def template_cells(lang: str) -> list:
    return [new_markdown_cell("# Sales\n## Task 1\nCompute `total`."),
            new_code_cell("# YOUR CODE HERE"),
            new_markdown_cell("## Question 1\nWhat trend do you see?"),
            new_code_cell(ASK)]


def student(lang: str, answer_cell, code: str | None = None, ran: bool = False) -> list:
    cells = template_cells(lang)
    cells[1] = new_code_cell(code or CODE[lang], execution_count=1 if ran else None)
    cells[3] = answer_cell
    return cells


def write_assignment(root: Path, lang: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    solution = student(lang, new_code_cell(f"{ASK}\nSales rise in every month of the year, "
                                           "most of all in the West."))
    for name, cells in (("template.ipynb", template_cells(lang)), ("solution.ipynb", solution)):
        nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": KERNELS[lang]}),
                       root / name)
    (root / "data").mkdir(exist_ok=True)
    (root / "data" / "given.csv").write_text("a\n1\n", encoding="utf-8")
    criteria = [
        {"id": "total", "title": "Total", "kind": "code", "points": 4, "checks": [
            {"type": "assigns", "names": ["total"], "weight": 0.5},
            {"type": "runs", "weight": 0.5}]},
        {"id": "obs", "title": "Observations", "kind": "written", "points": 3, "checks": [
            {"type": "answer", "question": "YOUR OBSERVATIONS", "min_words": 10,
             "weight": 1}]},
    ]
    (root / "rubric.json").write_text(json.dumps({
        "schema_version": 2, "title": "Sales", "language": lang, "total_points": 7,
        "criteria": criteria}), encoding="utf-8")
    (root / "assignment.toml").write_text(
        'rubric = "rubric.json"\ntemplate = "template.ipynb"\nsolution = "solution.ipynb"\n'
        'data = ["data"]\n', encoding="utf-8")
    return root


def grade(grader: Grader, cells: list, lang: str, name: str = "sub.ipynb"):
    node = new_notebook(cells=cells, metadata={"kernelspec": KERNELS[lang]})
    return grader.grade(GradeInput(name, nbformat.writes(node).encode()))


def check(report, kind: str):
    return next(c for crit in report.criteria for c in crit.checks if c.check == kind)


@pytest.fixture(scope="module", params=["python", "r"])
def lang_grader(request, tmp_path_factory) -> tuple[str, Grader]:
    root = write_assignment(tmp_path_factory.mktemp(f"obs-{request.param}"), request.param)
    return request.param, Grader(load_assignment(root), GradeOptions(execute=False))


# --- the answer, wherever the student left the template's code cell


def test_an_answer_typed_into_the_code_cell_scores_like_the_same_answer_in_markdown(lang_grader):
    lang, grader = lang_grader
    kept_code = check(grade(grader, student(lang, new_code_cell(f"{ASK}\n{ANSWER}")), lang),
                      "answer")
    markdown = check(grade(grader, student(lang, new_markdown_cell(f"{ASK}\n{ANSWER}")), lang),
                     "answer")
    raw = check(grade(grader, student(lang, new_raw_cell(f"{ASK}\n{ANSWER}")), lang), "answer")
    assert "not found" not in kept_code.message
    assert (kept_code.score, kept_code.message) == (markdown.score, markdown.message)
    assert (raw.score, raw.message) == (markdown.score, markdown.message)
    # the template's "YOUR OBSERVATIONS" is not the answer: 7 of the 10 words asked for
    assert "answered with 7 words" in kept_code.message
    assert kept_code.message.startswith("answered with 7 words")
    assert ANSWER in " ".join(e.text for e in kept_code.evidence)


def test_the_templates_text_on_the_answers_own_line_is_not_counted(lang_grader):
    lang, grader = lang_grader
    same_line = check(grade(grader, student(lang, new_code_cell(f"{ASK} {ANSWER}")), lang),
                      "answer")
    assert "answered with 7 words" in same_line.message
    assert same_line.message.startswith("answered with 7 words")


def test_an_empty_answer_still_scores_0_and_is_not_reported_missing(lang_grader):
    lang, grader = lang_grader
    empty = check(grade(grader, student(lang, new_code_cell(ASK)), lang), "answer")
    assert empty.score == 0
    assert empty.message.startswith("unanswered")
    below = check(grade(grader, [*student(lang, new_code_cell(ASK)),
                                 new_markdown_cell(ANSWER)], lang), "answer")
    assert "answered with 7 words" in below.message  # an answer in a cell below, as before


def test_a_prose_cell_is_not_a_failing_cell_nor_code_of_the_students(lang_grader):
    lang, grader = lang_grader
    error = new_output("error", ename=ERROR[lang][0], evalue=ERROR[lang][1], traceback=[])
    answered = new_code_cell(f"{ASK}\n{ANSWER}", execution_count=2, outputs=[error])
    report = grade(grader, student(lang, answered, ran=True), lang)
    runs = check(report, "runs")
    assert (runs.score, runs.message) == (1.0, "the student's 1 code cells ran with 0 errors "
                                                "(stored outputs)")
    assert "syntax_error" not in {f.code for f in report.flags}
    # a real slip in code is still charged
    broken = student(lang, answered, code=BROKEN[lang], ran=True)
    broken[1].outputs = [error]
    slipped = grade(grader, broken, lang)
    assert check(slipped, "runs").score == 0
    assert "syntax_error" in {f.code for f in slipped.flags}
    # prose alone is not code of the student's own: nothing to run
    only_prose = student(lang, answered)
    only_prose[1] = new_code_cell("# YOUR CODE HERE")
    alone = grade(grader, only_prose, lang)
    assert check(alone, "runs").message == "no code of the student's own to run"
    assert "answered with 7 words" in check(alone, "answer").message


# --- where else a template puts a question in a code cell


def _answer(template: list, cells: list, question: str, lang: str):
    def nb(c: list, name: str):
        node = new_notebook(cells=c, metadata={"kernelspec": KERNELS[lang]})
        return load_notebook(nbformat.writes(node).encode(), name)
    tmpl = nb(template, "template.ipynb")
    match = match_template(tmpl, nb(cells, "sub.ipynb"), ("YOUR ANSWER HERE",))
    return find_answer(match, question, ("YOUR ANSWER HERE",), [question], template=tmpl)


@pytest.mark.parametrize("lang", ["python", "r"])
@pytest.mark.parametrize("asked", [
    "# Q2: Why do sales rise in December?",
    {"python": 'print("Q2: Why do sales rise in December?")',
     "r": 'cat("Q2: Why do sales rise in December?")'},
    "Q2: Why do sales rise in December?",
])
def test_a_question_in_a_comment_a_string_or_plain_text_takes_the_text_typed_under_it(
        lang, asked):
    ask = asked[lang] if isinstance(asked, dict) else asked
    template = [new_markdown_cell("# Sales"), new_code_cell(ask)]
    typed = _answer(template, [template[0], new_code_cell(f"{ask}\n{ANSWER}")],
                    "Why do sales rise in December?", lang)
    assert typed.located
    assert typed.word_count == 7
    assert typed.text == ANSWER
    untouched = _answer(template, template, "Why do sales rise in December?", lang)
    assert (untouched.located, untouched.word_count) == (True, 0)


@pytest.mark.parametrize("lang", ["python", "r"])
def test_a_markdown_question_the_student_turned_into_code_is_still_found(lang):
    template = [new_markdown_cell("## Question 1\nWhat trend do you see?"),
                new_markdown_cell("YOUR ANSWER HERE")]
    cells = [new_code_cell(f"## Question 1\nWhat trend do you see?\n{ANSWER}")]
    found = _answer(template, cells, "What trend do you see?", lang)
    assert (found.located, found.word_count) == (True, 7)


@pytest.mark.parametrize("lang", ["python", "r"])
@pytest.mark.parametrize(("source", "prose"), [
    (f"{ASK}\n{ANSWER}", True),
    (f"{ASK} {ANSWER}", True),
    ("It's clear that the West leads.\nYes.", True),
    ("# Q2: Why?\nBecause the holidays bring many more shoppers.", True),
    (ASK, True),
    ("ggplot(df aes(x))", False),  # a slip in code stays code
    ("x = 5 y = 6", False),
    ('plot(df) title("Sales by region over time")', False),
    ("The West leads all regions\ntotal = 3 + 4", False),  # prose and a line of code
    ("# The West leads all regions", False),  # a comment parses: code cell as before
    ("Mean sales: 42.5", False),  # no sentence to tell it from code
])
def test_which_code_cells_hold_only_prose(lang, source, prose):
    assert prose_cell(source, lang) is prose


# --- really executed: the run of a cell of prose fails, and is nobody's error

needs_run = pytest.mark.skipif(not sandbox_available(), reason="bubblewrap cannot run here")


@pytest.mark.slow
@needs_run
@pytest.mark.parametrize("lang", ["python", pytest.param("r", marks=pytest.mark.r)])
def test_a_prose_cell_does_not_fail_the_runs_check_when_executed(lang, tmp_path):
    if not kernel_available(lang):
        pytest.skip(f"no {lang} kernel")
    root = write_assignment(tmp_path / "a", lang)
    grader = Grader(load_assignment(root), GradeOptions(execute=True, cell_timeout_s=60,
                                                        total_timeout_s=180))
    answered = grade(grader, student(lang, new_code_cell(f"{ASK}\n{ANSWER}")), lang)
    runs = check(answered, "runs")
    assert (runs.score, runs.message) == (1.0, "the student's 1 code cells ran with 0 errors "
                                                "(fresh run)")
    assert "answered with 7 words" in check(answered, "answer").message
    slipped = grade(grader, student(lang, new_code_cell(f"{ASK}\n{ANSWER}"),
                                    code=BROKEN[lang]), lang)
    assert check(slipped, "runs").score == 0
    assert "fresh run" in check(slipped, "runs").message
