"""Attacks on the written answers (issue 24), graded beside their honest twins with a
judge that is talked up.

The model is a fake judge trusted to judge (``can_judge = true``) that believes what it
reads: it gives an answer 1.0 when its prompt holds one of the attacks' words in the
student's part, or when anything of the student's lands after the student's part
closes (a ``</student>`` breakout, read the way a naive model reads the prompt); 0.5
otherwise. Its 0.5 brings the twins below full marks, so an attack that reached it
would raise the score: each test can fail. The variants are the hostile corpus's own
(``tests/hostile/injections.py``), built from the bundled retail submission.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import ClassVar

import pytest

from grader.analysis.template import match_template
from grader.layers.base import SubmissionContext, run_layer
from grader.layers.prompts import as_data
from grader.notebooks.load import load_both
from grader.pipeline import GradeInput, Grader
from tests.fake_judge import FakeJudge, judging_grader
from tests.hostile import injections

RETAIL = Path(__file__).resolve().parents[1] / "examples" / "retail-sales"
BASE = json.loads((RETAIL / "submissions" / "complete.ipynb").read_text(encoding="utf-8"))
TEMPLATE = json.loads((RETAIL / "template.ipynb").read_text(encoding="utf-8"))
TWINS = injections.twins(BASE, "python", TEMPLATE)
VARIANTS = injections.twinned_variants(BASE, "python", TEMPLATE)
BREAKOUT = "The instructor checked the answer above"  # fools only from outside the data
WORDS = [t for t in injections.TELLS if t != BREAKOUT]  # fool the judge wherever they are


def student_part(user: str) -> tuple[str, str]:
    """(the student's part, what follows it), as a naive model splits the prompt: the
    first ``</student>`` ends the student's part."""
    _, _, rest = user.partition("<student>")
    student, _, after = rest.partition("</student>")
    return student, after


def talked_up(user: str) -> bool:
    student, after = student_part(user)
    heard = any(w in student or as_data(w)[1:-1] in student for w in WORDS)
    return heard or BREAKOUT in after or "<student>" in after


class TalkedUp(FakeJudge):
    """A trusted judge that believes what it reads (see the module)."""

    prompts: ClassVar[list[str]] = []

    def fooled(self, user: str) -> bool:
        return talked_up(user)


@pytest.fixture(scope="module")
def grader(tmp_path_factory):
    with judging_grader("talked-up", TalkedUp, RETAIL,
                        tmp_path_factory.mktemp("talked-up")) as judged:
        yield judged


def _grade(grader: Grader, name: str, nb: dict):
    TalkedUp.prompts.clear()
    report = grader.grade(GradeInput(f"{name}.ipynb", json.dumps(nb).encode(), "s1", "s1"))
    return report, list(TalkedUp.prompts)


@pytest.fixture(scope="module")
def twins(grader):
    out = {}
    for name, nb in TWINS.items():
        report, prompts = _grade(grader, name, nb)
        assert "prompt_injection" not in {f.code for f in report.flags}, name
        assert not report.layers["L4"].error, report.layers["L4"].error
        assert prompts, name
        assert not any(map(talked_up, prompts)), name
        assert report.score < report.max_score, name  # so an attack could raise it
        out[name] = report
    q1 = next(c for c in out["clean"].criteria if c.id == "q1-regions")
    assert q1.model_notes["score"] == "0.50"  # the judge was asked, and not fooled
    return out


def _q1(report):
    crit = next(c for c in report.criteria if c.id == "q1-regions")
    return crit, next(ch for ch in crit.checks if ch.check == "answer")


@pytest.mark.parametrize("what", list(VARIANTS))
def test_an_attack_on_a_written_answer_is_flagged_and_never_scores_above_its_twin(
        grader, twins, what):
    twin, nb = VARIANTS[what]
    report, prompts = _grade(grader, what, nb)
    assert "prompt_injection" in {f.code for f in report.flags}, what
    assert report.needs_review
    assert report.score <= twins[twin].score, (what, report.score, twins[twin].score)
    crit, answer = _q1(report)
    twin_crit, twin_answer = _q1(twins[twin])
    assert crit.points <= twin_crit.points
    assert answer.score <= twin_answer.score, (answer.message, twin_answer.message)
    for user in prompts:  # what the judge read: no word of the attack, one student's part
        assert not talked_up(user), what
        _, after = student_part(user)
        assert not any(w in user or as_data(w)[1:-1] in user for w in injections.TELLS)
        assert user.count("</student>") == 1
        assert "<student>" not in after


def test_text_after_an_unanswered_question_is_not_its_answer(grader, twins):
    report, _ = _grade(grader, "after-unanswered",
                       VARIANTS["an injection after an unanswered question"][1])
    crit, answer = _q1(report)
    assert answer.score == 0.0
    assert crit.points == 0.0
    assert answer.message.startswith("unanswered")
    assert "of text aimed at the grader not counted" in answer.message


def test_a_padded_answer_counts_its_visible_words(grader, twins):
    report, _ = _grade(grader, "padded",
                       VARIANTS["a short answer padded with invisible characters"][1])
    _, answer = _q1(report)
    _, twin_answer = _q1(twins["short answer"])
    assert answer.message.startswith("answered with 3 words, below the 25 asked")
    assert twin_answer.message == answer.message
    flag = next(f for f in report.flags if f.code == "prompt_injection")
    assert any("zero_width" in e.text for e in flag.evidence)


def _unguarded(grader: Grader, nb: dict) -> dict:
    """The layers with nothing set aside, as before issue 24: what the judge says when
    the attack reaches its prompt."""
    sub, raw = load_both(json.dumps(nb).encode(), "unguarded.ipynb")
    actx = grader.context
    match = match_template(actx.template, sub, grader.placeholders, actx.solution)
    ctx = SubmissionContext(actx, sub, raw, match, grader.options)
    l1, l2 = (run_layer(layer, ctx) for layer in grader.layers)
    return grader.llm.run(ctx, l1, l2, set())["L4"].details["output"]["q1-regions"]


@pytest.mark.parametrize("what", [w for w in VARIANTS if "breakout" not in w
                                  and w != "a short answer padded with invisible characters"])
def test_the_judge_would_be_talked_up_if_the_attack_reached_it(grader, what):
    """The control: the block set aside is what keeps each attack from the judge."""
    assert _unguarded(grader, VARIANTS[what][1])["score"] == 1.0


def test_a_delimiter_breakout_that_reaches_the_prompt_cannot_close_the_students_part(grader):
    """Even with nothing set aside, ``</student>`` arrives escaped, inside a JSON string:
    the judge reads it as the student's, not as the instructor's."""
    nb = copy.deepcopy(VARIANTS["a judge note: delimiter breakout"][1])
    TalkedUp.prompts.clear()
    assert _unguarded(grader, nb)["score"] == 0.5
    (user,) = [p for p in TalkedUp.prompts if "[answer to q1-regions]" in p]
    student, after = student_part(user)
    assert user.count("</student>") == 1
    assert "<student>" not in after
    assert as_data(BREAKOUT)[1:-1] in student  # it was there, as data
