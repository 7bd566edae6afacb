"""The sandbox against hostile notebooks: fork bombs, reading the host, hiding errors,
and run folders left behind (issue 9, items 3, 4, 5 and 9).

Real bubblewrap and real kernels; notebooks built with ``nbformat.v4.new_notebook``.
Every bomb is bounded on its own (a depth of 10 forks at most, each process gone after
a deadline), so a failure of the containment cannot take the machine.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from grader.sandbox import execution
from grader.sandbox.cgroup import usable_controllers
from grader.sandbox.execution import (
    ExecLimits,
    ExecutionResult,
    execute_notebook,
    kernel_available,
    sandbox_available,
)
from grader.sandbox.launch import SANDBOX_PROCESSES
from grader.sandbox.limits import POOL_START, reserve_user
from grader.sandbox.run_folders import PREFIX, Owner, make_run_folder, process_start
from grader.sandbox.tamper import static_findings
from grader.sandbox.view import runtime_paths

needs_sandbox = pytest.mark.skipif(not sandbox_available(), reason="bubblewrap cannot run here")
needs_r = pytest.mark.skipif(not kernel_available("r"), reason="no R kernel")
ROOT = os.geteuid() == 0
SYSTEM = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "dev", "proc", "sys",
          "var", "tmp"}


def notebook(*cells: str, language: str = "python") -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    if language == "r":
        nb.metadata["kernelspec"] = {"name": "ir", "language": "R", "display_name": "R"}
    return nb


def run(workdir: Path | None, *cells: str, language: str = "python",
        inspect: list[str] | None = None, data: list[Path] | None = None,
        **limits: int) -> ExecutionResult:
    limits.setdefault("cell_timeout_s", 120)
    limits.setdefault("total_timeout_s", 300)
    return execute_notebook(notebook(*cells, language=language), language, data or [],
                            inspect or [], ExecLimits(**limits), workdir=workdir)


def runtime(kernel: str) -> list[Path]:
    return list(runtime_paths(kernel, execution.RUNNER))


# --- item 3: fork bombs are contained, whatever the user ---------------------------------

FORK_BOMB = r"""
import glob, os, time
top, deadline = os.getpid(), time.time() + 20
for _ in range(10):  # 2**10 processes at most, even if nothing contained it
    try:
        os.fork()
    except OSError:
        open(f"refused-{os.getpid()}-{time.monotonic_ns()}", "w").close()
if os.getpid() != top:  # every child is gone by the deadline
    while time.time() < deadline:
        time.sleep(0.2)
    os._exit(0)
time.sleep(3)
refused = len(glob.glob("refused-*"))
if refused:
    raise RuntimeError(f"fork refused {refused} times")
print("no fork was refused")
"""

SPAWN_BOMB = r"""
import subprocess
with open("bomb.sh", "w") as script:  # depth 9: 2**10 shells at most; leaves sleep 8 s
    script.write('d=$1\n[ "$d" -ge 9 ] && exec sleep 8\n'
                 'sh "$0" $((d+1)) & sh "$0" $((d+1)) & wait\n')
done = subprocess.run(["sh", "bomb.sh", "0"], capture_output=True, text=True, timeout=90)
refused = done.stderr.count("Cannot fork")
if refused:
    raise RuntimeError(f"fork refused {refused} times")
print("no fork was refused")
"""

NORMAL = (
    "import pandas as pd\ndf = pd.DataFrame({'k': list('abcab'), 'v': range(5)})",
    "totals = df.groupby('k')['v'].sum()\nprint(totals.to_dict())",
    "import subprocess, threading\nbox = []\n"
    "worker = threading.Thread(target=lambda: box.append(sum(range(10))))\n"
    "worker.start(); worker.join()\n"
    "echo = subprocess.run(['echo', 'child'], capture_output=True, text=True).stdout",
)


def normal(workdir: Path) -> ExecutionResult:
    return run(workdir, *NORMAL, inspect=["totals", "box", "echo"])


def same_grade(got: ExecutionResult, reference: ExecutionResult) -> None:
    assert got.error == ""
    assert [(c.index, c.ok, c.error) for c in got.cells] == \
        [(c.index, c.ok, c.error) for c in reference.cells]
    assert [c.outputs for c in got.cells] == [c.outputs for c in reference.cells]
    assert {n: v.values for n, v in got.variables.items()} == \
        {n: v.values for n, v in reference.variables.items()}


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("bomb", [FORK_BOMB, SPAWN_BOMB], ids=["os.fork", "subprocess"])
def test_a_fork_bomb_is_contained_and_the_runs_beside_it_grade_as_alone(
        tmp_path: Path, bomb: str) -> None:
    reference = normal(tmp_path / "reference")
    assert reference.error == ""
    assert [c.ok for c in reference.cells] == [True] * len(NORMAL)
    assert reference.variables["totals"].values == [["a", 3], ["b", 5], ["c", 2]]
    assert reference.variables["echo"].values == "child\n"
    with ThreadPoolExecutor(max_workers=4) as pool:
        bombed = pool.submit(run, tmp_path / "bomb", bomb, "print('after')", max_processes=64)
        beside = [pool.submit(normal, tmp_path / f"beside{i}") for i in range(3)]
        results = [f.result() for f in beside]
        bomb_result = bombed.result()
    after = normal(tmp_path / "after")
    assert bomb_result.error == ""
    assert not bomb_result.cells[0].ok
    assert bomb_result.cells[0].error.startswith("RuntimeError: fork refused")
    assert bomb_result.cells[1].ok  # the kernel survived its own bomb
    contained = [n for n in bomb_result.notes if "at most 64 processes and threads" in n]
    assert contained, bomb_result.notes
    assert ("ran as uid" in contained[0]) if ROOT else ("grader's user" in contained[0])
    assert (f"pids.max {64 + SANDBOX_PROCESSES}" in contained[0]) == (
        "pids" in usable_controllers())
    for got in [*results, after]:
        same_grade(got, reference)


@pytest.mark.skipif(not ROOT, reason="the uid pool is for a grader running as root")
def test_concurrent_runs_get_distinct_uids_held_by_a_lock() -> None:
    with reserve_user() as first, reserve_user() as second:
        assert first.dedicated
        assert second.dedicated
        assert first.uid != second.uid
        assert all(u.uid >= POOL_START for u in (first, second))
        assert all(u.gid == u.uid for u in (first, second))
        lock = Path(tempfile.gettempdir()) / "grader-sandbox-uids" / str(first.uid)
        with open(lock) as other, pytest.raises(BlockingIOError):
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with open(lock) as other:  # released with the run
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)


# --- item 4: the sandbox sees an allow-list of the host ---------------------------------

VIEW = r"""
import json, os, socket
skip = set(SKIP)

def walk(top):
    found = []
    for folder, dirs, files in os.walk(top):
        found += [os.path.join(folder, d) + "/" for d in dirs if os.path.join(folder, d) in skip]
        dirs[:] = [d for d in dirs if os.path.join(folder, d) not in skip]
        found += [os.path.join(folder, f) for f in files]
        if len(found) > 200:
            break
    return sorted(found)

report = {"root": sorted(os.listdir("/")), "passwd": open("/etc/passwd").read(),
          "hostname": socket.gethostname(), "uid": os.getuid(),
          "seen": {t: walk(t) if os.path.exists(t) else None for t in TOPS},
          "exists": {p: os.path.exists(p) for p in PATHS}}
"""


@pytest.mark.slow
@needs_sandbox
def test_the_sandbox_shows_only_the_allow_list_and_python_still_works(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from inference.config import data_dir

    monkeypatch.setenv("GRADER_DATA_DIR", str(tmp_path / "grader-data"))
    secret = data_dir() / "grader.db"
    secret.parent.mkdir(parents=True)
    secret.write_text("grades")
    sibling = tmp_path / "runs" / f"{PREFIX}other" / "notebook.ipynb"  # another run's folder
    sibling.parent.mkdir(parents=True)
    sibling.write_text("{}")
    host_run = Path(tempfile.mkdtemp(prefix=PREFIX + "host-"))
    host_tmp = set(os.listdir("/tmp"))
    data = tmp_path / "data"
    data.mkdir()
    (data / "x.csv").write_text("a\n1\n")
    repo, shown = execution.REPO, runtime("python3")
    paths = [str(p) for p in (secret, sibling, host_run, repo / ".data", repo / "pyproject.toml",
                              repo / "grader" / "execution.py", execution.RUNNER, "/etc/shadow",
                              "/etc/hostname")]
    tops = ["/home", "/root", "/srv", "/work", "/mnt", "/opt", "/media", "/tmp"]
    code = (VIEW.replace("SKIP", repr([*map(str, shown), str(tmp_path / "runs")]))
            .replace("TOPS", repr(tops)).replace("PATHS", repr(paths)))
    try:
        result = run(tmp_path / "runs", code,
                     "%matplotlib inline\nimport matplotlib.pyplot as plt, pandas as pd\n"
                     "frame = pd.read_csv('/home/jovyan/work/x.csv')\n"
                     "frame.plot(); plt.show()", inspect=["report", "frame"], data=[data])
    finally:
        host_run.rmdir()
    assert result.error == ""
    assert [c.error for c in result.cells] == ["", ""]
    assert "image/png" in result.cells[1].outputs[-1].mime  # matplotlib drew in the sandbox
    assert result.variables["frame"].values == [[1]]
    report = result.variables["report"].values
    users = {line.split(":")[0] for line in report["passwd"].splitlines()}
    assert users == {"root", "nobody", "sandbox"}
    assert report["hostname"] == "sandbox"
    assert (report["uid"] >= POOL_START) if ROOT else (report["uid"] == os.getuid())
    allowed = SYSTEM | {p.parts[1] for p in shown} | {"home"}  # /home: the mapped data only
    assert set(report["root"]) <= allowed, report["root"]
    assert not {"srv", "mnt", "media"} & set(report["root"])
    seen = report["seen"]
    assert seen["/home"] == ["/home/jovyan/work/x.csv"]
    ours = {str(execution.RUNNER), *(str(f) for f in execution.BRIDGE_FILES if f.exists())}
    for top in ("/root", "/work", "/srv", "/mnt", "/opt", "/media"):  # runtimes, nothing else
        assert all(p.endswith("/") or p in ours for p in seen[top] or []), top
        assert {p.rstrip("/") for p in seen[top] or []} <= set(map(str, shown)) | ours, top
    # /tmp is the run's own: the way to its folder and what the kernel wrote, no host entry
    assert str(tmp_path / "runs") + "/" in seen["/tmp"]
    # (a checkout under /tmp has its runtime and our runner's files mapped at their paths:
    # the way to them is ours, not a host entry)
    own = {q.parts[2] for q in (Path(p) for p in [*ours, *map(str, shown)])
           if len(q.parts) > 2 and q.parts[1] == "tmp"}
    assert not {p.split("/")[2] for p in seen["/tmp"]} & (host_tmp - {tmp_path.parts[2]} - own)
    assert report["exists"] == {p: p == str(execution.RUNNER) for p in paths}
    assert not any("execution.py" in p or "tests.py" in p for p in ours)  # the runner's own


@pytest.mark.slow
@pytest.mark.r
@needs_sandbox
@needs_r
def test_r_and_the_tidyverse_run_in_the_allow_list_view(tmp_path: Path) -> None:
    result = run(tmp_path,
                 "suppressPackageStartupMessages(library(tidyverse))\n"
                 "df <- tibble(g = c('a', 'b', 'a'), v = 1:3) %>% group_by(g) %>%\n"
                 "  summarise(total = sum(v))\n"
                 "print(ggplot(df, aes(g, total)) + geom_col())",
                 "users <- sub(':.*', '', readLines('/etc/passwd'))\ntop <- list.files('/')\n"
                 "hidden <- list.files(c('/home', '/srv', '/mnt', '/opt'), recursive = TRUE)",
                 language="r", inspect=["df", "users", "top", "hidden"])
    assert result.error == ""
    assert [c.error for c in result.cells] == ["", ""]
    assert any("image/png" in o.mime for o in result.cells[0].outputs)
    v = result.variables
    assert v["df"].values == [["a", 4], ["b", 2]]
    assert set(v["users"].values) == {"root", "nobody", "sandbox"}
    assert set(v["top"].values) <= SYSTEM | {p.parts[1] for p in runtime("ir")}
    assert v["hidden"].values in ([], None, "")


# --- item 5: hiding errors does not blind the executor, and is flagged -------------------

HIDING = {
    "showtraceback": "import IPython\nIPython.get_ipython().showtraceback = lambda *a, **k: None",
    "excepthook": "import sys\nsys.excepthook = lambda *a: None",
    "set_custom_exc": "get_ipython().set_custom_exc((Exception,), lambda *a, **k: None)",
    "post_run_cell": "get_ipython().events.register('post_run_cell',\n"
                     "    lambda result: setattr(result, 'error_in_exec', None))",
}


@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("how", sorted(HIDING))
def test_hidden_errors_still_fail_their_cell_and_are_flagged(tmp_path: Path, how: str) -> None:
    result = run(tmp_path, HIDING[how], "1 / 0", "after = 1", inspect=["after"])
    assert result.error == ""
    assert [c.ok for c in result.cells] == [True, False, True]
    assert result.cells[1].error == "ZeroDivisionError: division by zero"
    assert result.variables["after"].values == 1
    static = [t for t in result.tampering if t.cell_id == result.cells[0].cell_id]
    observed = [t for t in result.tampering if t.cell_id is None]
    assert static, result.tampering
    assert static[0].line is not None
    # IPython puts back sys.excepthook after each cell: only the source shows that one
    assert bool(observed) == (how != "excepthook"), result.tampering
    assert all(t.text.startswith("after the last cell") for t in observed)


@pytest.mark.slow
@needs_sandbox
def test_an_honest_notebook_is_not_flagged(tmp_path: Path) -> None:
    result = run(tmp_path, "%matplotlib inline\nimport matplotlib.pyplot as plt\nplt.plot([1])",
                 "import warnings\nwarnings.filterwarnings('ignore')\n"
                 "try:\n    1 / 0\nexcept ZeroDivisionError:\n    pass", "raise KeyError('k')")
    assert [c.ok for c in result.cells] == [True, True, False]
    assert result.cells[2].error == "KeyError: 'k'"
    assert result.tampering == []


@pytest.mark.slow
@pytest.mark.r
@needs_sandbox
@needs_r
def test_r_error_hiding_is_flagged_and_real_errors_still_fail(tmp_path: Path) -> None:
    result = run(tmp_path, "options(error = function() NULL)",
                 "stop <- function(...) invisible(NULL)\nstop('hidden')",
                 "base::stop('still an error')", language="r")
    assert [c.ok for c in result.cells] == [True, True, False]
    assert result.cells[2].error.endswith("still an error")
    texts = [t.text for t in result.tampering]
    assert any("options(error = ...)" in t for t in texts), texts
    assert any("redefines R's stop" in t for t in texts), texts
    assert any(t.startswith("after the last cell: masked") and "stop" in t for t in texts), texts


@pytest.mark.parametrize("source", [
    "ip = get_ipython()\nip.showtraceback = lambda *a, **k: None",
    "get_ipython()._showtraceback = print",
    "import sys; sys.excepthook = None",
    "setattr(get_ipython(), 'showtraceback', None)",
    "get_ipython().set_custom_exc((Exception,), handler)",
    "%load_ext autoreload\nget_ipython().kernel.shell_handlers['execute_request'] = f",
    "from IPython.core.interactiveshell import ExecutionResult\nExecutionResult.success = True",
    "get_ipython().events.register('post_run_cell', fix)",
    "def f(:\n    pass\nget_ipython().showtraceback = None",  # does not parse: regex
])
def test_python_tampering_is_found_in_the_source(source: str) -> None:
    found = static_findings([{"cell_type": "code", "id": "c1", "source": source}], "python")
    assert found, source
    assert found[0].cell_id == "c1"
    assert found[0].line is not None


@pytest.mark.parametrize(("source", "language"), [
    ("df.plot()\nresult = model.run(x)\nshow = df.head()", "python"),
    ("try:\n    1 / 0\nexcept ZeroDivisionError:\n    print('handled')", "python"),
    ("%matplotlib inline\nimport warnings\nwarnings.filterwarnings('ignore')", "python"),
    ("x <- tryCatch(stop('a'), error = function(e) NA)\noptions(warn = -1, digits = 3)", "r"),
    ("y <- try(log(-1), silent = TRUE)\nstopifnot(TRUE)\n# options(error = recover)", "r"),
])
def test_ordinary_code_is_not_tampering(source: str, language: str) -> None:
    assert static_findings([{"cell_type": "code", "source": source}], language) == []


# --- item 9: run folders are private, and stale ones are removed ------------------------

def _dead_process() -> tuple[int, int]:
    child = subprocess.Popen(["sleep", "60"])
    start = process_start(child.pid)
    child.kill()
    child.wait()
    assert start is not None
    assert process_start(child.pid) is None
    return child.pid, start


@pytest.mark.slow
@needs_sandbox
def test_stale_run_folders_go_and_live_ones_stay(tmp_path: Path) -> None:
    me = Owner.me()
    pid, start = _dead_process()
    with subprocess.Popen(["sleep", "120"]) as other_grader:
        live_start = process_start(other_grader.pid)
        folders = {
            "dead": tmp_path / f"{PREFIX}{me.ns}-{pid}-{start}-abc123",
            "live": tmp_path / f"{PREFIX}{me.ns}-{other_grader.pid}-{live_start}-def456",
            "mine": tmp_path / f"{PREFIX}{me.tag}ghi789",
            "other_namespace": tmp_path / f"{PREFIX}{me.ns + 1}-{pid}-{start}-jkl012",
            "untagged": tmp_path / f"{PREFIX}mno345",
        }
        for folder in folders.values():
            folder.mkdir()
            (folder / "notebook.ipynb").write_text("a student's notebook")
        result = run(tmp_path, "print('hi')")
        other_grader.kill()
    assert result.cells[0].ok
    assert not folders["dead"].exists()
    assert all(f.exists() for name, f in folders.items() if name != "dead")
    new = [p for p in tmp_path.iterdir() if p.name.startswith(PREFIX + me.tag)
           and p != folders["mine"]]
    assert len(new) == 1
    info = new[0].stat()  # as root: the runner's uid's, entered by the kernel's group only
    assert info.st_mode & 0o777 == (0o710 if ROOT else 0o700)
    assert (info.st_uid >= POOL_START) if ROOT else (info.st_uid == os.getuid())


def test_a_new_run_folder_is_private_and_names_its_owner(tmp_path: Path) -> None:
    folder = make_run_folder(tmp_path)
    assert folder.parent == tmp_path
    assert folder.name.startswith(f"{PREFIX}{Owner.me().ns}-{os.getpid()}-")
    assert folder.stat().st_mode & 0o777 == 0o700
    assert re.fullmatch(rf"{PREFIX}\d+-\d+-\d+-[a-z0-9_]+", folder.name), folder.name


def test_stream_pieces_are_merged_once_in_order_and_other_outputs_break_them():
    from grader.sandbox.runner import merged_streams

    pieces = [{"output_type": "stream", "name": "stdout", "text": f"{i},"} for i in range(5000)]
    image = {"output_type": "display_data", "data": {"text/plain": "fig"}, "metadata": {}}
    merged = merged_streams([*pieces, {"output_type": "stream", "name": "stderr", "text": "w"},
                             image, {"output_type": "stream", "name": "stdout", "text": "end"}])
    assert [o.get("name") for o in merged] == ["stdout", "stderr", None, "stdout"]
    assert "".join(merged[0]["text"]) == "".join(f"{i}," for i in range(5000))
    assert merged[2] is image
