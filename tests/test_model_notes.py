"""An advisory model's notes: well-formed sentences that agree with the checks, from a
route that agrees often enough (grader.rubrics.model_notes, grader.views.advisory), and
the words the Grade and Review pages show for them (grader.views.model_state)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from grader.rubrics.model_notes import check_note, checks_verdict, sentence
from grader.store.database import Store
from grader.types import CriterionResult, GradeReport, LayerResult
from grader.views.advisory import (
    TOO_SMALL,
    advisory_notes,
    agreement_rows,
    measure,
    route_agreement,
    shown_notes,
)
from grader.views.model_state import model_states

TINY = "code:embedded/smollm2-135m"
TINY_FEEDBACK = "feedback:embedded/smollm2-135m"
GOOD_ISSUE = "The loop stops one row early, so the last region is never summed."


def code(cid: str, points: float, verdict: str, issue: str = GOOD_ISSUE,
         **more: str) -> CriterionResult:
    return CriterionResult(cid, cid, "code", 10.0, points,
                           model_notes={"verdict": verdict, "issue": issue, "cells": "c1",
                                        **more})


def written(cid: str, points: float, score: str, strength: str, improve: str
            ) -> CriterionResult:
    return CriterionResult(cid, cid, "written", 4.0, points,
                           model_notes={"score": score, "strength": strength,
                                        "improve": improve, "next_step": ""})


def report(*criteria: CriterionResult, advisory: bool = True, l3: str = TINY,
           l4: str = TINY_FEEDBACK) -> GradeReport:
    layers = {"L3": LayerResult("L3", details={"advisory": advisory, "route": l3,
                                               "output": {}}),
              "L4": LayerResult("L4", details={"advisory": advisory, "route": l4,
                                               "output": {}})}
    return GradeReport("a.ipynb", "sha", "hw1", "v1", "graded",
                       sum(c.points for c in criteria), sum(c.max_points for c in criteria),
                       criteria=list(criteria), layers=layers)


def test_a_sentence_is_words_not_labels_numbers_or_punctuation():
    for noise in ("); ", "1.0", "met", "Not met.", '{"verdict": "met"}', "ok ok ok ok ok ok",
                  "0.5, 0.5; 1.0 / 2", "", "   ", "improve"):
        assert sentence(noise) == "", noise
    assert sentence("  Good use of  groupby to\nsum revenue. ") == \
        "Good use of groupby to sum revenue."
    long = sentence("word " * 100)
    assert long == ""  # one word repeated is no sentence
    cut = sentence(" ".join(["alpha", "beta", "gamma", "delta"] * 25), limit=60)
    assert len(cut) <= 60
    assert cut.endswith("…")


def test_a_note_agrees_when_its_judgement_is_the_checks():
    assert [checks_verdict(s) for s in (1.0, 0.75, 0.5, 0.25, 0.0)] == \
        ["met", "met", "partial", "not met", "not met"]
    full_not_met = check_note(code("a", 10.0, "not met"))
    assert full_not_met is not None
    assert full_not_met.agrees is False
    assert not full_not_met.shown  # well-formed, but it says the opposite of the checks
    met = check_note(code("a", 10.0, "met"))
    assert met is not None
    assert met.agrees is True
    assert met.shown
    assert check_note(code("a", 5.0, "partial")).agrees is True  # type: ignore[union-attr]
    assert check_note(code("a", 5.0, "maybe")).agrees is None  # type: ignore[union-attr]
    garbage = check_note(written("w", 4.0, "1.0", "); ", "1.0"))
    assert garbage is not None
    assert garbage.agrees is True
    assert garbage.sentences == {}
    assert not garbage.shown  # agreeing, but it says nothing
    assert check_note(written("w", 1.0, "0.9", GOOD_ISSUE, "")).agrees is False  # 0.25 vs 0.9
    assert check_note(written("w", 4.0, "high", GOOD_ISSUE, "")).agrees is None
    assert check_note(CriterionResult("x", "x", "code", 1.0, 1.0)) is None


def test_a_route_that_says_not_met_everywhere_is_hidden_with_one_line():
    """What the instructor saw: "not met" on every criterion, full marks included, and
    "strength: ); ; improve: 1.0"."""
    r = report(code("a", 10.0, "not met"), code("b", 10.0, "not met"),
               code("c", 0.0, "not met"),  # agrees by chance
               written("w", 4.0, "1.0", "); ", "1.0"))
    (l3, l4) = advisory_notes(r)
    assert l3.agreement.judged == 3
    assert l3.agreement.agreed == 1
    assert l3.hidden
    assert l3.over == "this grade"
    assert l3.line.endswith(f"agreed with the checks on 1 of 3 criteria (33%) over this "
                            f"grade: {TOO_SMALL}.")
    assert l4.agreement.rate == 1.0
    assert l4.hidden
    assert "none of its 1 notes here is a sentence" in l4.line
    shown = shown_notes(r)
    assert [c.model_notes for c in shown.criteria] == [{}] * 4  # nothing reaches the page
    assert [c.points for c in shown.criteria] == [c.points for c in r.criteria]
    assert r.criteria[0].model_notes["verdict"] == "not met"  # the report itself is kept
    states = {m.layer: m for m in model_states(r)}
    assert TOO_SMALL in states["L3"].text
    assert "1 of 3 criteria (33%)" in states["L3"].text
    assert "never to the student" in states["L3"].text


def test_a_route_that_agrees_shows_only_its_agreeing_sentences():
    r = report(code("a", 10.0, "met", quote="total = df.sum()"),
               code("b", 0.0, "not met", suggestion="1.0"),
               code("c", 0.0, "not met", issue="); "),
               code("d", 10.0, "met"), code("e", 10.0, "not met"))  # 4 of 5 agree: 80%
    (l3,) = advisory_notes(r, measure([r]))
    assert l3.agreement.rate == pytest.approx(0.8)
    assert l3.shown == ("a", "b", "d")  # c agrees but says nothing; e disagrees
    assert "3 of 5 here" in l3.line
    assert "over 1 recent grade:" in l3.line
    notes = {c.id: c.model_notes for c in shown_notes(r, measure([r])).criteria}
    assert [cid for cid, n in notes.items() if n] == ["a", "b", "d"]
    assert notes["a"] == {"verdict": "met", "cells": "c1", "quote": "total = df.sum()",
                          "issue": GOOD_ISSUE}
    assert notes["b"] == {"verdict": "not met", "cells": "c1", "issue": GOOD_ISSUE}  # no "1.0"


def test_trusted_routes_are_measured_but_their_notes_left_as_they_are():
    r = report(code("a", 10.0, "not met"), advisory=False)
    assert advisory_notes(r) == []
    assert shown_notes(r).criteria[0].model_notes == r.criteria[0].model_notes
    (stat,) = [s for s in measure([r]) if s.layer == "L3"]
    assert not stat.advisory
    assert stat.rate == 0.0
    assert agreement_rows([stat])[0]["its notes"] == "shown (trusted)"


def test_agreement_is_measured_per_route_over_the_stored_grades(tmp_path: Path):
    other = "code:remote/big-model"
    with Store(tmp_path / "grader.db") as store:
        a = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
        rv = store.add_rubric_version(a, "v1", "{}")
        for i in range(3):  # the tiny route always says "not met"; the other one is right
            r = report(code("a", 10.0, "not met"), code("b", 0.0, "not met"),
                       l3=TINY if i < 2 else other)
            sha = hashlib.sha256(str(i).encode()).hexdigest()
            r.sha256 = sha
            sub = store.add_submission(a, sha, f"student{i:03d}.ipynb", f"s{i}")
            store.save_grade(sub, rv, r)
        stats = {(s.route, s.layer): s for s in route_agreement(store)}
    tiny = stats[(TINY, "L3")]
    assert (tiny.grades, tiny.judged, tiny.agreed) == (2, 4, 2)
    assert not tiny.trusted
    assert stats[(other, "L3")].grades == 1
    assert stats[(TINY_FEEDBACK, "L4")].judged == 0  # no written criterion
    rows = agreement_rows(stats.values())
    assert rows[0]["agreement"] == "50%"
    assert rows[0]["its notes"] == "folded away"
    # The page's line for one grade uses the stored measure of its route.
    (l3,) = [a for a in advisory_notes(r, stats.values()) if a.layer == "L3"]
    assert l3.over == "1 recent grade"
