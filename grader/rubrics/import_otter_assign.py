"""Import an otter-grader master notebook (otter assign's notebook format) as our
template, solution and rubric.

Raw cells mark the blocks: ``# ASSIGNMENT CONFIG`` (otter's own settings), ``# BEGIN
QUESTION`` with the question's YAML (``name``, ``points``, ``manual``) up to ``# END
QUESTION``, and inside a question ``# BEGIN SOLUTION`` / ``# END SOLUTION``, ``# BEGIN
TESTS`` / ``# END TESTS`` and ``# BEGIN PROMPT`` / ``# END PROMPT``. What becomes of them,
as otter assign would release them:

- a test cell becomes a ``test`` check: ``# HIDDEN`` as its first line, or ``hidden:
  true`` in its ``\"\"\" # BEGIN TEST CONFIG`` block, makes it hidden, and the block's
  ``points`` and ``failure_message`` weigh it and are what the student reads. A test
  whose cell shows output in the master notebook must print that output (compared as
  otter compares it, with doctest's checker); one without output must run without an
  error (assertions);
- a solution cell: the template gets otter's placeholders (a line ending in
  ``# SOLUTION`` keeps what is left of its ``=`` with ``...``, a ``# BEGIN SOLUTION`` /
  ``# END SOLUTION`` comment block becomes ``...``, a markdown answer "Type your answer
  here, replacing this text."), the solution keeps the code without the markers;
- a manual question with a markdown answer becomes a written criterion with an
  ``answer`` check of its prompt; a manual question with code, a code criterion that
  must run (review it);
- the tests are left out of the template and the solution (they run after the
  notebook here); the boundary cells and the assignment config are dropped, and the
  report says what the config asked for that is not carried over.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import yaml

from ..errors import RubricError
from .checks import Check
from .import_items import RUBRICS_PAGE, ImportReport, ImportRow
from .import_nbgrader import ImportedAssignment, question_line
from .import_otter import output_test_code
from .schema import Criterion, Rubric

__all__ = ["import_otter_assign", "is_otter_assign"]

MD_STUB = "_Type your answer here, replacing this text._"
_BOUNDARY = re.compile(r"^\s*#\s*(BEGIN|END)\s+(QUESTION|SOLUTION|TESTS|PROMPT)\b", re.I)
_CONFIG = re.compile(r'^\s*"""\s*#\s*BEGIN TEST CONFIG\s*\n(.*?)\n\s*"""\s*#\s*END TEST CONFIG'
                     r"\s*\n?", re.S | re.I)
_SOLUTION_LINE = re.compile(r"^(\s*)(.*?)\s*#\s*SOLUTION\s*$")
_ID = re.compile(r"[^a-z0-9_-]+")


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


def _release(code: str) -> str:
    """Otter's student version of a solution cell."""
    out, inside = [], False
    for line in code.splitlines():
        if re.match(r"^\s*#\s*BEGIN SOLUTION", line, re.I):
            out.append(line[: len(line) - len(line.lstrip())] + "...")
            inside = True
        elif re.match(r"^\s*#\s*END SOLUTION", line, re.I):
            inside = False
        elif not inside:
            m = _SOLUTION_LINE.match(line)
            if m and "=" in m.group(2):
                out.append(f"{m.group(1)}{m.group(2).split('=', 1)[0].rstrip()} = ...")
            elif m:
                out.append(f"{m.group(1)}...")
            else:
                out.append(line)
    return "\n".join(out)


def _solved(code: str) -> str:
    lines = [line for line in code.splitlines()
             if not re.match(r"^\s*#\s*(BEGIN|END) SOLUTION", line, re.I)]
    return "\n".join(re.sub(r"\s*#\s*SOLUTION\s*$", "", line) for line in lines)


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
                    question = None
                else:
                    block = what if kind == "BEGIN" else ""
                continue
        if question is not None and block == "TESTS" and cell.cell_type == "code":
            tests.append(_test(text, _expected(cell)))
            continue
        if question is not None and block == "SOLUTION":
            if cell.cell_type == "markdown":
                answers.append(text)
                template.cells[i].source = MD_STUB
            elif cell.cell_type == "code":
                template.cells[i].source = _release(text)
                solution.cells[i].source = _solved(text)
                template.cells[i].outputs, template.cells[i].execution_count = [], None
        elif question is not None and cell.cell_type == "markdown" and not prompt:
            prompt = question_line(text)
        keep_t.append(template.cells[i])
        keep_s.append(solution.cells[i])
    if question is not None:
        raise RubricError(source, [f"question {question['name']!r} has no # END QUESTION"])
    if not criteria:
        raise RubricError(source, ["no questions: otter marks them with a raw cell "
                                   "# BEGIN QUESTION (name, points)"])
    template.cells, solution.cells = keep_t, keep_s
    total = sum(c.points for c in criteria)
    title = next((ln.strip().lstrip("#").strip() for c in keep_t if c.cell_type == "markdown"
                  for ln in _text(c).splitlines() if ln.strip().startswith("#")), "Assignment")
    rubric = Rubric(title, "r" if lang == "r" else "python", total, tuple(criteria),
                    (MD_STUB, "..."))
    return ImportedAssignment(ImportReport(rubric, tuple(rows)), template, solution)


def _test(text: str, want: str) -> tuple[str, bool, float | None, str]:
    """(code, hidden, points, failure message) of a test cell."""
    hidden, points, message = False, None, ""
    m = _CONFIG.match(text)
    if m:
        config = _yaml(m.group(1), "a test's config")
        hidden = bool(config.get("hidden", False))
        points = config.get("points") if isinstance(config.get("points"), int | float) else None
        message = str(config.get("failure_message") or "")
        text = text[m.end():]
    lines = text.splitlines()
    if lines and re.match(r"^\s*#\s*HIDDEN\s*$", lines[0], re.I):
        hidden, text = True, "\n".join(lines[1:])
    return (output_test_code(text, want) if want.strip() else text), hidden, points, message


def _criterion(q: dict[str, Any], prompt: str, tests: list, answers: list[str], lang: str,
               seen: set[str], rows: list[ImportRow], where: str) -> Criterion:
    name = str(q["name"])
    base = _ID.sub("-", name.lower()).strip("-") or "question"
    cid, k = base, 2
    while cid in seen:
        cid, k = f"{base}-{k}", k + 1
    seen.add(cid)
    given = [t[2] for t in tests if t[2] is not None]
    points = q.get("points")
    if isinstance(points, list):
        points = sum(p for p in points if isinstance(p, int | float))
    if not isinstance(points, int | float) or isinstance(points, bool):
        points = sum(given) if given else 1.0
    if q.get("manual") or not tests:
        if answers and prompt:
            checks: tuple[Check, ...] = (Check("answer", 1.0, question=prompt),)
            kind = "written"
        else:
            checks, kind = (Check("runs", 1.0),), "code"
            rows.append(ImportRow(f"manually graded question {name!r}", where, True,
                                  f"criterion {cid}", "otter grades it by hand: here it must "
                                  "run and the code model reads it; review these"))
        return Criterion(cid, prompt or name, kind, float(points), checks, task=prompt)
    if lang == "r":
        raise RubricError(where, [f"question {name!r}: otter's R tests are testthat files; "
                                  f"paste them into test checks {RUBRICS_PAGE}"])
    weights = [t[2] if t[2] is not None else 1.0 for t in tests]
    total = sum(weights) or 1.0
    checks = tuple(Check("test", w / total, name=f"test {j + 1}" + (" (hidden)" if hid else ""),
                         code=code, hidden=hid,
                         message="" if hid else (msg or f"A test of {name} did not pass."))
                   for j, ((code, hid, _, msg), w) in enumerate(zip(tests, weights,
                                                                   strict=True)))
    rows.append(ImportRow(f"tests of {name} ({float(points):g} points, {len(tests)} cases)",
                          where, True, f"criterion {cid}"))
    return Criterion(cid, prompt or name, "code", float(points), checks, task=prompt)
