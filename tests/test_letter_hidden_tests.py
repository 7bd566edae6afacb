"""No text of a hidden test reaches the student's letter, whatever carried it there.

A notebook that got hold of the hidden tests (their code, the values a hidden check
expects, or the tests' file, JSON-escaped) raises them as a cell's error and prints
them where a printed check looks, so that its letter would quote them back. Graded for
real (the sandbox runs it, the letter is built from the stored grade's evidence), the
letter shows "a hidden test's code" in their place, while the instructor's evidence
keeps what the cell really said. The honest twin (its own error, its own printed line)
is quoted as it is.
"""

from __future__ import annotations

import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.letters.build import build_letter, letter_markdown
from grader.letters.hidden import HIDDEN, SHORTEST, HiddenText
from grader.letters.text import Letter
from grader.notebooks.load import load_notebook
from grader.pipeline import GradeInput, Grader
from grader.rubrics.schema import rubric_from_dict
from grader.sandbox.execution import kernel_available, sandbox_available
from grader.types import GradeReport

HIDDEN_CODE = ("assert wait_summary([4, 8, 12])['longest'] == 12, 'the longest wait'\n"
               "assert wait_summary([])['longest'] is None")
VISIBLE_CODE = "assert mean_wait == 8"
EXPECTED = "Harbor, Market and Pier Street"  # a hidden value check's expected value
RUBRIC = {
    "schema_version": 2, "title": "Waits", "language": "python", "total_points": 6,
    "criteria": [
        {"id": "clean", "title": "The notebook runs", "kind": "code", "points": 2,
         "checks": [{"type": "runs", "weight": 1.0}]},
        {"id": "mean", "title": "The mean wait", "kind": "code", "points": 2,
         "task": "Question 1", "checks": [
             {"type": "test", "name": "mean", "code": VISIBLE_CODE, "weight": 0.4},
             {"type": "test", "name": "summary", "code": HIDDEN_CODE, "hidden": True,
              "weight": 0.3},
             {"type": "value", "expression": "stops", "expected": EXPECTED, "hidden": True,
              "weight": 0.3}]},
        {"id": "said", "title": "The mean said", "kind": "code", "points": 2, "checks": [
            {"type": "printed", "question": "Question 2", "pattern": "Mean wait: 8",
             "weight": 1.0}]}]}
INTRO = [new_markdown_cell("# Waits"), new_markdown_cell("## Question 1\nCompute `mean_wait`.")]
ASK2 = new_markdown_cell("## Question 2\nPrint the mean wait in a sentence.")
SOLUTION = ("mean_wait = 8\nstops = 'Harbor, Market and Pier Street'\n"
            "def wait_summary(w):\n    return {'longest': max(w) if w else None}")
SPEC = json.dumps({"tests": [{"key": "mean/summary", "code": HIDDEN_CODE}]})


def _notebook(*cells: str, printed: str) -> nbformat.NotebookNode:
    code = [new_code_cell(c) for c in cells]
    return new_notebook(cells=[*INTRO, *code, ASK2, new_code_cell(printed)], metadata={
        "kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}})


ATTACK = _notebook(
    "mean_wait = 7",
    f"raise Exception({HIDDEN_CODE!r})",
    f"raise ValueError({SPEC!r})",
    f"raise KeyError({EXPECTED!r} + ' is what the hidden check wants')",
    printed=f"print({HIDDEN_CODE!r}.splitlines())")
TWIN = _notebook(
    "mean_wait = 7",
    "raise Exception('my own mistake: the column is called wait_min')",
    "raise ValueError('the stops are not read yet')",
    "raise KeyError('stop')",
    printed="print('The mean is seven minutes')")


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[GradeReport, Letter]]:
    if not sandbox_available() or not kernel_available("python"):
        pytest.skip("bubblewrap or the Python kernel is missing")
    root = tmp_path_factory.mktemp("waits")
    (root / "rubric.json").write_text(json.dumps(RUBRIC), encoding="utf-8")
    for name, nb in (("template", _notebook("# YOUR CODE HERE", printed="# YOUR CODE HERE")),
                     ("solution", _notebook(SOLUTION, printed="print('Mean wait: 8')"))):
        (root / f"{name}.ipynb").write_text(nbformat.writes(nb), encoding="utf-8")
    (root / "assignment.toml").write_text('title = "Waits"\nrubric = "rubric.json"\n'
                                          'template = "template.ipynb"\n'
                                          'solution = "solution.ipynb"\n', encoding="utf-8")
    assignment = load_assignment(root)
    grader = Grader(assignment, GradeOptions(execute=True, cell_timeout_s=30,
                                             total_timeout_s=120))
    out = {}
    for name, nb in (("attack", ATTACK), ("twin", TWIN)):
        raw = nbformat.writes(nb).encode()
        report = grader.grade(GradeInput(f"{name}.ipynb", raw))
        out[name] = (report, build_letter(report, assignment.rubric,
                                          load_notebook(raw, f"{name}.ipynb")))
    return out


def _said(letter: Letter) -> str:
    """Every text the letter shows, quotes included."""
    parts = [letter_markdown(letter)]
    for s in letter.sections:
        parts += [str(p) for p in (*s.done, *s.missing, *s.next_steps, *s.model_text)]
        parts += [q.text for q in s.quotes]
        parts += [str(s.summary)] if s.summary is not None else []
    return "\n".join(parts)


def _leaks(text: str) -> list[str]:
    """Stretches of SHORTEST characters of a hidden text (or its JSON form) in ``text``."""
    flat = " ".join(text.split())
    secrets = [" ".join(s.split()) for s in (*HIDDEN_CODE.splitlines(), EXPECTED,
                                              json.dumps(HIDDEN_CODE)[1:-1])]
    return [s[i:i + SHORTEST] for s in secrets for i in range(len(s) - SHORTEST + 1)
            if s[i:i + SHORTEST] in flat]


@pytest.mark.slow
def test_a_letter_never_quotes_a_hidden_test(graded) -> None:
    report, letter = graded["attack"]
    said = _said(letter)
    assert not _leaks(said), _leaks(said)[:3]
    assert HIDDEN in said  # the student is told what stood there
    # the instructor's evidence keeps what the cells really said
    runs = next(c for crit in report.criteria for c in crit.checks if c.check == "runs")
    assert any("wait_summary([4, 8, 12])" in e.text for e in runs.evidence)


@pytest.mark.slow
def test_the_honest_twin_is_quoted_as_it_is(graded) -> None:
    _, letter = graded["twin"]
    said = _said(letter)
    assert HIDDEN not in said
    assert "my own mistake: the column is called wait_min" in said
    assert "The mean is seven minutes" in said


def _only(*checks: dict) -> dict:
    """The rubric with one criterion of ``checks`` (weights as given)."""
    return RUBRIC | {"total_points": 2, "criteria": [RUBRIC["criteria"][1] | {
        "checks": list(checks)}]}


def test_redaction_is_no_oracle_for_short_guesses() -> None:
    rubric = rubric_from_dict(_only({"type": "value", "expression": "n", "expected": 57,
                                     "hidden": True, "weight": 1.0}))
    hidden = HiddenText.from_rubric(rubric)
    # a guessed 57 is the student's own text: replacing it would say the guess is right
    assert hidden.redact("Error: I guess 57 rows") == "Error: I guess 57 rows"


def test_what_a_visible_check_shows_is_never_redacted() -> None:
    rubric = rubric_from_dict(RUBRIC)
    hidden = HiddenText.from_rubric(rubric)
    assert hidden.redact(f"AssertionError: {VISIBLE_CODE} failed") == \
        f"AssertionError: {VISIBLE_CODE} failed"
    shared = "assert wait_summary([4, 8, 12])['longest'] == 12"
    visible_too = rubric_from_dict(_only(
        {"type": "test", "name": "summary", "code": HIDDEN_CODE, "hidden": True, "weight": 0.5},
        {"type": "test", "name": "shown", "code": shared, "weight": 0.5}))
    assert shared in HiddenText.from_rubric(visible_too).redact(f"Error: {shared}")


def test_every_form_of_a_hidden_test_is_found() -> None:
    hidden = HiddenText.from_rubric(rubric_from_dict(RUBRIC))
    for form in (HIDDEN_CODE, SPEC, repr(HIDDEN_CODE.splitlines()), f"KeyError: '{EXPECTED}'",
                 HIDDEN_CODE.upper().lower()):
        out = hidden.redact(form)
        assert HIDDEN in out, form
        assert not _leaks(out), (form, out)


def test_a_letter_without_its_rubric_is_left_as_it_is() -> None:
    assert not HiddenText.from_rubric(None)
    assert HiddenText.from_rubric(None).redact(HIDDEN_CODE) == HIDDEN_CODE


def test_a_cut_inside_a_hidden_test_leaves_nothing_of_it() -> None:
    hidden = HiddenText.from_rubric(rubric_from_dict(RUBRIC))
    first, second = HIDDEN_CODE.splitlines()
    for cut in (f"printed: {[first, second]}"[:80] + "…",  # the layer's cut, with its mark
                f"Exception: {first} {second[:12]}"):  # a short stretch after the last
        out = hidden.redact(cut)
        assert out.endswith(HIDDEN + "…") or out.endswith(HIDDEN), out
        assert second[:5] not in out.split(HIDDEN)[-1], out


def test_an_r_hidden_test_is_found_as_r_shows_it() -> None:
    code = ('testthat::expect_equal(nrow(survey_clean), 57)\n'
            'stopifnot(all(names(sleep_by_year) == c("year", "mean_sleep")))')
    rubric = rubric_from_dict({
        "schema_version": 2, "title": "Sleep", "language": "r", "total_points": 1,
        "criteria": [{"id": "c", "title": "C", "kind": "code", "points": 1, "checks": [
            {"type": "test", "name": "shape", "code": code, "hidden": True, "weight": 1.0}]}]})
    hidden = HiddenText.from_rubric(rubric)
    second = code.splitlines()[1]
    for shown in (f"Error: {second}",  # stop() with the code as its message
                  '[1] "' + second.replace('"', '\\"') + '"',  # print() of the string
                  "Error in eval(expr, envir, enclos): " + code.replace("\n", " ")):
        out = hidden.redact(shown)
        assert HIDDEN in out, shown
        assert "sleep_by_year" not in out, out
        assert "expect_equal(nrow" not in out, out
