"""Every injection variant of the corpus, graded with and without it: flagged, never higher.

The models are a fake judge that obeys any instruction it is shown: it gives full
marks when the student's part of its prompt holds text aimed at a grader, and half
marks otherwise. It is trusted to judge (``can_judge``), so its half marks bring the
clean notebook's written answers below full marks, and an injection that reached its
prompt would raise the score: the test can fail.
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest
from fake_judge import FakeJudge, judging_grader
from test_injection import INJECTIONS

from grader.analysis.template import match_template
from grader.integrity.injection import scan_notebook, scan_text
from grader.layers.base import SubmissionContext, run_layer
from grader.notebooks.load import load_both
from grader.pipeline import GradeInput, Grader

RETAIL = Path(__file__).resolve().parents[1] / "examples" / "retail-sales"
BASE = nbformat.read(RETAIL / "submissions" / "partial.ipynb", as_version=4)
ANSWER = "q1-answer"  # injections go right after it: inside the answer the L4 model reads


class Obedient(FakeJudge):
    """A judge fooled by any text aimed at a grader in the student's part of its prompt."""

    meets = True

    def fooled(self, user: str) -> bool:
        student = user.split("<student>", 1)[1].rsplit("</student>", 1)[0]
        return bool(scan_text(student, "markdown", None))


@pytest.fixture(scope="module")
def grader(tmp_path_factory):
    with judging_grader("obedient", Obedient, RETAIL,
                        tmp_path_factory.mktemp("obedient")) as judged:
        yield judged


@pytest.fixture(scope="module")
def clean_score(grader: Grader) -> float:
    report = grader.grade(GradeInput("clean.ipynb", nbformat.writes(BASE).encode(), "s1", "s1"))
    assert "prompt_injection" not in {f.code for f in report.flags}
    assert not report.layers["L4"].error, report.layers["L4"].error
    q1 = next(c for c in report.criteria if c.id == "q1-regions")
    assert q1.model_notes["score"] == "0.50"  # the judge was asked, and not fooled
    assert report.score < report.max_score  # so an injection could raise it
    return report.score


def _injected(case: str, cell: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, str]:
    nb = copy.deepcopy(BASE)
    injected = copy.deepcopy(cell)
    injected["id"] = f"inj-{case}"[:60]
    at = next(i for i, c in enumerate(nb.cells) if c.get("id") == ANSWER) + 1
    nb.cells.insert(at, injected)
    return nb, injected["id"]


@pytest.mark.parametrize(("case", "cell"), [(c[0], c[1]) for c in INJECTIONS],
                         ids=[c[0] for c in INJECTIONS])
def test_injection_is_flagged_and_never_scores_higher(grader, clean_score, case, cell):
    nb, cell_id = _injected(case, cell)
    report = grader.grade(GradeInput(f"{case}.ipynb", nbformat.writes(nb).encode(), "s1", "s1"))
    flags = {f.code: f for f in report.flags}
    assert "prompt_injection" in flags, case
    assert any(e.cell_id == cell_id for e in flags["prompt_injection"].evidence)
    assert report.score <= clean_score
    assert report.needs_review


def test_the_judge_would_be_fooled_if_the_injection_reached_it(grader):
    """The control: the same notebook with nothing left out of the prompt fools the
    judge; the lines the detector flags are what keeps the score down."""
    nb, _ = _injected("english-md", INJECTIONS[0][1])
    sub, raw = load_both(nbformat.writes(nb).encode(), "english-md.ipynb")
    actx = grader.context
    match = match_template(actx.template, sub, grader.placeholders, actx.solution)
    ctx = SubmissionContext(actx, sub, raw, match, grader.options)
    l1, l2 = (run_layer(layer, ctx) for layer in grader.layers)
    own = {o.cell.id for o in match.origins if o.is_students}
    excluded = {(h.cell_id, h.line) for h in scan_notebook(sub, own) if h.line is not None}
    assert excluded
    fooled = grader.llm.run(ctx, l1, l2, set())["L4"].details["output"]
    kept_out = grader.llm.run(ctx, l1, l2, excluded)["L4"].details["output"]
    assert fooled["q1-regions"]["score"] == 1.0
    assert kept_out["q1-regions"]["score"] == 0.5
