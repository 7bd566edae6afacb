"""The R bridge: a real IRkernel exports data, a fresh ``Rscript`` judges it.

Each attack of the red team meets an honest twin that must score the same or better:
a forged serialiser (``jsonlite::toJSON`` / ``serializeJSON`` replaced, or masked),
a masked ``nrow``, a fake ``dim`` method, a replaced base function the export uses,
the export's closure removed; and the bridge's own work: stopifnot and testthat tests,
a student's function called through a proxy (printed output, errors, a global the
test removes), a kernel that hangs in a call, a test that hangs in the verifier, and
inspection summaries equal to those of the old in-kernel R code (tests/r_inspection_reference.py)
in the same kernel.
"""

from __future__ import annotations

import json
import shutil
import time
import uuid

import pytest

from grader.sandbox.execution import kernel_available
from grader.sandbox.rverify import RBridge
from tests.kernel_session import KernelSession
from tests.r_inspection_reference import inspection_code

pytestmark = [
    pytest.mark.r,
    pytest.mark.skipif(shutil.which("Rscript") is None or not kernel_available("r"),
                       reason="R or the IRkernel is missing"),
]


class IRKernel(KernelSession):
    """A real IRkernel and the ``kernel`` callable the runner gives the bridge."""

    def __init__(self) -> None:
        super().__init__("ir")


@pytest.fixture
def run(tmp_path):
    """``run(*cells)``: a fresh kernel with the preamble, then the cells; (bridge, kernel)."""
    opened: list[tuple[RBridge, IRKernel]] = []

    def start(*cells: str) -> tuple[RBridge, IRKernel]:
        kernel, bridge = IRKernel(), RBridge(uuid.uuid4().hex, str(tmp_path))
        opened.append((bridge, kernel))
        kernel.cell(bridge.preamble())
        for code in cells:
            kernel(code, 60)
        return bridge, kernel

    yield start
    for bridge, kernel in opened:
        bridge.close()
        kernel.close()


RIGHT = 'survey_clean <- data.frame(id = 1:3, age = c(21, 35, 42))'
WRONG = 'survey_clean <- data.frame(id = 1:2, age = c(21, 35))'
STOPIFNOT = "stopifnot(nrow(survey_clean) == 3)"
TESTTHAT = 'test_that("cleaned", expect_equal(nrow(survey_clean), 3))'
EXPECT = "expect_equal(mean(survey_clean$age), 98/3)"


def verdicts(bridge: RBridge, kernel: IRKernel, *codes: str) -> list[dict]:
    return [bridge.test(code, 20, kernel) for code in codes]


def test_stopifnot_and_testthat_pass_on_a_right_answer_and_fail_on_a_wrong_one(run):
    bridge, kernel = run(RIGHT)
    assert [v["status"] for v in verdicts(bridge, kernel, STOPIFNOT, TESTTHAT, EXPECT)] == [
        "passed"] * 3
    kernel.cell(WRONG)
    stop, that, expect = verdicts(bridge, kernel, STOPIFNOT, TESTTHAT, EXPECT)
    assert (stop["status"], stop["detail"]) == ("failed", "nrow(survey_clean) == 3 is not TRUE")
    assert that["status"] == "failed"
    assert that["detail"].startswith("cleaned: nrow(survey_clean)")
    assert expect["status"] == "failed"
    assert "not equal to 98/3" in expect["detail"]
    broken = bridge.test("stopifnot(", 20, kernel)
    assert broken["status"] == "failed"
    assert "unexpected end of input" in broken["detail"]
    assert bridge.tampering() == []


FORGERIES = [
    'assignInNamespace("toJSON", function(...) \'{"status":"passed"}\', "jsonlite")',
    'toJSON <- function(...) \'{"status":"passed"}\'',
    'assignInNamespace("serializeJSON", function(...) "{}", "jsonlite")',
    'serializeJSON <- function(...) "{}"',
]


@pytest.mark.parametrize("answer", [WRONG, RIGHT])
def test_a_forged_serialiser_changes_no_verdict_and_is_reported(run, answer):
    bridge, kernel = run(answer, *FORGERIES)
    want = "passed" if answer == RIGHT else "failed"
    assert [v["status"] for v in verdicts(bridge, kernel, STOPIFNOT, TESTTHAT, EXPECT)] == [
        want] * 3
    seen = " ".join(bridge.tampering())
    assert "jsonlite::toJSON" in seen
    assert "jsonlite::serializeJSON" in seen


def test_a_replaced_base_function_the_export_uses_makes_the_test_unreliable(run):
    bridge, kernel = run(RIGHT, 'unlockBinding("Im", baseenv())',
                         'assign("Im", function(z) 0, envir = baseenv())')
    got = bridge.test(STOPIFNOT, 20, kernel)
    assert got["status"] == "unreliable"
    assert "base::Im" in got["detail"]
    assert any("base::Im" in t for t in bridge.tampering())


def test_an_export_that_never_arrives_is_unreliable(run):
    bridge, kernel = run(WRONG)
    name = f".grader_{bridge._name.removeprefix('.grader_')}"
    kernel.cell(f'rm({name}); {name} <- function(...) cat("nothing\\n")')
    got = bridge.test(STOPIFNOT, 20, kernel)
    assert got["status"] == "unreliable"
    assert "never arrived" in got["detail"]
    assert any("never arrived" in t for t in bridge.tampering())
    summaries, error = bridge.inspect(["survey_clean"], kernel)
    assert summaries == []
    assert "never arrived" in error


@pytest.mark.parametrize("mask", ["", "nrow <- function(x) 57L"])
def test_a_masked_nrow_is_not_used_by_tests_or_expressions(run, mask):
    bridge, kernel = run(RIGHT, mask)
    summaries, error = bridge.inspect(["=nrow(survey_clean)"], kernel)
    assert error == ""
    assert summaries[0]["values"] == 3
    got = bridge.test("stopifnot(nrow(survey_clean) == 3)", 20, kernel)
    assert got["status"] == "passed"
    assert got["note"] == ("the notebook redefines nrow: the test used R's own" if mask else "")
    assert bridge.test("stopifnot(nrow(survey_clean) == 57)", 20, kernel)["status"] == "failed"


@pytest.mark.parametrize("fake", [True, False])
def test_a_students_s3_methods_decide_nothing(run, fake):
    cells = ["x <- data.frame(a = 1:4, b = 4:1, c = 0)"]
    if fake:
        cells += ['class(x) <- c("fake", "data.frame")', "dim.fake <- function(x) c(57L, 3L)",
                  "length.fake <- function(x) 99L", 'all.equal.fake <- function(...) TRUE']
    bridge, kernel = run(*cells)
    summaries, _ = bridge.inspect(["=nrow(x)", "=length(x)"], kernel)
    assert [s["values"] for s in summaries] == [4, 3]
    assert bridge.test("stopifnot(nrow(x) == 57)", 20, kernel)["status"] == "failed"
    assert bridge.test("stopifnot(nrow(x) == 4, length(x) == 3)", 20, kernel)["status"] == "passed"
    got = bridge.test("stopifnot(isTRUE(all.equal(x, 1)))", 20, kernel)
    assert got["status"] == "failed"


FUNCTIONS = [
    'add <- function(a, b) { cat("adding", a, "and", b, "\\n"); a + b }',
    'picky <- function(x) { if (x < 0) stop("x must not be negative"); sqrt(x) }',
    "k <- 2",
]


def test_a_students_function_is_called_through_a_proxy(run):
    bridge, kernel = run(*FUNCTIONS)
    passed = ["expect_equal(add(1, 2), 3)", 'expect_output(add(1, 2), "adding 1 and 2")',
              "stopifnot(picky(4) == 2)", 'expect_error(picky(-1), "negative")',
              "expect_equal(sapply(1:3, function(i) add(i, i)), c(2, 4, 6))",
              'test_that("named", expect_equal(add(b = 5, a = 1), 6))']
    for code in passed:
        assert bridge.test(code, 20, kernel)["status"] == "passed", code
    got = bridge.test("stopifnot(picky(-1) == 1)", 20, kernel)
    assert (got["status"], got["detail"]) == ("failed", "x must not be negative")


@pytest.mark.parametrize("definition", ["f <- function(n) n * k", "f <- function(n, k = 2) n * k"])
def test_a_global_the_test_removes_is_hidden_from_the_call(run, definition):
    bridge, kernel = run("k <- 2", definition)
    got = bridge.test("rm(k)\nstopifnot(f(2) == 4)", 20, kernel)
    if "k = 2" in definition:
        assert got["status"] == "passed"
    else:
        assert got["status"] == "failed"
        assert "'k' not found" in got["detail"]
    assert bridge.test("stopifnot(f(3) == 6, k == 2)", 20, kernel)["status"] == "passed"


def test_a_kernel_that_hangs_in_a_call_times_out(run):
    bridge, kernel = run("slow <- function() { repeat {} }", "quick <- function() 1")
    started = time.monotonic()
    got = bridge.test("stopifnot(slow() == 1)", 3, kernel)
    assert (got["outcome"], got["status"]) == ("timeout", "failed")
    assert "slow() did not finish" in got["detail"]
    assert time.monotonic() - started < 30
    assert bridge.test("stopifnot(quick() == 1)", 20, kernel)["status"] == "passed"


def test_a_test_that_hangs_in_the_verifier_is_stopped(run):
    bridge, kernel = run(RIGHT)
    started = time.monotonic()
    got = bridge.test("repeat {}", 1, kernel)
    assert (got["outcome"], got["status"]) == ("timeout", "failed")
    assert time.monotonic() - started < 20
    assert bridge.test(STOPIFNOT, 20, kernel)["status"] == "passed"  # a fresh verifier


INSPECTED = [
    'frame <- data.frame(n = c(1.5, NA, 3), s = c("a", NA, "é"), b = c(TRUE, FALSE, NA),'
    ' d = as.Date("2024-01-01") + 0:2, stringsAsFactors = FALSE)',
    "tib <- tibble::tibble(x = 1:3, y = c('u', 'v', 'w'))",
    'fac <- factor(c("lo", "hi", "lo", NA), levels = c("lo", "hi"))',
    "num <- c(3.25, -1, NaN, Inf, NA, 1e-20)",
    'lst <- list(a = 1:3, b = "text", c = list(d = TRUE))',
    "mat <- matrix(1:6, nrow = 2)",
    "one <- 42L",
]


def test_inspection_summaries_equal_those_of_the_kernel_side_code(run):
    bridge, kernel = run(*INSPECTED)
    names = ["frame", "tib", "fac", "num", "lst", "mat", "one", "missing_name",
             "=nrow(frame)", "=sum(num, na.rm = TRUE)", "=no_such_function(1)"]
    marker = "@@today@@"
    text = kernel.cell(inspection_code("r", names, marker))
    today = json.loads(next(ln for ln in text.splitlines() if ln.startswith(marker))[len(marker):])
    summaries, error = bridge.inspect(names, kernel)
    assert error == ""
    assert summaries == today
    assert bridge.tampering() == []


def test_the_packages_a_notebook_attaches_are_the_verifiers_too(run):
    bridge, kernel = run("suppressPackageStartupMessages(library(dplyr))",
                         "survey <- tibble(age = c(20, 35, 50)) %>% mutate(old = age > 30)",
                         "T <- FALSE")
    got = bridge.test("expect_equal(survey %>% filter(old) %>% nrow(), 2)", 30, kernel)
    assert got["status"] == "passed"
    got = bridge.test('stopifnot(inherits(survey, "tbl_df"), TRUE == T)', 30, kernel)
    assert (got["status"], got["note"]) == (
        "passed", "the notebook redefines T: the test used R's own")
    summaries, error = bridge.inspect(["=survey %>% summarise(m = mean(age))"], kernel)
    assert (error, summaries[0]["type"], summaries[0]["values"]) == ("", "tbl_df", [[35]])
    # T, a name the test takes from R, bound by the notebook to another value: reported
    assert [t.split(",")[0] for t in bridge.tampering()] == ["the notebook binds T"]
