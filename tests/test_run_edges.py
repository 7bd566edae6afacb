"""Resource edges of a run (issue 24, item 5): the memory of a run's processes together,
a stop in the middle of a batch, batches too large to grade unasked, and what pid 1
of the sandbox shows.

Real cgroups (skipped, with the reason, where this process cannot make one), real
bubblewrap, real kernels and the real command line on the bundled notebooks.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from grader.layers.base import GradeOptions
from grader.sandbox.cgroup import RunCgroup, usable_controllers
from grader.sandbox.execution import ExecLimits, execute_notebook, sandbox_available
from grader.sandbox.limits import limiter, run_memory_mb
from grader.service.sizing import batch_size
from grader.store.database import Store

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "py-functions"
needs_sandbox = pytest.mark.skipif(not sandbox_available(), reason="bubblewrap cannot run here")
needs_memory_cgroup = pytest.mark.skipif(
    "memory" not in usable_controllers(),
    reason="this process cannot make a cgroup with the memory controller here")

FAMILY = """
import subprocess, sys
def family(n, mb):
    '''n processes of mb MB each, at once: (how many the kernel killed, how many
    could not allocate)'''
    code = f"import time; block = b'x' * ({mb} << 20); time.sleep(2)"  # written: resident
    procs = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.DEVNULL)
             for _ in range(n)]
    codes = [p.wait() for p in procs]
    return sum(c == -9 for c in codes), sum(c > 0 for c in codes)
"""


def notebook(*cells: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nb


def printed(cell) -> str:
    return "".join(o.text for o in cell.outputs)


# --- memory: the run's processes together -----------------------------------------------

@needs_memory_cgroup
def test_a_run_group_bounds_the_memory_of_its_processes_together():
    """Five children of 250 MB each, each under its own RLIMIT_AS, do not fit a group of
    320 + 512 MB together: the kernel kills some, and the group counts the kills."""
    group = RunCgroup.create(64, memory_mb=run_memory_mb(320))
    try:
        proc = subprocess.run(
            [sys.executable, "-c", FAMILY + "print('killed', *family(5, 250))"],
            preexec_fn=limiter(320, 100, 10_000, 60, group.join), capture_output=True,
            text=True, timeout=120, check=False)
        assert group.memory_mb == run_memory_mb(320) == 832
        killed, failed = map(int, proc.stdout.split()[-2:])
        assert (killed >= 1, failed) == (True, 0), proc.stdout + proc.stderr
        assert group.oom_kills() >= killed
        words = group.describe()
        assert "at most 832 MB of memory for all its processes together" in words
        assert "the memory limit killed" in words
    finally:
        group.close()
    assert not group.folders


@needs_memory_cgroup
def test_one_child_within_the_bound_is_not_killed():
    group = RunCgroup.create(64, memory_mb=run_memory_mb(320))
    try:
        proc = subprocess.run(
            [sys.executable, "-c", FAMILY + "print('killed', *family(1, 250))"],
            preexec_fn=limiter(320, 100, 10_000, 60, group.join), capture_output=True,
            text=True, timeout=120, check=False)
        assert proc.stdout.split()[-2:] == ["0", "0"], proc.stdout + proc.stderr
        assert group.oom_kills() == 0
        assert "killed" not in group.describe()
    finally:
        group.close()


@pytest.mark.slow
@needs_sandbox
@needs_memory_cgroup
def test_a_memory_hungry_family_in_a_notebook_is_bounded_and_said_so():
    """4 processes x 700 MB with 1024 MB a process: 2.8 GB would fit each rlimit, not the
    run's 1536 MB together; the twin with one child runs as before."""
    result = execute_notebook(
        notebook(FAMILY, "print('alone', *family(1, 700))", "print('family', *family(4, 700))"),
        "python", [], [], ExecLimits(cell_timeout_s=120, total_timeout_s=300, memory_mb=1024))
    assert not result.error, result.error
    alone, together = (printed(c) for c in result.cells[1:3])
    assert alone.split() == ["alone", "0", "0"], alone
    killed, failed = map(int, together.split()[-2:])
    assert (killed >= 1, failed) == (True, 0), together
    notes = " ".join(result.notes)
    assert "at most 1536 MB of memory for all its processes together" in notes
    assert "the memory limit killed" in notes
    assert result.oom_kills >= killed  # the outputs layer flags it (out_of_memory)


# --- a cell that writes without end ---------------------------------------------------------

@pytest.mark.slow
@needs_sandbox
def test_a_stderr_flood_is_cut_as_it_arrives_and_flagged(tmp_path):
    """A cell writing to stderr forever used to fill the runner's memory until a
    MemoryError that the letter blamed on the student's code. Now the runner keeps the
    first MAX_STREAM characters, drops the rest as it comes, and says which stream."""
    flood = "import sys\nwhile True:\n    sys.stderr.write('x' * 1000 + '\\n')"
    result = execute_notebook(notebook("a = 1", flood), "python", [], ["a"],
                              ExecLimits(cell_timeout_s=8, total_timeout_s=60), workdir=tmp_path)
    quiet, loud = result.cells
    assert (quiet.flooded, loud.flooded) == ((), ("stderr",))
    assert loud.error.startswith("CellTimeoutError")  # it ran on until its time limit
    assert "MemoryError" not in loud.error
    assert sum(len(o.text) for o in loud.outputs) < 200_000  # what is kept of one output
    assert result.variables["a"].values == 1  # the run went on to the inspection


@pytest.mark.slow
@needs_sandbox
def test_a_flooding_notebook_is_flagged_output_flood_in_its_grade():
    from grader.assignment import load_assignment
    from grader.pipeline import GradeInput, Grader

    nb = nbformat.read(EXAMPLE / "submissions" / "complete.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(
        "import sys\nfor i in range(3_000_000):\n    sys.stderr.write('flood %d\\n' % i)"))
    grader = Grader(load_assignment(EXAMPLE), GradeOptions(cell_timeout_s=30))
    report = grader.grade(GradeInput("flood.ipynb", nbformat.writes(nb).encode()))
    flags = {f.code: f.message for f in report.flags}
    assert "output_flood" in flags, flags
    assert "stderr" in flags["output_flood"]


# --- pid 1 of the sandbox -----------------------------------------------------------------

@pytest.mark.slow
@needs_sandbox
def test_pid_1_shows_no_host_path(tmp_path):
    work = tmp_path / "runs"
    result = execute_notebook(
        notebook("print(repr(open('/proc/1/cmdline', 'rb').read()))",
                 "print(repr(open('/proc/1/environ', 'rb').read()))",
                 "import os; print(os.getcwd())"),
        "python", [], [], ExecLimits(cell_timeout_s=60, total_timeout_s=120), workdir=work)
    assert not result.error, result.error
    cmdline, environ, cwd = (printed(c) for c in result.cells)
    if os.geteuid() == 0:  # pid 1 is another uid's: hidden from the student's code
        assert all(text.startswith("FileNotFoundError") for text in (cmdline, environ))
    else:  # shown with neutral files over it
        assert cmdline.strip() == repr(b"bwrap\x00")
        assert environ.strip() == repr(b"")
    assert str(work) in cwd  # the run's own folder is where it works ...
    for shown in (cmdline, environ):  # ... but pid 1 names no host folder
        assert str(ROOT) not in shown
        assert str(work) not in shown
        assert "--bind" not in shown


# --- the number of notebooks in a batch -----------------------------------------------------

def big_zip(n: int) -> bytes:
    nb = nbformat.writes(notebook("x = 1"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i in range(n):
            zf.writestr(f"class/student{i:04d}/hw.ipynb", nb)
        zf.writestr("class/readme.txt", "not a notebook")
        zf.writestr("__MACOSX/class/._hw.ipynb", "leftover")
    return buf.getvalue()


def test_a_large_batch_is_counted_from_the_archive_for_the_confirmation():
    size = batch_size([("fall.zip", big_zip(2000)), ("late.ipynb", b"{}")], confirm_above=300)
    assert size.notebooks == 2001
    assert dict(size.uploads)["fall.zip"] == 2000
    assert size.needs_confirmation  # the app asks; nothing refuses it (issue 32, item 8)
    assert size.words() == "2,001 notebooks (fall.zip: 2,000)"  # nothing guessed
    assert not batch_size([("fall.zip", big_zip(2000))], confirm_above=2000).needs_confirmation


def test_the_cli_grades_a_zip_larger_than_a_chunk_without_asking(tmp_path):
    archive = tmp_path / "fall.zip"
    archive.write_bytes(big_zip(12))
    args = [sys.executable, "-m", "grader", "grade", str(EXAMPLE), str(archive), "--no-llm",
            "--no-exec", "--no-check", "--json", "--chunk", "5"]
    graded = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600,
                            check=False)
    assert graded.stdout.count('"file"') == 12, graded.stderr


# --- SIGTERM in the middle of a batch -------------------------------------------------------

def _groups_of(pid: int) -> list[Path]:
    from grader.sandbox.cgroup import _places
    from grader.sandbox.run_folders import pid_namespace
    tag = f"grader-run-{pid_namespace()}-{pid}-"
    return [e for _, place in _places() for e in place.iterdir() if e.name.startswith(tag)]


@pytest.mark.slow
@needs_sandbox
def test_sigterm_mid_batch_stops_cleanly_and_says_what_was_graded(tmp_path):
    runs, db = tmp_path / "tmp", tmp_path / "grades.db"
    runs.mkdir()
    subs = sorted((EXAMPLE / "submissions").glob("*.ipynb"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "grader", "grade", str(EXAMPLE), *map(str, subs), "--no-llm",
         "--no-check", "--workers", "2", "--db", str(db)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=os.environ | {"TMPDIR": str(runs)})
    progress: list[str] = []
    reader = threading.Thread(target=lambda: progress.extend(proc.stderr), daemon=True)
    reader.start()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and not (
            any(f"1/{len(subs)}" in line for line in progress)
            and list(runs.glob("grader-run-*"))):
        time.sleep(0.05)
    assert proc.poll() is None, "the batch ended before it could be stopped"
    assert list(runs.glob("grader-run-*")), "no sandbox running when stopped"
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=120)
    reader.join(timeout=10)
    assert proc.returncode == 128 + signal.SIGTERM, out + "".join(progress)
    assert not list(runs.glob("grader-run-*"))  # no student notebook left behind
    assert _groups_of(proc.pid) == []
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("grading was stopped (SIGTERM): ")
    graded = [line for line in out.splitlines() if line.endswith(tuple("0123456789"))
              and ": " in line and "not graded" not in line]
    left = [line for line in out.splitlines() if "not graded (grading was stopped" in line]
    assert graded
    assert left
    assert len(graded) + len(left) == len(subs)
    assert f"{len(graded)} of {len(subs)} notebooks graded and saved in {db}" in summary
    store = Store(db)
    try:
        aid = store.assignment_id("py-functions")
        assert aid is not None
        stored = {Path(g.file).name for g in store.list_grades(aid)}
        assert stored == {Path(line.split(": ")[0]).name for line in graded}
        assert store.batches(aid)[0].status == "interrupted"
    finally:
        store.close()


@pytest.mark.slow
@needs_sandbox
def test_stopping_the_app_s_jobs_keeps_their_grades_and_leaves_no_run_behind(
        tmp_path, monkeypatch):
    """What the app does on its way out (``atexit``): the job in the middle of its batch
    ends, its batch interrupted, the grades made so far saved; runs may start again."""
    import tempfile

    from grader.sandbox.stopping import stopping
    from grader.service.jobs import start_grading, stop_jobs
    from grader.service.workspace import Upload, Workspace

    runs = tmp_path / "tmp"
    runs.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(runs))
    store = Store(tmp_path / "grades.db")
    try:
        workspace = Workspace(store, user_dir=tmp_path / "assignments")
        subs = sorted((EXAMPLE / "submissions").glob("*.ipynb"))
        job = start_grading(workspace, "py-functions",
                            [Upload(p.name, p.read_bytes()) for p in subs],
                            GradeOptions(execute=True, use_llm=False), None, workers=1)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not job.finished and not (
                job.board.snapshot().done >= 1 and list(runs.glob("grader-run-*"))):
            time.sleep(0.05)
        assert not job.finished, "the batch ended before it could be stopped"
        assert stop_jobs("the app is stopping") == []
        assert job.finished
        assert "GradingStopped" in job.result.error
        assert not list(runs.glob("grader-run-*"))
        aid = store.assignment_id("py-functions")
        done = len(store.list_grades(aid))
        assert 1 <= done < len(subs)
        assert store.batches(aid)[0].status == "interrupted"
        assert stopping() == ""  # the process may grade again
    finally:
        store.close()
