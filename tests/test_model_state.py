"""What the model layers did for one grade, in words (grader.views.model_state)."""

from __future__ import annotations

from grader.types import GradeReport, LayerResult
from grader.views.model_state import model_states


def _report(**layers: LayerResult) -> GradeReport:
    return GradeReport("a.ipynb", "sha", "demo", "v1", "graded", 5.0, 10.0,
                       layers={"L1": LayerResult("L1"), "L2": LayerResult("L2"), **layers})


def test_models_off_failed_advisory_and_trusted_are_told_apart():
    off = LayerResult("L3", details={"not_run": "models_off"})
    states = model_states(_report(L3=off, L4=LayerResult("L4", details={"not_run":
                                                                         "models_off"})))
    assert [m.state for m in states] == ["off", "off"]
    assert "models were off" in states[0].text

    failed = LayerResult("L3", error="ContextOverflowError (criteria a, b): prompt of 2400 "
                                     "tokens over n_ctx 2048")
    advisory = LayerResult("L4", notes=["answers cut to fit the prompt: q1 (40 words)"],
                           details={"advisory": True})
    l3, l4 = model_states(_report(L3=failed, L4=advisory))
    assert l3.state == "failed"
    assert "the prompt did not fit in the model's context" in l3.text
    assert "n_ctx 2048" in l3.text  # the error itself, not cut off
    assert "sent to review" in l3.text
    assert l4.state == "advisory"
    assert "never to the student" in l4.text
    assert "q1 (40 words)" in l4.text  # what was left out of its prompt

    trusted = model_states(_report(L3=LayerResult("L3", details={"advisory": False}),
                                   L4=LayerResult("L4", details={"advisory": False})))
    assert [m.state for m in trusted] == ["ran", "ran"]


def test_an_ungraded_file_has_no_model_state():
    r = GradeReport("a.ipynb", "", "demo", "v1", "error", None, 10.0, error="not JSON")
    assert model_states(r) == []
