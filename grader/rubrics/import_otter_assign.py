"""Import an otter-grader master notebook (otter assign's notebook format) as our
template, solution and rubric.

Raw cells mark the blocks: ``# ASSIGNMENT CONFIG`` (otter's own settings), ``# BEGIN
QUESTION`` with the question's YAML (``name``, ``points``, ``manual``) up to ``# END
QUESTION``, and inside a question ``# BEGIN SOLUTION`` / ``# END SOLUTION``, ``# BEGIN
TESTS`` / ``# END TESTS`` and ``# BEGIN PROMPT`` / ``# END PROMPT``. What becomes of them,
as otter assign would release them:

- a test cell becomes a ``test`` check: a first comment line with the word ``hidden``
  (``# HIDDEN``), or ``hidden: true`` in its test config block (Python's ``\"\"\" #
  BEGIN TEST CONFIG``, R's ``. = " # BEGIN TEST CONFIG``), makes it hidden; its
  ``points`` (with the question's ``points``: a total, a list or ``each``, resolved as
  otter resolves them) weigh it and its ``failure_message`` is what the student reads.
  A Python test whose cell shows output in the master notebook must print exactly that
  output (doctest's checker, as otter's doctests compare it); one without output must
  run without an error (assertions). R tests are testthat code and run as they are;
- a solution cell: the template gets otter's placeholders (Python: a line ending in
  ``# SOLUTION`` keeps what is left of its ``=`` with ``...``, a ``# BEGIN SOLUTION``
  block becomes ``...``; R: ``x <- NULL # YOUR CODE HERE`` and ``# YOUR CODE HERE``;
  ``NO PROMPT`` variants leave nothing; a markdown answer "Type your answer here,
  replacing this text."), the solution keeps the code without the markers, prompts
  (``# BEGIN PROMPT`` blocks, in code or as cells) go to the template only, and ``#
  IGNORE`` lines to neither;
- a manual question with a markdown answer becomes a written criterion with an
  ``answer`` check of its prompt; a manual question with code, a criterion for the
  instructor to grade (``manual``), as otter leaves it; a criterion's title is its
  question in words (LaTeX, code ticks and links gone), else otter's name;
- the tests are left out of the template and the solution; each runs where otter's
  release checks its question: right after the cell holding ``grader.check("q1")``
  (R: ``ottr::check("tests/q1.R")``), which otter assign puts after the question's
  tests in the student's notebook; our template and solution carry that call in a
  comment cell at the same place ("# The grader checks q1 here: grader.check(\"q1\")"),
  so the tests run there too (a notebook without it runs them after the notebook, and
  their note says so). The boundary cells and the
  assignment config are dropped, and the report says what the config asked for that is
  not carried over;
- the instructions otter's release adds after the last question are in the template and
  the solution as otter writes them, so that they are never read as the answer to a
  manual question there: the check-all cell's markdown (``check_all_cell``, Python) and
  the export cell's (``export_cell``, on unless the config turns it off). Otter's code
  cells (its init, check-all and export calls) are not (no otter in the student's
  kernel), nor its PDF-filter comments (``<!-- BEGIN QUESTION -->``), which no one reads.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell

from ..errors import RubricError
from .check_fields import Check
from .import_items import RUBRICS_PAGE, ImportReport, ImportRow, criterion_id
from .import_nbgrader import ImportedAssignment, question_line
from .import_nbgrader_names import plain
from .import_otter import output_test_code, resolve_points
from .schema import Criterion, Rubric

__all__ = ["import_otter_assign", "is_otter_assign"]

MD_STUB = "_Type your answer here, replacing this text._"
# the markdown of otter's check-all and export cells (its cell factories, Python and R)
CHECK_ALL = ("---\n\nTo double-check your work, the cell below will rerun all of the "
             "autograder tests.")
EXPORT = ("## Submission\n\nMake sure you have run all cells in your notebook in order before "
          "running the cell below, so that all images/graphs appear in the output. The cell "
          "below will generate a zip file for you to submit.")
_BOUNDARY = re.compile(r"^\s*#\s*(BEGIN|END)\s+(QUESTION|SOLUTION|TESTS|PROMPT)\b", re.I)
# otter's BEGIN_TEST_CONFIG_REGEX / END_TEST_CONFIG_REGEX (Python's """ and R's . = ")
_CONFIG = re.compile(r'^\s*(?:\.\s*=\s*)?""?"?\s*#\s*BEGIN\s*TEST\s*CONFIG[^\n]*\n(.*?)\n'
                     r'\s*""?"?\s*#\s*END\s*TEST\s*CONFIG[^\n]*(\n|$)', re.S | re.I)


def _check_cell(name: str, lang: str) -> str:
    """The cell otter's release puts after a question's tests, as a comment here (no
    otter in the student's kernel): the question's tests run right after it."""
    call = f'ottr::check("tests/{name}.R")' if lang == "r" else f'grader.check("{name}")'
    return f"# The grader checks {name} here: {call}"


def _release_extras(config: dict[str, Any], lang: str) -> list[str]:
    """The markdown that otter's release adds after the last question: the check-all
    cell's instructions and the export cell's, then its blank boundary cell."""
    out = [CHECK_ALL] if lang != "r" and config.get("check_all_cell") else []
    export = config.get("export_cell", True)
    if export:
        options = export if isinstance(export, dict) else {}
        text = EXPORT + ("" if options.get("force_save") else " **Please save before exporting!**")
        if options.get("instructions"):
            text += f"\n\n{options['instructions']}"
        out += [text, " "]
    return out


def _text(cell: Any) -> str:
    return cell.source if isinstance(cell.source, str) else "".join(cell.source)


def is_otter_assign(nb: Any) -> bool:
    return any(c.cell_type == "raw" and re.match(r"\s*#\s*(ASSIGNMENT CONFIG|BEGIN QUESTION)",
                                                _text(c), re.I) for c in nb.cells)


def _yaml(text: str, where: str) -> dict[str, Any]:
    try:
        value = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise RubricError(where, [f"its YAML cannot be read ({exc})"]) from None
    if not isinstance(value, dict):
        raise RubricError(where, ["its YAML must be key: value lines"])
    return value


_PY_ASSIGN = re.compile(r"""(\s*(?:[\w.]+(?:\[['"].*['"]\])*(?:,\s*)?)+\s*=).* ?# ?SOLUTION\s*$""")
_R_ASSIGN = re.compile(r"(\s*[\w. $()]*(?:=|<-))(.*) ?# ?SOLUTION\s*$")
_ANY_SOLUTION = re.compile(r"(\s*).* ?# ?SOLUTION\s*$")
_BEGIN_SOL = re.compile(r"(\s*)#\s*BEGIN SOLUTION( NO PROMPT)?\s*$", re.I)
_SKIPPED = ("# SOLUTION NO PROMPT", "# BEGIN PROMPT", "# END PROMPT", "# SEED")


def _unignored(code: str) -> str:
    """Without otter's ``# IGNORE`` lines and ``# BEGIN IGNORE`` blocks (in no version)."""
    out, inside = [], False
    for line in code.splitlines():
        if re.match(r"\s*#\s*BEGIN\s*IGNORE\s*$", line, re.I):
            inside = True
        elif line.rstrip().endswith("# END IGNORE"):
            inside = False
        elif not inside and not line.rstrip().endswith("# IGNORE"):
            out.append(line)
    return "\n".join(out)


def _release(code: str, lang: str = "python") -> str:
    """Otter's student version of a solution cell (otter's replace_solutions)."""
    block = "# YOUR CODE HERE" if lang == "r" else "..."
    out, inside = [], False
    for line in _unignored(code).splitlines():
        end = line.rstrip()
        if end.endswith(_SKIPPED):
            continue
        if inside:
            inside = not end.endswith("# END SOLUTION")
            continue
        if (m := _BEGIN_SOL.match(line)):
            inside = True
            if not m.group(2):
                out.append(m.group(1) + block)
            continue
        if lang == "r" and (m := _R_ASSIGN.match(line)):
            out.append(m.group(1) + " NULL # YOUR CODE HERE")
        elif lang != "r" and (m := _PY_ASSIGN.match(line)):
            out.append(m.group(1) + " ...")
        elif (m := _ANY_SOLUTION.match(line)):
            out.append(m.group(1) + block)
        else:
            out.append(line)
    return "\n".join(out)


def _solved(code: str) -> str:
    """The solution without otter's markers, its prompts and ignored lines."""
    out, prompt = [], False
    for line in _unignored(code).splitlines():
        end = line.rstrip()
        if end.endswith("# BEGIN PROMPT"):
            prompt = True
        elif end.endswith("# END PROMPT"):
            prompt = False
        elif not prompt and not _BEGIN_SOL.match(line) and not end.endswith("# END SOLUTION"):
            out.append(re.sub(r"\s*#\s*SOLUTION( NO PROMPT)?\s*$", "", line))
    return "\n".join(out)


def _expected(cell: Any) -> str:
    """What a test cell printed in the master notebook (its doctest ``want``)."""
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stdout":
            parts.append("".join(out.get("text", "")))
        elif out.get("output_type") == "execute_result":
            parts.append("".join(out.get("data", {}).get("text/plain", "")) + "\n")
    return "".join(parts)


def import_otter_assign(nb: Any, source: str = "<otter notebook>") -> ImportedAssignment:
    lang = str((nb.metadata.get("kernelspec") or {}).get("language", "python")).lower()
    template, solution = copy.deepcopy(nb), copy.deepcopy(nb)
    keep_t, keep_s = [], []
    criteria: list[Criterion] = []
    rows: list[ImportRow] = []
    question: dict[str, Any] | None = None
    block = ""
    prompt = ""
    tests: list[tuple[str, bool, float | None, str]] = []
    answers: list[str] = []
    seen: set[str] = set()
    config: dict[str, Any] = {}
    for i, cell in enumerate(nb.cells):
        text, where = _text(cell), f"{source}: cell {i + 1}"
        if cell.cell_type == "raw":
            if re.match(r"\s*#\s*ASSIGNMENT CONFIG", text, re.I):
                config = _yaml(text.split("\n", 1)[1] if "\n" in text else "", where)
                if config:
                    rows.append(ImportRow(f"assignment config ({', '.join(sorted(config))})",
                                          where, False, todo="otter's own settings (PDFs, "
                                          "export, Gradescope): nothing to do here"))
                continue
            m = _BOUNDARY.match(text)
            if m:
                kind, what = m.group(1).upper(), m.group(2).upper()
                if what == "QUESTION" and kind == "BEGIN":
                    question = _yaml(text.split("\n", 1)[1] if "\n" in text else "", where)
                    question.setdefault("name", f"q{len(criteria) + 1}")
                    prompt, tests, answers = "", [], []
                elif what == "QUESTION":
                    if question is None:
                        raise RubricError(where, ["# END QUESTION without # BEGIN QUESTION"])
                    criteria.append(_criterion(question, prompt, tests, answers, lang, seen,
                                               rows, where))
                    if tests:  # where otter's release checks the question: tests run there
                        for kept in (keep_t, keep_s):
                            kept.append(new_code_cell(_check_cell(question["name"], lang)))
                    question = None
                else:
                    block = what if kind == "BEGIN" else ""
                continue
        if question is not None and block == "TESTS" and cell.cell_type == "code":
            if text.strip():
                tests.append(_test(text, "" if lang == "r" else _expected(cell), where))
            continue
        if cell.cell_type == "code":
            template.cells[i].source = solution.cells[i].source = _unignored(text)
        if question is not None and block == "SOLUTION":
            if cell.cell_type == "markdown":
                answers.append(text)
                template.cells[i].source = MD_STUB
            elif cell.cell_type == "code":
                template.cells[i].source = _release(text, lang)
                solution.cells[i].source = _solved(text)
                template.cells[i].outputs, template.cells[i].execution_count = [], None
        elif question is not None and cell.cell_type == "markdown" and not prompt:
            prompt = question_line(text)
        keep_t.append(template.cells[i])
        if block != "PROMPT":  # a prompt is the student's version only
            keep_s.append(solution.cells[i])
    if question is not None:
        raise RubricError(source, [f"question {question['name']!r} has no # END QUESTION"])
    if not criteria:
        raise RubricError(source, ["no questions: otter marks them with a raw cell "
                                   "# BEGIN QUESTION (name, points)"])
    for text in _release_extras(config, lang):
        for kept in (keep_t, keep_s):
            kept.append(new_markdown_cell(text))
    template.cells, solution.cells = keep_t, keep_s
    total = sum(c.points for c in criteria)
    title = next((ln.strip().lstrip("#").strip() for c in keep_t if c.cell_type == "markdown"
                  for ln in _text(c).splitlines() if ln.strip().startswith("#")), "Assignment")
    rubric = Rubric(title, "r" if lang == "r" else "python", total, tuple(criteria),
                    (MD_STUB, "YOUR CODE HERE" if lang == "r" else "..."))
    report = ImportReport(rubric, tuple(rows), "otter's master notebook")
    return ImportedAssignment(report, template, solution)


def _test(text: str, want: str, where: str) -> tuple[str, bool, float | None, str]:
    """(code, hidden, points, failure message) of a test cell, read as otter reads it:
    ``hidden`` as a word of a first comment line (``# HIDDEN``), or the test config."""
    lines = text.splitlines()
    hidden = bool(lines and lines[0].lstrip().startswith("#")
                  and re.search(r"\bhidden\b", lines[0], re.I))
    if hidden:
        text = "\n".join(lines[1:])
    points, message = None, ""
    m = _CONFIG.match(text)
    if m:
        config = _yaml(m.group(1), f"{where}: the test's config")
        hidden = bool(config.get("hidden", hidden))
        points = config.get("points")
        message = str(config.get("failure_message") or "")
        text = text[m.end():]
    text = _unignored(text).strip("\n")
    return (output_test_code(text, want) if want.strip() else text), hidden, points, message


def _criterion(q: dict[str, Any], prompt: str, tests: list, answers: list[str], lang: str,
               seen: set[str], rows: list[ImportRow], where: str) -> Criterion:
    name = str(q["name"])
    cid = criterion_id(name, seen)
    if q.get("manual") or not tests:
        try:
            points = sum(resolve_points(q.get("points", 1), [None] * max(len(tests), 1)))
        except ValueError as exc:
            raise RubricError(where, [f"question {name!r}: {exc}"]) from None
        if tests:
            rows.append(ImportRow(f"tests of manual question {name!r}", where, False,
                                  todo="otter shows them to students only; add them as test "
                                  f"checks {RUBRICS_PAGE} if they should count"))
        if answers and prompt:
            return Criterion(cid, _title(prompt, name), "written", float(points),
                             (Check("answer", 1.0, question=prompt),), task=prompt)
        # otter's manual code: for the instructor to grade, as in otter
        rows.append(ImportRow(f"manually graded question {name!r}", where, True,
                              f"criterion {cid}, for you to grade", "otter grades it by hand: "
                              "grade it on the Review page (the code model's notes are there "
                              "to help)"))
        return Criterion(cid, _title(prompt, name), "code", float(points), (Check("runs", 1.0),),
                         task=prompt, manual=True)
    try:
        points = resolve_points(q.get("points"), [t[2] for t in tests])
    except ValueError as exc:
        raise RubricError(where, [f"question {name!r}: {exc}"]) from None
    total = sum(points)
    # where otter's release checks the question: its check cell, after the question's tests
    after = f'ottr::check("tests/{name}.R")' if lang == "r" else f'grader.check("{name}")'
    checks = tuple(Check("test", w / total if total else 1 / len(tests),
                         name=f"{name} - {j + 1}" + (" (hidden)" if hid else ""),  # otter's
                         code=code, hidden=hid, after=after,
                         message="" if hid else msg)
                   for j, ((code, hid, _, msg), w) in enumerate(zip(tests, points,
                                                                   strict=True)))
    hidden = sum(1 for t in tests if t[1])
    n = len(tests)
    rows.append(ImportRow(f"tests of {name} ({total:g} point{'s' * (total != 1)}, {n} "
                          f"test{'s' * (n != 1)})",
                          where, True, f"criterion {cid}: {len(tests) - hidden} visible and "
                          f"{hidden} hidden test checks" + (
                              " (testthat, run in the student's R kernel)"
                              if lang == "r" else "")))
    return Criterion(cid, _title(prompt, name), "code", total, checks, task=prompt)


def _title(prompt: str, name: str) -> str:
    """The question as words (its LaTeX, code ticks and links gone), else otter's name."""
    return plain(prompt) or name
