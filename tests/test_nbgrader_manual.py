"""nbgrader's manually graded answers are graded by hand here too (issue 33, item 5).

nbgrader's user-guide problem set (tests/fixtures/nbgrader_ps1) has a manually graded
markdown answer (Part C: "write out the equation", answered in LaTeX) beside a task
(Part E). nbgrader grades both by hand; counting Part C's words ("6 words" about a
formula) is no grade of it. Imported, both are ``manual``: no automatic points, listed
for the instructor to grade, and the student's letter says "graded by your instructor
(1 point)", never "— / 1". A part's heading that gives the part's points ("Part A (2
points)") never titles one of its 1-point test cells, so a letter never reads "Part A (2
points) ... 1 / 1".
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.letters.build import build_letter, letter_markdown
from grader.notebooks.load import load_notebook
from grader.pipeline import GradeInput, Grader
from grader.points import as_points
from grader.scoring import MANUAL

REPO = Path(__file__).resolve().parents[1]
PS1 = REPO / "tests" / "fixtures" / "nbgrader_ps1"
ANSWER = "$$\\sum_{i=1}^{n} i^2 = \\frac{n(n+1)(2n+1)}{6}$$"


@pytest.fixture(scope="module")
def imported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ps1") / "problem1"
    done = subprocess.run([sys.executable, "-m", "grader", "import", "nbgrader",
                           str(PS1 / "problem1.ipynb"), "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    return out


def _answered(folder: Path, tmp_path: Path) -> Path:
    """The released template with Part C answered in LaTeX, as a student would."""
    a = load_assignment(folder)
    nb = nbformat.read(a.template, as_version=4)
    stub = next(c for c in nb.cells if c.cell_type == "markdown"
                and c.source.strip() == "YOUR ANSWER HERE")
    stub.source = ANSWER
    path = tmp_path / "student.ipynb"
    nbformat.write(nb, path)
    return path


def _grade(folder: Path, path: Path, execute: bool):
    a = load_assignment(folder)
    report = Grader(a, GradeOptions(execute=execute, use_llm=False)).grade(
        GradeInput.from_path(path))
    letter = build_letter(report, a.rubric, load_notebook(path), a.title)
    return a, report, letter


def test_a_manually_graded_markdown_answer_is_for_the_instructor(imported, tmp_path):
    a, report, letter = _grade(imported, _answered(imported, tmp_path), execute=False)
    part_c = next(c for c in report.criteria if c.title.startswith("Part C"))
    assert part_c.points == 0  # its words earn nothing: the instructor grades it
    assert part_c.needs_review
    assert part_c.review_reasons[0].startswith(MANUAL)
    spec = next(c for c in a.rubric.criteria if c.id == part_c.id)
    assert spec.manual
    text = letter_markdown(letter)
    assert "## Part C (1 point) — graded by your instructor (1 point)" in text
    assert "## Part E (4 points) — graded by your instructor (4 points)" in text
    assert "— / " not in text
    section = next(s for s in letter.sections if s.criterion_id == part_c.id)
    assert (section.done, section.missing, section.next_steps) == ((), (), ())  # no length


@pytest.mark.slow
def test_a_part_s_points_never_title_one_of_its_test_cells(imported, tmp_path):
    _, report, letter = _grade(imported, _answered(imported, tmp_path), execute=True)
    tests = [s for s in letter.sections if ": tests" in s.title]
    assert len(tests) == 4
    for s in tests:
        assert "point" not in s.title, s.title  # "Part A: tests (correct_squares)"
        assert s.score.endswith(f" / {as_points(s.max_points)}"), s.score
    assert letter.score.endswith(f" / {as_points(report.max_score)}")
