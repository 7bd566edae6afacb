"""Layer 2's execution engine: real notebooks run in the real sandbox, and comparisons.

Notebooks are built with ``nbformat.v4.new_notebook`` and really executed (Python
kernel in the venv; R tests use the course-r joins solution, copied). Each test that
starts a kernel is ``slow``; R ones are also ``r``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import time
from pathlib import Path

import nbformat
import pytest

from grader.layers.compare import compare_variables
from grader.sandbox import execution
from grader.sandbox.execution import (
    ExecLimits,
    ExecutionResult,
    execute_notebook,
    kernel_available,
    sandbox_available,
)
from grader.sandbox.inspect_code import VariableSummary

COURSE_R = Path("/work/shared/course-r")
ROOT = os.geteuid() == 0
needs_sandbox = pytest.mark.skipif(not sandbox_available(), reason="bubblewrap cannot run here")
needs_r = pytest.mark.skipif(not kernel_available("r") or not (COURSE_R / "joins").is_dir(),
                             reason="no R kernel or no course-r assignments")


def notebook(*cells: str, language: str = "python") -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(c[3:]) if c.startswith("md:")
                else nbformat.v4.new_code_cell(c) for c in cells]
    if language == "r":
        nb.metadata["kernelspec"] = {"name": "ir", "language": "R", "display_name": "R"}
    return nb


def run(tmp_path: Path, *cells: str, data: list[Path] | None = None,
        inspect: list[str] | None = None, **limits: int | bool) -> ExecutionResult:
    limits.setdefault("cell_timeout_s", 30)
    limits.setdefault("total_timeout_s", 90)
    return execute_notebook(notebook(*cells), "python", data or [], inspect or [],
                            ExecLimits(**limits), workdir=tmp_path)  # type: ignore[arg-type]


@pytest.fixture
def csv_data(tmp_path: Path) -> Path:
    folder = tmp_path / "assignment" / "data"
    folder.mkdir(parents=True)
    (folder / "x.csv").write_text("a,b\n1,2.5\n3,4.5\n")
    return folder


# --- execution -------------------------------------------------------------------------


@pytest.mark.slow
@needs_sandbox
def test_errors_are_recorded_per_cell_and_execution_continues(tmp_path: Path) -> None:
    result = run(tmp_path, "a = 1", "md:# A heading", "raise ValueError('boom')",
                 "print('still running'); b = a + 1", inspect=["b"])
    assert result.error == ""
    assert result.sandboxed
    assert not result.timed_out
    assert [(c.index, c.ok) for c in result.cells] == [(0, True), (2, False), (3, True)]
    assert result.cells[1].error == "ValueError: boom"
    assert result.cells[1].outputs[0].kind == "error"
    assert "\x1b[" not in result.cells[1].outputs[0].text  # ANSI colours stripped
    assert result.cells[2].outputs[0].text == "still running\n"
    assert result.variables["b"].values == 2


@pytest.mark.slow
@needs_sandbox
def test_a_cell_timeout_stops_execution_but_keeps_what_ran(tmp_path: Path) -> None:
    started = time.perf_counter()
    result = run(tmp_path, "a = 41\nprint('before')", "import time\ntime.sleep(120)", "b = 1",
                 inspect=["a", "b"], cell_timeout_s=2)
    assert time.perf_counter() - started < 40
    assert result.timed_out
    assert result.error == ""
    assert len(result.cells) == 2  # the third cell never ran
    assert result.cells[0].ok
    assert result.cells[0].outputs[0].text == "before\n"
    assert not result.cells[1].ok
    assert result.cells[1].error.startswith("CellTimeoutError")
    assert result.variables["a"].values == 41  # inspected after interrupting the kernel
    assert not result.variables["b"].exists


@pytest.mark.slow
@needs_sandbox
def test_the_total_time_limit_stops_the_run(tmp_path: Path) -> None:
    result = run(tmp_path, "import time\ntime.sleep(2)", "time.sleep(2)", "time.sleep(2)",
                 total_timeout_s=3)
    assert result.timed_out
    assert result.cells[0].ok
    assert len(result.cells) < 3
    assert all(c.error.startswith("CellTimeoutError") for c in result.cells[1:])


@pytest.mark.slow
@needs_sandbox
def test_the_memory_cap_fails_the_cell_not_the_grader(tmp_path: Path) -> None:
    result = run(tmp_path, "x = bytearray(6 * 1024 ** 3)", "print('alive')", memory_mb=1536)
    assert result.error == ""
    assert result.cells[0].error.startswith("MemoryError")
    assert result.cells[1].ok
    assert result.cells[1].outputs[0].text == "alive\n"


@pytest.mark.slow
@needs_sandbox
def test_the_network_is_unreachable_from_the_sandbox(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5):  # reachable from here
            server.accept()[0].close()
        result = run(tmp_path, "import socket\n"
                     f"socket.create_connection(('127.0.0.1', {port}), timeout=5)")
        server.settimeout(0.5)
        with pytest.raises(TimeoutError):
            server.accept()  # nothing arrived from the sandbox
    assert not result.cells[0].ok
    assert re.match(r"(ConnectionRefusedError|OSError|TimeoutError)", result.cells[0].error)


@pytest.mark.slow
@needs_sandbox
def test_student_code_cannot_touch_the_host_or_the_grader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADER_TEST_SECRET", "s3cret")
    repo = execution.REPO
    result = run(tmp_path,
                 "import os\nprint(os.environ.get('GRADER_TEST_SECRET'))\n"
                 f"print(os.path.exists({str(repo / 'pyproject.toml')!r}))",
                 f"open({str(repo / 'grader' / 'pwned.txt')!r}, 'w')",
                 "open('/usr/pwned.txt', 'w')",
                 "open('written.txt', 'w').write('ok')",
                 # the runner's pipe to the grader cannot be opened through /proc (as root,
                 # the runner is another uid's, invisible: its folder does not even exist)
                 "runner = f'/proc/{os.getppid()}/fd'\nopened = []\n"
                 "try:\n    fds = os.listdir(runner)\nexcept OSError:\n    fds = []\n"
                 "for fd in fds:\n"
                 "    try:\n        open(f'{runner}/{fd}', 'w')\n        opened.append(fd)\n"
                 "    except OSError:\n        pass\nprint(opened)",
                 "os.kill(os.getppid(), 9)", "print('never')")
    assert result.cells[0].outputs[0].text == "None\nFalse\n"
    assert not result.cells[1].ok
    assert not result.cells[2].ok
    assert "Read-only file system" in result.cells[2].error
    assert result.cells[3].ok  # the working directory is writable
    assert not (repo / "grader" / "pwned.txt").exists()
    assert result.cells[4].outputs[0].text == "[]\n"
    if ROOT:  # the kernel's parent is the warden, another uid's: it cannot be killed
        assert result.cells[5].error.startswith("PermissionError"), result.cells[5].error
        assert result.cells[6].ok
    else:  # the runner is the student's uid: killing it ends the run, and it is noted
        assert len(result.cells) == 5
        assert any("ended early" in n for n in result.notes)


@pytest.mark.slow
@needs_sandbox
def test_data_paths_resolve_wherever_the_student_names_them(
        tmp_path: Path, csv_data: Path) -> None:
    reads = {
        "d1": "/workspaces/student-repo/data/x.csv", "d2": "../../data/x.csv",
        "d3": "data/x.csv", "d4": "x.csv", "d5": "../../data/raw/x.csv",
        "d6": "C:\\Users\\student\\Downloads\\X.csv",
    }
    cells = ["import csv"] + [f"{name} = list(csv.reader(open({path!r})))"
                              for name, path in reads.items()]
    result = run(tmp_path, *cells, data=[csv_data], inspect=list(reads))
    assert [c.error for c in result.cells] == [""] * len(cells)
    for name in reads:
        assert result.variables[name].values == [["a", "b"], ["1", "2.5"], ["3", "4.5"]], name
    assert any("/workspaces/student-repo/data/x.csv" in n for n in result.notes)
    assert (csv_data / "x.csv").read_text() == "a,b\n1,2.5\n3,4.5\n"  # the original untouched


@pytest.mark.slow
@needs_sandbox
def test_chdir_to_a_missing_absolute_path_is_survived(tmp_path: Path, csv_data: Path) -> None:
    result = run(tmp_path,
                 "import os\nos.chdir('/Users/prof/GitHub/course/data')\nprint(os.getcwd())",
                 "text = open('x.csv').read()\nopen('out.txt', 'w').write(text)",
                 data=[csv_data], inspect=["text"])
    assert [c.error for c in result.cells] == ["", ""]
    assert result.cells[0].outputs[0].text == "/Users/prof/GitHub/course/data\n"
    assert result.variables["text"].values == "a,b\n1,2.5\n3,4.5\n"
    assert any("/Users/prof/GitHub/course/data" in n for n in result.notes)


@pytest.mark.slow
@needs_sandbox
def test_inspection_summarises_each_variable_on_its_own(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        "import numpy as np, pandas as pd\n"
        "df = pd.DataFrame({'region': ['n', 's', 'n'], 'sales': [1.5, 2.0, np.nan]})\n"
        "by_region = df.groupby('region')['sales'].sum()\n"
        "s = pd.Series([1, 2, 3], name='q')\n"
        "total = np.float64(3.5)\nitems = [1, 'two', None]\n"
        "big = pd.DataFrame({'x': range(30_000)})\n"
        "class Odd:\n    def __repr__(self): raise RuntimeError('no repr')\nodd = Odd()",
        inspect=["df", "by_region", "s", "total", "items", "big", "odd", "nowhere"])
    v = result.variables
    assert (v["df"].type, v["df"].shape, v["df"].columns) == ("DataFrame", (3, 2),
                                                              ("region", "sales"))
    assert v["df"].values == [["n", 1.5], ["s", 2.0], ["n", None]]  # NaN -> None
    assert v["df"].summary == {"sales:sum": 3.5, "sales:mean": 1.75, "sales:min": 1.5,
                               "sales:max": 2.0}
    assert v["by_region"].type == "Series"
    assert v["by_region"].values == [["n", 1.5], ["s", 2.0]]
    assert v["s"].values == [1, 2, 3]
    assert v["s"].dtypes == ("int64",)
    assert (v["total"].type, v["total"].values, v["total"].shape) == ("float", 3.5, None)
    assert (v["items"].type, v["items"].values) == ("list", [1, "two", None])
    assert v["big"].values is None
    assert v["big"].head == [[0], [1], [2], [3], [4]]
    assert v["big"].summary["x:sum"] == sum(range(30_000))
    assert v["odd"].exists
    assert v["odd"].error == "RuntimeError: no repr"
    assert not v["nowhere"].exists
    assert v["nowhere"].error == ""


@pytest.mark.slow
def test_without_bubblewrap_nothing_runs_unless_allowed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(execution, "BWRAP", None)
    refused = run(tmp_path, "a = 1", inspect=["a"])
    assert "bubblewrap" in refused.error
    assert refused.cells == []
    assert not refused.variables["a"].exists
    assert "not executed" in refused.variables["a"].error
    allowed = run(tmp_path, "a = 1", inspect=["a"], allow_unsandboxed=True)
    assert allowed.error == ""
    assert not allowed.sandboxed
    assert allowed.variables["a"].values == 1
    assert any("WITHOUT the sandbox" in n for n in allowed.notes)


def test_missing_data_is_a_sandbox_error_not_a_crash(tmp_path: Path) -> None:
    if not sandbox_available():
        pytest.skip("bubblewrap cannot run here")
    result = run(tmp_path, "a = 1", data=[tmp_path / "nope"], inspect=["a"])
    assert "assignment data not found" in result.error
    assert result.cells == []


# --- R ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.r
@needs_sandbox
@needs_r
def test_the_r_joins_solution_runs_clean_and_is_inspected(tmp_path: Path) -> None:
    folder = shutil.copytree(COURSE_R / "joins", tmp_path / "joins")
    nb = nbformat.from_dict(json.loads((folder / "solution.ipynb").read_text()))
    stored = "".join("".join(o.get("text", "")) for c in nb.cells for o in c.get("outputs", []))
    inner_rows = int(re.search(r"Inner Join Result: (\d+)", stored).group(1))  # type: ignore[union-attr]
    header = {f: (folder / "data" / f"{f}.csv").read_text().splitlines()[0].split(",")
              for f in ("customers", "orders")}
    result = execute_notebook(nb, "r", [folder / "data"], ["customer_orders", "missing_one"],
                              ExecLimits(cell_timeout_s=60, total_timeout_s=180),
                              workdir=tmp_path)
    assert result.error == ""
    assert result.kernel == "ir"
    assert [c.error for c in result.cells if not c.ok] == []  # setwd('/Users/...') survived
    assert len(result.cells) == sum(c.cell_type == "code" for c in nb.cells)
    joined = result.variables["customer_orders"]
    assert joined.type == "tbl_df"
    assert joined.error == ""
    expected = header["customers"] + [c for c in header["orders"] if c != "CustomerID"]
    assert joined.shape == (inner_rows, len(expected))
    assert joined.columns == tuple(expected)
    assert len(joined.values) == inner_rows
    assert joined.head == joined.values[:5]
    assert not result.variables["missing_one"].exists
    assert any("setwd" in n and "/Users/humphrjk" in n for n in result.notes)


@pytest.mark.slow
@pytest.mark.r
@needs_sandbox
@needs_r
def test_r_vectors_factors_and_lists_are_inspected(tmp_path: Path) -> None:
    nb = notebook("v <- c(1.5, NA, 3)\nf <- factor(c('lo', 'hi', 'lo'))\nn <- 42L\n"
                  "l <- list(a = 1, b = 'x')\nstop('an R error')", "after <- TRUE",
                  language="r")
    result = execute_notebook(nb, "r", [], ["v", "f", "n", "l", "after"],
                              ExecLimits(cell_timeout_s=60), workdir=tmp_path)
    assert result.cells[0].error.endswith("an R error")
    assert result.cells[1].ok
    v = result.variables
    assert (v["v"].type, v["v"].shape, v["v"].values) == ("numeric", (3,), [1.5, None, 3])
    assert v["v"].summary == {"sum": 4.5, "mean": 2.25, "min": 1.5, "max": 3.0}
    assert (v["f"].type, v["f"].values) == ("factor", ["lo", "hi", "lo"])
    assert (v["n"].type, v["n"].values) == ("integer", 42)
    assert (v["l"].type, v["l"].columns, v["l"].values) == ("list", ("a", "b"),
                                                            {"a": 1, "b": "x"})
    assert v["after"].values is True


# --- compare_variables -----------------------------------------------------------------


def frame(rows: list[list[object]], columns: tuple[str, ...] = ("k", "v"),
          type_: str = "DataFrame") -> VariableSummary:
    return VariableSummary("t", True, type_, (len(rows), len(columns)), columns,
                           values=rows, summary={})


ALL = ["type", "shape", "columns", "rows", "values"]


def test_identical_frames_pass_every_aspect() -> None:
    result = compare_variables(frame([["a", 1.0]]), frame([["a", 1.0]]), ALL)
    assert all(ok for ok, _ in result.values())
    assert set(result) == set(ALL)


def test_numbers_compare_within_tolerance_and_name_the_first_difference() -> None:
    solution = frame([["a", 1.0], ["b", 2.0]])
    close = compare_variables(frame([["a", 1.0000001], ["b", 2.0]]), solution, ["values"])
    assert close["values"][0]
    ok, message = compare_variables(frame([["a", 1.0], ["b", 2.5]]), solution, ["values"])["values"]
    assert not ok
    assert "row 2, column 'v': 2.5 != solution 2.0" in message
    assert "1 of 2" in message
    loose = compare_variables(frame([["a", 1.0], ["b", 2.5]]), solution, ["values"], rtol=0.5)
    assert loose["values"][0]


def test_strings_strip_and_missing_values_match() -> None:
    result = compare_variables(frame([[" a ", None]]), frame([["a", None]]), ["values"])
    assert result["values"][0]
    nan = compare_variables(frame([["a", float("nan")]]), frame([["a", float("nan")]]),
                            ["values"])
    assert nan["values"][0]


def test_shape_rows_and_type_messages_are_specific() -> None:
    student = VariableSummary("t", True, "list", (10, 3), ("a", "b", "c"), values=None)
    solution = VariableSummary("t", True, "DataFrame", (12, 3), ("a", "b", "c"), values=None)
    result = compare_variables(student, solution, ["shape", "rows", "type"])
    assert result["shape"] == (False, "shape (10, 3) != solution (12, 3)")
    assert result["rows"] == (False, "rows 10 != solution 12")
    assert result["type"] == (False, "type list != solution DataFrame")


def test_types_compare_by_family_across_languages() -> None:
    tibble, frame_r = frame([], type_="tbl_df"), frame([], type_="data.frame")
    assert compare_variables(tibble, frame_r, ["type"])["type"][0]
    assert compare_variables(frame([], type_="integer"), frame([], type_="float"), ["type"])[
        "type"][0]
    assert not compare_variables(frame([], type_="character"), frame_r, ["type"])["type"][0]


def test_ignore_order_sorts_rows_and_treats_columns_as_a_set() -> None:
    solution = frame([["a", 1], ["b", 2]])
    shuffled = frame([["b", 2], ["a", 1]])
    assert not compare_variables(shuffled, solution, ["values"])["values"][0]
    assert compare_variables(shuffled, solution, ["values"], ignore_order=True)["values"][0]
    swapped = frame([[1, "a"], [2, "b"]], columns=("v", "k"))
    ordered = compare_variables(swapped, solution, ["columns", "values"])
    assert not ordered["columns"][0]
    assert "different order" in ordered["columns"][1]
    assert ordered["values"][0]  # cells are aligned by column name
    assert compare_variables(swapped, solution, ["columns"], ignore_order=True)["columns"][0]
    missing = compare_variables(frame([["a"]], columns=("k",)), solution, ["columns"])
    assert missing["columns"] == (False, "columns differ: missing ['v']")


def test_big_values_fall_back_to_summary_statistics() -> None:
    def big(total: float) -> VariableSummary:
        return VariableSummary("t", True, "DataFrame", (50_000, 1), ("x",), values=None,
                               summary={"x:sum": total, "x:mean": total / 50_000})

    same = compare_variables(big(1000.0), big(1000.0000001), ["values"])["values"]
    assert same[0]
    assert "summary statistics" in same[1]
    differ = compare_variables(big(1000.0), big(1200.0), ["values"])["values"]
    assert not differ[0]
    assert "x:sum 1000 != solution 1200" in differ[1]


def test_a_missing_or_broken_variable_fails_every_aspect_with_the_reason() -> None:
    solution = frame([["a", 1]])
    absent = compare_variables(VariableSummary("t", False), solution, ["type", "values"])
    assert all(not ok and "not defined in the student's notebook" in m
               for ok, m in absent.values())
    broken = compare_variables(VariableSummary("t", True, error="boom"), solution, ["shape"])
    assert broken["shape"] == (False, "`t` in the student's notebook could not be inspected: boom")
    with pytest.raises(ValueError, match="choose from"):
        compare_variables(solution, solution, ["colour"])


def test_scalars_compare_as_values() -> None:
    def scalar(x: object) -> VariableSummary:
        return VariableSummary("t", True, type(x).__name__, values=x)

    assert compare_variables(scalar(42), scalar(42.0), ["values", "type"]) == {
        "values": (True, "value 42 matches the solution (rtol 1e-06, atol 1e-09)"),
        "type": (True, "type int ~ solution float (both numbers)"),
    }
    assert not compare_variables(scalar("yes"), scalar("no"), ["values"])["values"][0]
