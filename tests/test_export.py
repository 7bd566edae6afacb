"""Exports: Canvas CSV, plain CSV, JSON, feedback pages (escaped)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from grader.exports.formats import (
    canvas_csv,
    feedback_html,
    feedback_markdown,
    json_export,
    plain_csv,
    write_exports,
)
from grader.types import CheckResult, CriterionResult, Evidence, Flag, GradeReport, LayerResult


def report(name: str, score: float | None, status: str = "graded") -> GradeReport:
    crit = CriterionResult(
        "load",
        "Load the data",
        "code",
        4,
        3.0,
        checks=[
            CheckResult(
                "load",
                "assigns",
                "orders",
                0.75,
                1.0,
                "L1",
                "3 of 4 assigned",
                (Evidence("c1", 2, "orders = pd.read_csv('<script>alert(1)</script>')"),),
            )
        ],
    )
    return GradeReport(
        file=f"{name}.ipynb",
        sha256="x",
        assignment="demo",
        rubric_version="v1",
        status=status,
        score=score,
        max_score=4,
        student_id=f"id-{name}",
        display_name=name,
        criteria=[crit] if status == "graded" else [],
        flags=[Flag("stale_outputs", "1 cell has stale outputs")],
        error="" if status == "graded" else "not a notebook",
    )


def test_canvas_csv_blank_for_ungraded_never_zero():
    rows = list(
        csv.reader(
            io.StringIO(canvas_csv([report("doejane", 3.0), report("roe", None, "error")], "HW 1"))
        )
    )
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "HW 1"]
    assert rows[1][0] == "Points Possible"
    assert rows[1][5] == "4"
    assert rows[2][:2] == ["doejane", "id-doejane"]
    assert rows[2][5] == "3"
    assert rows[3][5] == ""


def test_plain_csv_has_criteria_columns():
    rows = list(csv.DictReader(io.StringIO(plain_csv([report("doejane", 3.0)]))))
    assert rows[0]["load"] == "3"
    assert rows[0]["percent"] == "75"  # whole, as the letter writes it
    assert rows[0]["flags"] == "stale_outputs"


def test_feedback_escapes_student_text():
    page = feedback_html(report("doejane", 3.0), "HW 1")
    assert "<script>" not in page
    assert "&lt;script&gt;" in page
    md = feedback_markdown(report("doejane", 3.0), "HW 1")
    assert "Score: 3 / 4" in md
    assert "cell c1, line 2" in md


def test_write_exports(tmp_path: Path):
    written = write_exports([report("doejane", 3.0), report("doejane", 2.0)], tmp_path, "HW 1")
    names = sorted(p.relative_to(tmp_path).as_posix() for p in written)
    assert "canvas.csv" in names
    assert "feedback/doejane.html" in names
    assert "feedback/doejane-2.md" in names  # two students of one name do not overwrite
    data = json.loads((tmp_path / "grades.json").read_text())
    assert data[0]["criteria"][0]["points"] == 3.0


def test_model_feedback_is_labelled_as_model_written():
    r = report("doejane", 3.0)
    r.criteria[0].kind = "written"  # L4's notes, from a model trusted to judge
    r.layers["L4"] = LayerResult("L4", details={"advisory": False})
    r.criteria[0].model_notes = {"strength": "Your steps are clear <b>and</b> ordered",
                                 "improve": "Check the units of each total",
                                 "next_step": "Plot the monthly trend next", "score": "0.80"}
    md = feedback_markdown(r, "HW 1")
    assert "with the help of a language model" in md
    assert "Next step: Plot the monthly trend next" in md
    assert "&lt;b&gt;" in feedback_html(r, "HW 1")


def test_json_export_leaves_the_file_hash_out_when_names_are_hidden():
    r = report("Student 001", 3.0)
    r.sha256 = "ab" * 32
    assert json.loads(json_export([r]))[0]["sha256"] == r.sha256
    hidden = json_export([r], hide_names=True)
    assert r.sha256 not in hidden
    assert json.loads(hidden)[0]["sha256"] == ""
    assert r.sha256 == "ab" * 32  # the report itself is left as it was


def test_half_a_percent_rounds_up_in_the_csv_as_in_the_letter():
    r = report("doejane", 3.3)  # 82.5% of 4 points (82.49999... in floats)
    (row,) = csv.DictReader(io.StringIO(plain_csv([r])))
    assert row["percent"] == "83"
    assert "(83%)" in feedback_markdown(r, "HW 1")
