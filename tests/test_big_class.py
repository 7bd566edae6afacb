"""A class of thousands (issue 32, item 8): one ZIP of more than 2,000 notebooks is graded,
as one batch in chunks, with its progress, resume and exports covering every student,
and without the class's notebooks ever all in memory.

Grading 2,000 real sandbox runs would take hours on two cores, so the large class is
made of many notebooks of identical bytes (each student's own record, graded once: the
batch gives later notebooks of one content the grade of the first) and a few dozen
distinct ones, graded from their stored outputs (``--no-exec``); ``--chunk`` (a real
option) makes chunks small enough that a few dozen notebooks cross several. Names are
synthetic. The command line runs as a child process, its peak memory read with
``getrusage`` by a small wrapper.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from grader.assignment import load_assignment
from grader.errors import ArchiveError
from grader.layers.base import GradeOptions
from grader.notebooks.archive import expand_uploads
from grader.notebooks.stream import NotebookRef, read_class
from grader.pipeline import Grader
from grader.service.batch import grade_refs
from grader.service.sizing import CHUNK_MAX, CHUNK_MIN, chunk_budget, chunks
from grader.store.database import Store

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "py-functions"
MB = 1 << 20
# Runs a command and prints the largest resident set of its processes (KB) on stderr.
MEASURED = ("import resource, subprocess, sys\n"
            "rc = subprocess.call(sys.argv[1:])\n"
            "sys.stderr.write(f'\\npeak-rss-kb {resource.getrusage("
            "resource.RUSAGE_CHILDREN).ru_maxrss}\\n')\n"
            "sys.exit(rc)\n")
PROGRESS = re.compile(r"\] (\d+)/(\d+) ")


def notebook(n: int, pad_kb: int = 0) -> bytes:
    """A small synthetic submission: its answer depends on ``n``; ``pad_kb`` of notes (the
    size of a notebook with a plot or two)."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    code = nbformat.v4.new_code_cell(f"def answer():\n    return {n}\n\nanswer()")
    code.outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": str(n)},
                                           execution_count=1)]
    code.execution_count = 1
    notes = "Working notes. " * (pad_kb * 1024 // 15)
    nb.cells = [nbformat.v4.new_markdown_cell(f"# Homework\n\nAttempt {n}."), code,
                nbformat.v4.new_markdown_cell(notes)]
    return nbformat.writes(nb).encode()


def class_zip(path: Path, same: int, distinct: int, pad_kb: int = 0,
              bad: bool = False) -> list[str]:
    """A ZIP of ``same`` notebooks of one content and ``distinct`` others, one student
    folder each (``fall/s0000/hw.ipynb``, ...); with ``bad``, two entries that cannot be
    graded. Returns the student ids."""
    ids = []
    twin = notebook(-1, pad_kb)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for i in range(same + distinct):
            sid = f"s{i:04d}"
            ids.append(sid)
            zf.writestr(f"fall/{sid}/hw.ipynb", twin if i < same else notebook(i, pad_kb))
        if bad:
            zf.writestr("fall/s9998/hw.ipynb", b"{not json at all")
            zf.writestr("fall/s9999/hw.ipynb", b'{"cells": "not a list"}')
    return ids


def cli(*args: str, measured: bool = False) -> subprocess.CompletedProcess[str]:
    prefix = [sys.executable, "-c", MEASURED] if measured else []
    return subprocess.run([*prefix, sys.executable, "-m", "grader", "grade", str(EXAMPLE),
                           *args, "--no-llm", "--no-exec", "--no-check", "--no-install"],
                          cwd=ROOT, capture_output=True, text=True, timeout=1800,
                          check=False)


def counts(stderr: str) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in PROGRESS.findall(stderr)]


def peak_mb(stderr: str) -> float:
    return int(re.findall(r"peak-rss-kb (\d+)", stderr)[-1]) / 1024


# --- chunks ------------------------------------------------------------------------------

def test_chunks_hold_the_budget_and_keep_the_workers_busy():
    sizes = [10, 10, 10, 50, 5, 5, 5, 5, 200, 1]
    plan = chunks(sizes, budget=30, least=2)
    assert [list(r) for r in plan] == [[0, 1, 2], [3, 4], [5, 6, 7], [8, 9]]
    assert [i for r in plan for i in r] == list(range(len(sizes)))  # each once, in order
    assert [len(r) for r in chunks([1] * 10, budget=1000, most=4)] == [4, 4, 2]
    assert chunks([], budget=10) == []
    assert [len(r) for r in chunks([500], budget=10)] == [1]  # larger than the budget: alone


def test_the_chunk_budget_comes_from_the_memory_left_after_the_runs():
    gb = 1 << 30
    assert chunk_budget(None) == CHUNK_MAX
    assert chunk_budget(16 * gb) == CHUNK_MAX
    assert chunk_budget(256 * MB) == 256 * MB // 8
    # three runs of 2 GB (+ 512 MB each) on a machine with 8 GB left: 0.5 GB to share
    assert chunk_budget(8 * gb, workers=3, run_memory_mb=2048) == (8 * gb - 3 * 2560 * MB) // 8
    assert chunk_budget(4 * gb, workers=3, run_memory_mb=2048) == CHUNK_MIN


# --- reading a class one notebook at a time ------------------------------------------------

def test_a_class_read_one_at_a_time_is_named_as_when_read_whole(tmp_path):
    """Labels, student ids, notes and problems as ``expand_uploads`` gives them, with the
    notebooks handed over one at a time and none kept."""
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as zf:
        zf.writestr("s0100/hw.ipynb", notebook(100))
    path = tmp_path / "fall.zip"
    class_zip(path, same=3, distinct=3, bad=True)
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("fall/late.zip", inner.getvalue())
        with pytest.warns(UserWarning, match="Duplicate"):
            zf.writestr("fall/s0001/hw.ipynb", notebook(7))  # a second entry of one name
        zf.writestr("../escape.ipynb", notebook(8))
        zf.writestr("fall/readme.txt", "not a notebook")
    data = path.read_bytes()
    uploads = [("notes.txt", b"hi"), ("fall.zip", data), ("broken.zip", b"PK not a zip"),
               ("s0200.ipynb", notebook(200)), ("s0201.ipynb", b"{")]
    files, problems = expand_uploads(uploads)
    kept: list[tuple[str, int]] = []
    with read_class(uploads, lambda sha, d: kept.append((sha, len(d)))) as cls:
        assert [(r.name, r.student_id, r.display_name, r.archive, r.entry, r.notes)
                for r in cls.refs] == [(f.name, f.student_id, f.display_name, f.archive,
                                       f.entry, f.notes) for f in files]
        assert sorted(map(repr, cls.problems)) == sorted(map(repr, problems))
        assert len(problems) == 6  # two uploads, one entry (zip-slip), three notebooks
        assert [r.size for r in cls.refs] == [len(f.data) for f in files]
        assert [sha for sha, _ in kept] == [r.sha256 for r in cls.refs]
        for ref, f in zip(cls.refs, files, strict=True):  # read again when graded
            assert cls.read(ref) == f.data
    assert any("s9998" in p.file and "fall.zip" in p.file for p in problems)


def test_a_notebook_changed_on_disk_since_it_was_read_is_refused(tmp_path):
    path = tmp_path / "s0001.ipynb"
    path.write_bytes(notebook(1))
    with read_class([(str(path), path)]) as cls:
        (ref,) = cls.refs
        path.write_bytes(notebook(2))
        with pytest.raises(ArchiveError, match="changed since it was read") as caught:
            cls.read(ref)
    assert caught.value.file == ref.name


# --- one batch, in chunks ------------------------------------------------------------------

def _refs(n: int, twins: int = 0) -> tuple[list[NotebookRef], dict[str, bytes]]:
    """``n`` distinct notebooks, then ``twins`` more of the first one's content."""
    data = {f"s{i:04d}.ipynb": notebook(i) for i in range(n)}
    data |= {f"t{i:04d}.ipynb": data["s0000.ipynb"] for i in range(twins)}
    refs = [NotebookRef(name, hashlib.sha256(d).hexdigest(), len(d), name[:-6], name[:-6],
                        notes=(f"note of {name}",)) for name, d in data.items()]
    return refs, data


def test_a_batch_is_fetched_a_chunk_at_a_time_with_one_count_and_one_batch(tmp_path):
    refs, data = _refs(30, twins=6)
    grader = Grader(load_assignment(EXAMPLE), GradeOptions(execute=False, use_llm=False))
    held: list[int] = []  # notebooks fetched and not yet graded, at each fetch
    fetched: list[str] = []
    graded: list[str] = []
    seen: list[tuple[int, int]] = []

    def fetch(ref: NotebookRef) -> bytes:
        fetched.append(ref.name)
        held.append(len(fetched) - len(graded))
        return data[ref.name]

    def progress(done: int, total: int, report) -> None:
        seen.append((done, total))
        if report.file in fetched:
            graded.append(report.file)

    with Store(tmp_path / "g.db") as store:
        result = grade_refs(grader, refs, fetch, store, workers=2, progress=progress, most=7)
        assert max(held) <= 7  # never more than a chunk's notebooks in hand
        assert sorted(fetched) == sorted(r.name for r in refs[:30])  # the twins: not fetched
        assert seen == [(i, 36) for i in range(1, 37)]  # one count over the whole batch
        assert result.reused == 6
        assert [r.file for r in result.reports] == [r.name for r in refs]
        (batch,) = store.batches(store.assignment_id("py-functions"))
        assert (batch.id, batch.total, batch.done, batch.status) == (result.batch_id, 36, 36,
                                                                     "done")
        grades = {g.file: g for g in store.list_grades(batch.assignment_id)}
        assert len(grades) == 36 == len(set(result.grade_ids))
        twin = store.get_report(grades["t0003.ipynb"].id)
        first = store.get_report(grades["s0000.ipynb"].id)
        assert (twin.student_id, twin.score) == ("t0003", first.score)  # its own record
        notes = [f.message for f in twin.flags if f.code == "upload_note"]
        assert notes == ["note of t0003.ipynb"]  # its own upload's notes, not the first's


def test_a_class_graded_again_reuses_its_grades_and_a_regrade_grades_each_content_once(
        tmp_path):
    refs, data = _refs(4, twins=3)
    grader = Grader(load_assignment(EXAMPLE), GradeOptions(execute=False, use_llm=False))
    fetched: list[str] = []

    def fetch(ref: NotebookRef) -> bytes:
        fetched.append(ref.name)
        return data[ref.name]

    with Store(tmp_path / "g.db") as store:
        grade_refs(grader, refs, fetch, store, most=3)
        fetched.clear()
        again = grade_refs(grader, refs, fetch, store, most=3)
        assert (fetched, again.reused) == ([], 7)
        # graded before: no items of the new batch, so no rate counts them as graded
        assert store.get_batch(again.batch_id).total == 0
        regraded = grade_refs(grader, refs, fetch, store, regrade=True, most=3)
        assert sorted(fetched) == sorted(r.name for r in refs[:4])  # each content once
        batch = store.get_batch(regraded.batch_id)
        assert (batch.total, batch.done, regraded.reused) == (7, 7, 3)
        assert len(store.list_grades(store.assignment_id("py-functions"))) == 7


def test_without_a_store_a_class_is_graded_in_chunks_too():
    refs, data = _refs(9, twins=3)
    grader = Grader(load_assignment(EXAMPLE), GradeOptions(execute=False, use_llm=False))
    fetched: list[str] = []

    def fetch(ref: NotebookRef) -> bytes:
        fetched.append(ref.name)
        return data[ref.name]

    result = grade_refs(grader, refs, fetch, None, most=4)
    assert len(fetched) == 9
    assert [r.file for r in result.reports] == [r.name for r in refs]
    assert [r.student_id for r in result.reports[-3:]] == ["t0000", "t0001", "t0002"]
    assert len({r.score for r in result.reports[9:] + result.reports[:1]}) == 1


# --- the command line, at scale -----------------------------------------------------------

@pytest.mark.slow
def test_a_zip_of_2000_notebooks_is_graded_as_one_batch_in_bounded_memory(tmp_path):
    big, small = tmp_path / "fall.zip", tmp_path / "spring.zip"
    pad = 120  # KB of notes: a notebook of ~120 KB, as one with plots is
    ids = class_zip(big, same=2000, distinct=40, pad_kb=pad, bad=True)
    class_zip(small, same=200, distinct=40, pad_kb=pad)
    db = tmp_path / "grader.db"
    done = cli(str(big), "--db", str(db), "--json", "--chunk", "50", "--workers", "2",
               measured=True)
    assert done.returncode == 1, done.stderr[-3000:]  # two entries could not be graded
    rows = json.loads(done.stdout)
    graded = [r for r in rows if r["status"] == "graded"]
    assert sorted(r["student_id"] for r in graded) == ids  # every student, once
    failed = {r["entry"]: r for r in rows if r["status"] == "error"}
    assert set(failed) == {"fall/s9998/hw.ipynb", "fall/s9999/hw.ipynb"}
    for entry, row in failed.items():  # the archive and the entry, and why
        assert row["file"] == f"{big}/{entry}"
        assert row["archive"] == str(big)
    assert "not JSON" in failed["fall/s9998/hw.ipynb"]["error"]
    assert "cells" in failed["fall/s9999/hw.ipynb"]["error"]
    assert counts(done.stderr) == [(i, 2040) for i in range(1, 2041)]
    with Store(db) as store:
        aid = store.assignment_id("py-functions")
        (batch,) = store.batches(aid)
        assert (batch.total, batch.done, batch.pending, batch.status) == (2040, 2040, 0, "done")
        assert len(store.list_grades(aid)) == 2040
    # Memory: the class's notebooks (2,040 x ~120 KB) are never held at once. The peak
    # grows with the class by the reports kept for the output (~25 KB each), not by
    # the notebooks' bytes.
    baseline = cli(str(small), "--db", str(tmp_path / "small.db"), "--json", "--chunk", "50",
                   "--workers", "2", measured=True)
    assert baseline.returncode == 0, baseline.stderr[-3000:]
    notebooks_mb = 2040 * pad / 1024
    grown = peak_mb(done.stderr) - peak_mb(baseline.stderr)
    assert grown < notebooks_mb / 2, (peak_mb(done.stderr), peak_mb(baseline.stderr))


@pytest.mark.slow
def test_a_class_killed_mid_way_is_continued_as_the_same_batch(tmp_path):
    """kill -9 in the middle of a class graded in chunks; grading the same ZIP again with
    the same store continues that batch: one batch, each notebook graded once, and the
    output and exports cover the whole class (four of whose notebooks were graded in an
    earlier batch, and are taken from it)."""
    path, early = tmp_path / "fall.zip", tmp_path / "early.zip"
    ids = class_zip(path, same=0, distinct=36)
    with zipfile.ZipFile(path) as whole, zipfile.ZipFile(early, "w") as part:
        for i in range(30, 34):
            part.writestr(f"fall/s{i:04d}/hw.ipynb", whole.read(f"fall/s{i:04d}/hw.ipynb"))
    db, out = tmp_path / "grader.db", tmp_path / "out"
    assert cli(str(early), "--db", str(db)).returncode == 0
    args = [str(path), "--db", str(db), "--chunk", "6", "--workers", "1"]
    with subprocess.Popen([sys.executable, "-m", "grader", "grade", str(EXAMPLE), *args,
                           "--no-llm", "--no-exec", "--no-check", "--no-install"],
                          cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:  # killed once the third chunk is under way
            if (m := PROGRESS.search(line)) and int(m.group(1)) >= 14:
                os.kill(proc.pid, signal.SIGKILL)
                break
        proc.kill()
    assert proc.returncode == -signal.SIGKILL
    with Store(db) as store:
        aid = store.assignment_id("py-functions")
        batch, first = store.batches(aid)
        assert first.total == 4
        assert batch.status == "interrupted"
        assert batch.total == 32  # the four graded before are no items of it
        assert 14 <= batch.done < 32
        before = {g.file: g.created_at for g in store.list_grades(aid)}
    again = cli(*args, "--json", "--out", str(out))
    assert again.returncode == 0, again.stderr[-3000:]
    assert counts(again.stderr) == [(i, 36) for i in range(1, 37)]  # the whole class
    assert sorted(r["student_id"] for r in json.loads(again.stdout)) == ids
    with Store(db) as store:
        same, _ = store.batches(aid)
        assert (same.id, same.status, same.done, same.total) == (batch.id, "done", 32, 32)
        grades = store.list_grades(aid)
        assert len(grades) == 36
        for g in grades:  # those graded before the kill were not graded again
            if g.file in before:
                assert g.created_at == before[g.file]
    with (out / "grades.csv").open(newline="") as fh:
        assert sorted(r["student_id"] for r in csv.DictReader(fh)) == ids
    canvas = (out / "canvas.csv").read_text().splitlines()
    assert len(canvas) == 2 + 36
    assert len(list((out / "feedback").glob("*.md"))) == 36
