"""One number everywhere (issue 33, item 4): the letter, every page, the PDF and every
export show the gradebook's points for the same grade (8.64 stays 8.64), a letter's
criteria add up to its total, and points and percentages are written by one function
each (``grader.points``), which the source is scanned for.

Every bundled submission is graded for real (sandboxed, without models; one grader per
assignment) and its letter's numbers are compared with the JSON export's.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from grader.assignment import load_assignment
from grader.exports.formats import canvas_csv, json_export, plain_csv
from grader.layers.base import GradeOptions
from grader.letters.build import build_letter, letter_html, letter_markdown
from grader.notebooks.load import load_notebook
from grader.pipeline import GradeInput, Grader
from grader.points import as_points, gradebook, percent_text, points_text, whole_percent
from grader.rubrics.schema import rubric_from_dict
from grader.scoring import build_report
from grader.store.database import apply_overrides
from grader.store.db_schema import OverrideRow
from grader.types import CheckResult, GradeReport, LayerResult

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
NAMES = ["retail-sales", "py-functions", "py-levels", "r-joins", "r-strings-dates",
         "r-sleep-survey"]
SCORE = re.compile(r"(\d+(?:\.\d+)?) / (\d+(?:\.\d+)?)")
MANUAL = re.compile(r"graded by your instructor \((\d+(?:\.\d+)?) points?\)")


# --- the one way to write points and percentages ----------------------------------------------

@pytest.mark.parametrize(("x", "full", "shown"), [
    (8.64, 20, "8.64"), (14.36, 20, "14.36"), (15.54, 20, "15.54"), (2.0, 2, "2"),
    (16.5, 20, "16.5"), (0.845, 3, "0.85"),  # half up as written (Python's round: 0.84)
    (2.996, 3, "2.99"),  # a loss is never rounded away
    (0.001, 3, "0.01"),  # nor a gain
    (1234567.5, None, "1234567.5"),  # never an exponent
    (None, 3, "-"),
])
def test_points_are_written_one_way(x, full, shown):
    assert as_points(x, full) == shown
    if x is not None:
        assert as_points(gradebook(x, full), full) == shown  # what scoring keeps is shown


@pytest.mark.parametrize(("score", "full", "shown"), [
    (8.64, 20, "43%"), (14.36, 20, "72%"), (15.54, 20, "78%"), (9, 20, "45%"),
    (16.5, 20, "83%"), (19.99, 20, "99%"), (0.01, 20, "1%"), (20, 20, "100%"), (0, 20, "0%"),
])
def test_a_percentage_is_whole_half_up_and_never_full_short_of_full(score, full, shown):
    assert percent_text(score, full) == shown
    assert whole_percent(score, full) == int(shown.rstrip("%"))


def test_more_places_keep_the_same_rule():
    assert percent_text(52.6, 100, 1) == "52.6%"
    assert percent_text(99.96, 100, 1) == "99.9%"  # short of full, with one place too
    assert percent_text(99.96, 100, None) == "99.96%"  # as many places as show the loss
    assert (percent_text(None, 20), percent_text(3, 0)) == ("", "")


# --- scoring keeps the gradebook's points, and the total is their sum ------------------------

RUBRIC = rubric_from_dict({
    "schema_version": 2, "title": "Thirds", "language": "python", "total_points": 9,
    "criteria": [{"id": f"c{i}", "title": f"Part {i}", "kind": "code", "points": 3,
                  "checks": [{"type": "calls", "functions": [f"f{i}"]}]} for i in range(3)]})


def _graded(shares: list[float]) -> GradeReport:
    l1 = LayerResult("L1", checks=[CheckResult(f"c{i}", "calls", f"f{i}", s, 1.0, "L1", "")
                                   for i, s in enumerate(shares)])
    return build_report(RUBRIC, "s.ipynb", "sha", "thirds", {"L1": l1})


def test_scoring_keeps_two_decimals_and_the_total_is_the_sum_of_the_parts():
    r = _graded([0.2785, 0.2785, 0.2785])  # 0.8355 points each
    assert [c.points for c in r.criteria] == [0.84, 0.84, 0.84]
    assert r.score == 2.52  # the parts' sum, not round(2.5065) = 2.51
    near = _graded([0.9999, 1.0, 1.0])  # 2.9997: short of full, never rounded up to it
    assert (near.criteria[0].points, near.score) == (2.99, 8.99)


def test_every_reader_says_the_same_number_for_one_grade():
    r = _graded([0.2785, 1.0, 0.5])
    letter = build_letter(r, RUBRIC)
    assert (letter.score, letter.percent) == ("5.34 / 9", "59%")
    assert [s.score for s in letter.sections] == ["0.84 / 3", "3 / 3", "1.5 / 3"]
    assert "**Score: 5.34 / 9** (59%)" in letter_markdown(letter)
    assert "Score: 5.34 / 9 (59%)" in letter_html(letter)
    canvas = list(csv.reader(io.StringIO(canvas_csv([r], "Thirds"))))
    assert canvas[2][-1] == "5.34"
    row = next(csv.DictReader(io.StringIO(plain_csv([r]))))
    assert (row["score"], row["percent"], row["c0"]) == ("5.34", "59", "0.84")
    data = json.loads(json_export([r]))[0]
    assert (data["score"], data["criteria"][0]["points"]) == (5.34, 0.84)


def test_an_override_reads_as_it_was_given():
    r = _graded([1.0, 1.0, 0.5])
    o = OverrideRow(1, 1, "c2", 1.5, 2.54, "partial credit", "ta", 0.0)
    overridden = apply_overrides(r, [o])
    letter = build_letter(overridden, RUBRIC)
    assert (letter.score, letter.percent) == ("8.54 / 9", "95%")  # never "9 / 9"
    assert letter.sections[2].score == "2.54 / 3"
    assert canvas_csv([overridden], "Thirds").splitlines()[2].endswith(",8.54")


def test_an_old_grade_with_four_decimals_exports_what_its_letter_shows():
    """Grades stored before points were kept to 2 decimals: the JSON, the CSVs and the
    letter all round them the same way."""
    r = _graded([1.0, 1.0, 1.0])
    r.criteria[0].points, r.score = 2.8357, 8.8357
    shown = build_letter(r, RUBRIC).score
    assert shown == "8.84 / 9"
    assert json.loads(json_export([r]))[0]["score"] == 8.84
    assert canvas_csv([r], "Thirds").splitlines()[2].endswith(",8.84")


# --- every bundled submission: the letter's numbers are the JSON's ----------------------------

def _marks(name: str) -> list[pytest.MarkDecorator]:
    return [pytest.mark.slow, *([pytest.mark.r] if name.startswith("r-") else [])]


@pytest.fixture(scope="module", params=[pytest.param(n, marks=_marks(n)) for n in NAMES])
def bundled(request) -> tuple[Grader, list[GradeReport]]:
    assignment = load_assignment(EXAMPLES / request.param)
    grader = Grader(assignment, GradeOptions(execute=True, use_llm=False))
    assert assignment.submissions is not None
    items = [GradeInput.from_path(p) for p in sorted(assignment.submissions.glob("*.ipynb"))]
    return grader, grader.grade_many(items, workers=2)


def _half_up_percent(score: Decimal, full: Decimal) -> str:
    """An independent reading of the rule: whole, half up, never 100 short of full,
    never 0 above nothing."""
    pct = int((score * 100 / full).quantize(Decimal(1), ROUND_HALF_UP))
    pct = min(pct, 99) if score < full else pct
    return f"{max(pct, 1) if score > 0 else pct}%"


def test_every_bundled_letter_shows_the_jsons_numbers(bundled):
    grader, reports = bundled
    rubric = grader.assignment.rubric
    exported = {d["file"]: d for d in json.loads(json_export(reports))}
    assert len(exported) == len(reports) > 0
    for r in reports:
        data = exported[r.file]
        nb = load_notebook(grader.assignment.submissions / r.file)  # type: ignore[operator]
        letter = build_letter(r, rubric, nb)
        total, full = SCORE.fullmatch(letter.score).groups()  # type: ignore[union-attr]
        assert Decimal(total) == Decimal(repr(data["score"])), (r.file, letter.score)
        assert Decimal(full) == Decimal(repr(data["max_score"]))
        assert letter.percent == _half_up_percent(Decimal(total), Decimal(full)), r.file
        criteria = {c["id"]: c for c in data["criteria"]}
        parts = []
        for s in letter.sections:
            c = criteria[s.criterion_id]
            manual = MANUAL.fullmatch(s.score)
            if manual is not None:  # graded by hand, not yet: no points shown or counted
                assert (c["points"], Decimal(manual.group(1))) == (0, Decimal(
                    repr(c["max_points"]))), (r.file, s.score)
                continue
            got, top = SCORE.fullmatch(s.score).groups()  # type: ignore[union-attr]
            assert Decimal(got) == Decimal(repr(c["points"])), (r.file, s.criterion_id)
            assert Decimal(top) == Decimal(repr(c["max_points"]))
            parts.append(Decimal(got))
        assert sum(parts) == Decimal(total), (r.file, letter.score, parts)
        md, page = letter_markdown(letter), letter_html(letter)
        assert f"**Score: {letter.score}** ({letter.percent})" in md
        assert f"Score: {letter.score} ({letter.percent})" in page
        for s in letter.sections:
            assert f"— {s.score}" in md
        assert points_text(r.score, r.max_score) == letter.score  # the pages' text
    rows = {row[1]: row[-1] for row in csv.reader(io.StringIO(canvas_csv(reports, "t")))}
    for r in reports:
        assert Decimal(rows[r.student_id]) == Decimal(repr(exported[r.file]["score"]))


# --- nothing else writes a grade's points or percentage on its own ---------------------------

# the attributes that hold a grade's points (GradeReport, CriterionResult, overrides, moves)
GRADE_NUMBERS = {"score", "max_score", "points", "max_points", "old_points", "new_points",
                 "old_score", "new_score", "current_score", "carried_score"}
# formatted numbers that are no grade's points, each with the reason
NOT_POINTS = {
    ("grader/layers/stale.py", "self.stored.score"): "a check's verdict (0..1), for review",
    ("grader/layers/stale.py", "self.fresh.score"): "a check's verdict (0..1), for review",
    ("grader/layers/stale.py", "result.score"): "a check's verdict (0..1), for review",
    ("grader/layers/stale.py", "m.stored.score"): "a check's verdict (0..1), for review",
    ("grader/layers/stale.py", "m.ours.score"): "a check's verdict (0..1), for review",
    ("grader/service/calibration.py", "row.score"):
        "the instructor's grades file, quoted as written in an input error",
}
# the rubric package writes a rubric's own points as its file gives them, not a grade's
NOT_GRADES = ("grader/rubrics/",)


def _grade_number(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr in GRADE_NUMBERS for n in ast.walk(node))


def _shown_round(call: ast.Call) -> bool:
    """``round(x, n)`` with n <= 2: rounding for showing (scoring's 4 places are not)."""
    places = call.args[1]
    return call.func.id == "round" and isinstance(places, ast.Constant) and \
        isinstance(places.value, int) and places.value <= 2  # type: ignore[attr-defined]


def own_formatting(path: Path, rel: str) -> list[str]:
    """Where ``path`` writes a grade's number itself: a format spec on it in an f-string
    ("{r.score:g}", "{100 * r.score / r.max_score:.0f}%") or ``format()``, or rounds it
    for showing (``round(c.points, 2)``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        what = None
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            what = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                len(node.args) == 2 and (node.func.id == "format" or _shown_round(node)):
            what = node.args[0]
        if what is not None and _grade_number(what) and \
                (rel, ast.unparse(what)) not in NOT_POINTS:
            found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_formats_points_or_percentages_on_its_own():
    found = []
    for package in ("grader", "app_pages"):
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "grader/points.py" or rel.startswith(NOT_GRADES):
                continue
            found += own_formatting(path, rel)
    assert found == []


def test_the_scan_finds_what_it_looks_for(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("def f(r, c, o):\n"
                   "    a = f\"{r.score:g} / {r.max_score:g}\"\n"
                   "    b = f\"{100 * r.score / r.max_score:.0f}%\"\n"
                   "    d = round(c.points, 2)\n"
                   "    e = format(o.new_points, '.1f')\n"
                   "    ok = f\"{r.file}: {len(c.checks):d} checks\"\n"
                   "    return a, b, d, e, ok, round(c.points * 0.5, 4)\n")
    found = sorted(int(line.split(":")[1]) for line in own_formatting(src, "m.py"))
    assert found == [2, 2, 3, 4, 5]  # not line 6 (no grade's number), nor scoring's round
