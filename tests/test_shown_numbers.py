"""One number, one way (issue 22, items 4, 7 and 8): percentages, cell numbers and
layer seconds as every page, export and letter shows them."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.letters.build import build_letter
from grader.letters.numbers import cell_name, percent_text, whole_percent
from grader.letters.places import Places
from grader.notebooks.load import load_notebook
from grader.types import CheckResult, CriterionResult, Evidence, GradeReport, LayerResult
from grader.views.reports import (
    cell_positions,
    diff_rows,
    evidence_rows,
    layer_rows,
    layer_seconds,
    notebook_cells,
    percent,
    result_rows,
)

SUBS = Path(__file__).resolve().parents[1] / "examples" / "retail-sales" / "submissions"


@pytest.mark.parametrize(("score", "full", "shown"), [
    (16.5, 20, 83),  # 82.5: half up, as a person rounds (Python's round() gives 82)
    (3.3, 4, 83),  # 82.49999... in floats, 82.5 as written
    (18.5, 20, 93),
    (19.9, 20, 99),  # never 100 short of full
    (0.05, 20, 1),  # never 0 above nothing
    (20, 20, 100), (0, 20, 0), (10, 19, 53),
])
def test_whole_percent_is_the_letters_rule(score, full, shown):
    assert whole_percent(score, full) == shown
    assert percent_text(score, full) == f"{shown}%"
    assert percent(score, full) == shown  # the pages' tables


def test_no_percentage_without_a_score_or_a_total():
    assert whole_percent(None, 20) is None
    assert whole_percent(5, 0) is None
    assert percent_text(None, 20) == ""
    assert percent(3, None) is None


def _report(score: float, full: float = 20, layers=None) -> GradeReport:
    crit = CriterionResult("q1", "Part q1", "code", full, score)
    return GradeReport("s.ipynb", "x", "demo", "v1", "graded", score, full,
                       display_name="Student 001", criteria=[crit], layers=layers or {})


def test_tables_and_the_letter_show_one_percentage():
    r = _report(16.5)
    assert build_letter(r).percent == "83%"
    assert result_rows([(1, r)])[0]["%"] == 83
    total = diff_rows(_report(16.5), _report(18.5))[-1]
    assert (total["before %"], total["after %"], total["change (% points)"]) == (83, 93, 10)


def test_the_model_layers_show_the_seconds_the_engine_measured():
    layers = {"L1": LayerResult("L1", seconds=0.42),
              "L3": LayerResult("L3", details={"total_s": 74.2, "parallel_wall_s": 75.0}),
              "L4": LayerResult("L4", details={"total_s": 12.5, "parallel_wall_s": 75.0}),
              "L3x": LayerResult("L3x", error="timed out",
                                 details={"started_at": 100.0, "finished_at": 130.5})}
    rows = {row["layer"]: row for row in layer_rows(_report(10, layers=layers))}
    assert rows["L1"]["seconds"] == 0.42
    assert rows["L3"]["seconds"] == 74.2
    assert rows["L4"]["seconds"] == 12.5
    assert rows["L3"]["wall, with the other model layer (s)"] == 75.0
    assert rows["L3x"]["seconds"] == 30.5  # failed: how long it ran before it failed
    assert layer_seconds(LayerResult("L2")) == 0.0


def test_review_numbers_cells_as_the_letter_does():
    data = (SUBS / "partial.ipynb").read_bytes()
    nb = load_notebook(data, "partial.ipynb")
    places = Places(nb)
    cells = notebook_cells(data, "partial.ipynb")
    assert [c.number for c in cells] == list(range(1, len(nb.cells) + 1))
    for view, cell in zip(cells, nb.cells, strict=True):
        assert view.name == places.cell(cell.id) == cell_name(cell.index)
    assert cells[15].name == "cell 16"


def test_evidence_names_cells_as_the_letter_does():
    data = (SUBS / "partial.ipynb").read_bytes()
    nb = load_notebook(data, "partial.ipynb")
    cell = nb.code_cells[-1]
    r = _report(1.0)
    r.criteria[0].checks = [CheckResult("q1", "calls", "f", 0.5, 1.0, "L1", "1 of 2 called",
                                        (Evidence(cell.id, 2, "f(x)"),))]
    positions = cell_positions(data, "partial.ipynb")
    assert evidence_rows(r, "q1", positions)[0]["cell"] == Places(nb).cell(cell.id)
    assert evidence_rows(r, "q1")[0]["cell"] == cell.id  # without the notebook: its id
    assert cell_positions(b"not a notebook", "x.ipynb") == {}
    assert cell_positions(None, "x.ipynb") == {}
