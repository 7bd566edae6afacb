"""Names the instructor's checks use are never the student's to bind (issue 32, items 3, 7).

A test or a value check names the instructor's tools (``abs``, ``all``, ``pd``, ``near``)
and the student's work. The tools come from a clean namespace read off the solution
(``grader.sandbox.clean_names``) and resolved in the verifier; the student's binding of
one changes no verdict and is reported as tampering. An object of a class of the
notebook's own that stands where data is expected answers nothing, and its type never
passes for a library's; a test that builds and exercises a student's class still works.

Each attack is written as a student would, from outside, beside its honest twin (the
same notebook without it): the verdicts are the same, and only the attack is flagged.
Real kernels in the real sandbox (``execute_notebook``), the value checks' run-wide
namespace through the bridges themselves (the runner hands it to them), and the
hostile corpus's name forgeries graded for real.
"""

from __future__ import annotations

import json
import math
import uuid
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from grader.sandbox import datacodec, pyremote
from grader.sandbox.clean_names import CleanNames, clean_names
from grader.sandbox.execution import (
    ExecLimits,
    ExecutionResult,
    InstructorTest,
    execute_notebook,
    kernel_available,
    sandbox_available,
)
from grader.sandbox.pyverify import PythonBridge
from grader.sandbox.rverify import RBridge
from tests.hostile import forging_names
from tests.kernel_session import KernelSession

needs_kernel = pytest.mark.skipif(not sandbox_available() or not kernel_available("python"),
                                  reason="bubblewrap or the Python kernel is missing")
needs_r = pytest.mark.skipif(not sandbox_available() or not kernel_available("r"),
                             reason="bubblewrap or the R kernel is missing")


def notebook(*cells: str, language: str = "python") -> nbformat.NotebookNode:
    nb = new_notebook(cells=[new_code_cell(c) for c in cells])
    if language == "r":
        nb.metadata["kernelspec"] = {"name": "ir", "language": "R", "display_name": "R"}
    return nb


def run(tmp_path: Path, cells: list[str], tests: dict[str, str], clean: CleanNames,
        language: str = "python", inspect: list[str] | None = None) -> ExecutionResult:
    tmp_path.mkdir(parents=True, exist_ok=True)
    return execute_notebook(
        notebook(*cells, language=language), language, [], inspect or [],
        ExecLimits(cell_timeout_s=60, total_timeout_s=180), workdir=tmp_path,
        tests=[InstructorTest(k, code, 30, clean=clean) for k, code in tests.items()])


def statuses(res: ExecutionResult) -> dict[str, str]:
    return {k: r.status for k, r in res.tests.items()}


def tampered(res: ExecutionResult) -> str:
    return " | ".join(e.text for e in res.check_tampering)


# -- the clean namespace, read off a solution ------------------------------------------------
def test_a_python_solutions_imports_are_clean_and_what_it_binds_is_the_students():
    solution = notebook("%matplotlib inline\nimport pandas as pd\nimport numpy as np\n"
                        "import os.path\nfrom math import sqrt, pi as PI\nfrom statistics import *",
                        "def max(values):\n    return sorted(values)[-1]\n"
                        "np = 3\ntry:\n    import scipy.stats as st\nexcept ImportError:\n    pass",
                        "def helper():\n    import json\n    global counted\n    counted = 1",
                        "%%bash\necho not python")
    names = clean_names("python", solution)
    assert dict((n, (m, a)) for n, m, a in names.imports) == {
        "pd": ("pandas", ""), "os": ("os", ""), "sqrt": ("math", "sqrt"), "PI": ("math", "pi"),
        "st": ("scipy.stats", "")}
    assert names.star == ("statistics",)
    assert {"max", "np", "helper", "counted"} <= names.own
    assert "json" not in names.own  # a function's own import binds nothing in the module
    assert CleanNames.from_json(json.loads(json.dumps(names.to_json()))) == names


def test_an_r_solutions_packages_are_clean_in_order_and_its_top_level_names_its_own():
    solution = notebook("suppressPackageStartupMessages(library(dplyr))\nlibrary('tidyr')\n"
                        "# library(notme)\nx <- \"library(notme) # in a string\"\n"
                        "pacman::p_load(stringr, lubridate, install = FALSE)",
                        "mode <- function(v) {\n  counts <- table(v)\n"
                        "  names(counts)[which.max(counts)]\n}\nrequire(readr)\n"
                        "survey_clean = read_csv('data/s.csv')\n42 -> answer", language="r")
    names = clean_names("r", solution)
    assert names.packages == ("dplyr", "tidyr", "stringr", "lubridate", "readr")
    assert names.own == {"x", "mode", "survey_clean", "answer"}  # not `counts`: a local


def test_which_names_are_clean_and_which_bindings_are_the_same():
    space = pyremote.CleanSpace({"imports": [["pd", "pandas", ""], ["sqrt", "math", "sqrt"],
                                             ["max", "numpy", "max"]], "own": ["max", "sum"]})
    assert space.where("pd") == ("pandas", "")
    assert space.where("abs") == ("builtins", "abs")
    assert space.where("sum") is None  # the solution binds it: the student's
    assert space.where("max") is None
    assert space.where("survey") is None
    assert pyremote.CleanSpace(None).where("all") == ("builtins", "all")

    def decode(tree):
        return datacodec.Codec().dec(tree)

    import pandas
    assert space.same(pandas, {"$": "module", "name": "pandas", "ref": 1}, decode)
    assert not space.same(pandas, {"$": "obj", "type": "_Pandas", "module": "__main__",
                                   "own": True, "ref": 1}, decode)
    assert space.same(math.sqrt, {"$": "fn", "name": "sqrt", "qualname": "sqrt",
                                  "module": "math", "ref": 2}, decode)
    assert not space.same(math.sqrt, {"$": "fn", "name": "sqrt", "qualname": "sqrt",
                                      "module": "__main__", "ref": 2}, decode)
    assert space.same(math.pi, math.pi, decode)
    assert not space.same(math.pi, 3, decode)
    assert space.looks_like(("helpers", "load"), {"$": "fn", "name": "load",
                                                  "module": "helpers", "ref": 3})
    assert not space.looks_like(("helpers", "load"), {"$": "obj", "type": "load", "ref": 3})


def test_a_class_is_the_notebooks_own_unless_a_module_of_a_library_holds_it():
    assert datacodec.own_class(range) is False  # built into Python: never the student's
    mine = type("Series", (), {"__module__": "__main__"})
    assert datacodec.own_class(mine) is True
    claimed = type("Series", (), {"__module__": "pandas.core.series"})  # a borrowed name
    assert datacodec.own_class(claimed) is True


# -- Python: real kernels in the sandbox ------------------------------------------------------
SOLUTION_PY = notebook("import pandas as pd\nimport numpy as np\nfrom math import sqrt",
                       "sales = pd.Series([3.0, 4.0], index=['Harbor', 'Market'])\n"
                       "total = float(sales.sum())",
                       "def max(values):\n    return 'the largest'")
HONEST_PY = ("import pandas as pd\nimport numpy as np\nfrom math import sqrt\n"
             "sales = pd.Series([3.0, 5.0], index=['Harbor', 'Market'])\ntotal = 7.5")
FORGER_PY = ("class _Always:\n    def __init__(self, answer):\n        self.answer = answer\n"
             "    def __call__(self, *args, **kwargs):\n        return self.answer\n"
             "abs = _Always(0)\nall = _Always(True)\nsqrt = _Always(2.0)\n"
             "class _Testing:\n    def assert_series_equal(self, *args, **kwargs):\n"
             "        return None\n"
             "class _Pandas:\n    testing = _Testing()\n"
             "    Series = staticmethod(lambda *args, **kwargs: None)\npd = _Pandas()")
TESTS_PY = {
    "abs": "assert abs(total - 7.0) < 0.01",
    "all": "assert all([total == 7.0, len(sales) == 2])",
    "sqrt": "assert sqrt(total) == sqrt(7.0)",
    "pd": "pd.testing.assert_series_equal(sales, pd.Series([3.0, 4.0], index=['Harbor', "
          "'Market']))",
    "imports itself": "import numpy as np\nassert np.isclose(total, 7.0)",
}


@pytest.mark.slow
@needs_kernel
def test_python_tests_take_built_ins_and_imports_from_the_grader_never_the_notebook(tmp_path):
    clean = clean_names("python", SOLUTION_PY)
    twin = run(tmp_path / "twin", [HONEST_PY], TESTS_PY, clean)
    attack = run(tmp_path / "attack", [HONEST_PY, FORGER_PY + "\nnp = _Always(True)"],
                 TESTS_PY, clean)
    assert twin.error == attack.error == ""
    assert statuses(twin) == {k: "failed" for k in TESTS_PY}
    assert statuses(attack) == statuses(twin)  # the forged tools changed no verdict
    assert twin.check_tampering == []
    assert "the notebook binds abs, all, pd, sqrt, which the instructor's checks take" in \
        tampered(attack)  # np: the test imports its own, which no binding shadows
    assert attack.tests["abs"].note == "the notebook defines abs: the test used Python's own"
    assert "solution's imports" in attack.tests["pd"].note
    right = run(tmp_path / "right", [HONEST_PY.replace("5.0]", "4.0]").replace("7.5", "7.0")],
                TESTS_PY, clean)
    assert statuses(right) == {k: "passed" for k in TESTS_PY}  # its own imports: no flag
    assert right.check_tampering == []


@pytest.mark.slow
@needs_kernel
def test_a_name_the_solution_binds_itself_is_the_students_even_named_like_a_built_in(
        tmp_path):
    cells = ["def max(values):\n    return 'the largest'\nsum = 3"]
    tests = {"deliverable": "assert max([1, 2]) == 'the largest', 'not the sum of all'"}
    own = run(tmp_path / "own", cells, tests, clean_names("python", SOLUTION_PY))
    assert statuses(own) == {"deliverable": "passed"}
    assert own.check_tampering == []  # `sum`: only a word of the test's message
    tool = run(tmp_path / "tool", cells, {"builtin": "assert max([1, 2]) == 2"},
               clean_names("python", notebook("import pandas as pd")))
    assert statuses(tool) == {"builtin": "passed"}  # Python's max, and the binding reported
    assert "the notebook binds max" in tampered(tool)


STACK = ("class Stack:\n    def __init__(self):\n        self.items = []\n"
         "    def push(self, item):\n        self.items.append(item)\n"
         "    def __len__(self):\n        return len(self.items)\n"
         "    def __contains__(self, item):\n        return item in self.items\n"
         "stack = Stack()\nstack.push(1)\n")


@pytest.mark.slow
@needs_kernel
def test_a_test_exercises_a_class_it_builds_but_a_named_object_of_the_notebooks_answers_nothing(
        tmp_path):
    res = run(tmp_path, [STACK], {
        "builds": "s = Stack()\ns.push(4)\ns.push(5)\nassert len(s) == 2 and 4 in s\n"
                  "assert s.items == [4, 5] and 6 not in s",
        "named": "assert len(stack) == 1",
        "named member": "assert 1 in stack",
    }, clean_names("python", notebook("import pandas as pd")))
    assert statuses(res) == {"builds": "passed", "named": "failed", "named member": "failed"}
    assert "stack is an object of the notebook's own class (Stack), not data" in \
        res.tests["named"].detail
    assert res.check_tampering == []


FAKES = ("import pandas as pd\n"
         "class Series:\n    def __len__(self):\n        return 154\n"
         "    def __contains__(self, item):\n        return True\n"
         "    def __eq__(self, other):\n        return True\n"
         "    @property\n    def index(self):\n        return self\n"
         "fake = Series()\nreal = pd.Series([1.0, 2.0], index=['Harbor', 'Market'])\n"
         "steps = range(5)\ngrouped = pd.DataFrame({'k': [1, 1, 2]}).groupby('k')\n")
VALUES = ["fake", "=len(fake)", "='Harbor' in fake.index", "=fake == 1", "=str(fake)", "real",
          "=len(real)", "='Harbor' in real.index", "=len(steps)", "=len(grouped)"]


def summaries(res: ExecutionResult) -> dict[str, tuple]:
    return {n: (v.exists, v.type, v.values, v.error) for n, v in res.variables.items()}


@pytest.mark.slow
@needs_kernel
def test_value_checks_never_ask_an_object_of_the_notebooks_class_and_name_its_type_as_such(
        tmp_path):
    got = summaries(run(tmp_path / "fake", [FAKES], {}, clean_names("python", SOLUTION_PY),
                        inspect=VALUES))
    assert got["fake"][:3] == (True, "Series (a class of the notebook's)", None)
    for expr, what in (("=len(fake)", "its length"), ("='Harbor' in fake.index", "attribute"),
                       ("=str(fake)", None)):
        exists, _, value, error = got[expr]
        if what is None:  # str() of it is the grader's words, never the object's
            assert value == "<fake: an object of the notebook's own class Series>"
        else:
            assert not exists
            assert "own class (Series), not data" in error
            assert what in error
    assert got["=fake == 1"][2] is False  # an always-equal object equals nothing
    assert got["real"][1] == "Series"
    assert [got[k][2] for k in ("=len(real)", "='Harbor' in real.index", "=len(steps)",
                                "=len(grouped)")] == [2, True, 5, 2]  # data and libraries
    masked = run(tmp_path / "masked", [FAKES, "len = lambda x: 154"], {},
                 clean_names("python", SOLUTION_PY), inspect=["=len(real)", "len"])
    assert masked.variables["=len(real)"].values == 2  # Python's len, not the notebook's
    assert masked.variables["len"].type == "function"  # a variable the rubric names: theirs
    assert "the notebook binds len" in tampered(masked)


# -- the run-wide clean namespace of value checks, handed to the bridges ---------------------
# (a real kernel without the sandbox: tests.kernel_session)
@pytest.fixture
def kernels():
    opened: list[KernelSession] = []

    def start(name: str, preamble: str, *cells: str) -> KernelSession:
        kernel = KernelSession(name)
        opened.append(kernel)
        for code in (preamble, *cells):
            got = kernel(code, 60)
            assert (got["outcome"], got["error"]) == ("ok", ""), got
        return kernel

    yield start
    for kernel in opened:
        kernel.close()


@pytest.mark.slow
@pytest.mark.skipif(not kernel_available("python"), reason="the Python kernel is missing")
def test_the_python_bridge_takes_the_runs_clean_namespace_for_value_checks(kernels):
    clean = clean_names("python", SOLUTION_PY).to_json()
    bridge = PythonBridge(uuid.uuid4().hex[:16], "", clean=clean)
    kernel = kernels("python3", bridge.preamble(), "import numpy\nvalues = [1.0, 2.0, 9.0]",
                     "class _Fake:\n    def mean(self, values):\n        return 3.0\n"
                     "np = _Fake()")
    got, error = bridge.inspect(["=np.mean(values)", "=abs(-2)"], kernel)
    assert error == ""
    assert [s["values"] for s in got] == [4.0, 2]  # numpy's mean, not the fake's 3.0
    got, _ = bridge.inspect(["=np.median(values)"], kernel)
    assert got[0]["values"] == 2.0  # the fake has no median: numpy's own answered
    assert any(t.startswith("the notebook binds np,") for t in bridge.tampering())


@pytest.mark.slow
@pytest.mark.r
@pytest.mark.skipif(not kernel_available("r"), reason="the R kernel is missing")
def test_the_r_bridge_takes_the_runs_clean_namespace_for_value_checks(kernels):
    clean = CleanNames("r", packages=("dplyr",), own=frozenset({"mean_wait"})).to_json()
    bridge = RBridge(uuid.uuid4().hex, "/nonexistent", clean=clean)
    try:
        kernel = kernels("ir", bridge.preamble(),
                         "suppressPackageStartupMessages(library(dplyr))\nmean_wait <- 0",
                         "near <- function(...) TRUE\ndetach('package:dplyr')",
                         "box <- structure(new.env(), class = c('tbl_df', 'data.frame'))")
        got, error = bridge.inspect(["=near(mean_wait, 7.71, tol = 0.01)", "box"], kernel)
        assert error == ""
        assert got[0]["values"] is False  # dplyr's near, attached in the verifier
        assert got[1]["type"] == "tbl_df (an object, not data)"
        assert any(t.startswith("the notebook binds near,") for t in bridge.tampering())
        verdict = bridge.test("stopifnot(near(mean_wait, 0))", 30, kernel)
        assert (verdict["status"], verdict["note"]) == (
            "passed", "the notebook redefines near: the test used R's own")
    finally:
        bridge.close()


# -- R: real kernels in the sandbox -------------------------------------------------------
SOLUTION_R = notebook("suppressPackageStartupMessages(library(dplyr))",
                      "waits <- data.frame(wait = c(7, 8.42))\nmean_wait <- mean(waits$wait)",
                      "mode <- function(v) as.numeric(names(which.max(table(v))))",
                      language="r")
HONEST_R = ["suppressPackageStartupMessages(library(dplyr))",
            "waits <- data.frame(wait = c(1, 2))\nmean_wait <- mean(waits$wait)",
            "mode <- function(v) as.numeric(names(which.max(table(v))))"]
TESTS_R = {"near": "stopifnot(near(mean_wait, 7.71, tol = 0.01))",
           "all": "stopifnot(all(near(waits$wait, c(7, 8.42))))",
           "mode": "stopifnot(mode(c(2, 2, 5)) == 2)",
           "letters": "stopifnot(letters[1] == 'a', pi > 3.14)"}


@pytest.mark.slow
@pytest.mark.r
@needs_r
def test_r_tests_take_the_solutions_packages_and_base_never_the_notebooks_bindings(tmp_path):
    clean = clean_names("r", SOLUTION_R)
    twin = run(tmp_path / "twin", HONEST_R, TESTS_R, clean, language="r")
    attack = run(tmp_path / "attack", [*HONEST_R, "near <- function(...) TRUE\n"
                                       "all <- function(...) TRUE\nletters <- 'z'\npi <- 0\n"
                                       "detach('package:dplyr')"], TESTS_R, clean, language="r")
    assert twin.error == attack.error == ""
    assert statuses(twin) == {"near": "failed", "all": "failed", "mode": "passed",
                              "letters": "passed"}  # mode: the solution's own, theirs
    assert statuses(attack) == statuses(twin)
    assert twin.check_tampering == []
    assert "the notebook binds all, letters, near, pi, which the instructor's checks take " \
           "from R" in tampered(attack)


# -- the hostile corpus's name forgeries, graded for real ------------------------------------
def graded_pairs(language: str) -> list[tuple[str, str, float, float, list[str]]]:
    variants = forging_names.variants(language)
    assignment = load_assignment(forging_names.FOLDERS[language])
    grader = Grader(assignment, GradeOptions(execute=True, cell_timeout_s=60,
                                             total_timeout_s=300))
    items = [GradeInput(f"{kind}{i}.ipynb", json.dumps(nb).encode(), f"{kind}{i}", f"{kind}{i}")
             for i, v in enumerate(variants) for kind, nb in (("attack", v.attack),
                                                               ("twin", v.twin))]
    items.append(GradeInput("solution.ipynb", assignment.solution.read_bytes(), "key", "key"))
    reports = {r.file: r for r in grader.grade_many(items, workers=2)}
    assert reports["solution.ipynb"].score == reports["solution.ipynb"].max_score
    out = []
    for i, v in enumerate(variants):
        attack, twin = reports[f"attack{i}.ipynb"], reports[f"twin{i}.ipynb"]
        assert attack.status == twin.status == "graded", (v.what, attack.error, twin.error)
        out.append((v.what, v.flag, attack.score, twin.score, [f.code for f in attack.flags]))
    return out


@pytest.mark.slow
@needs_kernel
def test_python_name_forgeries_never_beat_their_twins_and_are_flagged():
    pairs = graded_pairs("python")
    assert len(pairs) >= 6
    for what, flag, attack, twin, flags in pairs:
        assert attack <= twin, (what, attack, twin)
        assert not flag or flag in flags, (what, flags)


@pytest.mark.slow
@pytest.mark.r
@needs_r
def test_r_name_forgeries_never_beat_their_twins_and_are_flagged():
    pairs = graded_pairs("r")
    assert len(pairs) >= 3
    for what, flag, attack, twin, flags in pairs:
        assert attack <= twin, (what, attack, twin)
        assert not flag or flag in flags, (what, flags)
