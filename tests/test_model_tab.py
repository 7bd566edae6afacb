"""A grade's Model tab (grader.views.model_tab, model_state, advisory.batch_agreement):
advisory notes never silently discarded, "wrote nothing" and "models off" only when true,
and a route's agreement measured on the grade's own batch."""

from __future__ import annotations

from pathlib import Path

from grader.store.database import Store
from grader.types import CriterionResult, GradeReport, LayerResult
from grader.views.advisory import Agreement, batch_agreement, measure
from grader.views.model_state import model_states
from grader.views.model_tab import model_tab
from grader.views.reports import request_rows
from tests.test_model_notes import GOOD_ISSUE, TINY, code, report, written


def _on_this_batch(r: GradeReport) -> Agreement:
    return Agreement(measure([r]), "this batch")


def test_advisory_notes_of_a_route_that_agrees_too_seldom_are_folded_with_their_count():
    """Issue 33: a route that agreed with the checks 32% of the time had all its notes
    hidden, and the tab said the models found nothing to comment on."""
    r = report(code("a", 10.0, "not met"), code("b", 10.0, "not met"),
               code("c", 0.0, "not met"),  # agrees by chance: 1 of 3
               written("w", 4.0, "1.0", "The answer names the join keys clearly.", ""))
    tab = model_tab(r, _on_this_batch(r))
    # the feedback route agrees (1 of 1) and its note is a sentence: shown; the code
    # route agrees 33% of the time: none of its notes unfolded
    assert [row["criterion"] for row in tab.shown] == ["w"]
    (l3,) = [f for f in tab.folded if f.layer == "L3"]
    assert l3.count == 3  # every note of the layer, none dropped
    assert "3 notes kept from the student's letter" in l3.label
    assert l3.label.endswith("advisory: this route agreed with the checks 33% of the time on "
                             "this batch")
    assert "never reaches a letter" in l3.why
    assert "agreed with the checks on 1 of 3 criteria (33%)" in l3.why
    assert [row["criterion"] for row in l3.rows] == ["a", "b", "c"]
    assert {row["model wrote"] for row in l3.rows} == {GOOD_ISSUE}  # as the model wrote it
    assert l3.rows[0]["folded because"] == "the route agrees too seldom to show it"
    assert tab.silent == []  # the model wrote plenty: never "found nothing"
    states = {s.layer: s for s in tab.states}
    assert "over this batch" in states["L3"].text
    assert "models were off" not in " ".join(s.text for s in tab.states)


def test_a_trusted_route_s_agreeing_sentences_show_and_the_rest_fold_with_why():
    r = report(code("a", 10.0, "met"), code("b", 0.0, "not met"), code("c", 0.0, "not met"),
               code("d", 10.0, "met", issue="); "), code("e", 10.0, "not met"))  # 4 of 5: 80%
    tab = model_tab(r, _on_this_batch(r))
    assert [row["criterion"] for row in tab.shown] == ["a", "b", "c"]
    (l3,) = tab.folded
    assert l3.label.endswith("agreed with the checks 80% of the time on this batch")
    why = {row["criterion"]: row["folded because"] for row in l3.rows}
    assert why == {"d": "it holds no sentence, only labels or numbers",
                   "e": "it disagrees with the checks (model: not met; checks: met)"}
    assert len(tab.shown) + l3.count == 5  # each note in one place or the other


def test_wrote_nothing_only_when_the_model_wrote_nothing():
    quiet = report(CriterionResult("a", "a", "code", 10.0, 10.0))  # ran, no note at all
    tab = model_tab(quiet, _on_this_batch(quiet))
    assert tab.silent == ["Code analysis (L3) ran and wrote nothing on this student's work.",
                          "Written feedback (L4) ran and wrote nothing on this student's work."]
    assert tab.folded == []
    spoke = report(code("a", 10.0, "not met"))
    assert [s for s in model_tab(spoke, _on_this_batch(spoke)).silent if "(L3)" in s] == []


def _graded(**layers: LayerResult) -> GradeReport:
    return GradeReport("a.ipynb", "sha", "hw1", "v1", "graded", 5.0, 10.0,
                       criteria=[CriterionResult("a", "a", "code", 10.0, 5.0)],
                       layers={"L1": LayerResult("L1"), "L2": LayerResult("L2"), **layers})


def test_models_off_only_when_the_grade_records_it():
    off = {"not_run": "models_off"}
    told = model_tab(_graded(L3=LayerResult("L3", details=off),
                             L4=LayerResult("L4", details=off)), Agreement([], "this batch"))
    assert told.all_off
    assert all("the models were off when it was graded" in s.text for s in told.states)

    unknown = model_tab(_graded(), Agreement([], "this batch"))  # graded before the record
    assert not unknown.all_off
    assert [s.state for s in unknown.states] == ["unknown", "unknown"]
    assert all("does not record why" in s.text for s in unknown.states)

    # the models were on: the feedback layer ran, the code layer had nothing to read
    ran = LayerResult("L4", details={"advisory": True, "route": "feedback:x", "output": {}})
    (l3, l4) = model_states(_graded(L4=ran))
    assert (l3.state, l4.state) == ("not run", "advisory")
    assert "nothing of the student's own for it to read" in l3.text

    why = LayerResult("L3", details={"not_run": "route_down"})
    queued = LayerResult("L4", details={"pending": True})
    (l3, l4) = model_states(_graded(L3=why, L4=queued))
    assert (l3.state, l4.state) == ("not run", "pending")
    assert "no model route could take the request" in l3.text
    assert "fill in here when it ends" in l4.text


def _stored(store: Store, aid: int, rv: int, name: str, r: GradeReport) -> int:
    """``r`` graded in a batch of its own; returns its grade id."""
    sha = f"{abs(hash(name)):064x}"[:64]
    r.sha256 = sha
    sub = store.add_submission(aid, sha, f"{name}.ipynb", name)
    batch = store.start_batch(aid, rv, [(f"{name}.ipynb", sha)])
    (item,) = store.batch_items(batch)
    return store.save_grade(sub, rv, r, item.id)


def test_agreement_is_measured_on_the_grade_s_own_batch(tmp_path: Path):
    with Store(tmp_path / "grader.db") as store:
        aid = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
        rv = store.add_rubric_version(aid, "v1", "{}")
        wrong = _stored(store, aid, rv, "s1", report(code("a", 10.0, "not met"),
                                                     code("b", 10.0, "not met"),
                                                     code("c", 0.0, "not met")))
        right = _stored(store, aid, rv, "s2", report(code("a", 10.0, "met")))
        first, second = batch_agreement(store, wrong), batch_agreement(store, right)
        unbatched = batch_agreement(store, None)
    (l3,) = [s for s in first.routes if s.layer == "L3" and s.route == TINY]
    assert (first.over, l3.grades, l3.agreed, l3.judged) == ("this batch", 1, 1, 3)
    (l3,) = [s for s in second.routes if s.layer == "L3"]
    assert (l3.agreed, l3.judged) == (1, 1)
    assert unbatched.over == "the 2 newest grades with model notes"


def test_layers_that_did_not_run_are_no_route_and_made_no_request():
    r = _graded(L3=LayerResult("L3", details={"not_run": "models_off"}),
                L4=LayerResult("L4", details={"pending": True}))
    assert measure([r]) == []  # no "unknown route" in the Dashboard's agreement table
    assert request_rows(r) == []  # "No model requests were made for this grade."

