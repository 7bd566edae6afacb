"""The rubric editor's tables (grader.rubrics.edit) and the re-score preview
(grader.service.rescore).

The preview runs against a real store holding grades made by really grading the
bundled retail-sales submissions; students are student001, student002, ...
"""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.assignment import Assignment, load_assignment
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from grader.rubrics.check_fields import ASPECTS, EVIDENCE, Check, freeze
from grader.rubrics.edit import (
    CHECK_COLUMNS,
    CRITERIA_COLUMNS,
    format_options,
    rows_from_rubric,
    rubric_from_rows,
)
from grader.rubrics.import_seed import import_seed_file
from grader.rubrics.schema import Criterion, Rubric, load_rubric, rubric_from_dict, rubric_to_dict
from grader.service.batch import grade_batch
from grader.service.rescore import changed_checks, changes, preview_rescore, preview_rows
from grader.store.database import Store

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
RETAIL = REPO / "examples" / "retail-sales"


def retail() -> Rubric:
    return load_rubric(REPO / "rubrics" / "retail-sales.json")


def through_frames(criteria: list[dict], checks: list[dict]) -> tuple[list[dict], list[dict]]:
    """The rows as st.data_editor hands them back: via DataFrames (numpy values, NaN)."""
    return (pd.DataFrame(criteria, columns=CRITERIA_COLUMNS).to_dict("records"),
            pd.DataFrame(checks, columns=CHECK_COLUMNS).to_dict("records"))


def edit(r: Rubric, crit: dict[int, dict] | None = None, chk: dict[int, dict] | None = None,
         **kw):
    criteria, checks = rows_from_rubric(r)
    for i, values in (crit or {}).items():
        criteria[i].update(values)
    for i, values in (chk or {}).items():
        checks[i].update(values)
    return rubric_from_rows(*through_frames(criteria, checks), r, **kw)


def where(result) -> set[tuple[str, tuple[int, ...], str]]:
    return {(p.table, p.rows, p.field) for p in result.errors}


# -- round trips --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["retail-sales", "r-joins", "r-strings-dates", "py-functions",
                                  "r-sleep-survey", "py-levels"])
def test_bundled_rubrics_round_trip_exactly(name):
    r = load_rubric(REPO / "rubrics" / f"{name}.json")
    result = rubric_from_rows(*through_frames(*rows_from_rubric(r)), r)
    assert result.problems == ()
    assert result.rubric == r
    assert result.rubric.version == r.version


def test_imported_seed_rubric_round_trips():
    r = import_seed_file(SHARED / "course-r" / "strings-dates" / "rubric.seed-format.json").rubric
    assert rubric_from_rows(*rows_from_rubric(r), r).rubric.version == r.version


def test_options_show_only_what_differs_from_the_defaults():
    ch = Check("output", 0.5, variable="df", compare=("shape", "values"), rtol=0.01,
               partial=(("shape", 0.25), ("values", 0.75)))
    assert format_options(ch) == "compare=shape, values; rtol=0.01; partial=shape:0.25, values:0.75"
    assert format_options(Check("answer", question="Q1", min_words=30)) == "min_words=30"


# Texts rich in what the tables' syntax uses: separators, quotes, escapes, edge spaces.
TEXT = st.lists(st.one_of(st.sampled_from(list(' ,;:="\\\nab')),
                          st.characters(blacklist_categories=("Cs",))),
                max_size=12).map("".join)
IDS = st.from_regex(r"[a-z0-9][a-z0-9_-]{0,8}", fullmatch=True)
NAME = TEXT.filter(lambda t: "|" not in t)
# a name, or an any-of group written canonically ("a | b": schema version 2)
ENTRY = st.one_of(NAME, st.lists(NAME.map(str.strip).filter(bool), min_size=2, max_size=3)
                  .map(" | ".join))


# JSON values an instructor may expect (schema version 2 value checks)
JSON = st.recursive(st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=False,
                                                                     allow_infinity=False),
                              TEXT, st.booleans()),
                    lambda inner: st.lists(inner, max_size=3), max_leaves=5)


@st.composite
def checks_for(draw, kind: str, earlier: tuple[str, ...] = ()) -> tuple[Check, ...]:
    types = (["assigns", "calls", "output", "runs", "value", "printed", "plot"]
             if kind == "code" else ["answer"])
    n = draw(st.integers(1, 3))
    out = []
    for _ in range(n):
        t = draw(st.sampled_from(types))
        kw: dict = {}
        if t in ("value", "printed", "plot", "output") and earlier and draw(st.booleans()):
            kw["depends_on"] = tuple(draw(st.lists(st.sampled_from(earlier), min_size=1,
                                                   max_size=2, unique=True)))
        if t == "value":
            kw.update(expression=draw(TEXT.filter(str.strip)),
                      expected=tuple(freeze(v) for v in draw(st.lists(JSON, max_size=3))))
        elif t == "printed":
            if draw(st.booleans()):
                kw["pattern"] = re.escape(draw(TEXT.filter(bool)))
            else:
                kw["number"] = draw(st.floats(-1e6, 1e6))
            kw.update(question=draw(TEXT), evidence=draw(st.sampled_from(EVIDENCE)))
        elif t == "plot":
            kw.update(question=draw(TEXT), evidence=draw(st.sampled_from(EVIDENCE)))
        elif t == "assigns":
            kw["names"] = tuple(draw(st.lists(ENTRY, min_size=1, max_size=3)))
        elif t == "calls":
            kw["functions"] = tuple(draw(st.lists(ENTRY, min_size=1, max_size=3)))
        elif t == "output":
            compare = tuple(draw(st.lists(st.sampled_from(ASPECTS), min_size=1, max_size=3,
                                          unique=True)))
            kw.update(variable=draw(TEXT.filter(bool)), compare=compare,
                      rtol=draw(st.floats(0, 1)), ignore_order=draw(st.booleans()))
            if draw(st.booleans()):
                kw["partial"] = tuple((a, 1 / len(compare)) for a in compare)
        elif t == "runs":
            kw["max_errors"] = draw(st.integers(0, 5))
        else:
            kw.update(question=draw(TEXT.filter(str.strip)), min_words=draw(st.integers(1, 80)),
                      placeholders=tuple(draw(st.lists(TEXT, max_size=2))))
        if draw(st.integers(0, 4)) == 0:  # a field this type does not read (schema-valid)
            kw["min_words" if t != "answer" else "max_errors"] = draw(st.integers(2, 9))
        out.append(Check(t, 1 / n, **kw))
    return tuple(out)


@st.composite
def rubrics(draw) -> Rubric:
    ids = draw(st.lists(IDS, min_size=1, max_size=4, unique=True))
    criteria = []
    for i, cid in enumerate(ids):
        kind = draw(st.sampled_from(["code", "written"]))
        criteria.append(Criterion(
            cid, draw(TEXT), kind, draw(st.floats(0, 50)), draw(checks_for(kind, ids[:i])),
            task=draw(TEXT), description=draw(TEXT), expectations=draw(TEXT)))
    if not any(c.points for c in criteria):  # total_points must be positive
        criteria[0] = dataclasses.replace(criteria[0], points=1.0)
    total = sum(c.points for c in criteria)
    return Rubric(draw(TEXT), draw(st.sampled_from(["python", "r"])), total, tuple(criteria),
                  tuple(draw(st.lists(TEXT.filter(str.strip), max_size=2))))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rubrics())
def test_rows_round_trip_any_rubric(r):
    """Names and texts with commas, semicolons, quotes and edge spaces, any point values,
    and fields a check type does not use all survive the tables."""
    r = rubric_from_dict(rubric_to_dict(r))  # a valid rubric, as files give it
    result = rubric_from_rows(*through_frames(*rows_from_rubric(r)), r)
    assert result.errors == [], [str(p) for p in result.errors]
    assert result.rubric is not None
    assert result.rubric.version == r.version


# -- editing ------------------------------------------------------------------------------
def test_points_edit_moves_the_total():
    result = edit(retail(), {0: {"points": 12}})
    assert result.ok
    assert result.total_points == 30
    assert result.rubric.total_points == 30
    assert changes(retail(), result.rubric) == ["total points: 20 -> 30",
                                                "load-data: points 2 -> 12"]


def test_keeping_the_total_refuses_points_that_do_not_add_up():
    result = edit(retail(), {0: {"points": 12}}, total_points=20)
    assert not result.ok
    assert ("rubric", (), "total_points") in where(result)
    assert "add up to 30" in str(result.errors[0])


def test_order_column_reorders_and_blank_order_goes_last():
    r = retail()
    criteria, checks = rows_from_rubric(r)
    criteria[0]["order"], criteria[1]["order"] = 2, 1
    criteria.append({"order": None, "id": "plot", "title": "A plot", "kind": "code",
                     "points": 1})
    checks.append({"criterion": "plot", "type": "calls", "weight": 1.0, "target": "plot, bar",
                   "options": ""})
    result = rubric_from_rows(*through_frames(criteria, checks), r)
    assert result.ok, [str(p) for p in result.problems]
    ids = [c.id for c in result.rubric.criteria]
    assert ids[:2] == ["clean-orders", "load-data"]
    assert ids[-1] == "plot"
    assert result.rubric.criterion("plot").checks[0].functions == ("plot", "bar")
    assert result.rubric.total_points == 21
    assert "criteria reordered" in changes(r, result.rubric)


def test_deleting_a_criterion_leaves_its_checks_flagged():
    r = retail()
    criteria, checks = rows_from_rubric(r)
    del criteria[0]
    result = rubric_from_rows(criteria, checks, r)
    assert not result.ok
    assert {("checks", (i,), "criterion") for i in range(3)} <= where(result)
    kept = rubric_from_rows(criteria, checks[3:], r)
    assert kept.ok
    assert next(c.id for c in kept.rubric.criteria) == "clean-orders"


@pytest.mark.parametrize(("crit", "chk", "expected"), [
    ({0: {"points": -1}}, {}, ("criteria", (0,), "points")),
    ({2: {"id": "Revenue By Region"}}, {}, ("criteria", (2,), "id")),
    ({1: {"id": "load-data"}}, {}, ("criteria", (1,), "id")),
    ({3: {"kind": None}}, {}, ("criteria", (3,), "kind")),
    ({}, {0: {"weight": 0.5}}, ("checks", (0, 1, 2), "weight")),
    ({}, {1: {"type": "answer"}}, ("checks", (1,), "type")),
    ({}, {2: {"options": "compare=type, values; partial=type:0.5, values:0.4"}},
     ("checks", (2,), "options")),
    ({}, {2: {"options": "bogus=1"}}, ("checks", (2,), "options")),
    ({}, {2: {"options": "rtol=small"}}, ("checks", (2,), "options")),
    ({}, {0: {"target": '"orders, products'}}, ("checks", (0,), "target")),
    ({}, {0: {"target": ""}}, ("checks", (0,), "target")),
    ({}, {0: {"weight": "a lot"}}, ("checks", (0,), "weight")),
])
def test_problems_are_placed_on_their_row_and_field(crit, chk, expected):
    result = edit(retail(), crit, chk)
    assert not result.ok
    assert expected in where(result), [str(p) for p in result.problems]


def test_problem_text_names_the_row_and_criterion():
    result = edit(retail(), {0: {"points": -1}})
    assert str(result.errors[0]).startswith("Criteria row 1 (load-data), points:")


def test_option_a_check_does_not_use_is_a_warning_only():
    result = edit(retail(), chk={1: {"options": "min_words=3"}})
    assert result.ok
    assert [p.field for p in result.warnings] == ["options"]
    assert "not used by a calls check" in result.warnings[0].message


def test_quoted_texts_keep_commas_and_spaces():
    result = edit(retail(), chk={0: {"target": 'orders, "odd, name", " spaced "'}})
    assert result.ok
    assert result.rubric.criteria[0].checks[0].names == ("orders", "odd, name", " spaced ")


# -- re-score preview ------------------------------------------------------------------------
@pytest.fixture
def graded(tmp_path) -> tuple[Store, Assignment, dict[str, str]]:
    """Five retail-sales submissions graded from their stored outputs (no execution):
    layer 1 scores for real, output checks are skipped. Returns the store, the
    assignment, and student id -> submission."""
    a = load_assignment(RETAIL)
    stems = ["complete", "partial", "injected", "runtime_errors", "template_only"]
    items = [GradeInput(f"{s}.ipynb", (RETAIL / "submissions" / f"{s}.ipynb").read_bytes(),
                        f"student{i:03d}", f"student{i:03d}") for i, s in enumerate(stems, 1)]
    store = Store(tmp_path / "grader.db")
    grade_batch(Grader(a, GradeOptions(execute=False, use_llm=False)), items, store)
    yield store, a, {it.student_id: s for it, s in zip(items, stems, strict=True)}
    store.close()


def points_of(store: Store, a: Assignment, cid: str) -> dict[str, float]:
    """Student id -> the points the stored grade gives on criterion ``cid``."""
    out = {}
    for g in store.list_grades(store.assignment_id(a.name)):
        out[g.student_id] = next(c.points for c in store.get_report(g.id).criteria
                                 if c.id == cid)
    return out


def rubric_with(r: Rubric, cid: str, **changes) -> Rubric:
    crits = [dataclasses.replace(c, **changes) if c.id == cid else c for c in r.criteria]
    return dataclasses.replace(r, criteria=tuple(crits),
                               total_points=math.fsum(c.points for c in crits))


def test_unchanged_rubric_moves_nobody(graded):
    store, a, _ = graded
    p = preview_rescore(store, a, a.rubric)
    assert len(p.rows) == 5
    assert p.movers == []
    assert p.rerun == []
    assert p.recomputed == ()
    assert all(r.new_score == r.old_score for r in p.rows)


def test_doubling_points_moves_exactly_those_with_credit_on_it(graded):
    store, a, _ = graded
    before = points_of(store, a, "q1-regions")
    assert 0 < min(v for v in before.values() if v) < 2  # partial credit is among them
    new = rubric_with(a.rubric, "q1-regions", points=4.0)
    p = preview_rescore(store, a, new)
    moved = {r.name: r.delta for r in p.movers}
    assert moved == {s: pytest.approx(v) for s, v in before.items() if v > 0}
    assert p.rerun == []  # rebuilt from the stored results
    assert p.rows[0].delta == max(moved.values())  # biggest move first
    assert all("q1-regions" in r.moved[0] for r in p.movers)


def test_removing_a_criterion_takes_its_points_away(graded):
    store, a, _ = graded
    before = points_of(store, a, "runs-clean")
    new = dataclasses.replace(a.rubric, criteria=a.rubric.criteria[:5] + a.rubric.criteria[6:],
                              total_points=19.0)
    p = preview_rescore(store, a, new)
    assert {r.name: r.delta for r in p.rows} == {s: pytest.approx(-v) for s, v in before.items()}
    assert {r.name for r in p.movers} == {s for s, v in before.items() if v > 0}
    assert all(r.moved == (f"runs-clean: removed, was {before[r.name]:g}",) for r in p.movers)
    assert p.rows[0].new_max == 19.0


def test_reordering_moves_nobody(graded):
    store, a, _ = graded
    new = dataclasses.replace(a.rubric, criteria=a.rubric.criteria[::-1])
    assert new.version != a.rubric.version
    assert preview_rescore(store, a, new).movers == []


def test_a_new_check_is_evaluated_by_layer_1_as_grading_would(graded):
    store, a, _ = graded
    crit = a.rubric.criterion("revenue-by-region")
    checks = (dataclasses.replace(crit.checks[0], weight=0.1),
              Check("calls", 0.1, functions=("groupby", "sort_values")), crit.checks[1])
    new = rubric_with(a.rubric, "revenue-by-region", checks=checks)
    assert changed_checks(a.rubric, new) == {("revenue-by-region", "calls",
                                              "groupby, sort_values")}
    p = preview_rescore(store, a, new)
    assert {r.rerun for r in p.rows} == {("L1",)}
    assert p.recomputed == ("revenue-by-region: calls groupby, sort_values",)
    fresh = Grader(dataclasses.replace(a, rubric=new), GradeOptions(execute=False))
    for r in p.rows:
        sub = r.name  # student ids: look the notebook up through the store
        grade = next(g for g in store.list_grades(store.assignment_id(a.name))
                     if g.student_id == sub)
        item = GradeInput(grade.file, store.get_file(grade.sha256), sub, sub)
        assert r.new_score == fresh.grade(item).score, sub
    assert any(r.moves for r in p.rows)


def test_overrides_are_listed_not_applied(graded):
    store, a, students = graded
    aid = store.assignment_id(a.name)
    grade = next(g for g in store.list_grades(aid) if students[g.student_id] == "partial")
    store.override(grade.id, "q2-trend-products", 1.5, "answered on paper", "instructor")
    p = preview_rescore(store, a, rubric_with(a.rubric, "q1-regions", points=4.0))
    row = next(r for r in p.rows if r.grade_id == grade.id)
    assert row.overrides == ("q2-trend-products: 0 -> 1.5 (answered on paper; instructor)",)
    assert row.current_score == pytest.approx(row.old_score + 1.5)
    assert row.new_score == pytest.approx(row.old_score + 2.0)  # q1 doubled, no override
    assert preview_rows(p)[[r.grade_id for r in p.rows].index(grade.id)][
        "overrides of the old grade"].startswith("q2-trend-products")


def test_a_notebook_not_stored_is_a_problem_not_a_guess(graded):
    store, a, _ = graded
    aid = store.assignment_id(a.name)
    old = store.get_report(store.list_grades(aid)[0].id)
    rv = next(v.id for v in store.rubric_versions(aid) if v.version == a.rubric.version)
    sub = store.add_submission(aid, "0" * 64, "lost.ipynb", "student099", "student099")
    store.save_grade(sub, rv, dataclasses.replace(old, sha256="0" * 64, file="lost.ipynb"))
    crit = a.rubric.criterion("load-data")
    fewer = dataclasses.replace(crit.checks[0], names=("orders",))
    new = rubric_with(a.rubric, "load-data", checks=(fewer, *crit.checks[1:]))
    p = preview_rescore(store, a, new)
    first = p.rows[0]
    assert first.name == "student099"
    assert first.new_score is None
    assert "not stored" in first.problem
    assert all(not r.problem for r in p.rows[1:])


def test_anonymous_preview_shows_pseudonyms(graded):
    store, a, _ = graded
    p = preview_rescore(store, a, rubric_with(a.rubric, "q1-regions", points=4.0),
                        anonymous=True)
    assert {r.name for r in p.rows} == {f"Student {i:03d}" for i in range(1, 6)}


def test_no_grades_yet_is_an_empty_preview(tmp_path):
    a = load_assignment(RETAIL)
    with Store(tmp_path / "empty.db") as store:
        assert preview_rescore(store, a, rubric_with(a.rubric, "q1-regions", points=4)).rows == ()


@pytest.mark.slow
def test_a_changed_output_check_runs_layer_2_again(tmp_path):
    """Executed grades: comparing fewer aspects of revenue_by_region re-runs the notebooks
    (sandboxed, as they were graded) and lifts the submission whose values were wrong."""
    a = load_assignment(RETAIL)
    stems = {"student001": "complete", "student002": "wrong_outputs"}
    items = [GradeInput(f"{s}.ipynb", (RETAIL / "submissions" / f"{s}.ipynb").read_bytes(),
                        sid, sid) for sid, s in stems.items()]
    with Store(tmp_path / "grader.db") as store:
        grade_batch(Grader(a, GradeOptions(use_llm=False)), items, store)
        crit = a.rubric.criterion("revenue-by-region")
        loose = dataclasses.replace(crit.checks[1], compare=("type", "shape", "columns"),
                                    partial=())
        p = preview_rescore(store, a, rubric_with(a.rubric, "revenue-by-region",
                                                  checks=(crit.checks[0], loose)))
    assert {r.rerun for r in p.rows} == {("L1", "L2")}
    rows = {r.name: r for r in p.rows}
    assert rows["student002"].delta == pytest.approx(3 * 0.8 * 0.5)
    assert rows["student001"].delta == 0
    assert not rows["student001"].moves
    assert p.rows[0].name == "student002"


# -- schema version 2 checks in the tables -------------------------------------------------
def functions() -> Rubric:
    return load_rubric(REPO / "rubrics" / "py-functions.json")


def row_of(r: Rubric, ctype: str) -> int:
    _, checks = rows_from_rubric(r)
    return next(i for i, c in enumerate(checks) if c["type"] == ctype)


@pytest.mark.parametrize(("ctype", "values", "field", "says"), [
    ("value", {"options": "expected=[1.5, 2.5"}, "options", "not a JSON value"),
    ("value", {"options": "accept=57"}, "options", "[list]"),
    ("value", {"options": "expected=1; accept=[1, 2]"}, "options", "not both"),
    ("value", {"target": ""}, "target", "needs `expression`"),
    ("printed", {"target": "Busiest (station"}, "target", "not a regular expression"),
    ("printed", {"options": "question=Question 4; evidence=memory"}, "options",
     "not one of both, stored, rerun"),
    ("plot", {"options": "depends_on=nowhere"}, "options", "not a criterion"),
])
def test_version_2_fields_are_checked_inline(ctype, values, field, says):
    r = functions()
    result = edit(r, chk={row_of(r, ctype): values})
    assert not result.ok
    problems = [p for p in result.errors if p.field == field and p.rows == (row_of(r, ctype),)]
    assert any(says in p.message for p in problems), [str(p) for p in result.problems]


def test_a_value_check_edited_to_accept_two_values_and_a_printed_number():
    r = functions()
    result = edit(r, chk={row_of(r, "value"): {"options": "accept=[[1.5, 2.5, 3.5], [1.5, 2.5]]"},
                          row_of(r, "printed"): {"target": "", "options":
                                                 "number=4172; atol=0.5; question=Question 4"}})
    assert result.ok, [str(p) for p in result.problems]
    value = next(ch for c in result.rubric.criteria for ch in c.checks if ch.type == "value")
    assert value.expected == ((1.5, 2.5, 3.5), (1.5, 2.5))
    printed = next(ch for c in result.rubric.criteria for ch in c.checks if ch.type == "printed")
    assert (printed.pattern, printed.number, printed.atol) == ("", 4172.0, 0.5)
    again = rubric_from_rows(*through_frames(*rows_from_rubric(result.rubric)), result.rubric)
    assert again.rubric == result.rubric


def test_a_manual_criterion_keeps_its_mark_through_the_tables():
    r = load_rubric(REPO / "rubrics" / "py-levels.json")
    data = rubric_to_dict(r)
    data["criteria"].append({"id": "by-hand", "title": "Part E", "kind": "written",
                             "points": 2, "manual": True})
    data["total_points"] = r.total_points + 2
    manual = rubric_from_dict(data)
    criteria, checks = rows_from_rubric(manual)
    assert [row["manual"] for row in criteria][-1] is True
    result = rubric_from_rows(*through_frames(criteria, checks), manual)
    assert result.rubric == manual
