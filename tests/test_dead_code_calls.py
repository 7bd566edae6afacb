"""A call or an assignment in code that can never run is no work done.

Each attack a student could write beside its honest twin, the same code made live:
``if False:`` / ``if (FALSE) {}`` and their kin, a loop over nothing, a short-circuit,
code after ``return``/``raise``/``stop()`` in the same block. The dead form earns no
``calls``/``assigns`` credit and no ``code`` pattern match; the live twin earns it.
Layer 1 reads them on real notebooks (the structure layer, no mocks); the bundled
assignments' versions, graded for real, are in tests/test_run_never_abandoned.py.
"""

from __future__ import annotations

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.analysis.facts import analyse, live_code
from grader.analysis.template import match_template
from grader.assignment import Assignment
from grader.layers.base import AssignmentContext, GradeOptions, SubmissionContext
from grader.layers.structure import StructureLayer
from grader.notebooks.load import load_notebook
from grader.rubrics.schema import rubric_from_dict

READ = {"python": 'df = pd.read_csv("data/x.csv")', "r": 'df <- read_csv("data/x.csv")'}

# what: (the dead form, its live twin); {read} is the call that must (not) count
PYTHON = {
    "if False": ("if False:\n    {read}\n", "if True:\n    {read}\n"),
    "if 0 / elif": ("if 0:\n    {read}\nelif None:\n    {read}\n", "if 0:\n    pass\nelse:\n"
                                                                   "    {read}\n"),
    "if not True on one line": ("if not True: {read}\n", "if not False: {read}\n"),
    "a constant comparison": ("if 1 > 2:\n    {read}\n", "if 2 > 1:\n    {read}\n"),
    "an empty container": ("if []:\n    {read}\n", "if [0]:\n    {read}\n"),
    "while False": ("while False:\n    {read}\n", "while True:\n    {read}\n    break\n"),
    "a loop over nothing": ("for _ in []:\n    {read}\n", "for _ in [1]:\n    {read}\n"),
    "a conditional expression": ("df = pd.read_csv('x') if False else None\n",
                                 "df = pd.read_csv('x') if True else None\n"),
    "a short-circuit": ("False and pd.read_csv('x')\n", "True and pd.read_csv('x')\n"),
    "after raise": ("raise SystemExit('not yet')\n{read}\n", "{read}\nraise SystemExit\n"),
    "after return": ("def load():\n    return None\n    {read}\n",
                     "def load():\n    {read}\n    return df\n"),
    "after an if whose branches both raise": (
        "if ok:\n    raise ValueError\nelse:\n    raise KeyError\n{read}\n",
        "if ok:\n    raise ValueError\n{read}\n"),
    "after assert False": ("assert False, 'todo'\n{read}\n", "assert True\n{read}\n"),
    "in a cell that does not parse": ("x = (\nif False:\n    {read}\n",
                                      "x = (\nif True:\n    {read}\n"),
}
R = {
    "if (FALSE) block": ("if (FALSE) {{\n  {read}\n}}\n", "if (TRUE) {{\n  {read}\n}}\n"),
    "if (F) one expression": ("if (F) {read}\n", "if (T) {read}\n"),
    "if (0)": ("if (0) {{ {read} }}\n", "if (1) {{ {read} }}\n"),
    "if (!TRUE)": ("if (!TRUE) {{\n  {read}\n}}\n", "if (!FALSE) {{\n  {read}\n}}\n"),
    'if ("false")': ('if ("false") {read}\n', 'if ("true") {read}\n'),
    "the else of if (TRUE)": ("if (TRUE) {{\n  x <- 1\n}} else {{\n  {read}\n}}\n",
                              "if (FALSE) {{\n  x <- 1\n}} else {{\n  {read}\n}}\n"),
    "else if chains": ("if (FALSE) {{\n  a()\n}} else if (FALSE) {{\n  {read}\n}}\n",
                       "if (FALSE) {{\n  a()\n}} else if (TRUE) {{\n  {read}\n}}\n"),
    "while (FALSE)": ("while (FALSE) {{\n  {read}\n}}\n",
                      "while (TRUE) {{\n  {read}\n  break\n}}\n"),
    "after stop()": ('stop("not yet")\n{read}\n', '{read}\nstop("done")\n'),
    "after return() in a function": ("load <- function() {{\n  return(NULL)\n  {read}\n}}\n",
                                     "load <- function() {{\n  {read}\n  return(df)\n}}\n"),
    "after next in a loop": ("for (i in 1:2) {{\n  next\n  {read}\n}}\n",
                             "for (i in 1:2) {{\n  {read}\n  next\n}}\n"),
}
CASES = [("python", k, *v) for k, v in PYTHON.items()] + [("r", k, *v) for k, v in R.items()]


def _calls(code: str, language: str) -> list[str]:
    return [s.name for s in analyse(code, language).calls]


@pytest.mark.parametrize(("language", "what", "dead", "live"), CASES,
                         ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_a_call_that_can_never_run_counts_for_nothing(language: str, what: str, dead: str,
                                                      live: str) -> None:
    read = READ[language]
    attack, twin = dead.format(read=read), live.format(read=read)
    assert not [n for n in _calls(attack, language) if n.endswith("read_csv")], attack
    assert [n for n in _calls(twin, language) if n.endswith("read_csv")], twin
    if read in attack:  # the whole statement is dead: df is never assigned
        assert "df" not in {s.name for s in analyse(attack, language).assigned}, attack
    assert "read_csv" not in live_code(attack, language), attack
    assert "read_csv" in live_code(twin, language), twin


def test_live_code_keeps_lines_and_columns() -> None:
    code = "x = 1\nif False: y = f(2)\nz = 3  # é\n"
    live = live_code(code, "python")
    assert [len(line) for line in live.split("\n")] == [len(line) for line in code.split("\n")]
    assert live.split("\n")[0] == "x = 1"
    assert "f(2)" not in live
    assert live.split("\n")[2] == "z = 3  # é"


def test_names_that_depend_on_the_run_are_left_live() -> None:
    # a branch on a name may run: it counts, whatever the name holds
    for code, language in (("if DEBUG:\n    pd.read_csv('x')\n", "python"),
                           ("if (exists('x')) read_csv('x')\n", "r"),
                           ("if x == 1:\n    raise ValueError\npd.read_csv('x')\n", "python"),
                           ("if (x) stop('a')\nread_csv('x')\n", "r")):
        assert any(n.endswith("read_csv") for n in _calls(code, language)), code


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.sampled_from([
    *"if False:\n ()[]{}#'\"\\raise return", "pd.read_csv(1)", "if (FALSE)", "stop()", "else",
    "while", "0", "\ud800", "\r\n", "\t"]), max_size=60).map("".join),
       st.sampled_from(["python", "r"]))
def test_reading_any_text_never_raises(code: str, language: str) -> None:
    facts = analyse(code, language)
    assert len(live_code(code, language).split("\n")) == len(code.replace(
        "\r\n", "\n").replace("\r", "\n").split("\n"))
    assert all(s.line >= 1 for s in facts.calls)


# --- layer 1 on notebooks: calls, assigns and code checks -------------------------------------

RUBRIC = rubric_from_dict({
    "schema_version": 2, "title": "Loading", "language": "python", "total_points": 3,
    "criteria": [{"id": "load", "title": "Load", "kind": "code", "points": 3, "checks": [
        {"type": "calls", "functions": ["read_csv"], "weight": 0.4},
        {"type": "assigns", "names": ["orders"], "weight": 0.3},
        {"type": "code", "pattern": r"dropna\(", "weight": 0.3}]}]})
TEMPLATE = [new_markdown_cell("## Task 1\nLoad `data/orders.csv` into `orders`."),
            new_code_cell("import pandas as pd\n# YOUR CODE HERE")]


def _nb(cells: list, name: str):
    node = new_notebook(cells=cells, metadata={"kernelspec": {
        "name": "python3", "language": "python", "display_name": "Python 3"}})
    return load_notebook(nbformat.writes(node).encode(), name)


def _layer1(code: str) -> dict[str, float]:
    template = _nb(TEMPLATE, "template.ipynb")
    sub = _nb([TEMPLATE[0], new_code_cell("import pandas as pd\n" + code)], "sub.ipynb")
    actx = AssignmentContext(Assignment("demo", None, RUBRIC, None, None, None),  # type: ignore[arg-type]
                             template, template, None)
    ctx = SubmissionContext(actx, sub, None, match_template(template, sub, ()),
                            GradeOptions(execute=False))
    return {c.check: c.score for c in StructureLayer().run(ctx).checks}


BODY = "orders = pd.read_csv('data/orders.csv').dropna()\n"


@pytest.mark.parametrize(("attack", "twin"), [
    ("if False:\n    " + BODY, "if True:\n    " + BODY),
    ("raise SystemExit\n" + BODY, BODY + "raise SystemExit\n"),
    ("if 0: " + BODY, "if 1: " + BODY),
])
def test_layer_one_gives_dead_code_nothing_and_its_twin_everything(attack: str,
                                                                    twin: str) -> None:
    assert _layer1(attack) == {"calls": 0.0, "assigns": 0.0, "code": 0.0}
    assert _layer1(twin) == {"calls": 1.0, "assigns": 1.0, "code": 1.0}


@pytest.mark.parametrize(("code", "language"), [
    ("if (TRUE) " * 3000 + "read_csv(1)\n", "r"),
    ("if (FALSE) {\n" * 500 + "read_csv(1)\n" + "}\n" * 500, "r"),
    ("x = " + "not " * 3000 + "True\nif x:\n    pd.read_csv(1)\n", "python"),
    ("if True:\n" + "".join(" " * n + "if True:\n" for n in range(1, 150)) + " " * 150
     + "pd.read_csv(1)\n", "python"),
])
def test_code_nested_past_reading_is_read_without_raising(code: str, language: str) -> None:
    facts = analyse(code, language)
    live_code(code, language)
    assert facts.code_lines >= 1
