"""otter-grader itself beside our importer and grader, submission by submission.

A small assignment written as an otter assign master notebook (otter's v1 format: a
function question with visible, output-comparing and hidden tests and its points split
among them, a value question, a question whose variable a later cell reassigns, a
question whose tests carry their own points in a test config, and a manually graded
written question, last) is released by the real ``otter assign`` (7.0.0, from
requirements-tools.txt, in ``.venv-tools``, which scripts/test.sh builds: never imported
here, run as a program). Submissions made by mutating otter's released student notebook
(named as released: otter's init cell reads the notebook by that name, and a notebook
named otherwise has every check moved to its end) are graded by ``otter run`` with the
autograder zip (otter's own grading, without docker; per question its ``results.json``)
and by our side: ``python -m grader import otter`` and our ``Grader``. Per autograded
question the points must be equal, except where we differ on purpose (``ON_PURPOSE``,
each asserted as documented) or because of a defect of ours (``DEFECTS``,
``xfail(strict=True)``, each case alone, so that its fix shows). Agreement:
``test_agreement_figure``.

Reproduce: ``.venv/bin/python -m pytest tests/test_otter_differential.py -v -s``
(after ``bash scripts/test.sh`` built ``.venv-tools`` once).
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output, new_raw_cell

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from grader.sandbox.execution import kernel_available, sandbox_available
from tests.import_cli import assert_imported_assignment_sound

REPO = Path(__file__).resolve().parents[1]
TOOLS = REPO / ".venv-tools" / "bin"
PY = {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sandbox_available() or not kernel_available("python"),
                       reason="bubblewrap or the Python kernel is missing"),
    pytest.mark.skipif(not (TOOLS / "otter").exists(),
                       reason="otter's venv .venv-tools is missing: bash scripts/test.sh "
                              "builds it from requirements-tools.txt"),
]

SQUARES = '''def squares(n):
    """The squares of 1..n: the i-th element is i ** 2."""
    # BEGIN SOLUTION
    return [i ** 2 for i in range(1, n + 1)]
    # END SOLUTION'''
IS_SQUARE = '''def is_square(n):
    """Whether n is the square of a whole number."""
    # BEGIN SOLUTION
    root = int(n ** 0.5)
    return root * root == n
    # END SOLUTION'''
WHY = "So that a fix to `squares` fixes `total` too: the two can never disagree."
QUESTIONS = ("q1", "q2", "q3", "q4")  # autograded; q5 is graded by hand in otter
MANUAL = "q5"


def shows(code: str, output: str):
    """A test cell whose master shows ``output``: otter's doctest compares it."""
    cell = new_code_cell(code)
    cell.outputs = [new_output("execute_result", {"text/plain": output}, execution_count=1)]
    return cell


def configured(code: str, **config) -> str:
    lines = "".join(f"{key}: {value}\n" for key, value in config.items())
    return f'""" # BEGIN TEST CONFIG\n{lines}""" # END TEST CONFIG\n{code}'


def question(name: str, prompt: str, answer, tests: list, **config) -> list:
    head = "".join(f"\n{key}: {value}" for key, value in config.items())
    return [new_raw_cell(f"# BEGIN QUESTION\nname: {name}{head}"), new_markdown_cell(prompt),
            new_raw_cell("# BEGIN SOLUTION"), answer, new_raw_cell("# END SOLUTION"),
            *([new_raw_cell("# BEGIN TESTS"), *tests, new_raw_cell("# END TESTS")]
              if tests else []),
            new_raw_cell("# END QUESTION")]


def master() -> nbformat.NotebookNode:
    """The instructor's notebook, in otter assign's format (its export cell is on)."""
    return new_notebook(metadata=PY, cells=[
        new_raw_cell("# ASSIGNMENT CONFIG\ncheck_all_cell: true"),
        new_markdown_cell("# Squares"),
        *question("q1", "**Question 1.** Write `squares(n)`, the list of $i^2$ for "
                  "$1 \\leq i \\leq n$.", new_code_cell(SQUARES),
                  [shows("squares(3)", "[1, 4, 9]"), new_code_cell("assert squares(1) == [1]"),
                   new_code_cell("# HIDDEN\nassert squares(11) == [i * i for i in range(1, 12)]")],
                  points="[1, 1, 2]"),
        *question("q2", "**Question 2.** Store $10^2$ in `hundred`.",
                  new_code_cell("hundred = 10 ** 2 # SOLUTION"), [shows("hundred", "100")],
                  points=1),
        *question("q3", "**Question 3.** Store the sum of the first four squares in `total`.",
                  new_code_cell("total = sum(squares(4)) # SOLUTION"),
                  [new_code_cell("assert total == 30")], points=1),
        new_markdown_cell("The name `total` is reused below: Question 3 is checked before."),
        new_code_cell("total = 0"),
        *question("q4", "**Question 4.** Write `is_square(n)`.", new_code_cell(IS_SQUARE),
                  [shows(configured("is_square(16)", points=1,
                                    failure_message="16 is 4 squared"), "True"),
                   shows(configured("[n for n in range(30) if is_square(n)]", points=2,
                                    hidden="true"), "[0, 1, 4, 9, 16, 25]")]),
        *question("q5", "**Question 5.** Why does `total` call `squares`?",
                  new_markdown_cell(WHY), [], manual="true", points=2),
    ])


def solved(code: str) -> str:
    return "\n".join(line.replace(" # SOLUTION", "") for line in code.splitlines()
                     if not line.strip().startswith(("# BEGIN SOLUTION", "# END SOLUTION")))


ANSWERS = {"q1": solved(SQUARES), "q2": "hundred = 10 ** 2", "q3": "total = sum(squares(4))",
           "q4": solved(IS_SQUARE), "q5": WHY}
OFF_BY_ONE = ANSWERS["q1"].replace("range(1, n + 1)", "range(n)")
# right for n <= 10: the visible tests pass, the hidden squares(11) does not
CAPPED = ANSWERS["q1"].replace("range(1, n + 1)", "range(1, min(n, 10) + 1)")
NOISY = ANSWERS["q1"].replace("    return", '    print("squares up to", n)\n    return')
# otter runs its doctests in the student's kernel: a notebook can make them all pass
PATCH = ("import doctest\ndoctest.DocTestRunner.summarize = "
         "lambda self, verbose=None: doctest.TestResults(0, 0)")
ANYTHING = ("class Anything:\n    def __eq__(self, other):\n        return True\n\n\n"
            "total = Anything()")
SILENCED = ("try:\n    total = sum(squares(4)) + bonus\nexcept Exception:\n    pass")
CHECK = 'grader.check("{}")'


@dataclass(frozen=True)
class Sub:
    answers: dict[str, str | None] = field(default_factory=dict)  # None: otter's stub left
    edits: dict[str, str | None] = field(default_factory=dict)  # released cell -> new (None: gone)
    first: tuple[str, ...] = ()  # cells added after otter's init cell
    last: tuple[str, ...] = ()  # cells added at the end


SUBMISSIONS = {
    "correct": Sub(),
    "wrong_value": Sub({"q2": "hundred = 10 * 2"}),
    "wrong_function": Sub({"q1": OFF_BY_ONE, "q4": "def is_square(n):\n    return n % 2 == 0"}),
    "stub": Sub(dict.fromkeys(ANSWERS)),
    "wrong_hidden": Sub({"q1": CAPPED, "q4": ANSWERS["q4"].replace("return", "return n > 0 and")}),
    "reassigned": Sub(last=("hundred = 0\n\n\ndef squares(n):\n    return []",)),
    # an error hidden in try/except, and a check cell wrapped so that no failure shows
    "silenced": Sub({"q3": SILENCED}, {CHECK.format("q3"): "try:\n    grader.check(\"q3\")\n"
                                                          "except Exception:\n    pass"}),
    "patched": Sub({"q1": OFF_BY_ONE, "q2": "hundred = 10 * 2"}, first=(PATCH,)),
    "always_equal": Sub({"q3": ANYTHING}),
    "check_edited": Sub(edits={CHECK.format("q2"): None,
                               CHECK.format("q3"): "# " + CHECK.format("q3")}),
    "rechecked": Sub(last=("hundred = 0\n" + CHECK.format("q2"),)),
    "debug_print": Sub({"q1": NOISY}),
}
# where we differ from otter on purpose: (submission, question) -> (theirs, ours, why)
ON_PURPOSE = {
    ("patched", "q1"): (4.0, 0.0, "otter runs its doctests in the student's kernel, whose "
                        "doctest the notebook patched to report no failure; our tests are "
                        "judged in a verifier the notebook never touched (and flagged: "
                        "check_tampering)"),
    ("patched", "q2"): (1.0, 0.0, "the same patched doctest: hundred is 20"),
    ("patched", "q3"): (1.0, 0.0, "the same patched doctest: total is 14"),
    ("always_equal", "q3"): (1.0, 0.0, "otter's assert compares the student's object, whose "
                             "__eq__ answers True; our verifier gets its value as data and "
                             "does not trust it (check_tampering)"),
    ("check_edited", "q3"): (0.0, 1.0, "the student commented out grader.check(\"q3\"): otter "
                             "then checks q3 after the notebook, where total is 0; we check "
                             "it at the released check cell, which still holds the call's "
                             "text (the first cell that does: grader.sandbox.judged_tests)"),
    ("rechecked", "q2"): (0.0, 1.0, "the student called grader.check(\"q2\") again at the end "
                          "after hundred = 0: otter keeps the last check's result, we the "
                          "released check cell's (the first cell holding the call)"),
    ("debug_print", "q1"): (0.0, 3.0, "otter makes every test cell a doctest, so an assert test "
                            "fails on a print it did not expect; our import runs an assert "
                            "test as assertions and compares output only where the master "
                            "showed some (import_otter_assign), so only the output test fails"),
}
# differences that are defects of ours: (submission, question) -> reason. None left; the
# manual q5 had one: otter's check-all and export instructions after it were read as the
# student's answer (the stub scored 2 of 2) until import_otter_assign put them in our template
DEFECTS: dict[tuple[str, str], str] = {}


def submission(released: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """Otter's released notebook as this student hands it in."""
    sub = SUBMISSIONS[name]
    nb = copy.deepcopy(released)
    asked = iter(ANSWERS)
    cells = []
    for cell in nb.cells:
        if "otter_answer_cell" in cell.metadata.get("tags", []):
            q = next(asked)
            answer = sub.answers.get(q, ANSWERS[q])
            cell.source = cell.source if answer is None else answer
        elif cell.source in sub.edits:
            if sub.edits[cell.source] is None:
                continue
            cell.source = sub.edits[cell.source]
        cells.append(cell)
    nb.cells = cells[:1] + [new_code_cell(c) for c in sub.first] + cells[1:] + [
        new_code_cell(c) for c in sub.last]
    return nb


@dataclass(frozen=True)
class Both:
    theirs: dict[tuple[str, str], tuple[float, float]]  # (student, question) -> score, max
    ours: dict[tuple[str, str], float]  # (student, criterion id) -> our points
    points: dict[str, float]  # criterion id -> its points
    flags: dict[str, set[str]]  # student -> our flags' codes
    released: nbformat.NotebookNode
    template: nbformat.NotebookNode
    folder: Path  # our imported assignment


def otter(cwd: Path, *args: str) -> None:
    env = {**os.environ, "PATH": f"{TOOLS}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run([str(TOOLS / "otter"), *args], cwd=cwd, env=env, timeout=600,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Both:
    root = tmp_path_factory.mktemp("otter-differential")
    nbformat.write(master(), root / "squares.ipynb")
    otter(root, "assign", "squares.ipynb", "dist")
    released = nbformat.read(root / "dist" / "student" / "squares.ipynb", as_version=4)
    [autograder] = (root / "dist" / "autograder").glob("*.zip")
    theirs, ours_in = {}, []
    (root / "ours").mkdir()
    for name in SUBMISSIONS:
        nb = submission(released, name)
        (root / "submitted" / name).mkdir(parents=True)
        nbformat.write(nb, root / "submitted" / name / "squares.ipynb")
        nbformat.write(nb, root / "ours" / f"{name}.ipynb")
        ours_in.append(GradeInput.from_path(root / "ours" / f"{name}.ipynb"))
        out = root / "results" / name
        out.mkdir(parents=True)
        otter(root, "run", "-a", str(autograder), "-o", str(out), "--no-logo",
              str(root / "submitted" / name / "squares.ipynb"))
        results = json.loads((out / "results.json").read_text(encoding="utf-8"))
        theirs |= {(name, t["name"]): (float(t["score"]), float(t["max_score"]))
                   for t in results["tests"] if "score" in t}

    done = subprocess.run([sys.executable, "-m", "grader", "import", "otter",
                           str(root / "squares.ipynb"), "--out", str(root / "sq")],
                          capture_output=True, text=True, timeout=300, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    assignment = load_assignment(root / "sq")
    reports = Grader(assignment, GradeOptions(execute=True, use_llm=False)).grade_many(
        ours_in, workers=1)
    ours = {(Path(r.file).stem, c.id): c.points for r in reports for c in r.criteria}
    flags = {Path(r.file).stem: {f.code for f in r.flags} for r in reports}
    return Both(theirs, ours, {c.id: c.points for c in assignment.rubric.criteria}, flags,
                released, nbformat.read(assignment.template, as_version=4), root / "sq")


def test_our_template_is_otters_release(both: Both):
    # the same text and answer cells; otter's code cells (init, checks, check-all, export)
    # are comments or absent in ours, its PDF-filter comments absent
    def text(nb) -> list[str]:
        out = [c.source.replace("<!-- BEGIN QUESTION -->\n\n", "").replace(
            "<!-- END QUESTION -->\n\n", "") for c in nb.cells if c.cell_type == "markdown"]
        return [s for s in out if s] + [c.source for c in nb.cells if c.cell_type == "code"
                                         and "grader" not in c.source]
    assert text(both.template) == text(both.released)


def cases() -> list:
    out = []
    for name in SUBMISSIONS:
        for q in QUESTIONS:
            marks = ([pytest.mark.xfail(strict=True, reason=DEFECTS[(name, q)])]
                     if (name, q) in DEFECTS else [])
            out.append(pytest.param(name, q, marks=marks, id=f"{name}-{q}"))
    return out


@pytest.mark.parametrize(("name", "q"), cases())
def test_points_per_question_are_otters(both: Both, name: str, q: str):
    theirs, most = both.theirs[(name, q)]
    assert most == pytest.approx(both.points[q])  # the same points for the question
    ours = both.ours[(name, q)]
    if (name, q) in ON_PURPOSE:
        want_theirs, want_ours, _why = ON_PURPOSE[(name, q)]
        assert (theirs, ours) == pytest.approx((want_theirs, want_ours))
    else:
        assert ours == pytest.approx(theirs)


def test_the_manual_question_is_otters_to_grade_by_hand_and_a_stub_scores_0(both: Both):
    # otter gives the written answer no score; ours reads it: the stub left (with otter's
    # check-all and export instructions after it) is no answer, the written one is
    assert not any(q == MANUAL for _, q in both.theirs)
    assert both.ours[("stub", MANUAL)] == 0.0
    assert both.ours[("correct", MANUAL)] > 0.0


def test_cheats_are_flagged_where_they_are_seen(both: Both):
    assert "check_tampering" in both.flags["always_equal"]
    assert "check_tampering" in both.flags["patched"]  # its doctest patch: otter passes it
    assert not both.flags["correct"] & {"check_tampering", "tests_modified",
                                        "template_modified"}


def test_agreement_figure(both: Both, pytestconfig: pytest.Config,
                          capsys: pytest.CaptureFixture[str], record_property) -> None:
    """Equal points per autograded question on all but the documented cases; the figure
    goes to the terminal, the test's properties and a failure's message. On this set:
    41 of 48, the 7 being ``ON_PURPOSE``."""
    pairs = [(name, q) for name in SUBMISSIONS for q in QUESTIONS]
    differ = {p for p in pairs if both.ours[p] != pytest.approx(both.theirs[p][0])}
    figure = (f"otter agreement: {len(pairs) - len(differ)} of {len(pairs)} question scores "
              f"equal ({len(differ & set(ON_PURPOSE))} on purpose, "
              f"{len(differ & set(DEFECTS))} defects)")
    record_property("otter_agreement", figure)
    if (terminal := pytestconfig.pluginmanager.get_plugin("terminalreporter")) is not None:
        with capsys.disabled():
            terminal.write_line(figure)
    assert differ <= set(ON_PURPOSE) | set(DEFECTS), (figure, sorted(differ))
    assert set(ON_PURPOSE) <= differ, figure
    assert len(pairs) - len(differ) >= 41, figure


def test_the_imported_self_check_is_100_percent_of_the_automatic_points(both: Both):
    assert_imported_assignment_sound(both.folder)
