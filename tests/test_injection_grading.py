"""Every injection variant of the corpus, graded with and without it: flagged, never higher."""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest
from test_injection import INJECTIONS

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader

RETAIL = Path(__file__).resolve().parents[1] / "examples" / "retail-sales"
BASE = nbformat.read(RETAIL / "submissions" / "partial.ipynb", as_version=4)


@pytest.fixture(scope="module")
def grader() -> Grader:
    return Grader(load_assignment(RETAIL), GradeOptions(execute=False))


@pytest.fixture(scope="module")
def clean_score(grader: Grader) -> float:
    data = nbformat.writes(BASE).encode()
    report = grader.grade(GradeInput("clean.ipynb", data, "s1", "s1"))
    assert "prompt_injection" not in {f.code for f in report.flags}
    return report.score


@pytest.mark.parametrize(("case", "cell"), [(c[0], c[1]) for c in INJECTIONS],
                         ids=[c[0] for c in INJECTIONS])
def test_injection_is_flagged_and_never_scores_higher(grader, clean_score, case, cell):
    nb = copy.deepcopy(BASE)
    injected = copy.deepcopy(cell)
    injected["id"] = f"inj-{case}"[:60]
    nb.cells.insert(3, injected)
    report = grader.grade(GradeInput(f"{case}.ipynb", nbformat.writes(nb).encode(), "s1", "s1"))
    flags = {f.code: f for f in report.flags}
    assert "prompt_injection" in flags, case
    assert any(e.cell_id == injected["id"] for e in flags["prompt_injection"].evidence)
    assert report.score <= clean_score
