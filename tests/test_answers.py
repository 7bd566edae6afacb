"""Written answers wherever students write them: code cells (comments and strings, in
Python and R) and cells that hold several questions' answers, split at their labels."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.analysis.answer_labels import parse_label, question_label
from grader.analysis.answers import find_answer, words
from grader.analysis.code_prose import looks_like_code, prose_lines, reads_as_prose
from grader.analysis.template import match_template
from grader.notebooks.load import load_notebook

PH = ("YOUR ANSWER HERE", "YOUR CODE HERE")
KERNELS = {
    "python": {"name": "python3", "language": "python", "display_name": "Python 3"},
    "r": {"name": "ir", "language": "R", "display_name": "R"},
}


def nb(cells: list, lang: str = "python", name: str = "sub.ipynb"):
    node = new_notebook(cells=cells, metadata={"kernelspec": KERNELS[lang]})
    return load_notebook(nbformat.writes(node).encode(), name)


def answers(template_cells: list, student_cells: list, questions: list[str],
            lang: str = "python", with_template: bool = True) -> dict:
    template = nb(template_cells, lang, "template.ipynb")
    sub = nb(student_cells, lang)
    assert sub.language == lang
    match = match_template(template, sub, PH)
    kw = {"template": template} if with_template else {}
    return {q: find_answer(match, q, PH, questions, **kw) for q in questions}


def one_code_cell(code: str, lang: str, with_template: bool = True):
    """Question 1 answered in the code cell under it; Question 2 comes next."""
    t = [new_markdown_cell("## Question 1\nWhat does the chart show?"),
         new_code_cell("# YOUR CODE HERE"),
         new_markdown_cell("## Question 2\nWhy?"), new_markdown_cell("YOUR ANSWER HERE")]
    s = [t[0], new_code_cell(code), t[2], new_markdown_cell("Because of the holidays.")]
    return answers(t, s, ["Question 1", "Question 2"], lang, with_template)


# --- answers in code cells: comments


@pytest.mark.parametrize("lang", ["python", "r"])
@pytest.mark.parametrize(("comment", "counted"), [
    ("# The West sells most because tourists shop there", True),
    ("# Answer: the West", True),
    ("# it's clearly the West, by a wide margin", True),
    ("# Sales grew 20% in May", True),
    ("# summary(sales)", False),
    ("# df %>% count(region)", False),
    ("# x <- mean(sales$total)", False),
    ("# df = pd.read_csv('data/orders.csv')", False),
    ("# for i in range(3):", False),
    ("#> [1] 300 rows", False),  # pasted output
    ("#| echo: false", False),  # a chunk option
    ("# summary", False),  # a lone word: commented-out code, not a sentence
])
def test_a_comment_counts_when_it_is_prose_not_code(lang, comment, counted):
    first = one_code_cell(f"x = 1\n{comment}\ny = 2", lang)["Question 1"]
    assert first.answered is counted, first
    if counted:
        assert first.word_count == len(words(comment))
        assert first.evidence[0].line == 2  # the comment's line


@pytest.mark.parametrize("lang", ["python", "r"])
def test_a_lone_word_finishes_a_sentence_and_trailing_comments_count(lang):
    code = "# The chart shows revenue rising\n# steadily\nx = 1  # mostly in winter"
    first = one_code_cell(code, lang)["Question 1"]
    assert first.word_count == 5 + 1 + 3
    assert "steadily" in first.text
    assert "mostly in winter" in first.text


def test_the_templates_comments_never_count_the_students_do():
    t = [new_markdown_cell("## Question 1\nWhat do you see? Comment below."),
         new_code_cell("# Write your observations below, as comments\n"),
         new_markdown_cell("## Question 2\nWhy?")]
    s = [t[0], new_code_cell("# Write your observations below, as comments\n"
                             "x <- table(sales$region)\n# The West leads every month"), t[2]]
    first = answers(t, s, ["Question 1", "Question 2"], "r")["Question 1"]
    assert first.word_count == 5, first.text
    assert "observations" not in first.text


def test_without_the_template_the_comments_of_cells_the_match_paired_stay_the_templates():
    t = [new_markdown_cell("## Question 1\nWhat do you see?"),
         new_code_cell("# Given: the totals by region\ntotals = df.groupby('region').sum()"),
         new_markdown_cell("## Question 2\nWhy?")]
    s = [t[0], new_code_cell("# Given: the totals by region\n"
                             "totals = df.groupby('region').sum()\n# The West leads by far"), t[2]]
    first = answers(t, s, ["Question 1", "Question 2"], with_template=False)["Question 1"]
    assert first.text == "# The West leads by far"


@pytest.mark.parametrize("lang", ["python", "r"])
def test_comments_after_the_templates_next_instruction_do_not_count(lang):
    t = [new_markdown_cell("## Question 1\nWhy?"), new_markdown_cell("YOUR ANSWER HERE"),
         new_markdown_cell("## Task 2\nCompute the totals."), new_code_cell("# YOUR CODE HERE")]
    s = [t[0], new_markdown_cell("Tourists shop in the West."), t[2],
         new_code_cell("# This sums revenue by region for the table\ntotals = 1")]
    first = answers(t, s, ["Question 1"], lang)["Question 1"]
    assert first.word_count == 5
    assert "sums revenue" not in first.text


def test_a_given_code_cell_the_student_commented_gives_its_comments_then_ends():
    t = [new_markdown_cell("## Question 1\nWhat do you see? Comment in the cell below."),
         new_code_cell("totals = df.groupby('region').sum()\ntotals"),
         new_markdown_cell("Notes for later"), new_markdown_cell("## Question 2\nWhy?")]
    s = [t[0], new_code_cell("totals = df.groupby('region').sum()\ntotals\n"
                             "# The West is far ahead of the others"),
         new_markdown_cell("A stray note after the given cell."), t[3]]
    first = answers(t, s, ["Question 1", "Question 2"])["Question 1"]
    assert first.text == "# The West is far ahead of the others"
    assert first.word_count == 8


def test_the_next_tasks_given_cell_after_an_answer_gives_nothing():
    t = [new_markdown_cell("## Question 1\nWhy?"), new_markdown_cell("YOUR ANSWER HERE"),
         new_code_cell("# Task 2: totals\ntotals = df.sum()")]
    s = [t[0], new_markdown_cell("Tourists shop in the West."),
         new_code_cell("# Task 2: totals\ntotals = df.sum()\n# I sum every column of the frame")]
    first = answers(t, s, ["Question 1"])["Question 1"]
    assert first.text == "Tourists shop in the West."


# --- answers in code cells: strings


@pytest.mark.parametrize(("lang", "line", "counted"), [
    ("python", 'print("The West sells the most by far")', True),
    ("python", 'print(f"The West sells {pct:.0f}% more than the East")', True),
    ("python", '"""The chart shows a steady rise\nuntil the holidays."""', True),
    ("python", 'q1_answer = "Holiday shoppers buy the most gifts"', True),
    ("python", 'display(Markdown("The trend rises in winter months"))', True),
    ("python", 'df = pd.read_csv("data/orders.csv")', False),
    ("python", 'print("Total:", total)', False),
    ("python", 'print("%d rows, %d columns" % df.shape)', False),
    ("python", 'plt.title("Revenue by region over time")', False),
    ("python", 'title = "Revenue by region over time"', False),
    ("python", 'print(df["total_revenue"])', False),
    ("r", 'cat("The West region sells the most\\n")', True),
    ("r", 'message("Sales rise in the winter months")', True),
    ("r", '"A bare sentence about the trend"', True),
    ("r", 'paste("The West leads with", n, "orders this year")', True),
    ("r", 'answer <- "Holiday shoppers buy the most"', True),
    ("r", 'cat(r"(A raw string that\nspans two lines)")', True),
    ("r", 'sales <- read_csv("data/orders.csv")', False),
    ("r", 'cat("Total:", n, "\\n")', False),
    ("r", 'sprintf("%d rows, %d columns", a, b)', False),
    ("r", 'p + ggtitle("Revenue by region over time")', False),
    ("r", 'filter(sales, region == "North West Coast")', False),
    ("r", 'title <- "Revenue by region over time"', False),
])
def test_a_string_counts_when_written_for_a_reader_and_a_sentence(lang, line, counted):
    first = one_code_cell(f"x = 1\n{line}", lang)["Question 1"]
    assert first.answered is counted, first
    if counted:
        assert first.evidence[0].line == 2
        assert "x = 1" not in first.text


def test_a_string_the_template_gives_is_not_the_students():
    given = 'cat("Inner Join Results are printed below\\n")'
    t = [new_markdown_cell("## Question 1\nWhat do you see?"),
         new_code_cell(f"# YOUR CODE HERE\n{given}")]
    s = [t[0], new_code_cell(f"# YOUR CODE HERE\n{given}\n"
                             'cat("Every customer has at least one order\\n")')]
    first = answers(t, s, ["Question 1"], "r")["Question 1"]
    assert first.word_count == 7
    assert "Inner Join" not in first.text


def test_without_the_template_the_language_is_read_from_the_code():
    """``cat`` prints only in R: found as an answer, the R notebook was read as R."""
    code = 'sales <- read_csv("x.csv")\ncat("The West region sells the most\\n")'
    first = one_code_cell(code, "r", with_template=False)["Question 1"]
    assert first.word_count == 6


def test_answer_text_keeps_whole_source_lines():
    code = 'x = 1  # the mean is high\nprint("The West sells the most")\n# summary(x)'
    first = one_code_cell(code, "python")["Question 1"]
    source = [line.strip() for line in code.splitlines()]
    assert first.text.splitlines() == source[:2]  # line filters downstream still match
    assert first.word_count == 4 + 5  # neither "x = 1" nor "print" counts


# --- several questions in one cell

SEPARATE = [new_markdown_cell("## Question 1\nHow many rows?"), new_markdown_cell(PH[0]),
            new_markdown_cell("## Question 2\nWhich region?"), new_markdown_cell(PH[0]),
            new_markdown_cell("## Question 3\nWhat trend?"), new_markdown_cell(PH[0])]
THREE = ["Question 1", "Question 2", "Question 3"]
PARTS = ["300 rows in total.", "The West region.", "Sales rise steadily each month."]


@pytest.mark.parametrize("style", [
    "Q{}. ", "Q{}: ", "Question {}\n", "**Q{}** ", "### Question {}\n", "- **Question {}:** ",
    "Q{}) ", "Question {} - ", "## {}.\n",
])
def test_answers_gathered_after_the_questions_split_at_their_labels(style):
    labelled = [f"{style.format(i)}{p}" for i, p in enumerate(PARTS, 1)]
    s = [SEPARATE[0], SEPARATE[2], SEPARATE[4], new_markdown_cell("\n".join(labelled))]
    got = answers(SEPARATE, s, THREE)
    for q, part in zip(THREE, PARTS, strict=True):
        assert got[q].word_count == len(words(part)), (q, got[q].text)
        assert part in got[q].text
        assert got[q].evidence[0].cell_id == s[3].id
        assert got[q].evidence[0].line is not None


def test_answers_written_under_an_earlier_question_go_to_their_own():
    s = [SEPARATE[0], new_markdown_cell("Q1: 300 rows in total.\nQ2: the West region leads."),
         SEPARATE[2], SEPARATE[3], SEPARATE[4], new_markdown_cell("Up and up.")]
    got = answers(SEPARATE, s, THREE)
    assert got["Question 1"].word_count == 4
    assert "West" not in got["Question 1"].text
    assert got["Question 2"].word_count == 4
    assert got["Question 2"].evidence[0].line == 2
    assert got["Question 3"].text == "Up and up."


def test_a_numbered_list_in_one_answer_is_not_split():
    listed = "Two reasons:\n1. The data has 300 rows.\n2. None dropped."
    s = [SEPARATE[0], new_markdown_cell(listed),
         SEPARATE[2], new_markdown_cell("The West."), SEPARATE[4], new_markdown_cell("Up.")]
    got = answers(SEPARATE, s, THREE)
    assert got["Question 1"].word_count == 11
    assert got["Question 2"].text == "The West."
    assert got["Question 1"].evidence[0].line is None  # the whole cell


@pytest.mark.parametrize("line", ["Task 2: the totals are in the table", "Question 10: none",
                                  "Question 2 showed that the West leads"])
def test_lines_that_are_not_another_questions_label_do_not_split(line):
    s = [SEPARATE[0], new_markdown_cell(f"300 rows.\n{line}"), SEPARATE[2], SEPARATE[4]]
    first = answers(SEPARATE, s, THREE)["Question 1"]
    assert first.word_count == 2 + len(words(line))


SHARED = [new_markdown_cell("### Part A\n1. How many rows are there?\n2. Which region sells most?"),
          new_markdown_cell("YOUR ANSWER HERE"), new_markdown_cell("## Next task\nDo more.")]
ASKED = ["How many rows are there?", "Which region sells most?"]


@pytest.mark.parametrize(("answer", "first", "second"), [
    ("1. There are 300 rows.\n2. The West sells most.", 4, 4),
    ("1) 300 rows after cleaning\n2) West, by a wide margin", 4, 5),
    ("There are 300 rows.\n2. West sells most.", 4, 3),  # the first part unlabelled
    ("**1.** 300 rows.\n\n**2.** The West.", 2, 2),
    ("There are 300 rows and the West sells most.", 9, 9),  # no labels: the cell stays whole
])
def test_one_answer_cell_under_a_template_cell_of_several_questions(answer, first, second):
    s = [SHARED[0], new_markdown_cell(answer), SHARED[2]]
    got = answers(SHARED, s, ASKED)
    assert (got[ASKED[0]].word_count, got[ASKED[1]].word_count) == (first, second)


def test_letter_labels_and_answers_typed_into_the_question_cell():
    t = [new_markdown_cell("### Exercise 3\n(a) Which region sells most?\n(b) Why?"),
         new_markdown_cell("YOUR ANSWER HERE"), new_markdown_cell("## End")]
    parts = new_markdown_cell("(a) The West region.\nb) Tourists buy there.")
    got = answers(t, [t[0], parts, t[2]], ["Which region sells most?", "Why?"])
    assert got["Which region sells most?"].word_count == 3
    assert got["Why?"].word_count == 3
    assert "West" not in got["Why?"].text
    typed = new_markdown_cell("1. How many rows are there?\nThere are 300.\n"
                              "2. Which region sells most?\nThe West.")
    got = answers([SHARED[0], SHARED[2]], [typed, SHARED[2]], ASKED)
    assert (got[ASKED[0]].text, got[ASKED[1]].text) == ("There are 300.", "The West.")


@pytest.mark.parametrize("answer", [
    "2.4 The West is the leader.\n2.5 Sales rise each month.",
    "**Regional Leader:** The West is the leader.\n**Monthly Trend:** Sales rise each month.",
    "### Regional leader\nThe West is the leader.\n### Monthly trend\nSales rise each month.",
])
def test_multi_level_numbers_and_titles_label_their_questions(answer):
    t = [new_markdown_cell("## Question 2.4: Regional Leader\nWhich region?\n\n"
                           "## Question 2.5: Monthly Trend\nWhat trend?"),
         new_markdown_cell("YOUR ANSWER HERE"), new_markdown_cell("## End")]
    qs = ["Question 2.4: Regional Leader", "Question 2.5: Monthly Trend"]
    got = answers(t, [t[0], new_markdown_cell(answer), t[2]], qs)
    assert got[qs[0]].word_count == 5
    assert "Sales" not in got[qs[0]].text
    assert got[qs[1]].word_count == 4
    assert "West" not in got[qs[1]].text


@pytest.mark.parametrize("lang", ["python", "r"])
def test_labels_in_comments_split_a_code_cell_between_questions(lang):
    t = [new_markdown_cell("## Question 1\nWhich region?"),
         new_markdown_cell("## Question 2\nTrend?"),
         new_code_cell("# Write your answers as comments below\n")]
    s = [t[0], t[1], new_code_cell("# Write your answers as comments below\n"
                                   "# Q1: The West region sells the most.\n"
                                   "# Q2: Sales rise every month.\nx = 1")]
    got = answers(t, s, ["Question 1", "Question 2"], lang)
    assert got["Question 1"].word_count == 6
    assert got["Question 1"].evidence[0].line == 2
    assert got["Question 2"].word_count == 4
    assert got["Question 2"].evidence[0].line == 3


def test_a_deleted_question_cell_is_found_by_its_label_only():
    s = [SEPARATE[0], new_markdown_cell("Q1: 300 rows in total.\nQ2: The West region leads.")]
    got = answers(SEPARATE, s, THREE)
    assert got["Question 2"].located
    assert got["Question 2"].word_count == 4
    assert not got["Question 3"].located
    assert got["Question 3"].word_count == 0


def test_an_edited_intro_that_mentions_a_question_gives_it_nothing():
    intro = "# Homework\nQuestion 1 and Question 2 are written answers.\nName: YOUR ANSWER HERE"
    t = [new_markdown_cell(intro), *SEPARATE]
    s = [new_markdown_cell(intro.replace(PH[0], "Jane Doe")), *SEPARATE[:3], SEPARATE[4]]
    got = answers(t, s, THREE)
    assert all(not got[q].answered for q in THREE), got


def test_the_three_argument_call_still_works():
    template = nb(SEPARATE[:2], name="template.ipynb")
    sub = nb([SEPARATE[0], new_markdown_cell("# My notes\n300 rows, all clean.")])
    ans = find_answer(match_template(template, sub, PH), "Question 1", PH)
    assert ans.word_count == 6
    assert ans.evidence[0].line is None


# --- the rules, unit by unit


@pytest.mark.parametrize(("text", "lang", "verdict"), [
    ("The West sells most", "python", "prose"), ("The West sells most", "r", "prose"),
    ("this is good", "python", "prose"), ("Observations:", "r", "prose"),
    ("df.groupby('a').sum()", "python", "code"), ("df |> filter(x > 1)", "r", "code"),
    ("import pandas as pd", "python", "code"), ("function(x) x + 1", "r", "code"),
    ("summary", "r", "word"), ("total", "python", "word"),
])
def test_looks_like_code(text, lang, verdict):
    assert looks_like_code(text, lang) == verdict


@pytest.mark.parametrize(("text", "prose"), [
    ("Sales rise in the winter months", True), ("The West sells the most: 40%", True),
    ("Total:", False), ("total_revenue", False), ("Unit Price", False),
    ("data/orders.csv", False), ("%d rows, %d columns", False), ("Number of rows:", False),
])
def test_reads_as_prose(text, prose):
    assert reads_as_prose(text) is prose


def test_a_hash_inside_a_string_is_no_comment_and_unparsable_code_is_still_read():
    found = prose_lines('url = "http://x.org/#top"\nif x:\n    y = (1,\n# The West leads', "python")
    assert [(p.line, p.kind) for p in found] == [(4, "comment")]


@pytest.mark.parametrize(("line", "ident", "strong"), [
    ("Q1. x", "1", True), ("Question 2: x", "2", True), ("**Q3** x", "3", True),
    ("2.4 x", "2.4", True), ("## 2. x", "2", True), ("1. x", "1", False), ("a) x", "a", False),
    ("(b) x", "b", False), ("Q3a) x", "3a", True), ("Question 1 showed", None, None),
    ("1.5 million", "1.5", True), ("10:30 meeting", None, None),
])
def test_parse_label(line, ident, strong):
    got = parse_label(line)
    assert (got.id, got.strong) == (ident, strong) if ident else got is None


def test_a_questions_label_comes_from_its_text_or_the_templates_line():
    own = question_label("Question 8.1: Data Quality Impact")
    assert (own.id, own.word, own.title) == ("8.1", "question", "data quality impact")
    second = question_label("Which region?", "1. How many rows? 2. Which region?")
    assert (second.id, second.bare) == ("2", True)
    assert question_label("Which region?").id is None
