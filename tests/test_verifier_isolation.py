"""What judges a notebook is out of the student's reach (issue 32, items 1, 2 and 5).

As root, the student's kernel runs as one uid and the runner with its verifiers (the R
verifier included) as another, with ``/proc`` showing each uid only its own processes;
the instructor's tests reach the runner through a pipe, never a file. Real sandboxes and
kernels: the student's code looks for the tests and the verifier everywhere it can, tries
to stop or kill what it finds, and stops its own kernel; then each attack of
``tests/hostile/forging_verifier.py`` is graded beside its honest twin.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from grader.sandbox.execution import (
    ExecLimits,
    InstructorTest,
    execute_notebook,
    kernel_available,
    sandbox_available,
)
from tests.hostile import forging_verifier

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not sandbox_available() or not kernel_available("python"),
                                 reason="bubblewrap or the Python kernel is missing"),
              pytest.mark.skipif(os.geteuid() != 0, reason="uids of a run's own need root")]
needs_r = pytest.mark.skipif(not kernel_available("r"), reason="no R kernel")

SECRET = "hidden-test-7f3a9c1e"  # in the test's code only: found anywhere, it leaked
LOOK = f'''
import os, sys
SKIP = ("/proc", "/sys", "/dev", "/usr", sys.prefix, sys.base_prefix)
hits, opened, pids = [], [], []
for folder, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if not os.path.join(folder, d).startswith(SKIP)]
    for name in files:
        try:
            with open(os.path.join(folder, name), "rb") as fh:
                if b"{SECRET[:8]}" + b"{SECRET[8:]}" in fh.read(5_000_000):
                    hits.append(os.path.join(folder, name))
        except OSError:
            pass
me = os.getuid()
for pid in (p for p in os.listdir("/proc") if p.isdigit()):
    with open(f"/proc/{{pid}}/status") as fh:
        uid = int(next(ln for ln in fh if ln.startswith("Uid:")).split()[1])
    pids.append((int(pid), uid))
    for part in ("cmdline", "environ"):
        try:
            with open(f"/proc/{{pid}}/{{part}}", "rb") as fh:
                if b"{SECRET[:8]}" + b"{SECRET[8:]}" in fh.read():
                    hits.append(f"/proc/{{pid}}/{{part}}")
        except OSError:
            pass
print("hits", hits)
print("others", [p for p, uid in pids if uid != me])
'''
SIGNAL = '''
import os, signal
reached, mine = [], {int(t) for t in os.listdir("/proc/self/task")}  # our own threads
for pid in [os.getppid(), *range(1, 300)]:
    if pid not in mine:
        try:
            os.kill(pid, signal.SIGSTOP)
            reached.append(pid)
        except OSError:
            pass
print("reached", reached)
'''


def run(cells: list[str], tests: list[InstructorTest], language: str = "python",
        **limits: int) -> object:
    nb = new_notebook(cells=[new_code_cell(c) for c in cells])
    if language == "r":
        nb.metadata["kernelspec"] = {"name": "ir", "language": "R", "display_name": "R"}
    return execute_notebook(nb, language, [], [], ExecLimits(**({"cell_timeout_s": 60,
                                                                 "total_timeout_s": 240}
                                                                | limits)), tests=tests)


def printed(cell) -> str:
    return "".join(o.text for o in cell.outputs)


def test_the_kernel_finds_no_test_code_and_no_process_but_its_own() -> None:
    test = InstructorTest("hidden", f"# {SECRET}\nassert f(2) == 4", 10.0)
    result = run(["def f(x):\n    return 2 * x", LOOK, SIGNAL], [test])
    assert result.error == "", result.error
    look, signalled = printed(result.cells[1]), printed(result.cells[2])
    assert "hits []" in look, look
    assert "others []" in look, look  # the runner, the warden, bubblewrap: invisible
    assert "reached []" in signalled, signalled  # and beyond any signal
    assert result.tests["hidden"].status == "passed", result.tests
    assert any("cannot see, signal or trace" in n for n in result.notes), result.notes


@needs_r
def test_an_r_kernel_cannot_find_or_stop_its_verifier() -> None:
    watcher = ('system("sh -c \'for i in $(seq 1 400); do for d in /proc/[0-9]*; do '
               'grep -qa rverif[y] $d/cmdline 2>/dev/null && echo $d >> /tmp/seen && '
               'kill -STOP ${d#/proc/} 2>/dev/null && echo stopped >> /tmp/seen; done; '
               'sleep 0.05; done\' > /dev/null 2>&1", wait = FALSE)\n'
               "twice <- function(x) 2 * x")
    # run right after the watcher's cell: the verifier starts while the watcher looks
    tests = [InstructorTest(f"t{i}", f"# {SECRET}\nstopifnot(twice(2) == 4)", 20.0,
                            after="twice <- function") for i in range(3)]
    result = run([watcher, "Sys.sleep(2)",
                  'cat(if (file.exists("/tmp/seen")) readLines("/tmp/seen") else "none")'],
                 tests, "r")
    assert result.error == "", result.error
    assert printed(result.cells[2]).strip() == "none"
    assert {t.status for t in result.tests.values()} == {"passed"}, result.tests


def test_a_kernel_that_stops_itself_ends_its_run_at_once_and_its_tests_go_unverified() -> None:
    started = time.monotonic()
    result = run(["def f(x):\n    return 2 * x",
                  "import os, signal\nos.kill(os.getpid(), signal.SIGSTOP)", "y = 1"],
                 [InstructorTest("t", "assert f(2) == 4", 5.0)], cell_timeout_s=5)
    seconds = time.monotonic() - started
    assert result.tests["t"].status == "not run"  # could not be verified: review, no pass
    assert "stopped answering" in result.tests["t"].detail
    assert any("stopped answering" in n for n in result.notes), result.notes
    assert seconds < 60, seconds  # the cell's 5 s, a 10 s ping and shutdown; not 240 s


def test_the_tests_travel_in_no_file_of_the_run(tmp_path: Path) -> None:
    work = tmp_path / "runs"
    nb = new_notebook(cells=[new_code_cell("def f(x):\n    return 2 * x")])
    result = execute_notebook(nb, "python", [], [], ExecLimits(total_timeout_s=120),
                              workdir=work,
                              tests=[InstructorTest("t", f"# {SECRET}\nassert f(2) == 4", 5.0)])
    assert result.tests["t"].status == "passed"
    leaked = [p for p in work.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaked == []


GRADERS: dict[str, Grader] = {}


def graded(language: str, nb: dict, name: str, tmp_path: Path) -> tuple[float, set[str]]:
    folder = forging_verifier.forging.ASSIGNMENTS[language]
    if language not in GRADERS:
        GRADERS[language] = Grader(load_assignment(folder), GradeOptions(execute=True))
    path = tmp_path / f"{name}.ipynb"
    path.write_text(nbformat.writes(nbformat.from_dict(nb)), encoding="utf-8")
    report = GRADERS[language].grade(GradeInput.from_path(path))
    assert report.status == "graded", report
    return float(report.score or 0.0), {f.code for f in report.flags}


@pytest.mark.parametrize("language", ["python", pytest.param("r", marks=[pytest.mark.r,
                                                                           needs_r])])
def test_no_attack_on_the_verifier_scores_above_its_twin(language: str, tmp_path: Path) -> None:
    for i, v in enumerate(forging_verifier.variants(language)):
        attack, _ = graded(language, v.attack, f"attack{i}", tmp_path)
        twin, _ = graded(language, v.twin, f"twin{i}", tmp_path)
        assert attack <= twin, (v.what, attack, twin)
