"""Checks of the student's own work as written and as run (layer 1).

- ``code``: a regular expression searched in the student's own code: the lines of
  code cells the student wrote (the template's lines never count), comments and code
  that can never run (``if False:``, after a ``raise``) removed,
  under ``question`` when given. ``absent`` reads all the code there, the template's
  too (a stub left in place is found), and fails where the student wrote none.
  Rubrics' approach rules ("uses parse_date_time() with three formats", "the pipe at
  least ten times", "not mdy()") are written with it, usually as a level's condition.
- ``documented``: the student's own comments and notes. A cell of the student's code is
  documented when the student wrote a comment in it, or a markdown (or raw, or prose)
  cell right before or after it; the template's text, placeholders, the name and date
  lines and text aimed at the grader (the blocks the injection detector flagged) never
  count. The check asks a share of the cells (``min_share``, 0.5).
- ``ran``: what the instructor sees when opening the notebook: the student's own code
  cells that carry an execution count or outputs from the student's run, without a
  stored error. Our re-run is a separate matter (``runs`` checks).
"""

from __future__ import annotations

import re
from collections.abc import Set

from ..analysis.facts import live_code, strip_comments
from ..analysis.template import CellOrigin, TemplateMatch
from ..rubrics.check_fields import Check
from ..rubrics.schema import Criterion
from ..types import NO_FACTS, Cell, CheckResult, Evidence, Facts
from .outputs_read import scope, stored_error

_NAME_LINE = re.compile(
    r"^[\s#>*_\-]*(?:student(?:'s)?\s*)?(?:full\s+)?(?:name|names|date|author|authors|"
    r"id|student|email|e-mail|netid|section)\b[\s*_]*[:=\-]", re.I)
_WORD = re.compile(r"[^\W\d_]{2,}")
_COMMENT_MIN_WORDS = 2  # "# x" is no note; "# drop missing rows" is


def _result(crit: Criterion, check: Check, score: float, message: str,
            evidence: tuple[Evidence, ...] = (), facts: Facts = NO_FACTS) -> CheckResult:
    return CheckResult(crit.id, check.type, check.target, score, check.weight, "L1", message,
                       evidence, "ok", check.hidden, facts=facts)


def _own_code(origin: CellOrigin, language: str) -> list[tuple[int, str]]:
    """The student's lines of a code cell, comments and code that can never run
    (``if False:``) removed: (1-based line, text)."""
    lines = strip_comments(live_code(origin.cell.source, language), language).splitlines()
    return [(n, lines[n - 1]) for n in sorted(origin.student_lines) if n <= len(lines)]


def _all_code(origin: CellOrigin, language: str) -> list[tuple[int, str]]:
    """Every line of a code cell, the template's included, comments removed."""
    return list(enumerate(strip_comments(origin.cell.source, language).splitlines(), 1))


def score_code(crit: Criterion, check: Check, match: TemplateMatch, language: str,
               questions: list[str]) -> CheckResult:
    """``pattern`` in the student's own code (under ``question`` when given). ``absent``
    reads the whole code there, the template's lines too (its stub left in place, a given
    call the task asks to replace), and never passes where the student wrote no code."""
    where = f" under {check.question!r}" if check.question else ""
    own_cells = scope(match, check.question, questions)
    if own_cells is None:
        return _result(crit, check, 0.0, f"the notebook does not ask {check.question!r}: "
                       "nothing to read")
    if check.absent and not own_cells:
        return _result(crit, check, 0.0, f"no code of the student's own{where}")
    cells = own_cells if not check.absent else (
        scope(match, check.question, questions, own_only=False) or own_cells)
    pattern = re.compile(check.pattern, re.MULTILINE)
    hits: list[tuple[str, int, str, str]] = []  # cell id, line, line text, matched text
    for origin in cells:
        lines = _all_code(origin, language) if check.absent else _own_code(origin, language)
        text = "\n".join(line for _, line in lines)
        starts = [0]
        for _, line in lines:
            starts.append(starts[-1] + len(line) + 1)
        for m in pattern.finditer(text):
            if not lines:
                break
            k = max(i for i, s in enumerate(starts[:-1]) if s <= m.start())
            got = next((g for g in m.groups() if g), m.group(0)) if m.groups() else m.group(0)
            hits.append((origin.cell.id, lines[k][0], lines[k][1].strip(), got))
    found = len({h[3] for h in hits}) if check.distinct else len(hits)
    evidence = tuple(Evidence(cid, line, text) for cid, line, text, _ in hits[:3])
    if check.absent:
        if hits:
            return _result(crit, check, 0.0, f"the code{where} has {hits[0][3]!r}, which "
                           "this check asks not to find", evidence)
        return _result(crit, check, 1.0, f"not in the code{where}, as asked")
    what = "different matches" if check.distinct else "matches"
    msg = f"{found} {what} in the student's code{where}"
    if found < check.min_count:
        msg += f", {check.min_count} asked"
    return _result(crit, check, min(1.0, found / check.min_count), msg, evidence)


def _comment_words(origin: CellOrigin, language: str, placeholders: tuple[str, ...],
                   excluded: Set[tuple[str, int]] = frozenset()) -> int:
    """The words of the longest comment the student wrote in a code cell (a comment line
    the template's cell does not have, or a comment after the student's code), lines
    ``excluded`` (cell id, line) aside."""
    code = strip_comments(origin.cell.source, language).splitlines()
    src = origin.cell.source.splitlines()
    given = ({line.strip() for line in origin.template_cell.source.splitlines()}
             if origin.template_cell is not None else set())
    best = 0
    for n, line in enumerate(src, 1):
        if (n > len(code) or line == code[n - 1] or line.strip() in given
                or (origin.cell.id, n) in excluded):
            continue
        comment = line[len(code[n - 1].rstrip()):]
        if _NAME_LINE.match(comment) or any(p.lower() in comment.lower() for p in placeholders):
            continue
        best = max(best, len(_WORD.findall(comment)))
    return best


def _note_words(origin: CellOrigin, placeholders: tuple[str, ...],
                excluded: Set[tuple[str, int]] = frozenset()) -> int:
    """Words of the student's own lines of a markdown, raw or prose cell (lines
    ``excluded`` aside)."""
    src = origin.cell.source.splitlines()
    count = 0
    for n in origin.student_lines:
        line = src[n - 1] if n <= len(src) and (origin.cell.id, n) not in excluded else ""
        if not line.strip() or _NAME_LINE.match(line) or any(
                p.lower() in line.lower() for p in placeholders):
            continue
        count += len(_WORD.findall(line))
    return count


def score_documented(crit: Criterion, check: Check, match: TemplateMatch, language: str,
                     placeholders: tuple[str, ...],
                     excluded: Set[tuple[str, int]] = frozenset()) -> CheckResult:
    """``excluded``: (cell id, line) of text aimed at the grader, which documents nothing."""
    origins = [o for o in match.origins if o.cell.source.strip()]
    code = [i for i, o in enumerate(origins) if o.holds_code and o.student_lines]
    if not code:
        return _result(crit, check, 0.0, "no code of the student's own to document",
                       facts=Facts("no_own_code"))

    def note(i: int) -> bool:
        if not 0 <= i < len(origins):
            return False
        o = origins[i]
        return (not o.holds_code and o.is_students
                and _note_words(o, placeholders, excluded) >= _COMMENT_MIN_WORDS)

    documented, bare = [], []
    for i in code:
        o = origins[i]
        if (_comment_words(o, language, placeholders, excluded) >= _COMMENT_MIN_WORDS
                or note(i - 1) or note(i + 1)):
            documented.append(o.cell)
        else:
            bare.append(o.cell)
    share = len(documented) / len(code)
    msg = (f"{len(documented)} of {len(code)} cells of the student's code carry the "
           f"student's own comments or notes")
    if share < check.share_needed:
        msg += f" ({check.share_needed:.0%} asked; without: {_cells(bare)})"
    score = 1.0 if share >= check.share_needed - 1e-9 else share / check.share_needed
    facts = Facts("documented" if score >= 1 else "bare", counts=(
        ("documented", len(documented)), ("cells", len(code)),
        ("asked", round(check.share_needed * 100))))
    return _result(crit, check, score, msg,
                   tuple(Evidence(c.id, None, "no comment or note of the student's")
                         for c in bare[:5]), facts)


def _cells(cells: list[Cell]) -> str:
    shown = ", ".join(str(c.index + 1) for c in cells[:8])
    return f"cell{'s' if len(cells) > 1 else ''} {shown}{', ...' if len(cells) > 8 else ''}"


def score_ran(crit: Criterion, check: Check, match: TemplateMatch) -> CheckResult:
    cells = [o.cell for o in match.student_code_cells if o.cell.source.strip()]
    if not cells:
        return _result(crit, check, 0.0, "no code of the student's own to run",
                       facts=Facts("no_own_code"))
    unrun = [c for c in cells if c.execution_count is None and not c.outputs]
    failed = [c for c in cells if c not in unrun and stored_error(c)]
    good = len(cells) - len(unrun) - len(failed)
    share = good / len(cells)
    msg = f"{good} of {len(cells)} cells of the student's code were run by the student"
    parts = []
    if unrun:
        parts.append(f"never run: {_cells(unrun)}")
    if failed:
        parts.append(f"failed when the student ran them: {_cells(failed)} "
                     f"({stored_error(failed[0])})")
    if parts:
        msg += " without an error; " + "; ".join(parts)
    score = 1.0 if share >= check.share_needed - 1e-9 else share / check.share_needed
    evidence = tuple([Evidence(c.id, None, "never run") for c in unrun[:5]]
                     + [Evidence(c.id, None, stored_error(c)) for c in failed[:5]])
    facts = Facts("ran" if not parts else "unrun" if not failed else "failed", counts=(
        ("ran", good), ("cells", len(cells)), ("never_run", len(unrun)),
        ("failed", len(failed))))
    return _result(crit, check, score, msg, evidence, facts)
