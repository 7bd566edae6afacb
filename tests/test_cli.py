"""The command line, as an instructor runs it, and batches that resume."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from grader.service.batch import grade_batch, resume_batch
from grader.store.database import Store

ROOT = Path(__file__).resolve().parents[1]
RETAIL = ROOT / "examples" / "retail-sales"
SUBS = RETAIL / "submissions"


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


def test_grade_json_contract(tmp_path: Path):
    bad = tmp_path / "broken.ipynb"
    bad.write_text("{ this is not json")
    bundle = tmp_path / "canvas.zip"
    with zipfile.ZipFile(bundle, "w") as z:
        z.write(SUBS / "partial.ipynb", "doejane_12345_67890_partial.ipynb")
    proc = run_cli("grade", str(RETAIL), str(SUBS / "complete.ipynb"),
                   str(SUBS / "template_only.ipynb"), str(bad), str(bundle), "--json",
                   "--no-llm", "--no-exec", "--out", str(tmp_path / "out"),
                   "--db", str(tmp_path / "grades.db"))
    assert proc.returncode == 1, proc.stderr  # one input could not be graded
    rows = json.loads(proc.stdout)
    by_file = {Path(r["file"]).name: r for r in rows}
    for r in rows:
        assert {"file", "status", "score", "max_score", "criteria", "flags", "error"} <= set(r)
    assert by_file["broken.ipynb"]["status"] == "error"
    assert "not JSON" in by_file["broken.ipynb"]["error"]
    assert by_file["broken.ipynb"]["score"] is None
    complete = by_file["complete.ipynb"]
    assert complete["status"] == "graded"
    assert complete["max_score"] == 20
    assert {c["id"] for c in complete["criteria"]} >= {"load-data", "q1-regions"}
    crit = next(c for c in complete["criteria"] if c["id"] == "load-data")
    assert {"id", "points", "max", "evidence"} <= set(crit)
    assert crit["evidence"][0]["cell_id"]
    assert "template_only" in by_file["template_only.ipynb"]["flags"]
    canvas = by_file["doejane_12345_67890_partial.ipynb"]
    assert canvas["student_id"] == "12345"
    # --no-exec: output checks are not guessed, they go to review
    assert complete["needs_review"]
    assert (tmp_path / "out" / "canvas.csv").exists()
    assert "[" in proc.stderr  # the progress bar


def test_broken_assignment_folder_is_exit_2(tmp_path: Path):
    proc = run_cli("grade", str(tmp_path), str(SUBS / "complete.ipynb"), "--no-llm")
    assert proc.returncode == 2
    assert "assignment.toml" in proc.stderr


def test_import_rubric_command(tmp_path: Path):
    out = tmp_path / "r.json"
    proc = run_cli("import-rubric",
                   str(ROOT.parent / "shared/course-r/strings-dates/rubric.seed-format.json"),
                   str(out))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["total_points"] == 100


class Interrupt(BaseException):
    """Stands for the process dying half-way (kill -9 is tested in test_store)."""


def test_interrupted_batch_resumes_without_losing_or_duplicating(tmp_path: Path):
    grader = Grader(load_assignment(RETAIL), GradeOptions(execute=False))
    items = [GradeInput.from_path(p) for p in sorted(SUBS.glob("*.ipynb"))]
    store = Store(tmp_path / "g.db")

    def die_after_three(done: int, total: int, report) -> None:
        if done == 3:
            raise Interrupt

    with pytest.raises(Interrupt):
        grade_batch(grader, items, store, progress=die_after_three)
    (batch,) = store.batches(store.upsert_assignment("retail-sales", "", "python", RETAIL))
    assert batch.done == 3
    assert len(store.pending_items(batch.id)) == len(items) - 3
    result = resume_batch(grader, store, batch.id, items)
    assert len(result.reports) == len(items) - 3
    assert store.pending_items(batch.id) == []
    grades = store.list_grades(batch.assignment_id)
    assert len(grades) == len(items)
    again = grade_batch(grader, items, store)
    assert again.reused == len(items)
    assert len(store.list_grades(batch.assignment_id)) == len(items)
