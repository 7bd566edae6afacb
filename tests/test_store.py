"""The grade store and report serialisation, against real SQLite files.

Every test opens a real store in a temporary directory; the crash test kills a
real grading process with SIGKILL and resumes its batch. Names are invented.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.errors import StoreError
from grader.store.database import SCHEMA_VERSION, Store, migrate
from grader.store.serialize import (
    report_from_dict,
    report_from_json,
    report_to_dict,
    report_to_json,
)
from grader.types import (
    CheckResult,
    CriterionResult,
    Evidence,
    Flag,
    GradeReport,
    LayerResult,
)

REPO = Path(__file__).resolve().parents[1]


def make_report(sha256: str, version: str = "v1", points: tuple[float, ...] = (3.0, 2.0),
                review: tuple[bool, ...] = (False, False), flags: tuple[str, ...] = (),
                file: str = "doejane.ipynb", status: str = "graded") -> GradeReport:
    """A small report: criteria c1, c2, ... worth 5 points each."""
    criteria = [CriterionResult(
        id=f"c{i + 1}", title=f"Criterion {i + 1}", kind="code", max_points=5.0, points=p,
        checks=[CheckResult(f"c{i + 1}", "runs", "", p / 5, 1.0, "L1", "ran",
                            (Evidence("cell-1", 2, "df = load()"),))],
        needs_review=r, review_reasons=["low confidence"] if r else [])
        for i, (p, r) in enumerate(zip(points, review, strict=True))]
    return GradeReport(
        file=file, sha256=sha256, assignment="hw1", rubric_version=version,
        status=status,  # type: ignore[arg-type]
        score=None if status == "error" else math.fsum(points), max_score=5.0 * len(points),
        criteria=criteria, flags=[Flag(code, f"{code} seen") for code in flags],
        layers={"L1": LayerResult("L1", notes=["graded from stored outputs"],
                                  details={"cells": [1, 2]})},
        created_at=1700000000.0)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "grader.db")
    yield s
    s.close()


@dataclasses.dataclass
class Setup:
    store: Store
    assignment: int
    rubric: int


@pytest.fixture
def hw(store: Store) -> Setup:
    a = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
    return Setup(store, a, store.add_rubric_version(a, "v1", '{"criteria": []}'))


def grade(hw: Setup, sha: str, name: str = "Student A", **kw: object) -> int:
    sub = hw.store.add_submission(hw.assignment, sha, f"{sha}.ipynb", sha, name)
    return hw.store.save_grade(sub, hw.rubric, make_report(sha, **kw))  # type: ignore[arg-type]


# -- serialisation ---------------------------------------------------------------------------

texts = st.text(max_size=12)
numbers = st.floats(allow_nan=False, allow_infinity=False)
evidence = st.builds(Evidence, cell_id=st.none() | texts, line=st.none() | st.integers(1, 10**6),
                     text=texts)
evidences = st.lists(evidence, max_size=2).map(tuple)
flags = st.builds(Flag, code=texts, message=texts, evidence=evidences)
checks = st.builds(CheckResult, criterion_id=texts, check=texts, target=texts, score=numbers,
                   weight=numbers, layer=st.sampled_from(["L1", "L2"]), message=texts,
                   evidence=evidences, status=st.sampled_from(["ok", "skipped", "error"]))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | numbers | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=8)
layers = st.builds(LayerResult, layer=texts, checks=st.lists(checks, max_size=2),
                   flags=st.lists(flags, max_size=2), notes=st.lists(texts, max_size=2),
                   error=texts, seconds=numbers,
                   details=st.dictionaries(texts, json_values, max_size=3))
criteria = st.builds(CriterionResult, id=texts, title=texts, kind=st.sampled_from(["code",
                     "written"]), max_points=numbers, points=numbers,
                     checks=st.lists(checks, max_size=2), needs_review=st.booleans(),
                     review_reasons=st.lists(texts, max_size=2))
reports = st.builds(
    GradeReport, file=texts, sha256=texts, assignment=texts, rubric_version=texts,
    status=st.sampled_from(["graded", "error"]), score=st.none() | numbers, max_score=numbers,
    student_id=texts, display_name=texts,
    criteria=st.lists(criteria, max_size=3, unique_by=lambda c: c.id),
    flags=st.lists(flags, max_size=2), layers=st.dictionaries(texts, layers, max_size=2),
    error=texts, created_at=numbers)


@given(reports)
def test_report_round_trips_through_json(report: GradeReport) -> None:
    data = report_to_dict(report)
    assert report_from_dict(json.loads(json.dumps(data))) == report
    assert report_from_json(report_to_json(report)) == report
    assert all(isinstance(c["checks"], list) for c in data["criteria"])
    assert all(isinstance(f["evidence"], list) for f in data["flags"])


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reports)
def test_report_round_trips_through_the_store(report: GradeReport) -> None:
    with Store(":memory:") as s:
        a = s.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
        rv = s.add_rubric_version(a, report.rubric_version, "{}")
        sub = s.add_submission(a, report.sha256, report.file, report.student_id,
                               report.display_name)
        assert s.get_report(s.save_grade(sub, rv, report)) == report


def test_serialize_reads_to_dict_output_and_refuses_what_json_cannot_hold() -> None:
    report = make_report("aa", flags=("hardcoded_output",), review=(True, False))
    assert report_from_dict(report.to_dict()) == report  # ignores the derived needs_review
    with pytest.raises(ValueError, match="required field 'sha256'"):
        report_from_dict({k: v for k, v in report_to_dict(report).items() if k != "sha256"})
    with pytest.raises(ValueError, match="expected an object, got int"):
        report_from_dict({**report_to_dict(report), "layers": {"L1": {"layer": "L1",
                                                                      "details": 5}}})
    report.layers["L1"].details["path"] = Path("/tmp")
    with pytest.raises(TypeError, match=r"layers\.L1\.details\.path"):
        report_to_dict(report)
    with pytest.raises(ValueError, match="JSON compliant"):
        report_to_json(dataclasses.replace(make_report("bb"), score=math.nan))


# -- grades ----------------------------------------------------------------------------------

def count(path: Path, sql: str) -> int:
    with sqlite3.connect(path) as conn:
        n = int(conn.execute(sql).fetchone()[0])
    conn.close()
    return n


def test_regrade_replaces_and_a_new_rubric_version_adds(hw: Setup, tmp_path: Path) -> None:
    s = hw.store
    assert s.upsert_assignment("hw1", "Homework 1 (renamed)", "python", "/srv") == hw.assignment
    assert s.add_rubric_version(hw.assignment, "v1", '{"criteria": []}') == hw.rubric
    sub = s.add_submission(hw.assignment, "aa", "doejane.ipynb", "doejane", "Jane Doe")
    assert s.add_submission(hw.assignment, "aa", "doejane.ipynb", "doejane", "Jane Doe") == sub
    first = s.save_grade(sub, hw.rubric, make_report("aa", points=(1.0, 1.0)))
    again = s.save_grade(sub, hw.rubric, make_report("aa", points=(4.0, 1.0)))
    assert again == first
    assert count(tmp_path / "grader.db", "SELECT COUNT(*) FROM grades") == 1
    assert count(tmp_path / "grader.db", "SELECT COUNT(*) FROM criterion_grades") == 2
    assert s.get_report(first).score == 5.0  # the regrade's report, not the first one

    v2 = s.add_rubric_version(hw.assignment, "v2", '{"criteria": [1]}')
    second = s.save_grade(sub, v2, make_report("aa", version="v2"))
    assert second != first
    assert [g.rubric_version for g in s.list_grades(hw.assignment)] == ["v1", "v2"]
    found = s.find_grade(hw.assignment, "aa", "v2")
    assert found is not None
    assert found.id == second
    assert s.find_grade(hw.assignment, "aa", "v3") is None
    assert s.find_grade(hw.assignment, "zz", "v1") is None


def test_save_grade_refuses_mismatched_reports(hw: Setup) -> None:
    sub = hw.store.add_submission(hw.assignment, "aa", "doejane.ipynb")
    with pytest.raises(StoreError, match="other content"):
        hw.store.save_grade(sub, hw.rubric, make_report("bb"))
    with pytest.raises(StoreError, match="rubric version v9"):
        hw.store.save_grade(sub, hw.rubric, make_report("aa", version="v9"))
    with pytest.raises(StoreError, match="not of one stored assignment"):
        hw.store.save_grade(sub + 99, hw.rubric, make_report("aa"))
    assert hw.store.list_grades(hw.assignment) == []


def test_override_keeps_an_audit_trail(hw: Setup) -> None:
    s = hw.store
    g = grade(hw, "aa")
    first = s.override(g, "c1", 4.0, "partial credit for the plot", "prof_doe")
    second = s.override(g, "c1", 4.5, "  regraded after office hours ", "ta_roe")
    trail = s.overrides(g)
    assert trail == [first, second]
    assert (first.old_points, first.new_points, first.who) == (3.0, 4.0, "prof_doe")
    assert (second.old_points, second.new_points) == (4.0, 4.5)
    assert second.reason == "regraded after office hours"
    assert first.at <= second.at
    assert s.get_grade(g).overrides == 2


@pytest.mark.parametrize(("criterion", "points", "reason", "who", "message"), [
    ("c1", 5.5, "too generous", "prof_doe", r"outside \[0, 5.0\]"),
    ("c1", -1.0, "negative", "prof_doe", "outside"),
    ("c1", math.nan, "nan", "prof_doe", "outside"),
    ("c1", 4.0, "", "prof_doe", "needs a reason"),
    ("c1", 4.0, "   ", "prof_doe", "needs a reason"),
    ("c1", 4.0, "fine", " ", "needs a reason"),
    ("c9", 4.0, "fine", "prof_doe", "no criterion 'c9'"),
])
def test_override_refuses(hw: Setup, criterion: str, points: float, reason: str, who: str,
                          message: str) -> None:
    g = grade(hw, "aa")
    with pytest.raises(StoreError, match=message):
        hw.store.override(g, criterion, points, reason, who)
    assert hw.store.overrides(g) == []
    assert hw.store.get_report(g).criteria[0].points == 3.0
    assert hw.store.get_grade(g).score == 5.0


def test_get_report_applies_overrides_and_regrades_keep_them(hw: Setup) -> None:
    s = hw.store
    g = grade(hw, "aa", review=(True, False))
    assert s.get_grade(g).needs_review
    s.override(g, "c1", 5.0, "full marks: the answer is right", "prof_doe")
    report = s.get_report(g)
    c1 = report.criteria[0]
    assert (c1.points, report.score) == (5.0, 7.0)
    assert c1.review_reasons[-1] == "overridden by instructor: full marks: the answer is right"
    assert not c1.needs_review
    assert report.needs_review == []
    row = s.get_grade(g)
    assert (row.score, row.needs_review) == (7.0, False)
    assert s.list_grades(hw.assignment, min_score=7.0) == [row]

    sub = s.add_submission(hw.assignment, "aa", "aa.ipynb", "aa", "doejane")
    assert s.save_grade(sub, hw.rubric, make_report("aa", review=(True, False))) == g
    assert s.get_report(g).score == 7.0  # the override outlives the regrade
    assert len(s.overrides(g)) == 1


def test_filters(hw: Setup) -> None:
    s = hw.store
    low = grade(hw, "aa", points=(1.0, 0.0), review=(True, False))
    mid = grade(hw, "bb", points=(3.0, 2.0), flags=("hardcoded_output",))
    high = grade(hw, "cc", points=(5.0, 4.0), flags=("hardcoded_output", "stale_outputs"))
    broken = grade(hw, "dd", status="error")

    def ids(**kw: object) -> list[int]:
        return [g.id for g in s.list_grades(hw.assignment, **kw)]  # type: ignore[arg-type]

    assert ids() == [low, mid, high, broken]
    assert ids(min_score=5.0) == [mid, high]
    assert ids(max_score=5.0) == [low, mid]
    assert ids(min_score=2.0, max_score=8.0) == [mid]
    assert ids(needs_review=True) == [low, broken]  # an error always needs review
    assert ids(needs_review=False) == [mid, high]
    assert ids(flag="hardcoded_output") == [mid, high]
    assert ids(flag="stale_outputs", min_score=9.0) == [high]
    assert ids(flag="nothing") == []
    assert ids(rubric_version="v2") == []
    assert s.get_grade(high).flags == ("hardcoded_output", "stale_outputs")
    other = s.upsert_assignment("hw2", "Homework 2", "r", "/srv/hw2")
    assert s.list_grades(other) == []


def test_anonymise_is_stable_and_keeps_the_names(hw: Setup) -> None:
    s = hw.store
    grade(hw, "aa", name="Jane Doe")
    grade(hw, "bb", name="Student A")
    grade(hw, "cc", name="Jane Doe")  # a resubmission: same student, same pseudonym
    mapping = s.anonymise(hw.assignment)
    assert mapping == {"Jane Doe": "Student 001", "Student A": "Student 002"}
    assert s.anonymise(hw.assignment) == mapping
    g = grade(hw, "dd", name="John Roe")
    assert s.anonymise(hw.assignment) == {**mapping, "John Roe": "Student 003"}

    shown = [r.display_name for r in s.list_grades(hw.assignment, anonymous=True)]
    assert shown == ["Student 001", "Student 002", "Student 001", "Student 003"]
    assert all(r.student_id == "" for r in s.list_grades(hw.assignment, anonymous=True))
    names = [r.display_name for r in s.list_grades(hw.assignment)]
    assert names == ["Jane Doe", "Student A", "Jane Doe", "John Roe"]
    assert s.get_report(g, anonymous=True).display_name == "Student 003"
    assert s.get_report(g).display_name == "John Roe"

    s.set_display_name(s.get_grade(g).submission_id, "Johnny Roe")
    assert s.get_grade(g).display_name == "Johnny Roe"
    assert s.get_grade(g, anonymous=True).display_name == "Student 003"
    with pytest.raises(StoreError, match="no submission"):
        s.set_display_name(9999, "nobody")


def test_listing_anonymously_assigns_missing_pseudonyms(hw: Setup) -> None:
    grade(hw, "aa", name="Jane Doe")
    rows = hw.store.list_grades(hw.assignment, anonymous=True)
    assert [r.display_name for r in rows] == ["Student 001"]


def test_errors_are_store_errors(tmp_path: Path, hw: Setup) -> None:
    bad = tmp_path / "not-a-db.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open") as info:
        Store(bad)
    assert isinstance(info.value.__cause__, sqlite3.DatabaseError)
    with pytest.raises(StoreError, match=r"out of python, r \(got 'julia'\)"):
        hw.store.upsert_assignment("hw9", "Homework 9", "julia", "/srv")
    with pytest.raises(StoreError, match="not valid JSON"):
        hw.store.add_rubric_version(hw.assignment, "v2", "{not json")
    with pytest.raises(StoreError, match="FOREIGN KEY") as info:
        hw.store.add_submission(9999, "aa", "doejane.ipynb")
    assert isinstance(info.value.__cause__, sqlite3.IntegrityError)
    hw.store.close()
    with pytest.raises(StoreError, match="closed"):
        hw.store.list_grades(hw.assignment)


def test_threads_share_one_store(hw: Setup) -> None:
    def work(t: int) -> None:
        for i in range(20):
            grade(hw, f"{t}-{i}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(hw.store.list_grades(hw.assignment)) == 80


# -- schema ----------------------------------------------------------------------------------

def test_opening_a_version_1_database_migrates_it(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    assert migrate(conn, target=1) == 1
    conn.execute("INSERT INTO assignments VALUES (1, 'hw1', 'Homework 1', 'python', '/srv', 0)")
    conn.execute("INSERT INTO rubric_versions VALUES (1, 1, 'v1', '{}', 0)")
    conn.execute("INSERT INTO submissions VALUES (1, 1, 'aa', 'doejane.ipynb', 'doejane', "
                 "'Jane Doe', 0)")
    report = make_report("aa", flags=("template_modified",))
    conn.execute("INSERT INTO grades VALUES (1, 1, 1, ?, 5.0, 10.0, 'graded', 0, 0)",
                 (report_to_json(report),))
    assert "pseudonym" not in {r[1] for r in conn.execute("PRAGMA table_info(submissions)")}
    conn.close()

    with Store(path) as s:
        assert count(path, "PRAGMA user_version") == SCHEMA_VERSION == 8
        [row] = s.list_grades(1, flag="template_modified")  # flags backfilled from the JSON
        assert row.display_name == "Jane Doe"
        assert s.get_report(row.id) == dataclasses.replace(report, student_id="doejane",
                                                          display_name="Jane Doe")
        assert s.anonymise(1) == {"Jane Doe": "Student 001"}
    with Store(path) as s:  # reopening migrates nothing and keeps the data
        assert s.anonymise(1) == {"Jane Doe": "Student 001"}


def test_a_newer_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    Store(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer than this grader"):
        Store(path)


def test_the_file_also_hosts_the_request_history(tmp_path: Path) -> None:
    from inference.metrics import MetricsHistory
    from inference.types import RequestMetrics

    path = tmp_path / "grader.db"
    history = MetricsHistory(path)  # the history first: a version-0 file with a foreign table
    history.record(RequestMetrics(request_id="r1", role="code", started_at=1.0))
    store = Store(path)
    a = store.upsert_assignment("hw1", "Homework 1", "python", "/srv")
    rv = store.add_rubric_version(a, "v1", "{}")
    g = store.save_grade(store.add_submission(a, "aa", "aa.ipynb"), rv, make_report("aa"))
    history.record(RequestMetrics(request_id="r2", role="feedback", started_at=2.0))
    history.close()
    store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()

    history, store = MetricsHistory(path), Store(path)
    assert [m.request_id for m in history.query()] == ["r2", "r1"]
    assert store.get_report(g).score == 5.0
    history.close()
    store.close()


# -- batches ---------------------------------------------------------------------------------

def test_batch_items_and_their_states(hw: Setup) -> None:
    s = hw.store
    b = s.start_batch(hw.assignment, hw.rubric, [("a.ipynb", "aa"), ("b.ipynb", "bb")])
    first, second = s.pending_items(b)
    with pytest.raises(StoreError, match="needs a grade"):
        s.mark_item(first.id, "done")
    with pytest.raises(StoreError, match="needs a grade"):
        s.mark_item(first.id, "error")  # no message
    with pytest.raises(StoreError, match="not one of pending, done, error"):
        s.mark_item(first.id, "lost")  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="other content"):
        s.save_grade(s.add_submission(hw.assignment, "cc", "c.ipynb"), hw.rubric,
                     make_report("cc"), batch_item_id=first.id)
    s.mark_item(first.id, "error", error="NotebookError: not JSON")
    assert s.pending_items(b) == [second]
    assert s.batches(hw.assignment)[0].status == "running"
    sub = s.add_submission(hw.assignment, "bb", "b.ipynb")
    g = s.save_grade(sub, hw.rubric, make_report("bb"), batch_item_id=second.id)
    assert s.pending_items(b) == []
    [batch] = s.batches(hw.assignment)
    assert (batch.status, batch.total, batch.done, batch.errors, batch.pending) == \
        ("done", 2, 1, 1, 0)
    assert [i.grade_id for i in s.batch_items(b)] == [None, g]
    with pytest.raises(StoreError, match="not of assignment"):
        s.start_batch(s.upsert_assignment("hw2", "Homework 2", "r", "/srv"), hw.rubric, [])


KILL_SCRIPT = """
import sys, time
from grader.store.database import Store
from grader.types import CriterionResult, GradeReport

store = Store(sys.argv[1])
a = store.upsert_assignment("hw-kill", "Crash test", "python", "/srv/hw")
rv = store.add_rubric_version(a, "v1", "{}")
batch = store.start_batch(a, rv, [(f"student{i:02d}.ipynb", f"{i:064x}") for i in range(50)])
print("batch", batch, flush=True)
for item in store.pending_items(batch):
    criteria = [CriterionResult(f"c{k}", f"Criterion {k}", "code", 5.0, 2.5) for k in range(4)]
    report = GradeReport(item.file, item.sha256, "hw-kill", "v1", "graded", 10.0, 20.0,
                         criteria=criteria)
    sub = store.add_submission(a, item.sha256, item.file)
    store.save_grade(sub, rv, report, batch_item_id=item.id)
    print("done", item.id, flush=True)
    time.sleep(0.05)
"""


def test_a_batch_killed_with_sigkill_resumes(tmp_path: Path) -> None:
    path = tmp_path / "grader.db"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, str(path)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        batch = int(proc.stdout.readline().split()[1])
        for _ in range(5):
            assert proc.stdout.readline().startswith("done")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL, err

    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        # no half-written grade: every grade has all its criterion rows and a done item
        assert conn.execute("SELECT COUNT(*) FROM grades g WHERE (SELECT COUNT(*) FROM "
                            "criterion_grades WHERE grade_id = g.id) != 4").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM grades g WHERE NOT EXISTS (SELECT 1 FROM "
                            "batch_items WHERE grade_id = g.id AND status = 'done')"
                            ).fetchone()[0] == 0
    conn.close()

    with Store(path) as s:
        [info] = s.batches(1)
        assert info.status == "interrupted"  # its grader was killed (kill -9)
        items = s.batch_items(batch)
        done = [i for i in items if i.status == "done"]
        pending = s.pending_items(batch)
        assert 5 <= len(done) < 50
        assert {i.id for i in pending} == {i.id for i in items} - {i.id for i in done}
        assert len(pending) == 50 - len(done)
        for item in done:
            assert item.grade_id is not None
            report = s.get_report(item.grade_id)
            assert (report.sha256, report.score, len(report.criteria)) == (item.sha256, 10.0, 4)
        assert len(s.list_grades(info.assignment_id)) == len(done)

        for item in pending:  # resume
            sub = s.add_submission(info.assignment_id, item.sha256, item.file)
            s.save_grade(sub, info.rubric_version_id, make_report(item.sha256, file=item.file),
                         batch_item_id=item.id)
        grades = s.list_grades(info.assignment_id)
        assert len(grades) == 50
        assert len({g.sha256 for g in grades}) == 50
        assert s.pending_items(batch) == []
        [info] = s.batches(info.assignment_id)
        assert (info.status, info.done, info.pending) == ("done", 50, 0)


def test_identical_files_of_two_students_are_two_submissions(hw):
    s = hw.store
    one = s.add_submission(hw.assignment, "tmpl", "a.ipynb", "student001", "Student A")
    two = s.add_submission(hw.assignment, "tmpl", "b.ipynb", "student002", "Student B")
    assert one != two
    assert s.add_submission(hw.assignment, "tmpl", "a.ipynb", "student001", "Student A") == one
