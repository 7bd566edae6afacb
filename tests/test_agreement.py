"""Agreement between the grader and an instructor: statistics checked by hand, matching, CLI."""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from grader.errors import InputError
from grader.views.agreement import (
    Grades,
    Human,
    Row,
    agreement,
    categories,
    format_table,
    load_grades,
    load_human,
    mae,
    parse_step,
    pearson,
    quadratic_weighted_kappa,
    ranks,
    spearman,
)

ROOT = Path(__file__).resolve().parents[1]


def entry(file: str, score: float, sid: str = "", status: str = "graded", **points: float):
    """One object as `grade --json` prints it (only the fields agreement reads, plus max)."""
    return {"file": file, "student_id": sid, "status": status, "score": score, "max_score": 10,
            "criteria": [{"id": c, "points": p, "max": 5} for c, p in points.items()]}


def write(tmp_path: Path, grades: list | dict, csv_text: str) -> tuple[Path, Path]:
    g, h = tmp_path / "grades.json", tmp_path / "human.csv"
    g.write_text(json.dumps(grades))
    h.write_text(csv_text)
    return g, h


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", "agreement", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


# ---- statistics, against values computed by hand ------------------------------------

def test_mae_by_hand():
    assert mae([1, 2, 3], [2, 2, 5]).value == pytest.approx(1.0)  # (1 + 0 + 2) / 3
    assert mae([4], [1.5]).value == pytest.approx(2.5)  # one pair is enough for MAE


def test_pearson_by_hand():
    # dx = dy permuted: sxy = 4 * 0.75 = 3, sxx = syy = 5, r = 3 / 5
    assert pearson([1, 2, 3, 4], [2, 1, 4, 3]).value == pytest.approx(0.6)
    assert pearson([1, 2, 3], [2, 4, 6]).value == pytest.approx(1.0)
    assert pearson([1, 2, 3], [3, 2, 1]).value == pytest.approx(-1.0)


def test_ranks_average_ties():
    assert ranks([10, 20, 20, 20, 5]) == [2.0, 4.0, 4.0, 4.0, 1.0]
    assert ranks([3.5, 1.0, 3.5]) == [2.5, 1.0, 2.5]


def test_spearman_with_ties_by_hand():
    # ranks x = [1, 2.5, 2.5, 4], y = [1, 3, 2, 4]: sxy = 4.5, sxx = 4.5, syy = 5
    rho = spearman([1, 2, 2, 3], [1, 3, 2, 4]).value
    assert rho == pytest.approx(4.5 / math.sqrt(4.5 * 5))
    assert rho == pytest.approx(0.9486833, abs=1e-7)


def test_spearman_sees_rank_order_where_pearson_sees_a_curve():
    assert spearman([1, 2, 3], [1, 4, 9]).value == pytest.approx(1.0)
    assert pearson([1, 2, 3], [1, 4, 9]).value < 0.99


def test_qwk_perfect_and_reversed():
    assert quadratic_weighted_kappa([0, 1, 2], [0, 1, 2]).value == pytest.approx(1.0)
    # O weighs 1 + 0 + 1 = 2; E is 1/3 everywhere and the weights sum to 3, so E weighs 1
    assert quadratic_weighted_kappa([0, 1, 2], [2, 1, 0]).value == pytest.approx(-1.0)


def test_qwk_by_hand():
    # k = 2: O disagrees once; E(0,1) = 2*3/4, E(1,0) = 2*1/4, so chance = 2: 1 - 1/2
    assert quadratic_weighted_kappa([0, 0, 1, 1], [0, 1, 1, 1]).value == pytest.approx(0.5)
    # k = 3, weights (i-j)^2/4: O weighs 1/4; E weighs (1.25 + 2.5) / 3 = 1.25: 1 - 0.2
    assert quadratic_weighted_kappa([0, 2, 2], [0, 2, 1]).value == pytest.approx(0.8)


def test_qwk_step_and_categories():
    assert categories([0, 0.5, 1.49, 2.5]) == [0, 1, 1, 3]  # halves round up, not to even
    assert categories([0.3, 0.25, 1.0], step=0.5) == [1, 1, 2]
    assert categories([0.15, 0.3], step=0.1) == [2, 3]  # 0.15/0.1 is 1.4999... in floats
    # half points: step 1 puts 0.5 and 1.0 together, step 0.5 keeps them apart
    xs, ys = [0.5, 1.0, 1.5, 2.0], [1.0, 0.5, 2.0, 1.5]
    assert quadratic_weighted_kappa(xs, ys, step=1).value == pytest.approx(1.0)
    assert quadratic_weighted_kappa(xs, ys, step=0.5).value < 1.0
    with pytest.raises(ValueError, match="positive"):
        categories([1], step=0)


def test_qwk_is_zero_when_only_one_rater_is_constant():
    assert quadratic_weighted_kappa([2, 2, 2], [1, 2, 3]).value == pytest.approx(0.0)


@pytest.mark.parametrize(
    ("stat", "xs", "ys", "reason"),
    [
        (mae, [], [], "no pairs"),
        (pearson, [1], [2], "fewer than 2 pairs (1)"),
        (pearson, [2, 2, 2], [1, 2, 3], "zero variance: every x value is 2"),
        (pearson, [1, 2, 3], [4, 4, 4], "zero variance: every y value is 4"),
        (spearman, [], [], "no pairs"),
        (spearman, [1, 2], [7, 7], "zero variance: every y value is 7"),
        (quadratic_weighted_kappa, [3], [3], "fewer than 2 pairs (1)"),
        (quadratic_weighted_kappa, [1.2, 0.9], [1, 1], "every value is in category 1"),
    ],
)
def test_undefined_is_none_with_a_reason(stat, xs, ys, reason):
    result = stat(xs, ys)
    assert result.value is None
    assert reason in result.reason


def test_mismatched_lengths_are_a_bug_not_a_statistic():
    with pytest.raises(ValueError, match="2 values against 1"):
        pearson([1, 2], [1])


# ---- loading and matching -------------------------------------------------------------

def test_load_grades_skips_and_counts_errors(tmp_path: Path):
    g, _ = write(tmp_path, [entry("a.ipynb", 7, q1=3), entry("b.ipynb", None, status="error")],
                 "file,score\n")
    grades = load_grades(g)
    assert [r.file for r in grades.rows] == ["a.ipynb"]
    assert grades.rows[0].criteria == {"q1": 3.0}
    assert grades.errors == ["b.ipynb"]


def test_load_grades_reads_full_reports(tmp_path: Path):
    full = {"file": "x/student001.ipynb", "sha256": "0" * 64, "assignment": "a",
            "rubric_version": "1", "status": "graded", "score": 4.5, "max_score": 10,
            "student_id": "", "criteria": [{"id": "q1", "title": "Q1", "kind": "code",
                                            "max_points": 5, "points": 4.5, "checks": []}]}
    (row,) = load_grades(write(tmp_path, [full], "")[0]).rows
    assert (row.name, row.score, row.criteria) == ("x/student001.ipynb", 4.5, {"q1": 4.5})


def test_load_human_columns_and_blanks(tmp_path: Path):
    _, h = write(tmp_path, [], "\ufeffStudent_ID , Total,q1,comment\nstudent001,8,,late\n\n"
                               "student002,6.5,3,\n")
    human = load_human(h, criteria={"q1", "q2"})
    assert human.columns == ["q1"]
    assert human.ignored == ["comment"]  # not a criterion: its text is never read as points
    assert [(r.student_id, r.score, r.criteria["q1"]) for r in human.rows] == [
        ("student001", 8.0, None), ("student002", 6.5, 3.0)]


def graded(file: str = "", sid: str = "", score: float | None = 1.0, **crit: float) -> Row:
    return Row(file or sid, file, sid, score, crit)  # named as load_grades names it


def marked(file: str = "", sid: str = "", score: float | None = 1.0, **crit: float | None) -> Row:
    return Row(sid or file, file, sid, score, crit)  # named as load_human names it


def test_student_id_is_preferred_over_file():
    grades = Grades([graded(file="a.ipynb", sid="student001", score=1),
                     graded(file="b.ipynb", sid="student002", score=2)], [])
    # the CSV row names file a.ipynb but student002: the id wins
    human = Human([marked(file="a.ipynb", sid="student002", score=2)], [], [])
    result = agreement(grades, human)
    assert result["n"] == 1
    assert result["overall"]["mae"] == 0.0  # paired with b.ipynb (2), not a.ipynb (1)
    assert result["unmatched"]["grades"] == {"count": 1, "names": ["a.ipynb"]}


def test_file_name_then_stem_matching():
    grades = Grades([graded(file="subs/student001.ipynb", score=1),
                     graded(file="subs/student002.ipynb", score=2),
                     graded(file="student003.ipynb", score=3)], [])
    human = Human([marked(file="student001.ipynb", score=1), marked(file="student002", score=2),
                   marked(sid="student003", score=3)], [], [])
    result = agreement(grades, human)
    assert result["n"] == 3
    assert result["overall"]["mae"] == 0.0
    assert result["unmatched"]["grades"]["count"] == result["unmatched"]["human"]["count"] == 0


def test_differing_student_ids_never_match_by_file():
    grades = Grades([graded(file="a.ipynb", sid="student001")], [])
    human = Human([marked(file="a.ipynb", sid="student009")], [], [])
    result = agreement(grades, human)
    assert result["n"] == 0
    assert result["unmatched"]["human"]["names"] == ["student009"]


def test_unmatched_and_shared_keys_are_reported():
    grades = Grades([graded(file="one.ipynb", sid="student001"), graded(file="two.ipynb",
                     sid="student001"), graded(file="student004.ipynb")], ["broken.ipynb"])
    human = Human([marked(sid="student001"), marked(sid="student005")], [], [])
    result = agreement(grades, human)
    assert result["n"] == 0
    assert result["unmatched"]["grades"]["names"] == ["one.ipynb", "two.ipynb", "student004.ipynb"]
    assert result["unmatched"]["human"] == {"count": 2, "names": ["student001", "student005"]}
    assert result["unmatched"]["ambiguous_keys"] == ["student_id 'student001'"]
    assert result["skipped_errors"] == {"count": 1, "names": ["broken.ipynb"]}
    assert result["overall"]["mae"] is None
    assert result["overall"]["reasons"]["mae"] == "no pairs"


def test_per_criterion_statistics_and_missing_cells():
    grades = Grades([graded(sid=f"student00{i}", score=s, q1=p)
                     for i, (s, p) in enumerate([(2, 0), (5, 1), (9, 2)], 1)], [])
    human = Human([marked(sid="student001", score=3, q1=0, note=None),
                   marked(sid="student002", score=5, q1=1),
                   marked(sid="student003", score=None, q1=2)], ["q1", "note"], ["remarks"])
    result = agreement(grades, human)
    overall = result["overall"]
    assert (overall["n"], overall["missing"]) == (2, 1)  # student003 has no instructor total
    assert overall["mae"] == pytest.approx(0.5)  # pairs (2, 3) and (5, 5)
    assert overall["pearson"] == pytest.approx(1.0)
    # k = 4 (2..5): O weighs 1/9; chance weighs (1 + 9 + 4 + 0) / 2 / 9 = 7/9: 1 - 1/7
    assert overall["qwk"] == pytest.approx(6 / 7)
    assert overall["reasons"] == {}
    assert result["criteria"]["q1"]["qwk"] == pytest.approx(1.0)
    assert result["criteria"]["q1"]["n"] == 3
    assert result["ignored_columns"] == ["remarks", "note"]  # note: no grader criterion
    table = format_table(result)
    assert "overall" in table
    assert "q1" in table


# ---- the command line, end to end -----------------------------------------------------

def test_cli_json_end_to_end(tmp_path: Path):
    g, h = write(tmp_path, [entry("subs/student001.ipynb", 8, q1=4, q2=4),
                            entry("subs/student002.ipynb", 5, q1=2, q2=3),
                            entry("subs/student003.ipynb", 2, q1=1, q2=1),
                            entry("subs/student004.ipynb", None, status="error"),
                            entry("subs/student005.ipynb", 6, q1=3, q2=3)],
                 "file,score,q1,q2,remarks\nstudent001.ipynb,9,5,4,good\n"
                 "student002.ipynb,5,2,3,\nstudent003.ipynb,1,1,0,\nstudent009.ipynb,7,3,4,\n")
    proc = run_cli(str(g), str(h), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["n"] == 3
    assert out["unmatched"]["grades"] == {"count": 1, "names": ["subs/student005.ipynb"]}
    assert out["unmatched"]["human"] == {"count": 1, "names": ["student009.ipynb"]}
    assert out["skipped_errors"] == {"count": 1, "names": ["subs/student004.ipynb"]}
    assert out["ignored_columns"] == ["remarks"]
    assert out["overall"]["mae"] == pytest.approx(2 / 3)  # |8-9| + 0 + |2-1|
    assert set(out["criteria"]) == {"q1", "q2"}
    assert out["criteria"]["q2"]["mae"] == pytest.approx(1 / 3)
    assert set(out["overall"]) >= {"mae", "pearson", "spearman", "qwk", "n"}


def test_cli_table_shows_undefined_and_unmatched(tmp_path: Path):
    g, h = write(tmp_path, [entry("student001.ipynb", 4), entry("student002.ipynb", 4)],
                 "student_id,score\nstudent001,3\nstudent002,5\nstudent007,1\n")
    proc = run_cli(str(g), str(h), "--step", "0.5")
    assert proc.returncode == 0, proc.stderr
    assert "2 matched pairs" in proc.stdout
    assert "overall pearson: zero variance: every grader value is 4" in proc.stdout
    assert "unmatched CSV rows: 1: student007" in proc.stdout
    table_row = next(line for line in proc.stdout.splitlines() if line.startswith("overall"))
    assert table_row.split()[1:3] == ["2", "1.000"]  # n, MAE
    assert "n/a" in table_row


@pytest.mark.parametrize(
    ("grades", "csv_text", "bad", "message"),
    [
        ("[]", "name,score\nstudent001,3\n", "human",
         "no key column 'student_id' or 'file' (found: name, score)"),
        ("[]", "student_id,points\nstudent001,3\n", "human", "no score column"),
        ("[]", "", "human", "no key column"),
        ('{"file": "a.ipynb"}', "file,score\n", "grades", "expected a JSON list"),
        ("[{", "file,score\n", "grades", "not JSON (line 1"),
        ("[]", "file,score\na.ipynb,lots\n", "human", "line 2, score is not a number ('lots')"),
        ("[]", "file,score\na.ipynb,nan\n", "human", "is not a number"),
        ('[{"file": "a.ipynb", "score": "x", "criteria": []}]', "file,score\n", "grades",
         "entry 0 (a.ipynb): score is not a number"),
        ('[{"file": "a.ipynb", "score": 1, "criteria": [{"points": 1}]}]', "file,score\n",
         "grades", "criteria need to be objects with unique ids"),
        ("[]", "file,score,q1,Q1\n", "human", "column 'q1' appears twice in the header"),
        ("[]", "file,score\na.ipynb,1,\nb.ipynb,1,2\n", "human",
         "line 3 has more cells than the header"),
    ],
)
def test_bad_input_exits_2_naming_file_and_problem(tmp_path: Path, grades, csv_text, bad, message):
    g, h = tmp_path / "grades.json", tmp_path / "human.csv"
    g.write_text(grades)
    h.write_text(csv_text)
    with pytest.raises(InputError) as info:
        load_grades(g) if bad == "grades" else load_human(h)
    assert info.value.file == str(g if bad == "grades" else h)
    assert message in info.value.reason
    proc = run_cli(str(g), str(h))
    assert proc.returncode == 2
    assert f"error: {g if bad == 'grades' else h}: " in proc.stderr
    assert message in proc.stderr
    assert proc.stdout == ""


def test_missing_file_exits_2(tmp_path: Path):
    _, h = write(tmp_path, [], "file,score\n")
    proc = run_cli(str(tmp_path / "nope.json"), str(h))
    assert proc.returncode == 2
    assert f"error: {tmp_path / 'nope.json'}: cannot be read (No such file or directory)" in (
        proc.stderr)


@pytest.mark.parametrize("text", ["0", "-1", "abc", "nan", "inf", ""])
def test_bad_step_is_rejected(text: str):
    with pytest.raises(argparse.ArgumentTypeError, match="positive number of points"):
        parse_step(text)


def test_good_step_is_a_float():
    assert parse_step("0.5") == 0.5
    assert parse_step("2") == 2.0


def test_bad_step_on_the_command_line_exits_2(tmp_path: Path):
    g, h = write(tmp_path, [], "file,score\n")
    proc = run_cli(str(g), str(h), "--step", "0")
    assert proc.returncode == 2
    assert "--step" in proc.stderr
