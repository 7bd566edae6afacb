"""Import an nbgrader source notebook (the instructor's version, with solutions and
hidden tests) as our template, solution and rubric.

nbgrader marks cells in ``metadata.nbgrader`` (schema version 3): ``grade`` and
``points`` for graded cells, ``solution`` for cells students answer, ``locked`` for
read-only cells, ``task`` for tasks graded by hand, ``grade_id`` naming each. What
becomes of each, as nbgrader's own ``assign`` step would release it:

- autograded test cells (``grade`` without ``solution``) become a code criterion of
  their points with a ``test`` check of the cell's code; a ``### BEGIN HIDDEN TESTS``
  / ``### END HIDDEN TESTS`` block becomes a second, ``hidden`` test (nbgrader scores
  the cell all or nothing; here each part carries half the points, and the report
  says so). Both run where nbgrader runs the cell: ``after`` is the released cell's
  text, so each runs right after it, before the cells below it (a cell that shows
  nothing, or whose text an earlier cell holds too, runs after the notebook: the
  report says so);
- solution cells: the template gets nbgrader's stubs in place of each
  ``### BEGIN SOLUTION`` / ``### END SOLUTION`` region (``# YOUR CODE HERE`` with
  ``raise NotImplementedError()`` in Python, ``fail()`` in R, ``YOUR ANSWER HERE`` in
  markdown; the whole cell when it has no markers), the solution keeps the code
  without the markers;
- manually graded answers (``grade`` and ``solution``): markdown ones become a manual
  written criterion (graded by hand, as in nbgrader: listed for you to grade, never
  scored by its words) whose ``answer`` check of the question above it shows the answer
  beside it; code ones a code
  criterion whose levels ask that nbgrader's stub be gone (a ``code`` check) and the
  notebook run: a stub left in place scores 0 (nbgrader gives an unchanged answer 0
  itself), the rest is read by the code model and reviewed;
- task cells (graded by hand, from whatever cells answer them) become a written
  criterion with an ``answer`` check of the task's own text (the answer under it), or,
  when the first cell answering it is code, a code criterion that must run;
- names, as nbgrader's own notebooks give them: a criterion is titled by the nearest
  heading above it ("Part A (2 points)"), else by the question's text without markup
  (no LaTeX, no horizontal rule, no closing colon), else by its grade id; criteria that
  would share a title are told apart by their grade ids;
- locked cells stay marked locked in the template (as nbgrader releases them), and a
  submission that changes one is flagged ``locked_cell_modified`` (nbgrader's checksums
  report the same); nbgrader's own configuration is not carried over.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from ..errors import RubricError
from .check_fields import Check
from .import_items import RUBRICS_PAGE, ImportReport, ImportRow, criterion_id
from .import_nbgrader_names import cell_names, names_above, plain, unique_titles
from .levels import Level
from .schema import Criterion, Rubric

__all__ = ["ImportedAssignment", "import_nbgrader", "is_nbgrader", "question_line"]

_BEGIN_SOLUTION = re.compile(r"^\s*(#+|//+)?\s*BEGIN SOLUTION\s*$")
_END_SOLUTION = re.compile(r"^\s*(#+|//+)?\s*END SOLUTION\s*$")
_BEGIN_HIDDEN = re.compile(r"^\s*(#+|//+)?\s*BEGIN HIDDEN TESTS\s*$")
_END_HIDDEN = re.compile(r"^\s*(#+|//+)?\s*END HIDDEN TESTS\s*$")
# emphasis marks and code ticks go; an underscore inside a name (sorted_v) stays
_EMPHASIS = re.compile(r"[*`]+|(?<!\w)_+|_+(?!\w)")
STUBS = {"python": "# YOUR CODE HERE\nraise NotImplementedError()",
         "r": "# YOUR CODE HERE\nfail() # No Answer - remove if you provide an answer"}
TEXT_STUB = "YOUR ANSWER HERE"
# the stub's line, searched in the student's code: while it is there the answer is not done
STUB_PATTERNS = {"python": r"raise\s+NotImplementedError\b", "r": r"\bfail\(\s*\)"}


@dataclass(frozen=True, slots=True)
class ImportedAssignment:
    """What an importer made: the rubric (with the report of what became of each item),
    and the template and solution notebooks (nbformat nodes)."""

    report: ImportReport
    template: Any
    solution: Any


def is_nbgrader(nb: Any) -> bool:
    return any(isinstance(c.get("metadata", {}).get("nbgrader"), dict) for c in nb.cells)


def _language(nb: Any) -> str:
    spec = nb.metadata.get("kernelspec", {}) or {}
    lang = str(spec.get("language") or nb.metadata.get("language_info", {}).get("name") or "")
    return "r" if lang.lower() == "r" else "python"


def _regions(source: str, begin: re.Pattern[str], end: re.Pattern[str]
             ) -> tuple[list[str], list[list[str]]]:
    """The lines outside ``begin``/``end`` blocks, and each block's lines."""
    outside, blocks, inside = [], [], None
    for line in source.splitlines():
        if begin.match(line):
            inside = []
        elif end.match(line) and inside is not None:
            blocks.append(inside)
            inside = None
        elif inside is not None:
            inside.append(line)
        else:
            outside.append(line)
    if inside is not None:
        raise ValueError("a BEGIN marker has no END")
    return outside, blocks


def _release(source: str, stub: str) -> str:
    """nbgrader's ClearSolutions: each solution region replaced by the stub."""
    if not any(_BEGIN_SOLUTION.match(line) for line in source.splitlines()):
        return stub
    out, inside = [], False
    for line in source.splitlines():
        if _BEGIN_SOLUTION.match(line):
            indent = line[: len(line) - len(line.lstrip())]
            out.extend(indent + s for s in stub.splitlines())
            inside = True
        elif _END_SOLUTION.match(line):
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def _solved(source: str) -> str:
    return "\n".join(line for line in source.splitlines()
                     if not (_BEGIN_SOLUTION.match(line) or _END_SOLUTION.match(line)))


def question_line(markdown: str) -> str:
    """The first line of a markdown cell as plain words (heading marks and emphasis
    dropped; a horizontal rule or a line of markup only is skipped): the text an answer
    check finds its question by."""
    for line in markdown.splitlines():
        if plain(line):
            return " ".join(_EMPHASIS.sub("", line.strip().lstrip("#")).split())[:120]
    return ""


def _is_answer(cell: Any) -> bool:
    return bool((cell.get("metadata", {}).get("nbgrader") or {}).get("solution"))


def _points(meta: dict[str, Any], where: str) -> float:
    points = meta.get("points", 0)
    if not isinstance(points, int | float) or isinstance(points, bool) or points < 0:
        raise RubricError(where, [f"points must be a non-negative number, not {points!r}"])
    return float(points)


def import_nbgrader(nb: Any, source: str = "<nbgrader notebook>") -> ImportedAssignment:
    """The template, solution and rubric an nbgrader source notebook stands for."""
    lang = _language(nb)
    template, solution = copy.deepcopy(nb), copy.deepcopy(nb)
    criteria: list[Criterion] = []
    gids: list[str] = []
    rows: list[ImportRow] = []
    seen: set[str] = set()
    for i, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader")
        if not isinstance(meta, dict):
            continue
        gid = str(meta.get("grade_id") or f"cell-{i}")
        where = f"{source}: cell {i + 1} ({gid})"
        kind = cell.cell_type
        grade, sol, task = bool(meta.get("grade")), bool(meta.get("solution")), \
            bool(meta.get("task"))
        for part in (template.cells[i], solution.cells[i]):
            part.metadata.pop("nbgrader", None)
        if meta.get("locked"):  # as nbgrader releases it: edits to it are flagged
            template.cells[i].metadata["nbgrader"] = {"grade_id": gid, "locked": True}
        if sol:
            stub = TEXT_STUB if kind == "markdown" else STUBS[lang]
            try:
                template.cells[i].source = _release(cell.source, stub)
                _regions(cell.source, _BEGIN_SOLUTION, _END_SOLUTION)
            except ValueError as exc:
                raise RubricError(where, [str(exc)]) from None
            solution.cells[i].source = _solved(cell.source)
            if kind == "code":
                template.cells[i].outputs, template.cells[i].execution_count = [], None
        heading, near = names_above(nb.cells, i, _is_answer)
        if grade and not sol and kind == "code":
            after = _position(i, template, solution, cell.source, where)
            crit, row = _tests(cell.source, gid, criterion_id(gid, seen, f"cell-{i}"),
                               _points(meta, where), heading or near, where, after)
            criteria.append(crit)
            rows.append(row)
            visible, _ = _regions(cell.source, _BEGIN_HIDDEN, _END_HIDDEN)
            template.cells[i].source = "\n".join(visible).strip("\n")
            template.cells[i].outputs, template.cells[i].execution_count = [], None
        elif grade and sol:
            criteria.append(_manual(kind, gid, criterion_id(gid, seen, f"cell-{i}"),
                                    _points(meta, where), near or heading, lang))
            rows.append(_manual_row(criteria[-1], kind, gid, where, bool(near or heading)))
        elif task:
            points = _points(meta, where)
            criteria.append(_task(cell.source, gid, criterion_id(gid, seen, f"cell-{i}"),
                                  points, _answered_in_code(nb, i)))
            rows.append(ImportRow(f"task {gid!r} ({points:g} points)", where,
                                  True, f"criterion {criteria[-1].id} "
                                  f"({criteria[-1].kind}, manual): graded by hand as in "
                                  "nbgrader, listed for you to grade in Review; the answer "
                                  "under the task (or its run) is shown beside it, not scored"))
        elif meta.get("locked") and not grade:
            rows.append(ImportRow(f"locked cell {gid!r}", where, True,
                                  "kept locked in the template: a student's change to it is "
                                  "flagged locked_cell_modified, as nbgrader's checksums "
                                  "report it"))
        gids += [gid] * (len(criteria) - len(gids))
    if not criteria:
        raise RubricError(source, ["no graded cells: nbgrader marks them with "
                                   "metadata.nbgrader.grade = true and points"])
    total = sum(c.points for c in criteria)
    if total <= 0:
        raise RubricError(source, ["the graded cells have no points"])
    placeholders = (TEXT_STUB, "YOUR CODE HERE")
    rubric = Rubric(_title(nb, source), lang, total,
                    tuple(unique_titles(criteria, gids)), placeholders)
    return ImportedAssignment(ImportReport(rubric, tuple(rows), "the nbgrader notebook"), template,
                              solution)


def _title(nb: Any, source: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.strip().startswith("#") and plain(line):
                    return plain(line)
    return source.rsplit("/", 1)[-1].removesuffix(".ipynb")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _position(i: int, template: Any, solution: Any, code: str, where: str) -> str:
    """Where test cell ``i`` runs, as nbgrader runs it: right after the released cell,
    found by its visible text ("" when it shows none, or an earlier cell holds that text
    too: then after the notebook). The solution's cell is made to hold that text whole."""
    try:
        visible, hidden = _regions(code, _BEGIN_HIDDEN, _END_HIDDEN)
    except ValueError as exc:
        raise RubricError(where, [str(exc)]) from None
    shown = "\n".join(visible).strip("\n")
    if not shown.strip() or any(_flat(shown) in _flat(c.source) for c in template.cells[:i]
                                if c.cell_type == "code"):
        return ""
    if _flat(shown) not in _flat(solution.cells[i].source):  # hidden tests in its middle
        blocks = ["### BEGIN HIDDEN TESTS", *(line for b in hidden for line in b),
                  "### END HIDDEN TESTS"]
        solution.cells[i].source = "\n".join([shown, *blocks])
    return shown


def _tests(code: str, gid: str, cid: str, points: float, question: str,
           where: str, after: str = "") -> tuple[Criterion, ImportRow]:
    try:
        visible, hidden = _regions(code, _BEGIN_HIDDEN, _END_HIDDEN)
    except ValueError as exc:
        raise RubricError(where, [str(exc)]) from None
    shown = "\n".join(visible).strip("\n")
    secret = "\n\n".join("\n".join(block) for block in hidden).strip("\n")
    parts = [(name, text, hide) for name, text, hide in
             ((gid, shown, False), (f"{gid} (hidden)", secret, True)) if text.strip()]
    if not parts:
        raise RubricError(where, ["an autograded test cell with no code"])
    # no message of our own: the letter then quotes what failed (the assertion's line)
    checks = tuple(Check("test", 1 / len(parts), name=name, code=text, hidden=hide,
                         after=after) for name, text, hide in parts)
    notes = ["nbgrader scores the cell all or nothing; here its visible and hidden tests "
             "are two checks of half the points each"] if len(parts) == 2 else []
    if not after:
        notes.append("its released cell shows no test of its own to find it by (or an "
                     "earlier cell holds the same text): it runs after the whole notebook, "
                     "not at its place as in nbgrader")
    note = "; ".join(notes)
    crit = Criterion(cid, f"{question or gid}: tests" if question else gid, "code", points,
                     checks, task=question,
                     description=f"nbgrader's autograded tests {gid!r}.")
    row = ImportRow(f"autograded tests {gid!r} ({points:g} points)", where, True,
                    f"criterion {cid}: " + ", ".join(n for n, _, _ in parts), note)
    return crit, row


def _manual(kind: str, gid: str, cid: str, points: float, question: str,
            lang: str) -> Criterion:
    """A manually graded answer: markdown ones are written answers under their question;
    code ones must run, and score 0 while nbgrader's stub is still in them."""
    about = f"nbgrader's manually graded answer {gid!r}."
    if kind == "markdown":  # nbgrader grades it by hand: a word count is no grade of it
        return Criterion(cid, question or gid, "written", points,
                         (Check("answer", 1.0, question=question or gid),), task=question,
                         description=about, manual=True)
    # under the answer's own question: a stub left elsewhere is another answer's business
    gone = Check("code", 1.0, pattern=STUB_PATTERNS[lang], absent=True, question=question)
    own = Check("code", 1.0, pattern=r"\S", question=question)  # code of the student's own
    levels = (Level(1.0, (gone, Check("runs", 1.0)),
                    "Your own code replaces the stub, and the notebook runs"),
              Level(0.5, (gone, own), "Your own code replaces the stub, but the notebook "
                    "does not run without errors"))
    # no weighted checks: no level (the stub still there, or the template) is no credit
    return Criterion(cid, question or gid, "code", points, (), task=question,
                     description=about, levels=levels)


def _manual_row(crit: Criterion, kind: str, gid: str, where: str, asked: bool) -> ImportRow:
    if kind == "markdown":
        todo = "" if asked else ("no question above it: the answer check looks for its "
                                 f"grade id; write the question's text {RUBRICS_PAGE}")
        return ImportRow(f"manually graded markdown answer {gid!r}", where, True,
                         f"criterion {crit.id} (written, manual, answer under "
                         f"{crit.task or gid!r}): graded by hand as in nbgrader, listed for "
                         "you to grade in Review; the answer is shown beside it, not scored",
                         todo)
    return ImportRow(f"manually graded code answer {gid!r}", where, True,
                     f"criterion {crit.id} (code: runs, and 0 while the stub is in it)",
                     "nbgrader grades it by hand. Here it earns its points when it runs "
                     "and the stub is gone; whether it does the task is for you to judge "
                     "on Review (the code model's notes are advice).")


def _answered_in_code(nb: Any, index: int) -> bool:
    """The first cell the student answers after task ``index`` is a code cell."""
    for cell in nb.cells[index + 1:]:
        meta = cell.get("metadata", {}).get("nbgrader") or {}
        if meta.get("solution") or not (meta.get("locked") or meta.get("task")):
            return cell.cell_type == "code"
    return False


def _task(markdown: str, gid: str, cid: str, points: float, code: bool) -> Criterion:
    """A task is graded by hand, as in nbgrader (``manual``: for you to grade); its check
    (one answered in code must run, one in words is the answer under the task's text) is
    shown beside it, not scored."""
    heading, prose = cell_names(markdown)
    question = heading or prose or gid
    about = f"nbgrader's task {gid!r}: " + " ".join(markdown.split())[:400]
    if code:
        return Criterion(cid, question, "code", points, (Check("runs", 1.0),),
                         task=question, description=about, manual=True)
    return Criterion(cid, question, "written", points,
                     (Check("answer", 1.0, question=question),), task=question,
                     description=about, manual=True)
