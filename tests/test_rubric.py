"""Rubric schema: validation messages, exact load/save round-trips, the seed importer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.assignment import load_assignment
from grader.errors import RubricError
from grader.rubrics.check_fields import ASPECTS, Check
from grader.rubrics.import_seed import import_seed_file
from grader.rubrics.schema import Criterion, Rubric, dumps, loads, rubric_from_dict, rubric_to_dict

SHARED = Path(__file__).resolve().parents[2] / "shared"


def minimal(**over) -> dict:
    data = {
        "schema_version": 1,
        "title": "T",
        "language": "python",
        "total_points": 10,
        "criteria": [
            {
                "id": "a",
                "title": "A",
                "kind": "code",
                "points": 6,
                "checks": [{"type": "assigns", "names": ["x"], "weight": 1}],
            },
            {
                "id": "q1",
                "title": "Q",
                "kind": "written",
                "points": 4,
                "checks": [
                    {"type": "answer", "question": "Question 1", "min_words": 5, "weight": 1}
                ],
            },
        ],
    }
    data.update(over)
    return data


def test_minimal_rubric_loads():
    r = rubric_from_dict(minimal())
    assert r.total_points == 10
    assert [c.id for c in r.criteria] == ["a", "q1"]
    assert r.criteria[1].checks[0].min_words == 5


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["criteria"][0].update(points=7), "add up to 11, but total_points is 10"),
        (lambda d: d["criteria"][0].update(kind="essay"), "unknown kind 'essay'"),
        (
            lambda d: d["criteria"][0]["checks"][0].update(type="regex"),
            "unknown check type 'regex'",
        ),
        (lambda d: d["criteria"][0]["checks"][0].update(weight=0.5), "weights add up to 0.5"),
        (lambda d: d["criteria"][1].update(id="a"), "duplicate id 'a'"),
        (lambda d: d.update(schema_version=7), "schema_version is 7"),
        (lambda d: d.update(language="julia"), "language 'julia'"),
        (lambda d: d["criteria"][0]["checks"][0].pop("names"), "needs `names`"),
        (lambda d: d["criteria"][0].update(colour="red"), "unknown field 'colour'"),
    ],
)
def test_validation_names_each_problem(mutate, message):
    data = minimal()
    mutate(data)
    with pytest.raises(RubricError) as info:
        rubric_from_dict(data, "course/hw1.json")
    assert info.value.file == "course/hw1.json"
    assert any(message in p for p in info.value.problems), info.value.problems


def test_all_problems_are_reported_at_once():
    data = minimal(language="julia", total_points=-1)
    data["criteria"][0]["kind"] = "essay"
    with pytest.raises(RubricError) as info:
        rubric_from_dict(data)
    assert len(info.value.problems) >= 3


def test_output_partial_fractions_must_add_up():
    data = minimal()
    data["criteria"][0]["checks"] = [
        {
            "type": "output",
            "variable": "x",
            "compare": ["shape", "values"],
            "partial": {"shape": 0.3, "values": 0.3},
            "weight": 1,
        }
    ]
    with pytest.raises(RubricError, match=r"partial fractions add up to 0\.6"):
        rubric_from_dict(data)


def test_not_json_is_a_rubric_error():
    with pytest.raises(RubricError, match="not valid JSON"):
        loads("{criteria: nope", "bad.json")


# -- round trip -----------------------------------------------------------------
names = st.lists(
    st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True), min_size=1, max_size=3, unique=True
).map(tuple)


@st.composite
def checks(draw, kind: str) -> tuple[Check, ...]:
    n = draw(st.integers(1, 3))
    weights = [1.0 / n] * n
    weights[-1] = 1.0 - sum(weights[:-1])
    out = []
    for w in weights:
        if kind == "written":
            out.append(
                Check(
                    "answer",
                    w,
                    question=draw(st.text(min_size=1, max_size=20).filter(str.strip)),
                    min_words=draw(st.integers(1, 200)),
                )
            )
            continue
        ctype = draw(st.sampled_from(["assigns", "calls", "output", "runs"]))
        if ctype == "assigns":
            out.append(Check(ctype, w, names=draw(names)))
        elif ctype == "calls":
            out.append(Check(ctype, w, functions=draw(names)))
        elif ctype == "runs":
            out.append(Check(ctype, w, max_errors=draw(st.integers(0, 3))))
        else:
            compare = tuple(draw(st.lists(st.sampled_from(ASPECTS), min_size=1, unique=True)))
            out.append(
                Check(
                    ctype,
                    w,
                    variable=draw(names)[0],
                    compare=compare,
                    rtol=draw(st.sampled_from([1e-6, 0.01])),
                    ignore_order=draw(st.booleans()),
                )
            )
    return tuple(out)


@st.composite
def rubrics(draw) -> Rubric:
    crits = []
    for i in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["code", "written"]))
        crits.append(
            Criterion(
                id=f"c{i}",
                title=draw(st.text(max_size=30)),
                kind=kind,
                points=float(draw(st.integers(0, 50))),
                checks=draw(checks(kind)),
                task=draw(st.text(max_size=10)),
                expectations=draw(st.text(max_size=40)),
            )
        )
    total = sum(c.points for c in crits)
    if total == 0:
        crits[0] = Criterion(crits[0].id, crits[0].title, crits[0].kind, 1.0, crits[0].checks)
        total = 1.0
    return Rubric(
        title=draw(st.text(max_size=30)),
        language=draw(st.sampled_from(["python", "r"])),
        total_points=float(total),
        criteria=tuple(crits),
        placeholders=tuple(draw(st.lists(st.text(min_size=1, max_size=10), max_size=3))),
    )


@settings(max_examples=150, deadline=None)
@given(r=rubrics())
def test_load_save_round_trips_exactly(r: Rubric):
    text = dumps(r)
    again = loads(text)
    assert again == r
    assert dumps(again) == text
    assert again.version == r.version


def test_version_changes_with_content():
    r = rubric_from_dict(minimal())
    data = rubric_to_dict(r)
    data["criteria"][0]["checks"][0]["names"] = ["y"]
    assert rubric_from_dict(data).version != r.version


# -- assignment folders and the importer ---------------------------------------------
def test_assignment_folder_missing_files_are_listed(tmp_path: Path):
    (tmp_path / "assignment.toml").write_text(
        'rubric = "rubric.json"\ntemplate = "t.ipynb"\nsolution = "s.ipynb"\ndata = ["data"]\n'
    )
    with pytest.raises(RubricError) as info:
        load_assignment(tmp_path)
    problems = " | ".join(info.value.problems)
    for name in ("rubric.json", "t.ipynb", "s.ipynb", "data"):
        assert name in problems


def test_folder_without_manifest(tmp_path: Path):
    with pytest.raises(RubricError, match=r"no assignment\.toml"):
        load_assignment(tmp_path)


def test_seed_rubric_imports_to_a_valid_rubric():
    report = import_seed_file(SHARED / "course-r/strings-dates/rubric.seed-format.json")
    r = report.rubric
    assert r.total_points == 100
    assert sum(c.points for c in r.criteria) == 100
    setup = r.criterion("part1-setup")
    assert setup.checks[0].names == ("feedback", "transactions", "products")
    assert "read_csv" in setup.checks[1].functions
    written = [c for c in r.criteria if c.kind == "written"]
    assert [c.points for c in written] == [2, 2, 2, 2, 1, 1]
    assert written[0].checks[0].question == "8.1"
    assert written[0].checks[0].min_words == 50
    dates = r.criterion("part4-date-operations")  # its partial-credit rules, as levels
    assert [lv.credit for lv in dates.levels] == [1.0, 0.85, 0.7, 0.7, 0.4]
    assert any(r.source == "partial_credit_rules.part4_date_operations" for r in report.carried)
    assert loads(dumps(r)) == r


def test_importer_refuses_other_json(tmp_path: Path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(RubricError, match="not an old-system rubric"):
        import_seed_file(path)


@pytest.mark.parametrize(("field", "value"), [("rtol", "abc"), ("rtol", None), ("atol", True),
                                              ("min_words", 2.5), ("max_errors", "1"),
                                              ("partial", {"values": "half"})])
def test_a_wrong_typed_check_field_is_a_rubric_problem(field, value):
    data = json.loads(Path("rubrics/retail-sales.json").read_text())
    data["criteria"][0]["checks"][0][field] = value
    with pytest.raises(RubricError, match=field):
        rubric_from_dict(data, "edited.json")
