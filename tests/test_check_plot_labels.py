"""The ``plot_labels`` check type (grader/checks/plot_labels.py): a plot's axis labels and
title, read from the student's own code in Python (matplotlib, pandas, seaborn, plotly)
and R (ggplot2, base graphics). Layer 1 reads real notebooks (no mocks); the letter says
what is missing and the call that adds it; a rubric file takes the type like any other.
"""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.analysis.template import match_template
from grader.assignment import Assignment
from grader.layers.base import AssignmentContext, GradeOptions, SubmissionContext
from grader.layers.structure import StructureLayer
from grader.letters.check_reading import read_check
from grader.letters.places import Places
from grader.letters.reading import Context
from grader.notebooks.load import load_notebook
from grader.rubrics.schema import rubric_from_dict
from grader.types import CheckResult

QUESTION = "Question 3: plot revenue by month"


def rubric(language: str, check: dict | None = None):
    return rubric_from_dict({
        "schema_version": 2, "title": "Plots", "language": language, "total_points": 2,
        "criteria": [{"id": "plot", "title": "A readable plot", "kind": "code", "points": 2,
                      "checks": [check or {"type": "plot_labels", "question": QUESTION}]}]})


KERNELS = {"python": ("python3", "python", "Python 3"), "r": ("ir", "R", "R")}

FULL, AXES, NONE = 1.0, 0.5, 0.0
CASES = [
    ("python", "plt.plot(m, r)\nplt.xlabel('Month')\nplt.ylabel('Revenue')\n"
               "plt.title('Revenue by month')", FULL),
    ("python", "fig, ax = plt.subplots()\nax.plot(m, r)\nax.set_xlabel('Month')\n"
               "ax.set_ylabel('Revenue')", AXES),
    ("python", "ax = df.plot(x='month', y='revenue', xlabel='Month', ylabel='Revenue', "
               "title='Revenue by month')", FULL),
    ("python", "g = sns.relplot(data=df, x='month', y='revenue')\n"
               "g.set_axis_labels('Month', 'Revenue')\ng.fig.suptitle('Revenue')", FULL),
    ("python", "ax = sns.lineplot(data=df, x='month', y='revenue')\n"
               "ax.set(xlabel='Month', ylabel='Revenue', title='By month')", FULL),
    ("python", "plt.plot(m, r)\nplt.xlabel('')\nplt.ylabel('')\nplt.title('')", NONE),
    ("python", "plt.plot(m, r)\n# plt.xlabel('Month')\n# plt.ylabel('Revenue')", NONE),
    ("python", "plt.plot(m, r)\nplt.xlabel('Month')", NONE),
    ("r", "ggplot(df, aes(month, revenue)) + geom_line() +\n"
          "  labs(x = \"Month\", y = \"Revenue\", title = \"Revenue by month\")", FULL),
    ("r", "ggplot(df, aes(month, revenue)) + geom_line() + xlab(\"Month\") + "
          "ylab(\"Revenue\")", AXES),
    ("r", "plot(df$month, df$revenue, xlab = \"Month\", ylab = \"Revenue\", "
          "main = \"Revenue by month\")", FULL),
    ("r", "plot(df$month, df$revenue)", NONE),
]


def _nb(cells: list, language: str):
    name, lang, shown = KERNELS[language]
    node = new_notebook(cells=cells, metadata={"kernelspec": {
        "name": name, "language": lang, "display_name": shown}})
    return load_notebook(nbformat.writes(node).encode(), f"{language}.ipynb")


def _graded(code: str, language: str) -> CheckResult:
    head = [new_markdown_cell(f"## {QUESTION}"), new_code_cell("# your code here")]
    template = _nb(head, language)
    sub = _nb([head[0], new_code_cell(code)], language)
    actx = AssignmentContext(Assignment("demo", None, rubric(language), None, None, None),  # type: ignore[arg-type]
                             template, template, None)
    ctx = SubmissionContext(actx, sub, None, match_template(template, sub, ()),
                            GradeOptions(execute=False))
    (result,) = StructureLayer().run(ctx).checks
    return result


@pytest.mark.parametrize(("language", "code", "score"), CASES,
                         ids=[f"{c[0]}-{n}" for n, c in enumerate(CASES)])
def test_the_labels_a_plot_has_are_read_from_the_students_code(language: str, code: str,
                                                               score: float) -> None:
    result = _graded(code, language)
    assert result.check == "plot_labels"
    assert result.layer == "L1"
    assert result.score == score, result.message
    assert (result.facts.state == "labelled") == (score == 1)
    assert set(result.facts.found) | set(result.facts.missing) == {"x label", "y label",
                                                                   "title"}


def test_the_template_code_alone_has_no_plot() -> None:
    result = _graded("# your code here", "python")
    assert result.score == 0
    assert result.facts.state == "no_plot_code"


@pytest.mark.parametrize(("language", "call"), [("python", "plt.title(...)"),
                                                ("r", "labs(title = ...)")])
def test_the_letter_names_what_is_missing_and_the_call_that_adds_it(language: str,
                                                                    call: str) -> None:
    code = ("plt.plot(m, r)\nplt.xlabel('Month')\nplt.ylabel('Revenue')" if language == "python"
            else "ggplot(df, aes(m, r)) + geom_line() + labs(x = \"M\", y = \"R\")")
    result = _graded(code, language)
    assert result.score == 0.5
    assert result.facts.missing == ("title",)
    reading = read_check(result, Context(Places(None)))
    said = " ".join(str(p) for p in (*reading.missing, *reading.steps))
    assert "no title" in said
    assert call in said
    assert "x label and y label" in " ".join(str(p) for p in reading.done)


def test_a_rubric_file_refuses_a_plot_labels_check_with_fields_it_does_not_read() -> None:
    from grader.errors import RubricError

    with pytest.raises(RubricError, match="min_count, distinct and absent belong to code"):
        rubric("python", {"type": "plot_labels", "min_count": 2})
